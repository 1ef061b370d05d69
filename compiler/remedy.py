"""What would make a failed requirement hold: the inputs a user can set, and by how much.

Contract: `sides(lowered, expr) -> Sides | None` follows a failed requirement through the boolean
quantities it names and the `and`s it joins to the comparison that fails, and gives its two
sides with their values (and the values of the quantities a compound side adds up).
`remedies(lowered, expr, limit=3) -> list[str]` proposes, for each numeric input of the plan's own
instances (those its file declares: not a catalog model's head count, not an engine's constant)
that the failing comparison depends on, the
value nearest to the plan's at which every requirement holds (and, for a search that no value
of its range meets, `search`, at which it has an answer), found on a vectorised grid of
×1/64 … ×64 around it (whole numbers stay whole); the proposals are ranked by how little they
move, as phrases like "`chat.tensor_parallel` = 2 (now 1)". Nothing here raises for a plan: an
input whose grid cannot be evaluated is left out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .semantics import ir
from .semantics.units import Dim, format_quantity

_COMPARISONS = ("<", "<=", ">", ">=", "==")
_FACTORS = tuple(2 ** (k / 4) for k in range(-24, 25) if k)  # ×1/64 … ×64 in quarter octaves


@dataclass(frozen=True)
class Sides:
    comparison: ir.Op
    left: tuple[str, str]  # (the side as written, its value)
    right: tuple[str, str]
    terms: tuple[tuple[str, str], ...]  # what a compound side (or a side's formula) reads, with the values


def _failing(lowered: Any, expr: ir.Expr, depth: int = 0) -> ir.Op | None:
    from .exact import EvalError, evaluate

    if depth > 8:
        return None
    if isinstance(expr, ir.Op) and expr.op in _COMPARISONS:
        return expr
    if isinstance(expr, ir.Op) and expr.op == "and":
        for arg in expr.args:
            try:
                if not evaluate(arg, lowered.values):
                    return _failing(lowered, arg, depth + 1)
            except EvalError:
                return None
    if isinstance(expr, ir.Ref) and expr.dim == ir.BOOL:
        node = lowered.elaborated.nodes.get(expr.node)
        if node is not None and node.expr is not None and not node.is_input:
            return _failing(lowered, node.expr, depth + 1)
    return None


def sides(lowered: Any, expr: ir.Expr) -> Sides | None:
    from .exact import EvalError, evaluate

    comparison = _failing(lowered, expr)
    if comparison is None:
        return None
    dim = comparison.args[0].dim

    def shown(e: ir.Expr) -> tuple[str, str]:
        try:
            value = evaluate(e, lowered.values)
        except EvalError:
            return " ".join(e.span.text.split()), "undefined"
        return " ".join(e.span.text.split()), _text(value, dim)

    terms: list[tuple[str, str]] = []
    for side in comparison.args:  # a compound side, or a quantity's formula one level down
        if isinstance(side, ir.Ref):
            node = lowered.elaborated.nodes[side.node]
            side = node.expr if not node.is_input and isinstance(node.expr, ir.Op) else side
        if isinstance(side, ir.Op):
            for ref in ir.refs(side)[:5]:
                node = lowered.elaborated.nodes[ref]
                if ref in lowered.values and isinstance(node.dim, Dim):
                    terms.append((ref, _text(lowered.values[ref], node.dim, node.unit)))
    return Sides(comparison, shown(comparison.args[0]), shown(comparison.args[1]), tuple(terms))


def remedies(lowered: Any, expr: ir.Expr, limit: int = 3, search: str | None = None) -> list[str]:
    """With `search`, a `largest` that no value of its range meets: `expr` is the part of its
    condition that fails, and a remedy must also give the search a value."""
    import numpy as np

    from .vector import evaluate as vec_eval
    from .vector import evaluate_many

    comparison = _failing(lowered, expr)
    if comparison is None:
        return []
    el = lowered.elaborated
    requirements = [r.expr for r in el.requirements]
    targets = [comparison, *requirements] + ([el.nodes[search].expr] if search is not None else [])
    reads = ir.upstream(el, [comparison])
    mine = set(el.main_instances)
    candidates = [n for n in el.order if n in reads and el.nodes[n].owner in mine
                  and _settable(el.nodes[n], lowered.values.get(n))]
    found: list[tuple[float, str]] = []
    for node_id in candidates:
        now = float(lowered.values[node_id])
        if not math.isfinite(now):
            continue
        whole = el.nodes[node_id].integral or now.is_integer()  # a field declared `integer` stays whole
        trial = sorted({v for v in (_round(now * f, whole, f > 1) for f in _FACTORS) if math.isfinite(v) and v > 0}
                       - {now}, key=lambda v: abs(math.log(v / now)))
        if not trial:
            continue
        try:
            values = evaluate_many(el, lowered.values, {node_id: np.array(trial, dtype=float)},
                                   ir.upstream(el, targets) | {node_id} | ({search} if search is not None else set()))
            holds = np.ones(len(trial), dtype=bool)
            for r in requirements:
                holds &= np.broadcast_to(np.asarray(vec_eval(r, values), dtype=bool), (len(trial),))
            if search is not None:
                holds &= np.broadcast_to(np.isfinite(np.asarray(values[search], dtype=float)), (len(trial),))
        except (ArithmeticError, ValueError, KeyError, TypeError, OverflowError):
            continue
        good = [v for v, ok in zip(trial, holds) if ok]
        if good:
            best = good[0]
            node = el.nodes[node_id]
            found.append((abs(math.log(best / now)),
                          f"`{node_id}` = {_text(best, node.dim, node.unit)} (now {_text(now, node.dim, node.unit)})"))
    found.sort()
    return [text for _, text in found[:limit]]


def _settable(node: ir.Node, value: Any) -> bool:
    """An input the plan can set (not a specification, not a search), with a positive number."""
    return (node.is_input and not node.is_definition and isinstance(node.dim, Dim) and not ir.is_search(node.expr)
            and isinstance(value, (Fraction, float, int)) and not isinstance(value, bool) and float(value) > 0)


def _round(value: float, whole: bool, up: bool) -> float:
    if not math.isfinite(value):
        return math.nan
    if not whole:
        return float(f"{value:.3g}")
    return float(max(math.ceil(value) if up else math.floor(value), 1))


def _text(value: Any, dim: ir.Type, unit: str | None = None) -> str:
    if not isinstance(dim, Dim):
        return "true" if value else "false"
    return format_quantity(float(value), dim, unit)
