"""The scalar evaluator: a few nodes of the IR compiled once into programs of the simulator's
register machine (`sim_engine.run_program`), which computes them on plain floats.

Contract
- `compile_programs(elaborated, groups, slots, constants, opcodes) -> (programs, env)` compiles
  each group (a list of nodes, in order) into one `Program`: instructions of four ints and the
  Python functions its CALL instructions call. `opcodes` names the machine's instructions
  (`sim_engine.OPCODES`: the machine is the simulator's, a layer above this one, so it is
  handed in rather than imported). Every node a formula reads is either in `slots` (its value
  is `env[slots[node]]` when the program runs: an input the caller sets, or a node of a group that
  ran before it or earlier in its own) or in `constants` (a plain number, folded in when
  compiling). Running a group's program sets each of its nodes' slots. `env` is the list the
  programs run on: a slot for each of `slots` (0.0), then the constants the instructions read
  (set) and their temporaries. A subtree that reads no slot is computed once, when compiling, so
  a program does only the work its slots move.
- A node's value is the vectorised evaluator's (`vector._OPS`) on one point, bit for bit, where
  that evaluator holds the slots as one-point arrays and the constants as plain numbers. The
  machine does `+ - * /`, the comparisons, `and`, `or`, `not`, `min`, `max` and `if` itself, in
  float64 as numpy does (a truth value is 1.0 or 0.0); everything else is a CALL: `^`, `exp` and
  `log` by numpy's own kernels, each argument that reads a slot as a one-point array and the
  others as plain numbers (numpy rounds `x ^ 0.5` as a square root for a plain exponent and not
  for an array; Python's `**` and `math.exp` differ from both in the last bit for a few percent
  of arguments); `sqrt`, `ceil`, `floor`, `abs` on plain floats where those agree with numpy; the
  other builtins (`erlang_c`, the quantiles) by their numpy forms on a one-point array. An
  operation with no real value (a division by zero, the log of a non-positive number, an
  overflow) gives what numpy gives there (NaN or ±inf), never an exception; `min` and `max`
  propagate NaN; `if` jumps over the branch it does not take. tests/test_scalar.py holds every
  formula of five examples, and the edge cases, to the vectorised values, on the machine as
  Python and as compiled.
- A search (`largest`) is not compiled: `compile_programs` raises `Unsupported`, and the caller
  uses the vectorised evaluator instead.
- Nothing here is physics and no text is compiled: programs are built from the IR's node classes
  and the fixed operator tables below.

Why: `plan simulate` times each simulated iteration by the plan's `iteration_time`, a few dozen
nodes whose values move with the iteration's shape, once for nearly every iteration that carries a
prefill. Interpreted by the vectorised evaluator over one-point arrays that is about 0.35 ms a
shape; closures over plain floats took a few microseconds, a Python call per operation; the
compiled machine takes a fraction of one (bench/README.md, `plan simulate`).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from .builtins import FUNCTIONS
from .semantics import ir


class Unsupported(Exception):
    """A formula the scalar evaluator does not compile (a search)."""


class Program(NamedTuple):
    """One group of nodes compiled for `sim_engine.run_program`: its instructions, and the Python
    functions its CALL instructions call."""

    code: list[int]
    calls: list[Callable[[list[float]], Any]]


def compile_programs(elaborated: ir.Elaborated, groups: list[list[str]], slots: dict[str, int],
                     constants: dict[str, Any], opcodes: Mapping[str, int]) -> tuple[list[Program], list[float]]:
    """Each group's nodes compiled, in order, into one program that sets each node's slot; and the
    `env` the programs run on: a slot for each of `slots` (0.0, for the caller to set), then the
    constants the programs read (set) and their temporaries."""
    assembler = _Assembler(elaborated, slots, constants, opcodes)
    return [assembler.program(nodes) for nodes in groups], assembler.env


class _Operand(NamedTuple):
    """A compiled part of a formula: a slot of `env` whose value varies, or a plain value (a subtree
    that reads no slot, computed when compiling)."""

    varying: bool
    slot: int
    value: Any


_NATIVE = {"+": "ADD", "-": "SUB", "*": "MUL", "/": "DIV", "<": "LT", "<=": "LE", ">": "GT", ">=": "GE", "==": "EQ",
           "!=": "NE", "and": "AND", "or": "OR", "neg": "NEG", "not": "NOT", "min": "MIN", "max": "MAX"}
"""the IR's operations the machine does itself, by the name of its instruction"""


