"""The simulator's event loop: replicas (each an iteration-level scheduler) and the router.

Contract: `Group(limits, iteration_time, requests, log, replicas).run(arrivals, routes,
least_loaded, warm, horizon)` serves the arrivals (request i arrives at `arrivals[i]`, on
`routes[i]`, or with `least_loaded` on the replica with the fewest requests in system, `routes`
unread) as steps 1-5 of the engine and the router of `simulate.py`'s
contract say, fills `requests` (per-request state: first token and finish times, preemptions) and
`log` (one row per iteration, appended when the iteration starts, so in the order iterations
start: `start` never decreases), and returns the end of the run. Plain values only (ints, floats,
lists, the log's buffer and one iteration time); it knows nothing of `Engine`, `Workload` or
numpy. The iteration time is a `Timer` (called directly by the compiled loop) or any callable
(wrapped in a `FunctionTimer`). `ShapeTimer` is the plan's: programs of the register machine
below (`run_program`; `scalar.py` compiles the plan's formula into them), their values kept by the
parts of the iteration's shape they read (`replay.py` builds it), here so that the machine and
its bookkeeping are compiled too.

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
import math
import struct
from collections import deque
from collections.abc import Callable
from typing import Any, ClassVar, Final, NamedTuple, cast

IterationTime = Callable[[Any, Any, Any, Any], Any]
"""`f(decodes, decode_context_mean, prefill_tokens, prefill_context_mean) -> seconds`."""

# Final, so that mypyc puts each value in the code rather than looking it up in the module's dict
_WAITING: Final = 0
_PREFILL: Final = 1
_DECODE: Final = 2
_DONE: Final = 3


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
    """One row per iteration, packed by `struct` into one buffer: start, duration (doubles),
    decodes, prefill tokens, tokens emitted, running sequences, KV tokens in use (64-bit ints),
    little-endian, `rows` of them. `grow(size)` gives the buffer, at least `size` bytes long and
    starting with the bytes of the one before (it is called with sizes doubling from 4,096
    rows'): by default a `bytearray` extended; `simulate.py` resizes a numpy array in place,
    which moves its pages rather than copying them, so each page of an hour's log (about a
    gigabyte) is faulted in once, on a virtual machine the costliest part of writing it. A
    replica adds a row by one call of `add`, one `pack_into`: seven `array` appends, one per
    column, cost three times as much."""

    COLUMNS: ClassVar[tuple[str, ...]] = ("start", "duration", "decodes", "prefill", "emitted", "running", "kv_tokens")
    FORMAT: ClassVar[str] = "<ddqqqqq"  # one code a column

    def __init__(self, grow: Callable[[int], Any] | None = None) -> None:
        packer = struct.Struct(self.FORMAT)
        self.pack = packer.pack_into
        self.row_size = packer.size
        self.grow = grow if grow is not None else _extended(bytearray())
        self.end = packer.size * 4096
        self.buffer: Any = self.grow(self.end)
        self.offset = 0
        self.rows = 0

    def add(self, start: float, duration: float, decodes: int, prefill: int, emitted: int, running: int,
            kv_tokens: int) -> None:
        if self.offset == self.end:
            self.end *= 2
            self.buffer = self.grow(self.end)
        self.pack(self.buffer, self.offset, start, duration, decodes, prefill, emitted, running, kv_tokens)
        self.offset += self.row_size
        self.rows += 1


def _extended(buffer: bytearray) -> Callable[[int], Any]:
    """`IterationLog`'s default `grow`: `buffer` extended with zeros to the size asked."""
    def grow(size: int) -> Any:
        buffer.extend(bytes(max(size - len(buffer), 0)))
        return buffer
    return grow


class Timer:
    """An iteration's time by its shape, `time(decodes, decode context mean, prefill tokens,
    prefill context mean) -> seconds`: what a replica calls for each iteration it starts. A class
    of this module so that the compiled loop calls it directly (its arguments unboxed) rather
    than as a Python callable."""

    def time(self, decodes: int, decode_context: float, prefill_tokens: int, prefill_context: float) -> float:
        raise NotImplementedError


class FunctionTimer(Timer):
    """Any `IterationTime` callable as a `Timer` (the toy physics of the tests and the bench)."""

    def __init__(self, function: IterationTime) -> None:
        self.function = function

    def time(self, decodes: int, decode_context: float, prefill_tokens: int, prefill_context: float) -> float:
        return float(self.function(decodes, decode_context, prefill_tokens, prefill_context))


