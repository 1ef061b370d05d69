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

A `largest(x, low, high, condition)` is answered at every point by `_largest`: once per distinct
point of the `fixed` values it reads (`_search_once_per_group`), guided from one point per group
when the points differ mostly in `high` (`_guided`), else by bisection, one pass over its trial
nodes per step (`_bisect`). All three give the bisection's answers under `largest`'s contract.
The search leaves its trial nodes at its answer, where they hold what the plan's own nodes
downstream of it hold (`ir.search_aliases`: `chat@batch@step_time.gemm_time` is
`chat@step_time.gemm_time` at the running batch), so the pass reads those off the trials and
computes them only at the points where the search has no answer (`Answered`).

The IR is evaluated directly (the same tree the exact evaluator and the sympy form come from);
`tests/test_vector.py` checks that it agrees with the exact evaluator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .builtins import FUNCTIONS
from .exact import bisect
from .identity import ByIdentity
from .semantics import ir

Array = Any  # numpy array or float


CHUNK = 32_768
"""Points evaluated in one pass: a larger grid is evaluated chunk by chunk and joined, so that the
memory of one pass is bounded (Erlang C holds a row of 256 terms per point, 64 MiB a chunk)
whatever the size of the question. Each pass interprets the plan's formulas once in Python, so a
smaller chunk repeats that for nothing: a search of 884,736 configurations took 19.4 s in chunks
of 8,192 and 13.7 s in chunks of 32,768 (bench/solver_speed.py); 65,536 gained nothing more."""