class _Assembler:
    """Emits the instructions of formulas into the current program, a value's slot chosen by the
    caller where it has one (a node's own) so that no copy follows."""

    def __init__(self, elaborated: ir.Elaborated, slots: dict[str, int], constants: dict[str, Any],
                 opcodes: Mapping[str, int]) -> None:
        self.elaborated, self.slots, self.constants, self.op = elaborated, slots, constants, opcodes
        self.env: list[float] = [0.0] * (max(slots.values(), default=-1) + 1)
        self.code: list[int] = []
        self.calls: list[Callable[[list[float]], Any]] = []

    def program(self, nodes: list[str]) -> Program:
        self.code, self.calls = [], []
        for node in nodes:
            target = self.slots[node]
            self._into(self._emit(self.elaborated.nodes[node].expr, target), target)
        return Program(self.code, self.calls)

    def _slot(self, part: _Operand) -> int:
        """A varying part's slot, or a new slot holding a constant (a truth value as 1.0 or 0.0)."""
        if part.varying:
            return part.slot
        self.env.append(float(part.value))
        return len(self.env) - 1

    def _temporary(self) -> int:
        self.env.append(0.0)
        return len(self.env) - 1

    def _instruction(self, op: int, target: int, a: int, b: int) -> int:
        self.code += (op, target, a, b)
        return len(self.code) - 4

    def _into(self, part: _Operand, target: int) -> None:
        if not (part.varying and part.slot == target):
            self._instruction(self.op["MOVE"], target, self._slot(part), 0)

    def _emit(self, expr: ir.Expr, target: int | None = None) -> _Operand:
        """`expr` compiled: its value's slot (`target` if given and an instruction computes it), or
        its value where it reads no slot."""
        if isinstance(expr, ir.Ref):
            if expr.node in self.slots:
                return _Operand(True, self.slots[expr.node], None)
            if expr.node not in self.constants:
                raise KeyError(f"`{expr.node}` is neither a slot nor a constant")
            return _Operand(False, -1, self.constants[expr.node])
        if isinstance(expr, ir.Lit):
            return _Operand(False, -1, bool(expr.value) if expr.dim == ir.BOOL else float(expr.value))
        assert isinstance(expr, ir.Op)
        if expr.op == "largest":
            raise Unsupported("a search is evaluated by the vectorised evaluator")
        if expr.op == "if":
            condition, then, other = expr.args
            return self._if(condition, then, other, target)
        parts = [self._emit(a) for a in expr.args]
        varying = tuple(p.varying for p in parts)
        if not any(varying):
            if expr.op in ("and", "or"):
                left, right = (p.value for p in parts)
                return _Operand(False, -1, bool(left and right) if expr.op == "and" else bool(left or right))
            return _Operand(False, -1, _function(expr.op, varying)(*(p.value for p in parts)))
        out = self._temporary() if target is None else target
        if expr.op in _NATIVE and expr.op not in ("min", "max"):
            slots = [self._slot(p) for p in parts]
            self._instruction(self.op[_NATIVE[expr.op]], out, slots[0], slots[-1])
        elif expr.op in ("min", "max"):  # folded pairwise from the left, as the vectorised evaluator does
            acc = self._slot(parts[0])
            for i, part in enumerate(parts[1:], start=2):
                step = out if i == len(parts) else self._temporary()
                self._instruction(self.op[_NATIVE[expr.op]], step, acc, self._slot(part))
                acc = step
        else:
            self._instruction(self.op["CALL"], out, len(self.calls), 0)
            self.calls.append(_call(_function(expr.op, varying), parts))
        return _Operand(True, out, None)

    def _if(self, condition: ir.Expr, then: ir.Expr, other: ir.Expr, target: int | None) -> _Operand:
        """Only the branch taken runs: a jump over the other."""
        c = self._emit(condition)
        if not c.varying:
            return self._emit(then if c.value else other, target)
        out = self._temporary() if target is None else target
        skip = self._instruction(self.op["JUMP_IF_FALSE"], 0, c.slot, -1)
        self._into(self._emit(then, out), out)
        done = self._instruction(self.op["JUMP"], 0, -1, 0)
        self.code[skip + 3] = len(self.code)
        self._into(self._emit(other, out), out)
        self.code[done + 2] = len(self.code)
        return _Operand(True, out, None)


def _call(f: Callable[..., Any], parts: list[_Operand]) -> Callable[[list[float]], Any]:
    """`f` of the parts, the varying ones read from `env` when called, the others bound now."""
    if len(parts) == 1 and parts[0].varying:
        i = parts[0].slot
        return lambda env: f(env[i])
    spec = [(p.varying, p.slot, p.value) for p in parts]
    return lambda env: f(*[env[slot] if varies else value for varies, slot, value in spec])


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
