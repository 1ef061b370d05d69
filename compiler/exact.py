"""The exact evaluator of the typed IR: one expression, one node, one `largest` search.

Contract
- `evaluate(expr, values)` is the exact value of an IR expression given its references' values:
  rationals (`Fraction`) stay exact through `+ - * /`, integer powers, `min`/`max`/`ceil`/
  `floor`; `sqrt`, `log`, `exp` and fractional powers give floats (except where the answer is
  exact: a perfect square's root, log 1 = 0, exp 0 = 1). An operation with no real value — a
  division by zero, the log of a non-positive number, the square root of a negative, a value
  beyond float range, a power closer to zero than 1e-400, a float divided by a rational too
  small for a float — raises `EvalError` with the operation's span; nothing else is raised.
- `evaluate_node` is a node's value, its formula or its search: `largest(x, low, high,
  condition)` by bisection over whole values (`largest`), and `search_bounds` what stops it.
- `is_whole` is the one test of wholeness that the plan's values and a question's domains share.
- `live_refs(expr, values)` is what an expression's value depends on at this point (its references
  less those under an exact zero factor or in an `if`'s other branch), and `moot(elaborated,
  values, used)` the quantities on which nothing the plan states depends there (the report
  derives neither: a dense model's expert tile).
- Pure functions of the IR and a dict of values; no diagnostics (the caller turns an `EvalError`
  into one, `lower.py`), no sympy. `lower.py` evaluates the plan with it; the solver, the report,
  `remedy.py` and `algebra.py` evaluate expressions of variants with it.
"""

from __future__ import annotations

import contextlib
import math
import operator
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from .builtins import FUNCTIONS
from .semantics import ir
from .semantics.units import format_number
from .source import Span

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


_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul,
}
_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne,
}
COMPARISONS = frozenset(_CMP)


def evaluate(expr: ir.Expr, values: dict[str, Value]) -> Value:
    """The exact value of an IR expression given its references' values; raises EvalError."""
    kind = type(expr)  # the IR's three node classes, the most frequent first
    if kind is _REF:
        return values[expr.node]  # type: ignore[union-attr]
    if kind is _LIT:
        return bool(expr.value) if expr.dim == ir.BOOL else expr.value  # type: ignore[union-attr]
    op = expr.op  # type: ignore[union-attr]
    args = expr.args  # type: ignore[union-attr]
    arith = _ARITH.get(op)
    if arith is not None:  # + - *: the bulk of the physics, without the general dispatch
        try:
            result = arith(evaluate(args[0], values), evaluate(args[1], values))
        except OverflowError:  # a rational too large for a float, met by a float
            raise EvalError(expr.span, "overflow", "beyond ±1.8e308") from None
        return _check_range(result, expr.span)
    if op == "if":
        return evaluate(args[1] if evaluate(args[0], values) else args[2], values)
    if op in ("and", "or"):
        left = bool(evaluate(args[0], values))
        if (op == "and") != left:  # short-circuit
            return left
        return bool(evaluate(args[1], values))
    compare = _CMP.get(op)
    if compare is not None:
        return compare(evaluate(args[0], values), evaluate(args[1], values))
    values_of = [evaluate(a, values) for a in args]
    try:
        result = _apply(expr, values_of)  # type: ignore[arg-type]
    except ZeroDivisionError:  # a float divided by a rational too small for a float
        raise EvalError(expr.span, "overflow", "the quotient is beyond ±1.8e308") from None
    except OverflowError:  # a rational too large for a float, met by a float
        raise EvalError(expr.span, "overflow", "beyond ±1.8e308") from None
    return _check_range(result, expr.span)


_REF, _LIT = ir.Ref, ir.Lit


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

    def kept() -> dict[str, Any]:  # the free value and the trial nodes after a trial that held
        return {n: values[n] for n in (free.node, *trials)}

    guess = _float_guess(elaborated, node_id, values, at(low), base, step)
    if guess is not None and low <= guess <= high:
        # the bisection in floating point (one vectorised pass per step), then exactly from there:
        # the answer holds exactly and the next value does not (a float boundary off by one is
        # moved); the trial nodes are left at the answer's values, kept rather than evaluated again
        k = guess
        ok = holds(k)
        while not ok and k > low:
            k -= 1
            ok = holds(k)
        if ok:
            answer = kept()
            while k < high and holds(k + 1):
                k += 1
                answer = kept()
            values.update(answer)
            return at(k)  # type: ignore[no-any-return]
    found = bisect(holds, low, high) if high >= low else None
    if found is None:
        holds(low)
        shown = _show_plain(at(low))
        error = EvalError(expr.span, "infeasible", f"it fails already at {free.text} = {shown}" if high >= low
                          else "the range is empty")
        error.var = free.text  # type: ignore[attr-defined]
        if high >= low:  # what fails at the range's start, with both sides: what the user must relax
            error.parts = [r for r in condition_parts(elaborated, node_id, values, at(low))  # type: ignore[attr-defined]
                           if r[1] is not True]
        raise error
    if found != high:
        holds(found)  # the trial nodes at the answer: the last trial was the value beyond it
    return at(found)  # type: ignore[no-any-return]


