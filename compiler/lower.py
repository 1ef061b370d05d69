"""Lower: typed nodes → exact values, and → sympy expressions for the questions that need algebra.

Contract
- `lower(elaborated, sink) -> Lowered` evaluates every node in topological order with exact
  arithmetic on the IR: rationals (`Fraction`) stay exact through `+ - * /`, integer powers,
  `min`/`max`/`ceil`/`floor`; `sqrt`, `log`, `exp` and fractional powers give floats (except
  where the answer is exact: a perfect square's root, log 1 = 0, exp 0 = 1). A division
  by zero, the log of a non-positive number, the square root of a negative, a value beyond float
  range, a power closer to zero than 1e-400 (`1e-400 ^ 2`: exact values stay exact below
  the smallest float, but not at any size), a float divided by a rational
  too small for a float (`sqrt(2) / 1e-400`) — each is a diagnostic on the operation that caused
  it, never an exception.
- The symbolic form is sympy: every node has a `Symbol` with a generated safe name (`q0`, `q1`,
  ...; never user text) and `local(node)`, its expression over the symbols of the nodes it
  references, built from the IR with sympy constructors (no `sympify`, `parse_expr` or `eval`).
  `full(node)` substitutes the chain down to input symbols. They are built on first use (sympy
  costs more to import than the rest of a compile), by the solver and the tests; a test checks
  for every node of every example that the sympy form evaluates to the exact value.
- Requirements (`require` in kinds) are evaluated after the nodes: a failed one is a diagnostic
  (the plan is physically impossible) and explains the evaluation errors downstream of it, which
  are then not reported. Checks are results (pass/fail with both sides), not errors.
"""

from __future__ import annotations

import contextlib
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from . import diagnostics as dx
from .builtins import FUNCTIONS, sympy_function
from .semantics import ir
from .semantics.units import DIMENSIONLESS, Dim, UnitError, format_number, format_quantity, unit_scale
from .source import Span

if TYPE_CHECKING:
    import sympy as sp

Number = Fraction | float
Value = Fraction | float | bool
FLOAT_MAX = 1.7976931348623157e308
_FLOAT_MAX_FRACTION = Fraction(FLOAT_MAX)
_FLOAT_MIN_FRACTION = Fraction(2.2250738585072014e-308)  # the smallest normal float
_MAX_POWER_DIGITS = 400  # exact powers beyond 10^400 are overflows anyway
_MAX_EXACT_DIGITS = 1000  # an exact power with more digits than this is taken in floating point


