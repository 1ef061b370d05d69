"""Discrete-event simulation of continuous-batching LLM serving replicas behind a router.

Contract: `simulate(workload, engine, iteration_time, router, duration, seed, warmup, drain) ->
SimResult` generates the arrivals of `[0, duration)` and serves them on `router.replicas`
identical replicas, each an iteration-level scheduler in the manner of vLLM V1, and returns
per-request latencies, per-iteration records and time averages over the measurement window.
It is the oracle the analytic steady-state model is checked against. Pure Python and numpy,
deterministic for a given seed (one `numpy.random.default_rng(seed)` draws, in this order, the
inter-arrival gaps, the request classes when the workload has several, the prompt lengths, the
output lengths and, for `random` routing, the replicas). All quantities are SI: seconds and tokens. Inputs out of their domain raise
`ValueError`. The traffic it serves (`Workload`: arrivals, lengths, prefix caching) is drawn by
`sim_traffic.py`, whose contract says how.

Engine (`Engine`, per replica; `token_budget >= max_num_seqs` as vLLM requires)
Every iteration at replica step s:
1. Decodes: every running sequence whose prefill is complete decodes one token (the budget always
   covers them, since there are at most `max_num_seqs`). A decode whose context reaches a new
   block needs one free KV block. KV is allocated in whole blocks of `kv_block_size` tokens as a
   sequence's tokens appear: prompt chunks when they are scheduled, one token per decode.
2. Continuing prefills (chunked prefill only): sequences already running with an incomplete
   prefill, oldest first, take their next chunk from the budget left by the decodes.
3. When the blocks needed by 1 and 2 exceed the free ones, the most recently admitted running
   sequence is preempted (recompute: its blocks are freed and it goes back to the head of the
   waiting queue), again until they fit or one sequence is left; that one proceeds even beyond
   the capacity (KV in use then exceeds `kv_capacity_tokens`; it happens only when one request
   alone does not fit). A preempted sequence loses nothing it has emitted: when readmitted it is
   prefilled again over prompt + tokens emitted so far (cached prefix excepted), and that prefill
   emits its next token.
4. Admissions: the waiting queue, FCFS with preempted sequences at its head, is admitted while
   running sequences (prefilling included) < `max_num_seqs`, budget remains and the blocks of the
   sequence's first chunk are free (a sequence that does not fit stops admission: no overtaking;
   when nothing runs, the head is admitted even if it does not fit). With `chunked_prefill` a
   prompt is split to fill the budget exactly, so decodes + prefill tokens never exceed
   `token_budget`. Without it a prompt is prefilled whole in one iteration: the first prompt of
   an iteration is admitted whatever its length (the budget may be exceeded by it), later ones
   only while they fit in the remaining budget.
5. The iteration lasts `iteration_time(decodes, decode_context_mean, prefill_tokens,
   prefill_context_mean)` seconds. The decode context of a sequence is the number of KV tokens it
   attends to (prompt + tokens emitted before the iteration; the one being decoded included); the
   prefill context of a prompt token is its position in its sequence (tokens before it, cached
   prefix included); each mean is 0 when the iteration has none. At the iteration's end each
   decode emits a token, each sequence whose last prefill chunk ran emits one (its first: TTFT =
   that time − arrival), and a sequence that has emitted its output length finishes and frees its
   blocks. An idle replica starts its next iteration at the next arrival routed to it; arrivals
   join the waiting queue and are considered at the next iteration's start.
Only `preemption = "recompute"` is modelled (swap is not).

Router (`Router`): `random` (uniform, drawn up front), `round_robin` (arrival i to replica
i mod n) or `least_loaded` (the replica with the fewest requests in system, waiting + running, at
the arrival instant; ties to the lowest index). All replicas advance in one event loop ordered by
time (a heap of iteration ends, merged with the arrival sequence).

Measurement (`SimResult`)
- The run stops at `duration` (requests still in system are counted in `unfinished`), or with
  `drain` once every request has finished. The window is [warmup · duration, end of run].
- Per request (those finishing in the window): arrival, ttft, tpot = (finish − first token) /
  (output − 1) (NaN when output == 1), e2e, prompt and output lengths, preemptions.
- Per iteration (those starting and ending in the window): start, duration, decodes, prefill
  tokens, tokens emitted, running sequences, KV tokens in use (allocated blocks × block size).
  Inter-token latencies are the iteration durations weighted by their decodes.
- Time averages per replica over the window (iterations clipped to it, idle time counts as 0):
  running sequences, KV tokens in use; requests in system (waiting + running, from the router's
  own counters, per group); throughput = tokens emitted by iterations ending in the window / its
  length. `summary()` gives p50/p99 (numpy's default linear method; ITL by the equivalent
  weighted percentile) and these means, and the requests still without a first token at the end
  (`waiting`: a queue that grew for the whole run leaves most of its late arrivals there).
- Sampling error: `intervals()` gives, for the latencies and means of `summary()` (and of one
  class with `klass`), a 90 % interval by a block bootstrap: the window is cut into 20 equal spans
  (a request by its arrival, an iteration by its start), 1,000 draws of 20 spans with replacement
  (a fixed generator: the same draws every run) each give the statistic again, and the interval
  is their 5th to 95th percentile. Spans, not requests, are drawn because latencies come in
  spells (a long prompt slows every request behind it), which single requests drawn apart would
  hide. A percentile is taken from each span's histogram of 2,048 bins equal in log; one with
  fewer than 5 values beyond it has no interval (nan): no draw can reach past the run's largest
  values. `tests/test_simulate.py` measures the coverage: 81-88 % of 100 runs for 90 %.
- `distributions()`: each latency's mean and its p50, p90, p95, p99 and p99.9 (`LADDER`).

Cost: O(1) amortised Python work per iteration and per request, whatever the batch: the
decoders' context sum is kept as sum(offset) + count · step; each decoder's finish is a known
step (buckets keyed by step, stale entries skipped by an epoch count); a decoder opens a block
every `kv_block_size` steps, so the decoders are counted by the residue of that step; the
least-loaded replica is read off a bitmask per load level, not found by a scan; the next event is
the root of a winner tree over the replicas' iteration ends. That loop lives in `sim_engine.py`,
which the install compiles with mypyc (`engine_module()` says which one runs); the result is built
from views of the iteration log (one buffer, grown in place), not copies, and the ITL percentiles
sort only a bracket of the durations about each rank (`_at_ranks`). `bench/simulate.py` times one
hour at 1,000 requests/s over 40 replicas, and the flagship's hour on its own physics.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from . import sim_engine
from .sim_engine import IterationLog, IterationTime, Limits, Requests
from .sim_traffic import LengthClass, Workload, arrival_times, lengths, lognormal_fit, sample_lengths

__all__ = ["ROUTERS", "Engine", "IterationTime", "LengthClass", "Router", "SimResult", "Workload", "arrival_times", "engine_module",
           "lognormal_fit", "sample_lengths", "simulate", "weighted_percentile"]

ROUTERS = ("random", "round_robin", "least_loaded")


@dataclass(frozen=True)
class Engine:
    """One replica's scheduler limits and KV memory, in tokens."""

    max_num_seqs: int
    token_budget: int
    kv_capacity_tokens: int
    kv_block_size: int = 16
    chunked_prefill: bool = True
    preemption: str = "recompute"


