"""N+k spares from a failure model (stdlib `deployment`, section Devices and cost): the replicas of a
region that are down at a random moment are a Poisson count of mean (failure rate × repair time),
and the spares are its `spare_coverage` quantile — not a flat N+1."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest
from planc.builtins import poisson_quantile
from planc.pipeline import Compilation, compile_plan
from planc.report.markdown import render_markdown
from planc.report.view import build_document

from .conftest import REPO
from .flagship import FLAGSHIP as FIGURES
from .test_engine_model import plan, values

FLAGSHIP = REPO / "examples" / "100m_dau.plan"


@pytest.fixture(scope="module")
def flagship() -> Compilation:
    return compile_plan(FLAGSHIP)


def test_the_device_mtbf_is_llama_3s_interruption_rate() -> None:
    # The Llama 3 Herd of Models (arXiv:2407.21783) Table 5: 419 unexpected interruptions in a
    # 54-day snapshot on 16,384 H100s: one per 2,111.6 device-days
    c = compile_plan(FLAGSHIP)
    v = values(c)
    assert v["chat.device_mtbf"] == pytest.approx(16384 * 54 * 86400 / 419)
    assert v["chat.device_mtbf"] / (365.25 * 86400) == pytest.approx(5.781, abs=1e-3)


def test_the_flagship_spares_cover_the_replicas_down_99_9_percent_of_the_time(flagship: Compilation) -> None:
    v = values(flagship)
    region = v["chat.failover_replicas"] / v["chat.regions"]
    interval = v["chat.device_mtbf"] / (region * v["chat.replica_devices"])
    down = v["chat.repair_time"] / interval
    assert v["chat.region_failure_interval"] == pytest.approx(interval)
    assert v["chat.replicas_down"] == pytest.approx(down) == pytest.approx(1.235, abs=1e-3)
    assert v["chat.spare_replicas"] == poisson_quantile(0.999, down) == 6
    assert v["chat.n_plus_one_coverage"] == pytest.approx(math.exp(-down) * (1 + down))
    assert v["chat.total_replicas"] == v["chat.failover_replicas"] + 6
    # one fewer spare leaves more than 0.1 % of the time uncovered
    covered = sum(math.exp(-down) * down**k / math.factorial(k) for k in range(6))
    assert covered < 0.999 <= covered + math.exp(-down) * down**6 / math.factorial(6)


def test_the_decision_states_the_failure_model(flagship: Compilation) -> None:
    text = render_markdown(build_document(flagship))
    sentence = next(line for line in text.splitlines() if line.startswith("- Failures:"))
    for piece in ("5.781 years", FIGURES["chat.replicas"], "3.238 h", "1.235", "[6](#q-chat-spare-replicas)", "99.9 %", "65 %"):
        assert piece in sentence, piece


def test_spares_follow_the_fleet_the_repair_time_and_the_regions(compile_text: Callable[[str], Compilation]) -> None:
    small = values(compile_text(plan("chat", 0.6)))
    # a few replicas: so rarely down that at most one spare covers 99.9 % of the time
    assert small["d.replicas_down"] < 0.01 and small["d.spare_replicas"] <= 1
    assert small["d.spare_replicas"] == poisson_quantile(0.999, small["d.replicas_down"])
    slow = values(compile_text(plan("chat", 0.6, "\n  repair_time = 30 days")))
    assert slow["d.spare_replicas"] > small["d.spare_replicas"]
    two = values(compile_text(plan("chat", 0.6, "\n  regions = 2")))
    assert two["d.region_replicas"] == pytest.approx(two["d.failover_replicas"] / 2)
    assert two["d.total_replicas"] == two["d.failover_replicas"] + 2 * two["d.spare_replicas"]


def test_a_plan_may_still_set_n_plus_one(compile_text: Callable[[str], Compilation], tmp_path: Path) -> None:
    text = FLAGSHIP.read_text(encoding="utf-8").replace("deployment chat {", "deployment chat {\n  spare_replicas = 1", 1)
    assert "spare_replicas = 1" in text
    v = values(compile_text(text, "n_plus_one.plan"))
    assert v["chat.spare_replicas"] == 1 and v["chat.total_replicas"] == v["chat.failover_replicas"] + 1


def test_a_coverage_outside_zero_and_one_is_an_error(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(plan("chat", 0.6, "\n  spare_coverage = 1"))
    assert not c.ok and any("coverage" in d.message for d in c.diagnostics), [d.message for d in c.diagnostics]


def test_a_device_that_never_runs_is_an_error_at_the_plans_line(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(plan("chat", 0.6, "\n  device_mtbf = 0 years"))
    errors = [d for d in c.diagnostics if d.is_error]
    assert not c.ok and [d.code for d in errors] == ["E0404"]
    assert errors[0].primary is not None and errors[0].primary.span.text == "0 years"
