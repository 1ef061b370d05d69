"""Shared helpers: compile plan text written to a temporary directory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from planc.cachedir import cache_directory
from planc.pipeline import Compilation, compile_plan

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The compiler's cache (parsed ASTs, compiled templates) in a directory of this test session,
    for this process and the `plan` processes tests start: the suite compiles thousands of
    generated plans and must not leave their entries in the developer's own cache."""
    directory = tmp_path_factory.mktemp("plan-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PLAN_CACHE_DIR", str(directory))
        patch.delenv("PLAN_NO_CACHE", raising=False)
        cache_directory.cache_clear()
        yield directory
    cache_directory.cache_clear()


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh private cache directory for one test, with every cached handle on it (the
    directory, its signing key, the parser built from its tables, the files this process
    parsed) forgotten before and after."""
    from planc import cachedir
    from planc.syntax import parser

    def forget() -> None:
        cache_directory.cache_clear()
        cachedir._key.cache_clear()
        parser._parser.cache_clear()
        parser.forget()

    directory = tmp_path / "cache"
    monkeypatch.setenv("PLAN_CACHE_DIR", str(directory))
    monkeypatch.delenv("PLAN_NO_CACHE", raising=False)
    forget()
    yield directory
    forget()


@pytest.fixture
def evaluated_nodes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every node the lowering evaluates from here on (the plan's, then its variants'), in order."""
    from planc import lower as lowering

    evaluated: list[str] = []
    original = lowering.evaluate_node

    def counting(elaborated, node_id, values):  # type: ignore[no-untyped-def]
        evaluated.append(node_id)
        return original(elaborated, node_id, values)

    monkeypatch.setattr(lowering, "evaluate_node", counting)
    return evaluated


@pytest.fixture
def compile_text(tmp_path: Path) -> Callable[[str], Compilation]:
    def run(text: str, name: str = "plan.plan") -> Compilation:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return compile_plan(path, shown=name)

    return run
