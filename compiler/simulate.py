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
  weighted percentile) and these means.

Cost: O(1) amortised Python work per iteration and per request, whatever the batch: the
decoders' context sum is kept as sum(offset) + count · step; each decoder's finish is a known
step (buckets keyed by step, stale entries skipped by an epoch count); a decoder opens a block
every `kv_block_size` steps, so the decoders are counted by the residue of that step.
`bench/simulate.py` times one hour at 1,000 requests/s over 40 replicas.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .sim_traffic import LengthClass, Workload, arrival_times, lengths, lognormal_fit, sample_lengths

__all__ = ["ROUTERS", "Engine", "IterationTime", "LengthClass", "Router", "SimResult", "Workload", "arrival_times", "lognormal_fit",
           "sample_lengths", "simulate", "weighted_percentile"]

IterationTime = Callable[[Any, Any, Any, Any], Any]
"""`f(decodes, decode_context_mean, prefill_tokens, prefill_context_mean) -> seconds`."""

ROUTERS = ("random", "round_robin", "least_loaded")
_WAITING, _PREFILL, _DECODE, _DONE = 0, 1, 2, 3


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

    def summary(self) -> dict[str, float]:
        tpot = self.tpot[~np.isnan(self.tpot)]
        return {
            "requests": float(len(self.e2e)),
            "ttft_p50": _percentile(self.ttft, 50), "ttft_p99": _percentile(self.ttft, 99),
            "tpot_p50": _percentile(tpot, 50), "tpot_p99": _percentile(tpot, 99),
            "itl_p50": weighted_percentile(self.iter_duration, self.iter_decodes, 50),
            "itl_p99": weighted_percentile(self.iter_duration, self.iter_decodes, 99),
            "e2e_p50": _percentile(self.e2e, 50), "e2e_p99": _percentile(self.e2e, 99),
            "ttft_mean": _mean(self.ttft), "tpot_mean": _mean(tpot), "e2e_mean": _mean(self.e2e),
            "mean_running": self.mean_running, "mean_kv_tokens": self.mean_kv_tokens,
            "mean_in_system": self.mean_in_system, "throughput_tokens_per_s": self.throughput,
            "completed_per_s": self.completed_rate,
            "preemptions_per_request": _mean(self.preemptions.astype(float)),
            "unfinished": float(self.unfinished),
        }


