"""Closed forms for one unknown, with the algebra shown.

Contract: `isolate(lowered, constraint, unknown, value, values)` returns
`(steps, closed_form, closed_value)` or None when no closed form exists on the active piece.
- `values` are the plan's exact node values with the unknown at the numeric answer `value`
  (at least every node the constraint reads).
- The constraint's two sides are expanded down the node graph into sympy, in terms of the
  unknown only: every subtree that does not involve it becomes its exact value, so the
  expression stays small. The unknown is a sympy symbol named after the field (`\\mathrm{context}`).
- The active piece is chosen on the IR while expanding, from the exact values at the answer:
  `ceil`/`floor` are relaxed to their argument (the numeric answer already respects them), and
  each `max`, `min` and `if` is replaced by the branch active at the answer; no piecewise form
  ever reaches sympy. If what remains is a rational function of the unknown with a numerator of
  degree ≤ 4, the numerator's roots (sympy's polynomial root finder) give the closed form: the
  positive real root nearest the numeric answer. A piece that applies `exp`, `log` or a named
  builtin (a Poisson tail, Erlang C) to the unknown, or raises something to a power that
  depends on it, is not rational in it: that is read off the IR on the same walk, and no sympy
  is built for it (the flagship's worst TPOT, whose prompts arriving per iteration are Poisson
  counts, `exp(-n)`: 0.26 s of sympy saved).
- `steps` are (words, LaTeX) pairs: the constraint on the active piece with the plan's values, the
  rearranged equation, the isolated unknown. Numbers print with 6 significant digits.
"""

from __future__ import annotations

from typing import Any

from .builtins import FUNCTIONS
from .exact import EvalError, evaluate, live_refs
from .lower import Lowered, sympy_literal, sympy_op
from .semantics import ir

_RELATIONS = {"<": "<", "<=": "\\le", ">": ">", ">=": "\\ge", "==": "="}


def isolate(lowered: Lowered, constraint: ir.Expr, unknown: str, value: Any,
            values: dict[str, Any] | None) -> tuple[list[tuple[str, str]], str, float] | None:
    import sympy as sp
    from mpmath.libmp.libhyper import NoConvergence

    if not (isinstance(constraint, ir.Op) and constraint.op in _RELATIONS) or value is None or values is None:
        return None
    name = unknown.rsplit(".", 1)[-1]
    x = sp.Symbol(f"x_{abs(hash(name)) % 10**6}", positive=True)
    expand = _Expander(lowered, unknown, x, values)
    try:
        if not all(expand.maybe_rational(a) for a in constraint.args):
            return None
        left, right = (expand.expr(a) for a in constraint.args)
        g = sp.together(left - right)
        if not g.has(x) or not g.is_rational_function(x):
            return None
        numerator = sp.numer(g)
        poly = sp.Poly(numerator, x)
        if poly.degree() > 4:
            return None
        roots = [r for r in sp.roots(poly) if r.is_real and r.is_positive]
    except (ValueError, TypeError, NotImplementedError, ZeroDivisionError, RecursionError, EvalError,
            sp.PolynomialError, NoConvergence):  # no closed form to show: the numeric answer stands
        return None
    if not roots:
        return None
    root = min(roots, key=lambda r: abs(float(r) - float(value)))
    names = {x: "\\mathrm{" + name.replace("_", "\\_") + "}"}
    relation = _RELATIONS[constraint.op]

    def shown(e: Any) -> str:
        return str(sp.latex(_whole(sp.N(e, 6)), symbol_names=names))

    steps = [
        ("on the active piece, with the plan's values", f"{shown(left)} {relation} {shown(right)}"),
        ("rearranged", f"{shown(numerator)} = 0" if numerator != g else f"{shown(g)} = 0"),
        ("isolated", f"{names[x]} = {shown(root)}"),
    ]
    return steps, f"{names[x]} = {shown(root)}", float(root)


def _whole(e: Any) -> Any:
    """The expression with its whole-number floats of at most six digits as integers: `131072`,
    not `131072.0` (larger ones keep sympy's `6.71089 \\cdot 10^{8}`: six significant digits)."""
    import sympy as sp

    return e.xreplace({f: sp.Integer(int(f)) for f in e.atoms(sp.Float)
                       if float(f).is_integer() and abs(float(f)) < 10**6})


