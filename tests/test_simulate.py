"""The serving simulator (`planc.simulate`): hand-computed latencies at low load, conservation of
tokens and requests, Little's law, the scheduler's caps, KV pressure, routing, determinism."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest
from planc.simulate import (
    Engine,
    Router,
    SimResult,
    Workload,
    lognormal_fit,
    sample_lengths,
    simulate,
    weighted_percentile,
)


def toy(d: float, c: float, p: float, pc: float) -> float:
    """The affine toy physics: overhead, per decode, per decode-context token, per prefill token
    and per prefill position (so that the context means matter)."""
    return 5e-3 + 2e-5 * d + 1e-8 * d * c + 6e-5 * p + 1e-9 * p * pc


ENGINE = Engine(max_num_seqs=64, token_budget=4096, kv_capacity_tokens=400_000, kv_block_size=16)
MIXED = Workload(rate=20, prompt_mean=800, prompt_p99=4000, output_mean=120, output_p99=500)
PAIR = Router("least_loaded", 2)


def run(workload: Workload = MIXED, engine: Engine = ENGINE, router: Router = PAIR,
        duration: float = 120, **kw: object) -> SimResult:
    return simulate(workload, engine, toy, router, duration, **kw)  # type: ignore[arg-type]


def constant(prompt: int, output: int, **kw: object) -> Workload:
    return Workload(rate=0.5, arrival_cv=0, prompt_mean=prompt, prompt_p99=prompt,
                    output_mean=output, output_p99=output, **kw)  # type: ignore[arg-type]


def prefill_time(chunks: list[tuple[int, int]]) -> float:
    """Alone on the replica: one iteration per (start position, tokens) chunk."""
    return sum(toy(0, 0, n, a + (n - 1) / 2) for a, n in chunks)


# --- the inputs ----------------------------------------------------------------------------------

@pytest.mark.parametrize("mean, p99", [(1000, 6000), (250, 1000), (50, 55)])
def test_the_lognormal_fit_reproduces_the_mean_and_the_p99(mean: float, p99: float) -> None:
    mu, sigma = lognormal_fit(mean, p99)
    assert math.exp(mu + sigma ** 2 / 2) == pytest.approx(mean, rel=1e-12)
    assert math.exp(mu + 2.3263478740408408 * sigma) == pytest.approx(p99, rel=1e-12)
    samples = sample_lengths(mean, p99, 400_000, np.random.default_rng(3))
    assert samples.mean() == pytest.approx(mean, rel=0.01)
    assert np.percentile(samples, 99) == pytest.approx(p99, rel=0.02)
    assert samples.min() >= 1 and samples.dtype == np.int64


def test_a_length_whose_p99_is_its_mean_is_constant() -> None:
    assert lognormal_fit(300, 300) == (math.log(300), 0.0)
    assert set(sample_lengths(300, 300, 100, np.random.default_rng(0)).tolist()) == {300}


@pytest.mark.parametrize("mean, p99", [(100, 99), (100, 1600), (0, 10)])
def test_an_impossible_length_distribution_is_refused(mean: float, p99: float) -> None:
    with pytest.raises(ValueError):
        lognormal_fit(mean, p99)


@pytest.mark.parametrize("engine, router", [
    (Engine(max_num_seqs=64, token_budget=32, kv_capacity_tokens=10_000), Router()),
    (Engine(max_num_seqs=8, token_budget=512, kv_capacity_tokens=10_000, preemption="swap"), Router()),
    (ENGINE, Router("power_of_two", 2)),
])
def test_unsupported_settings_are_refused(engine: Engine, router: Router) -> None:
    with pytest.raises(ValueError):
        simulate(MIXED, engine, toy, router, 10)


def test_arrivals_have_the_rate_and_the_burstiness_asked_for() -> None:
    for cv in (0.5, 1.0, 2.0):
        r = run(Workload(rate=2000, arrival_cv=cv, prompt_mean=1, prompt_p99=1, output_mean=1, output_p99=1),
                Engine(max_num_seqs=512, token_budget=4096, kv_capacity_tokens=100_000), duration=30)
        gaps = np.diff(np.sort(r.arrival))
        assert r.arrived == pytest.approx(60_000, rel=0.02)
        assert gaps.std() / gaps.mean() == pytest.approx(cv, rel=0.05)


def test_max_context_clips_prompt_and_output() -> None:
    r = run(Workload(rate=20, prompt_mean=800, prompt_p99=4000, output_mean=120, output_p99=500, max_context=1024),
            drain=True, warmup=0)
    assert r.prompt.max() == 1023 and (r.prompt + r.output).max() == 1024


def test_weighted_percentile_is_the_percentile_of_the_repeated_sample() -> None:
    rng = np.random.default_rng(5)
    values, weights = rng.random(200), rng.integers(0, 7, 200)
    for q in (0, 1, 37.5, 50, 99, 100):
        assert weighted_percentile(values, weights, q) == pytest.approx(np.percentile(np.repeat(values, weights), q),
                                                                        rel=1e-12)



def full_sort_percentiles(values: np.ndarray, weights: np.ndarray, qs: tuple[float, ...]) -> list[float]:
    """The weighted percentiles with every value sorted: what the bracketed selection must give."""
    keep = weights > 0
    order = np.argsort(values[keep], kind="stable")
    v, cum = values[keep][order], np.cumsum(weights[keep][order])
    out = []
    for q in qs:
        h = (cum[-1] - 1) * q / 100
        lo = math.floor(h)
        i, j = np.searchsorted(cum, [lo, min(lo + 1, cum[-1] - 1)], side="right")
        out.append(float(v[i] + (v[j] - v[i]) * (h - lo)))
    return out


@pytest.mark.parametrize("case", ["ties", "zero weights", "a misleading sample"])
def test_weighted_percentiles_of_many_values_sort_only_a_bracket_and_give_the_same_values(case: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from planc.simulate import SELECT_SAMPLE, weighted_percentiles

    sorted_sizes: list[int] = []
    argsort = np.argsort
    monkeypatch.setattr(np, "argsort", lambda a, *args, **kw: sorted_sizes.append(len(a)) or argsort(a, *args, **kw))

    rng = np.random.default_rng(11)
    n = 10 * SELECT_SAMPLE
    values = np.round(rng.lognormal(-4, 0.5, n), 4)  # many ties
    weights = rng.integers(1, 300, n)
    if case == "zero weights":
        weights[rng.random(n) < 0.3] = 0
    if case == "a misleading sample":  # the sample (every n/SELECT_SAMPLE-th value) carries almost no weight
        weights[:: n // SELECT_SAMPLE] = 1
        values[:: n // SELECT_SAMPLE] = values.max() * 2
    qs = (0, 50, 90, 99, 99.9, 100)
    found = weighted_percentiles(values, weights, qs)
    sorts = list(sorted_sizes)  # before the reference below sorts everything
    assert found == full_sort_percentiles(values, weights, qs)
    if case == "a misleading sample":
        assert np.count_nonzero(weights) in sorts  # the ranks fell outside the bracket: every value sorted
    else:
        assert max(sorts) < n / 8  # the sample, and brackets of a few per cent of the values


def test_the_event_order_is_the_heap_order_of_end_and_replica() -> None:
    """The loop's winner tree gives, after every update, the (end, replica) pair a heap of such
    tuples would pop first, ties in end going to the lower-numbered replica."""
    from planc import sim_engine
    from planc.simulate import engine_module

    for loop in {engine_module(), sim_engine}:
        rng = np.random.default_rng(3)
        tree, busy = loop._Tournament(11), {}
        for _ in range(5000):
            q = int(rng.integers(0, 11))
            if busy and rng.random() < 0.3:
                busy.pop(q, None)
                tree.set(q, math.inf)
            else:
                busy[q] = float(rng.integers(0, 40))  # coarse ends: many ties
                tree.set(q, busy[q])
            first = tree.first()
            if busy:
                assert (tree.ends[first], first) == min((end, r) for r, end in busy.items())
            else:
                assert tree.ends[first] == math.inf


@pytest.mark.parametrize("growth", ["bytearray", "numpy resized in place"])
def test_the_iteration_log_keeps_every_row_across_its_growth(growth: str) -> None:
    from planc.simulate import _columns, _Resized, engine_module

    log = engine_module().IterationLog(_Resized() if growth != "bytearray" else None)
    n = 3 * 4096 * 4 + 17  # past three doublings
    for k in range(n):
        log.add(k * 0.5, 1.0 / (k + 1), k % 300, k * 7, k % 301, k % 302, k * 16)
    columns = _columns(log)
    k = np.arange(n)
    np.testing.assert_array_equal(columns["start"], k * 0.5)
    np.testing.assert_array_equal(columns["duration"], 1.0 / (k + 1))
    np.testing.assert_array_equal(columns["decodes"], k % 300)
    np.testing.assert_array_equal(columns["prefill"], k * 7)
    np.testing.assert_array_equal(columns["emitted"], k % 301)
    np.testing.assert_array_equal(columns["running"], k % 302)
    np.testing.assert_array_equal(columns["kv_tokens"], k * 16)


# --- one request alone: the latencies by hand ------------------------------------------------------

def test_alone_ttft_is_the_prefill_chunks_and_tpot_the_single_decodes() -> None:
    prompt, output = 10_000, 20  # 4096 + 4096 + 1808 tokens of prefill
    r = run(constant(prompt, output), router=Router("round_robin", 1), duration=40, warmup=0)
    ttft = prefill_time([(0, 4096), (4096, 4096), (8192, 1808)])
    tpot = sum(toy(1, prompt + e, 0, 0) for e in range(1, output)) / (output - 1)
    assert len(r.ttft) == r.arrived == 19  # arrivals at 2, 4, ..., 38 s
    np.testing.assert_allclose(r.ttft, ttft, rtol=1e-12)
    np.testing.assert_allclose(r.tpot, tpot, rtol=1e-12)
    np.testing.assert_allclose(r.e2e, ttft + (output - 1) * tpot, rtol=1e-12)
    assert r.summary()["itl_p50"] == pytest.approx(toy(1, prompt + 10, 0, 0), rel=1e-12)


def test_alone_without_chunking_the_prompt_is_prefilled_in_one_iteration() -> None:
    engine = Engine(max_num_seqs=64, token_budget=4096, kv_capacity_tokens=400_000, chunked_prefill=False)
    r = run(constant(10_000, 5), engine, Router("round_robin", 1), duration=20, warmup=0)
    np.testing.assert_allclose(r.ttft, prefill_time([(0, 10_000)]), rtol=1e-12)
    assert r.iter_prefill_tokens.max() == 10_000


def test_a_cached_prefix_needs_no_prefill_but_counts_as_context() -> None:
    r = run(constant(10_000, 3, prefix_hit_rate=0.5), router=Router("round_robin", 1), duration=20, warmup=0)
    np.testing.assert_allclose(r.ttft, prefill_time([(5000, 4096), (9096, 904)]), rtol=1e-12)
    np.testing.assert_allclose(r.tpot, (toy(1, 10_001, 0, 0) + toy(1, 10_002, 0, 0)) / 2, rtol=1e-12)


def test_a_one_token_output_finishes_at_its_first_token() -> None:
    r = run(constant(100, 1), router=Router("round_robin", 1), duration=20, warmup=0)
    np.testing.assert_allclose(r.e2e, r.ttft)
    assert np.isnan(r.tpot).all() and len(r.tpot) == 9


# --- conservation, Little's law, caps --------------------------------------------------------------

def test_drained_every_request_completes_and_every_token_is_emitted_once() -> None:
    r = run(drain=True, warmup=0)
    assert r.unfinished == 0 and len(r.e2e) == r.arrived
    assert r.iter_emitted.sum() == r.output.sum()
    # no preemption: the time between first and last token is exactly the decode iterations seen
    assert r.preemptions.sum() == 0
    assert ((r.e2e - r.ttft).sum()) == pytest.approx(float(r.iter_duration @ r.iter_decodes), rel=1e-9)


def test_throughput_is_rate_times_output_at_low_load() -> None:
    r = run(duration=300)
    assert r.throughput == pytest.approx(MIXED.rate * MIXED.output_mean, rel=0.05)
    assert r.completed_rate == pytest.approx(MIXED.rate, rel=0.05)


def test_littles_law_holds_for_the_requests_in_system() -> None:
    r = run(Workload(rate=28, prompt_mean=800, prompt_p99=4000, output_mean=120, output_p99=500), duration=400)
    s = r.summary()
    assert s["mean_running"] > 10  # a real batch, not an idle system
    assert r.mean_in_system == pytest.approx(r.completed_rate * r.e2e.mean(), rel=0.03)


def test_a_decode_token_finds_one_more_sequence_than_the_mean_running() -> None:
    """The analytic TPOT is timed at `seen_batch` = mean running + 1: a Poisson number N running,
    counted by its decode tokens, is E[N²]/E[N] = E[N] + 1. At light load (no feedback of the
    batch on the service time) the simulator's decode-weighted batch is that, idle time counted."""
    r = run(Workload(rate=5, prompt_mean=800, prompt_p99=4000, output_mean=120, output_p99=500), router=Router("random", 2),
            duration=300, seed=1)
    decodes = r.iter_decodes.astype(float)
    seen = (decodes ** 2).sum() / decodes.sum()
    assert seen - r.summary()["mean_running"] == pytest.approx(1, abs=0.15)


