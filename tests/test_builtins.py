"""Builtins with Python numerics, checked against published and closed-form values."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from planc.builtins import erlang_c, sympy_function


def erlang_c_factorial(c: int, a: float) -> float:
    """The textbook formula (docs/physics.md §7.6), fine for small c."""
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (sum(a**k / math.factorial(k) for k in range(c)) + top)


def test_published_value() -> None:
    # docs/physics.md §7.6: c = 4, μ = 1/s, λ = 3/s → C = 0.509
    assert erlang_c(4, 3) == pytest.approx(0.5094, abs=1e-4)


@given(st.integers(1, 60), st.floats(0.01, 0.99))
def test_matches_the_textbook_formula(c: int, rho: float) -> None:
    assert erlang_c(c, rho * c) == pytest.approx(erlang_c_factorial(c, rho * c), rel=1e-9)


def test_large_fleets_are_stable_and_monotone() -> None:
    values = [erlang_c(5000, rho * 5000) for rho in (0.5, 0.9, 0.99, 0.999)]
    assert all(0 <= v <= 1 for v in values)
    assert values == sorted(values)


def test_unstable_queue_always_waits_and_domain_errors() -> None:
    assert erlang_c(4, 4) == 1.0 and erlang_c(4, 0) == 0.0
    with pytest.raises(ValueError):
        erlang_c(0, 1)
    with pytest.raises(ValueError):
        erlang_c(4, -1)


def test_sympy_form_evaluates_numerically() -> None:
    f = sympy_function("erlang_c")
    assert float(f(4, 3)) == pytest.approx(erlang_c(4, 3))


def test_the_vectorised_form_agrees_with_the_scalar_one() -> None:
    import numpy as np
    from planc.builtins import erlang_c_many

    cases = [(4, 3), (1, 0.5), (60, 59.9), (5000, 4990), (5000, 2500), (5000, 4000), (100_000, 99_000),
             (2400, 2240), (10, 0), (7, 7), (7, 9), (3.7, 2)]
    servers, loads = np.array([c for c, _ in cases], dtype=float), np.array([a for _, a in cases])
    many = erlang_c_many(servers, loads)
    for (c, a), v in zip(cases, many):
        assert v == pytest.approx(erlang_c(c, a), rel=1e-9, abs=1e-300), (c, a)
    # outside the domain: NaN, where the scalar form raises
    assert np.isnan(erlang_c_many(np.array([0.0, 4.0]), np.array([1.0, -1.0]))).all()
    # one point given as scalars (a search evaluated at one configuration): the same value
    assert float(erlang_c_many(np.float64(60), np.float64(59.9))) == pytest.approx(erlang_c(60, 59.9), rel=1e-9)


@given(st.integers(1, 3000), st.floats(0.01, 1.2))
def test_vectorised_matches_scalar_everywhere(c: int, rho: float) -> None:
    import numpy as np
    from planc.builtins import erlang_c_many

    assert float(erlang_c_many(np.array([float(c)]), np.array([rho * c]))[0]) == pytest.approx(
        erlang_c(c, rho * c), rel=1e-9, abs=1e-300)


# ---- poisson_quantile ---------------------------------------------------------------------


def poisson_quantile_textbook(p: float, mean: float) -> int:
    """The definition, summed from zero with factorials (fine for a small mean)."""
    k, total = 0, 0.0
    while True:
        total += math.exp(-mean) * mean**k / math.factorial(k)
        if total >= p:
            return k
        k += 1


def test_poisson_quantile_check_values() -> None:
    from planc.builtins import poisson_quantile

    # P(N <= 5) = 0.99885 and P(N <= 6) = 0.99978 for N ~ Poisson(1.14): 6 covers 99.9 %
    assert poisson_quantile(0.999, 1.14) == 6
    assert poisson_quantile(0.5, 0) == 0
    assert poisson_quantile(0.5, 1) == 1  # P(N = 0) = 0.368 < 0.5 <= P(N <= 1) = 0.736
    assert poisson_quantile(0.3, 1) == 0
    # a large mean: within a few standard deviations of the normal approximation
    q = poisson_quantile(0.99, 1e6)
    assert abs(q - (1e6 + 2.3263 * 1000)) < 5


@given(st.floats(0.001, 0.9999), st.floats(0.0, 60.0))
def test_poisson_quantile_matches_the_definition(p: float, mean: float) -> None:
    from planc.builtins import poisson_quantile

    assert poisson_quantile(p, mean) == poisson_quantile_textbook(p, mean)


def test_poisson_quantile_vectorised_agrees_and_gives_nan_outside() -> None:
    import numpy as np
    from planc.builtins import poisson_quantile, poisson_quantile_many

    ps = np.array([0.5, 0.9, 0.99, 0.999, 0.999, 0.9999, 0.95, 0.5])
    means = np.array([0.0, 0.3, 1.14, 1.14, 37.5, 800.0, 250_000.0, 3.0])
    got = poisson_quantile_many(ps, means)
    assert list(got) == [poisson_quantile(float(p), float(m)) for p, m in zip(ps, means)]
    assert float(poisson_quantile_many(0.999, 1.14)) == 6  # a scalar in a vectorised evaluation
    bad = poisson_quantile_many(np.array([0.0, 1.0, 0.5, 0.5]), np.array([1.0, 1.0, -1.0, np.nan]))
    assert np.isnan(bad).all()


# ---- poisson_tail --------------------------------------------------------------------------


def poisson_tail_reference(k: int, mean: float) -> float:
    """P(N ≥ k) in 60-digit arithmetic, the series from whichever side is smaller."""
    import mpmath

    with mpmath.workdps(60):
        m = mpmath.mpf(mean)
        term = lambda j: mpmath.e ** (-m) * m ** j / mpmath.factorial(j)  # noqa: E731
        if k == 0:
            return 1.0
        if k > mean:
            return float(mpmath.nsum(term, [k, mpmath.inf]))
        return float(1 - mpmath.fsum(term(j) for j in range(k)))


def test_poisson_tail_check_values() -> None:
    from planc.builtins import poisson_tail

    assert poisson_tail(3, 0.46) == pytest.approx(1 - math.exp(-0.46) * (1 + 0.46 + 0.46**2 / 2), rel=1e-14)
    assert poisson_tail(1, 2.0) == pytest.approx(-math.expm1(-2.0), rel=1e-15)
    assert poisson_tail(0, 5.0) == 1.0
    assert poisson_tail(4, 0.0) == 0.0
    # a small mean: the closed form 1 − e⁻ᵐ(1 + m + m²/2) has no digit left; the sum has them all
    assert poisson_tail(3, 1e-4) == pytest.approx(1.6665416716665e-13, rel=1e-12)
    assert poisson_tail(3, 1e-30) == pytest.approx(1e-90 / 6, rel=1e-12)


@pytest.mark.parametrize(("k", "mean"), [(1, 1.0), (2, 0.5), (3, 0.02), (5, 5.0), (7, 2.5), (100, 90.0),
                                         (100, 110.0), (1000, 1000.0), (3, 40.0), (40, 3.0)])
def test_poisson_tail_matches_the_series(k: int, mean: float) -> None:
    from planc.builtins import poisson_tail

    assert poisson_tail(k, mean) == pytest.approx(poisson_tail_reference(k, mean), rel=1e-12)


def test_poisson_tail_gives_the_mean_count_of_the_tail() -> None:
    """E[N·1{N ≥ k}] = mean·P(N ≥ k − 1), the identity the ITL tail's count uses (docs/physics.md §7.7)."""
    from planc.builtins import poisson_tail

    mean, k = 0.8, 3
    direct = sum(j * math.exp(-mean) * mean**j / math.factorial(j) for j in range(k, 60))
    assert mean * poisson_tail(k - 1, mean) == pytest.approx(direct, rel=1e-13)


