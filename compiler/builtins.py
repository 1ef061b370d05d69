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
- `poisson_tail(k, mean)`: P(N ≥ k) for N ~ Poisson(mean), k a whole number, 0 ≤ k, mean ≤ 10⁷:
  the share of intervals in which at least k of many independent arrivals fall. With
  E[N·1{N ≥ k}] = mean·P(N ≥ k − 1) it gives the mean count of such an interval too. Taken to full
  relative precision on either side (a sum, not `1 − e⁻ᵐ(1 + m + …)`, which loses every digit for a
  small mean): for mean < k the terms from P(N = k) upwards, else 1 − the terms from P(N = k − 1)
  downwards (at most about 0.6, so nothing cancels), each term from the one before, the first in
  log space (its `lgamma` bounds the relative error: 10⁻¹⁶ for small k, 10⁻⁹ about k = 10⁶). The
  exact form is the vectorised one on one point.
  Check values: k = 3, mean = 0.46 → 0.0115361; k = 3, mean = 10⁻⁴ → 1.66654·10⁻¹³ (≈ m³/6).
- `lognormal_mixture_quantile(p, w₁, m₁, σ₁, w₂, m₂, σ₂, ...)`: the p-quantile of a mixture of
  lognormals, component k with weight w_k (the weights are normalised), mean m_k > 0 and log-spread
  σ_k ≥ 0 (median m_k·e^(−σ_k²/2)): the t with Σ w_k·Φ((ln t − ln m_k + σ_k²/2)/σ_k) = p·Σ w_k,
  0 < p < 1. A time made of several cases (a prompt that arrives in a decode-only iteration or in
  one that carries a prefill, at a point of it) is such a mixture; its quantile has no closed form.
  The mixture's quantile lies between the least and the greatest of its components' own; it is
  found by Newton's method in ln t inside that bracket, bisecting where a step would leave it (at
  most 64 steps; a few with a numpy Φ, then mostly one with math.erfc's). The exact form is the
  vectorised one on one point.
  Check value: one component is its lognormal's quantile, m·e^(σ·Φ⁻¹(p) − σ²/2).
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

    return 0.5 * _erfc_many(np.negative(np.asarray(x, dtype=float)) / math.sqrt(2))


@functools.cache
def _erfc_ufunc() -> Any:
    import numpy as np

    return np.frompyfunc(math.erfc, 1, 1)


def _erfc_many(x: Any) -> Any:
    """math.erfc element by element (numpy has none), as a float array; NaN gives NaN."""
    import numpy as np

    return np.asarray(_erfc_ufunc()(x), dtype=float)


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


def poisson_tail(k: float, mean: float) -> float:
    if not (math.isfinite(k) and k >= 0 and k == math.floor(k) and k <= MAX_POISSON_MEAN):
        raise ValueError(f"poisson_tail needs a whole number of at least 0 and at most {MAX_POISSON_MEAN:,}")
    if not math.isfinite(mean) or mean < 0:
        raise ValueError("poisson_tail needs a non-negative mean")
    if mean > MAX_POISSON_MEAN:
        raise ValueError(f"poisson_tail supports a mean of at most {MAX_POISSON_MEAN:,}")
    return float(poisson_tail_many(k, mean))


TAIL_BLOCK = 64


