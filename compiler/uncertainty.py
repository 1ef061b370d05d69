"""Uncertainty: inputs given as ranges (`mbu = 0.6 .. 0.8`), carried through to every quantity
that depends on them, and to the checks.

Contract: `propagate(lowered) -> Uncertainty | None` runs after lowering; None when no input of
the plan has a range (and then numpy is not even imported).
- The plan itself is evaluated at each range's midpoint (elaboration puts it there); this stage
  only adds intervals. The k ranged inputs span a box. Every node downstream of them, and every
  check and summary item, is evaluated (vectorised, float64, `vector.py`) on a grid over the box:
  `levels` evenly spaced values per range, both ends included, as many as keep the grid within
  `MAX_POINTS` (at least 2: the corners).
- A quantity whose values move the same way along every grid line of an axis, for every axis,
  is treated as monotone in each range: a function monotone in each variable takes its extremes at corners of
  the box, so its interval is the smallest and largest corner value (`monotone`). Otherwise the
  interval is the smallest and largest value anywhere on the grid (`sampled`), which can miss a
  narrow extreme between grid points; the report says which applies.
- A check holds on all, none or some of the grid points; the report shows the share.
- A quantity undefined somewhere on the grid (a division by zero inside the box) gets no
  interval; the share of points where it is undefined is kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .lower import Lowered
from .semantics import ir

MAX_POINTS = 1024


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    monotone: bool  # extremes at corners (exact for a function monotone in each range)


@dataclass
class Uncertainty:
    inputs: list[str]  # the ranged input nodes, in plan order
    levels: int  # grid values per range
    points: int  # grid points in all
    intervals: dict[str, Interval] = field(default_factory=dict)  # node id -> interval
    undefined: dict[str, float] = field(default_factory=dict)  # node id -> share of points with no value
    checks: list[float] = field(default_factory=list)  # per check of the plan: share of points where it holds
    summary: list[Interval | None] = field(default_factory=list)  # per summary item


def propagate(lowered: Lowered) -> Uncertainty | None:
    el = lowered.elaborated
    inputs = [n for n in el.order if el.nodes[n].interval is not None]
    if not inputs:
        return None
    import numpy as np

    from .vector import evaluate, evaluate_many

    k = len(inputs)
    levels = max(2, math.floor(MAX_POINTS ** (1 / k) + 1e-9))
    axes = []
    for n in inputs:
        low, high = el.nodes[n].interval  # type: ignore[misc]
        axes.append(np.linspace(float(low), float(high), levels))
    grids = np.meshgrid(*axes, indexing="ij")
    shape = grids[0].shape
    fixed = {n: g.ravel() for n, g in zip(inputs, grids)}
    affected: set[str] = set()
    for n in inputs:
        affected |= ir.downstream(el, n)
    values = evaluate_many(el, lowered.values, fixed, None)
    out = Uncertainty(inputs, levels, int(np.prod(shape)))
    for node_id in el.order:
        if node_id not in affected or el.nodes[node_id].dim == ir.BOOL:
            continue
        _record(out, node_id, values[node_id], shape)
    points = out.points
    for check in el.checks:
        held = np.broadcast_to(np.asarray(evaluate(check.expr, values), dtype=bool), (points,))
        out.checks.append(float(held.mean()))
    for expr in el.summary:
        if expr.dim == ir.BOOL or not (set(ir.refs(expr)) & affected):
            out.summary.append(None)
            continue
        arr = np.broadcast_to(np.asarray(evaluate(expr, values), dtype=float), (points,))
        out.summary.append(_interval(arr.reshape(shape)))
    return out


def _record(out: Uncertainty, node_id: str, raw: Any, shape: tuple[int, ...]) -> None:
    import numpy as np

    arr = np.broadcast_to(np.asarray(raw, dtype=float), (int(np.prod(shape)),)).reshape(shape)
    bad = ~np.isfinite(arr)
    if bad.any():
        out.undefined[node_id] = float(bad.mean())
        return
    interval = _interval(arr)
    if interval is not None:
        out.intervals[node_id] = interval


def _interval(arr: Any) -> Interval | None:
    import numpy as np

    if not np.isfinite(arr).all():
        return None
    scale = float(np.max(np.abs(arr))) or 1.0
    tol = 1e-12 * scale
    monotone = True
    for axis in range(arr.ndim):
        d = np.diff(arr, axis=axis)
        if not ((d >= -tol).all() or (d <= tol).all()):
            monotone = False
            break
    if monotone:
        corners = arr[tuple(slice(None, None, max(s - 1, 1)) for s in arr.shape)]
        return Interval(float(corners.min()), float(corners.max()), True)
    return Interval(float(arr.min()), float(arr.max()), False)