@dataclass(frozen=True)
class Router:
    """How arrivals are spread over `replicas` identical replicas."""

    policy: str = "least_loaded"
    replicas: int = 1


@dataclass(frozen=True)
class SimResult:
    """Per-request arrays (requests finishing in the window), per-iteration arrays (iterations
    inside it), and time averages over it; seconds and tokens."""

    window: tuple[float, float]
    replicas: int
    arrival: np.ndarray
    ttft: np.ndarray
    tpot: np.ndarray
    e2e: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    preemptions: np.ndarray
    iter_start: np.ndarray
    iter_duration: np.ndarray
    iter_decodes: np.ndarray
    iter_prefill_tokens: np.ndarray
    iter_emitted: np.ndarray
    iter_running: np.ndarray
    iter_kv_tokens: np.ndarray
    mean_running: float
    mean_kv_tokens: float
    mean_in_system: float
    throughput: float
    arrived: int
    unfinished: int
    klass: np.ndarray  # per request: the index of its class in `Workload.classes` (0 without classes)
    waiting: int = 0  # requests that had arrived and had no first token at the end (queued or prefilling)

    @property
    def completed_rate(self) -> float:
        return len(self.e2e) / (self.window[1] - self.window[0])

    def class_latency(self, klass: int) -> dict[str, float]:
        """TTFT and TPOT percentiles of one request class's requests."""
        mine = self.klass == klass
        ttft, tpot = self.ttft[mine], self.tpot[mine]
        tpot = tpot[~np.isnan(tpot)]
        return {"requests": float(mine.sum()), "ttft_p50": _percentile(ttft, 50), "ttft_p99": _percentile(ttft, 99),
                "ttft_mean": _mean(ttft), "tpot_mean": _mean(tpot), "tpot_p99": _percentile(tpot, 99)}

    def intervals(self, klass: int | None = None) -> dict[str, tuple[float, float]]:
        """The sampling error of `summary()`'s latencies and means (of one class's with `klass`, as
        `class_latency` gives them): for each, the `INTERVAL_LEVEL` interval of a block bootstrap
        over the window (the contract's Measurement). (nan, nan) where there is too little to tell."""
        blocks = _Blocks(self.window, INTERVAL_BLOCKS, INTERVAL_RESAMPLES)
        mine = np.ones(len(self.ttft), dtype=bool) if klass is None else self.klass == klass
        arrival, ttft, tpot = self.arrival[mine], self.ttft[mine], self.tpot[mine]
        out = {"ttft_p50": blocks.percentile(ttft, arrival, 50), "ttft_p99": blocks.percentile(ttft, arrival, 99),
               "tpot_mean": blocks.mean(tpot, arrival), "tpot_p99": blocks.percentile(tpot, arrival, 99)}
        if klass is None:
            out["tpot_p50"] = blocks.percentile(tpot, arrival, 50)
            out["itl_p99"] = blocks.percentile(self.iter_duration, self.iter_start, 99, self.iter_decodes)
            span = (self.window[1] - self.window[0]) * self.replicas
            out["mean_running"] = blocks.total(self.iter_running * self.iter_duration, self.iter_start, span)
        return out

    def distributions(self) -> dict[str, dict[str, float]]:
        """Each latency's distribution over the measured requests (ITL: over the decode tokens,
        each iteration counted once per decode): its mean and `LADDER` percentiles, in seconds."""
        tpot = self.tpot[~np.isnan(self.tpot)]
        out = {name: {"mean": _mean(values), **dict(zip((f"p{q:g}" for q in LADDER),
                                                          np.percentile(values, LADDER).tolist() if len(values)
                                                          else [math.nan] * len(LADDER)))}
               for name, values in (("ttft", self.ttft), ("tpot", tpot), ("e2e", self.e2e))}
        decodes = self.iter_decodes.astype(float)
        itl_mean = float(self.iter_duration @ decodes / decodes.sum()) if decodes.sum() > 0 else math.nan
        itl = weighted_percentiles(self.iter_duration, self.iter_decodes, LADDER)
        out["itl"] = {"mean": itl_mean, **dict(zip((f"p{q:g}" for q in LADDER), itl))}
        return out

    def summary(self) -> dict[str, float]:
        tpot = self.tpot[~np.isnan(self.tpot)]
        return {
            "requests": float(len(self.e2e)),
            "ttft_p50": _percentile(self.ttft, 50), "ttft_p99": _percentile(self.ttft, 99),
            "tpot_p50": _percentile(tpot, 50), "tpot_p99": _percentile(tpot, 99),
            **dict(zip(("itl_p50", "itl_p99"), weighted_percentiles(self.iter_duration, self.iter_decodes, (50, 99)))),
            "e2e_p50": _percentile(self.e2e, 50), "e2e_p99": _percentile(self.e2e, 99),
            "ttft_mean": _mean(self.ttft), "tpot_mean": _mean(tpot), "e2e_mean": _mean(self.e2e),
            "mean_running": self.mean_running, "mean_kv_tokens": self.mean_kv_tokens,
            "mean_in_system": self.mean_in_system, "throughput_tokens_per_s": self.throughput,
            "completed_per_s": self.completed_rate,
            "preemptions_per_request": _mean(self.preemptions.astype(float)),
            "unfinished": float(self.unfinished), "waiting_at_end": float(self.waiting),
        }