def _as_timer(iteration_time: object) -> Timer:
    """A `Timer` as it is, any other `IterationTime` wrapped."""
    if isinstance(iteration_time, Timer):
        return iteration_time
    return FunctionTimer(cast(IterationTime, iteration_time))


class _Replica:
    """One engine's scheduler; `start(t)` schedules an iteration and returns its end (None when
    there is nothing to do), `end(t)` applies it and returns how many requests finished."""

    def __init__(self, limits: Limits, timer: Timer, requests: Requests, log: IterationLog) -> None:
        self.timer = timer
        self.block = limits.kv_block_size
        self.capacity = limits.kv_capacity_tokens // limits.kv_block_size
        self.max_seqs = limits.max_num_seqs
        self.budget = limits.token_budget
        self.chunked = limits.chunked_prefill
        self.rq = requests
        self.log = log
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
        dt = self.timer.time(decoders, context, tokens, positions / tokens if tokens else 0.0)
        if not 0.0 < dt < math.inf:
            raise ValueError(f"iteration_time must be positive and finite (got {dt} for {decoders} decodes, {tokens} prefill tokens)")
        self.log.add(t, dt, decoders, tokens, decoders + len(self.completing), len(self.running), self.used * self.block)
        return t + dt

    def end(self, t: float) -> int:
        self.step = step = self.step + 1
        finished = 0
        entries = self.finishing.get(step)
        if entries is not None:
            del self.finishing[step]
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
        timer = _as_timer(iteration_time)
        self.replicas = [_Replica(limits, timer, requests, log) for _ in range(replicas)]
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
        next_end = _Tournament(len(replicas))  # each replica's end of its current iteration, and the least
        total, since, area = 0, warm, 0.0  # requests in system, since when (in the window), integral
        i, n, t = 0, len(arrivals), 0.0
        while True:
            first = next_end.first()
            end_first = next_end.ends[first]
            if i < n and arrivals[i] < end_first:
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
                        next_end.set(q, end)
                continue
            if end_first == math.inf or end_first > horizon:
                break
            t, q = end_first, first
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
                next_end.set(q, math.inf)
            else:
                next_end.set(q, end)
        stop = horizon if math.isfinite(horizon) else t
        self.in_system_area = area + total * max(stop - since, 0.0)
        self.unfinished = total
        return stop


class _Tournament:
    """The end of each replica's current iteration (inf while it is idle) and a winner tree over
    them, whose root is the replica whose iteration ends first, the lowest-numbered of those
    that end together: the order of (end, replica) pairs, as a heap of such tuples pops them,
    but an update compares floats along one path of the tree and boxes one float."""

    def __init__(self, replicas: int) -> None:
        size = 1
        while size < replicas:
            size *= 2
        self.size = size
        self.ends: list[float] = [math.inf] * size
        self.tree: list[int] = [0] * size + list(range(size))  # node k's winner; leaves at size + q
        for k in range(size - 1, 0, -1):
            self.tree[k] = self.tree[2 * k]

    def first(self) -> int:
        """The replica whose iteration ends first (its end is inf when every replica is idle)."""
        return self.tree[1]

    def set(self, q: int, end: float) -> None:
        ends, tree = self.ends, self.tree
        ends[q] = end
        k = (self.size + q) >> 1
        while k:
            a, b = tree[2 * k], tree[2 * k + 1]
            tree[k] = a if ends[a] <= ends[b] else b  # a tie goes left, to the lower-numbered
            k >>= 1


# The register machine that runs an iteration's formula (`scalar.py` compiles the formula into its
# code): an instruction is four ints (operation, destination slot, a, b), where a and b are slots
# of `env` (a value, a constant set when compiling, or a temporary), or, for a jump, the
# instruction to go to, or, for CALL, the index of a Python function of `env`. A truth value is
# 1.0 or 0.0. Compiled by mypyc, an operation is a few native float operations on `env`.
ADD: Final = 0
SUB: Final = 1
MUL: Final = 2
DIV: Final = 3
NEG: Final = 4
LT: Final = 5
LE: Final = 6
GT: Final = 7
GE: Final = 8
EQ: Final = 9
NE: Final = 10
NOT: Final = 11
AND: Final = 12
OR: Final = 13
MIN: Final = 14
MAX: Final = 15
MOVE: Final = 16
JUMP: Final = 17
JUMP_IF_FALSE: Final = 18
CALL: Final = 19
OPCODES = {"ADD": ADD, "SUB": SUB, "MUL": MUL, "DIV": DIV, "NEG": NEG, "LT": LT, "LE": LE, "GT": GT, "GE": GE, "EQ": EQ,
           "NE": NE, "NOT": NOT, "AND": AND, "OR": OR, "MIN": MIN, "MAX": MAX, "MOVE": MOVE, "JUMP": JUMP,
           "JUMP_IF_FALSE": JUMP_IF_FALSE, "CALL": CALL}