def evaluate_many(elaborated: ir.Elaborated, base: dict[str, Any], fixed: dict[str, Array],
                  only: set[str] | None = None, relaxed: bool = False, keep: set[str] | None = None,
                  answers_only: bool = False) -> dict[str, Array]:
    """`only`, when given, limits the pass to these nodes (the ones a question needs); `keep`, when
    given, the nodes returned (what the caller reads: a large grid keeps no other node's values).
    `answers_only`: nothing after a search reads its trial values (the exact search's float guess
    reads only its answer), so a search at one point does not evaluate its trial nodes once more at
    its answer to leave them there (a pass over its trials: about a third of the guess)."""
    n = max((np.size(v) for v in fixed.values()), default=1)
    if n > CHUNK and all(np.ndim(v) <= 1 for v in fixed.values()):
        parts = [evaluate_many(elaborated, base, {k: v[i:i + CHUNK] if np.ndim(v) == 1 and np.size(v) == n else v
                                                  for k, v in fixed.items()}, only, relaxed, keep, answers_only)
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
    sources = frozenset(fixed)  # every value that varies is a function of these
    answered: dict[str, Answered] = {}  # the plan's nodes a search's trials hold at its answer
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
            if node_id in base and varying.isdisjoint(node.deps):
                values[node_id] = _scalar(base[node_id])
                continue
            if node_id not in base and varying.isdisjoint(node.deps):
                values[node_id] = np.nan  # failed in the base plan and unaffected by what varies
                continue
            varying.add(node_id)
            if node_id in answered:
                answered[node_id].take(node_id, node, values, ops)
            elif ir.is_search(node.expr):
                pairs = _pairs(elaborated, node_id, only, keep)
                spread = None if keep is None else keep | {t for p, (t, whole) in pairs.items() if whole}
                values[node_id] = _largest(elaborated, node_id, values, ops, sources=sources, keep=spread,
                                           leave=not answers_only)
                if not answers_only:
                    answered.update(Answered.of(pairs, values, node_id))
            else:
                values[node_id] = _evaluate(node.expr, values, ops)
    return values if keep is None else {k: v for k, v in values.items() if k in keep}


def _pairs(elaborated: ir.Elaborated, node_id: str, only: set[str] | None,
           keep: set[str] | None) -> dict[str, tuple[str, bool]]:
    """The plan's nodes of this pass that a search's trials hold at its answer
    (`ir.search_aliases`): plan node → (trial node, whether the pass needs the plan node at
    every point — it is kept, or read by a node of the pass that is not one of them — rather
    than only where the search has no answer, to compute others of them there)."""
    pairs = {p: t for p, t in ir.search_aliases(elaborated, node_id).items() if only is None or p in only}
    if keep is None:
        return {p: (t, True) for p, t in pairs.items()}
    read = {d for n in (elaborated.order if only is None else only) if n not in pairs for d in elaborated.nodes[n].deps}
    return {p: (t, p in keep or p in read) for p, t in pairs.items()}


@dataclass
class Answered:
    """The plan's nodes one search's trials hold at its answer, taken from them rather than
    computed a second time: at the points where the search has an answer each is its trial
    node's value (`ir.search_aliases` proves the two equal there); at the few where it has none
    (NaN: even `low` fails, and the trials were left at `low`) each is computed from its formula
    on those points only, as the pass would have computed it. A node the pass reads only through
    others of them is computed at those points alone (`whole` False)."""

    pairs: dict[str, tuple[str, bool]]
    missing: Array  # the points where the search has no answer
    n: int
    at_missing: dict[str, Array]

    @staticmethod
    def of(pairs: dict[str, tuple[str, bool]], values: dict[str, Array], node_id: str) -> dict[str, Answered]:
        """The pairs, where the search has an answer at most of the points and left its trial
        values at every point (else the pass computes the plan's nodes itself)."""
        answer = values[node_id]
        if not pairs or np.ndim(answer) != 1:
            return {}
        n = np.size(answer)
        missing = np.flatnonzero(np.isnan(answer))
        if 2 * missing.size > n or any(whole and t not in values for t, whole in pairs.values()):
            return {}
        shared = Answered(pairs, missing, n, {})
        return dict.fromkeys(pairs, shared)

    def take(self, node_id: str, node: ir.Node, values: dict[str, Array], ops: dict[str, Callable[[list[Array]], Array]]) -> None:
        trial, whole = self.pairs[node_id]
        there = None
        if self.missing.size:
            at = {d: self.at_missing[d] if d in self.at_missing
                  else values[d][self.missing] if np.ndim(values[d]) == 1 and np.size(values[d]) == self.n else values[d]
                  for d in node.deps}
            there = self.at_missing[node_id] = _evaluate(node.expr, at, ops)
        if not whole:
            return
        value = values[trial]
        if there is not None:
            value = np.array(np.broadcast_to(value, (self.n,)))
            value[self.missing] = there
        values[node_id] = value


def _largest(elaborated: ir.Elaborated, node_id: str, values: dict[str, Array],
             ops: dict[str, Callable[[list[Array]], Array]], distinct: bool = False, nested: bool = False,
             sources: frozenset[str] = frozenset(), keep: set[str] | None = None, leave: bool = True) -> Array:
    """`largest(x, low, high, condition)` at every point at once: the same answer as the exact
    evaluator's (`exact.largest`), NaN where even `low` fails. The trial nodes are left at their
    values for the answer (at one point, not when `leave` is False: see `evaluate_many`).

    A search's answer is a function of what it reads, so points that agree on every varying
    quantity upstream of it (a grid over the utilisation target, which only the replicas read,
    repeats the running batch's search for each value) are searched once: unless `distinct` says
    the points already are, the search runs on one point of each group and its answer and trial
    values are copied to the rest. A search `nested` in another's trials reads that one's trial
    value, which differs from point to point: it is neither grouped nor guided (`_guided`).
    `sources` are the quantities the pass was given (`evaluate_many`'s `fixed`), of which every
    other varying value is a function: points are grouped by those the search reads. With `keep`
    (what the pass returns), the grouped search spreads back only the trial values that other
    nodes read or that are kept."""
    if not distinct:
        shared = _search_once_per_group(elaborated, node_id, values, ops, sources, keep)
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

    def holds_in(at: dict[str, Array], base: Array, step: Array) -> Callable[[Array], Array]:
        """The condition at step counts k, over the points of `at` (the trial nodes set there)."""
        def holds(k: Array) -> Array:
            at[free.node] = base + k * step
            for n in trials:
                e = elaborated.nodes[n].expr
                # a search nested in the trials reads this one's trial value, which differs from point to point
                at[n] = (_largest(elaborated, n, at, ops, distinct=True, nested=True) if ir.is_search(e)
                         else _evaluate(e, at, ops))
            return np.asarray(_evaluate(cond, at, ops), dtype=bool)
        return holds

    holds = holds_in(values, base, step)
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
        if leave:
            holds(np.full(shape, lo if found is None else found, dtype=float))
        answer = base + (np.nan if found is None else found) * step
        return np.broadcast_to(answer, shape).copy() if shape else float(answer)

    def part(idx: Array) -> Part:
        """The search on these points only, in a values dict of their own, and their range."""
        n = np.size(low)
        at = {k: (v[idx] if np.ndim(v) == 1 and np.size(v) == n else v) for k, v in values.items()}
        only = [np.broadcast_to(a, (n,))[idx] if np.ndim(a) else a for a in (base, step)]
        return Part(holds_in(at, only[0], only[1]), low[idx], high[idx], at, idx)

    def leave_at_answers(parts: list[Part], k: Array) -> None:
        """The trial nodes left at the answers: each part's own values joined into the whole's."""
        if not parts:
            return
        for piece in parts:
            piece.holds(np.where(np.isnan(k[piece.idx]), piece.low, k[piece.idx]))
        for name in (free.node, *trials):
            whole = np.array(np.broadcast_to(values[name], np.shape(low)))
            for piece in parts:
                whole[piece.idx] = piece.at[name]
            values[name] = whole

    guided = _guided(elaborated, node_id, values, high_expr, holds, low, high, part, sources) if not nested else None
    if guided is None:
        k = _bisect(holds, low, high)
        holds(np.where(np.isnan(k), low, k))
    else:
        k, parts = guided
        leave_at_answers(parts, k)
    answer = base + k * step
    return answer if np.ndim(answer) else float(answer)


@dataclass
class Part:
    """A search over some of the points (`idx`): its condition, range and values dict."""

    holds: Callable[[Array], Array]
    low: Array
    high: Array
    at: dict[str, Array]
    idx: Array


def _bisect(holds: Callable[[Array], Array], low: Array, high: Array) -> Array:
    """Each point's answer as a step count (NaN where `low` fails): `exact.bisect` at every point
    at once, one pass over the trial nodes per step."""
    feasible = (high >= low) & holds(low)
    top = holds(high) & feasible
    good = _narrow(holds, low.copy(), high.copy(), feasible & ~top)
    return np.where(top, high, np.where(feasible, good, np.nan))


def _narrow(holds: Callable[[Array], Array], good: Array, bad: Array, open_: Array) -> Array:
    """Bisection between `good` (holds) and `bad` (fails) at the open points: the last that holds."""
    while True:
        open_ = open_ & (bad - good > 1)
        if not open_.any():
            return good
        mid = np.where(open_, np.floor((good + bad) / 2), good)
        ok = holds(mid)
        good = np.where(open_ & ok, mid, good)
        bad = np.where(open_ & ~ok, mid, bad)


def _gallop(holds: Callable[[Array], Array], good: Array, high: Array) -> Array:
    """The last value that holds, from `good` (which holds) up to `high`: steps of 1, 2, 4, ...
    until one fails, then bisection within the last step — a few passes when the answer is near."""
    bad = np.full(np.shape(good), np.inf)
    top = good >= high
    stride = np.ones(np.shape(good))
    while True:
        open_ = ~top & np.isinf(bad)
        if not open_.any():
            break
        probe = np.where(open_, np.minimum(good + stride, high), good)
        ok = holds(probe)
        good = np.where(open_ & ok, probe, good)
        bad = np.where(open_ & ~ok, probe, bad)
        top = top | (open_ & ok & (probe >= high))
        stride = stride * 2
    return _narrow(holds, good, bad, ~top)


MULTISECT_POINTS = 2048
"""Points a multisection pass evaluates at most: each searched point tries this many over their number."""


def _multisect(part: Callable[[Array], Part], idx: Array) -> Array:
    """The answers at these few points as step counts (NaN where `low` fails), as `_bisect` gives
    them, in fewer passes: each pass tries K values spread over every point's bracket at once
    (K = MULTISECT_POINTS over the number of points), keeping the last that holds and the first
    that fails — the condition holds up to some value and fails beyond it, so the answer lies
    between them. A range of 2,048 takes three passes of 341 values for six points, not twelve."""
    m = np.size(idx)
    k = max(2, MULTISECT_POINTS // max(m, 1))
    wide = part(np.repeat(idx, k))
    low, high = wide.low[::k], wide.high[::k]
    j = np.arange(k, dtype=float)
    # the first pass spans the range, its ends included
    probe = np.floor(low[:, None] + (high - low)[:, None] * j / (k - 1))
    probe[:, -1] = high
    ok = np.asarray(np.broadcast_to(wide.holds(np.where((high >= low)[:, None], probe, low[:, None]).reshape(-1)), (m * k,))).reshape(m, k)
    feasible = (high >= low) & ok[:, 0]
    top = feasible & ok[:, -1]
    good, bad = _bracket(probe, ok, low, high)
    while True:
        open_ = feasible & ~top & (bad - good > 1)
        if not open_.any():
            break
        probe = np.where(open_[:, None], np.floor(good[:, None] + (bad - good)[:, None] * (j + 1) / (k + 1)), good[:, None])
        ok = np.asarray(np.broadcast_to(wide.holds(probe.reshape(-1)), (m * k,))).reshape(m, k)
        inner_good, inner_bad = _bracket(probe, ok, good, bad)
        good, bad = np.where(open_, inner_good, good), np.where(open_, inner_bad, bad)
    return np.where(top, high, np.where(feasible, good, np.nan))


def _bracket(probe: Array, ok: Array, good: Array, bad: Array) -> tuple[Array, Array]:
    """Each row's last probe that holds before its first that fails (else the bracket's ends)."""
    fails = ~ok
    first = np.where(fails.any(axis=1), fails.argmax(axis=1), probe.shape[1])
    rows = np.arange(probe.shape[0])
    new_bad = np.where(first < probe.shape[1], probe[rows, np.minimum(first, probe.shape[1] - 1)], bad)
    new_good = np.where(first > 0, probe[rows, np.maximum(first - 1, 0)], good)
    return np.maximum(new_good, good), np.minimum(new_bad, bad)


GUIDE_SHARE = 0.25
"""A search is guided when its points fall into at most this share as many groups."""


def _guided(elaborated: ir.Elaborated, node_id: str, values: dict[str, Array], high_expr: ir.Expr,
            holds: Callable[[Array], Array], low: Array, high: Array, part: Callable[[Array], Part],
            sources: frozenset[str]) -> tuple[Array, list[Part]] | None:
    """The answers of a search over points that differ mostly in its range's upper end (a grid
    over the engine's cap on running sequences, which the condition reads only a little: the
    sampler's memory), in a few passes over all points rather than one per bisection step.

    The points are grouped by the `sources` the search reads other than the upper end's inputs
    and what they feed; the search runs on one point of each group (the one with the widest
    range; `_multisect`), and its answer, within each point's range, is each point's guess. The
    condition holds up to some value and fails beyond it (the contract of `largest`,
    `exact.bisect`), so a guess at which it holds and, below the upper end, fails one step
    beyond is the answer, and a guess at the lower end at which it fails means there is none.
    From a guess at which it holds one step beyond as well, the search gallops upwards; below a
    guess at which it fails, it bisects. Returns the answers as step counts, and the parts of
    the points searched on their own (the trial nodes of the rest are left at their guess);
    None (search as usual) when the points do not fall into few enough groups."""
    cache = elaborated.__dict__.setdefault("_guide_keys", {})
    if node_id not in cache:
        inside = {node_id, *ir.trial_nodes(elaborated, node_id), elaborated.nodes[node_id].expr.args[0].node}  # type: ignore[union-attr]
        # the upper end's inputs, and what they feed (the cap on sequences sizes the sampler's memory)
        bound = ir.upstream(elaborated, [high_expr]).union(*(ir.downstream(elaborated, r) for r in ir.refs(high_expr)))
        cache[node_id] = sorted(ir.upstream_of(elaborated, [node_id]) - inside - bound)
    n = np.size(low)
    if n < 2 or np.ndim(high) != 1:
        return None
    _, inverse = _groups([values[r] for r in cache[node_id] if r in sources and r in values], n)
    if int(inverse.max()) + 1 > GUIDE_SHARE * n:
        return None
    order = np.lexsort((-np.nan_to_num(high, nan=-np.inf), inverse))  # each group's widest range first
    starts = np.flatnonzero(np.r_[True, inverse[order][1:] != inverse[order][:-1]])
    found = _multisect(part, order[starts])[inverse]
    guess = np.where(np.isnan(found) | (high < low), low, np.clip(found, low, high))
    at = holds(guess) & (high >= low)  # the trial values are left at the guess
    beyond = guess >= high
    short = np.flatnonzero(at & ~beyond)  # one step beyond, where the guess holds below the upper end
    if short.size:
        beyond[short] = part(short).holds(guess[short] + 1)
    k = np.where(at & ~beyond, guess, np.where(at & (guess >= high), high, np.nan))
    parts = []
    up = np.flatnonzero(at & beyond & (guess < high))
    if up.size:  # holds one step beyond the guess: the answer lies above
        above = part(up)
        k[up] = _gallop(above.holds, guess[up] + 1, above.high)
        parts.append(above)
    down = np.flatnonzero(~at & (guess > low) & (high >= low))
    if down.size:  # fails at the guess: the answer lies below, if anywhere
        below = part(down)
        k[down] = _bisect(below.holds, below.low, guess[down] - 1)
        parts.append(below)
    return k, parts


def _search_once_per_group(elaborated: ir.Elaborated, node_id: str, values: dict[str, Array],
                           ops: dict[str, Callable[[list[Array]], Array]], sources: frozenset[str],
                           keep: set[str] | None = None) -> Array | None:
    """The search over the distinct points only (of the `sources` it reads), its answer and
    trial values spread back to every point; None when there is one point, or when fewer than a
    quarter of the points repeat another (grouping would cost more than it saves)."""
    if all(np.size(values[r]) < 2 for r in sources if r in values):  # one point (an exact search's guess): no groups
        return None
    upstream = elaborated.__dict__.setdefault("_search_upstream", {})
    if node_id not in upstream:
        inside = {node_id, *ir.trial_nodes(elaborated, node_id), elaborated.nodes[node_id].expr.args[0].node}  # type: ignore[union-attr]
        # the trial values that nodes outside the search read
        read_after = {d for n, node in elaborated.nodes.items() if n not in inside for d in node.deps if d in inside}
        upstream[node_id] = (sorted(ir.upstream_of(elaborated, [node_id]) - inside), sorted(inside), read_after)
    reads, inside_nodes, read_after = upstream[node_id]
    spread = None if keep is None else read_after | keep
    read = [values[r] for r in reads if r in values]
    n = max((np.size(v) for v in read), default=1)
    if n < 2 or any(np.ndim(v) > 1 for v in read):  # one point, or a grid of more dimensions: searched as it is
        return None
    given_read = [values[r] for r in reads if r in sources and r in values]
    if not any(np.ndim(v) == 1 and np.size(v) == n for v in given_read):
        return None
    first, inverse = _groups(given_read, n)
    if len(first) > 0.75 * n:
        return None
    given = {k: (v[first] if np.ndim(v) == 1 and np.size(v) == n else v)  # what the search reads and sets
             for k, v in ((k, values[k]) for k in (*reads, *inside_nodes) if k in values)}
    sub = dict(given)
    answer = _largest(elaborated, node_id, sub, ops, distinct=True, sources=sources)
    m = len(first)
    for k, v in sub.items():  # what the search set: its trial nodes and free variable, at each point's answer
        if (k not in given or v is not given[k]) and (spread is None or k in spread):
            values[k] = v[inverse] if np.ndim(v) == 1 and np.size(v) == m else v
    return np.asarray(answer)[inverse] if np.ndim(answer) else answer


def _groups(rows: list[Array], n: int) -> tuple[Array, Array]:
    """The distinct points of these rows (those of length n; the rest are the same everywhere):
    the first point of each group, and each point's group, as `np.unique(axis=1)` gives them.
    Each row is coded by its own distinct values and the codes joined into one integer per point,
    so that one sort of integers replaces a sort of the points' records."""
    varying = [np.asarray(r, dtype=float) for r in rows if np.ndim(r) == 1 and np.size(r) == n]
    if not varying:
        return np.zeros(1, dtype=np.intp), np.zeros(n, dtype=np.intp)
    key = np.zeros(n, dtype=np.int64)
    size = 1
    for row in varying:
        _, code = np.unique(row, return_inverse=True)
        count = int(code.max()) + 1
        if size * count >= 2 ** 62:  # the joined code would overflow: the records themselves
            _, first, inverse = np.unique(np.stack(varying), axis=1, return_index=True, return_inverse=True)
            return first, inverse.reshape(-1)
        key = key * count + code.reshape(-1)
        size *= count
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def _scalar(value: Any) -> Any:
    return bool(value) if isinstance(value, bool) else float(value)


def evaluate(expr: ir.Expr, values: dict[str, Array],
             ops: dict[str, Callable[[list[Array]], Array]] | None = None) -> Array:
    """One expression over arrays; an overflow or a division by zero is inf or nan in the
    result, as the callers expect, never a printed warning."""
    with np.errstate(all="ignore"):
        return _evaluate(expr, values, _OPS if ops is None else ops)


def _evaluate(expr: ir.Expr, values: dict[str, Array], ops: dict[str, Callable[[list[Array]], Array]]) -> Array:
    kind = type(expr)  # the IR's three node classes, most often met first (a search evaluates its trials many times)
    if kind is ir.Ref:
        return values[expr.node]  # type: ignore[union-attr]
    if kind is ir.Op:
        return ops[expr.op]([_evaluate(a, values, ops) for a in expr.args])  # type: ignore[union-attr]
    return _literal(expr)  # type: ignore[arg-type]


_LITERALS: ByIdentity[Any] = ByIdentity(100_000)


def _literal(lit: ir.Lit) -> Any:
    """A literal's value as a float (or bool), converted from its exact fraction once."""
    seen = _LITERALS.get(lit)
    if seen is not None:
        return seen
    return _LITERALS.put(lit, bool(lit.value) if lit.dim == ir.BOOL else float(lit.value))


_OPS: dict[str, Callable[[list[Array]], Array]] = {
    # the operators, not the ufuncs: the same IEEE operations on arrays, and on the many values
    # that are plain floats (what a search's trials read from the plan) a tenth of the cost
    "+": lambda a: a[0] + a[1], "-": lambda a: a[0] - a[1],
    "*": lambda a: a[0] * a[1], "/": lambda a: np.divide(a[0], a[1]),
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
