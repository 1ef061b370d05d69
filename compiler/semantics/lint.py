"""Lint: one definition per concept, and no concept that nothing uses.

Contract
- `restated(program, sink, stdlib=False)` warns (W0211) for every derived field of a kind whose
  formula contains, whole, the formula of another derived field of the same kind (three
  operations or more): the concept is then stated twice, and an edit to one copy changes nothing
  that reads the other. The warning is at the field that restates, with the one it restates as
  a secondary label and a `help:` that names the reference to use. It reads the syntax tree only.
- `unused(program, elaborated, sink, stdlib=False)` warns (W0213) for every derived field of a kind
  declared in the user's own files that nothing reads in any instance: no other quantity, no
  `summary` item, `check` or question, no `require`, `advise`, `finding`, `lever` or `figure`. It
  is computed and shown in the appendix, and decides nothing. A `let` is not reported: one of
  the main plan is how a user asks for a number in the document, and one of an imported file is
  computed only when something reads it. The stdlib's derived fields are the report's sections
  by design (each is a documented quantity of its section), so they are linted only with
  `stdlib=True`. A quantity read only by another
  unused one is reported once that one is gone, as compilers report unused variables.
- Both change nothing; they only add warnings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from .. import diagnostics as dx
from ..syntax import ast
from . import ir
from .resolve import Program

_COMPOUND = (ast.BinOp, ast.Call, ast.If, ast.Unary, ast.Compare, ast.BoolOp, ast.Index)
_MIN_OPERATIONS = 3


def _subtrees(expr: Any) -> Iterator[Any]:
    if isinstance(expr, _COMPOUND + (ast.Attribute,)):
        if isinstance(expr, _COMPOUND):
            yield expr
        for f in dataclasses.fields(expr):
            value = getattr(expr, f.name)
            for child in value if isinstance(value, tuple) else (value,):
                yield from _subtrees(child)


def _derives(items: tuple[ast.KindItem, ...]) -> Iterator[ast.DeriveDecl]:
    for item in items:
        if isinstance(item, ast.DeriveDecl):
            yield item
        elif isinstance(item, ast.Section):
            yield from _derives(item.items)


def restated(program: Program, sink: dx.Sink, stdlib: bool = False) -> None:
    """Lint the plan's own kinds; the stdlib's too with `stdlib=True` (its tests do: a compile
    need not re-read the stdlib's kinds every time)."""
    for decl in program.names.values():
        if not isinstance(decl, ast.KindDecl) or (decl.span.file.is_stdlib and not stdlib):
            continue
        derives = list(_derives(decl.items))
        formulas = {d.name: (ast.shape(d.expr), d) for d in derives
                    if sum(1 for _ in _subtrees(d.expr)) >= _MIN_OPERATIONS}
        for d in derives:
            inside = {ast.shape(t) for t in _subtrees(d.expr)}
            for name, (formula, other) in formulas.items():
                if name != d.name and formula in inside:
                    sink.add(dx.RESTATED.at(
                        d.name_span, f"restates `{name}`", name=d.name, other=name, kind=decl.name,
                        secondary=[dx.Label(other.name_span, "the formula is defined here")],
                        help=f"write `{name}` where `{d.name}` repeats its formula",
                    ))


def unused(program: Program, elaborated: ir.Elaborated, sink: dx.Sink, stdlib: bool = False) -> None:
    read = reads(elaborated)
    by_declaration: dict[tuple[str, int], list[ir.Node]] = {}
    for node in elaborated.nodes.values():
        kinds = elaborated.kinds.get(node.owner)
        if node.is_input or not kinds or (node.decl_span.file.is_stdlib and not stdlib):
            continue  # an input, a `let`, an enumeration's attribute, a variant's node, the stdlib
        by_declaration.setdefault((str(node.decl_span.file.path), node.decl_span.start), []).append(node)
    for nodes in by_declaration.values():
        if any(n.id in read for n in nodes):
            continue
        first = nodes[0]
        where = first.decl_span
        kind = next((d.name for d in program.names.values() if isinstance(d, ast.KindDecl) and d.span.file is where.file
                     and d.span.start <= where.start < d.span.end), elaborated.kinds[first.owner][0])
        sink.add(dx.UNUSED.at(
            where, "computed, and read by nothing", name=first.field.partition("[")[0], kind=kind,
            help="name it in the `summary`, a `check` or a question, or read it in another formula; "
                 "otherwise delete it (until then it only fills the appendix)",
        ))


def reads(el: ir.Elaborated, guards: bool = True) -> set[str]:
    """Every node something reads: another node, the summary, a check, a requirement or an advice
    (unless `guards` is false: they only guard inputs), a finding, a lever (what it sets, and the
    names its values use), a figure, or a question (its fields, and the names its expressions use)."""
    read = {d for n in el.nodes.values() for d in n.deps}
    holes = [p.expr for f in el.findings for p in f.parts if isinstance(p, ir.Hole)]
    holes += [p.expr for lv in el.levers for p in (*lv.takes, *lv.gate) if isinstance(p, ir.Hole)]
    exprs = [*el.summary, *(c.expr for c in el.checks), *(r.expr for r in (*el.requirements, *el.advisories) if guards),
             *(f.expr for f in el.findings), *(lv.cond for lv in el.levers if lv.cond is not None), *holes]
    read.update(r for e in exprs for r in ir.refs(e))
    read.update(ir.node_id(*target) for lv in el.levers for target, _ in lv.targets)
    read.update(name for lv in el.levers for _, value in lv.targets for name in _names(value))
    read.update(node for fig in el.figures for _, node in fig.roles)
    for q in el.questions:
        read.update(ir.node_id(*f) for f in _question_fields(q))
        read.update(name for e in _question_exprs(q) for name in _names(e))
    return read


def _question_fields(q: ir.Question) -> list[ir.FieldRef]:
    if isinstance(q, ir.Ask):
        return [q.unknown, *(g.field for g in q.given), *([q.quantity.field] if q.quantity else [])]
    if isinstance(q, ir.Solve):
        return [q.field]
    if isinstance(q, ir.Scenario):
        return [s.field for s in q.settings]
    if isinstance(q, ir.Table):
        return [*(a.field for a in q.axes), *(c.field for c in q.columns)]
    return [*(a.field for a in q.axes), q.target.field, *(c.field for c in q.pareto)]


def _question_exprs(q: ir.Question) -> list[ast.Expr]:
    if isinstance(q, ir.Ask):
        return [*q.constraints, *(q.equation or ()), *(g.value for g in q.given)]
    if isinstance(q, ir.Search):
        return list(q.constraints)
    if isinstance(q, ir.Scenario):
        return [s.value for s in q.settings]
    return []


def _names(e: Any) -> Iterator[str]:
    """The quantities an expression as written names: `chat.tpot` as `chat.tpot`, a `let` by its name."""
    if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name):
        yield ir.node_id(e.value.id, e.attr)
    elif isinstance(e, ast.Name):
        yield e.id
    elif dataclasses.is_dataclass(e) and not isinstance(e, type):
        for f in dataclasses.fields(e):
            value = getattr(e, f.name)
            for child in value if isinstance(value, tuple) else (value,):
                yield from _names(child)
