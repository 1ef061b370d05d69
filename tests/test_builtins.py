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
