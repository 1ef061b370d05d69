"""The simulator's event loop: replicas (each an iteration-level scheduler) and the router.

Contract: `Group(limits, iteration_time, requests, log, replicas).run(arrivals, routes,
least_loaded, warm, horizon)` serves the arrivals (request i arrives at `arrivals[i]`, on
`routes[i]`, or with `least_loaded` on the replica with the fewest requests in system, `routes`
unread) as steps 1-5 of the engine and the router of `simulate.py`'s
contract say, fills `requests` (per-request state: first token and finish times, preemptions) and
`log` (one row per iteration, appended when the iteration starts, so in the order iterations
start: `start` never decreases), and returns the end of the run. Plain values only (ints, floats,
lists, `array`s and one callable); it knows nothing of `Engine`, `Workload` or numpy.
`ShapeTimer` is such a callable: an iteration's time from closures over plain floats, kept by the
parts of the iteration's shape they read (`replay.py` builds it from the plan's formula), here so
that its bookkeeping is compiled too.

Why a module of its own: it is the one place where a run spends its time (O(1) work per iteration
and per request, tens of millions of iterations in an hour of traffic), so it is written in the
subset of Python that mypyc compiles. At install, `setup.py` compiles a copy of this file into the
C extension `planc._sim_engine_native`, stamped with this file's SHA-256; `simulate.py` runs the
compiled copy when its stamp matches this file, and this file otherwise (no C compiler at install,
`PLAN_PURE_PYTHON=1`, or a source edited since the build). Both give the same results bit for bit
(tests/test_simulate.py runs both): the compiled code does the same integer and IEEE double
arithmetic in the same order.
"""

from __future__ import annotations

import gc
import heapq
import math
from array import array
from collections import deque
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

IterationTime = Callable[[Any, Any, Any, Any], Any]
"""`f(decodes, decode_context_mean, prefill_tokens, prefill_context_mean) -> seconds`."""

_WAITING, _PREFILL, _DECODE, _DONE = 0, 1, 2, 3


class Limits(NamedTuple):
    """One replica's scheduler limits and KV memory, in tokens (`simulate.Engine`'s fields)."""

    max_num_seqs: int
    token_budget: int
    kv_capacity_tokens: int
    kv_block_size: int
    chunked_prefill: bool


class Requests:
    """Per-request state, in plain lists (the fastest scalar access in Python), shared by the
    replicas. `need`: KV tokens the current prefill must reach (prompt + tokens emitted); `done`:
    tokens in KV so far in it (from the cached prefix); `held`: blocks held while prefilling;
    `emitted`: tokens emitted, as of the last prefill or preemption (a decoder's count follows
    from its context); `off`: decode offset, the context at replica step s being off + s; `epoch`: bumped when a
    decoder stops, to void its entry in the finishing buckets."""

    def __init__(self, prompt: list[int], output: list[int], cached: list[int]) -> None:
        n = len(prompt)
        self.prompt = prompt
        self.output = output
        self.cached = cached
        self.need = list(prompt)
        self.done = list(cached)
        self.held = [0] * n
        self.emitted = [0] * n
        self.off = [0] * n
        self.epoch = [0] * n
        self.state = [_WAITING] * n
        self.preempted = [0] * n
        self.first = [-1.0] * n
        self.finish = [-1.0] * n


class IterationLog:
    """One row per iteration, in unboxed arrays: start, duration, decodes, prefill tokens, tokens
    emitted, running sequences, KV tokens in use. Each replica holds the seven columns' bound
    `append`s and calls them itself (compiled, one call fewer per row than a record function
    taking the seven values: 7 % of the loop)."""

    COLUMNS: ClassVar[tuple[str, ...]] = ("start", "duration", "decodes", "prefill", "emitted", "running", "kv_tokens")

    def __init__(self) -> None:
        self.columns: list[array[Any]] = [array("d"), array("d")] + [array("q") for _ in range(5)]