def test_the_caps_on_sequences_and_tokens_hold() -> None:
    engine = Engine(max_num_seqs=16, token_budget=1024, kv_capacity_tokens=400_000)
    r = run(Workload(rate=30, prompt_mean=800, prompt_p99=4000, output_mean=120, output_p99=500), engine, duration=60)
    assert r.iter_running.max() == 16
    assert (r.iter_decodes + r.iter_prefill_tokens).max() == 1024
    assert r.iter_decodes.max() <= 16


# --- KV pressure ------------------------------------------------------------------------------------

def test_scarce_kv_preempts_and_still_completes_everything() -> None:
    engine = Engine(max_num_seqs=64, token_budget=4096, kv_capacity_tokens=16_000, kv_block_size=16)
    workload = Workload(rate=20, prompt_mean=800, prompt_p99=4000, output_mean=120, output_p99=500, max_context=8000)
    r = run(workload, engine, drain=True, warmup=0)
    assert r.preemptions.sum() > 0
    assert r.unfinished == 0 and len(r.e2e) == r.arrived
    assert r.iter_emitted.sum() == r.output.sum()
    assert r.iter_kv_tokens.max() <= 16_000
    assert (r.ttft > 0).all() and (r.e2e >= r.ttft).all()


def test_ample_kv_never_preempts() -> None:
    engine = Engine(max_num_seqs=64, token_budget=4096, kv_capacity_tokens=10_000_000)
    r = run(Workload(rate=60, prompt_mean=800, prompt_p99=4000, output_mean=120, output_p99=500), engine, duration=60)
    assert r.preemptions.sum() == 0
    assert r.mean_kv_tokens > 0