class EvalError(Exception):
    """An operation that has no real value; carries the span of the operation."""

    def __init__(self, span: Span, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.span, self.kind, self.detail = span, kind, detail


@dataclass(frozen=True)
class Outcome:
    """A check or requirement: the comparison, both sides' values, and whether it holds."""

    expr: ir.Expr
    holds: bool
    left: Number | None
    right: Number | None
    label: str | None


@dataclass(frozen=True)
class Stated:
    """A finding whose condition holds, with the value of each hole (parallel to its holes)."""

    finding: ir.Finding
    values: tuple[Value, ...]


@dataclass(frozen=True)
class Offered:
    """A lever that applies to the plan, with the values of the holes of what it takes and of its gate."""

    lever: ir.Lever
    takes: tuple[Value, ...]
    gate: tuple[Value, ...]


@dataclass
class Lowered:
    elaborated: ir.Elaborated
    values: dict[str, Value] = field(default_factory=dict)
    checks: list[Outcome] = field(default_factory=list)
    summary: list[Value] = field(default_factory=list)
    findings: list[Stated] = field(default_factory=list)  # the findings that hold, with their holes' values
    levers: list[Offered] = field(default_factory=list)  # the levers that apply to this plan
    _symbols: dict[str, Any] = field(default_factory=dict)
    _local: dict[str, Any] = field(default_factory=dict)
    _full: dict[str, Any] = field(default_factory=dict)

    @property
    def symbols(self) -> dict[str, sp.Symbol]:
        """One sympy symbol per node, named `q<index>` in topological order."""
        if not self._symbols:
            import sympy as sp

            for i, node_id in enumerate(self.elaborated.order):
                self._symbols[node_id] = sp.Symbol(f"q{i}", real=True)
        return self._symbols

    def local(self, node_id: str) -> sp.Expr:
        """The node's sympy expression over the symbols of the nodes it references."""
        if node_id not in self._local:
            self._local[node_id] = to_sympy(self.elaborated.nodes[node_id].expr, self.symbols)
        return self._local[node_id]

    def full(self, node_id: str) -> sp.Expr:
        """The node's sympy expression over input symbols only."""
        if node_id not in self._full:
            node = self.elaborated.nodes[node_id]
            if node.is_input or ir.is_search(node.expr):  # a search has no closed form: it stands as its own symbol
                self._full[node_id] = self.symbols[node_id]
            else:
                subs = {self.symbols[d]: self.full(d) for d in node.deps}
                self._full[node_id] = self.local(node_id).xreplace(subs)
        return self._full[node_id]


# ---- the symbolic form --------------------------------------------------------------------


def to_sympy(expr: ir.Expr, symbols: dict[str, Any]) -> Any:
    """Build the sympy form of an IR expression (references become their nodes' symbols)."""
    if isinstance(expr, ir.Lit):
        return sympy_literal(expr.value, expr.dim == ir.BOOL)
    if isinstance(expr, ir.Ref):
        return symbols[expr.node]
    return sympy_op(expr.op, [to_sympy(x, symbols) for x in expr.args])


def sympy_literal(value: Any, boolean: bool = False) -> Any:
    """An exact value (Fraction, float or bool) as a sympy atom."""
    import sympy as sp

    if boolean or isinstance(value, bool):
        return sp.true if value else sp.false
    if isinstance(value, float):
        return sp.Float(value)
    value = Fraction(value)
    return sp.Rational(value.numerator, value.denominator)


def sympy_op(op: str, a: list[Any]) -> Any:
    """One IR operation applied to sympy operands."""
    import sympy as sp

    table: dict[str, Callable[[], Any]] = {
        "+": lambda: sp.Add(a[0], a[1]), "-": lambda: sp.Add(a[0], sp.Mul(-1, a[1])),
        "*": lambda: sp.Mul(a[0], a[1]), "/": lambda: sp.Mul(a[0], sp.Pow(a[1], -1)),
        "^": lambda: sp.Pow(a[0], a[1]), "neg": lambda: sp.Mul(-1, a[0]),
        "<": lambda: sp.StrictLessThan(a[0], a[1]), "<=": lambda: sp.LessThan(a[0], a[1]),
        ">": lambda: sp.StrictGreaterThan(a[0], a[1]), ">=": lambda: sp.GreaterThan(a[0], a[1]),
        "==": lambda: sp.Eq(a[0], a[1]), "!=": lambda: sp.Ne(a[0], a[1]),
        "and": lambda: sp.And(a[0], a[1]), "or": lambda: sp.Or(a[0], a[1]), "not": lambda: sp.Not(a[0]),
        "if": lambda: sp.Piecewise((a[1], a[0]), (a[2], True)),
        # a search has no closed form: its value stands as an opaque function of its range
        "largest": lambda: sp.Function("largest")(a[1], a[2], a[4]),
    }
    function = FUNCTIONS.get(op)
    if function is not None:
        return (getattr(sp, function.sympy) if function.sympy else sympy_function(op))(*a)
    return table[op]()


# ---- exact evaluation ---------------------------------------------------------------------

_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul,
}
_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne,
}


def evaluate(expr: ir.Expr, values: dict[str, Value]) -> Value:
    """The exact value of an IR expression given its references' values; raises EvalError."""
    if isinstance(expr, ir.Lit):
        return bool(expr.value) if expr.dim == ir.BOOL else expr.value
    if isinstance(expr, ir.Ref):
        return values[expr.node]
    op = expr.op
    if op == "if":
        return evaluate(expr.args[1] if evaluate(expr.args[0], values) else expr.args[2], values)
    if op in ("and", "or"):
        left = bool(evaluate(expr.args[0], values))
        if (op == "and") != left:  # short-circuit
            return left
        return bool(evaluate(expr.args[1], values))
    args = [evaluate(a, values) for a in expr.args]
    try:
        result = _apply(expr, args)
    except ZeroDivisionError:  # a float divided by a rational too small for a float
        raise EvalError(expr.span, "overflow", "the quotient is beyond ±1.8e308") from None
    except OverflowError:  # a rational too large for a float, met by a float
        raise EvalError(expr.span, "overflow", "beyond ±1.8e308") from None
    return _check_range(result, expr.span)