class _Replica:
    """One engine's scheduler; `start(t)` schedules an iteration and returns its end (None when
    there is nothing to do), `end(t)` applies it and returns how many requests finished."""

    def __init__(self, limits: Limits, iteration_time: IterationTime, requests: Requests, log: IterationLog) -> None:
        self.iteration_time = iteration_time
        self.block = limits.kv_block_size
        self.capacity = limits.kv_capacity_tokens // limits.kv_block_size
        self.max_seqs = limits.max_num_seqs
        self.budget = limits.token_budget
        self.chunked = limits.chunked_prefill
        self.rq = requests
        self.log_start, self.log_duration, self.log_decodes, self.log_prefill, self.log_emitted, \
            self.log_running, self.log_kv = (column.append for column in log.columns)
        self.waiting: deque[int] = deque()
        self.running: dict[int, None] = {}  # admission order: the last one is the next victim
        self.partial: dict[int, None] = {}  # running, prefill incomplete, oldest first
        self.finishing: dict[int, list[tuple[int, int]]] = {}  # step -> (request, epoch)
        self.phase = [0] * limits.kv_block_size  # decoders by the step residue at which they open a block
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
        self.log_start(t)
        self.log_duration(dt)
        self.log_decodes(decoders)
        self.log_prefill(tokens)
        self.log_emitted(decoders + len(self.completing))
        self.log_running(len(self.running))
        self.log_kv(self.used * self.block)
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


class Group:
    """The replicas and the router, advanced in one event loop ordered by time."""

    def __init__(self, limits: Limits, iteration_time: IterationTime, requests: Requests,
                 log: IterationLog, replicas: int) -> None:
        self.replicas = [_Replica(limits, iteration_time, requests, log) for _ in range(replicas)]
        self.in_system_area = 0.0  # integral of requests in system over the window
        self.unfinished = 0

    def run(self, arrivals: list[float], routes: list[int], least_loaded: bool, warm: float, horizon: float) -> float:
        """Serve the arrivals; returns the end of the run (the horizon, or the last event). The
        collector is paused meanwhile: the loop makes no reference cycles, only short-lived
        tuples and lists, over which it would otherwise walk a few hundred thousand times an hour."""
        paused = gc.isenabled()
        gc.disable()
        try:
            return self._run(arrivals, routes, least_loaded, warm, horizon)
        finally:
            if paused:
                gc.enable()

    def _run(self, arrivals: list[float], routes: list[int], least_loaded: bool, warm: float, horizon: float) -> float:
        replicas = self.replicas
        load = [0] * len(replicas)  # requests in system (waiting + running) per replica
        # least-loaded routing without a scan: level[v] has bit k set when replica k has v
        # requests in system, and no level below `low` has a bit set; the lowest set bit of the
        # lowest non-empty level is the least-loaded replica of lowest index (load.index(min(load)))
        level = [(1 << len(replicas)) - 1]
        low = 0
        busy = [False] * len(replicas)
        heap: list[tuple[float, int]] = []  # (end of the current iteration, replica)
        push, pop, replace = heapq.heappush, heapq.heappop, heapq.heapreplace
        total, since, area = 0, warm, 0.0  # requests in system, since when (in the window), integral
        i, n, t = 0, len(arrivals), 0.0
        while True:
            if i < n and (not heap or arrivals[i] < heap[0][0]):
                t = arrivals[i]
                if least_loaded:
                    while not level[low]:
                        low += 1
                    mask = level[low]
                    q = (mask & -mask).bit_length() - 1
                    level[low] = mask & (mask - 1)
                    if low + 1 == len(level):
                        level.append(0)
                    level[low + 1] |= 1 << q
                else:
                    q = routes[i]
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
                v = load[q]
                load[q] = v - finished
                if least_loaded:
                    bit = 1 << q
                    level[v] ^= bit
                    level[v - finished] |= bit
                    low = min(low, v - finished)
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


Closure = Callable[[list[Any]], Any]
"""`f(env) -> value`: one node of a formula, reading the values before it in `env`."""


Tabulate = Callable[[list[int]], list[list[Any]]]
"""`f(key) -> rows`: a group's exported values along its axis, the key's other parts fixed at `key`'s."""


