"""`plan simulate`'s iteration timer (`replay._IterationTimer`): the plan's own `iteration_time` at
each simulated iteration's shape, computed by programs of the simulator's register machine (`scalar.py`) group by group
with the searches the shape cannot move taken from the plan, and still, bit for bit, the value the
formula gives at that shape alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from planc.pipeline import compile_plan
from planc.replay import _IterationTimer
from planc.semantics import ir
from planc.vector import evaluate_many

EXAMPLE = Path(__file__).parent.parent / "examples" / "100m_dau.plan"
LENGTHS = (257, 8194, 8193, 8194)  # max_num_seqs 256, a window of 65,536 tokens, a token budget of 8,192


@pytest.fixture(scope="module")
def lowered():  # type: ignore[no-untyped-def]
    c = compile_plan(EXAMPLE)
    assert c.lowered is not None
    return c.lowered


def alone(lowered, timer: _IterationTimer, key: tuple[int, int, int, int]) -> float:  # type: ignore[no-untyped-def]
    """The formula at one shape, nothing settled, nothing else in the pass: as the timer did first."""
    fixed = dict(zip(timer.inputs, (np.array([float(key[0])]), np.array([key[1] * 8.0]), np.array([float(key[2])]),
                                    np.array([key[2] / timer.prompt_tokens]), np.array([key[3] * 8.0]))))
    out = evaluate_many(lowered.elaborated, lowered.values, fixed, timer.only)
    return float(np.asarray(out[timer.target]).reshape(-1)[0])


def test_the_timer_gives_the_formula_at_each_shape(lowered) -> None:  # type: ignore[no-untyped-def]
    timer = _IterationTimer(lowered, "chat", 1000.0)
    assert timer.groups  # the compiled programs, not the vectorised fallback
    shapes = [(40, 1000.0, 0, 0.0), (40, 1001.0, 0, 0.0), (41, 1200.0, 0, 0.0), (3, 64.0, 0, 0.0),
              (40, 1000.0, 1500, 700.0), (120, 5000.0, 2048, 1024.0), (1, 0.0, 8192, 4096.0),
              # parts of the shape seen before, in new combinations: their groups' kept values
              (40, 1000.0, 2048, 1024.0), (120, 5000.0, 1500, 700.0), (40, 1000.0, 1500, 1024.0),
              (3, 64.0, 8192, 700.0), (41, 1200.0, 0, 0.0)]
    for d, c, p, pc in shapes:
        key = (d, round(c / 8), p, round(pc / 8))
        assert timer(d, c, p, pc) == alone(lowered, timer, key), key  # bit for bit
    assert timer.evaluations == len(shapes) - 2  # two decode-only shapes seen before (1001 tokens is 1000 to 8) were kept whole
    kept = {(40, 125), (41, 150), (3, 8)}  # prefill shapes are not kept whole
    assert set(timer.shaped.memo) == {d << 32 | c for d, c in kept}


def test_the_groups_split_the_moved_nodes_by_the_parts_of_the_shape_they_read(lowered) -> None:  # type: ignore[no-untyped-def]
    timer = _IterationTimer(lowered, "chat", 1000.0)
    el = lowered.elaborated
    computed = [n for n in el.order if n in timer.pass_nodes and n not in timer.constants and n not in timer.inputs]
    assert len(computed) == sum(g.stop - g.start for g in timer.groups) >= 30
    assert [g.start for g in timer.groups[1:]] == [g.stop for g in timer.groups[:-1]]  # contiguous, in order
    assert timer.groups[-1].memo is None and all(g.memo is not None for g in timer.groups[:-1])

    def reads(g) -> tuple[int, ...]:  # type: ignore[no-untyped-def]
        return tuple(g.parts)  # which parts of the key the group is kept by

    group_of = {n: k for k, g in enumerate(timer.groups) for n in computed if g.start <= timer.slots[n] < g.stop}
    assert len(group_of) == len(computed)
    assert reads(timer.groups[-1]) == (0, 1, 2, 3) and group_of["chat.iteration_time"] == len(timer.groups) - 1
    assert reads(timer.groups[group_of["chat.decode_attention_time"]]) == (0, 1)  # decodes and their context
    assert reads(timer.groups[group_of["chat.gemm_time"]]) == (0, 2)  # decodes and prefill tokens: the GEMMs' rows
    assert reads(timer.groups[group_of["chat.chunk_attention_time"]]) == (2, 3)  # prefill tokens and their context
    assert len(timer.groups) == 4  # no group's parts inside another's: a node that reads the decodes alone
    assert group_of["chat.decode_positions"] == group_of["chat.decode_attention_time"]  # joins the first that has them
    parts_of = {n: {(0, 1, 2, 2, 3)[i] for i, name in enumerate(timer.inputs) if n in ir.downstream(el, name)}
                for n in computed}
    for node in computed:  # kept by parts that include all it reads, after every node it reads
        assert parts_of[node] <= set(reads(timer.groups[group_of[node]])), node
        for dep in el.nodes[node].deps:
            assert dep in timer.constants or dep in timer.inputs or group_of[dep] <= group_of[node], (node, dep)


def test_each_group_is_computed_only_for_parts_it_has_not_seen(lowered, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    timer = _IterationTimer(lowered, "chat", 1000.0)
    timer(40, 1000.0, 1500, 700.0)
    sizes = [None if g.memo is None else len(g.memo) for g in timer.groups]
    assert sizes[:-1] == [1] * (len(sizes) - 1)
    timer(40, 1000.0, 1500, 720.0)  # only the prefill context moved (88 -> 90 eighths): its group gains a key
    grown = [tuple(g.parts) for g, before in zip(timer.groups, sizes) if g.memo is not None and len(g.memo) > before]
    assert grown == [(2, 3)]
    assert timer.evaluations == 2
    # a group's memory is bounded: past GROUP_MEMO keys it starts again, and the values stay right
    monkeypatch.setattr(_IterationTimer, "GROUP_MEMO", 2)
    timer = _IterationTimer(lowered, "chat", 1000.0)
    for pc in range(0, 400, 8):
        key = (40, 125, 1500, pc // 8)
        assert timer(40, 1000.0, 1500, float(pc)) == alone(lowered, timer, key)
    assert all(g.memo is None or len(g.memo) <= 2 for g in timer.groups)


def test_the_simulator_calls_the_compiled_timer_itself(lowered) -> None:  # type: ignore[no-untyped-def]
    from planc.simulate import engine_module

    timer = _IterationTimer(lowered, "chat", 1000.0)
    assert timer.function() is timer.shaped and type(timer.shaped) is engine_module().ShapeTimer
    assert timer.function()(40, 1000.0, 1500, 700.0) == timer(40, 1000.0, 1500, 700.0)
    with pytest.raises(ValueError, match="out of range"):
        timer(1 << 32, 0.0, 0, 0.0)


@pytest.mark.parametrize(("lengths", "seed", "decodes", "tokens", "prefills", "count"), [
    ((0, 0, 0, 0), 7, 120, 2048, 0.3, 3000),  # every group kept key by key
    ("rows", 8, 60, 9000, 0.5, 2000),  # the GEMMs' group in rows, prompts beyond the budget too
])
def test_the_compiled_and_the_pure_timer_agree_bit_for_bit(lowered, lengths, seed: int, decodes: int, tokens: int,  # type: ignore[no-untyped-def]
                                                           prefills: float, count: int) -> None:
    from planc import sim_engine

    timer = _IterationTimer(lowered, "chat", 1000.0, LENGTHS if lengths == "rows" else lengths)
    groups = [sim_engine.ShapeGroup(g.start, g.stop, list(g.code), list(g.calls), list(g.parts), g.memo is not None,
                                    list(g.exports), g.axis, g.tabulate) for g in timer.groups]
    pure = sim_engine.ShapeTimer(groups, list(timer.shaped.env), timer.slots[timer.target], timer.prompt_tokens, 50,
                                 (timer.lengths[0], timer.lengths[1]))
    rng = np.random.default_rng(seed)
    shapes = zip(rng.integers(1, decodes, count).tolist(), rng.uniform(0, 9000, count).tolist(),
                 (rng.integers(0, tokens, count) * (rng.random(count) < prefills)).tolist(), rng.uniform(0, 4000, count).tolist())
    for d, c, p, pc in shapes:
        pc = pc if p else 0.0
        assert timer(d, c, p, pc) == pure(d, c, p, pc), (d, c, p, pc)
    assert timer.evaluations == pure.evaluations


def test_without_the_compiled_programs_each_shape_is_one_vectorised_pass(lowered, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import planc.replay as replay
    from planc.scalar import Unsupported

    def refuse(*args):  # type: ignore[no-untyped-def]
        raise Unsupported("as for a formula with a search the shape moves")

    monkeypatch.setattr(replay, "compile_programs", refuse)
    timer = _IterationTimer(lowered, "chat", 1000.0)
    assert timer.groups == [] and timer.function() is timer
    for d, c, p, pc in [(40, 1000.0, 0, 0.0), (120, 5000.0, 2048, 1024.0)]:
        key = (d, round(c / 8), p, round(pc / 8))
        assert timer(d, c, p, pc) == alone(lowered, timer, key), key


def test_the_running_batch_search_is_settled_not_solved_again(lowered) -> None:  # type: ignore[no-untyped-def]
    timer = _IterationTimer(lowered, "chat", 1000.0)
    el = lowered.elaborated
    assert "chat.batch" in timer.only and ir.is_search(el.nodes["chat.batch"].expr)
    assert set(timer.settled) == {"chat.batch"}
    assert float(timer.settled["chat.batch"][0]) == float(lowered.values["chat.batch"])
    # and a pass computes only what the shape moves, reading the rest as the plan's values
    assert len(timer.pass_nodes) < len(timer.only) / 4
    assert timer.constants["chat.batch"] is timer.settled["chat.batch"]



def test_a_costly_group_is_tabulated_along_its_longest_part_and_gives_the_formula_bit_for_bit(lowered) -> None:  # type: ignore[no-untyped-def]
    """With the engine's ranges known, the GEMMs' group (25 nodes, read by the decodes and the
    prefill tokens) keeps whole rows: for each number of decodes, its exports at every prefill
    token count up to the budget, one vectorised pass. A prompt beyond the budget (no chunking)
    is computed by the group's program; the small groups keep their values key by key."""
    timer = _IterationTimer(lowered, "chat", 1000.0, LENGTHS)
    axes = {tuple(g.parts): g.axis for g in timer.groups}
    assert axes == {(0, 1): -1, (0, 2): 2, (2, 3): -1, (0, 1, 2, 3): -1}
    gemm = next(g for g in timer.groups if g.axis >= 0)
    assert len(gemm.exports) < gemm.stop - gemm.start  # only what later groups read is kept
    shapes = [(40, 1000.0, 1500, 700.0), (40, 1000.0, 1, 0.0), (40, 1000.0, 8192, 4000.0), (3, 64.0, 1500, 700.0),
              (40, 1000.0, 9000, 4500.0), (40, 1000.0, 0, 0.0), (120, 5000.0, 2048, 1024.0), (3, 64.0, 7, 3.0)]
    for d, c, p, pc in shapes:
        key = (d, round(c / 8), p, round(pc / 8))
        assert timer(d, c, p, pc) == alone(lowered, timer, key), key  # bit for bit, on the row and beyond it
    assert sorted(gemm.rows) == [3, 40, 120]  # one row per number of decodes, whatever the prefill
    # a decode-only time is kept in the row of its decodes, by its context (no dict, no packed key)
    assert timer.shaped.memo == {} and timer.shaped.kept[40][125] == alone(lowered, timer, (40, 125, 0, 0))
    assert all(len(column) == LENGTHS[2] for row in gemm.rows.values() for column in row)


