"""Compile-speed benchmark: `plan compile` of the flagship example vs. importing its dependencies.

Usage:
    python bench/compile_speed.py [--runs N] [--strict]

Measures, with the wall clock, in fresh subprocesses of the running interpreter
(`sys.executable`), the median of N runs (default 5) of:

  (a) baseline: `python -c "import lark, sympy, jinja2"` (the unavoidable import cost);
  (b) compile:  `python -m planc.cli compile <repo>/examples/100m_dau.plan -o <tmp>/out.md`,
      run from a temporary directory outside the checkout.

Each command gets one untimed warm-up run first (Lark caches its LALR tables in the temp dir on
first use, Python writes the bytecode of the compiler's modules, the OS file cache warms up), and the timed runs alternate between the two
commands so that a change in machine load skews both alike. The target is b/a <= 1.5: the
compiler itself may cost at most half as much again as importing its libraries. The script also
runs the compile once under `-X importtime` and reports whether `weasyprint` or `matplotlib` were
imported on the compile path (they must not be: they belong to the optional PDF/plot paths).

Exit status: 0 whatever the verdict, unless `--strict` is given (then 1 when the target is
missed or a heavy module is imported). A failing compile (exit code other than 0 or 1) is
always an error (exit 2), since its timing would mean nothing.

Bytecode: the children run with `PYTHONDONTWRITEBYTECODE` removed from their environment. The
libraries of the baseline load from the `.pyc` files pip wrote when it installed them; an install
of `plan` from a wheel has them too, but an editable install only gets them once Python may write
them. With the variable set (some CI images set it), every run would compile the compiler's
sources again and the ratio would measure that, not the compiler.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "100m_dau.plan"
TARGET_RATIO = 1.5
HEAVY = ("weasyprint", "matplotlib")
QUESTIONS = ("ask ", "scenario ", "compare ", "sweep ", "search ", "  minimize", "  -> ")


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _run(cmd: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=ENV)
    return time.perf_counter() - start, proc


def _medians(commands: dict[str, tuple[list[str], set[int]]], cwd: Path, runs: int) -> dict[str, float]:
    """Median wall time of each command. Runs are interleaved (a, b, a, b, ...) so that a change
    in machine load during the benchmark affects every command alike; round 0 is the warm-up."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(runs + 1):
        for name, (cmd, ok_codes) in commands.items():
            elapsed, proc = _run(cmd, cwd)
            if proc.returncode not in ok_codes:
                sys.stderr.write(f"{name}: exit code {proc.returncode}\n{proc.stdout}{proc.stderr}")
                sys.exit(2)
            if round_ > 0:
                times[name].append(elapsed)
    return {name: statistics.median(ts) for name, ts in times.items()}


def _heavy_imports(cmd: list[str], cwd: Path) -> list[str]:
    """Top-level packages from HEAVY that `-X importtime` shows being imported."""
    proc = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], cwd=cwd, capture_output=True, text=True, env=ENV)
    found: set[str] = set()
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        module = line.rsplit("|", 1)[-1].strip()
        top = module.split(".", 1)[0]
        if top in HEAVY:
            found.add(top)
    return sorted(found)


def print_rows(rows: list[tuple[str, str]], runs: int) -> None:
    """The Python version and run count, then one aligned `label  value` line per row."""
    width = max(len(r[0]) for r in rows)
    print(f"python {sys.version.split()[0]}, median of {runs} interleaved run(s) after 1 warm-up each")
    for label, value in rows:
        print(f"{label:<{width}}  {value}")


def parse_args(doc: str, default_runs: int) -> argparse.Namespace:
    """`--runs N` (at least 1) and `--strict`, the options every benchmark here takes."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=default_runs,
                        help=f"timed runs of each command (default {default_runs})")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the target is missed")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return args


def main() -> int:
    args = parse_args(__doc__, 5)

    with tempfile.TemporaryDirectory(prefix="plan-bench-") as tmp:
        cwd = Path(tmp)
        baseline = [sys.executable, "-c", "import lark, sympy, jinja2"]
        compile_cmd = [sys.executable, "-m", "planc.cli", "compile", str(EXAMPLE), "-o", str(cwd / "out.md")]
        # The same plan without its questions (ask, scenario, compare, sweep, search): the cost of
        # the compiler itself, apart from the questions the flagship answers.
        bare = cwd / "bare.plan"
        bare.write_text("\n".join(line for line in EXAMPLE.read_text().splitlines()
                                   if not line.startswith(QUESTIONS)) + "\n")
        bare_cmd = [sys.executable, "-m", "planc.cli", "compile", str(bare), "-o", str(cwd / "bare.md")]

        # Exit 1 from the compile means "a check failed": still a full compile, a valid timing.
        medians = _medians({"baseline": (baseline, {0}), "compile": (compile_cmd, {0, 1}),
                            "bare": (bare_cmd, {0, 1})}, cwd, args.runs)
        a, b, c = medians["baseline"], medians["compile"], medians["bare"]
        heavy = _heavy_imports(compile_cmd, cwd)

    ratio = b / a
    passed = ratio <= TARGET_RATIO
    rows = [
        ("(a) import lark, sympy, jinja2", f"{a:.3f} s"),
        ("(b) plan compile 100m_dau.plan", f"{b:.3f} s"),
        ("ratio b/a", f"{ratio:.2f}  (target <= {TARGET_RATIO})  {'PASS' if passed else 'FAIL'}"),
        ("(c) the same plan without its questions", f"{c:.3f} s, ratio c/a {c / a:.2f}"),
        ("questions add (b - c)", f"{b - c:.3f} s"),
    ]
    print_rows(rows, args.runs)
    print("heavy imports: " + (", ".join(heavy) if heavy else "none"))

    if args.strict and (not passed or heavy):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
