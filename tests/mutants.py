"""Grammar-aware mutants of real plans, and a runner that checks the compiler's contract on each.

Shared by `tests/test_fuzz.py` (a few hundred mutants per CI run, fixed seed) and `bench/fuzz.py`
(ten thousand and more). A mutant is a seed plan (every example and a few stdlib files) changed by
one to three of: an identifier swapped for another of the file, a block or statement duplicated,
a number made extreme, a letter replaced by a homoglyph (or a zero-width space inserted), a BOM or
CR/CRLF line endings, a very long line, deep nesting, a broken string, an operator swapped.

`check_many(texts)` compiles each mutant in worker processes (one per core, memory limited with
`resource.setrlimit`), as `plan compile` does (report rendered to Markdown and JSON), and returns
per-mutant records: exit code, seconds, whether an exception escaped (a traceback), and whether a
failed compile had a located error. The workers' peak memory is reported too.
"""

from __future__ import annotations

import os
import random
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STDLIB = Path(str(resources.files("planc.stdlib")))
SEED_FILES = sorted((REPO / "examples").glob("*.plan")) + [
    STDLIB / "prelude.plan", STDLIB / "models" / "llama-3.1-8b.plan", STDLIB / "hardware" / "h100-sxm.plan",
    STDLIB / "models" / "deepseek-v3.plan", STDLIB / "kinds" / "deployment.plan",
]
SEEDS = [p.read_text(encoding="utf-8") for p in SEED_FILES]

_IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
_NUMBER = re.compile(r"\b[0-9][0-9_]*(?:\.[0-9_]+)?(?:[eE][+-]?[0-9]+)?")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_OPERATOR = re.compile(r"<=|>=|==|!=|\.\.|[-+*/^<>]")
EXTREME = ["0", "-1", "0.0", "1e308", "1e309", "1e400", "1e-400", "1e1000", "1e1001", "1e99999999", "9" * 101,
           "9" * 4301, "1" * 60, "0.000000000000000000001", "4294967297", "1_000_000_000_000", "2 ^ 1000",
           "10 ^ 400", "1e-300 ^ 2", "(1 / 0)", "sqrt(2) / 1e-400", "1e-400 ^ 2"]
