"""Named builtins whose numerics need Python: exact semantics, documented numerics.

Contract: each builtin is a pure function of plain numbers, used by the evaluator (`lower.py`)
and, through `sympy_function(name)`, by the symbolic form. Arguments out of the domain raise
`ValueError` with a message the evaluator turns into a diagnostic.

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
- `erlang_c_many(servers, load)`: the same on numpy arrays, for the vectorised evaluator (grids,
  searches, uncertainty): the same sum, taken for all points at once term by term; points
  outside the domain come out as NaN instead of raising. `tests/test_builtins.py` checks that it
  agrees with `erlang_c`.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Callable
from typing import Any

MAX_SERVERS = 10_000_000


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


BUILTINS: dict[str, Callable[..., float]] = {"erlang_c": erlang_c, "normal_cdf": normal_cdf,
                                             "normal_quantile": normal_quantile}
MANY: dict[str, Callable[..., Any]] = {"erlang_c": erlang_c_many, "normal_cdf": normal_cdf_many,  # the same builtins on numpy arrays
        "normal_quantile": normal_quantile_many}
ARITY = {"erlang_c": 2, "normal_cdf": 1, "normal_quantile": 1}


@functools.cache
def sympy_function(name: str) -> Any:
    """A sympy Function that evaluates the builtin when all its arguments are numbers."""
    import sympy as sp

    impl = BUILTINS[name]

    class _Builtin(sp.Function):  # type: ignore[misc]
        nargs = ARITY[name]

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