def poisson_tail_many(k: Any, mean: Any) -> Any:
    """P(N ≥ k) at every point at once, summed away from the mode in blocks of terms (cumulative
    sums of the log ratios), each point until what is left of its series is under 10⁻¹⁷ of its
    sum: the ratios fall along the series, so the rest is at most the last term/(1 − its ratio)."""
    import numpy as np

    k_in, m_in = np.broadcast_arrays(np.asarray(k, dtype=float), np.asarray(mean, dtype=float))
    if k_in.ndim == 0:
        return poisson_tail_many(k_in.reshape(1), m_in.reshape(1))[0]
    with np.errstate(all="ignore"):
        valid = (np.isfinite(k_in) & (k_in >= 0) & (k_in == np.floor(k_in)) & (k_in <= MAX_POISSON_MEAN)
                 & np.isfinite(m_in) & (m_in >= 0) & (m_in <= MAX_POISSON_MEAN))
        ks = np.where(valid & (k_in >= 1), k_in, 1.0)
        m = np.where(valid & (m_in > 0), m_in, 1.0)
        upper = ks > m  # the tail is the small side: sum it from P(N = k) up; else 1 − P(N ≤ k − 1), down
        first = np.where(upper, ks, ks - 1)
        lgamma = np.frompyfunc(math.lgamma, 1, 1)
        log_term = first * np.log(m) - m - lgamma(first + 1).astype(float)
        total = np.exp(log_term)
        active = np.nonzero(valid & (k_in >= 1) & (m_in > 0) & (total > 0))[0]
        steps = np.arange(1, TAIL_BLOCK + 1, dtype=float)
        j0 = 0
        while active.size:
            f, mm, up = first[active, None], m[active, None], upper[active, None]
            j = j0 + steps[None, :]
            ratio = np.where(up, mm / (f + j), (f - j + 1) / mm)  # t_{k+j}/t_{k+j-1}, or t_{k-1-j}/t_{k-j}
            logs = log_term[active, None] + np.cumsum(np.log(np.maximum(ratio, 0.0)), axis=1)
            terms = np.exp(logs)
            total[active] += terms.sum(axis=1)
            j0 += TAIL_BLOCK
            last, r = terms[:, -1], np.maximum(ratio[:, -1], 0.0)
            done = (r <= 0) | (last <= total[active] * 1e-17 * (1 - np.minimum(r, 1 - 1e-17)))
            log_term[active] = logs[:, -1]
            active = active[~done]
        out = np.where(upper, total, 1.0 - total)
        out = np.where(m_in == 0, 0.0, out)
        out = np.where(k_in == 0, 1.0, out)
        return np.where(valid, out, np.nan)


MIXTURE_STEPS = 64


def lognormal_mixture_quantile(p: float, *components: float) -> float:
    import numpy as np

    if not 0 < p < 1:
        raise ValueError("lognormal_mixture_quantile needs a probability strictly between 0 and 1")
    if len(components) < 3 or len(components) % 3:
        raise ValueError("lognormal_mixture_quantile needs a probability and (weight, mean, sigma) for each component")
    parts = [components[i:i + 3] for i in range(0, len(components), 3)]
    if any(not (w >= 0 and 0 < m < math.inf and 0 <= s < math.inf) for w, m, s in parts) or not sum(w for w, _, _ in parts) > 0:
        raise ValueError("lognormal_mixture_quantile needs weights >= 0 (not all 0), means > 0 and sigmas >= 0")
    return float(lognormal_mixture_quantile_many([np.array([p])] + [np.array([x]) for x in components])[0])


def lognormal_mixture_quantile_many(args: list[Any]) -> Any:
    """The quantile for every point at once (the exact form is this on one point, so the two agree
    to the last bit). Newton's method in ln t on Σ w·Φ((ln t − μ)/σ) − p, kept inside the bracket
    that the signs so far give (a step that would leave it bisects it), from the bracket's middle:
    the distribution is increasing, so this converges from any start, quadratically near the root."""
    import numpy as np

    arrays = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in args))
    if arrays[0].ndim == 0:
        return lognormal_mixture_quantile_many([a.reshape(1) for a in arrays])[0]
    p, rest = arrays[0], arrays[1:]
    if len(rest) < 3 or len(rest) % 3:
        raise ValueError("lognormal_mixture_quantile needs a probability and (weight, mean, sigma) for each component")
    w, m, s = (np.stack(rest[i::3]) for i in range(3))  # components x points
    with np.errstate(all="ignore"):
        total = w.sum(axis=0)
        valid = ((p > 0) & (p < 1) & (total > 0)
                 & np.all((w >= 0) & (m > 0) & (s >= 0) & np.isfinite(m) & np.isfinite(s), axis=0))
        level = np.where(valid, p, 0.5)
        if level.size and level.min() == level.max():  # most calls have one p
            z = np.full(p.shape, float(normal_quantile_many(level.reshape(-1)[:1])[0]))
        else:
            levels, which = np.unique(level, return_inverse=True)
            z = normal_quantile_many(levels)[which.reshape(p.shape)]
        mu = np.log(np.where(m > 0, m, 1.0)) - s * s / 2
        own = np.where(w > 0, mu + s * z, np.nan)  # each component's own quantile
        lo = np.where(valid, np.nanmin(np.where(valid, own, 0.0), axis=0), 0.0)
        hi = np.where(valid, np.nanmax(np.where(valid, own, 0.0), axis=0), 0.0)
        share = np.where(w > 0, w, 0.0) / np.where(total > 0, total, 1.0)
        smooth = s > 0
        scale = np.where(smooth, s, 1.0)
        # start at the quantile of one lognormal with the mixture's mean and variance, in the bracket
        mean = (share * m).sum(axis=0)
        spread = np.log(np.maximum((share * m * m * np.exp(s * s)).sum(axis=0) / np.where(mean > 0, mean * mean, 1.0), 1.0))
        x = np.clip(np.log(np.where(mean > 0, mean, 1.0)) - spread / 2 + np.sqrt(spread) * z, lo, hi)
        # with a cheap Φ to within about 10⁻⁷ of its root, all points together
        low, high = lo.copy(), hi.copy()
        for _ in range(MIXTURE_STEPS):
            x, moved, _, low, high = _mixture_step(x, p, low, high, share, mu, scale, smooth, exact=False)
            if not (moved[valid] > 1e-7 * np.maximum(1.0, np.abs(x[valid]))).any():
                break
        # then with the exact Φ from there: after a Newton step of δ the error is of order δ², so a
        # point is done after a Newton step under 10⁻⁵ (one step, mostly), or a bisection step under 10⁻¹³
        low, high = lo.copy(), hi.copy()
        active = np.nonzero(valid)[0]
        for _ in range(MIXTURE_STEPS):
            if not active.size:
                break
            xa, moved, newton, low[active], high[active] = _mixture_step(
                x[active], p[active], low[active], high[active], share[:, active], mu[:, active], scale[:, active],
                smooth[:, active], exact=True)
            x[active] = xa
            size = np.maximum(1.0, np.abs(xa))
            active = active[(moved > np.where(newton, 1e-5, 1e-13) * size)]
        return np.where(valid, np.exp(x), np.nan)