HOMOGLYPHS = {"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "i": "і", "l": "ӏ"}
OPERATORS = ["+", "-", "*", "/", "^", "<", "<=", ">", ">=", "==", "!=", ".."]


def _swap_ident(r: random.Random, t: str) -> str:
    words = list(_IDENT.finditer(t))
    if not words:
        return t
    w = r.choice(words)
    return t[: w.start()] + r.choice(words).group() + t[w.end():]


def _duplicate(r: random.Random, t: str) -> str:
    lines = t.split("\n")
    i = r.randrange(len(lines))
    if lines[i].rstrip().endswith("{"):  # a block: up to its closing brace
        depth, j = 0, i
        while j < len(lines):
            depth += lines[j].count("{") - lines[j].count("}")
            if depth <= 0:
                break
            j += 1
        block = lines[i: j + 1]
    else:
        block = [lines[i]]
    at = r.randrange(len(lines) + 1)
    return "\n".join(lines[:at] + block + lines[at:])


def _extreme(r: random.Random, t: str) -> str:
    nums = list(_NUMBER.finditer(t))
    if not nums:
        return t + f"\nlet extreme = {r.choice(EXTREME)}\n"
    n = r.choice(nums)
    return t[: n.start()] + r.choice(EXTREME) + t[n.end():]


def _homoglyph(r: random.Random, t: str) -> str:
    words = [w for w in _IDENT.finditer(t) if any(c in HOMOGLYPHS for c in w.group())]
    if not words or r.random() < 0.2:
        at = r.randrange(len(t) + 1)
        return t[:at] + r.choice(["\u200b", "\u00a0", "\u202e", "\x1b[2J", "\ufeff"]) + t[at:]
    w = r.choice(words)
    k = r.choice([i for i, c in enumerate(w.group()) if c in HOMOGLYPHS])
    word = w.group()
    return t[: w.start()] + word[:k] + HOMOGLYPHS[word[k]] + word[k + 1:] + t[w.end():]


def _line_endings(r: random.Random, t: str) -> str:
    choice = r.randrange(4)
    if choice == 0:
        return "\ufeff" + t
    if choice == 1:
        return t.replace("\n", "\r\n")
    if choice == 2:
        return t.replace("\n", "\r")
    lines = t.split("\n")
    return "".join(line + r.choice(["\n", "\r\n", "\r"]) for line in lines)


def _long_line(r: random.Random, t: str) -> str:
    n = r.choice([5_000, 10_001, 20_000, 100_000])
    kind = r.randrange(4)
    if kind == 0:
        extra = "# " + "x" * n
    elif kind == 1:
        extra = 'title "' + "y" * min(n, 8000) + '"'
    elif kind == 2:
        extra = "let long = 1" + " * 1" * (n // 4)
    else:
        extra = "let " + "z" * n + " = 1"
    lines = t.split("\n")
    lines.insert(r.randrange(len(lines) + 1), extra)
    return "\n".join(lines)


def _deep(r: random.Random, t: str) -> str:
    n = r.choice([50, 99, 101, 200, 500, 2000])
    kind = r.randrange(4)
    if kind == 0:
        expr = "(" * n + "1" + ")" * n
    elif kind == 1:
        expr = " + ".join(["1"] * n)
    elif kind == 2:
        expr = "-" * n + "1"
    else:
        expr = "if true then " * min(n, 300) + "1" + " else 2" * min(n, 300)
    return t + f"\nlet deep = {expr}\nsummary deep\n"


def _broken_string(r: random.Random, t: str) -> str:
    strings = list(_STRING.finditer(t))
    if not strings:
        return t + '\ntitle "unterminated\n'
    s = r.choice(strings)
    body = s.group()
    kind = r.randrange(3)
    if kind == 0:
        new = body[:-1]
    elif kind == 1:
        new = body[:-1] + '\\"'
    else:
        cut = r.randrange(1, len(body))
        new = body[:cut] + "\n" + body[cut:]
    return t[: s.start()] + new + t[s.end():]


def _operator(r: random.Random, t: str) -> str:
    ops = list(_OPERATOR.finditer(t))
    if not ops:
        return t
    o = r.choice(ops)
    return t[: o.start()] + r.choice(OPERATORS) + t[o.end():]


def _question(r: random.Random, t: str) -> str:
    """A question with extreme domains, for the plans that have a deployment."""
    if "deployment chat" not in t and "chat" not in t:
        return _extreme(r, t)
    lo, hi = r.choice([("0", "8"), ("-1", "8"), ("1e-400", "256"), ("1", "10^400"), ("8", "1"), ("1", "2000"),
                       ("1", "1e300"), ("1", "100000")])
    step = r.choice(["", " log2", " log10", " linear"])
    stmt = r.choice([f"sweep chat over batch in {lo} .. {hi}{step}",
                     f"search chat over batch in {lo} .. {hi}{step} minimize cost_per_month",
                     f"compare chat over batch in [{lo}, {hi}]",
                     f"sweep chat over batch in {lo} .. {hi}{step}, tensor_parallel in 1 .. 10000"])
    return t + "\n" + stmt + "\n"


MUTATIONS = [_swap_ident, _duplicate, _extreme, _homoglyph, _line_endings, _long_line, _deep, _broken_string,
             _operator, _question]


def mutants(count: int, seed: int) -> list[str]:
    r = random.Random(seed)
    out = []
    for k in range(count):
        text = SEEDS[k % len(SEEDS)]
        for _ in range(r.randint(1, 3)):
            text = r.choice(MUTATIONS)(r, text)
        out.append(text)
    return out


# ---- running them ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    index: int
    exit_code: int  # 0, 1, 2, or -1 when an exception escaped
    seconds: float
    traceback: str  # the exception, when one escaped
    located: bool  # a failed compile has an error with a location


MEMORY_LIMIT = 1 << 30  # bytes the compile of one mutant may add to a worker
TIME_LIMIT = 10  # seconds per mutant, at least
SEED_FACTOR = 3  # or this many times the slowest unmutated seed takes on the same machine, if longer


def _one(args: tuple[int, str, str, float]) -> Outcome:
    import signal
    import time
    import traceback

    from planc.pipeline import compile_plan
    from planc.render_diagnostics import render_human, render_json, render_short

    index, text, directory, limit = args
    path = Path(directory) / f"mutant{os.getpid()}.plan"
    path.write_bytes(text.encode("utf-8", errors="surrogatepass"))

    def alarm(*_: object) -> None:
        raise TimeoutError(f"over {limit:.1f} s")

    signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    start = time.perf_counter()
    try:
        result = compile_plan(path, shown="mutant.plan")
        render_human(result.diagnostics, color=True)
        render_short(result.diagnostics)
        render_json(result.diagnostics)
        if result.ok:
            from planc.report.machine import document_json
            from planc.report.markdown import render_json as report_json
            from planc.report.markdown import render_markdown
            from planc.report.view import build_document

            doc = build_document(result)
            render_markdown(doc)
            report_json(document_json(doc, result))
        located = result.exit_code != 2 or any(d.is_error and d.primary is not None for d in result.diagnostics)
        return Outcome(index, result.exit_code, time.perf_counter() - start, "", located)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        return Outcome(index, -1, time.perf_counter() - start,
                       "".join(traceback.format_exception(exc))[-3000:], False)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _init_worker() -> None:
    import resource

    from planc.pipeline import compile_plan  # noqa: F401 - imports before the limit is measured

    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    used = _vm_bytes()
    if used:
        limit = used + MEMORY_LIMIT
        resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))


def _vm_bytes() -> int:
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def _peak() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def check_many(texts: list[str], workers: int | None = None) -> tuple[list[Outcome], int, float]:
    """Outcomes in order, the largest peak resident memory of a worker (bytes), and the time one
    mutant was allowed (s): `TIME_LIMIT`, or `SEED_FACTOR` times the slowest unmutated seed as the
    same pool compiles it first, whichever is longer. A mutant that blows up the compiler takes far
    longer than its seed; a machine that runs everything slower (a loaded CI runner) does not make
    one look like it."""
    import multiprocessing
    import tempfile

    workers = workers or max(1, min(os.cpu_count() or 1, 4))
    ctx = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    with (tempfile.TemporaryDirectory(prefix="plan-mutants-") as tmp,
          ctx.Pool(workers, initializer=_init_worker, maxtasksperchild=200) as pool):
        seeds = pool.map(_one, [(i, t, tmp, 60 * TIME_LIMIT) for i, t in enumerate(SEEDS)], chunksize=1)
        limit = max(TIME_LIMIT, SEED_FACTOR * max(o.seconds for o in seeds))
        outcomes = pool.map(_one, [(i, t, tmp, limit) for i, t in enumerate(texts)], chunksize=4)
        peaks = pool.map(_worker_peak, range(workers * 4))
    return outcomes, max(peaks), limit


def _worker_peak(_: int) -> int:
    return _peak()
