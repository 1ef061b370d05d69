"""Exact probing of one unknown: the plan evaluated with one input replaced, bracketed on
vectorised grids and narrowed by exact bisection — the root finding that `ask` and `solve ...
for` stand on.

Contract: `Probe(lowered, unknown, integer)` answers where a constraint stops holding
(`limit_up`, a `Limit`), where the plan's requirements end the domain (`domain_limit`), and
where an equation's sides cross (`root`); a constraint that holds, fails and holds again raises
`NonMonotone`. Points outside the plan's requirements count as not holding.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from ..exact import EvalError, evaluate, evaluate_node
from ..lower import Lowered
from ..semantics import ir
from .answers import Limit
from .graph import span_of

MAX_DOUBLINGS = 80
LIMIT_TOLERANCE = 1e-9  # relative: where a constraint stops holding, for quantities that are not counted
ROOT_TOLERANCE = 1e-12  # relative: where the two sides of an equation cross


class Probe:
    """Evaluates the plan exactly with one input replaced, for bisection and brackets.

    A value of the unknown that breaks one of the plan's requirements (`require` in the kinds: a
    utilisation above 1, a burst the replicas cannot absorb) is outside the question's domain:
    there every constraint counts as not holding and every value as undefined, so the solver
    never answers with a plan the compiler would reject."""

    def __init__(self, lowered: Lowered, unknown: str, integer: bool) -> None:
        self.lowered = lowered
        self.unknown = unknown
        self.integer = integer
        self.iterations = 0
        self.samples = 0
        self.high_seen: Any = 0
        self.bracket: tuple[float, float] | None = None
        self.el = lowered.elaborated
        self.downstream = ir.downstream(self.el, unknown)
        self.requirements = [r.expr for r in self.el.requirements if set(ir.refs(r.expr)) & self.downstream]

    def values_at(self, x: Any, exprs: list[ir.Expr], enforce: bool = True) -> dict[str, Any] | None:
        """Exact values with the unknown at x — only of the nodes `exprs` read; None outside the
        domain (unless `enforce` is off) or where a value is undefined."""
        from ..vector import needed

        requirements = self.requirements if enforce else []
        wanted = needed(self.el, [*exprs, *requirements]) & self.downstream
        values = dict(self.lowered.values)
        values[self.unknown] = x
        trials = ir.all_trial_nodes(self.el)  # evaluated by their search
        try:
            for node_id in self.el.order:
                if node_id in wanted and node_id != self.unknown and node_id not in trials:
                    values[node_id] = evaluate_node(self.el, node_id, values)
            if not all(evaluate(r, values) for r in requirements):
                return None
        except EvalError:
            return None
        return values

    def holds(self, c: ir.Expr, x: Any) -> bool:
        return bool(self.value(c, x))  # an undefined point does not satisfy the constraint

    def value(self, e: ir.Expr, x: Any, enforce: bool = True) -> Any:
        values = self.values_at(x, [e], enforce)
        if values is None:
            return None
        try:
            return evaluate(e, values)
        except EvalError:
            return None

    def sides(self, c: ir.Expr, x: Any) -> tuple[Any, Any]:
        if isinstance(c, ir.Op) and len(c.args) == 2 and c.op in ("<", "<=", ">", ">=", "=="):
            return self.value(c.args[0], x), self.value(c.args[1], x)
        return None, None

    def lowest(self) -> Any:
        return Fraction(1) if self.integer else Fraction(1, 10**6) * max(Fraction(self.lowered.values[self.unknown]), Fraction(1))

    def many(self, e: ir.Expr, xs: list[float], dtype: type) -> Any:
        """An expression at many points in one vectorised pass (float64, for bracketing)."""
        import numpy as np

        from ..vector import evaluate as vec_eval
        from ..vector import evaluate_many, needed

        self.samples += len(xs)
        values = evaluate_many(self.el, self.lowered.values, {self.unknown: np.array(xs, dtype=float)},
                               needed(self.el, [e, *self.requirements]) | {self.unknown})
        out: Any = np.broadcast_to(np.asarray(vec_eval(e, values), dtype=dtype), (len(xs),))
        allowed = np.ones(len(xs), dtype=bool)
        for r in self.requirements:
            allowed &= np.broadcast_to(np.asarray(vec_eval(r, values), dtype=bool), (len(xs),))
        return np.where(allowed, out, False if dtype is bool else np.nan)

    def defined_from(self, constraints: list[ir.Expr], lo: Any) -> Any:
        """The smallest value on the doubling grid from `lo` where every constraint can be evaluated
        (a utilisation of 10⁻⁶ asks for more servers than the queueing model takes): below it the
        question has no answer to give, rather than a violated constraint."""
        import numpy as np

        from ..vector import evaluate_many, needed

        grid = [float(lo) * 2.0**k for k in range(MAX_DOUBLINGS)]
        reads = needed(self.el, [*constraints, *self.requirements])
        wanted = reads & self.downstream
        values = evaluate_many(self.el, self.lowered.values, {self.unknown: np.array(grid)}, reads | {self.unknown})
        ok = np.array(self.allowed_many(grid), dtype=bool)
        for node_id in wanted:  # every quantity the exact evaluator would compute must have a value
            if self.el.nodes[node_id].dim != ir.BOOL:
                ok &= np.isfinite(np.broadcast_to(np.asarray(values[node_id], dtype=float), (len(grid),)))
        if ok[0] or not ok.any():
            return lo
        first = Fraction(grid[int(np.argmax(ok))])
        return Fraction(math.ceil(first)) if self.integer else first

    def allowed(self, x: Any) -> bool:
        """Whether x keeps every requirement of the plan (exactly)."""
        return self.values_at(x, []) is not None

    def allowed_many(self, xs: list[float]) -> list[bool]:
        """Whether each value keeps every requirement of the plan (vectorised)."""
        if not self.requirements:
            return [True] * len(xs)
        return self.holds_many(ir.Lit(Fraction(1), ir.BOOL, span_of(self.requirements[0]), "true"), xs)

    def domain_limit(self, lo: Any) -> Limit | None:
        """Where the plan's requirements stop admitting larger values, as a limit on the requirement
        that fails first; None when they do not bound the unknown."""
        if not self.requirements:
            return None
        every = self.requirements[0]
        for r in self.requirements[1:]:
            every = ir.Op("and", (every, r), ir.BOOL, span_of(r))
        whole = self.limit_up(every, lo, domain=True)
        if whole.value is None or whole.beyond is None:
            return None
        failing = next((r for r in self.requirements if self.value(r, whole.beyond, enforce=False) is False),
                       self.requirements[0])
        return Limit(failing, whole.value, self.sides(failing, whole.value), beyond=whole.beyond, requirement=True)

    def holds_many(self, c: ir.Expr, xs: list[float]) -> list[bool]:
        return [bool(v) for v in self.many(c, xs, bool)]

    def narrow(self, inside: Callable[[list[float]], list[bool]], good: float, bad: float,
               done: Callable[[float, float], bool], c: ir.Expr | None = None) -> tuple[float, float]:
        """Shrink a bracket (`inside` holds at `good`, not at `bad`) 64-fold per vectorised pass of
        65 evenly spaced points, until `done`; with `c`, a point inside past one outside means the
        constraint is not monotone."""
        for _ in range(12):
            if done(good, bad):
                break
            inner = [good + (bad - good) * k / 64 for k in range(65)]
            ok = inside(inner)
            j = ok.index(False) if False in ok else 64
            if c is not None and any(ok[j:]):
                raise_nonmonotone(c)
            good, bad = (inner[j - 1] if j > 0 else good), inner[j]
        return good, bad

    def limit_up(self, c: ir.Expr, lo: Any, domain: bool = False) -> Limit:
        """The largest x ≥ lo where c holds (c holds at lo): bracketed on a vectorised geometric grid
        (which also checks monotonicity), narrowed on linear grids, then exact bisection. A constraint
        monotone over all values gets its own limit even past the plan's domain (the domain's end is
        a limit of its own, `domain_limit`); one that is not is searched within the domain only.
        `domain=True` searches without that distinction."""
        if not domain and self.requirements:
            # c's own limit, as if the plan had no requirements ("memory would allow 671,737 tokens"),
            # when c is monotone over all values; else c's limit within the domain
            saved, self.requirements = self.requirements, []
            try:
                return self.limit_up(c, lo, domain=True)
            except NonMonotone:
                pass
            finally:
                self.requirements = saved
        grid = [float(lo) * 2.0**k for k in range(MAX_DOUBLINGS)]
        ok = self.holds_many(c, grid)  # False outside the domain too
        end = len(grid)
        if not domain and self.requirements:  # monotonicity matters only up to the end of the domain
            allowed = self.allowed_many(grid)
            end = allowed.index(False) if False in allowed else len(grid)
        if all(ok):
            self.high_seen = max(self.high_seen, Fraction(grid[-1]))
            return Limit(c, None)
        first_bad = ok.index(False)
        if any(ok[first_bad:end]):
            raise_nonmonotone(c)
        high = Fraction(grid[first_bad])
        close = (lambda g, b: b - g <= 64) if self.integer else (lambda g, b: b - g <= abs(g) * LIMIT_TOLERANCE)
        g, b = self.narrow(lambda xs: self.holds_many(c, xs), grid[first_bad - 1] if first_bad else float(lo),
                           grid[first_bad], close, c)
        good, bad = Fraction(g), Fraction(b)
        if self.integer:
            good, bad = Fraction(math.floor(good)), Fraction(math.ceil(bad))
        self.high_seen = max(self.high_seen, high)
        while good > lo and not self.holds(c, good):  # float bracketing is approximate: step back exactly
            good, bad = max(Fraction(lo), good - max(bad - good, Fraction(1))), good
        while (bad - good > 1) if self.integer else (bad - good > abs(good) * Fraction(LIMIT_TOLERANCE)):
            mid = Fraction((good + bad) // 2) if self.integer else (good + bad) / 2
            self.iterations += 1
            if self.holds(c, mid):
                good = mid
            else:
                bad = mid
        if not domain and self.requirements and self.value(c, bad, enforce=False) is True:
            return Limit(c, None)  # c still holds where the domain ends: it does not bound the unknown
        return Limit(c, good, self.sides(c, good), beyond=bad)

    def root(self, diff: ir.Expr) -> float | None:
        """Where `diff` changes sign nearest the unknown's value: a vectorised geometric grid over
        2^±40 of it, linear passes down to 1e-12 relative, then exact bisection."""
        import numpy as np

        x0 = max(float(self.lowered.values[self.unknown]), 1e-9)
        xs = [x0 * 2.0**k for k in range(-40, 41)]
        ys = self.many(diff, xs, float)
        s0 = np.sign(ys[40])
        if not np.isfinite(ys[40]):
            return None
        if s0 == 0:
            return x0
        crossings = [k for k in range(81) if np.isfinite(ys[k]) and np.sign(ys[k]) != s0]
        if not crossings:
            return None
        k = min(crossings, key=lambda i: abs(i - 40))
        near = k + 1 if k < 40 else k - 1  # the neighbour towards x0, still on x0's side

        def same_side(pts: Any) -> list[bool]:
            return [bool(np.isfinite(v) and np.sign(v) == s0) for v in self.many(diff, pts, float)]

        a, b = self.narrow(same_side, xs[near], xs[k], lambda g, h: abs(h - g) <= ROOT_TOLERANCE * max(abs(g), 1e-300))

        def f(x: float) -> float | None:
            v = self.value(diff, Fraction(x))
            return None if v is None else float(v)

        return self._bisect(f, *sorted((a, b)))

    def _bisect(self, f: Callable[[float], float | None], a: float, b: float) -> float:
        fa = f(a)
        self.bracket = (a, b)
        for _ in range(200):
            if b - a <= ROOT_TOLERANCE * max(abs(a), 1):
                break
            mid = (a + b) / 2
            self.iterations += 1
            fm = f(mid)
            if fm is None or fa is None:
                break
            if (fm > 0) == (fa > 0):
                a, fa = mid, fm
            else:
                b = mid
        return (a + b) / 2


class NonMonotone(Exception):
    pass


def raise_nonmonotone(c: ir.Expr) -> None:
    raise NonMonotone(span_of(c).text)

