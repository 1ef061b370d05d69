"""The scalar evaluator: a few nodes of the IR compiled once into closures over plain floats.

Contract
- `compile_nodes(elaborated, nodes, slots, constants) -> {node: closure}` compiles each node's
  formula into `closure(env) -> float | bool`, where `env` is a list: every node a formula reads is
  either in `slots` (its value is `env[slots[node]]` when the closure runs: an input the caller
  sets, or a node of `nodes` whose closure the caller ran first) or in `constants` (a plain
  number, folded in when compiling). A subtree that reads no slot is computed once, when
  compiling, so a closure does only the work its slots move.
- A closure's value is the vectorised evaluator's (`vector._OPS`) on one point, bit for bit,
  where that evaluator holds the slots as one-point arrays and the constants as plain numbers:
  float64 arithmetic (`+ - * /` and `sqrt` are correctly rounded in both); `^`, `exp` and `log`
  by numpy's own kernels, each argument that reads a slot as a one-point array and the others as
  plain numbers (numpy rounds `x ^ 0.5` as a square root for a plain exponent and not for an
  array; Python's `**` and `math.exp` differ from both in the last bit for a few percent of
  arguments); the other builtins (`erlang_c`, the quantiles) by their numpy forms on a one-point
  array. An operation with no real value (a division by zero, the log of a non-positive number,
  an overflow) gives what numpy gives there (NaN or ±inf), never an exception; `min` and `max`
  propagate NaN; `if` computes only its branch. tests/test_scalar.py holds every formula of five
  examples, and the edge cases, to the vectorised values.
- A search (`largest`) is not compiled: `compile_nodes` raises `Unsupported`, and the caller uses
  the vectorised evaluator instead.
- Nothing here is physics and no text is compiled: the closures are built from the IR's node
  classes and the fixed operator table below.

Why: `plan simulate` times each simulated iteration by the plan's `iteration_time`, a few dozen
nodes whose values move with the iteration's shape, once for nearly every iteration that carries a
prefill. Interpreted by the vectorised evaluator over one-point arrays that is about 0.35 ms a
shape; these closures take a few microseconds (bench/README.md, `plan simulate`).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from .builtins import FUNCTIONS
from .semantics import ir

Closure = Callable[[list[Any]], Any]


class Unsupported(Exception):
    """A formula the scalar evaluator does not compile (a search)."""


def compile_nodes(elaborated: ir.Elaborated, nodes: list[str], slots: dict[str, int],
                  constants: dict[str, Any]) -> dict[str, Closure]:
    return {node: _lift(_compile(elaborated.nodes[node].expr, slots, constants)) for node in nodes}


class _Slot:
    """A reference to `env[index]`, kept apart from closures so that an operation reads it inline."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _varies(part: Any) -> bool:
    return callable(part) or isinstance(part, _Slot)


def _compile(expr: ir.Expr, slots: dict[str, int], constants: dict[str, Any]) -> Any:
    """A closure of `env`, a `_Slot`, or, for a subtree that reads no slot, its value."""
    if isinstance(expr, ir.Ref):
        if expr.node in slots:
            return _Slot(slots[expr.node])
        if expr.node not in constants:
            raise KeyError(f"`{expr.node}` is neither a slot nor a constant")
        return constants[expr.node]
    if isinstance(expr, ir.Lit):
        return bool(expr.value) if expr.dim == ir.BOOL else float(expr.value)
    assert isinstance(expr, ir.Op)
    if expr.op == "largest":
        raise Unsupported("a search is evaluated by the vectorised evaluator")
    args = [_compile(a, slots, constants) for a in expr.args]
    if expr.op == "if":
        return _if(*args)
    if expr.op in ("and", "or"):
        return _logic(expr.op, args[0], args[1])
    varying = tuple(_varies(a) for a in args)
    function = _function(expr.op, varying)
    if not any(varying):
        return function(*args)
    return _apply(function, args)


def _if(condition: Any, then: Any, other: Any) -> Any:
    if not _varies(condition):
        return then if condition else other
    c, a, b = _lift(condition), _lift(then), _lift(other)
    return lambda env: a(env) if c(env) else b(env)


def _logic(op: str, left: Any, right: Any) -> Any:
    if not _varies(left) and not _varies(right):
        return bool(left and right) if op == "and" else bool(left or right)
    a, b = _lift(left), _lift(right)
    if op == "and":
        return lambda env: bool(a(env) and b(env))
    return lambda env: bool(a(env) or b(env))


