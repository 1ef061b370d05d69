"""The analytic engine model against the simulator: one check, shared by the one-class workloads
(test_engine_model.py) and the request-class mixes (test_request_classes.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from planc.pipeline import compile_plan
from planc.replay import Replay, replay

TTFT_P50, TTFT_P99 = 0.15, 0.15
"""Relative tolerances of the analytic TTFT median and tail against the simulated ones, for a
deployment's requests as a whole (issue 15's target)."""

CLASS_TTFT_P50, CLASS_TTFT_P99 = 0.20, 0.30
"""The same for one class of a mix, looser: the model serves the mix's prompts as one lognormal of
its moments, so the iteration a chat request arrives in is a blend of chat's and the documents'
(docs/physics.md §7.8)."""


def replay_agrees(tmp_path: Path, text: str, duration: float = 1000, seeds: tuple[int, ...] = (3, 4, 5)) -> Replay:
    """Compile `text`, serve deployment `d`'s peak on two simulated replicas for `duration` s with each
    of `seeds`, and assert that they are stable (they complete what arrives, with no preemption) and
    that the analytic running batch and TPOT are within 15 % of the simulated ones (their mean over
    the seeds), its TTFT p50 and p99 within `TTFT_P50`, `TTFT_P99`. Several long runs, because the
    simulated p99 of one short run is itself uncertain: in one 200-s run a long-prompt workload's
    p99 TTFT moves by ±20 % from seed to seed (its 90 % interval), more than the tolerance. Returns
    the first seed's run."""
    path = tmp_path / "p.plan"
    path.write_text(text, encoding="utf-8")
    c = compile_plan(path)
    assert c.lowered is not None
    runs = [replay(c.lowered, "d", duration=duration, replicas=2, seed=seed) for seed in seeds]
    for run in runs:
        # stable: the replicas complete what arrives (those still running at the end are in flight, not stuck)
        assert run.simulated["completed_per_s"] == pytest.approx(run.rate, rel=0.06) and run.simulated["preemptions_per_request"] == 0
    sim = {f: sum(run.simulated[f] for run in runs) / len(runs) for f in ("mean_running", "tpot_mean", "ttft_p50", "ttft_p99")}
    ana = runs[0].analytic
    assert ana["mean_running"] == pytest.approx(sim["mean_running"], rel=0.15)
    assert ana["tpot_mean"] == pytest.approx(sim["tpot_mean"], rel=0.15)
    assert ana["ttft_p50"] == pytest.approx(sim["ttft_p50"], rel=TTFT_P50)
    assert ana["ttft_p99"] == pytest.approx(sim["ttft_p99"], rel=TTFT_P99)
    return runs[0]