"""the instructions by name, for the compiler of programs (`scalar.compile_programs`)"""


def run_program(code: list[int], calls: list[Callable[[list[float]], Any]], env: list[float]) -> None:
    """Run `code` on `env`. Arithmetic as Python's floats do it (IEEE doubles, correctly rounded),
    except that x / 0 gives what numpy gives (±inf, or nan for 0/0 and nan/0) rather than raising;
    `min` and `max` propagate nan, as numpy's do; and a CALL's value is `float(calls[a](env))`."""
    pc, stop = 0, len(code)
    while pc < stop:
        op, d, a, b = code[pc], code[pc + 1], code[pc + 2], code[pc + 3]
        pc += 4
        if op == MUL:
            env[d] = env[a] * env[b]
        elif op == ADD:
            env[d] = env[a] + env[b]
        elif op == DIV:
            x, y = env[a], env[b]
            if y != 0.0:
                env[d] = x / y
            elif x != x or x == 0.0:
                env[d] = math.nan
            else:
                env[d] = math.copysign(math.inf, x) * math.copysign(1.0, y)
        elif op == SUB:
            env[d] = env[a] - env[b]
        elif op == MAX:
            x, y = env[a], env[b]
            env[d] = x if x >= y or x != x else y
        elif op == MIN:
            x, y = env[a], env[b]
            env[d] = x if x <= y or x != x else y
        elif op == MOVE:
            env[d] = env[a]
        elif op == JUMP_IF_FALSE:
            if env[a] == 0.0:
                pc = b
        elif op == JUMP:
            pc = a
        elif op == NEG:
            env[d] = -env[a]
        elif op == LT:
            env[d] = 1.0 if env[a] < env[b] else 0.0
        elif op == LE:
            env[d] = 1.0 if env[a] <= env[b] else 0.0
        elif op == GT:
            env[d] = 1.0 if env[a] > env[b] else 0.0
        elif op == GE:
            env[d] = 1.0 if env[a] >= env[b] else 0.0
        elif op == EQ:
            env[d] = 1.0 if env[a] == env[b] else 0.0
        elif op == NE:
            env[d] = 1.0 if env[a] != env[b] else 0.0
        elif op == NOT:
            env[d] = 1.0 if env[a] == 0.0 else 0.0
        elif op == AND:
            env[d] = 1.0 if env[a] != 0.0 and env[b] != 0.0 else 0.0
        elif op == OR:
            env[d] = 1.0 if env[a] != 0.0 or env[b] != 0.0 else 0.0
        elif op == CALL:
            env[d] = float(calls[a](env))
        else:
            raise ValueError(f"unknown operation {op}")


def _round(x: float) -> int:
    """`round(x)` (to the nearest integer, a half to the even one) in native arithmetic: for
    0 <= x < 2^52 both the whole part and x less it are exact."""
    if not 0.0 <= x < 4503599627370496.0:
        return round(x)
    n = int(x)
    rest = x - n
    if rest > 0.5 or (rest == 0.5 and n & 1):
        n += 1
    return n


Tabulate = Callable[[list[int]], list[list[Any]]]
"""`f(key) -> rows`: a group's exported values along its axis, the key's other parts fixed at `key`'s."""


class ShapeGroup:
    """Nodes of an iteration's formula that read the same parts of its shape: their slots
    `start:stop` in the timer's `env`, their program (`code` and `calls`, for `run_program`, which
    sets those slots, through temporaries of its own beyond them), the parts of the
    key they read (indices into (decodes, decode context / 8, prefill tokens, prefill context /
    8)), whether their values are kept by those parts, and the slots of theirs that later groups
    read (`exports`: all that a kept value restores). A kept group with an `axis` (one of its
    parts) and a `tabulate` function keeps whole rows instead: for each value of its other parts,
    its exports at every value of the axis up to the row's length, computed at once by `tabulate`."""

    def __init__(self, start: int, stop: int, code: list[int], calls: list[Callable[[list[float]], Any]], parts: list[int],
                 kept: bool, exports: list[int], axis: int = -1, tabulate: Tabulate | None = None) -> None:
        self.start = start
        self.stop = stop
        self.code = code
        self.calls = calls
        self.parts = parts
        self.memo: dict[int, list[float]] | None = {} if kept else None
        self.exports = exports
        self.axis = axis if kept and tabulate is not None else -1
        self.tabulate = tabulate
        self.rows: dict[int, list[list[float]]] = {}