def evaluate_node(elaborated: ir.Elaborated, node_id: str, values: dict[str, Value]) -> Value:
    """A node's exact value from its references' values: its formula, or its search."""
    expr = elaborated.nodes[node_id].expr
    return largest(elaborated, node_id, values) if ir.is_search(expr) else evaluate(expr, values)


def largest(elaborated: ir.Elaborated, node_id: str, values: dict[str, Value]) -> Number:
    """`largest(x, low, high, condition)`: the largest whole x in [low, high] at which the
    condition holds, by bisection (the condition is taken to hold up to some x and fail beyond,
    as a limit on a batch does; a trial at which the physics has no value fails). The nodes
    between x and the condition are left at their values for the answer."""
    expr = elaborated.nodes[node_id].expr
    assert isinstance(expr, ir.Op)
    free, low_expr, high_expr, cond, step_expr = expr.args
    assert isinstance(free, ir.Ref)
    start, step = evaluate(low_expr, values), evaluate(step_expr, values)
    if not step > 0:
        raise EvalError(step_expr.span, "not a real number", "the step of a search must be positive")
    origin = math.ceil(start / step) if step == 1 else 0
    base = Fraction(0) if step == 1 else start  # whole values from ceil(low); else low + k·step
    low, high = origin, math.floor((evaluate(high_expr, values) - base) / step)
    trials = ir.trial_nodes(elaborated, node_id)

    def at(k: int) -> Any:
        return base + k * step

    def holds(k: int) -> bool:
        values[free.node] = at(k)
        try:
            for n in trials:
                values[n] = evaluate_node(elaborated, n, values)
            return bool(evaluate(cond, values))
        except EvalError:
            return False

    guess = _float_guess(elaborated, node_id, values, at(low), base, step)
    if guess is not None and low <= guess <= high:
        # the bisection in floating point (one vectorised pass per step), then exactly from there:
        # the answer holds exactly and the next value does not (a float boundary off by one is moved)
        k = guess
        while k > low and not holds(k):
            k -= 1
        if holds(k):
            while k < high and holds(k + 1):
                k += 1
            holds(k)
            return at(k)  # type: ignore[no-any-return]
    if high < low or not holds(low):
        holds(low)
        shown = _show_plain(at(low))
        error = EvalError(expr.span, "infeasible", f"it fails already at {free.text} = {shown}" if high >= low
                          else "the range is empty")
        error.var = free.text  # type: ignore[attr-defined]
        raise error
    if holds(high):
        return at(high)  # type: ignore[no-any-return]
    good, bad = low, high
    while bad - good > 1:
        mid = (good + bad) // 2
        if holds(mid):
            good = mid
        else:
            bad = mid
    holds(good)
    return at(good)  # type: ignore[no-any-return]


def _float_guess(elaborated: ir.Elaborated, node_id: str, values: dict[str, Value], start: Any, base: Any,
                 step: Any) -> int | None:
    """The search's answer by the vectorised evaluator (float64), as a step count; None if it has none."""
    import numpy as np

    from .vector import evaluate_many

    expr = elaborated.nodes[node_id].expr
    assert isinstance(expr, ir.Op) and isinstance(expr.args[0], ir.Ref)
    free = expr.args[0].node
    only = set(ir.trial_nodes(elaborated, node_id)) | ir.search_inputs(elaborated, node_id) | {node_id, free}
    only |= {r for a in expr.args[1:] for r in ir.refs(a)}
    try:
        out = evaluate_many(elaborated, values, {free: np.array([float(start)])}, only)
        answer = float(np.asarray(out[node_id]).reshape(-1)[0])
    except (KeyError, ValueError, OverflowError, ZeroDivisionError):
        return None
    if not math.isfinite(answer):
        return None
    return round((answer - float(base)) / float(step))


def _show_plain(x: Any) -> str:
    return format_number(float(x), 6) if not (isinstance(x, Fraction) and x.denominator == 1) else str(x)


