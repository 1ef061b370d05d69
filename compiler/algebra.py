"""Closed forms for one unknown, with the algebra shown.

Contract: `isolate(lowered, constraint, unknown, value)` returns `(steps, closed_form, closed_value)`
or None when no closed form exists on the active piece.
- The constraint's two sides are expanded down the node graph until they depend on the unknown
  only: every subtree that does not involve it becomes its exact value, so the expression stays
  small. The unknown appears as a sympy symbol named after the field (`\\mathrm{context}`).
- The active piece at the numeric answer `value`: `ceil`/`floor` are relaxed to their argument
  (the numeric answer already respects them), and each `max`, `min` and `if` is replaced by the
  branch that is active at `value`. If what remains is a rational function of the unknown with a
  numerator of degree ≤ 4, sympy solves `left = right` and the positive real root nearest the
  numeric answer is the closed form.
- `steps` are (words, LaTeX) pairs: the constraint on the active piece with the plan's values, the
  rearranged equation, the isolated unknown. Numbers print with 6 significant digits.
"""

from __future__ import annotations

from typing import Any

from .lower import Lowered, to_sympy
from .semantics import ir

_RELATIONS = {"<": "<", "<=": "\\le", ">": ">", ">=": "\\ge", "==": "="}


def isolate(lowered: Lowered, constraint: ir.Expr, unknown: str, value: Any) -> tuple[list[tuple[str, str]], str, float] | None:
    import sympy as sp

    if not (isinstance(constraint, ir.Op) and constraint.op in _RELATIONS) or value is None:
        return None
    name = unknown.rsplit(".", 1)[-1]
    x = sp.Symbol(f"x_{abs(hash(name)) % 10**6}", positive=True)
    expand = _Expander(lowered, unknown, x)
    try:
        left, right = (expand.expr(a) for a in constraint.args)
        at = {x: sp.Rational(str(value)) if not isinstance(value, float) else sp.Float(value)}
        left, right = (_active_piece(side, at) for side in (left, right))
        g = sp.together(left - right)
        if not g.has(x) or not g.is_rational_function(x):
            return None
        numerator = sp.numer(g)
        if sp.degree(numerator, x) > 4:
            return None
        roots = [r for r in sp.solve(sp.Eq(numerator, 0), x) if r.is_real and r.is_positive]
    except (ValueError, TypeError, NotImplementedError, ZeroDivisionError, RecursionError, sp.PolynomialError):
        return None
    if not roots:
        return None
    root = min(roots, key=lambda r: abs(float(r) - float(value)))
    names = {x: "\\mathrm{" + name.replace("_", "\\_") + "}"}
    relation = _RELATIONS[constraint.op]
    shown = lambda e: sp.latex(sp.N(e, 6), symbol_names=names)  # noqa: E731
    steps = [
        ("on the active piece, with the plan's values", f"{shown(left)} {relation} {shown(right)}"),
        ("rearranged", f"{shown(numerator)} = 0" if numerator != g else f"{shown(g)} = 0"),
        ("isolated", f"{names[x]} = {shown(root)}"),
    ]
    return steps, f"{names[x]} = {shown(root)}", float(root)


class _Expander:
    """Sympy form of an IR expression in terms of the unknown only."""

    def __init__(self, lowered: Lowered, unknown: str, x: Any) -> None:
        import sympy as sp

        self.sp = sp
        self.lowered = lowered
        self.unknown = unknown
        self.x = x
        self.cache: dict[str, Any] = {}
        self.depends = ir.downstream(lowered.elaborated, unknown)

    def node(self, node_id: str) -> Any:
        if node_id == self.unknown:
            return self.x
        if node_id not in self.depends:
            v = self.lowered.values[node_id]
            return self.sp.Rational(str(v)) if not isinstance(v, (float, bool)) else (
                self.sp.true if v is True else self.sp.false if v is False else self.sp.Float(v))
        if node_id not in self.cache:
            self.cache[node_id] = self.expr(self.lowered.elaborated.nodes[node_id].expr)
        return self.cache[node_id]

    def expr(self, e: ir.Expr) -> Any:
        refs = ir.refs(e)
        symbols = {r: self.sp.Symbol(f"r{i}") for i, r in enumerate(refs)}
        form = to_sympy(e, symbols)
        return form.xreplace({symbols[r]: self.node(r) for r in refs})


def _active_piece(e: Any, at: dict[Any, Any]) -> Any:
    import sympy as sp

    def pick(expr: Any) -> Any:
        if isinstance(expr, (sp.ceiling, sp.floor)):
            return expr.args[0]
        if isinstance(expr, (sp.Max, sp.Min)):
            values = [float(a.xreplace(at)) for a in expr.args]
            best = max(values) if isinstance(expr, sp.Max) else min(values)
            return expr.args[values.index(best)]
        if isinstance(expr, sp.Piecewise):
            for branch, cond in expr.args:
                if bool(cond.xreplace(at)):
                    return branch
        return expr

    for _ in range(8):  # nested pieces: repeat until nothing is left to choose
        new = e.replace(lambda n: isinstance(n, (sp.ceiling, sp.floor, sp.Max, sp.Min, sp.Piecewise)), pick)
        if new == e:
            break
        e = new
    return e



