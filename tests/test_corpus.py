"""Every example and every stdlib file compiles without errors, and their checks pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from planc.diagnostics import Severity
from planc.pipeline import compile_plan

from .conftest import REPO

PLANS = sorted((REPO / "examples").glob("*.plan")) + sorted((REPO / "stdlib").rglob("*.plan"))


@pytest.mark.parametrize("path", PLANS, ids=lambda p: str(p.relative_to(REPO)))
def test_compiles_cleanly(path: Path) -> None:
    result = compile_plan(path)
    errors = [d for d in result.diagnostics if d.severity is Severity.ERROR]
    assert not errors, [d.message for d in errors]
    assert result.ok
    assert result.exit_code == 0, "a check failed"
    if path.is_relative_to(REPO / "stdlib"):
        assert not result.diagnostics, [d.message for d in result.diagnostics]
