"""The vectorised evaluator (`planc.vector`) against the exact one, and its relaxed mode."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from planc.pipeline import Compilation, compile_plan
from planc.semantics.units import Dim
from planc.vector import evaluate_many

from .conftest import REPO


@pytest.mark.parametrize("example", ["100m_dau", "recommender", "mla_deepseek_v3"])
def test_every_node_agrees_with_the_exact_evaluation(example: str) -> None:
    c = compile_plan(REPO / "examples" / f"{example}.plan")
    assert c.lowered is not None
    el, exact = c.lowered.elaborated, c.lowered.values
    # every input "varies" (over one point: its own value), so every node is recomputed
    inputs = [n for n, node in el.nodes.items() if node.is_input and isinstance(node.dim, Dim) and n in exact]
    vals = evaluate_many(el, exact, {n: np.array([float(exact[n])]) for n in inputs})
    compared = 0
    for node_id, node in el.nodes.items():
        if node_id in exact and isinstance(node.dim, Dim) and not node.is_input:
            got = float(np.asarray(vals[node_id]).reshape(-1)[0])
            assert got == pytest.approx(float(exact[node_id]), rel=1e-9, abs=1e-12), node_id
            compared += 1
    assert compared >= 25  # the smallest example, the recommender, has 30 derived quantities


def test_relaxed_mode_takes_ceil_and_floor_as_their_argument(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text("let x = 2.5\nlet up = ceil(x) * 2\nlet down = floor(x) + 1\nsummary up, down\n")
    assert c.ok, c.diagnostics
    el, exact = c.lowered.elaborated, c.lowered.values
    points = {"x": np.array([2.5, 3.2])}
    strict = evaluate_many(el, exact, points)
    relaxed = evaluate_many(el, exact, points, relaxed=True)
    assert list(strict["up"]) == [6.0, 8.0] and list(strict["down"]) == [3.0, 4.0]
    assert list(relaxed["up"]) == [5.0, 6.4] and list(relaxed["down"]) == pytest.approx([3.5, 4.2])
    assert math.isclose(float(exact["up"]), 6.0)  # the plan itself is unchanged


NESTED = '''
kind box "a toy with a search inside a search's trials" {
  input n: count = largest(n, 1, 100, k >= 1 and (n <= 30 or (n >= 50 and n <= 60))) "items"
  input k: count = largest(k, 1, 64, k * n <= room) "items per item"
  input room: count = 600 "room"
}
box b { }
'''


def test_a_search_at_one_point_answers_as_the_bisection_at_many(compile_text: Callable[[str], Compilation]) -> None:
    """At one point a search evaluates its whole range in one pass, then bisects over the outcomes;
    at several it bisects pass by pass. Both take the same steps, so they give the same answer,
    even where the condition is not monotone (it holds to 30, then again from 50 to 60), and with
    a search (`k`) among the trials of another."""
    c = compile_text(NESTED)
    assert c.ok, c.diagnostics
    el, exact = c.lowered.elaborated, c.lowered.values
    # the bisection's steps: 1 holds, 100 fails, 50 holds, 75, 62 fail, 56, 59, 60 hold, 61 fails
    assert exact["b.n"] == 60 and exact["b.k"] == 10
    answers = {}
    for room in (600.0, 40.0, 1.0):  # at 40, k has no value beyond n = 40; at 1, only n = 1 has one
        one = evaluate_many(el, exact, {"b.room": np.array([room])})
        many = evaluate_many(el, exact, {"b.room": np.array([room, room, 2 * room])})
        for node in ("b.n", "b.k"):
            a, b = np.asarray(one[node]).reshape(-1)[0], np.asarray(many[node]).reshape(-1)[0]
            assert (math.isnan(a) and math.isnan(b)) or a == b, (room, node, a, b)
            answers[room, node] = a
    assert answers[600.0, "b.n"] == 60 and answers[600.0, "b.k"] == 10
    assert answers[40.0, "b.n"] == 30  # 1, 25, 28, 29, 30 hold; 100, 50, 37, 31 fail
    assert answers[1.0, "b.n"] == 1 and math.isnan(answers[1.0, "b.k"])  # 60 items leave no room for one each


def test_a_search_runs_once_per_distinct_point_and_answers_as_on_every_point(monkeypatch: pytest.MonkeyPatch) -> None:
    """The running batch's search reads the max_num_seqs cap but not the utilisation target (only
    the replicas do): over a grid of both it runs on the three distinct caps, not the nine points,
    and every node — the answer, its trial values, what follows from them — is what the search on
    every point gives."""
    from planc import vector

    c = compile_plan(REPO / "examples" / "100m_dau.plan")
    assert c.lowered is not None
    el, exact = c.lowered.elaborated, c.lowered.values
    util, caps = np.meshgrid([0.7, 0.8, 0.9], [64.0, 96.0, 1024.0], indexing="ij")
    grid = {"chat.utilization_target": util.ravel(), "chat.max_num_seqs": caps.ravel()}
    searched: list[int] = []
    largest = vector._largest

    def counting(elaborated, node_id, values, ops, distinct=False, **kw):  # type: ignore[no-untyped-def]
        if distinct or node_id == "chat.batch":
            searched.append(np.size(values["chat.max_num_seqs"]))
        return largest(elaborated, node_id, values, ops, distinct, **kw)

    monkeypatch.setattr(vector, "_largest", counting)
    grouped = evaluate_many(el, exact, grid)
    assert 3 in searched  # the batch's search ran on the three caps
    monkeypatch.setattr(vector, "_search_once_per_group", lambda *args: None)
    every = evaluate_many(el, exact, grid)
    assert set(grouped) == set(every)
    for node in every:
        a, b = np.broadcast_to(grouped[node], (9,)), np.broadcast_to(every[node], (9,))
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), node
    assert len(set(np.asarray(grouped["chat.batch"]).tolist())) == 3  # one answer per cap
    assert len(set(np.asarray(grouped["chat.devices"]).tolist())) > 3  # the replicas read the target
    # what the search does not set is left as it was, even what varies and was evaluated before it
    monkeypatch.undo()
    values = {k: (np.array(v, copy=True) if np.ndim(v) else v) for k, v in every.items()}
    with np.errstate(all="ignore"):  # as evaluate_many calls it: an `if` computes both branches (0/0 in the one not taken)
        answer = vector._largest(el, "chat.batch", values, vector._OPS)
    assert np.array_equal(values["chat.utilization_target"], grid["chat.utilization_target"])
    assert np.array_equal(values["chat.devices"], every["chat.devices"])
    assert np.array_equal(np.broadcast_to(answer, (9,)), np.broadcast_to(every["chat.batch"], (9,)))


TOY_RANGE = '''\
  input cap: count = 100 "the range's upper end"
  input budget: s = 100 ms "what an item may cost"
  input slope: s = 0 ms "what the upper end adds to the cost"
  input n: count = largest(n, 1, cap, cost <= budget) "items the budget allows"
'''
"""The inputs of the toy searches below: a range, a budget, and a cost that its upper end can raise."""

TOY_SEARCH = """
kind box "a toy" {
""" + TOY_RANGE + """  derive cost: s = n * 1 ms + cap * slope "time for n items"
  input extra: s = 0 ms "read after the search only"
  derive after: s = cost * 2 + extra "read after the search"
}
box b { }
"""


@pytest.mark.parametrize("slope", [0.4, -0.4, 0.0])
def test_a_guided_search_answers_as_the_bisection_on_every_point(
        compile_text: Callable[[str], Compilation], monkeypatch: pytest.MonkeyPatch, slope: float) -> None:
    """A grid over the range's upper end (which the condition reads too: `slope`) and a budget:
    the guided search (`vector._guided`) gives every node — the answers, the trial values, what
    follows — as the plain bisection does, and as the closed form says. With a positive slope
    the points of a smaller upper end have larger answers than their group's widest (the search
    gallops up from the guess), with a negative one smaller (it bisects below the guess)."""
    from planc import vector

    c = compile_text(TOY_SEARCH)
    assert c.lowered is not None
    el, exact = c.lowered.elaborated, c.lowered.values
    # budgets a quarter of a millisecond off the whole ones, so that no item count meets one exactly
    # and a value only what follows the search reads, so that the search runs once per two points
    caps, budgets, extra = np.meshgrid(np.arange(1.0, 301.0), [0.05025, 0.10025, 0.20025, 0.40025], [0.0, 0.001],
                                       indexing="ij")
    grid = {"b.cap": caps.ravel(), "b.budget": budgets.ravel(), "b.slope": np.full(caps.size, slope / 1000),
            "b.extra": extra.ravel()}
    walked: list[str] = []

    def counted(name: str) -> Callable[..., object]:
        inner = getattr(vector, name)
        return lambda *args: walked.append(name) or inner(*args)

    for name in ("_multisect", "_gallop", "_bisect"):
        monkeypatch.setattr(vector, name, counted(name))
    guided = evaluate_many(el, exact, grid)
    assert "_multisect" in walked  # the groups' own search
    assert ("_gallop" in walked) == (slope > 0)  # up from the guesses
    assert ("_bisect" in walked) == (slope < 0)  # below them
    monkeypatch.setattr(vector, "_guided", lambda *args: None)
    plain = evaluate_many(el, exact, grid)
    for node in ("b.n", "b.cost", "b.after"):
        a, b = np.broadcast_to(guided[node], caps.size), np.broadcast_to(plain[node], caps.size)
        assert np.array_equal(a, b, equal_nan=True), node
    # a pass that keeps only what follows the search still reads the trial values it needs
    monkeypatch.undo()
    kept = evaluate_many(el, exact, grid, keep={"b.after"})
    assert set(kept) == {"b.after"} and np.array_equal(kept["b.after"], plain["b.after"], equal_nan=True)
    with np.errstate(invalid="ignore"):
        closed = np.floor((grid["b.budget"] - grid["b.cap"] * grid["b.slope"]) / 0.001 + 1e-9)
    want = np.where(closed >= 1, np.minimum(closed, grid["b.cap"]), np.nan)
    assert np.array_equal(np.asarray(guided["b.n"]), want, equal_nan=True)
    assert np.isnan(want).any() == (slope > 0)  # a cost above the budget at one item: no answer


def test_groups_are_those_of_numpy_unique() -> None:
    from planc.vector import _groups

    rng = np.random.default_rng(7)
    rows = [rng.integers(0, 5, 500).astype(float), rng.choice([0.1, 0.25, 3.0], 500), np.full(500, 2.0), 4.0]
    first, inverse = _groups(rows, 500)
    _, want_first, want_inverse = np.unique(np.stack(rows[:3]), axis=1, return_index=True, return_inverse=True)
    # the same partition of the points, each group's first point the same
    assert sorted(first.tolist()) == sorted(want_first.tolist())
    assert np.array_equal(first[inverse], want_first[want_inverse.reshape(-1)])


def test_a_large_grid_keeps_only_what_the_caller_reads() -> None:
    c = compile_plan(REPO / "examples" / "100m_dau.plan")
    assert c.lowered is not None
    el, exact = c.lowered.elaborated, c.lowered.values
    from planc.vector import CHUNK

    targets = np.linspace(0.5, 0.95, 2 * CHUNK + 1)  # more than two chunks
    kept = evaluate_many(el, exact, {"chat.utilization_target": targets}, keep={"chat.batch", "chat.devices"})
    assert set(kept) == {"chat.batch", "chat.devices"}
    alone = evaluate_many(el, exact, {"chat.utilization_target": targets[[0, CHUNK, -1]]})
    assert np.array_equal(np.broadcast_to(kept["chat.devices"], targets.shape)[[0, CHUNK, -1]], alone["chat.devices"])
    assert float(np.broadcast_to(kept["chat.batch"], targets.shape)[-1]) == float(exact["chat.batch"])


ANSWERED = """
kind box "a toy whose search's trials hold the plan's quantities at its answer" {
""" + TOY_RANGE + """  derive raw: s = n * 1 ms "read by the cost only"
  derive cost: s = if n >= 1 then raw + cap * slope else 0 ms "nothing where no item fits"
  derive after: s = cost * 2 "read after the search"
}
box b { }
"""


@pytest.mark.parametrize("keep", [None, {"b.after"}, {"b.cost", "b.raw"}])
def test_the_plans_quantities_at_a_search_answer_are_read_off_its_trials(
        compile_text: Callable[[str], Compilation], monkeypatch: pytest.MonkeyPatch, keep: set[str] | None) -> None:
    """`b.raw` and `b.cost` are what the search's trials `b@n.raw` and `b@n.cost` hold at its
    answer (`ir.search_aliases`), so the pass takes them from there; where there is no answer
    (the trials were left at 1 item, whose cost is over the budget) it computes them from their
    formulas, which give 0 ms there, not the trial's cost. Every value is what computing each
    node a second time gives, whether the pass keeps them all, only what follows (`b.raw` is
    then computed at the unanswered points alone), or the pairs themselves."""
    from planc import vector
    from planc.semantics import ir

    c = compile_text(ANSWERED)
    assert c.lowered is not None
    el, exact = c.lowered.elaborated, c.lowered.values
    assert ir.search_aliases(el, "b.n") == {"b.raw": "b@n.raw", "b.cost": "b@n.cost"}
    caps, budgets = np.meshgrid(np.arange(1.0, 201.0), [0.05025, 0.10025], indexing="ij")
    grid = {"b.cap": caps.ravel(), "b.budget": budgets.ravel(), "b.slope": np.full(caps.size, 0.0004)}
    taken: list[str] = []
    take = vector.Answered.take
    monkeypatch.setattr(vector.Answered, "take", lambda self, node_id, *a: taken.append(node_id) or take(self, node_id, *a))
    read = evaluate_many(el, exact, grid, keep=keep)
    assert {"b.raw", "b.cost"} <= set(taken)
    monkeypatch.setattr(ir, "search_aliases", lambda *args: {})
    computed = evaluate_many(el, exact, grid, keep=keep)
    assert set(read) == set(computed)
    for node in computed:
        a, b = np.broadcast_to(read[node], caps.size), np.broadcast_to(computed[node], caps.size)
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), node
    after = np.asarray(computed.get("b.after", computed.get("b.cost")))
    answers = np.asarray(evaluate_many(el, exact, grid)["b.n"])
    assert np.isnan(answers).any() and not np.isnan(answers).all()
    assert (after[np.isnan(answers)] == 0).all()  # the formula's value where no item fits


@pytest.mark.parametrize("example", ["100m_dau", "mla_deepseek_v3"])
def test_the_exact_lowering_takes_the_same_values_off_the_trials(example: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`lower` too takes the plan's quantities at a search's answer from its trials: every value
    is the one evaluating each node a second time gives, exactly (rationals compared as such)."""
    from planc.diagnostics import Sink
    from planc.lower import lower
    from planc.semantics import ir

    c = compile_plan(REPO / "examples" / f"{example}.plan")
    assert c.lowered is not None
    el = c.lowered.elaborated
    searches = [n for n in el.order if ir.is_search(el.nodes[n].expr)]
    assert any(set(ir.search_aliases(el, s)) & set(c.lowered.values) for s in searches)
    taken = lower(el, Sink()).values
    monkeypatch.setattr(ir, "search_aliases", lambda *args: {})
    computed = lower(el, Sink()).values
    assert taken == computed
