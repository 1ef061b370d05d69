"""Production concerns of a deployment (stdlib `deployment`, section "Production"): rollout and
canary capacity, and on-call alert thresholds derived from the plan's own limits. Each test
restates the definition in numbers and checks the stdlib against it on the flagship."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from planc.pipeline import compile_plan

from .conftest import REPO


@pytest.fixture(scope="module")
def v() -> dict[str, Fraction]:
    c = compile_plan(REPO / "examples" / "100m_dau.plan")
    assert c.lowered is not None
    return {k.removeprefix("chat."): val for k, val in c.lowered.values.items() if k.startswith("chat.")}


def test_a_rolling_update_at_the_peak_leaves_three_quarters_of_the_needed_replicas(v: dict[str, Fraction]) -> None:
    # Kubernetes takes down floor(replicas × maxUnavailable) at once, 25 % by default
    total, needed = v["total_replicas"], v["replicas"]
    assert total == needed + v["spare_replicas"]  # one region: the N+k spares (tests/test_spares.py)
    assert v["rollout_replicas"] == total - math.floor(total * Fraction(1, 4))
    assert v["rollout_capacity"] == v["rollout_replicas"] / needed
    assert 0.74 < v["rollout_capacity"] < 0.76  # < 1: roll out off-peak, or slower
    # only the spares may go down at the peak
    assert v["safe_unavailable"] == Fraction(int(v["spare_replicas"]), total)


def test_the_canary_sees_its_sample_in_seconds_at_average_load(v: dict[str, Fraction]) -> None:
    # 5 % of 1 G requests/day = 578.7 requests/s: 10,000 requests in 17.28 s
    assert v["canary_time"] == Fraction(10_000) / (Fraction(10**9, 86_400) * Fraction(5, 100))
    assert float(v["canary_time"]) == pytest.approx(17.28, abs=0.01)
    assert v["canary_replicas"] == math.ceil(v["replicas"] * Fraction(5, 100))


def test_the_queue_depth_alert_is_where_a_new_request_misses_the_ttft_slo(v: dict[str, Fraction]) -> None:
    # behind Q queued requests a new one waits Q · service time / replicas, then prefills its p99
    # prompt, whose last chunk samples the first token; at the alert threshold that is exactly the TTFT SLO
    q = v["queue_depth_alert"]
    wait = q * v["replica_service_time"] / v["replicas"]
    p99_prefill = v["prefill_time"] * 6  # p99 prompt 6,000 tokens over the mean 1,000
    assert wait + p99_prefill == pytest.approx(float(v["ttft_slo"]), rel=1e-12)
    assert v["ttft_slo"] == Fraction(8, 10)
    assert q > 10_000  # thousands of replicas drain a deep queue within the SLO


def test_kv_alert_is_the_working_set_at_the_preemption_target(v: dict[str, Fraction]) -> None:
    # paged KV: the running batch's working set, and the usage its spread reaches once in 1/target iterations
    assert v["kv_usage_planned"] == v["kv_working_set"] / v["kv_capacity_tokens"]
    assert float(v["kv_usage_alert"]) == pytest.approx(float(
        (v["kv_working_set"] + 2.3263478740408408 * v["kv_working_set_sd"]) / v["kv_capacity_tokens"]), rel=1e-9)
    assert v["kv_usage_planned"] < v["kv_usage_alert"] < 1  # the plan fits with room to alert before preemptions
    assert v["ttft_margin"] == v["ttft_slo"] - v["ttft_at_peak"] and v["tpot_margin"] > 0
