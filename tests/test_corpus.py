"""Every example and every stdlib file compiles without errors, and their checks pass."""

from __future__ import annotations

from pathlib import Path

import pytest
from planc.diagnostics import Severity
from planc.pipeline import compile_plan
from planc.semantics import ir

from .conftest import REPO

PLANS = sorted((REPO / "examples").glob("*.plan")) + sorted((REPO / "stdlib").rglob("*.plan"))


@pytest.mark.parametrize("path", PLANS, ids=lambda p: str(p.relative_to(REPO)))
def test_compiles_cleanly(path: Path) -> None:
    result = compile_plan(path)
    errors = [d for d in result.diagnostics if d.severity is Severity.ERROR]
    assert not errors, [d.message for d in errors]
    assert result.ok
    assert result.exit_code == 0, "a check failed"
    if path.is_relative_to(REPO / "stdlib"):
        assert not result.diagnostics, [d.message for d in result.diagnostics]


@pytest.mark.parametrize("path", PLANS, ids=lambda p: str(p.relative_to(REPO)))
def test_sympy_form_agrees_with_exact_evaluation(path: Path) -> None:
    """The symbolic form (used by the solver) and the exact evaluator say the same, node by node."""
    import sympy as sp

    result = compile_plan(path)
    lowered = result.lowered
    assert lowered is not None
    as_sympy = {n: sp.Rational(str(v)) if not isinstance(v, (bool, float)) else sp.sympify(v)
                for n, v in lowered.values.items()}
    free = ir.free_variables(lowered.elaborated)
    for node_id, node in lowered.elaborated.nodes.items():
        if node_id in free:  # a search's trial value: left at the search's answer, not at its formula (the low end)
            assert lowered.values[node_id] == next(lowered.values[n.id] for n in lowered.elaborated.nodes.values()
                                                   if ir.is_search(n.expr) and n.expr.args[0].node == node_id)
            continue
        if ir.is_search(node.expr):  # `largest(...)`: a bisection, with no closed form by design
            assert "largest" in str(lowered.local(node_id))
            continue
        subs = {lowered.symbols[d]: as_sympy[d] for d in node.deps}
        symbolic = lowered.local(node_id).xreplace(subs)
        exact = lowered.values[node_id]
        if isinstance(exact, bool):
            assert bool(symbolic) is exact, node_id
        else:
            assert float(symbolic) == pytest.approx(float(exact), rel=1e-12), node_id
