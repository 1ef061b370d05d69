"""Inputs given as ranges: the plan runs at the midpoint, and intervals reach the results and checks."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import pytest
from planc.pipeline import Compilation
from planc.report.markdown import render_markdown
from planc.report.view import build_document

LINEAR = """
kind k {
  input x: count
  derive y: count = 2 * x + 1
  derive bowl: count = (x - 2) ^ 2
}
k a { x = 1 .. 3 }
check a.y <= 6 "y stays small"
summary a.y, a.bowl
"""


def test_midpoint_and_monotone_interval(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(LINEAR)
    assert c.ok and c.lowered is not None and c.uncertainty is not None
    assert c.lowered.values["a.x"] == 2 and c.lowered.values["a.y"] == 5  # the plan runs at the midpoint
    y = c.uncertainty.intervals["a.y"]
    assert (y.low, y.high, y.monotone) == (3.0, 7.0, True)
    assert c.uncertainty.summary[0] == y


def test_non_monotone_quantity_is_sampled(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(LINEAR)
    assert c.uncertainty is not None
    bowl = c.uncertainty.intervals["a.bowl"]
    # (x - 2)^2 on [1, 3]: largest at both ends, smallest inside, where the corners would say 1 .. 1
    assert not bowl.monotone and bowl.high == pytest.approx(1.0) and bowl.low < 1e-6


def test_check_share_over_the_range(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(LINEAR)
    assert c.uncertainty is not None and c.uncertainty.points == 1024
    # 2x + 1 <= 6 exactly for x <= 2.5: three quarters of [1, 3]
    assert c.uncertainty.checks[0] == pytest.approx(0.75, abs=1e-3)


def test_report_shows_ranges(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(LINEAR)
    text = render_markdown(build_document(c))
    assert "## Uncertainty" in text
    assert "| `a.y` | 5 | 3 – 7 \\(monotone: from the corners\\) |" in text
    assert "holds on 75 %" in text


def test_physics_interval_matches_the_plan_at_each_end(compile_text: Callable[[str], Compilation]) -> None:
    # TPOT falls as the achieved bandwidth fraction rises: its interval over mbu = 0.6 .. 0.8 is the
    # TPOT of the same plan compiled with mbu = 0.8 and with mbu = 0.6
    plan = """
import "models/llama-3.1-8b"
import "hardware/h100-sxm"
traffic t {{ daily_active_users = 1 M users; requests_per_user = 10 requests/user/day; peak_factor = 2
  prompt_tokens = 1000 tokens; output_tokens = 250 tokens }}
deployment d {{ model = llama_3_1_8b; hardware = h100_sxm; traffic = t; batch = 64; context = 4096 tokens
  mbu = {mbu} }}
summary d.tpot
"""
    ranged = compile_text(plan.format(mbu="0.6 .. 0.8"))
    assert ranged.uncertainty is not None
    tpot = ranged.uncertainty.intervals["d.tpot"]
    ends = [compile_text(plan.format(mbu=m), name=f"m{m}.plan") for m in ("0.8", "0.6")]
    expected = [float(e.lowered.values["d.tpot"]) for e in ends]  # type: ignore[union-attr]
    assert tpot.monotone
    assert (tpot.low, tpot.high) == pytest.approx(expected, rel=1e-12)
    middle = compile_text(plan.format(mbu="0.7"), name="m07.plan")
    assert ranged.lowered.values["d.tpot"] == middle.lowered.values["d.tpot"]  # type: ignore[union-attr]
    assert ranged.lowered.values["d.mbu"] == Fraction(7, 10)  # type: ignore[union-attr]


def test_an_override_drops_the_range(compile_text: Callable[[str], Compilation]) -> None:
    # a scenario that sets a ranged input to one number computes with that number
    c = compile_text(LINEAR + 'scenario "x is 3" { a.x = 3 }\n')
    (table,) = c.answers
    assert table.rows[1][1][0] == 7  # a.y at x = 3


def test_plans_without_ranges_have_no_uncertainty(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text("let a = 2\nsummary a\n")
    assert c.ok and c.uncertainty is None
    assert "## Uncertainty" not in render_markdown(build_document(c))
