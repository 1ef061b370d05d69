"""Queries on the plan's graph that several questions share: what an expression depends on,
which inputs feed a quantity, whether an unknown is solved over whole numbers.

Contract: pure functions of the elaborated IR (and a span); nothing is evaluated here.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..lower import Lowered
from ..semantics import ir
from ..semantics.units import COUNTING_BASES, Dim


def span_of(e: ir.Expr) -> Any:
    return e.span


def text_of(e: ir.Expr) -> str:
    """An expression as the plan wrote it."""
    return " ".join(e.span.text.split())


def solved_over_integers(node: ir.Node, value: Any) -> bool:
    """Fields declared `integer`, and counted quantities (plain counts, tokens, requests,
    devices) that hold a whole number, are solved over integers."""
    if node.integral:
        return True
    dim = node.dim
    if not isinstance(dim, Dim) or not (isinstance(value, Fraction) and value.denominator == 1):
        return False
    from ..semantics.units import BASES

    exponents = {b: dim.exponent(b) for b in BASES}
    nonzero = {b: e for b, e in exponents.items() if e != 0}
    return not nonzero or (len(nonzero) == 1 and next(iter(nonzero)) in COUNTING_BASES and next(iter(nonzero.values())) == 1)


def within(inner: Any, outer: Any) -> bool:
    """One span lies inside another (same file)."""
    return bool(inner.file == outer.file and outer.start <= inner.start and inner.end <= outer.end)


def depends(lowered: Lowered, e: ir.Expr, unknown: str) -> bool:
    refs = ir.refs(e)
    seen: set[str] = set()
    while refs:
        r = refs.pop()
        if r == unknown:
            return True
        if r in seen or r not in lowered.elaborated.nodes:
            continue
        seen.add(r)
        refs.extend(lowered.elaborated.nodes[r].deps)
    return False


def inputs_of(el: ir.Elaborated, node_id: str) -> set[str]:
    out, stack, seen = set(), [node_id], set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        node = el.nodes[n]
        if node.is_input:
            out.add(n)
        stack.extend(node.deps)
    return out
