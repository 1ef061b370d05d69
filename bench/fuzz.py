"""Fuzz the compiler with grammar-aware mutants (tests/mutants.py) and print the counts.

    python bench/fuzz.py [COUNT] [--seed N] [--workers N]

Runs COUNT mutants (default 10,000) of every example and five stdlib files in worker processes,
each with its memory limited by `resource.setrlimit` to its size after import plus 1 GiB and its
time to 10 s (or three times the slowest unmutated seed on this machine, if longer), and prints:
mutants run, exit codes, tracebacks (an exception escaped), exit 2 without a located error, runs
over the time limit, the slowest run, and the workers' peak memory. Exit 1 when any mutant broke
the contract (a traceback, an unlocated exit 2, over the limit), else 0.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.mutants import check_many, mutants


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("count", type=int, nargs="?", default=10_000)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()
    start = time.perf_counter()
    texts = mutants(args.count, args.seed)
    outcomes, peak, limit = check_many(texts, args.workers)
    tracebacks = [o for o in outcomes if o.exit_code == -1]
    unlocated = [o for o in outcomes if o.exit_code == 2 and not o.located]
    slow = [o for o in outcomes if o.seconds >= limit]
    slowest = max(outcomes, key=lambda o: o.seconds)
    codes = collections.Counter(o.exit_code for o in outcomes)
    print(f"mutants run:           {len(outcomes):,} (seed {args.seed})")
    print("exit codes:            " + ", ".join(f"{k}: {v:,}" for k, v in sorted(codes.items())))
    print(f"tracebacks:            {len(tracebacks)}")
    print(f"exit 2 without a location: {len(unlocated)}")
    print(f"runs over {limit:.1f} s:      {len(slow)}")
    print(f"slowest run:           {slowest.seconds:.2f} s (mutant {slowest.index})")
    print(f"peak worker memory:    {peak / 2**20:.0f} MiB")
    print(f"wall time:             {time.perf_counter() - start:.0f} s")
    for o in tracebacks[:5]:
        print(f"\n--- mutant {o.index}: {texts[o.index][-300:]!r}\n{o.traceback}")
    return 1 if tracebacks or unlocated or slow else 0


if __name__ == "__main__":
    sys.exit(main())
