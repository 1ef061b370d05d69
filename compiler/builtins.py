"""The functions a plan may call — one table from which every evaluator takes them — and the
numerics of those that need Python.

Contract
- `FUNCTIONS` holds one `Function` per callable name (`min`, `ceil`, `log`, `erlang_c`, ...):
  its arity, its dimension rule, its vectorised form (numpy), its exact form where it is a
  float function of floats, its sympy form and its LaTeX operator. The elaborator checks calls
  (arity, units) from it, `lower.py` builds the sympy form and evaluates the named builtins
  from it, `vector.py` takes the vectorised forms and `report/latex.py` the operators; adding a
  function is one row here (and its check values in `tests/test_builtins.py`). Operators
  (`+`, `<`, `and`, `if`) and the exact rational rules of `ceil`, `sqrt`, `log`, `exp` stay
  with each evaluator, which is where their exactness lives.
- Each builtin is a pure function of plain numbers. Arguments out of the domain raise
  `ValueError` with a message the evaluator turns into a diagnostic; the vectorised forms give
  NaN there instead.

- `erlang_c(servers, load)`: the probability that an arrival waits in an M/M/c queue with `c =
  servers` and offered load `a = load = λ/μ` (Erlang C): C = B / (1 − ρ·(1 − B)) with Erlang B
  = P(N = c)/P(N ≤ c), N ~ Poisson(a) (the same as the recursion B(k) = a·B(k−1)/(k + a·B(k−1))), with
  ρ = a/c; stable for thousands of servers (no factorials; the Poisson form of Erlang B summed in
  log space, see `_erlang_b`). Non-integer `servers` are rounded
  down. When `load >= servers` the queue is unstable and every arrival waits: C = 1.
  Check value: c = 4, a = 3 → 0.5094 (docs/physics.md §7.6).
- `normal_cdf(x)`: Φ(x), the standard normal distribution function, as ½·erfc(−x/√2) (accurate
  in both tails). Check value: Φ(1.6449) = 0.95.
- `normal_quantile(p)`: Φ⁻¹(p) for 0 < p < 1 (Python's `statistics.NormalDist.inv_cdf`, Wichura's
  AS241). Check value: Φ⁻¹(0.99) = 2.3263.
- `poisson_quantile(p, mean)`: the smallest whole k with P(N ≤ k) ≥ p for N ~ Poisson(mean),
  0 < p < 1, 0 ≤ mean ≤ 10⁷: how many of many independent, rare events (replicas down at a
  moment) to provision for so that a share p of the time there are no more. The terms are
  summed upwards from 10 standard deviations below the mean (the mass below is under 10⁻²⁰),
  each from the one before (t_k = t_{k−1}·mean/k), the first in log space (no factorials).
  Check values: p = 0.999, mean = 1.14 → 6 (P(N ≤ 5) = 0.99885, P(N ≤ 6) = 0.99978); mean 0 → 0.
- `erlang_c_many(servers, load)`, `poisson_quantile_many(p, mean)`: the same on numpy arrays, for
  the vectorised evaluator (grids, searches, uncertainty): the same sums, taken for all points
  at once term by term; points outside the domain come out as NaN instead of raising.
  `tests/test_builtins.py` checks that they agree with the exact forms.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_SERVERS = 10_000_000
MAX_POISSON_MEAN = 10_000_000


def erlang_c(servers: float, load: float) -> float:
    if not math.isfinite(servers) or servers < 1:
        raise ValueError("erlang_c needs at least one server")
    if not math.isfinite(load) or load < 0:
        raise ValueError("erlang_c needs a non-negative offered load")
    c = int(servers)
    if c > MAX_SERVERS:
        raise ValueError(f"erlang_c supports at most {MAX_SERVERS:,} servers")
    if load >= c:
        return 1.0
    if load == 0:
        return 0.0
    rho = load / c
    b = _erlang_b(c, load)
    return b / (1 - rho * (1 - b))


def _erlang_b(c: int, a: float) -> float:
    """Erlang B = P(N = c) / P(N ≤ c) for N ~ Poisson(a). The Poisson terms are summed downwards
    from k = c relative to the c-th term (t_{k-1} = t_k · k / a), rescaling when they grow large,
    and stopping once they are negligible past the mode — a few hundred multiplications for a
    fleet of thousands of servers, no factorials."""
    if c > a + 10 * math.sqrt(a) + 10:  # c is far in the upper tail: P(N ≤ c) ≈ 1
        return math.exp(c * math.log(a) - a - math.lgamma(c + 1))
    total, term, k = 1.0, 1.0, c
    scale = 1.0  # total and term are kept divided by `scale` to avoid overflow
    while k > 0:
        term *= k / a
        k -= 1
        total += term
        if term > 1e250:
            total, term, scale = total / 1e250, term / 1e250, scale * 1e250
        if k < a and term < total * 1e-17:
            break
    return (1.0 / scale) / total


def erlang_c_many(servers: Any, load: Any) -> Any:
    import numpy as np

    c_in, a = np.broadcast_arrays(np.asarray(servers, dtype=float), np.asarray(load, dtype=float))
    if c_in.ndim == 0:  # one point (a scalar in a vectorised evaluation): the same, as an array of one
        return erlang_c_many(c_in.reshape(1), a.reshape(1))[0]
    with np.errstate(all="ignore"):
        c = np.floor(c_in)
        valid = np.isfinite(c) & np.isfinite(a) & (c >= 1) & (c <= MAX_SERVERS) & (a >= 0)
        cs, as_ = np.where(valid, c, 1.0), np.where(valid & (a > 0), a, 1.0)
        tail = cs > as_ + 10 * np.sqrt(as_) + 10  # far in the upper tail: B ≈ P(N = c)
        lgamma = np.frompyfunc(math.lgamma, 1, 1)
        b_tail = np.exp(cs * np.log(as_) - as_ - lgamma(cs + 1).astype(float))
        # near the mode: B = 1 / Σ_j t_j with t_0 = 1, t_j = t_{j-1}·(c − j + 1)/a (P(N = c−j)/P(N = c)),
        # summed in blocks of terms at once (cumulative sums of the log ratios), each point
        # until its terms are negligible past the mode
        total = np.ones_like(cs)
        active = np.nonzero(~tail & (as_ < cs))[0]
        log_term = np.zeros(active.size)
        block, j0 = 256, 0
        while active.size:
            cc, aa = cs[active, None], as_[active, None]
            factor = cc - (j0 + np.arange(1, block + 1))[None, :] + 1
            ratio = np.where(factor > 0, factor / aa, 0.0)
            logs = log_term[:, None] + np.cumsum(np.log(ratio), axis=1)
            terms = np.exp(logs)
            total[active] += terms.sum(axis=1)
            j0 += block
            done = (factor[:, -1] <= 0) | ((terms[:, -1] <= total[active] * 1e-17) & (factor[:, -1] <= aa[:, 0]))
            log_term = logs[~done, -1]
            active = active[~done]
        b = np.where(tail, b_tail, 1.0 / total)
        rho = as_ / cs
        out = b / (1 - rho * (1 - b))
        out = np.where(as_ >= cs, 1.0, out)  # unstable: every arrival waits
        out = np.where(a == 0, 0.0, out)
        return np.where(valid, out, np.nan)


def normal_cdf(x: float) -> float:
    if math.isnan(x):
        raise ValueError("normal_cdf needs a number")
    return 0.5 * math.erfc(-x / math.sqrt(2))


def normal_cdf_many(x: Any) -> Any:
    import numpy as np

    return np.asarray(np.frompyfunc(lambda v: 0.5 * math.erfc(-v / math.sqrt(2)) if v == v else math.nan, 1, 1)(
        np.asarray(x, dtype=float)), dtype=float)


def normal_quantile(p: float) -> float:
    if not 0 < p < 1:
        raise ValueError("normal_quantile needs a probability strictly between 0 and 1")
    return statistics.NormalDist().inv_cdf(p)


def normal_quantile_many(p: Any) -> Any:
    import numpy as np

    inv = statistics.NormalDist().inv_cdf
    return np.asarray(np.frompyfunc(lambda v: inv(v) if 0 < v < 1 else math.nan, 1, 1)(np.asarray(p, dtype=float)), dtype=float)


def poisson_quantile(p: float, mean: float) -> float:
    if not 0 < p < 1:
        raise ValueError("poisson_quantile needs a probability strictly between 0 and 1")
    if not math.isfinite(mean) or mean < 0:
        raise ValueError("poisson_quantile needs a non-negative mean")
    if mean > MAX_POISSON_MEAN:
        raise ValueError(f"poisson_quantile supports a mean of at most {MAX_POISSON_MEAN:,}")
    if mean == 0:
        return 0.0
    k = max(0, math.floor(mean - 10 * math.sqrt(mean) - 10))
    term = math.exp(k * math.log(mean) - mean - math.lgamma(k + 1)) if k else math.exp(-mean)
    total = term
    while total < p:
        k += 1
        term *= mean / k
        total += term
        if term < 1e-300 and k > mean:  # p within rounding of 1: the terms are spent
            break
    return float(k)


def poisson_quantile_many(p: Any, mean: Any) -> Any:
    import numpy as np

    p_in, m_in = np.broadcast_arrays(np.asarray(p, dtype=float), np.asarray(mean, dtype=float))
    if p_in.ndim == 0:
        return poisson_quantile_many(p_in.reshape(1), m_in.reshape(1))[0]
    with np.errstate(all="ignore"):
        valid = (p_in > 0) & (p_in < 1) & np.isfinite(m_in) & (m_in >= 0) & (m_in <= MAX_POISSON_MEAN)
        m = np.where(valid & (m_in > 0), m_in, 1.0)
        k = np.maximum(0.0, np.floor(m - 10 * np.sqrt(m) - 10))
        lgamma = np.frompyfunc(math.lgamma, 1, 1)
        term = np.where(k > 0, np.exp(k * np.log(m) - m - lgamma(k + 1).astype(float)), np.exp(-m))
        total = term.copy()
        active = np.nonzero(valid & (m_in > 0) & (total < p_in))[0]
        while active.size:
            k[active] += 1
            term[active] *= m[active] / k[active]
            total[active] += term[active]
            spent = (term[active] < 1e-300) & (k[active] > m[active])
            active = active[(total[active] < p_in[active]) & ~spent]
        out = np.where(m_in == 0, 0.0, k)
        return np.where(valid, out, np.nan)


def _np() -> Any:
    import numpy as np

    return np


@dataclass(frozen=True)
class Function:
    """One function a plan may call, in every form an evaluator needs."""

    arity: tuple[int, int]  # fewest and most arguments
    # "same": every argument in one unit, the result in it (min, max); "keep": the argument's unit
    # (ceil, floor, abs); "sqrt": its square root; "plain": plain numbers in and out
    dims: str
    many: Callable[[list[Any]], Any]  # on numpy arrays
    latex: str | None  # the LaTeX operator; None: report/latex.py's own notation (⌈x⌉, ⌊x⌋)
    sympy: str | None = None  # the sympy function; None: the exact form wrapped (`sympy_function`)
    exact: Callable[..., float] | None = None  # on floats; None: lower.py's exact rule (rational where it can be)
    whole: bool = False  # its value is a whole number, which the exact evaluator keeps exact


FUNCTIONS: dict[str, Function] = {
    "erlang_c": Function((2, 2), "plain", lambda a: erlang_c_many(a[0], a[1]), "\\operatorname{ErlangC}",
                         exact=erlang_c),
    "normal_cdf": Function((1, 1), "plain", lambda a: normal_cdf_many(a[0]), "\\Phi", exact=normal_cdf),
    "normal_quantile": Function((1, 1), "plain", lambda a: normal_quantile_many(a[0]), "\\Phi^{-1}",
                                exact=normal_quantile),
    "poisson_quantile": Function((2, 2), "plain", lambda a: poisson_quantile_many(a[0], a[1]),
                                 "\\operatorname{PoissonQ}", exact=poisson_quantile, whole=True),
    "min": Function((2, 99), "same", lambda a: _np().minimum.reduce(_np().broadcast_arrays(*a)) if len(a) > 1 else a[0],
                    "\\min", sympy="Min"),
    "max": Function((2, 99), "same", lambda a: _np().maximum.reduce(_np().broadcast_arrays(*a)) if len(a) > 1 else a[0],
                    "\\max", sympy="Max"),
    "ceil": Function((1, 1), "keep", lambda a: _np().ceil(a[0]), None, sympy="ceiling"),
    "floor": Function((1, 1), "keep", lambda a: _np().floor(a[0]), None, sympy="floor"),
    "sqrt": Function((1, 1), "sqrt", lambda a: _np().sqrt(a[0]), "\\sqrt", sympy="sqrt"),
    "log": Function((1, 1), "plain", lambda a: _np().log(a[0]), "\\ln", sympy="log"),
    "exp": Function((1, 1), "plain", lambda a: _np().exp(a[0]), "\\exp", sympy="exp"),
    "abs": Function((1, 1), "keep", lambda a: _np().abs(a[0]), "", sympy="Abs"),
}


@functools.cache
def sympy_function(name: str) -> Any:
    """A sympy Function that evaluates the builtin when all its arguments are numbers."""
    import sympy as sp

    exact = FUNCTIONS[name].exact
    assert exact is not None, f"`{name}` has a sympy form of its own"
    impl: Callable[..., float] = exact

    class _Builtin(sp.Function):  # type: ignore[misc]
        nargs = FUNCTIONS[name].arity[0]

        @classmethod
        def eval(cls, *args: Any) -> Any:
            if all(a.is_number for a in args):
                try:
                    return sp.Float(impl(*(float(a) for a in args)))
                except (ValueError, TypeError):  # outside its domain: no value, left unevaluated
                    return None
            return None

    _Builtin.__name__ = name
    return _Builtin