def test_kv_in_use_is_the_blocks_of_the_running_contexts() -> None:
    r = run(constant(100, 40), router=Router("round_robin", 1), duration=4, warmup=0)
    contexts = np.concatenate([[100], 100 + np.arange(1, 40)])  # after the prefill, then each decode
    np.testing.assert_array_equal(r.iter_kv_tokens[:40], -(-contexts // 16) * 16)


# --- routing and determinism -------------------------------------------------------------------------

def test_least_loaded_beats_random_routing_at_high_utilisation() -> None:
    workload = Workload(rate=110, prompt_mean=800, prompt_p99=4000, output_mean=120, output_p99=500)
    p99 = {policy: run(workload, router=Router(policy, 8), duration=120, seed=2).summary()["ttft_p99"]
           for policy in ("random", "least_loaded")}
    assert p99["least_loaded"] < 0.7 * p99["random"]


def test_round_robin_spreads_the_arrivals_evenly() -> None:
    r = run(router=Router("round_robin", 4), duration=60)
    assert r.completed_rate == pytest.approx(MIXED.rate, rel=0.05)


def test_the_same_seed_gives_the_same_run() -> None:
    a, b, c = run(seed=7, duration=30), run(seed=7, duration=30), run(seed=8, duration=30)
    for name in ("arrival", "ttft", "tpot", "e2e", "iter_duration", "iter_decodes", "iter_kv_tokens"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.summary() == b.summary()
    assert not np.array_equal(a.arrival, c.arrival)


# --- the compiled event loop -------------------------------------------------------------------------

@pytest.fixture(autouse=True)
def _fresh_engine_module() -> Iterator[None]:
    """`engine_module()` is cached per process: a test that chose a loop leaves no choice behind."""
    from planc import simulate as sim

    yield
    sim.engine_module.cache_clear()


def _loop(monkeypatch: pytest.MonkeyPatch, pure: bool) -> object:
    """`engine_module()` afresh, with or without `PLAN_PURE_PYTHON`."""
    from planc import simulate as sim

    if pure:
        monkeypatch.setenv("PLAN_PURE_PYTHON", "1")
    else:
        monkeypatch.delenv("PLAN_PURE_PYTHON", raising=False)
    sim.engine_module.cache_clear()
    return sim.engine_module()


def test_the_installed_package_runs_the_compiled_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """`pip install` compiles `sim_engine.py` with mypyc (setup.py), unless told not to."""
    import inspect
    import os

    if os.environ.get("PLAN_PURE_PYTHON"):
        pytest.skip("PLAN_PURE_PYTHON is set: this install was built and runs pure Python")
    from planc import sim_engine

    loop = _loop(monkeypatch, pure=False)
    assert loop.__name__ == "planc._sim_engine_native"  # type: ignore[attr-defined]
    assert loop.__file__.endswith(".so")  # type: ignore[attr-defined]
    assert inspect.isfunction(sim_engine.Group.run)
    assert not inspect.isfunction(loop.Group.run)  # type: ignore[attr-defined]  # compiled: a C method
    assert _loop(monkeypatch, pure=True) is sim_engine


CASES = {  # workload, engine, router, duration, drain: each scheduler path at least once
    "mixed, least loaded": (MIXED, ENGINE, PAIR, 60, False),
    "scarce KV, preemptions, drained": (
        Workload(rate=20, prompt_mean=800, prompt_p99=4000, output_mean=120, output_p99=500, max_context=8000),
        Engine(max_num_seqs=64, token_budget=4096, kv_capacity_tokens=16_000), Router("least_loaded", 2), 60, True),
    "no chunking, random": (MIXED, Engine(64, 4096, 400_000, chunked_prefill=False), Router("random", 3), 60, False),
    "prefix cache, caps, round robin": (
        Workload(rate=30, prompt_mean=800, prompt_p99=4000, output_mean=120, output_p99=500, prefix_hit_rate=0.4),
        Engine(max_num_seqs=16, token_budget=1024, kv_capacity_tokens=400_000, kv_block_size=32),
        Router("round_robin", 2), 60, False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_compiled_event_loop_gives_the_same_run_bit_for_bit(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    workload, engine, router, duration, drain = CASES[case]
    runs, loops = [], []
    for pure in (False, True):
        loops.append(_loop(monkeypatch, pure))
        runs.append(run(workload, engine, router, duration, drain=drain, seed=5))
    if loops[0] is loops[1]:
        pytest.skip("this install has no compiled event loop (see the test above)")
    native, pure_run = runs
    assert len(native.iter_duration) > 1000
    for name in SimResult.__dataclass_fields__:
        a, b = getattr(native, name), getattr(pure_run, name)
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg=name)
            assert a.dtype == b.dtype, name
        else:
            assert a == b, name


def test_a_stale_compiled_loop_is_not_run(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    """An edit to `sim_engine.py` after the build (an editable install) runs the edited source."""
    from pathlib import Path

    from planc import sim_engine

    edited = Path(str(tmp_path)) / "sim_engine.py"
    edited.write_bytes(Path(sim_engine.__file__).read_bytes() + b"\n# edited\n")
    monkeypatch.setattr(sim_engine, "__file__", str(edited))
    assert _loop(monkeypatch, pure=False) is sim_engine


def test_the_window_rows_are_a_slice_in_start_order_whatever_ends_late() -> None:
    """`_window_rows` reorders the last rows in place so that the window's rows are one slice;
    it selects exactly the rows the mask (start >= lo) & (end <= hi) selects, in the same order."""
    from planc.simulate import _window_rows

    rng = np.random.default_rng(11)
    n = 5000
    start = np.sort(rng.uniform(0, 100, n))
    duration = rng.exponential(0.5, n)
    cols = {"start": start.copy(), "duration": duration.copy(), "row": np.arange(n)}
    lo, hi = 10.0, 99.0
    expected = np.flatnonzero((start >= lo) & (start + duration <= hi))
    late = (start + duration > hi) & (start >= lo)
    assert late.sum() > 3 and (np.flatnonzero(late)[0] < expected[-1])  # late rows among in-time ones
    rows = _window_rows(cols, lo, hi)
    assert isinstance(rows, slice)
    np.testing.assert_array_equal(cols["row"][rows], expected)
    # every row is still there, each with its own start and duration
    assert sorted(cols["row"].tolist()) == list(range(n))
    np.testing.assert_array_equal(cols["start"], start[cols["row"]])
    np.testing.assert_array_equal(cols["duration"], duration[cols["row"]])


def test_the_iteration_log_is_in_start_order() -> None:
    r = run(router=Router("least_loaded", 8), workload=Workload(rate=110, prompt_mean=800, prompt_p99=4000,
                                                                output_mean=120, output_p99=500), duration=60)
    assert len(r.iter_start) > 10_000
    assert (np.diff(r.iter_start) >= 0).all()


def test_least_loaded_sends_each_arrival_to_the_least_loaded_replica_of_lowest_index() -> None:
    """The router's load levels against the plain rule, checked at every arrival of a busy group:
    the replica chosen has the fewest requests in system (waiting + running), and no replica
    before it has as few."""
    from collections import deque

    from planc import sim_engine

    checked = []

    class Watched(deque):  # type: ignore[type-arg]
        def append(self, r: int) -> None:
            loads = [len(x.waiting) + len(x.running) for x in group.replicas]
            checked.append(loads.index(min(loads)) == index[id(self)])
            super().append(r)

    workload = Workload(rate=110, prompt_mean=800, prompt_p99=4000, output_mean=120, output_p99=500)
    rng = np.random.default_rng(4)
    from planc.simulate import arrival_times, lengths

    arrivals = arrival_times(workload.rate, 1.0, 40, rng)
    prompt, output, _ = lengths(workload, len(arrivals), rng)
    requests = sim_engine.Requests(prompt.tolist(), output.tolist(), [0] * len(arrivals))
    group = sim_engine.Group(sim_engine.Limits(64, 4096, 400_000, 16, True), toy, requests,
                             sim_engine.IterationLog(), 8)
    index = {}
    for q, replica in enumerate(group.replicas):
        replica.waiting = Watched()
        index[id(replica.waiting)] = q
    group.run(arrivals.tolist(), [0] * len(arrivals), True, 0.0, 40.0)
    assert len(checked) == len(arrivals) > 4000
    assert all(checked)


# --- the sampling error of a run -----------------------------------------------------------------

def _coverage(draw: object, truth: dict[str, float], reps: int = 100) -> dict[str, float]:
    """How often the intervals of `reps` runs of `draw(rng) -> (times, values)` contain the truth."""
    from planc.simulate import INTERVAL_BLOCKS, INTERVAL_RESAMPLES, _Blocks

    rng = np.random.default_rng(11)
    hits = dict.fromkeys(truth, 0)
    for _ in range(reps):
        times, values = draw(rng)  # type: ignore[operator]
        blocks = _Blocks((0.0, 100.0), INTERVAL_BLOCKS, INTERVAL_RESAMPLES)
        for name, true in truth.items():
            low, high = blocks.mean(values, times) if name == "mean" else blocks.percentile(values, times, float(name[1:]))
            hits[name] += low <= true <= high
    return {name: hit / reps for name, hit in hits.items()}


def test_the_interval_of_a_percentile_or_a_mean_covers_the_truth_about_as_often_as_it_says() -> None:
    """Independent exponential latencies (p99 = ln 100, p50 = ln 2, mean 1): a 90 % interval
    holds the true figure in 75-98 % of 100 runs (a percentile bootstrap of 20 spans covers a
    little less often than it says: 82-88 % measured)."""
    def draw(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return np.sort(rng.uniform(0, 100, 20_000)), rng.exponential(1.0, 20_000)

    coverage = _coverage(draw, {"p99": math.log(100), "p50": math.log(2), "mean": 1.0})
    assert all(0.75 <= share <= 0.98 for share in coverage.values()), coverage


def test_the_interval_keeps_its_coverage_when_latencies_come_in_slow_spells() -> None:
    """Latencies whose scale changes every 2 s (50 spells, lognormal σ 0.5), as a long prompt slows
    every request behind it: spans of the window, not single requests, are resampled, so the
    interval still covers (81-86 % measured); resampling single requests would treat 20,000
    correlated values as independent and hold the truth far less often (20 % measured)."""
    rng = np.random.default_rng(5)
    big = rng.exponential(1.0, 2_000_000) * np.exp(rng.normal(0.0, 0.5, 2_000_000))
    truth = {"p99": float(np.percentile(big, 99)), "mean": float(np.exp(0.125))}

    def draw(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        times = np.sort(rng.uniform(0, 100, 20_000))
        scale = np.exp(rng.normal(0.0, 0.5, 50))[(times // 2).astype(int)]
        return times, rng.exponential(1.0, 20_000) * scale

    coverage = _coverage(draw, truth)
    assert all(0.75 <= share <= 0.98 for share in coverage.values()), coverage
    naive = 0
    for _ in range(50):  # the same data, each request its own span: the interval is too narrow
        times, values = draw(rng)
        order = np.argsort(rng.uniform(size=len(values)))
        from planc.simulate import INTERVAL_RESAMPLES, _Blocks

        low, high = _Blocks((0.0, 100.0), 2000, INTERVAL_RESAMPLES).mean(values, times[order])
        naive += low <= truth["mean"] <= high
    assert naive / 50 < 0.6


def test_a_run_gives_an_interval_about_each_figure_that_narrows_as_the_run_grows() -> None:
    short, long = run(duration=120), run(duration=1920)
    for result in (short, long):
        figures, bands = result.summary(), result.intervals()
        assert set(bands) == {"ttft_p50", "ttft_p99", "tpot_mean", "tpot_p50", "tpot_p99", "itl_p99", "mean_running"}
        for key, (low, high) in bands.items():
            assert low <= high and low <= figures[key] * 1.02 and figures[key] <= high * 1.02, (key, low, figures[key], high)
    for key in ("ttft_p50", "tpot_mean", "mean_running"):
        (a, b), (c, d) = short.intervals()[key], long.intervals()[key]
        assert d - c < (b - a) / 2, key  # 16 times the run: about a quarter of the width
    assert short.intervals() == short.intervals()  # the same draws every time


def test_an_extreme_percentile_of_a_few_requests_has_no_interval() -> None:
    """Resampling cannot reach beyond the run's own largest values: with fewer than 5 requests
    beyond the 99th percentile its interval would be too narrow, so there is none."""
    from planc.simulate import _Blocks

    rng = np.random.default_rng(2)
    times, values = np.sort(rng.uniform(0, 100, 300)), rng.exponential(1.0, 300)
    blocks = _Blocks((0.0, 100.0), 20, 1000)
    assert all(math.isnan(x) for x in blocks.percentile(values, times, 99))
    assert all(math.isfinite(x) for x in blocks.percentile(values, times, 50))
    assert all(math.isfinite(x) for x in blocks.percentile(np.repeat(values, 2), np.repeat(times, 2), 99))
