"""The dependency direction is one-way: only syntax/ sees Lark, only report/ sees Jinja, and the
package's own modules keep the layers docs/architecture.md lists."""

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


# ---- the internal layers (docs/architecture.md) -------------------------------------------

ARCHITECTURE = REPO / "docs" / "architecture.md"
NARROW = {  # (importer prefix, imported prefix) -> the only modules of the imported prefix allowed
    ("report", "solve"): {"solve.answers"},
    ("solve.answers", "solve"): set(),
}


def declared_layers() -> list[tuple[str, set[str]]]:
    """The layer list of docs/architecture.md: the first ```text block after "stand in layers"."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    block = text.split("stand in layers", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    return [(name.strip(), set(mods.split())) for name, mods in (line.split(":", 1) for line in block.splitlines())]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "__init__"


def import_graph() -> dict[str, set[str]]:
    """Every module of the package and the modules of the package it imports, at the top or
    inside a function (`from .x import y` names module `x.y` when that is a module)."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" and name != "__init__" else name.split(".")[:-1]
        out: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and node.level):
                continue
            base = package[:len(package) - node.level + 1]
            stem = [*base, *(node.module.split(".") if node.module else [])]
            for alias in node.names:
                sub = ".".join([*stem, alias.name])
                out.add(sub if sub in modules else ".".join(stem) or "__init__")
        graph[name] = out - {name}
    return graph


def layer_violations(graph: dict[str, set[str]], layers: list[tuple[str, set[str]]]) -> list[str]:
    """Each import that climbs a layer or breaks a narrow rule, and each module in no layer."""
    def rank(module: str) -> int | None:
        top = module.split(".")[0]
        return next((i for i, (_, tops) in enumerate(layers) if top in tops), None)

    out = [f"{m} is in no layer of docs/architecture.md" for m in sorted(graph) if rank(m) is None]
    for m, imported in sorted(graph.items()):
        for target in sorted(imported):
            rm, rt = rank(m), rank(target)
            if rm is not None and rt is not None and rt > rm:
                out.append(f"{m} ({layers[rm][0]}) imports {target} ({layers[rt][0]})")
            for (importer, prefix), allowed in NARROW.items():
                inside = m == importer or m.startswith(importer + ".")
                if inside and (target == prefix or target.startswith(prefix + ".")) and target not in allowed:
                    out.append(f"{m} imports {target}: only {sorted(allowed) or 'nothing'} of {prefix}/ may be")
    return out


def test_the_import_graph_keeps_the_declared_layers() -> None:
    layers = declared_layers()
    assert [name for name, _ in layers] == ["foundation", "syntax", "semantics", "evaluation", "solve", "pipeline",
                                            "report", "tools"]
    graph = import_graph()
    assert {"syntax.parser", "semantics.elaborate", "lower", "solve.ask", "report.view", "cli"} <= set(graph)
    assert "diagnostics" in graph["syntax.parser"] and "solve.answers" in graph["report.answer_views"]  # the graph is real
    assert layer_violations(graph, layers) == []


@pytest.mark.parametrize(("importer", "imported", "says"), [
    ("syntax.parser", "report.view", "syntax.parser (syntax) imports report.view (report)"),
    ("semantics.elaborate", "lower", "semantics.elaborate (semantics) imports lower (evaluation)"),
    ("lower", "pipeline", "lower (evaluation) imports pipeline (pipeline)"),
    ("report.figures", "solve.search", "report.figures imports solve.search: only ['solve.answers'] of solve/ may be"),
    ("solve.answers", "solve.base", "solve.answers imports solve.base: only nothing of solve/ may be"),
])
def test_a_wrong_import_is_a_violation(importer: str, imported: str, says: str) -> None:
    graph = import_graph()
    graph[importer] = graph[importer] | {imported}
    assert says in layer_violations(graph, declared_layers())


def test_a_module_outside_every_layer_is_a_violation() -> None:
    graph = {**import_graph(), "newstage": {"lower"}}
    assert layer_violations(graph, declared_layers()) == ["newstage is in no layer of docs/architecture.md"]