class _Expander:
    """Sympy form of an IR expression in terms of the unknown only, on the active piece."""

    def __init__(self, lowered: Lowered, unknown: str, x: Any, values: dict[str, Any]) -> None:
        self.lowered = lowered
        self.unknown = unknown
        self.x = x
        self.values = values
        self.cache: dict[str, Any] = {}
        self.rational: dict[str, bool] = {}  # `maybe_rational` of each node met
        self.moving: dict[str, bool] = {}  # `moves` of each node met
        self.applying: dict[tuple[str, str], bool] = {}  # `_applies` of each node and operation met
        self.depends = ir.downstream(lowered.elaborated, unknown)

    def node(self, node_id: str) -> Any:
        if node_id == self.unknown:
            return self.x
        if node_id not in self.cache:
            self.cache[node_id] = self.expr(self.lowered.elaborated.nodes[node_id].expr)
        return self.cache[node_id]

    _TRANSCENDENTAL = frozenset({"exp", "log"})

    def maybe_rational(self, e: ir.Expr) -> bool:
        """False where the active piece of `e` certainly is not a rational function of the
        unknown: it applies `exp`, `log` or a named builtin to something whose value moves with
        the unknown, or raises a base other than 0 and 1 to such an exponent. The walk `expr`
        takes (the same branches, ceilings relaxed), without sympy; what moves with the unknown
        is read as `exact.live_refs` reads it (not through a factor that is exactly zero here), as
        sympy cancels `0 · x` before it could see a transcendental of it."""
        if not self.moves(e):
            return True
        if isinstance(e, ir.Ref):
            if e.node == self.unknown:
                return True
            seen = self.rational.get(e.node)
            if seen is None:
                seen = self.rational[e.node] = self.maybe_rational(self.lowered.elaborated.nodes[e.node].expr)
            return seen
        assert isinstance(e, ir.Op)
        active = self.active(e)
        if active is not None:
            return self.maybe_rational(active)
        if e.op in FUNCTIONS and FUNCTIONS[e.op].exact is not None:  # a Poisson tail, Erlang C: numbers only
            return False
        if e.op in self._TRANSCENDENTAL:
            # sympy's own exp(log u) = u and log(exp u) = u can make one rational again: left to it
            return self._applies(e.args[0], "log" if e.op == "exp" else "exp")
        if e.op == "^" and self.moves(e.args[1]):
            # b^f(x) is rational only for a constant base of 0 or 1 (a dense model's (1 − k/E)^T)
            return not self.moves(e.args[0]) and evaluate(e.args[0], self.values) in (0, 1)
        return all(self.maybe_rational(a) for a in e.args)

    def _applies(self, e: ir.Expr, op: str) -> bool:
        """Whether the active piece of `e` applies `op` to something that moves with the unknown."""
        if not self.moves(e):
            return False
        if isinstance(e, ir.Ref):
            if e.node == self.unknown:
                return False
            key = (e.node, op)
            if key not in self.applying:
                self.applying[key] = self._applies(self.lowered.elaborated.nodes[e.node].expr, op)
            return self.applying[key]
        assert isinstance(e, ir.Op)
        return e.op == op or any(self._applies(a, op) for a in e.args)

    def moves(self, e: ir.Expr) -> bool:
        """Whether the value of `e` moves with the unknown here: it reads the unknown through
        references that are live at this point (`exact.live_refs`)."""
        return any(self._moves(r) for r in live_refs(e, self.values))

    def _moves(self, node_id: str) -> bool:
        if node_id == self.unknown:
            return True
        if node_id not in self.depends:
            return False
        seen = self.moving.get(node_id)
        if seen is None:
            self.moving[node_id] = False  # the graph is acyclic; this only guards the recursion
            seen = self.moving[node_id] = self.moves(self.lowered.elaborated.nodes[node_id].expr)
        return seen

    def expr(self, e: ir.Expr) -> Any:
        if not any(r in self.depends for r in ir.refs(e)):
            return sympy_literal(evaluate(e, self.values), e.dim == ir.BOOL)
        if isinstance(e, ir.Ref):
            return self.node(e.node)
        assert isinstance(e, ir.Op)
        active = self.active(e)
        if active is not None:
            return self.expr(active)
        return sympy_op(e.op, [self.expr(a) for a in e.args])

    def active(self, e: ir.Op) -> ir.Expr | None:
        """The one argument the active piece goes on with: the branch of a `max`, `min` or `if`
        in effect at the answer, or the argument of a ceiling or floor (relaxed); None for any
        other operation."""
        if e.op in ("max", "min"):
            at = [evaluate(a, self.values) for a in e.args]
            return e.args[at.index(max(at) if e.op == "max" else min(at))]
        if e.op == "if":
            return e.args[1] if evaluate(e.args[0], self.values) else e.args[2]
        if e.op in ("ceil", "floor"):
            return e.args[0]
        return None