def condition_parts(elaborated: ir.Elaborated, node_id: str, values: dict[str, Value], value: Value
                    ) -> list[tuple[ir.Expr, bool | None, Value | None, Value | None]]:
    """The parts of a search's condition (`ir.conjuncts`) with its variable at `value`, its trial
    nodes evaluated there on a copy of `values`: each part with whether it holds (None: no value)
    and, for a comparison, both its sides."""
    expr = elaborated.nodes[node_id].expr
    assert isinstance(expr, ir.Op) and isinstance(expr.args[0], ir.Ref)
    cond = expr.args[3]
    trial = dict(values)
    trial[expr.args[0].node] = value
    for n in ir.trial_nodes(elaborated, node_id):
        try:
            trial[n] = evaluate_node(elaborated, n, trial)
        except (EvalError, KeyError):  # no value, or it reads a trial node that has none
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
    return rows


def bisect(holds: Callable[[int], bool], low: int, high: int) -> int | None:
    """The largest whole k in [low, high] at which `holds` holds, by bisection (`low` first, then
    `high`, then halving), taking the condition to hold up to some k and fail beyond; None where
    even `low` fails. The exact search and the vectorised one at one point take these same steps."""
    if not holds(low):
        return None
    if holds(high):
        return high
    good, bad = low, high
    while bad - good > 1:
        mid = (good + bad) // 2
        if holds(mid):
            good = mid
        else:
            bad = mid
    return good


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
        out = evaluate_many(elaborated, values, {free: np.array([float(start)])}, only, keep={node_id},
                            answers_only=True)
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
    _, _, high_expr, _, step_expr = expr.args
    answer, step = values[node_id], evaluate(step_expr, values)
    beyond = answer + step
    if beyond > evaluate(high_expr, values):
        return None, []
    rows = condition_parts(elaborated, node_id, values, beyond)
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
        # below 2^1022 by the integers' lengths (most values, and without a rational comparison)
        if value.numerator.bit_length() - value.denominator.bit_length() < 1022:
            return value
        if abs(value) > _FLOAT_MAX_FRACTION:
            raise EvalError(span, "overflow", "beyond ±1.8e308")
    elif math.isinf(value) or math.isnan(value):
        raise EvalError(span, "overflow", "beyond ±1.8e308")
    return value


# ---- the stage ----------------------------------------------------------------------------


def is_whole(value: Number) -> bool:
    """A whole number: exactly for a rational, to a relative 1e-9 for a float (what a product
    of decimals such as `0.1 * 30` leaves). The one test of wholeness that the plan's values
    (E0409 here) and a question's domains (`solve`) share."""
    if isinstance(value, Fraction):
        return value.denominator == 1
    return math.isfinite(value) and abs(value - round(value)) <= 1e-9 * max(1.0, abs(value))


# ---- what a value depends on at one point ---------------------------------------------------


def live_refs(expr: ir.Expr, values: dict[str, Value]) -> set[str]:
    """The references whose values this expression's value depends on at this point: all it
    names, except those that appear only under a factor that is exactly zero (a product with a
    zero factor, a quotient with a zero numerator) or in the branch an `if` does not take (or the
    operand an `and` or `or` does not reach). A reference it cannot evaluate there counts."""
    if isinstance(expr, ir.Lit):
        return set()
    if isinstance(expr, ir.Ref):
        return {expr.node}
    try:
        if expr.op == "if":
            cond = expr.args[0]
            return live_refs(cond, values) | live_refs(expr.args[1] if evaluate(cond, values) else expr.args[2], values)
        if expr.op in ("and", "or"):
            left = bool(evaluate(expr.args[0], values))
            if (expr.op == "and") != left:  # short-circuit: the right operand is not read
                return live_refs(expr.args[0], values)
        if expr.op in ("*", "/"):
            zero = [a for a in (expr.args if expr.op == "*" else expr.args[:1]) if evaluate(a, values) == 0]
            if zero:
                return live_refs(zero[0], values)
    except (EvalError, KeyError):
        return set(ir.refs(expr))
    return {r for a in expr.args for r in live_refs(a, values)}


def moot(elaborated: ir.Elaborated, values: dict[str, Value], used: set[str]) -> set[str]:
    """The quantities on which nothing depends at this point: each is read only by moot
    quantities, or live by none of its readers (`live_refs`: under a zero factor, in an untaken
    branch). A quantity is never moot when nothing reads it (a result of the plan's own), when it
    is in `used` (what the plan states outside its quantities: the summary, its checks, a finding,
    a question), or when a search or a search's trial reads it (a trial's values are the last
    point it tried, not the plan's)."""
    readers: set[str] = set()
    for n in elaborated.order:
        readers.update(elaborated.nodes[n].deps)
    trials = ir.all_trial_nodes(elaborated)
    live: set[str] = set()
    out: set[str] = set()
    for n in reversed(elaborated.order):  # every reader before what it reads
        if n in readers and n not in used and n not in live:
            out.add(n)
            continue
        node = elaborated.nodes[n]
        live.update(node.deps if n in trials or ir.is_search(node.expr) else live_refs(node.expr, values))
    return out
