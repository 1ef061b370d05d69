"""The scalar evaluator (`planc.scalar`): programs of the simulator's register machine
(`sim_engine.run_program`, pure and compiled) that give, bit for bit, what the vectorised
evaluator gives on one point, including where an operation has no real value."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from planc import sim_engine, vector
from planc.pipeline import compile_plan
from planc.scalar import Unsupported, compile_programs
from planc.semantics import ir
from planc.semantics.units import DIMENSIONLESS, Dim
from planc.simulate import engine_module
from planc.source import SourceFile, Span
from planc.vector import evaluate_many

from .conftest import REPO


def same(a: Any, b: Any) -> bool:
    a, b = float(a), float(b)
    return a == b or (math.isnan(a) and math.isnan(b))


MACHINES = [pytest.param(sim_engine, id="pure"), pytest.param(engine_module(), id="loaded")]
"""the register machine as Python, and as it runs (compiled by mypyc where the build could)"""


def run(el: ir.Elaborated, nodes: list[str], slots: dict[str, int], constants: dict[str, Any],
        values: dict[int, float], machine: Any = sim_engine) -> list[float]:
    """`nodes` compiled into one program and run on an env whose `values` are set."""
    (program,), env = compile_programs(el, [nodes], slots, constants, machine.OPCODES)
    for slot, value in values.items():
        env[slot] = value
    machine.run_program(program.code, program.calls, env)
    return env


@pytest.mark.parametrize("machine", MACHINES)
@pytest.mark.parametrize("example", ["100m_dau", "recommender", "mla_deepseek_v3", "moe_qwen3", "sliding_window_gemma"])
def test_every_formula_of_a_plan_agrees_with_the_vectorised_evaluator_bit_for_bit(example: str, machine: Any) -> None:
    c = compile_plan(REPO / "examples" / f"{example}.plan")
    assert c.lowered is not None
    el, exact = c.lowered.elaborated, c.lowered.values
    inputs = {n for n, node in el.nodes.items() if node.is_input and isinstance(node.dim, Dim) and n in exact}
    searches = {n for n in el.order if ir.is_search(el.nodes[n].expr)}
    # the inputs, the searches' answers and their trials are given (a search is not compiled); every
    # other formula is computed from them, by both evaluators
    given = {n for n in inputs | searches | ir.all_trial_nodes(el) if n in exact}
    vector = evaluate_many(el, exact, {n: np.array([float(exact[n])]) for n in given})
    nodes = [n for n in el.order if n not in given and n not in searches and n not in ir.all_trial_nodes(el)
             and el.nodes[n].expr is not None and isinstance(el.nodes[n].dim, Dim | str)]
    slots = {n: i for i, n in enumerate(el.order)}  # what is given varies over one point in both
    env = run(el, nodes, slots, {}, {slots[n]: float(exact[n]) if n in given else np.nan for n in el.order}, machine)
    for n in nodes:
        want = np.asarray(vector[n]).reshape(-1)[0]
        assert same(env[slots[n]], want), (n, env[slots[n]], want)
    assert len(nodes) >= 25


SPAN = Span(SourceFile("<test>", "x" * 20), 0, 1)


def lit(value: float | bool) -> ir.Lit:
    if isinstance(value, bool):
        return ir.Lit(Fraction(int(value)), ir.BOOL, SPAN, str(value))
    return ir.Lit(Fraction(value), DIMENSIONLESS, SPAN, str(value))


def ref(name: str) -> ir.Ref:
    return ir.Ref(name, DIMENSIONLESS, SPAN, name)


def op(name: str, *args: ir.Expr) -> ir.Op:
    return ir.Op(name, tuple(args), DIMENSIONLESS, SPAN)


EDGES = [  # x and y are slots; each formula is also evaluated with both as folded constants
    op("/", ref("x"), ref("y")), op("/", ref("y"), ref("y")), op("/", op("neg", ref("x")), ref("y")),
    op("^", ref("x"), ref("y")), op("^", ref("x"), lit(0.5)), op("^", op("neg", ref("x")), lit(0.5)),
    op("^", ref("y"), lit(-1.0)), op("^", lit(10.0), lit(400.0)), op("^", ref("x"), lit(3.3)),
    op("log", ref("y")), op("log", op("neg", ref("x"))), op("log", ref("x")), op("exp", lit(1000.0)),
    op("exp", ref("x")), op("sqrt", op("neg", ref("x"))), op("sqrt", ref("x")),
    op("max", ref("x"), op("/", ref("y"), ref("y"))), op("min", op("/", ref("y"), ref("y")), ref("x")),
    op("max", ref("x"), ref("y"), lit(-1.0)), op("min", ref("x"), ref("y"), lit(-1.0)),
    op("ceil", op("/", ref("x"), ref("y"))), op("floor", op("/", ref("y"), ref("y"))), op("ceil", lit(2.5)),
    op("floor", op("neg", ref("x"))), op("abs", op("neg", ref("x"))),
    op("if", op(">", ref("x"), ref("y")), ref("x"), op("/", ref("x"), ref("y"))),
    op("if", op("<=", ref("x"), ref("y")), lit(1.0), lit(2.0)),
    op("and", op("==", ref("x"), ref("x")), op("!=", ref("x"), ref("y"))),
    op("or", op("<", ref("x"), ref("y")), op(">=", ref("y"), ref("x"))), op("not", op("<", ref("x"), ref("y"))),
    op("+", ref("x"), op("*", ref("y"), lit(3.0))), op("-", ref("x"), lit(0.1)),
    op("erlang_c", lit(4.0), ref("x")), op("normal_cdf", ref("x")), op("normal_quantile", lit(0.99)),
    op("poisson_quantile", lit(0.999), ref("x")), op("normal_quantile", ref("x")),
]


@pytest.mark.parametrize("machine", MACHINES)
@pytest.mark.parametrize("expr", EDGES, ids=lambda e: e.op)
@pytest.mark.parametrize("x, y", [(2.7, 0.0), (0.0, 0.0), (1.3, 4.2), (-2.7, -0.0)])
def test_edge_cases_give_what_numpy_gives_and_never_raise(expr: ir.Op, x: float, y: float, machine: Any) -> None:
    el = _elaborated({"e": _node("e", expr, ("x", "y"))})
    want = np.asarray(evaluate_many(el, {}, {"x": np.array([x]), "y": np.array([y])}, {"x", "y", "e"})["e"]).reshape(-1)[0]
    as_slots = run(el, ["e"], {"x": 0, "y": 1, "e": 2}, {}, {0: x, 1: y}, machine)[2]
    assert same(as_slots, want), (as_slots, want)
    # with x and y constants, folded when compiled, as the vectorised evaluator takes plain numbers
    with np.errstate(all="ignore"):
        plain = np.asarray(vector._evaluate(expr, {"x": x, "y": y}, vector._OPS)).reshape(-1)[0]
    folded = run(el, ["e"], {"e": 0}, {"x": x, "y": y}, {}, machine)[0]
    assert same(folded, plain), (folded, plain)


def test_a_program_computes_only_the_branch_an_if_takes() -> None:
    """`if` jumps over the branch it does not take: a CALL there is never made."""
    el = _elaborated({"e": _node("e", op("if", op(">", ref("x"), ref("y")), op("log", ref("x")), ref("y")), ("x", "y"))})
    (program,), env = compile_programs(el, [["e"]], {"x": 0, "y": 1, "e": 2}, {}, sim_engine.OPCODES)
    made: list[float] = []
    calls = [lambda env, f=f: made.append(env[0]) or f(env) for f in program.calls]  # type: ignore[func-returns-value]
    env[0], env[1] = 1.0, 2.0
    sim_engine.run_program(program.code, calls, env)
    assert env[2] == 2.0 and made == []
    env[0] = 3.0
    sim_engine.run_program(program.code, calls, env)
    assert env[2] == float(np.log(np.array([3.0]))[0]) and made == [3.0]


def test_a_search_is_not_compiled() -> None:
    search = op("largest", ref("t"), lit(1.0), lit(10.0), op("<", ref("t"), lit(5.0)))
    el = _elaborated({"s": _node("s", search, ("t",))})
    with pytest.raises(Unsupported):
        compile_programs(el, [["s"]], {"t": 0, "s": 1}, {}, sim_engine.OPCODES)


def _node(name: str, expr: ir.Expr, deps: tuple[str, ...] = (), is_input: bool = False) -> ir.Node:
    return ir.Node(name, expr, DIMENSIONLESS, is_input, SPAN, SPAN, None, None, None, None, None, "", name, deps=deps)


def _elaborated(nodes: dict[str, ir.Node]) -> ir.Elaborated:
    leaves = {n: _node(n, lit(0.0), is_input=True) for n in ("x", "y", "t")}
    return ir.Elaborated(nodes={**leaves, **nodes}, order=["x", "y", "t", *nodes])
