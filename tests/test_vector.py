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
