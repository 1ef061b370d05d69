"""Lower: typed nodes → sympy expressions → exact values, with one derivation record per node.

Contract
- `lower(elaborated, sink) -> Lowered`. Every node gets a sympy `Symbol` with a generated safe
  name (`q0`, `q1`, ...; never user text) and a *local* expression over the symbols of the nodes
  it references. Inputs are their own symbols. Nothing here calls `sympify`, `parse_expr` or
  `eval`: expressions are built from the IR with sympy constructors.
- Values are computed in topological order by substituting exact values into local expressions
  (rationals stay exact; `sqrt`/`log` give exact irrationals). A division by zero, an undefined
  result or a value beyond float range is a diagnostic on the node, not an exception.
- `full(node)` gives the expression over input symbols only (the whole chain substituted), which
  the solver and tests use; it is computed on demand and memoised.
- Requirements (`require` in kinds) and checks are evaluated here: a failed requirement is a
  diagnostic (the plan is physically impossible); a failed check is a result, not an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import sympy as sp

from . import diagnostics as dx
from .semantics import ir
from .semantics.units import Dim, format_quantity

_FLOAT_MAX = sp.Float(1.7976931348623157e308)
_SYMPY_ERRORS = (ValueError, TypeError, ZeroDivisionError, OverflowError, RecursionError)
_CMP = {"<": sp.StrictLessThan, "<=": sp.LessThan, ">": sp.StrictGreaterThan,
        ">=": sp.GreaterThan, "==": sp.Eq, "!=": sp.Ne}
_FUNCS = {"min": sp.Min, "max": sp.Max, "ceil": sp.ceiling, "floor": sp.floor,
          "sqrt": sp.sqrt, "log": sp.log, "exp": sp.exp, "abs": sp.Abs}


@dataclass(frozen=True)
class Outcome:
    """A check or requirement: the comparison, both sides' values, and whether it holds."""

    expr: ir.Expr
    holds: bool
    left: sp.Expr | None
    right: sp.Expr | None
    label: str | None


@dataclass
class Lowered:
    elaborated: ir.Elaborated
    symbols: dict[str, sp.Symbol] = field(default_factory=dict)
    local: dict[str, sp.Expr] = field(default_factory=dict)
    values: dict[str, sp.Expr] = field(default_factory=dict)
    checks: list[Outcome] = field(default_factory=list)
    summary: list[sp.Expr] = field(default_factory=list)
    _full: dict[str, sp.Expr] = field(default_factory=dict)

    def node_of(self) -> dict[sp.Symbol, str]:
        return {s: n for n, s in self.symbols.items()}

    def full(self, node_id: str) -> sp.Expr:
        """The node's expression over input symbols only."""
        if node_id not in self._full:
            node = self.elaborated.nodes[node_id]
            if node.is_input:
                self._full[node_id] = self.symbols[node_id]
            else:
                subs = {self.symbols[d]: self.full(d) for d in node.deps}
                self._full[node_id] = self.local[node_id].xreplace(subs)
        return self._full[node_id]

    def value(self, node_id: str) -> sp.Expr:
        return self.values[node_id]


def to_sympy(expr: ir.Expr, symbols: dict[str, sp.Symbol]) -> sp.Basic:
    """Build the sympy form of an IR expression (references become their nodes' symbols)."""
    if isinstance(expr, ir.Lit):
        if expr.dim == ir.BOOL:
            return sp.true if expr.value else sp.false
        return sp.Rational(expr.value.numerator, expr.value.denominator)
    if isinstance(expr, ir.Ref):
        return symbols[expr.node]
    args = [to_sympy(a, symbols) for a in expr.args]
    op = expr.op
    if op in _CMP:
        return _CMP[op](args[0], args[1])
    if op in _FUNCS:
        return _FUNCS[op](*args)
    return _OPS[op](args)


_OPS = {
    "+": lambda a: sp.Add(a[0], a[1]),
    "-": lambda a: sp.Add(a[0], sp.Mul(-1, a[1])),
    "*": lambda a: sp.Mul(a[0], a[1]),
    "/": lambda a: sp.Mul(a[0], sp.Pow(a[1], -1)),
    "^": lambda a: sp.Pow(a[0], a[1]),
    "neg": lambda a: sp.Mul(-1, a[0]),
    "and": lambda a: sp.And(a[0], a[1]),
    "or": lambda a: sp.Or(a[0], a[1]),
    "not": lambda a: sp.Not(a[0]),
    "if": lambda a: sp.Piecewise((a[1], a[0]), (a[2], True)),
}