def search_bounds(elaborated: ir.Elaborated, node_id: str, values: dict[str, Value]
                  ) -> tuple[Value | None, list[tuple[ir.Expr, bool | None, Value | None, Value | None]]]:
    """What stops a `largest` at its answer: the parts of its condition (an `and` of comparisons,
    followed through the boolean quantities it names) at the next whole value, each with whether
    it holds there and both its sides. `(None, [])` when the answer is the range's end."""
    expr = elaborated.nodes[node_id].expr
    assert isinstance(expr, ir.Op)
    free, _, high_expr, cond, step_expr = expr.args
    assert isinstance(free, ir.Ref)
    answer, step = values[node_id], evaluate(step_expr, values)
    beyond = answer + step
    if beyond > evaluate(high_expr, values):
        return None, []
    trial = dict(values)
    trial[free.node] = beyond
    for n in ir.trial_nodes(elaborated, node_id):
        try:
            trial[n] = evaluate_node(elaborated, n, trial)
        except EvalError:
            trial.pop(n, None)
    rows = []
    for part in ir.conjuncts(elaborated, cond):
        try:
            holds: bool | None = bool(evaluate(part, trial))
        except (EvalError, KeyError):
            holds = None
        left = right = None
        if isinstance(part, ir.Op) and part.op in _CMP:
            with contextlib.suppress(EvalError, KeyError):
                left, right = (evaluate(a, trial) for a in part.args)
        rows.append((part, holds, left, right))
    rows.sort(key=lambda r: r[1] is not False)  # what fails beyond the answer first
    return beyond, rows


def _apply(expr: ir.Op, a: list[Any]) -> Value:
    op = expr.op
    if op in _ARITH:
        return _ARITH[op](a[0], a[1])  # type: ignore[no-any-return]
    if op in _CMP:
        return _CMP[op](a[0], a[1])
    if op == "/":
        if a[1] == 0:
            raise EvalError(expr.args[1].span, "division by zero", "the divisor is zero")
        return a[0] / a[1]  # type: ignore[no-any-return]
    if op == "neg":
        return -a[0]  # type: ignore[no-any-return]
    if op == "not":
        return not a[0]
    if op in ("min", "max"):
        return (min if op == "min" else max)(a)  # type: ignore[no-any-return]
    if op in ("ceil", "floor"):
        return Fraction((math.ceil if op == "ceil" else math.floor)(a[0]))
    if op == "abs":
        return abs(a[0])  # type: ignore[no-any-return]
    if op == "^":
        return _power(expr, a[0], a[1])
    return _transcendental(expr, *a)


def _power(expr: ir.Op, base: Number, exponent: Number) -> Number:
    if isinstance(base, Fraction) and (base == 1 or (base == 0 and exponent > 0)):
        return base  # exact whatever the exponent: 0^x and 1^x (a dense model's (1 − k/E)^T)
    if isinstance(exponent, Fraction) and exponent.denominator == 1 and isinstance(base, Fraction):
        if base == 0 and exponent < 0:
            raise EvalError(expr.args[0].span, "division by zero", "zero to a negative power")
        # the power's order of magnitude, from the rational's integers (a float of a tiny or huge
        # base would be 0 or inf): the exact power is computed only when it is within range
        magnitude = float(exponent) * _log10(base) if base not in (0, 1, -1) else 0
        if magnitude > _MAX_POWER_DIGITS:
            raise EvalError(expr.span, "overflow", "the power is beyond ±1.8e308")
        if magnitude < -_MAX_POWER_DIGITS:
            if abs(base) < _FLOAT_MIN_FRACTION:  # the base itself is below the float range
                raise EvalError(expr.span, "underflow", f"the power is closer to zero than 1e-{_MAX_POWER_DIGITS}")
            return 0.0  # a float power underflows to zero, as IEEE arithmetic does: (1 − k/E)^T at large T
        digits = abs(exponent) * max(len(str(base.numerator)), len(str(base.denominator)))
        if digits <= _MAX_EXACT_DIGITS:
            return base ** int(exponent)
        # an exact power whose numerator or denominator would run to thousands of digits
        # ((1 − k/E)^T for an MoE iteration of 8,192 tokens) is carried as a float
        return float(base) ** int(exponent)
    if base < 0:
        raise EvalError(expr.span, "not a real number", "a negative number to a fractional power")
    try:
        result: float = float(base) ** float(exponent)
        return result
    except (OverflowError, ZeroDivisionError) as exc:
        raise EvalError(expr.span, "overflow", str(exc)) from None


def _log10(x: Fraction) -> float:
    """log10 |x| of a non-zero rational, however large or small."""
    return math.log10(abs(x.numerator)) - math.log10(x.denominator)