class ShapeTimer(Timer):
    """A `Timer` that runs the plan's formula as programs (`replay._IterationTimer` compiles them,
    `scalar.py`), kept by the parts of the iteration's shape each group reads.

    A call rounds the contexts to 8 tokens: the key is (decodes, round(decode context / 8), prefill
    tokens, round(prefill context / 8)), each part below 2^32. A decode-only key seen before is its
    kept time (in a row by decodes, indexed by context, where both are below `decode_shape`'s and
    the rows so far leave room within `KEPT_ENTRIES`, else in a dict by the packed key). Otherwise `env[0:5]` are set to the decodes, the decode context (key × 8), the prefill
    tokens, the prefill tokens / `prompt_tokens` and the prefill context (key × 8); each group in
    order either restores its exports kept by its parts (packed into one integer, 32 bits a part;
    a tabulated group, from the row of its other parts, made by `tabulate` the first time, where
    the axis is within the row) or runs its program and keeps its exports (at most `group_memo`
    keys a group, then it starts again); the time is `env[target]`. `evaluations` counts the keys
    computed. Compiled with the rest of this module, the keys, the lookups and the programs'
    arithmetic are native code."""

    KEPT_ENTRIES: ClassVar[int] = 1 << 23  # 64 MiB of list slots at most for the decode-only rows

    def __init__(self, groups: list[ShapeGroup], env: list[float], target: int, prompt_tokens: float,
                 group_memo: int, decode_shape: tuple[int, int] = (0, 0)) -> None:
        self.groups = groups
        self.env = env
        self.target = target
        self.prompt_tokens = prompt_tokens
        self.group_memo = group_memo
        self.decodes_kept, self.contexts_kept = decode_shape
        self.kept: list[list[float]] = [[] for _ in range(self.decodes_kept)]  # by decodes, a row by context / 8 (-1: not yet)
        self.kept_room = self.KEPT_ENTRIES  # entries the rows may still take
        self.memo: dict[int, float] = {}  # the other decode-only keys: decodes << 32 | context / 8
        self.evaluations = 0

    def __call__(self, decodes: int, decode_context: float, prefill_tokens: int, prefill_context: float) -> float:
        return self.time(decodes, decode_context, prefill_tokens, prefill_context)

    def time(self, decodes: int, decode_context: float, prefill_tokens: int, prefill_context: float) -> float:
        d = decodes
        c = _round(decode_context / 8)
        p = prefill_tokens
        q = _round(prefill_context / 8)
        if d < 0 or c < 0 or p < 0 or q < 0 or (d | c | p | q) >> 32:
            raise ValueError(f"an iteration shape part out of range: {(d, c, p, q)}")
        row: list[float] = []
        whole = -1
        if p == 0 and q == 0:
            if d < self.decodes_kept and c < self.contexts_kept:
                row = self.kept[d]
                if not row and self.kept_room >= self.contexts_kept:
                    row = [-1.0] * self.contexts_kept
                    self.kept[d] = row
                    self.kept_room -= self.contexts_kept
            if row:
                found = row[c]
                if found >= 0.0:
                    return found
            else:
                whole = d << 32 | c
                kept = self.memo.get(whole)
                if kept is not None:
                    return kept
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
                rows = group.rows.get(packed)
                if rows is None:
                    tabulate = group.tabulate
                    assert tabulate is not None
                    rows = tabulate(key)
                    group.rows[packed] = rows
                x = key[group.axis]
                if x < len(rows[0]):
                    for j, s in enumerate(group.exports):
                        env[s] = rows[j][x]
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
            run_program(group.code, group.calls, env)
            if memo is not None:
                if len(memo) >= self.group_memo:
                    memo.clear()
                memo[packed] = [env[s] for s in group.exports]
        time = env[self.target]
        if row:
            row[c] = time
        elif whole >= 0:
            self.memo[whole] = time
        return time
