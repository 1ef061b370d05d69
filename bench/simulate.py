"""Simulator speed: one hour of traffic at 1,000 requests/s over 40 replicas, against 30 s.

The workload of issue "plan simulate": lognormal prompts (mean 1000, p99 6000) and outputs (mean
250, p99 1000), Poisson arrivals, least-loaded routing; vLLM-like engines with max_num_seqs 256,
a token budget of 8192, 400,000 KV tokens in blocks of 16; the toy affine physics
5 ms + 20 µs/decode + 10 ns/(decode · context token) + c/prefill token.

Two groups are timed, each against the target. With c = 60 µs one replica prefills at most
1/60 µs ≈ 16,700 tokens/s, and 25 requests/s of 1000-token prompts ask for 25,000: that group is
overloaded (its queue grows for the whole hour, and its iterations are long and full). With
c = 6 µs the same group is stable, as a group sized for its load is: its iterations are shorter
and ten times as many (about 17 million), and that is the case the target is about.

A third run is `plan simulate` on the flagship itself (`examples/100m_dau.plan`, deployment
`chat`), every iteration timed by the plan's own `iteration_time` (`replay.py`): as many of its
replicas as take 1,000 requests/s at its peak share (108), least-loaded, for the same duration.
That is the target with the product's physics rather than the toy's.

Run: python bench/simulate.py [--duration 3600] [--strict] [--no-plan]
(prints which event loop ran, then for each run the wall time, its ratio to the target, and the
run's summary; --strict exits 1 when any misses the target; --no-plan skips the flagship's run).
`PLAN_PURE_PYTHON=1` in the environment runs the pure-Python event loop instead of the compiled
one (setup.py).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

from planc.simulate import Engine, Router, Workload, engine_module, simulate

TARGET_S = 30.0
RATE, REPLICAS = 1000.0, 40


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=3600.0, help="simulated seconds (default 3600)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a run misses the target")
    parser.add_argument("--no-plan", action="store_true", help="skip the flagship timed by its own physics")
    args = parser.parse_args()
    missed = False
    loop = engine_module()
    print(f"event loop: {loop.__name__} ({'compiled by mypyc' if loop.__file__.endswith('.so') else 'pure Python'})\n")
    for label, cost in (("overloaded group, 60 µs per prefill token", 6e-5), ("stable group, 6 µs per prefill token", 6e-6)):
        print(f"{label}:")
        missed |= not run(args.duration, cost)
        print()
    if not args.no_plan:
        print("the flagship (examples/100m_dau.plan, chat), timed by its own iteration_time:")
        missed |= not run_plan(args.duration)
    return 1 if args.strict and missed else 0


def run_plan(duration: float) -> bool:
    """The flagship's `chat` at 1,000 requests/s (whole replicas at its peak share), least-loaded,
    through `replay` as `plan simulate` runs it; whether the simulation met the target (the plan's
    compile, about 1.5 s, is timed apart)."""
    from planc.pipeline import compile_plan
    from planc.replay import replay

    start = time.perf_counter()
    compiled = compile_plan(Path(__file__).resolve().parent.parent / "examples" / "100m_dau.plan")
    assert compiled.lowered is not None
    compile_s = time.perf_counter() - start
    replicas = math.ceil(RATE / float(compiled.lowered.values["chat.peak_replica_rate"]))
    start = time.perf_counter()
    r = replay(compiled.lowered, "chat", duration=duration, replicas=replicas, router="least_loaded")
    wall = time.perf_counter() - start
    target = TARGET_S * duration / 3600
    print(f"simulated {duration:,.0f} s at {r.rate:,.0f} req/s over {replicas} replicas "
          f"({r.result.arrived:,} requests; {len(r.result.iter_duration):,} iterations after the warm-up; "
          f"{r.evaluations:,} shapes computed) on {os.cpu_count()} cores; compile {compile_s:.1f} s")
    print(f"wall time {wall:.2f} s, target {target:.0f} s, ratio {wall / target:.2f}: "
          f"{'PASS' if wall <= target else 'FAIL'}")
    for key in ("ttft_p50", "ttft_p99", "tpot_mean", "itl_p99", "mean_running"):
        print(f"  {key:24} {r.simulated[key]:.4g}  (analytic {r.analytic[key]:.4g})" if key in r.analytic
              else f"  {key:24} {r.simulated[key]:.4g}")
    return wall <= target


def run(duration: float, cost: float) -> bool:
    """One hour (or `duration`) of the group with this prefill cost; whether it met the target."""

    def iteration_time(d: float, c: float, p: float, pc: float) -> float:
        return 5e-3 + 2e-5 * d + 1e-8 * d * c + cost * p

    workload = Workload(rate=RATE, prompt_mean=1000, prompt_p99=6000, output_mean=250, output_p99=1000)
    engine = Engine(max_num_seqs=256, token_budget=8192, kv_capacity_tokens=400_000, kv_block_size=16)
    start = time.perf_counter()
    result = simulate(workload, engine, iteration_time, Router("least_loaded", REPLICAS), duration, seed=1)
    wall = time.perf_counter() - start
    target = TARGET_S * duration / 3600
    s = result.summary()
    print(f"simulated {duration:,.0f} s at {RATE:,.0f} req/s over {REPLICAS} replicas "
          f"({result.arrived:,} requests; {len(result.iter_duration):,} iterations after the warm-up) "
          f"on {os.cpu_count()} cores")
    print(f"wall time {wall:.2f} s, target {target:.0f} s, ratio {wall / target:.2f}: "
          f"{'PASS' if wall <= target else 'FAIL'}")
    print(f"completed {s['completed_per_s']:,.0f} req/s of {RATE:,.0f} arriving"
          + (" (overloaded: the queue grows)" if s["completed_per_s"] < 0.95 * RATE else ""))
    for key in ("ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99", "itl_p50", "itl_p99", "mean_running",
                "mean_kv_tokens", "throughput_tokens_per_s", "preemptions_per_request"):
        print(f"  {key:24} {s[key]:.4g}")
    return wall <= target


if __name__ == "__main__":
    sys.exit(main())