def _lift(part: Any) -> Closure:
    """Any part as a closure of `env`."""
    if callable(part):
        closure: Closure = part
        return closure
    if isinstance(part, _Slot):
        i = part.index
        return lambda env: env[i]
    return lambda env: part


def _apply(f: Callable[..., Any], args: list[Any]) -> Closure:
    """`f` of the arguments: a slot is read inline and a constant bound once, for one or two
    arguments (most formulas are binary operations); more are each lifted to a closure."""
    if len(args) == 1:
        (a,) = args
        if isinstance(a, _Slot):
            i = a.index
            return lambda env: f(env[i])
        return lambda env: f(a(env))
    if len(args) == 2:
        return _binary(f, *args)
    parts = [_lift(a) for a in args]
    return lambda env: f(*[p(env) for p in parts])


def _binary(f: Callable[[Any, Any], Any], a: Any, b: Any) -> Closure:
    if isinstance(a, _Slot):
        i = a.index
        if isinstance(b, _Slot):
            j = b.index
            return lambda env: f(env[i], env[j])
        if callable(b):
            return lambda env: f(env[i], b(env))
        return lambda env: f(env[i], b)
    if isinstance(b, _Slot):
        j = b.index
        if callable(a):
            return lambda env: f(a(env), env[j])
        return lambda env: f(a, env[j])
    if not callable(a):
        return lambda env: f(a, b(env))
    if not callable(b):
        return lambda env: f(a(env), b)
    return lambda env: f(a(env), b(env))


def _function(op: str, varying: tuple[bool, ...]) -> Callable[..., Any]:
    """The operation on plain values; each falls back to numpy's form (`vector._OPS`) where the
    plain one raises, which is where numpy gives NaN or ±inf instead."""
    if op in _PLAIN:
        return _PLAIN[op]
    if op in ("min", "max"):
        pick = _min2 if op == "min" else _max2
        if len(varying) == 2:
            return pick

        def fold(*values: Any) -> Any:
            result = values[0]
            for v in values[1:]:
                result = pick(result, v)
            return result
        return fold
    if op in ("^", "exp", "log"):
        return _ufunc(op, varying)
    if op not in FUNCTIONS:
        raise Unsupported(f"no scalar form of `{op}`")
    return lambda *values: _numpy(op, values)


def _numpy(op: str, values: tuple[Any, ...]) -> Any:
    """What the vectorised evaluator gives for these values (NaN, ±inf), as a plain value."""
    import numpy as np

    from .vector import _OPS

    with np.errstate(all="ignore"):
        result = np.asarray(_OPS[op]([np.asarray([v]) for v in values])).reshape(-1)[0]
    return bool(result) if result.dtype == bool else float(result)


def _div(a: Any, b: Any) -> Any:
    try:
        return a / b
    except ZeroDivisionError:
        return _numpy("/", (a, b))


def _ufunc(op: str, varying: tuple[bool, ...]) -> Callable[..., Any]:
    """`^`, `exp`, `log` by numpy's own kernels, each argument that varies as a one-point array and
    the others as plain numbers, as the vectorised evaluator holds them: numpy's kernels round
    differently for an array and a plain exponent (`x ^ 0.5` is a square root), and Python's
    `**` and `math.exp` differ from both in the last bit for a few percent of arguments."""
    import numpy as np

    f, point, errstate = {"^": np.power, "exp": np.exp, "log": np.log}[op], np.array, np.errstate

    def call(*values: Any) -> Any:
        with errstate(all="ignore"):
            result = f(*[point([v]) if var else v for v, var in zip(values, varying)])
        return float(result.reshape(-1)[0])
    return call


def _sqrt(a: Any) -> Any:
    try:
        return math.sqrt(a)  # correctly rounded, as numpy's is
    except ValueError:
        return _numpy("sqrt", (a,))


def _max2(a: Any, b: Any) -> Any:
    return a if a >= b or a != a else b  # NaN (a != a) propagates, as numpy's maximum does


def _min2(a: Any, b: Any) -> Any:
    return a if a <= b or a != a else b


def _whole(plain: Callable[[float], int], op: str) -> Callable[[Any], Any]:
    def call(a: Any) -> Any:
        try:
            return float(plain(a))
        except (ArithmeticError, ValueError):  # NaN, ±inf stay themselves
            return _numpy(op, (a,))
    return call


_PLAIN: dict[str, Callable[..., Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": _div, "neg": operator.neg,
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
    "not": operator.not_,
    "ceil": _whole(math.ceil, "ceil"), "floor": _whole(math.floor, "floor"), "abs": abs, "sqrt": _sqrt,
}
