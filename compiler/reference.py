"""The field reference: every kind of the stdlib, its inputs and derived quantities, as Markdown.

Contract: `reference_pages() -> dict[str, str]` maps a file name (`README.md`, one
`<kind>.md` per kind) to its text, generated from the stdlib's syntax trees alone (`kinds/*.plan`
and the prelude): for each kind its description and parent, then per section a table of its
fields — name, input or derived, unit or type, default or formula (as written), description
and source (or **assumption** for an input that has none) — then its requirements. The
committed copy is `docs/reference/` (`python -m planc.reference docs/reference` writes it) and a
test keeps the two equal, so the reference cannot fall behind the stdlib.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .semantics.resolve import stdlib_root
from .source import SourceFile
from .syntax import ast
from .syntax.parser import parse

_HEADER = ("<!-- Generated from the stdlib by `python -m planc.reference docs/reference`; do not edit: "
           "edit the kind's .plan file and regenerate. -->\n")


def reference_pages() -> dict[str, str]:
    kinds = _kinds()
    pages = {f"{kind.name}.md": _page(kind, path) for path, kind in kinds}
    index = [_HEADER, "# Field reference\n",
             "Every kind the stdlib declares, with each field's unit, default or formula, and source. A plan "
             "sets an input in its instance (`deployment chat { batch = 64 }`); a derived quantity is computed "
             "and can be overridden the same way. The physics behind the formulas is `docs/physics.md`.\n",
             "| kind | what | fields | file |", "|---|---|---:|---|"]
    for path, kind in kinds:
        count = sum(1 for _ in _fields(kind.items))
        parent = f" (a `{kind.parent}`)" if kind.parent else ""
        index.append(f"| [`{kind.name}`]({kind.name}.md){parent} | {_cell(kind.description or '')} | {count} | "
                     f"`stdlib/{path}` |")
    pages["README.md"] = "\n".join(index) + "\n"
    return pages


def _kinds() -> list[tuple[str, ast.KindDecl]]:
    root = stdlib_root()
    out = []
    for path in sorted([*root.glob("kinds/*.plan"), root / "prelude.plan"]):
        module, problems = parse(SourceFile(f"<stdlib>/{path.relative_to(root)}", path.read_text(encoding="utf-8")))
        assert module is not None and not problems, problems  # the stdlib parses: its tests say so
        out += [(str(path.relative_to(root)), s) for s in module.statements if isinstance(s, ast.KindDecl)]
    return out


def _fields(items: tuple[ast.KindItem, ...], section: str = "") -> list[tuple[str, ast.InputDecl | ast.DeriveDecl]]:
    out: list[tuple[str, ast.InputDecl | ast.DeriveDecl]] = []
    for item in items:
        if isinstance(item, ast.Section):
            out += _fields(item.items, item.title)
        elif isinstance(item, (ast.InputDecl, ast.DeriveDecl)):
            out.append((section, item))
    return out


def _requirements(items: tuple[ast.KindItem, ...]) -> list[ast.RequireDecl]:
    out: list[ast.RequireDecl] = []
    for item in items:
        if isinstance(item, ast.Section):
            out += _requirements(item.items)
        elif isinstance(item, ast.RequireDecl):
            out.append(item)
    return out


def _page(kind: ast.KindDecl, path: str) -> str:
    lines = [_HEADER, f"# `{kind.name}`\n"]
    if kind.description:
        lines.append(kind.description + ".\n" if not kind.description.endswith(".") else kind.description + "\n")
    lines.append(f"Declared in `stdlib/{path}`" + (f"; it extends [`{kind.parent}`]({kind.parent}.md)" if kind.parent
                                                   else "") + ".\n")
    by_section: dict[str, list[ast.InputDecl | ast.DeriveDecl]] = {}
    for section, decl in _fields(kind.items):
        by_section.setdefault(section, []).append(decl)
    for section, decls in by_section.items():
        lines += [f"## {section or 'Fields'}\n", "| field | | unit or type | default or formula | what | source |",
                  "|---|---|---|---|---|---|"]
        for decl in decls:
            lines.append(_row(decl))
        lines.append("")
    requirements = _requirements(kind.items)
    if requirements:
        lines += ["## Requirements\n", "A plan whose values break one of these is not a valid plan (an `advise` is a "
                  "warning).\n", "| condition | message |", "|---|---|"]
        lines += [f"| `{_code(r.expr.span.text)}` | {_cell(r.message or '')} |" for r in requirements]
        lines.append("")
    return "\n".join(lines)


def _row(decl: ast.InputDecl | ast.DeriveDecl) -> str:
    if isinstance(decl, ast.InputDecl):
        role = "spec" if decl.spec else "input"
        value = decl.default
    else:
        role, value = "derived", decl.expr
    notes = decl.notes
    unit = _code(decl.type.span.text) if decl.type is not None else ""
    shown = f"`{_code(value.span.text)}`" if value is not None else "*(set by the plan)*"
    source = _cell(notes.source) if notes.source else ("**assumption**" if role == "input" and value is not None else "")
    return f"| `{decl.name}` | {role} | {f'`{unit}`' if unit else ''} | {shown} | {_cell(notes.description or '')} | {source} |"


def _code(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|").replace("`", "'")


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m planc.reference DIR\n")
        return 2
    folder = Path(argv[0])
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in reference_pages().items():
        (folder / name).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
