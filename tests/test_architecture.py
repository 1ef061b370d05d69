"""The dependency direction is one-way: only syntax/ sees Lark, only report/ sees Jinja."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from .conftest import REPO

PACKAGE = REPO / "compiler"
ALLOWED = {
    "lark": {"syntax"},
    "jinja2": {"report"},
    "weasyprint": {"report"},
    "matplotlib": {"report"},
}
FORBIDDEN_CALLS = {"eval", "exec", "sympify", "parse_expr", "S"}


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_layering(path: Path) -> None:
    stage = path.relative_to(PACKAGE).parts[0]
    for lib, stages in ALLOWED.items():
        if lib in imports(path):
            assert stage in stages, f"{path.name} imports {lib}; only {sorted(stages)} may"


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_string_evaluation(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            assert name not in FORBIDDEN_CALLS, f"{path.name}:{node.lineno} calls {name}"