def lower(elaborated: ir.Elaborated, sink: dx.Sink) -> Lowered:
    out = Lowered(elaborated)
    for i, node_id in enumerate(elaborated.order):
        node = elaborated.nodes[node_id]
        out.symbols[node_id] = sp.Symbol(f"q{i}", real=True)
    failed: set[str] = set()
    problems: list[tuple[ir.Node, str]] = []
    for node_id in elaborated.order:
        node = elaborated.nodes[node_id]
        if any(d in failed for d in node.deps):
            failed.add(node_id)
            continue
        try:
            local = to_sympy(node.expr, out.symbols)
            out.local[node_id] = local  # type: ignore[assignment]
            value = local.xreplace({out.symbols[d]: out.values[d] for d in node.deps})
            problem = _problem(value)
        except _SYMPY_ERRORS:  # e.g. min(x, y) with an infinite argument: sympy cannot order it
            value, problem = sp.nan, "undefined"
        if problem is not None:
            failed.add(node_id)
            problems.append((node, problem))
            continue
        out.values[node_id] = value  # type: ignore[assignment]
    # An impossible input (zero users) explains the divisions by zero downstream: report the
    # requirement, and the evaluation problems only when no requirement failed.
    if _requirements(out, failed, sink):
        return out
    for node, problem in problems:
        _report(node, problem, out, sink)
    if failed:
        return out
    for check in elaborated.checks:
        outcome = _outcome(check.expr, out, check.label)
        sides = [v for v in (outcome.left, outcome.right) if v is not None]
        bad = next((p for p in map(_problem, sides) if p is not None), None)
        if bad is None and not all(v.is_extended_real for v in sides):
            bad = "not a real number"
        if bad is not None:
            sink.add(dx.NOT_A_NUMBER.at(check.expr.span, "cannot be evaluated", name=check.expr.span.text,
                                        detail=bad, help="check the divisors and arguments in this comparison"))
        out.checks.append(outcome)
    out.summary = [_eval(e, out) for e in elaborated.summary]  # type: ignore[misc]
    return out


def _problem(value: sp.Basic) -> str | None:
    if value.has(sp.zoo, sp.oo, -sp.oo):
        return "division by zero"
    if value.has(sp.nan):
        return "undefined"
    if isinstance(value, sp.Expr) and value.is_number:
        try:
            if abs(value) > _FLOAT_MAX:
                return "overflow"
        except TypeError:
            return "undefined"
    return None


def _report(node: ir.Node, problem: str, out: Lowered, sink: dx.Sink) -> None:
    culprit = _zero_divisor(node.expr, out) if problem != "overflow" else None
    if problem == "division by zero" or culprit is not None:
        sink.add(dx.DIVISION_BY_ZERO.at(
            culprit.span if culprit is not None else node.span, "this is zero", name=node.id,
            secondary=[dx.Label(node.decl_span, "declared here")],
            help="check the inputs this divisor is computed from; none may be zero",
        ))
    elif problem == "overflow":
        sink.add(dx.OVERFLOW.at(node.span, "too large", name=node.id, detail="beyond ±1.8e308",
                                help="check the magnitudes and units of its inputs"))
    else:
        sink.add(dx.NOT_A_NUMBER.at(node.span, "undefined", name=node.id, detail=problem,
                                    help="check for 0/0, a negative square root or the log of zero"))


def _zero_divisor(expr: ir.Expr, out: Lowered) -> ir.Expr | None:
    """The innermost division (or negative power) whose divisor evaluates to zero."""
    if not isinstance(expr, ir.Op):
        return None
    for arg in expr.args:
        found = _zero_divisor(arg, out)
        if found is not None:
            return found
    if expr.op == "/" and _eval(expr.args[1], out).is_zero:
        return expr.args[1]
    return None


def _eval(expr: ir.Expr, out: Lowered) -> sp.Basic:
    try:
        local = to_sympy(expr, out.symbols)
        return local.xreplace({s: out.values[n] for n, s in out.symbols.items() if n in out.values})
    except _SYMPY_ERRORS:
        return sp.nan


def _outcome(expr: ir.Expr, out: Lowered, label: str | None) -> Outcome:
    value = _eval(expr, out)
    holds = bool(value == sp.true)
    left = right = None
    if isinstance(expr, ir.Op) and expr.op in _CMP:
        left, right = (_eval(a, out) for a in expr.args)
    return Outcome(expr, holds, left, right, label)  # type: ignore[arg-type]


def _requirements(out: Lowered, failed: set[str], sink: dx.Sink) -> bool:
    """Report every failed requirement whose inputs evaluated; True if any failed."""
    any_failed = False
    for req in out.elaborated.requirements:
        if any(ref in failed or ref not in out.values for ref in _ir_refs(req.expr)):
            continue
        outcome = _outcome(req.expr, out, req.message)
        if outcome.holds:
            continue
        any_failed = True
        detail = f"`{' '.join(req.expr.span.text.split())}` does not hold"
        if outcome.left is not None and outcome.right is not None and isinstance(req.expr, ir.Op):
            dim = req.expr.args[0].dim
            detail += f": {_show(outcome.left, dim)} vs {_show(outcome.right, dim)}"
        sink.add(dx.IMPOSSIBLE_VALUE.at(
            req.blame, "this value", message=f"{req.message or 'requirement failed'} in `{req.instance}`",
            secondary=[dx.Label(req.span, "required here")], notes=[detail],
            help="change the value so that the requirement holds",
        ))
    return any_failed


def _ir_refs(expr: ir.Expr) -> list[str]:
    if isinstance(expr, ir.Ref):
        return [expr.node]
    if isinstance(expr, ir.Op):
        return [r for a in expr.args for r in _ir_refs(a)]
    return []


def _show(value: sp.Basic, dim: ir.Type) -> str:
    try:
        number = float(value)  # type: ignore[arg-type]
    except TypeError:
        return str(value)
    return format_quantity(number, dim) if isinstance(dim, Dim) else str(value)


def as_fraction(value: sp.Basic) -> Fraction | None:
    if isinstance(value, sp.Rational):
        return Fraction(int(value.p), int(value.q))
    return None