def _mixture_step(x: Any, p: Any, low: Any, high: Any, share: Any, mu: Any, scale: Any, smooth: Any,
                  exact: bool) -> tuple[Any, Any, Any, Any, Any]:
    """One bracketed Newton step on Σ w·Φ((x − μ)/σ) − p at each point (components along axis 0; a σ
    of 0 is a step): the bracket `low`, `high` shrinks to the side the sign gives, and a step that
    would leave it bisects it. Φ is math.erfc's when `exact`,
    else Abramowitz & Stegun 7.1.26 (|error| ≤ 1.5·10⁻⁷, all in numpy), which only brings the
    points near the root. Returns the new points, how far each moved, which moved by Newton, and
    the new bracket."""
    import numpy as np

    u = (x - mu) / scale
    if exact:
        phi = 0.5 * _erfc_many(-u / math.sqrt(2))
    else:
        a = np.abs(u) / math.sqrt(2)
        t = 1 / (1 + 0.3275911 * a)
        tail = 0.5 * t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))) * np.exp(-a * a)
        phi = np.where(u < 0, tail, 1 - tail)
    cdf = (share * np.where(smooth, phi, x >= mu)).sum(axis=0)
    pdf = (share * np.where(smooth, np.exp(-u * u / 2) / (scale * math.sqrt(2 * math.pi)), 0.0)).sum(axis=0)
    below = cdf < p
    low, high = np.where(below, x, low), np.where(below, high, x)
    step = x - (cdf - p) / np.where(pdf > 0, pdf, np.inf)
    newton = (pdf > 0) & (step >= low) & (step <= high)
    new = np.where(newton, step, (low + high) / 2)
    return new, np.abs(new - x), newton, low, high


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
    "poisson_tail": Function((2, 2), "plain", lambda a: poisson_tail_many(a[0], a[1]), "\\operatorname{PoissonTail}",
                             exact=poisson_tail),
    "lognormal_mixture_quantile": Function((4, 97), "plain", lognormal_mixture_quantile_many,
                                           "\\operatorname{LogNormMixQ}", exact=lognormal_mixture_quantile),
    "min": Function((2, 99), "same", lambda a: functools.reduce(_np().minimum, a), "\\min", sympy="Min"),
    "max": Function((2, 99), "same", lambda a: functools.reduce(_np().maximum, a), "\\max", sympy="Max"),
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
        nargs = FUNCTIONS[name].arity[0] if FUNCTIONS[name].arity[0] == FUNCTIONS[name].arity[1] else None

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