def test_decode_only_rows_stay_within_their_room_and_the_rest_go_to_the_dict(lowered, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The rows of decode-only times take at most `KEPT_ENTRIES` slots (a long window times many
    numbers of decodes would otherwise grow without bound); past that, the times are kept by
    their packed keys, and every time is the formula's, bit for bit."""
    from planc import sim_engine

    monkeypatch.setattr(sim_engine.ShapeTimer, "KEPT_ENTRIES", 2 * LENGTHS[1])  # room for two rows
    timer = _IterationTimer(lowered, "chat", 1000.0, LENGTHS)
    groups = [sim_engine.ShapeGroup(g.start, g.stop, list(g.code), list(g.calls), list(g.parts), g.memo is not None,
                                    list(g.exports), g.axis, g.tabulate) for g in timer.groups]
    pure = sim_engine.ShapeTimer(groups, list(timer.shaped.env), timer.slots[timer.target], timer.prompt_tokens, 50,
                                 (LENGTHS[0], LENGTHS[1]))
    for d, c in [(40, 1000.0), (41, 1200.0), (42, 800.0), (40, 1008.0), (43, 64.0)]:
        assert pure(d, c, 0, 0.0) == alone(lowered, timer, (d, round(c / 8), 0, 0)), (d, c)
    assert [d for d, row in enumerate(pure.kept) if row] == [40, 41]
    assert set(pure.memo) == {42 << 32 | 100, 43 << 32 | 8} and pure.kept_room == 0
