"""Shared helpers: compile plan text written to a temporary directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from planc.pipeline import Compilation, compile_plan

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def compile_text(tmp_path: Path) -> Callable[[str], Compilation]:
    def run(text: str, name: str = "plan.plan") -> Compilation:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return compile_plan(path, shown=name)

    return run