def _transcendental(expr: ir.Op, x: Number, *rest: Number) -> Number:
    op = expr.op
    function = FUNCTIONS.get(op)
    if function is not None and function.exact is not None:
        try:
            value = float(function.exact(float(x), *(float(r) for r in rest)))
            return Fraction(int(value)) if function.whole else value  # a count stays exact
        except ValueError as exc:
            raise EvalError(expr.span, "not a real number", str(exc)) from None
    if op == "sqrt":
        if x < 0:
            raise EvalError(expr.args[0].span, "not a real number", "the square root of a negative number")
        if isinstance(x, Fraction):
            num, den = math.isqrt(x.numerator), math.isqrt(x.denominator)
            if num * num == x.numerator and den * den == x.denominator:
                return Fraction(num, den)
        return math.sqrt(x)
    if op == "log":
        if x <= 0:
            raise EvalError(expr.args[0].span, "not a real number", "the logarithm of a number that is not positive")
        if x == 1:
            return Fraction(0)  # exact where the answer is: a constant length's spread is 0
        if isinstance(x, Fraction):  # of numerator and denominator: a rational below float range has a log too
            return math.log(x.numerator) - math.log(x.denominator)
        return math.log(x)
    if op == "exp" and x == 0:
        return Fraction(1)
    if op != "exp":
        raise AssertionError(f"`{op}` is not an operation the exact evaluator knows")  # `largest` is a node's whole formula
    try:
        return math.exp(x)
    except OverflowError:
        raise EvalError(expr.span, "overflow", "exp overflows") from None


def _check_range(value: Value, span: Span) -> Value:
    if isinstance(value, bool):
        return value
    if isinstance(value, Fraction):
        if abs(value) > _FLOAT_MAX_FRACTION:
            raise EvalError(span, "overflow", "beyond ±1.8e308")
    elif math.isinf(value) or math.isnan(value):
        raise EvalError(span, "overflow", "beyond ±1.8e308")
    return value


# ---- the stage ----------------------------------------------------------------------------


def lower(elaborated: ir.Elaborated, sink: dx.Sink, reuse: Lowered | None = None) -> Lowered:
    """`reuse`: an evaluated plan this one is a variant of; a node with the same formula over
    unchanged inputs keeps its value instead of being evaluated again."""
    out = Lowered(elaborated)
    failed: set[str] = set()
    changed: set[str] = set()
    problems: list[tuple[ir.Node, EvalError]] = []
    trials = ir.all_trial_nodes(elaborated)  # evaluated by their search, at each value it tries
    for node_id in elaborated.order:
        if node_id in trials:
            changed.add(node_id)
            continue
        node = elaborated.nodes[node_id]
        if any(d in failed for d in node.deps) or (ir.is_search(node.expr) and any(
                d in failed or d not in out.values for d in ir.search_inputs(elaborated, node_id))):
            failed.add(node_id)
            continue
        old = reuse.elaborated.nodes.get(node_id) if reuse is not None else None
        if (old is not None and node_id in reuse.values and not any(d in changed for d in node.deps)  # type: ignore[union-attr]
                and (old is node or old.expr == node.expr)):
            out.values[node_id] = reuse.values[node_id]  # type: ignore[union-attr]
            continue
        changed.add(node_id)
        try:
            out.values[node_id] = evaluate_node(elaborated, node_id, out.values)
        except EvalError as exc:
            failed.add(node_id)
            problems.append((node, exc))
    # An impossible input (zero users) explains the divisions by zero downstream: report the
    # requirement, and the evaluation problems only when no requirement failed.
    _advisories(out, failed, sink)
    if _whole_numbers(out, sink) | _requirements(out, failed, sink):
        return out
    for node, problem in problems:
        sink.add(_diagnostic(node.id, node.decl_span, problem))
    if failed:
        return out
    for check in elaborated.checks:
        try:
            out.checks.append(_outcome(check.expr, out, check.label))
        except EvalError as exc:
            sink.add(_diagnostic(" ".join(check.expr.span.text.split()), check.span, exc))
    for expr in elaborated.summary:
        try:
            out.summary.append(evaluate(expr, out.values))
        except EvalError as exc:
            sink.add(_diagnostic(" ".join(expr.span.text.split()), expr.span, exc))
    out.findings = _findings(elaborated, out.values)
    out.levers = _levers(elaborated, out.values)
    return out


def _holes(parts: tuple[str | ir.Hole, ...], values: dict[str, Value]) -> tuple[Value, ...]:
    """The values of a sentence's holes, in order."""
    return tuple(evaluate(p.expr, values) for p in parts if isinstance(p, ir.Hole))