def _percentile(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else math.nan


def _mean(values: np.ndarray) -> float:
    return float(np.mean(values)) if len(values) else math.nan


def weighted_percentile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """`np.percentile(np.repeat(values, weights), q)` (linear method) without the repetition."""
    keep = weights > 0
    if not keep.any():
        return math.nan
    order = np.argsort(values[keep], kind="stable")
    v, cum = values[keep][order], np.cumsum(weights[keep][order])
    h = (cum[-1] - 1) * q / 100
    lo = math.floor(h)
    i, j = np.searchsorted(cum, [lo, min(lo + 1, cum[-1] - 1)], side="right")
    return float(v[i] + (v[j] - v[i]) * (h - lo))


def simulate(workload: Workload, engine: Engine, iteration_time: IterationTime, router: Router,
             duration: float, seed: int = 0, warmup: float = 0.1, drain: bool = False) -> SimResult:
    _validate(workload, engine, router, duration, warmup)
    rng = np.random.default_rng(seed)
    arrivals = arrival_times(workload.rate, workload.arrival_cv, duration, rng)
    prompt, output, klass = lengths(workload, len(arrivals), rng)
    n = router.replicas
    routes = rng.integers(0, n, len(arrivals)) if router.policy == "random" else np.arange(len(arrivals)) % n
    cached = np.minimum(np.floor(workload.prefix_hit_rate * prompt), prompt - 1).astype(np.int64)
    requests = _Requests(prompt, output, cached)
    log = _IterationLog()
    sim = _Group(engine, iteration_time, requests, log, n)
    end = sim.run(arrivals.tolist(), routes.tolist(), router.policy == "least_loaded",
                  warmup * duration, math.inf if drain else duration)
    return _result(requests, log, arrivals, klass, sim, (warmup * duration, end), n)


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


class _Requests:
    """Per-request state, in plain lists (the fastest scalar access in Python), shared by the
    replicas. `need`: KV tokens the current prefill must reach (prompt + tokens emitted); `done`:
    tokens in KV so far in it (from the cached prefix); `held`: blocks held while prefilling;
    `emitted`: tokens emitted, as of the last prefill or preemption (a decoder's count follows
    from its context); `off`: decode offset, the context at replica step s being off + s; `epoch`: bumped when a
    decoder stops, to void its entry in the finishing buckets."""

    def __init__(self, prompt: np.ndarray, output: np.ndarray, cached: np.ndarray) -> None:
        n = len(prompt)
        self.prompt: list[int] = prompt.tolist()
        self.output: list[int] = output.tolist()
        self.cached: list[int] = cached.tolist()
        self.need: list[int] = prompt.tolist()
        self.done: list[int] = cached.tolist()
        self.held = [0] * n
        self.emitted = [0] * n
        self.off = [0] * n
        self.epoch = [0] * n
        self.state = [_WAITING] * n
        self.preempted = [0] * n
        self.first = [-1.0] * n
        self.finish = [-1.0] * n


class _IterationLog:
    """One row per iteration, in unboxed arrays: start, duration, decodes, prefill tokens, tokens
    emitted, running sequences, KV tokens in use."""

    COLUMNS = ("start", "duration", "decodes", "prefill", "emitted", "running", "kv_tokens")

    def __init__(self) -> None:
        self.columns: list[array[Any]] = [array("d"), array("d")] + [array("q") for _ in range(5)]
        appends = [column.append for column in self.columns]
        a, b, c, d, e, f, g = appends

        def record(start: float, duration: float, decodes: int, prefill: int, emitted: int,
                   running: int, kv_tokens: int) -> None:
            a(start), b(duration), c(decodes), d(prefill), e(emitted), f(running), g(kv_tokens)

        self.record = record

    def array(self, name: str) -> np.ndarray:
        column = self.columns[self.COLUMNS.index(name)]
        return np.frombuffer(column, dtype=np.float64 if column.typecode == "d" else np.int64)


class _Replica:
    """One engine's scheduler; `start(t)` schedules an iteration and returns its end (None when
    there is nothing to do), `end(t)` applies it and returns how many requests finished."""

    def __init__(self, engine: Engine, iteration_time: IterationTime, requests: _Requests, log: _IterationLog) -> None:
        self.iteration_time = iteration_time
        self.block = engine.kv_block_size
        self.capacity = engine.kv_capacity_tokens // engine.kv_block_size
        self.max_seqs = engine.max_num_seqs
        self.budget = engine.token_budget
        self.chunked = engine.chunked_prefill
        self.rq = requests
        self.record = log.record
        self.waiting: deque[int] = deque()
        self.running: dict[int, None] = {}  # admission order: the last one is the next victim
        self.partial: dict[int, None] = {}  # running, prefill incomplete, oldest first
        self.finishing: dict[int, list[tuple[int, int]]] = {}  # step -> (request, epoch)
        self.phase = [0] * engine.kv_block_size  # decoders by the step residue at which they open a block
        self.completing: list[int] = []  # last prefill chunk in the current iteration
        self.step = 0
        self.decoders = 0
        self.off_sum = 0
        self.used = 0  # blocks

    def start(self, t: float) -> float | None:
        step = self.step + 1
        demand = self.phase[step % self.block]
        plans = self._plan_partials() if self.partial else []
        if plans:
            demand += sum(p[2] for p in plans)
        if demand > self.capacity - self.used and len(self.running) > 1:
            demand = self._preempt_for(demand, step, plans)
        self.used += demand
        decoders = self.decoders
        context = (self.off_sum + decoders * step) / decoders if decoders else 0.0
        if self.completing:
            self.completing = []
        tokens = positions = 0
        if plans:
            tokens, positions = self._run_partials(plans)
        if self.waiting:
            more, more_positions = self._admit(self.budget - decoders - tokens, tokens)
            tokens, positions = tokens + more, positions + more_positions
        if not decoders and not tokens:
            return None
        dt = float(self.iteration_time(decoders, context, tokens, positions / tokens if tokens else 0.0))
        if not dt > 0:
            raise ValueError(f"iteration_time must be positive (got {dt} for {decoders} decodes, {tokens} prefill tokens)")
        self.record(t, dt, decoders, tokens, decoders + len(self.completing), len(self.running), self.used * self.block)
        return t + dt

    def end(self, t: float) -> int:
        self.step = step = self.step + 1
        finished = 0
        entries = self.finishing.pop(step, None)
        if entries:
            epoch = self.rq.epoch
            for r, e in entries:
                if epoch[r] == e:
                    self._stop_decoding(r)
                    self._finish(r, t)
                    finished += 1
        if self.completing:
            finished += self._complete_prefills(t, step)
        return finished

    def _complete_prefills(self, t: float, step: int) -> int:
        """The sequences whose last prefill chunk ran emit a token; returns how many finished."""
        rq = self.rq
        first, emitted, output = rq.first, rq.emitted, rq.output
        finished = 0
        for r in self.completing:
            emitted[r] += 1
            if first[r] < 0:
                first[r] = t
            if emitted[r] == output[r]:
                self.used -= rq.held[r]
                self._finish(r, t)
                finished += 1
            else:
                self._start_decoding(r, step)
        return finished

    def _plan_partials(self) -> list[tuple[int, int, int]]:
        """(request, chunk, new blocks) for the running prefills, in the budget the decodes leave."""
        if not self.partial:
            return []
        need, done, held, block = self.rq.need, self.rq.done, self.rq.held, self.block
        left = self.budget - self.decoders
        plans = []
        for r in self.partial:
            if left <= 0:
                break
            n = min(need[r] - done[r], left)
            left -= n
            plans.append((r, n, -(-(done[r] + n) // block) - held[r]))
        return plans

    def _preempt_for(self, demand: int, step: int, plans: list[tuple[int, int, int]]) -> int:
        """Preempt the most recent admissions until the running sequences' demand fits (or one is
        left); returns the demand of those that remain."""
        wants = {r: blocks for r, _, blocks in plans}
        state, off = self.rq.state, self.rq.off
        while demand > self.capacity - self.used and len(self.running) > 1:
            victim, _ = self.running.popitem()
            if state[victim] == _DECODE:
                demand -= (1 - off[victim]) % self.block == step % self.block
            else:
                demand -= wants.pop(victim, 0)
            self._preempt(victim)
        return demand

    def _preempt(self, r: int) -> None:
        rq = self.rq
        if rq.state[r] == _DECODE:
            rq.emitted[r] = rq.off[r] + self.step - rq.prompt[r] + 1  # context = prompt + emitted - 1
            self._stop_decoding(r)
        else:
            self.used -= rq.held[r]
            self.partial.pop(r, None)
        rq.held[r] = 0
        rq.state[r] = _WAITING
        rq.need[r] = rq.prompt[r] + rq.emitted[r]
        rq.done[r] = rq.cached[r]
        rq.preempted[r] += 1
        self.waiting.appendleft(r)

    def _run_partials(self, plans: list[tuple[int, int, int]]) -> tuple[int, int]:
        """Apply the surviving chunk plans: (prefill tokens, sum of their positions)."""
        rq = self.rq
        tokens = positions = 0
        for r, n, blocks in plans:
            if rq.state[r] != _PREFILL:
                continue  # preempted
            a = rq.done[r]
            rq.held[r] += blocks
            rq.done[r] = a + n
            tokens += n
            positions += n * a + n * (n - 1) // 2
            if a + n == rq.need[r]:
                del self.partial[r]
                self.completing.append(r)
        return tokens, positions

    def _admit(self, left: int, tokens: int) -> tuple[int, int]:
        """Admit from the waiting queue (contract, step 4): (prefill tokens, sum of positions)."""
        rq = self.rq
        need, done, held, state = rq.need, rq.done, rq.held, rq.state
        waiting, running, block = self.waiting, self.running, self.block
        admitted = positions = 0
        while waiting and len(running) < self.max_seqs:
            r = waiting[0]
            a = done[r]
            rest = need[r] - a
            if self.chunked:
                if left <= 0:
                    break
                n = min(rest, left)
            else:
                if (tokens or admitted) and rest > left:
                    break
                n = rest
            blocks = -(-(a + n) // block)
            if blocks > self.capacity - self.used and running:
                break
            waiting.popleft()
            running[r] = None
            state[r] = _PREFILL
            held[r] = blocks
            self.used += blocks
            done[r] = a + n
            admitted += n
            left -= n
            positions += n * a + n * (n - 1) // 2
            if n == rest:
                self.completing.append(r)
            else:
                self.partial[r] = None
        return admitted, positions

    def _start_decoding(self, r: int, step: int) -> None:
        """After the prefill completed at `step` (KV holds need[r] tokens, emitted[r] tokens out)."""
        rq = self.rq
        need = rq.need[r]
        off = need - step
        fin = step + rq.output[r] - rq.emitted[r]
        e = rq.epoch[r]
        rq.state[r], rq.off[r] = _DECODE, off
        self.decoders += 1
        self.off_sum += off
        self._bucket(self.finishing, fin, r, e)
        self.phase[(1 - off) % self.block] += 1

    def _stop_decoding(self, r: int) -> None:
        rq = self.rq
        off = rq.off[r]
        self.used -= -(-(off + self.step) // self.block)
        self.decoders -= 1
        self.off_sum -= off
        self.phase[(1 - off) % self.block] -= 1
        rq.epoch[r] += 1

    def _finish(self, r: int, t: float) -> None:
        del self.running[r]
        self.rq.state[r] = _DONE
        self.rq.finish[r] = t

    @staticmethod
    def _bucket(buckets: dict[int, list[tuple[int, int]]], step: int, r: int, e: int) -> None:
        entries = buckets.get(step)
        if entries is None:
            buckets[step] = [(r, e)]
        else:
            entries.append((r, e))


class _Group:
    """The replicas and the router, advanced in one event loop ordered by time."""

    def __init__(self, engine: Engine, iteration_time: IterationTime, requests: _Requests,
                 log: _IterationLog, replicas: int) -> None:
        self.replicas = [_Replica(engine, iteration_time, requests, log) for _ in range(replicas)]
        self.in_system_area = 0.0  # integral of requests in system over the window
        self.unfinished = 0

    def run(self, arrivals: list[float], routes: list[int], least_loaded: bool, warm: float, horizon: float) -> float:
        """Serve the arrivals; returns the end of the run (the horizon, or the last event)."""
        replicas = self.replicas
        load = [0] * len(replicas)
        busy = [False] * len(replicas)
        heap: list[tuple[float, int]] = []  # (end of the current iteration, replica)
        push, pop, replace = heapq.heappush, heapq.heappop, heapq.heapreplace
        total, since, area = 0, warm, 0.0  # requests in system, since when (in the window), integral
        i, n, t = 0, len(arrivals), 0.0
        while True:
            if i < n and (not heap or arrivals[i] < heap[0][0]):
                t = arrivals[i]
                q = load.index(min(load)) if least_loaded else routes[i]
                if t > warm:
                    area += total * (t - since)
                    since = t
                total += 1
                load[q] += 1
                replica = replicas[q]
                replica.waiting.append(i)
                i += 1
                if not busy[q]:
                    end = replica.start(t)
                    if end is not None:
                        busy[q] = True
                        push(heap, (end, q))
                continue
            if not heap or heap[0][0] > horizon:
                break
            t, q = heap[0]
            replica = replicas[q]
            finished = replica.end(t)
            if finished:
                if t > warm:
                    area += total * (t - since)
                    since = t
                total -= finished
                load[q] -= finished
            end = replica.start(t)
            if end is None:
                busy[q] = False
                pop(heap)
            else:
                replace(heap, (end, q))
        stop = horizon if math.isfinite(horizon) else t
        self.in_system_area = area + total * max(stop - since, 0.0)
        self.unfinished = total
        return stop


def _result(rq: _Requests, log: _IterationLog, arrivals: np.ndarray, klass: np.ndarray, group: _Group,
            window: tuple[float, float], replicas: int) -> SimResult:
    lo, hi = window
    span = hi - lo
    first, finish = np.array(rq.first), np.array(rq.finish)
    done = (finish >= 0) & (finish >= lo)
    output = np.array(rq.output)[done]
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(output > 1, (finish[done] - first[done]) / (output - 1), np.nan)
    cols = {name: log.array(name) for name in _IterationLog.COLUMNS}
    start, duration = cols["start"], cols["duration"]
    stop = start + duration
    weight = np.clip(np.minimum(stop, hi) - np.maximum(start, lo), 0, None)
    inside = (start >= lo) & (stop <= hi)
    ended = (stop > lo) & (stop <= hi)
    return SimResult(
        window=window, replicas=replicas,
        arrival=arrivals[done], ttft=(first - arrivals)[done], tpot=tpot, e2e=(finish - arrivals)[done],
        prompt=np.array(rq.prompt)[done], output=output, preemptions=np.array(rq.preempted)[done],
        iter_start=start[inside], iter_duration=duration[inside], iter_decodes=cols["decodes"][inside],
        iter_prefill_tokens=cols["prefill"][inside], iter_emitted=cols["emitted"][inside],
        iter_running=cols["running"][inside], iter_kv_tokens=cols["kv_tokens"][inside],
        mean_running=float(weight @ cols["running"]) / (span * replicas),
        mean_kv_tokens=float(weight @ cols["kv_tokens"]) / (span * replicas),
        mean_in_system=group.in_system_area / span,
        throughput=float(cols["emitted"][ended].sum()) / span,
        arrived=len(arrivals), unfinished=group.unfinished, klass=klass[done],
    )