def _percentile(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else math.nan


def _mean(values: np.ndarray) -> float:
    return float(np.mean(values)) if len(values) else math.nan


LADDER = (50, 90, 95, 99, 99.9)
"""The percentiles `distributions()` gives."""
INTERVAL_LEVEL = 0.9
INTERVAL_BLOCKS = 20
INTERVAL_RESAMPLES = 1000
INTERVAL_BINS = 2048
INTERVAL_TAIL = 5


class _Blocks:
    """The window cut into `count` equal spans of time, and `resamples` draws of `count` spans
    with replacement (the same draws for every run: a fixed generator), over which a statistic
    is taken again from each span's own sums or histogram."""

    def __init__(self, window: tuple[float, float], count: int, resamples: int) -> None:
        self.lo, self.span, self.count = window[0], window[1] - window[0], count
        self.draws = np.random.default_rng(0).multinomial(count, np.full(count, 1 / count), size=resamples).astype(float)

    def _of(self, times: np.ndarray) -> np.ndarray:
        """The span each time falls in (a time before the window, a request that arrived during
        the warm-up, in the first)."""
        scaled = np.floor((times - self.lo) / self.span * self.count) if self.span > 0 else np.zeros(len(times))
        return np.clip(scaled, 0, self.count - 1).astype(np.int64)

    def _ends(self, statistic: np.ndarray) -> tuple[float, float]:
        statistic = statistic[np.isfinite(statistic)]
        if len(statistic) < len(self.draws) // 2:
            return math.nan, math.nan
        tail = (1 - INTERVAL_LEVEL) / 2 * 100
        low, high = np.percentile(statistic, [tail, 100 - tail])
        return float(low), float(high)

    def percentile(self, values: np.ndarray, times: np.ndarray, q: float,
                   weights: np.ndarray | None = None) -> tuple[float, float]:
        """The interval of the q-th percentile of positive values (weighted: each counted
        `weights` times): each span's values in `INTERVAL_BINS` bins equal in log between the
        least and the greatest, the quantile of each draw's pooled bins interpolated in its bin.
        (nan, nan) with fewer than `INTERVAL_TAIL` values beyond it: resampling cannot reach past
        the run's own largest values, so the interval of an extreme quantile of a few would be
        too narrow."""
        keep = np.isfinite(values) & (values > 0)
        if weights is not None:
            keep &= weights > 0
        v, spans = values[keep], self._of(times[keep])
        count = float(len(v) if weights is None else weights[keep].sum())
        if min(q, 100 - q) / 100 * count < INTERVAL_TAIL or len(np.unique(spans)) < 2:
            return math.nan, math.nan  # too few values beyond the percentile for a draw to move it
        low, high = math.log(float(v.min())), math.log(float(v.max()))
        if high == low:
            return float(v[0]), float(v[0])
        width = (high - low) / INTERVAL_BINS
        bins = np.minimum(((np.log(v) - low) / width).astype(np.int64), INTERVAL_BINS - 1)
        counts = np.bincount(spans * INTERVAL_BINS + bins, None if weights is None else weights[keep],
                             minlength=self.count * INTERVAL_BINS).reshape(self.count, INTERVAL_BINS)
        pooled = self.draws @ counts
        cum = np.cumsum(pooled, axis=1)
        total = cum[:, -1]
        target = total * q / 100
        at = np.minimum((cum < target[:, None]).sum(axis=1), INTERVAL_BINS - 1)
        rows = np.arange(len(at))
        below = np.where(at > 0, cum[rows, at - 1], 0.0)
        inside = pooled[rows, at]
        share = np.clip((target - below) / np.where(inside > 0, inside, 1.0), 0, 1)
        return self._ends(np.where(total > 0, np.exp(low + (at + share) * width), np.nan))

    def mean(self, values: np.ndarray, times: np.ndarray) -> tuple[float, float]:
        """The interval of the mean of the finite values."""
        keep = np.isfinite(values)
        spans = self._of(times[keep])
        if len(np.unique(spans)) < 2:
            return math.nan, math.nan
        sums = self.draws @ np.bincount(spans, values[keep], minlength=self.count)
        counts = self.draws @ np.bincount(spans, minlength=self.count).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return self._ends(sums / counts)

    def total(self, amounts: np.ndarray, times: np.ndarray, divisor: float) -> tuple[float, float]:
        """The interval of a sum over the window (divided by `divisor`: a time average's)."""
        spans = self._of(times)
        if len(np.unique(spans)) < 2 or not divisor > 0:
            return math.nan, math.nan
        return self._ends(self.draws @ np.bincount(spans, amounts, minlength=self.count) / divisor)


def weighted_percentile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """`np.percentile(np.repeat(values, weights), q)` (linear method) without the repetition."""
    return weighted_percentiles(values, weights, (q,))[0]


def weighted_percentiles(values: np.ndarray, weights: np.ndarray, qs: tuple[float, ...]) -> list[float]:
    """`weighted_percentile` at each of `qs` (integer weights): each the two values at the ranks
    about it in the values repeated by their weights and sorted, by `_at_ranks`."""
    keep = weights > 0
    if not keep.any():
        return [math.nan] * len(qs)
    v, w = values[keep], weights[keep]
    total = w.sum()
    out = []
    for q in qs:
        h = (total - 1) * q / 100
        lo = math.floor(h)
        a, b = _at_ranks(v, w, lo, min(lo + 1, total - 1))
        out.append(float(a + (b - a) * (h - lo)))
    return out


SELECT_SAMPLE = 1 << 14
"""Above four times this many values, `_at_ranks` sorts only those in a bracket about its ranks."""


def _at_ranks(values: np.ndarray, weights: np.ndarray, first: int, last: int) -> tuple[Any, Any]:
    """The values at ranks `first` <= `last` (from 0) of `values` repeated by `weights` and sorted.

    Sorting tens of millions of values (an hour of iterations) takes a second, so above
    4 × `SELECT_SAMPLE` of them a sample (every n/`SELECT_SAMPLE`-th value) brackets the ranks:
    its own weighted ranks, widened by 4/√sample (eight times the sampling error of a share), give
    values a and b, and only the values in [a, b] are sorted, after those below a, counted by
    their weights. Where the ranks fall outside the bracket (a sample that misleads), every value
    is sorted. The values found are the same either way: ties sort in any order, and the value
    at a cumulative weight is the same whichever of them carries it."""
    offset = 0
    if len(values) > 4 * SELECT_SAMPLE:
        stride = len(values) // SELECT_SAMPLE
        sample, order = values[::stride], np.argsort(values[::stride])
        sample, cum = sample[order], np.cumsum(weights[::stride][order])
        total, margin = weights.sum(), 4 / math.sqrt(len(sample))
        i = int(np.searchsorted(cum, (first / total - margin) * cum[-1], side="left")) - 1
        j = int(np.searchsorted(cum, ((last + 1) / total + margin) * cum[-1], side="left"))
        below = values < sample[i] if i >= 0 else np.zeros(len(values), dtype=bool)
        inside = ~below & (values <= sample[j]) if j < len(sample) else ~below
        offset = weights[below].sum()
        if offset <= first and last < offset + weights[inside].sum():
            values, weights = values[inside], weights[inside]
        else:
            offset = 0
    order = np.argsort(values)
    cum = offset + np.cumsum(weights[order])
    i, j = np.searchsorted(cum, [first, last], side="right")
    return values[order[i]], values[order[j]]


def simulate(workload: Workload, engine: Engine, iteration_time: IterationTime, router: Router,
             duration: float, seed: int = 0, warmup: float = 0.1, drain: bool = False) -> SimResult:
    _validate(workload, engine, router, duration, warmup)
    rng = np.random.default_rng(seed)
    arrivals = arrival_times(workload.rate, workload.arrival_cv, duration, rng)
    prompt, output, klass = lengths(workload, len(arrivals), rng)
    n = router.replicas
    if router.policy == "random":
        routes = rng.integers(0, n, len(arrivals)).tolist()
    elif router.policy == "round_robin":
        routes = (np.arange(len(arrivals)) % n).tolist()
    else:  # least loaded: the loop routes each arrival as it comes
        routes = []
    cached = np.minimum(np.floor(workload.prefix_hit_rate * prompt), prompt - 1).astype(np.int64)
    loop = engine_module()
    requests = loop.Requests(prompt.tolist(), output.tolist(), cached.tolist())
    log = loop.IterationLog(_Resized())
    limits = Limits(engine.max_num_seqs, engine.token_budget, engine.kv_capacity_tokens, engine.kv_block_size,
                    engine.chunked_prefill)
    sim = loop.Group(limits, iteration_time, requests, log, n)
    end = sim.run(arrivals.tolist(), routes, router.policy == "least_loaded",
                  warmup * duration, math.inf if drain else duration)
    return _result(requests, log, arrivals, prompt, output, klass, sim, (warmup * duration, float(end)), n)


class _Resized:
    """`IterationLog`'s `grow`: a numpy array resized in place (`realloc`, which moves a large
    block's pages rather than copying them), lent out as a memoryview (released before each
    resize, since numpy refuses to resize an array whose memory is lent)."""

    def __init__(self) -> None:
        self.array = np.empty(0, dtype=np.uint8)
        self.view: memoryview | None = None

    def __call__(self, size: int) -> memoryview:
        if self.view is not None:
            self.view.release()
        self.array.resize(size, refcheck=False)
        self.view = self.array.data
        return self.view


@functools.cache
def engine_module() -> ModuleType:
    """The event loop `simulate` runs: `planc._sim_engine_native`, the copy of `sim_engine.py`
    that mypyc compiled at install, when it was built from this very source (its SHA-256 stamp
    matches the file) and `PLAN_PURE_PYTHON` is not set; `sim_engine` itself otherwise."""
    if os.environ.get("PLAN_PURE_PYTHON"):
        return sim_engine
    try:
        from . import _sim_engine_native as native  # type: ignore[attr-defined]
    except ImportError:
        return sim_engine
    source = Path(sim_engine.__file__).read_bytes()
    return native if getattr(native, "SOURCE_SHA256", None) == hashlib.sha256(source).hexdigest() else sim_engine


def _validate(workload: Workload, engine: Engine, router: Router, duration: float, warmup: float) -> None:
    checks = [
        (workload.rate > 0, "rate must be positive"),
        (workload.arrival_cv >= 0, "arrival_cv must be >= 0"),
        (0 <= workload.prefix_hit_rate < 1, "prefix_hit_rate must lie in [0, 1)"),
        (workload.max_context is None or workload.max_context >= 2, "max_context must be >= 2"),
        (engine.max_num_seqs >= 1, "max_num_seqs must be >= 1"),
        (engine.token_budget >= engine.max_num_seqs, "token_budget must be >= max_num_seqs"),
        (engine.kv_block_size >= 1, "kv_block_size must be >= 1"),
        (engine.kv_capacity_tokens >= engine.kv_block_size, "kv_capacity_tokens must hold a block"),
        (engine.preemption == "recompute", "only preemption = 'recompute' is modelled"),
        (router.policy in ROUTERS, f"router policy must be one of {', '.join(ROUTERS)}"),
        (router.replicas >= 1, "replicas must be >= 1"),
        (duration > 0, "duration must be positive"),
        (0 <= warmup < 1, "warmup must lie in [0, 1)"),
    ]
    for ok, message in checks:
        if not ok:
            raise ValueError(message)


def _columns(log: IterationLog) -> dict[str, np.ndarray]:
    """The log's columns: views of its buffer, one field of its rows each (no copy: a copy would
    fault in as much fresh memory again)."""
    kinds = {"d": "<f8", "q": "<i8"}
    dtype = np.dtype([(name, kinds[code]) for name, code in zip(IterationLog.COLUMNS, IterationLog.FORMAT[1:], strict=True)])
    rows = np.frombuffer(log.buffer, dtype=dtype, count=log.rows)
    return {name: rows[name] for name in IterationLog.COLUMNS}


CHUNK = 1 << 20
"""Rows per pass of `_iteration_sums`: its temporaries (8 MiB each) are reused from one chunk to
the next, where arrays over a whole run (hundreds of MB) would each be fresh memory, and first
touching fresh memory is most of the cost of such a pass."""


def _window_rows(cols: dict[str, np.ndarray], lo: float, hi: float) -> slice:
    """The rows of the iterations that start and end in [lo, hi], as a slice, so that the result's
    columns are views of the log rather than copies of tens of millions of rows.

    The log's rows are in the order the iterations start (`sim_engine`'s contract), so those
    starting from `lo` on are a suffix. Of them only iterations still running at `hi` end late, and
    those started within one iteration's length of `hi`, among rows of iterations that end in time.
    Those last rows are put in the order (in time, then late) in place, each group keeping its
    order: the rows inside are then a slice, in the order they started."""
    start, duration = cols["start"], cols["duration"]
    first = int(np.searchsorted(start, lo, side="left"))
    if not len(start) or not math.isfinite(hi):
        return slice(first, len(start))
    # rows that start two longest iterations before hi end in time, whatever the rounding
    tail = max(first, int(np.searchsorted(start, hi - 2 * float(duration.max()), side="right")))
    late = start[tail:] + duration[tail:] > hi
    if not late.any():
        return slice(first, len(start))
    order = np.concatenate((np.flatnonzero(~late), np.flatnonzero(late)))
    for column in cols.values():
        column[tail:] = column[tail:][order]
    return slice(first, len(start) - int(late.sum()))


def _iteration_sums(cols: dict[str, np.ndarray], lo: float, hi: float) -> tuple[float, float, int]:
    """Over every logged iteration, each clipped to [lo, hi]: the integrals of running sequences
    and of KV tokens in use, and the tokens emitted by iterations ending in the window."""
    running = kv_tokens = 0.0
    emitted = 0
    for a in range(0, len(cols["start"]), CHUNK):
        part = {name: column[a:a + CHUNK] for name, column in cols.items()}
        start = part["start"]
        stop = start + part["duration"]
        weight = np.clip(np.minimum(stop, hi) - np.maximum(start, lo), 0, None)
        running += float(weight @ part["running"])
        kv_tokens += float(weight @ part["kv_tokens"])
        emitted += int(np.sum(part["emitted"], where=(stop > lo) & (stop <= hi)))
    return running, kv_tokens, emitted


def _result(rq: Requests, log: IterationLog, arrivals: np.ndarray, prompt: np.ndarray, output: np.ndarray,
            klass: np.ndarray, group: sim_engine.Group, window: tuple[float, float], replicas: int) -> SimResult:
    lo, hi = window
    span = hi - lo
    first, finish = np.array(rq.first), np.array(rq.finish)
    done = (finish >= 0) & (finish >= lo)
    output = output[done]
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(output > 1, (finish[done] - first[done]) / (output - 1), np.nan)
    cols = _columns(log)
    inside = _window_rows(cols, lo, hi)
    running, kv_tokens, emitted = _iteration_sums(cols, lo, hi)
    return SimResult(
        window=window, replicas=replicas,
        arrival=arrivals[done], ttft=(first - arrivals)[done], tpot=tpot, e2e=(finish - arrivals)[done],
        prompt=prompt[done], output=output, preemptions=np.array(rq.preempted)[done],
        iter_start=cols["start"][inside], iter_duration=cols["duration"][inside],
        iter_decodes=cols["decodes"][inside], iter_prefill_tokens=cols["prefill"][inside],
        iter_emitted=cols["emitted"][inside], iter_running=cols["running"][inside],
        iter_kv_tokens=cols["kv_tokens"][inside],
        mean_running=running / (span * replicas), mean_kv_tokens=kv_tokens / (span * replicas),
        mean_in_system=group.in_system_area / span, throughput=emitted / span,
        arrived=len(arrivals), unfinished=group.unfinished, klass=klass[done],
        waiting=int(np.sum((first < 0) & (arrivals <= hi))),
    )