def test_poisson_tail_vectorised_agrees_and_gives_nan_outside() -> None:
    import numpy as np
    from planc.builtins import poisson_tail, poisson_tail_many

    ks = np.array([0.0, 1.0, 3.0, 3.0, 8.0, 50.0, 1e5, 2.0])
    means = np.array([2.0, 0.0, 0.46, 1e-6, 8.0, 30.0, 1e5 + 400, 900.0])
    got = poisson_tail_many(ks, means)
    assert list(got) == [poisson_tail(float(k), float(m)) for k, m in zip(ks, means)]
    assert float(poisson_tail_many(3.0, 0.46)) == poisson_tail(3, 0.46)  # a scalar in a vectorised evaluation
    bad = poisson_tail_many(np.array([1.5, -1.0, 2.0, 2.0, np.nan]), np.array([1.0, 1.0, -1.0, 1e8, 1.0]))
    assert np.isnan(bad).all()
    for k, mean in ((1.5, 1.0), (-1.0, 1.0), (2.0, -1.0), (2.0, math.inf), (2.0, 1e8)):
        with pytest.raises(ValueError):
            poisson_tail(k, mean)


def test_poisson_quantile_domain_errors() -> None:
    from planc.builtins import poisson_quantile

    for p, mean in ((0.0, 1.0), (1.0, 1.0), (0.5, -1.0), (0.5, math.inf), (0.5, 1e8)):
        with pytest.raises(ValueError):
            poisson_quantile(p, mean)


