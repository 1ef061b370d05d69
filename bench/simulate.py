"""Simulator speed: one hour of traffic at 1,000 requests/s over 40 replicas, against 30 s.

The workload of issue "plan simulate": lognormal prompts (mean 1000, p99 6000) and outputs (mean
250, p99 1000), Poisson arrivals, least-loaded routing; vLLM-like engines with max_num_seqs 256,
a token budget of 8192, 400,000 KV tokens in blocks of 16; the toy affine physics
5 ms + 20 µs/decode + 10 ns/(decode · context token) + 60 µs/prefill token.

With that physics one replica prefills at most 1/60 µs ≈ 16,700 tokens/s, and 25 requests/s of
1000-token prompts ask for 25,000: the group is overloaded (its queue grows for the whole hour),
which the script reports beside the time. `--prefill-cost 6e-6` gives a stable group of the same
size, whose iterations are shorter and ten times as many.

Run: python bench/simulate.py [--duration 3600] [--prefill-cost 6e-5] [--strict]
(prints the wall time, its ratio to the target, and the run's summary; --strict exits 1 when the
target is missed)
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from planc.simulate import Engine, Router, Workload, simulate

TARGET_S = 30.0
RATE, REPLICAS = 1000.0, 40


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=3600.0, help="simulated seconds (default 3600)")
    parser.add_argument("--prefill-cost", type=float, default=6e-5, help="seconds per prefill token (default 6e-5)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the target is missed")
    args = parser.parse_args()
    cost = args.prefill_cost

    def iteration_time(d: float, c: float, p: float, pc: float) -> float:
        return 5e-3 + 2e-5 * d + 1e-8 * d * c + cost * p

    workload = Workload(rate=RATE, prompt_mean=1000, prompt_p99=6000, output_mean=250, output_p99=1000)
    engine = Engine(max_num_seqs=256, token_budget=8192, kv_capacity_tokens=400_000, kv_block_size=16)
    start = time.perf_counter()
    result = simulate(workload, engine, iteration_time, Router("least_loaded", REPLICAS), args.duration, seed=1)
    wall = time.perf_counter() - start
    target = TARGET_S * args.duration / 3600
    s = result.summary()
    print(f"simulated {args.duration:,.0f} s at {RATE:,.0f} req/s over {REPLICAS} replicas "
          f"({result.arrived:,} requests; {len(result.iter_duration):,} iterations after the warm-up) "
          f"on {os.cpu_count()} cores")
    print(f"wall time {wall:.2f} s, target {target:.0f} s, ratio {wall / target:.2f}: "
          f"{'PASS' if wall <= target else 'FAIL'}")
    print(f"completed {s['completed_per_s']:,.0f} req/s of {RATE:,.0f} arriving"
          + (" (overloaded: the queue grows)" if s["completed_per_s"] < 0.95 * RATE else ""))
    for key in ("ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99", "itl_p50", "itl_p99", "mean_running",
                "mean_kv_tokens", "throughput_tokens_per_s", "preemptions_per_request"):
        print(f"  {key:24} {s[key]:.4g}")
    return 1 if args.strict and wall > target else 0


if __name__ == "__main__":
    sys.exit(main())
