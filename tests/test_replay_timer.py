"""`plan simulate`'s iteration timer (`replay._IterationTimer`): the plan's own `iteration_time` at
each simulated iteration's shape, computed a block of shapes at a time and with the searches the
shape cannot move taken from the plan, and still the value the formula gives at that shape alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from planc.pipeline import compile_plan
from planc.replay import _IterationTimer
from planc.semantics import ir
from planc.vector import evaluate_many

EXAMPLE = Path(__file__).parent.parent / "examples" / "100m_dau.plan"


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
    shapes = [(40, 1000.0, 0, 0.0), (40, 1001.0, 0, 0.0), (41, 1200.0, 0, 0.0), (3, 64.0, 0, 0.0),
              (40, 1000.0, 1500, 700.0), (120, 5000.0, 2048, 1024.0), (1, 0.0, 8192, 4096.0)]
    for d, c, p, pc in shapes:
        key = (d, round(c / 8), p, round(pc / 8))
        assert timer(d, c, p, pc) == alone(lowered, timer, key), key
    # and every shape evaluated ahead in a decode-only block is the formula there too
    ahead = [k for k in timer.memo if k[2] == 0 and k not in {(40, 125, 0, 0), (41, 150, 0, 0), (3, 8, 0, 0)}]
    assert len(ahead) > 1000
    for key in ahead[::97]:
        assert timer.memo[key] == alone(lowered, timer, key), key


def test_a_decode_only_miss_evaluates_the_shapes_around_it_in_one_pass(lowered, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import planc.replay as replay

    passes: list[int] = []
    real = replay.evaluate_many

    def counted(elaborated, base, fixed, only=None):  # type: ignore[no-untyped-def]
        passes.append(max(np.size(v) for v in fixed.values()))
        return real(elaborated, base, fixed, only)

    monkeypatch.setattr(replay, "evaluate_many", counted)
    timer = _IterationTimer(lowered, "chat", 1000.0)
    for step in range(200):  # a replica decoding 50 sequences, one token more each step
        timer(50, 1000.0 + step, 0, 0.0)
    assert len(passes) == 1 and passes[0] > 500
    timer(50, 1000.0, 700, 350.0)  # a prefill: that shape alone
    assert passes[1:] == [1]


def test_the_running_batch_search_is_settled_not_solved_again(lowered) -> None:  # type: ignore[no-untyped-def]
    timer = _IterationTimer(lowered, "chat", 1000.0)
    el = lowered.elaborated
    assert "chat.batch" in timer.only and ir.is_search(el.nodes["chat.batch"].expr)
    assert set(timer.settled) == {"chat.batch"}
    assert float(timer.settled["chat.batch"][0]) == float(lowered.values["chat.batch"])
    # and a pass computes only what the shape moves, reading the rest as the plan's values
    assert len(timer.pass_nodes) < len(timer.only) / 4
    assert timer.constants["chat.batch"] is timer.settled["chat.batch"]