# ---- one table, every evaluator -----------------------------------------------------------


def test_every_function_is_in_every_evaluator_from_one_table() -> None:
    """The elaborator, the exact, vectorised and symbolic evaluators and the LaTeX printer take
    each function from `FUNCTIONS`: a plan calling any of them elaborates, evaluates exactly and
    vectorised to the same number, and prints."""
    import numpy as np
    import sympy as sp
    from planc.builtins import FUNCTIONS
    from planc.lower import sympy_op
    from planc.vector import _OPS

    args = {"erlang_c": (4.0, 3.0), "normal_cdf": (0.3,), "normal_quantile": (0.9,), "poisson_quantile": (0.99, 2.5),
            "poisson_tail": (3.0, 0.46),
            "lognormal_mixture_quantile": (0.9, 0.6, 0.03, 0.8, 0.4, 0.12, 1.0), "min": (2.0, 3.0), "max": (2.0, 3.0), "ceil": (2.5,), "floor": (2.5,), "sqrt": (2.25,), "log": (2.0,),
            "exp": (0.5,), "abs": (-2.0,)}
    assert set(args) == set(FUNCTIONS)
    for name, xs in args.items():
        vectorised = float(_OPS[name]([np.array([x]) for x in xs])[0])
        symbolic = float(sympy_op(name, [sp.Float(x) for x in xs]))
        assert vectorised == pytest.approx(symbolic, rel=1e-9), name
        exact = FUNCTIONS[name].exact
        if exact is not None:
            assert exact(*xs) == pytest.approx(vectorised, rel=1e-12), name