def _levers(elaborated: ir.Elaborated, values: dict[str, Value]) -> list[Offered]:
    """The levers whose condition holds (or that have none)."""
    offered = []
    for lever in elaborated.levers:
        try:
            if lever.cond is None or evaluate(lever.cond, values):
                offered.append(Offered(lever, _holes(lever.takes, values), _holes(lever.gate, values)))
        except EvalError:
            continue
    return offered


def _findings(elaborated: ir.Elaborated, values: dict[str, Value]) -> list[Stated]:
    """The findings whose condition holds. One that cannot be evaluated (a hole with no value
    for this plan) is a statement the document does not make, not an error."""
    stated = []
    for f in elaborated.findings:
        try:
            if evaluate(f.expr, values):
                stated.append(Stated(f, _holes(f.parts, values)))
        except EvalError:
            continue
    return stated


_HELP = {
    "infeasible": "the condition cannot be met anywhere in the range: relax what it asks (an SLO, a memory limit) or widen the range",
    "division by zero": "check the inputs this divisor is computed from; none may be zero",
    "overflow": "check the magnitudes and units of the inputs",
    "not a real number": "check the signs of the inputs",
    "underflow": "check the magnitudes and units of the inputs",
}


def _diagnostic(name: str, declared: Span, exc: EvalError) -> dx.Diagnostic:
    if exc.kind == "infeasible":
        var = getattr(exc, "var", "x")
        return dx.NO_FEASIBLE_VALUE.at(exc.span, "nothing in the range meets this", name=name, var=var, detail=exc.detail,
                                       secondary=[dx.Label(declared, "while evaluating this")] if declared != exc.span else [],
                                       help=_HELP[exc.kind])
    code = {"division by zero": dx.DIVISION_BY_ZERO, "overflow": dx.OVERFLOW,
            "underflow": dx.UNDERFLOW}.get(exc.kind, dx.NOT_A_NUMBER)
    label = {"division by zero": "this is zero", "overflow": "too large", "underflow": "too small"}.get(exc.kind, exc.detail)
    secondary = [dx.Label(declared, "while evaluating this")] if declared != exc.span else []
    return code.at(exc.span, label, name=name, detail=exc.detail, secondary=secondary, help=_HELP[exc.kind])


def _outcome(expr: ir.Expr, out: Lowered, label: str | None) -> Outcome:
    holds = bool(evaluate(expr, out.values))
    left = right = None
    if isinstance(expr, ir.Op) and expr.op in _CMP:
        left, right = (evaluate(a, out.values) for a in expr.args)
    return Outcome(expr, holds, left, right, label)


def _whole_numbers(out: Lowered, sink: dx.Sink) -> bool:
    """E0409 at the plan's line that gives a quantity declared `integer` (a batch, a TP degree,
    a count of replicas) a value that is not a whole number; True if any did. Only values the
    plan writes are held to it: the stdlib binds the same fields to means (`batch =
    operating_batch`, the average running batch) in the variants it derives."""
    bad = False
    for node in out.elaborated.nodes.values():
        value = out.values.get(node.id)
        if (not node.integral or node.span.file.is_stdlib or value is None or isinstance(value, bool)
                or is_whole(value)):
            continue
        bad = True
        low = math.floor(value)
        counted = isinstance(node.dim, Dim) and node.dim != DIMENSIONLESS
        shown = _show(value, node.dim)
        sink.add(dx.NOT_WHOLE.at(
            node.span, f"this is {shown}", name=node.id, what=f" of `{node.dim}`" if counted else "", value=shown,
            secondary=[dx.Label(node.type_span, "declared a whole number here")] if node.type_span else [],
            help=f"round it to {_show(Fraction(low), node.dim)} or {_show(Fraction(low + 1), node.dim)}"))
    return bad


def is_whole(value: Number) -> bool:
    """A whole number: exactly for a rational, to a relative 1e-9 for a float (what a product
    of decimals such as `0.1 * 30` leaves). The one test of wholeness that the plan's values
    (E0409 here) and a question's domains (`solve`) share."""
    if isinstance(value, Fraction):
        return value.denominator == 1
    return math.isfinite(value) and abs(value - round(value)) <= 1e-9 * max(1.0, abs(value))


