"""Vectorised evaluation of the node graph: many variants of the plan in one numpy pass.

Contract: `evaluate_many(elaborated, base, fixed, only) -> dict[node, ndarray]` re-evaluates every
node in topological order for `n` points at once. `base` holds the plan's exact values; `fixed`
maps node ids to arrays (or scalars) that replace those nodes' values — an input swept over a
range, a `given`, a perturbation for sensitivities. Nodes that depend on nothing fixed keep their
base value (a scalar), so the cost is proportional to what actually varies. Arithmetic is float64;
points where an operation is undefined (division by zero, log of a non-positive number) come out
as NaN or ±inf and are treated as infeasible by the callers, never as exceptions. With
`relaxed`, `ceil` and `floor` return their argument: the continuous model the sensitivities
differentiate, in which a count that moves in whole steps still shows how hard it is pushed.

The IR is evaluated directly (the same tree the exact evaluator and the sympy form come from);
`tests/test_vector.py` checks that it agrees with the exact evaluator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .builtins import FUNCTIONS
from .exact import bisect
from .semantics import ir

Array = Any  # numpy array or float


CHUNK = 32_768
"""Points evaluated in one pass: a larger grid is evaluated chunk by chunk and joined, so that the
memory of one pass is bounded (Erlang C holds a row of 256 terms per point, 64 MiB a chunk)
whatever the size of the question. Each pass interprets the plan's formulas once in Python, so a
smaller chunk repeats that for nothing: a search of 884,736 configurations took 19.4 s in chunks
of 8,192 and 13.7 s in chunks of 32,768 (bench/solver_speed.py); 65,536 gained nothing more."""


def evaluate_many(elaborated: ir.Elaborated, base: dict[str, Any], fixed: dict[str, Array],
                  only: set[str] | None = None, relaxed: bool = False, keep: set[str] | None = None) -> dict[str, Array]:
    """`only`, when given, limits the pass to these nodes (the ones a question needs); `keep`, when
    given, the nodes returned (what the caller reads: a large grid keeps no other node's values)."""
    n = max((np.size(v) for v in fixed.values()), default=1)
    if n > CHUNK and all(np.ndim(v) <= 1 for v in fixed.values()):
        parts = [evaluate_many(elaborated, base, {k: v[i:i + CHUNK] if np.ndim(v) == 1 and np.size(v) == n else v
                                                  for k, v in fixed.items()}, only, relaxed, keep)
                 for i in range(0, n, CHUNK)]
        joined: dict[str, Array] = {}
        for key in parts[0]:
            if all(np.ndim(p[key]) == 0 for p in parts):
                joined[key] = parts[0][key]
            else:
                sizes = [min(CHUNK, n - i) for i in range(0, n, CHUNK)]
                joined[key] = np.concatenate([np.broadcast_to(p[key], (m,)) for p, m in zip(parts, sizes)])
        return joined
    ops = _RELAXED_OPS if relaxed else _OPS
    values: dict[str, Array] = {}
    varying: set[str] = set(fixed)
    trials = ir.all_trial_nodes(elaborated)  # evaluated by their search, at each value it tries
    with np.errstate(all="ignore"):
        for node_id in elaborated.order:
            if only is not None and node_id not in only:
                continue
            if node_id in trials and node_id not in fixed:
                values[node_id] = base.get(node_id, np.nan)
                varying.add(node_id)
                continue
            if node_id in fixed:
                values[node_id] = fixed[node_id]
                continue
            node = elaborated.nodes[node_id]
            if node_id in base and not any(d in varying for d in node.deps):
                values[node_id] = _scalar(base[node_id])
                continue
            if node_id not in base and not any(d in varying for d in node.deps):
                values[node_id] = np.nan  # failed in the base plan and unaffected by what varies
                continue
            values[node_id] = (_largest(elaborated, node_id, values, ops) if ir.is_search(node.expr)
                               else _evaluate(node.expr, values, ops))
            varying.add(node_id)
    return values if keep is None else {k: v for k, v in values.items() if k in keep}


def _largest(elaborated: ir.Elaborated, node_id: str, values: dict[str, Array],
             ops: dict[str, Callable[[list[Array]], Array]], distinct: bool = False) -> Array:
    """`largest(x, low, high, condition)` at every point at once: the same bisection as the exact
    evaluator (`exact.largest`), each step one pass over the trial nodes for all points; NaN where
    even `low` fails. The trial nodes are left at their values for the answer.

    A search's answer is a function of what it reads, so points that agree on every varying
    quantity upstream of it (a grid over the utilisation target, which only the replicas read,
    repeats the running batch's search for each value) are searched once: unless `distinct` says
    the points already are, the search runs on one point of each group and its answer and trial
    values are copied to the rest."""
    if not distinct:
        shared = _search_once_per_group(elaborated, node_id, values, ops)
        if shared is not None:
            return shared
    expr = elaborated.nodes[node_id].expr
    assert isinstance(expr, ir.Op)
    free, low_expr, high_expr, cond, step_expr = expr.args
    assert isinstance(free, ir.Ref)
    trials = ir.trial_nodes(elaborated, node_id)
    start = np.asarray(_evaluate(low_expr, values, ops), dtype=float)
    step = np.asarray(_evaluate(step_expr, values, ops), dtype=float)
    whole = step == 1  # whole values from ceil(low); else low + k·step, as the exact evaluator does
    base = np.where(whole, 0.0, start)
    with np.errstate(all="ignore"):
        low = np.where(whole, np.ceil(start), 0.0)
        high = np.floor((np.asarray(_evaluate(high_expr, values, ops), dtype=float) - base) / np.where(step > 0, step, np.nan))

    def holds(k: Array) -> Array:
        values[free.node] = base + k * step
        for n in trials:
            e = elaborated.nodes[n].expr
            # a search nested in the trials reads this one's trial value, which differs from point to point
            values[n] = _largest(elaborated, n, values, ops, distinct=True) if ir.is_search(e) else _evaluate(e, values, ops)
        return np.asarray(_evaluate(cond, values, ops), dtype=bool)

    shape = np.broadcast_shapes(np.shape(low), np.shape(high), *(np.shape(values[r]) for r in ir.refs(cond) if r in values))
    low, high = np.broadcast_to(low, shape).copy(), np.broadcast_to(high, shape).copy()
    if (np.size(low) == 1 and np.isfinite(low).all() and np.isfinite(high).all()
            and 0 <= (high - low).reshape(-1)[0] < CHUNK
            and all(np.size(values[r]) == 1 for r in ir.search_inputs(elaborated, node_id) if r in values)):
        # one point (the exact evaluator's guess): every value of the range in one pass, then the
        # same bisection over the outcomes — one pass instead of one per step, and a search nested
        # in the trials runs once over the range rather than once per step
        lo, hi = int(low.reshape(-1)[0]), int(high.reshape(-1)[0])
        outcome = np.broadcast_to(holds(np.arange(lo, hi + 1, dtype=float)), (hi - lo + 1,))
        found = bisect(lambda j: bool(outcome[j - lo]), lo, hi)
        holds(np.full(shape, lo if found is None else found, dtype=float))
        answer = base + (np.nan if found is None else found) * step
        return np.broadcast_to(answer, shape).copy() if shape else float(answer)
    feasible = (high >= low) & holds(low)
    top = holds(high) & feasible
    good, bad = low.copy(), high.copy()
    while True:
        open_ = feasible & ~top & (bad - good > 1)
        if not open_.any():
            break
        mid = np.where(open_, np.floor((good + bad) / 2), good)
        ok = holds(mid)
        good = np.where(open_ & ok, mid, good)
        bad = np.where(open_ & ~ok, mid, bad)
    k = np.where(top, high, np.where(feasible, good, np.nan))
    holds(np.where(np.isnan(k), low, k))
    answer = base + k * step
    return answer if np.ndim(answer) else float(answer)


def _search_once_per_group(elaborated: ir.Elaborated, node_id: str, values: dict[str, Array],
                           ops: dict[str, Callable[[list[Array]], Array]]) -> Array | None:
    """The search over the distinct points only, its answer and trial values spread back to every
    point; None when there is one point, or when fewer than a quarter of the points repeat another
    (grouping would cost more than it saves)."""
    upstream = elaborated.__dict__.setdefault("_search_upstream", {})
    if node_id not in upstream:
        inside = {node_id, *ir.trial_nodes(elaborated, node_id), elaborated.nodes[node_id].expr.args[0].node}  # type: ignore[union-attr]
        upstream[node_id] = sorted(ir.upstream_of(elaborated, [node_id]) - inside)
    read = [values[r] for r in upstream[node_id] if r in values]
    n = max((np.size(v) for v in read), default=1)
    if n < 2 or any(np.ndim(v) > 1 for v in read):  # one point, or a grid of more dimensions: searched as it is
        return None
    varying = [np.asarray(v, dtype=float) for v in read if np.ndim(v) == 1 and np.size(v) == n]
    if not varying:
        return None
    _, first, inverse = np.unique(np.stack(varying), axis=1, return_index=True, return_inverse=True)
    if len(first) > 0.75 * n:
        return None
    inverse = inverse.reshape(-1)
    given = {k: (v[first] if np.ndim(v) == 1 and np.size(v) == n else v) for k, v in values.items()}
    sub = dict(given)
    answer = _largest(elaborated, node_id, sub, ops, distinct=True)
    m = len(first)
    for k, v in sub.items():  # what the search set: its trial nodes and free variable, at each point's answer
        if k not in given or v is not given[k]:
            values[k] = v[inverse] if np.ndim(v) == 1 and np.size(v) == m else v
    return np.asarray(answer)[inverse] if np.ndim(answer) else answer


def _scalar(value: Any) -> Any:
    return bool(value) if isinstance(value, bool) else float(value)


def evaluate(expr: ir.Expr, values: dict[str, Array],
             ops: dict[str, Callable[[list[Array]], Array]] | None = None) -> Array:
    """One expression over arrays; an overflow or a division by zero is inf or nan in the
    result, as the callers expect, never a printed warning."""
    with np.errstate(all="ignore"):
        return _evaluate(expr, values, _OPS if ops is None else ops)


def _evaluate(expr: ir.Expr, values: dict[str, Array], ops: dict[str, Callable[[list[Array]], Array]]) -> Array:
    if isinstance(expr, ir.Lit):
        return bool(expr.value) if expr.dim == ir.BOOL else float(expr.value)
    if isinstance(expr, ir.Ref):
        return values[expr.node]
    args = [_evaluate(a, values, ops) for a in expr.args]
    return ops[expr.op](args)


_OPS: dict[str, Callable[[list[Array]], Array]] = {
    "+": lambda a: np.add(a[0], a[1]), "-": lambda a: np.subtract(a[0], a[1]),
    "*": lambda a: np.multiply(a[0], a[1]), "/": lambda a: np.divide(a[0], a[1]),
    "^": lambda a: np.power(np.asarray(a[0], dtype=float), a[1]), "neg": lambda a: np.negative(a[0]),
    "<": lambda a: np.less(a[0], a[1]), "<=": lambda a: np.less_equal(a[0], a[1]),
    ">": lambda a: np.greater(a[0], a[1]), ">=": lambda a: np.greater_equal(a[0], a[1]),
    "==": lambda a: np.equal(a[0], a[1]), "!=": lambda a: np.not_equal(a[0], a[1]),
    "and": lambda a: np.logical_and(a[0], a[1]), "or": lambda a: np.logical_or(a[0], a[1]),
    "not": lambda a: np.logical_not(a[0]), "if": lambda a: np.where(a[0], a[1], a[2]),
    **{name: function.many for name, function in FUNCTIONS.items()},
}
_RELAXED_OPS: dict[str, Callable[[list[Array]], Array]] = {
    **_OPS, "ceil": lambda a: np.asarray(a[0], dtype=float), "floor": lambda a: np.asarray(a[0], dtype=float),
}



def needed(elaborated: ir.Elaborated, exprs: list[ir.Expr]) -> set[str]:
    """The nodes these expressions read, transitively."""
    return ir.upstream(elaborated, exprs)