def test_poisson_quantile_in_a_plan(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from planc.pipeline import compile_plan

    plan = tmp_path / "spares.plan"
    plan.write_text('let down = 1.14\nlet spares = poisson_quantile(0.999, down)\ncheck spares == 6 "covers 99.9 %"\n'
                    'let bad = poisson_quantile(0.999, 3 GB)\n', encoding="utf-8")
    result = compile_plan(plan)
    codes = [d.code for d in result.diagnostics]
    assert codes == ["E0302"], codes  # `poisson_quantile` needs plain numbers, at `3 GB`
    plan.write_text('let down = 1.14\nlet spares = poisson_quantile(0.999, down)\ncheck spares == 6 "covers 99.9 %"\n',
                    encoding="utf-8")
    result = compile_plan(plan)
    assert result.ok and result.failed_checks == 0
    from fractions import Fraction

    spares = result.lowered.values["spares"]  # type: ignore[union-attr]
    assert isinstance(spares, Fraction) and spares == 6  # a count stays exact, as `ceil` keeps one


def test_poisson_quantile_outside_its_domain_is_a_diagnostic_at_the_call(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from planc.pipeline import compile_plan

    plan = tmp_path / "bad.plan"
    plan.write_text("let q = poisson_quantile(1.5, 1)\nsummary q\n", encoding="utf-8")
    result = compile_plan(plan)
    assert not result.ok and [d.code for d in result.diagnostics] == ["E0405"]
    assert "strictly between 0 and 1" in result.diagnostics[0].message
    assert result.diagnostics[0].primary is not None and result.diagnostics[0].primary.span.text == "poisson_quantile(1.5, 1)"


# ---- lognormal_mixture_quantile ----------------------------------------------------------------


def mixture_cdf(t: float, parts: list[tuple[float, float, float]]) -> float:
    """Σ w·P(X ≤ t) / Σ w for lognormals of mean m and log-spread σ, from the definition."""
    from statistics import NormalDist

    total = sum(w for w, _, _ in parts)
    return sum(w * NormalDist(math.log(m) - s * s / 2, s).cdf(math.log(t)) for w, m, s in parts) / total


def test_lognormal_mixture_quantile_check_values() -> None:
    from planc.builtins import lognormal_mixture_quantile

    # one component: the lognormal's own quantile, m·exp(σ·z − σ²/2)
    assert lognormal_mixture_quantile(0.99, 1, 2.0, 0.5) == pytest.approx(2 * math.exp(0.5 * 2.3263478740408408 - 0.125), rel=1e-12)
    # two equal components are that component; the weights are normalised
    assert lognormal_mixture_quantile(0.7, 3, 5.0, 0.4, 1, 5.0, 0.4) == pytest.approx(lognormal_mixture_quantile(0.7, 1, 5.0, 0.4), rel=1e-12)
    # a zero-weight component does not count; a zero spread is a point
    assert lognormal_mixture_quantile(0.5, 1, 0.03, 0.8, 0, 100.0, 1.0) == pytest.approx(0.03 * math.exp(-0.32), rel=1e-12)
    assert lognormal_mixture_quantile(0.5, 1, 0.03, 0) == pytest.approx(0.03, rel=1e-12)
    # a half-half mixture of two far-apart points: the median is the lower one, the 0.51 quantile the upper
    assert lognormal_mixture_quantile(0.49, 1, 1.0, 0, 1, 100.0, 0) == pytest.approx(1.0, rel=1e-12)
    assert lognormal_mixture_quantile(0.51, 1, 1.0, 0, 1, 100.0, 0) == pytest.approx(100.0, rel=1e-12)


@given(st.floats(0.01, 0.999), st.lists(st.tuples(st.floats(0.01, 10), st.floats(1e-3, 1e3), st.floats(0.01, 2.5)),
                                         min_size=1, max_size=5))
def test_lognormal_mixture_quantile_inverts_the_mixtures_distribution(p: float, parts: list[tuple[float, float, float]]) -> None:
    import numpy as np
    from planc.builtins import lognormal_mixture_quantile, lognormal_mixture_quantile_many

    flat = [x for part in parts for x in part]
    q = lognormal_mixture_quantile(p, *flat)
    assert mixture_cdf(q, parts) == pytest.approx(p, abs=1e-9)
    # between the least and the greatest component quantile
    own = [lognormal_mixture_quantile(p, 1, m, s) for _, m, s in parts]
    assert min(own) * (1 - 1e-12) <= q <= max(own) * (1 + 1e-12)
    # the vectorised form runs the same steps
    many = lognormal_mixture_quantile_many([np.array([p, p])] + [np.array([x, x]) for x in flat])
    assert list(many) == pytest.approx([q, q], rel=1e-12)


def test_lognormal_mixture_quantile_domain() -> None:
    import numpy as np
    from planc.builtins import lognormal_mixture_quantile, lognormal_mixture_quantile_many

    for args in ((1.0, 1, 1.0, 0.5), (0.5, 1, 0.0, 0.5), (0.5, 1, 1.0, -0.1), (0.5, 0, 1.0, 0.5), (0.5, -1, 1.0, 0.5),
                 (0.5, 1, 1.0), (0.5, 1, math.inf, 0.5)):
        with pytest.raises(ValueError):
            lognormal_mixture_quantile(*args)
    bad = lognormal_mixture_quantile_many([np.array([1.0, 0.5, 0.5, 0.5]), np.array([1.0, 1.0, 0.0, 1.0]),
                                           np.array([1.0, 0.0, 1.0, 1.0]), np.array([0.5, 0.5, 0.5, -1.0])])
    assert np.isnan(bad).all()