def _requirements(out: Lowered, failed: set[str], sink: dx.Sink) -> bool:
    """Report every failed requirement whose inputs evaluated; True if any failed. One on the
    values of one thing (a utilisation above 100 %, a negative memory) is an invalid value
    (E0404); one on a combination of things (these weights on this accelerator, this TP for this
    model's heads) makes a well-formed plan infeasible (E0408), reported with the numbers of the
    comparison that fails and the inputs that would make it hold."""
    return _clauses(out.elaborated.requirements, out, failed, sink, dx.IMPOSSIBLE_VALUE, "this value",
                    "requirement failed", "required here", "change the value so that the requirement holds",
                    physics=dx.INFEASIBLE_PLAN)


def _advisories(out: Lowered, failed: set[str], sink: dx.Sink) -> None:
    """A warning for every `advise` clause that does not hold (the plan is computed all the same)."""
    _clauses(out.elaborated.advisories, out, failed, sink, dx.ADVICE, "this choice", "advice", "advised here",
             "the plan is computed as written; change the value if this is not what you meant")


def _clauses(clauses: list[ir.Requirement], out: Lowered, failed: set[str], sink: dx.Sink, code: dx.Code,
             label: str, default: str, where: str, help: str, physics: dx.Code | None = None) -> bool:
    """A diagnostic at the user's line for every clause whose inputs evaluated and that does not
    hold, with both sides; True if any did not. With `physics`, a clause on derived quantities
    gets that code, the sides of the comparison inside it that fails, and the remedies."""
    any_failed = False
    for req in clauses:
        if any(ref in failed or ref not in out.values for ref in ir.refs(req.expr)):
            continue
        try:
            outcome = _outcome(req.expr, out, req.message)
        except EvalError:
            continue
        if outcome.holds:
            continue
        any_failed = True
        detail = f"`{' '.join(req.expr.span.text.split())}` does not hold"
        if outcome.left is not None and outcome.right is not None and isinstance(req.expr, ir.Op):
            dim = req.expr.args[0].dim
            unit = _written_unit(req.expr.args, out.elaborated)
            detail += f": {_show(outcome.left, dim, unit)} vs {_show(outcome.right, dim, unit)}"
        from .remedy import remedies, sides

        notes = [detail]
        found = sides(out, req.expr)
        if found is not None and found.comparison is not req.expr:
            (lt, lv), (rt, rv) = found.left, found.right
            notes.append(f"it fails at `{lt} {found.comparison.op} {rt}`: {lv} against {rv}")
        if found is not None and found.terms:
            notes.append("with " + ", ".join(f"`{n}` = {v}" for n, v in found.terms))
        nodes = out.elaborated.nodes
        owners = {nodes[n].owner for n in ir.upstream(out.elaborated, [req.expr]) if nodes[n].is_input}
        if physics is None or len(owners) < 2:  # a value of one thing out of its range: invalid input
            sink.add(code.at(req.blame, label, message=f"{req.message or default} in `{req.instance}`",
                             secondary=[dx.Label(req.span, where)], notes=notes, help=help))
            continue
        fixes = remedies(out, req.expr)
        fix = ("it holds with " + ", or ".join(fixes) + " (each alone, the others as they are)") if fixes else \
            "no single input of the plan makes it hold: change the model, the accelerator or the precision"
        sink.add(physics.at(req.blame, "the plan cannot meet this", message=f"{req.message or default} in `{req.instance}`",
                            secondary=[dx.Label(req.span, where)], notes=notes, help=fix))
    return any_failed


def _show(value: Number, dim: ir.Type, unit: str | None = None) -> str:
    return format_quantity(float(value), dim, unit) if isinstance(dim, Dim) else str(value)


def _written_unit(sides: tuple[ir.Expr, ...], elaborated: ir.Elaborated) -> str | None:
    """The unit a comparison's sides are best shown in: the declared unit of a field it
    compares, else the unit its literal is written in, unless a base unit (`price >= 0 USD/h`
    shows USD/h, not USD/s); None lets the dimension choose."""
    for side in sides:
        if isinstance(side, ir.Ref) and side.node in elaborated.nodes and elaborated.nodes[side.node].unit:
            return elaborated.nodes[side.node].unit
    for side in sides:
        words = side.text.split()[1:] if isinstance(side, ir.Lit) else []
        if words and isinstance(side.dim, Dim):
            with contextlib.suppress(UnitError):
                scale, dim = unit_scale(" ".join(words))
                if dim == side.dim and scale != 1:  # a base unit (`0 B`) lets the dimension choose
                    return " ".join(words)
    return None
