"""Lint: one definition per concept.

Contract: `restated(program, sink, stdlib=False)` warns (W0211) for every derived field of a kind whose formula
contains, whole, the formula of another derived field of the same kind (three operations or
more): the concept is then stated twice, and an edit to one copy changes nothing that reads the
other. The warning is at the field that restates, with the one it restates as a secondary label
and a `help:` that names the reference to use. It reads the syntax tree only and changes nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from .. import diagnostics as dx
from ..syntax import ast
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