class ShapeGroup:
    """Nodes of an iteration's formula that read the same parts of its shape: their slots
    `start:stop` in the timer's `env`, their closures in order, the parts of the key they read
    (indices into (decodes, decode context / 8, prefill tokens, prefill context / 8)), whether
    their values are kept by those parts, and the slots of theirs that later groups read
    (`exports`: all that a kept value restores). A kept group with an `axis` (one of its parts)
    and a `tabulate` function keeps whole rows instead: for each value of its other parts, its
    exports at every value of the axis up to the row's length, computed at once by `tabulate`."""

    def __init__(self, start: int, stop: int, closures: list[Closure], parts: list[int], kept: bool,
                 exports: list[int], axis: int = -1, tabulate: Tabulate | None = None) -> None:
        self.start = start
        self.stop = stop
        self.closures = closures
        self.parts = parts
        self.memo: dict[int, list[Any]] | None = {} if kept else None
        self.exports = exports
        self.axis = axis if kept and tabulate is not None else -1
        self.tabulate = tabulate
        self.rows: dict[int, list[list[Any]]] = {}


class ShapeTimer:
    """An `IterationTime` computed by closures over plain floats (`replay._IterationTimer` builds
    them from the plan's formula), kept by the parts of the iteration's shape each group reads.

    A call rounds the contexts to 8 tokens: the key is (decodes, round(decode context / 8), prefill
    tokens, round(prefill context / 8)), each part below 2^32. A decode-only key seen before is its
    kept time. Otherwise `env[0:5]` are set to the decodes, the decode context (key × 8), the
    prefill tokens, the prefill tokens / `prompt_tokens` and the prefill context (key × 8); each
    group in order either restores its exports kept by its parts (packed into one integer, 32 bits
    a part; a tabulated group, from the row of its other parts, made by `tabulate` the first time,
    where the axis is within the row) or runs its closures, each into its slot, and keeps its
    exports (at most `group_memo` keys a group, then it starts again); the time is `env[target]`.
    `evaluations` counts the keys computed. Compiled with the rest of this module, the keys and
    lookups cost a fraction of the closures."""

    def __init__(self, groups: list[ShapeGroup], slots: int, target: int, prompt_tokens: float,
                 group_memo: int) -> None:
        self.groups = groups
        self.env: list[Any] = [0.0] * slots
        self.target = target
        self.prompt_tokens = prompt_tokens
        self.group_memo = group_memo
        self.memo: dict[int, float] = {}  # decode-only keys: decodes << 32 | context / 8
        self.evaluations = 0

    def __call__(self, decodes: int, decode_context: float, prefill_tokens: int, prefill_context: float) -> float:
        d = decodes
        c: int = round(decode_context / 8)
        p = prefill_tokens
        q: int = round(prefill_context / 8)
        if d < 0 or c < 0 or p < 0 or q < 0 or (d | c | p | q) >> 32:
            raise ValueError(f"an iteration shape part out of range: {(d, c, p, q)}")
        whole = -1
        if p == 0 and q == 0:
            whole = d << 32 | c
            found = self.memo.get(whole)
            if found is not None:
                return found
        self.evaluations += 1
        key = [d, c, p, q]
        env = self.env
        env[0] = float(d)
        env[1] = c * 8.0
        env[2] = float(p)
        env[3] = p / self.prompt_tokens
        env[4] = q * 8.0
        for group in self.groups:
            memo = group.memo
            packed = 0
            if group.axis >= 0:
                for i in group.parts:
                    if i != group.axis:
                        packed = packed << 32 | key[i]
                row = group.rows.get(packed)
                if row is None:
                    tabulate = group.tabulate
                    assert tabulate is not None
                    row = tabulate(key)
                    group.rows[packed] = row
                x = key[group.axis]
                if x < len(row[0]):
                    for j, s in enumerate(group.exports):
                        env[s] = row[j][x]
                    continue
                memo = None  # beyond the row (a prompt over the budget): computed, not kept
            elif memo is not None:
                for i in group.parts:
                    packed = packed << 32 | key[i]
                values = memo.get(packed)
                if values is not None:
                    for j, s in enumerate(group.exports):
                        env[s] = values[j]
                    continue
            slot = group.start
            for closure in group.closures:
                env[slot] = closure(env)
                slot += 1
            if memo is not None:
                if len(memo) >= self.group_memo:
                    memo.clear()
                memo[packed] = [env[s] for s in group.exports]
        time = float(env[self.target])
        if whole >= 0:
            self.memo[whole] = time
        return time
