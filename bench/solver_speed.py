"""Solver speed, as ratios against baselines measured in the same run.

1. Vectorised evaluation of the flagship's decode-step time (`chat.step_time`) over many batch
   sizes, against sympy `subs` on the same expression in a loop: points per second and the ratio.
2. A search over >= 10,000 configurations, end to end (`plan compile` of a plan with that search,
   in a fresh process), against the same plan without the search; then one over a million on
   the engine model (exactly 1,000,000, the question limit: weights 2 × KV dtype 2 × tensor
   parallelism 4 × prefill chunk 5 × utilisation target 5 × max_num_seqs 1..2500), where each
   configuration solves its own running batch (the `largest` search of the engine model).
3. The cost of closed-form `ask`s: the flagship without questions, with one, and with three.
   The first ask's cost is mostly imports (sympy, numpy), measured in fresh processes; the cost
   of each further ask is measured inside one process (median of repeated compiles after a
   warm-up), since a difference of tens of milliseconds is lost in the noise of process start-up.

Run: python bench/solver_speed.py   (prints a table; exits 0; --strict exits 1 on a missed target)
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FLAGSHIP = REPO / "examples" / "100m_dau.plan"
QUESTION_WORDS = ("ask ", "scenario ", "compare ", "sweep ", "search ", "  minimize", "  -> ")


def vectorised() -> tuple[float, float]:
    import numpy as np
    import sympy as sp
    from planc.pipeline import compile_plan
    from planc.vector import evaluate_many, needed

    lowered = compile_plan(FLAGSHIP).lowered
    assert lowered is not None
    el, target, unknown = lowered.elaborated, "chat.step_time", "chat.batch"
    only = needed(el, [el.nodes[target].expr]) | {target, unknown}
    batches = np.arange(1, 1_000_001, dtype=float)
    start = time.perf_counter()
    evaluate_many(el, lowered.values, {unknown: batches}, only)
    vector_rate = len(batches) / (time.perf_counter() - start)

    expr = lowered.full(target)
    symbol = lowered.symbols[unknown]
    inputs = {lowered.symbols[n]: sp.Rational(str(lowered.values[n]))
              for n, node in el.nodes.items() if node.is_input and n != unknown and lowered.symbols[n] in expr.free_symbols}
    fixed = expr.xreplace(inputs)
    points = 200
    start = time.perf_counter()
    for b in range(1, points + 1):
        float(fixed.subs(symbol, b))
    subs_rate = points / (time.perf_counter() - start)
    return vector_rate, subs_rate


def compile_seconds(text: str, runs: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        plan = Path(tmp) / "p.plan"
        plan.write_text(text)
        cmd = [sys.executable, "-m", "planc.cli", "compile", str(plan), "-o", str(Path(tmp) / "out.md")]
        subprocess.run(cmd, cwd=tmp, capture_output=True, check=False)  # warm-up (parse cache)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(cmd, cwd=tmp, capture_output=True, check=False)
            times.append(time.perf_counter() - start)
        return statistics.median(times)


def in_process_seconds(text: str, runs: int = 9) -> float:
    """Median wall time of `compile_plan` in this process, after a warm-up compile."""
    from planc.pipeline import compile_plan

    with tempfile.TemporaryDirectory() as tmp:
        plan = Path(tmp) / "p.plan"
        plan.write_text(text)
        compile_plan(plan)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            compile_plan(plan)
            times.append(time.perf_counter() - start)
        return statistics.median(times)


def without_questions(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith(QUESTION_WORDS)) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--strict", action="store_true")
    args = parser.parse_args()
    ok = True

    vector_rate, subs_rate = vectorised()
    ratio = vector_rate / subs_rate
    good = vector_rate >= 1e6 and ratio >= 1000
    ok &= good
    print(f"vectorised step time   {vector_rate:,.0f} points/s; sympy subs {subs_rate:,.0f} points/s; "
          f"ratio {ratio:,.0f}x  (targets >= 1,000,000 points/s and >= 1,000x)  {'PASS' if good else 'FAIL'}")

    base = without_questions(FLAGSHIP.read_text())
    search = base + ("search chat over weights in [bf16, fp8, int4], tensor_parallel in [1, 2, 4, 8], batch in 1 .. 1024\n"
                     "  minimize cost_per_month subject to chat.memory_headroom >= 0 B, chat.tpot_worst <= 40 ms\n")
    t_base, t_search = compile_seconds(base, args.runs), compile_seconds(search, args.runs)
    good = t_search < 2.0
    ok &= good
    print(f"search of 12,288 configurations: compile {t_search:.2f} s (plan without it {t_base:.2f} s; "
          f"search adds {t_search - t_base:.2f} s)  (target < 2 s end to end)  {'PASS' if good else 'FAIL'}")

    million = base + ("search chat over weights in [bf16, fp8], kv in [bf16, fp8], tensor_parallel in [1, 2, 4, 8], "
                      "prefill_chunk in [512 tokens, 1024 tokens, 2048 tokens, 4096 tokens, 8192 tokens], "
                      "utilization_target in [0.5, 0.6, 0.7, 0.8, 0.9], max_num_seqs in 1 .. 2500\n"
                      "  minimize cost_per_month subject to chat.preemption_probability <= 0.01, chat.tpot <= 40 ms, "
                      "chat.ttft_tail <= 800 ms\n")
    t_million = compile_seconds(million, 1)
    good = t_million < 5.0
    ok &= good
    print(f"search of 1,000,000 configurations on the engine model: compile {t_million:.1f} s (plan without it "
          f"{t_base:.2f} s)  (target < 5 s end to end)  {'PASS' if good else 'FAIL'}")

    asks = ['ask "max batch": maximize chat.batch subject to chat.memory_per_device <= chat.usable_memory\n',
            'ask "max context": maximize chat.context subject to chat.memory_per_device <= 80 GB given chat.batch = 1\n',
            'ask "crossover": solve chat.decode_intensity = chat.ridge_point for chat.batch given chat.weights = bf16\n']
    t_one = compile_seconds(base + asks[0], args.runs)
    first = t_one - t_base
    further = (in_process_seconds(base + "".join(asks)) - in_process_seconds(base + asks[0])) / 2
    good = further < 0.05
    ok &= good
    print(f"closed-form asks: the first adds {first * 1000:.0f} ms (it loads sympy and numpy, which the "
          f"import floor of compile_speed.py already counts); each further ask adds {further * 1000:.0f} ms  "
          f"(target < 50 ms)  {'PASS' if good else 'FAIL'}")
    return 1 if args.strict and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
