"""Replay: a compiled deployment served by the discrete-event simulator, beside the analytic model.

Contract: `replay(lowered, deployment, duration, replicas, seed, router) -> Replay` builds the
simulator's inputs from the plan's own values and runs `simulate.simulate`:
- the workload: the deployment's share of the peak (`peak_replica_rate` × replicas simulated),
  the traffic's lognormal prompt and output lengths (mean and p99) or, for a mix of request
  classes, each class's lengths and share (`request_classes`), its arrival burstiness and the
  prefix hit rate;
- the engine: `max_num_seqs`, the token budget (`prefill_chunk`), the KV cache
  (`kv_capacity_tokens`, `kv_block_size`), chunked prefill as the engine does it;
- the iteration time: the plan's own `iteration_time` formula at the decodes, their mean
  context, the prefill tokens and their mean context of each simulated iteration (contexts
  rounded to 8 tokens), its nodes that the shape moves compiled into programs of the simulator's
  register machine (`scalar.py`) and their values kept by the parts of the shape they read
  (`_IterationTimer`).
A deployment the simulator cannot serve as the plan states it (a token budget below
`max_num_seqs`, which vLLM refuses too; no memory left for the KV cache; no traffic at the peak; an
iteration time that is not a positive, finite time; a policy the simulator does not run yet: speculative
decoding, static batching, disaggregated prefill) raises `NotSimulable`, with what is wrong in the plan's terms
and a help line; `plan simulate` prints both and exits 2.
It returns the simulated summary and the analytic figures of the same operating point
(`operating_batch`, `tpot_at_peak`, `ttft_at_peak`, `ttft_median_at_peak`, `itl_tail_at_peak`), so
that a test or `plan simulate` can put them side by side: `comparisons(run)` gives each figure
the command prints with its 90 % interval (`SimResult.intervals`) and, where the plan has one, the
analytic figure; `outcome` keeps those and each latency's distribution (small enough to come back
from another process: `simulated_outcome` is one run, made there); `combined` makes several
independent runs (seeds apart) one, each figure their mean and its interval their range; and
`simulation_json` writes an outcome as the `plan.simulate/1` document (docs/report-json.md).
Nothing here is physics: the physics is the plan's, and the queueing is the simulator's.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .lower import Lowered
from .scalar import Unsupported, compile_programs
from .semantics import ir
from .simulate import (
    INTERVAL_BLOCKS,
    INTERVAL_LEVEL,
    INTERVAL_RESAMPLES,
    INTERVAL_TAIL,
    Engine,
    IterationTime,
    LengthClass,
    Router,
    SimResult,
    Workload,
    engine_module,
    simulate,
)
from .vector import evaluate_many, needed

ITERATION_INPUTS = ("decode_sequences", "decode_context", "chunk_tokens", "chunk_prompts", "chunk_context")
ANALYTIC = {  # simulated statistic -> the deployment's analytic figure of the same operating point
    "mean_running": "operating_batch", "tpot_mean": "tpot_at_peak", "ttft_p99": "ttft_at_peak",
    "ttft_p50": "ttft_median_at_peak", "itl_p99": "itl_tail_at_peak",
}


@dataclass
class Replay:
    deployment: str
    replicas: int
    rate: float  # requests/s offered to the simulated replicas together
    simulated: dict[str, float]
    analytic: dict[str, float]
    result: SimResult
    evaluations: int  # distinct iteration shapes the plan's formula was evaluated at
    classes: list[str]  # the traffic's request classes (itself, or a mix's classes), as `result.klass` numbers them
    class_simulated: dict[str, dict[str, float]]  # per class of a mix: its simulated latencies
    class_analytic: dict[str, tuple[str, dict[str, float]]]  # per class with a `request_class` in the plan: it, and its analytic figures


def replay(lowered: Lowered, deployment: str, duration: float = 600.0, replicas: int = 1, seed: int = 0,
           router: str = "random") -> Replay:
    v = lowered.values

    def value(field: str) -> float:
        return float(v[f"{deployment}.{field}"])

    traffic = _instance_of(lowered, f"{deployment}.traffic")
    classes = request_classes(lowered, traffic)
    workload = Workload(
        rate=value("peak_replica_rate") * replicas,
        prompt_mean=float(v[f"{traffic}.prompt_tokens"]), prompt_p99=float(v[f"{traffic}.prompt_tokens_p99"]),
        output_mean=float(v[f"{traffic}.output_tokens"]), output_p99=float(v[f"{traffic}.output_tokens_p99"]),
        arrival_cv=float(v[f"{traffic}.arrival_cv"]), prefix_hit_rate=value("prefix_hit_rate"),
        max_context=int(value("context")),
        classes=tuple(LengthClass(share, float(v[f"{c}.prompt_tokens"]), float(v[f"{c}.prompt_tokens_p99"]),
                                  float(v[f"{c}.output_tokens"]), float(v[f"{c}.output_tokens_p99"]),
                                  histogram(lowered, c, "prompt"), histogram(lowered, c, "output"))
                      for c, share in classes) if len(classes) > 1 else (),
        prompt_bins=histogram(lowered, traffic, "prompt"), output_bins=histogram(lowered, traffic, "output"),
    )
    _check_simulable(deployment, value, lowered.elaborated.statics)
    engine = Engine(max_num_seqs=int(value("max_num_seqs")), token_budget=int(value("prefill_chunk")),
                    kv_capacity_tokens=int(value("kv_capacity_tokens")), kv_block_size=int(value("kv_block_size")))
    window = int(value("context")) // 8 + 2  # a context rounded to 8 tokens, the window's included
    timer = _IterationTimer(lowered, deployment, value("new_prompt_tokens"),
                            (engine.max_num_seqs + 1, window, engine.token_budget + 1, window))
    try:
        result = simulate(workload, engine, timer.function(), Router(router, replicas), duration, seed=seed)
    except ValueError as exc:  # the plan's own iteration time is not a positive, finite number at some shape
        raise NotSimulable(str(exc), "the deployment's `iteration_time` must be a positive, finite time at every iteration's "
                           "shape: check the inputs its physics reads (`plan explain`, or the report's derivation)") from exc
    simulated = result.summary()
    analytic = {k: value(f) for k, f in ANALYTIC.items()}
    names = [c for c, _ in classes]
    per_class = {c: _class_figures(lowered, deployment, c) for c in names} if len(names) > 1 else {}
    return Replay(deployment, replicas, workload.rate, simulated, analytic, result, timer.evaluations, names,
                  {c: result.class_latency(i) for i, c in enumerate(names)} if len(names) > 1 else {},
                  {c: f for c, f in per_class.items() if f is not None})


LABELS = {"mean_running": ("running sequences (mean)", "1"), "tpot_mean": ("TPOT (mean)", "s"),
          "ttft_p50": ("TTFT p50", "s"), "ttft_p99": ("TTFT p99", "s"), "itl_p99": ("ITL p99", "s"),
          "tpot_p99": ("TPOT p99", "s")}
"""each compared figure's label and unit (`1`: a count; `s`: seconds)"""


@dataclass(frozen=True)
class Comparison:
    """One simulated figure beside the plan's analytic one, in SI units: its 90 % interval (nan,
    nan where the run has too few values to tell) and, where the plan has an analytic figure of
    the same operating point, that figure and its field."""

    key: str  # the simulated statistic (`SimResult.summary()`'s key)
    label: str
    unit: str
    simulated: float
    interval: tuple[float, float]
    analytic: float | None
    field: str | None
    klass: str | None  # the request class, for a class's own figure

    @property
    def inside(self) -> bool | None:
        """Whether the analytic figure lies inside the interval; None without either."""
        if self.analytic is None or not math.isfinite(self.interval[0]):
            return None
        return self.interval[0] <= self.analytic <= self.interval[1]

    @property
    def difference(self) -> float | None:
        """(analytic − simulated) / simulated."""
        if self.analytic is None or not self.simulated:
            return None
        return (self.analytic - self.simulated) / self.simulated


def comparisons(run: Replay) -> list[Comparison]:
    """The figures `plan simulate` prints, in order: the deployment's, then each class's TTFT."""
    bands = run.result.intervals()
    rows = [Comparison(key, *LABELS[key], run.simulated[key], bands[key], run.analytic.get(key),
                       f"{run.deployment}.{ANALYTIC[key]}" if key in ANALYTIC else None, None)
            for key in (*ANALYTIC, "tpot_p99")]
    for index, (klass, figures) in enumerate(run.class_simulated.items()):
        view, class_bands = run.class_analytic.get(klass), run.result.intervals(index)
        rows += [Comparison(key, f"{klass}: {LABELS[key][0]}", LABELS[key][1], figures[key], class_bands[key],
                            None if view is None else view[1][key],
                            None if view is None else f"{view[0]}.{CLASS_ANALYTIC[key]}", klass)
                 for key in CLASS_ANALYTIC]
    return rows


@dataclass(frozen=True)
class Outcome:
    """What `plan simulate` reports of one run, or of several independent runs (`combined`): the
    compared figures, each latency's distribution and the counts, a few hundred numbers, so that a
    run made in another process comes back whole. Of several runs, a figure is their mean, its
    interval the least and the greatest of them, and `runs` each run's figure, row by row."""

    deployment: str
    replicas: int
    rate: float
    seeds: tuple[int, ...]
    rows: tuple[Comparison, ...]
    runs: tuple[tuple[float, ...], ...]
    distributions: dict[str, dict[str, float]]
    requests: int
    unfinished: int
    preemptions_per_request: float
    classes: tuple[tuple[str, int], ...]  # each class of a mix and its measured requests
    completed_rate: float  # requests/s that finished in the window (of several runs, their mean)
    waiting: int  # requests still without a first token at the end (of several runs, added)
    arrivals: float  # requests offered over the measured windows: the rate times their length

    @property
    def backlog(self) -> float:
        """The requests still waiting for a first token at the end, over the window's arrivals."""
        return self.waiting / self.arrivals if self.arrivals > 0 else math.nan

    @property
    def keeps_up(self) -> bool:
        """Whether the replicas kept up with the arrivals: at the end, at most `KEEP_UP` of the
        window's arrivals, or at most `KEEP_UP_FEW` requests, were still waiting for their first
        token. A queue that grows for the whole run has no steady state, and its latencies grow
        with the run's length, whatever their intervals say; finished requests cannot tell it (a
        late arrival there never finishes)."""
        return self.waiting <= max(KEEP_UP * self.arrivals, KEEP_UP_FEW)


KEEP_UP = 0.05
"""The share of a run's arrivals (over its measured window) that may still wait for a first token
at its end for it to count as keeping up: a stable queue holds what arrives within about its p99
TTFT (a fraction of a per cent of a minute's arrivals); a replica four times too slow holds most of
them."""
KEEP_UP_FEW = 10
"""So few waiting requests that a run of a few dozen arrivals, one long prompt in its prefill at the
end, is not taken for a queue that grows."""


def outcome(run: Replay, seed: int) -> Outcome:
    rows = tuple(comparisons(run))
    return Outcome(run.deployment, run.replicas, run.rate, (seed,), rows, tuple((r.simulated,) for r in rows),
                   run.result.distributions(), int(run.simulated["requests"]), int(run.simulated["unfinished"]),
                   run.simulated["preemptions_per_request"],
                   tuple((klass, int(figures["requests"])) for klass, figures in run.class_simulated.items()),
                   run.simulated["completed_per_s"], int(run.simulated["waiting_at_end"]),
                   run.rate * (run.result.window[1] - run.result.window[0]))


def simulated_outcome(lowered: Lowered, deployment: str, duration: float, replicas: int, seed: int,
                      router: str) -> Outcome:
    """One run's `Outcome` (what `plan simulate --seeds` runs in a second process, one per seed)."""
    return outcome(replay(lowered, deployment, duration=duration, replicas=replicas, seed=seed, router=router), seed)


def combined(outcomes: list[Outcome]) -> Outcome:
    """Several independent runs of the same deployment (seeds apart) as one: each figure's mean,
    the range of the runs as its interval; the distributions' means; the counts added."""
    if len(outcomes) == 1:
        return outcomes[0]
    first = outcomes[0]
    runs = tuple(tuple(v for o in outcomes for v in o.runs[i]) for i in range(len(first.rows)))
    rows = tuple(dataclasses.replace(row, simulated=float(np.mean(values)), interval=(min(values), max(values)))
                 for row, values in zip(first.rows, runs))
    requests = sum(o.requests for o in outcomes)
    preempted = sum(o.preemptions_per_request * o.requests for o in outcomes)
    return Outcome(first.deployment, first.replicas, first.rate, tuple(s for o in outcomes for s in o.seeds), rows, runs,
                   {name: {k: float(np.mean([o.distributions[name][k] for o in outcomes])) for k in ladder}
                    for name, ladder in first.distributions.items()},
                   requests, sum(o.unfinished for o in outcomes), preempted / requests if requests else math.nan,
                   tuple((klass, sum(dict(o.classes)[klass] for o in outcomes)) for klass, _ in first.classes),
                   float(np.mean([o.completed_rate for o in outcomes])), sum(o.waiting for o in outcomes),
                   sum(o.arrivals for o in outcomes))


def simulation_json(o: Outcome, plan: str, duration: float, router: str) -> str:
    """The `plan.simulate/1` document (docs/report-json.md): the runs, each compared figure with
    its interval, each latency's distribution and each class's; byte-identical for the same
    plan and options. A value that is not finite is null."""
    from . import __version__

    def number(x: float | None) -> float | None:
        return float(x) if x is not None and math.isfinite(x) else None

    def compared(row: Comparison, values: tuple[float, ...]) -> dict[str, Any]:
        return {"name": row.key, "label": row.label, "unit": row.unit, "simulated": number(row.simulated),
                "interval": {"low": number(row.interval[0]), "high": number(row.interval[1])}
                if math.isfinite(row.interval[0]) else None,
                "analytic": number(row.analytic), "field": row.field, "inside": row.inside,
                "difference": number(row.difference), "runs": [number(v) for v in values]}

    rows = list(zip(o.rows, o.runs))
    several = len(o.seeds) > 1
    document = {
        "schema": "plan.simulate/1", "plan": plan, "version": __version__, "deployment": o.deployment,
        "replicas": o.replicas, "duration": duration, "seeds": list(o.seeds), "router": router, "rate": number(o.rate),
        "requests": o.requests, "unfinished": o.unfinished, "preemptions_per_request": number(o.preemptions_per_request),
        "completed_rate": number(o.completed_rate), "backlog": number(o.backlog), "keeps_up": o.keeps_up,
        "interval": {"method": "range of runs" if several else "block bootstrap", "level": INTERVAL_LEVEL,
                     "spans": INTERVAL_BLOCKS, "draws": INTERVAL_RESAMPLES, "min_beyond": INTERVAL_TAIL},
        "figures": [compared(r, v) for r, v in rows if r.klass is None],
        "distributions": {name: {k: number(x) for k, x in ladder.items()} for name, ladder in o.distributions.items()},
        "classes": [{"class": klass, "measured_share": number(count / o.requests if o.requests else math.nan),
                     "requests": count, "figures": [compared(r, v) for r, v in rows if r.klass == klass]}
                    for klass, count in o.classes],
    }
    return json.dumps(document, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


class NotSimulable(ValueError):
    """A plan that compiles but whose deployment the simulator cannot serve: what, in the plan's
    terms (`message`), and what to change (`help`)."""

    def __init__(self, message: str, help: str) -> None:
        super().__init__(message)
        self.message, self.help = message, help


def _check_simulable(deployment: str, value: Callable[[str], float], statics: Mapping[str, str]) -> None:
    """The engine settings the simulator takes, as the engine would take them, and the policies it runs
    (`statics`: the plan's literal booleans, `true` or `false` by field)."""
    seqs, budget = value("max_num_seqs"), value("prefill_chunk")
    capacity, block, rate = value("kv_capacity_tokens"), value("kv_block_size"), value("peak_replica_rate")
    problems = [
        (math.isfinite(rate) and rate > 0, f"no requests reach a replica at the peak (`{deployment}.peak_replica_rate` = {rate:g}/s)",
         "check the traffic's users, requests per user and peak factor"),
        (math.isfinite(seqs) and seqs >= 1, f"`{deployment}.max_num_seqs` = {seqs:g} admits no sequence",
         "set `max_num_seqs` to at least 1"),
        (math.isfinite(budget) and budget >= seqs,
         f"its token budget, `{deployment}.prefill_chunk` = {budget:g} tokens, is below `max_num_seqs` = {seqs:g}: every "
         "running sequence takes a token of each iteration",
         "set `prefill_chunk` to at least `max_num_seqs` tokens, or lower `max_num_seqs` (vLLM refuses this "
         "configuration too: vllm/config/scheduler.py, max_num_batched_tokens must be >= max_num_seqs)"),
        (math.isfinite(capacity) and math.isfinite(block) and block >= 1 and capacity >= block,
         f"its KV cache holds {capacity:,.0f} tokens, less than one block of {block:g}",
         "the weights and activations leave no memory for the KV cache: see `plan compile`'s memory checks "
         "(fewer bytes per weight, more tensor parallelism, or an accelerator with more memory)"),
    ]
    # what the simulator serves: continuous batching in one pool, each running sequence advancing one token an
    # iteration by the target model alone; the analytic model also knows these policies, the simulator not yet
    policies = [
        (value("draft_tokens") == 0, f"`{deployment}.draft_tokens` = {value('draft_tokens'):g}: the simulator runs no "
         "draft model and advances each sequence one token an iteration, so speculative decoding is not simulated",
         "simulate the plan with `draft_tokens = 0`; its analytic figures count the draft (docs/physics.md §8)"),
        (statics.get(f"{deployment}.static_batching") != "true", f"`{deployment}.static_batching` is true: the simulator's scheduler is "
         "continuous batching", "simulate the plan with `static_batching = false`; its analytic figures are those of "
         "static batches (docs/physics.md §7.3)"),
        (statics.get(f"{deployment}.disaggregated") != "true", f"`{deployment}.disaggregated` is true: the simulator serves prefill and decode "
         "on the same replicas", "simulate the plan with `disaggregated = false`; its analytic figures size the two "
         "pools (docs/physics.md §6.4)"),
    ]
    for ok, message, help in problems + policies:
        if not ok:
            raise NotSimulable(message, help)


CLASS_ANALYTIC = {"ttft_p50": "ttft_median_at_peak", "ttft_p99": "ttft_at_peak"}
"""simulated statistic of one class -> the field of its `request_class` with the analytic figure"""


def _class_figures(lowered: Lowered, deployment: str, traffic: str) -> tuple[str, dict[str, float]] | None:
    """The plan's `request_class` of this deployment and class, if it has one, and its analytic figures."""
    statics, el = lowered.elaborated.statics, lowered.elaborated
    for name in el.main_instances:
        if ("request_class" in el.kinds.get(name, ()) and statics.get(f"{name}.deployment") == f"instance {deployment}"
                and statics.get(f"{name}.traffic") == f"instance {traffic}"):
            return name, {k: float(lowered.values[f"{name}.{f}"]) for k, f in CLASS_ANALYTIC.items()}
    return None


def request_classes(lowered: Lowered, traffic: str) -> list[tuple[str, float]]:
    """The request classes a traffic is made of, with their shares of its requests: itself, or,
    for a mix (a traffic with `first` and `second` traffics), the classes of each, weighted by
    the mix's `first_share`."""
    statics = lowered.elaborated.statics
    if not all(statics.get(f"{traffic}.{part}", "").startswith("instance ") for part in ("first", "second")):
        return [(traffic, 1.0)]
    share = float(lowered.values[f"{traffic}.first_share"])
    first, second = (_instance_of(lowered, f"{traffic}.{part}") for part in ("first", "second"))
    return ([(c, w * share) for c, w in request_classes(lowered, first)]
            + [(c, w * (1 - share)) for c, w in request_classes(lowered, second)])


def histogram(lowered: Lowered, traffic: str, which: str) -> tuple[tuple[float, float], ...]:
    """A `histogram_traffic`'s prompt or output bins as (length, share) pairs, those with a share
    above 0; () for any other traffic (its lengths are the lognormal of its mean and p99). The
    bins the plan sets neither a length nor a share for all hold the map's default length and
    share, so they are one bin here: the default length, with the share the histogram's total
    leaves to them."""
    if "histogram_traffic" not in lowered.elaborated.kinds.get(traffic, ()):
        return ()
    v, share, tokens = lowered.values, f"{traffic}.{which}_bin_share", f"{traffic}.{which}_bin_tokens"
    keys = dict.fromkeys(n.partition("[")[2][:-1] for n in lowered.elaborated.order
                         if n.startswith((share + "[", tokens + "[")))
    bins = [(float(v.get(f"{tokens}[{k}]", v[tokens])), float(v.get(f"{share}[{k}]", v[share]))) for k in keys]
    rest = float(v[f"{traffic}.{which}_share_total"]) - sum(weight for _, weight in bins)
    bins += [(float(v[tokens]), rest)] if rest > 1e-12 * float(v[f"{traffic}.{which}_share_total"]) else []
    return tuple((length, weight) for length, weight in bins if weight > 0)


def _instance_of(lowered: Lowered, field: str) -> str:
    """The instance an instance-valued field holds (`chat.traffic` → `chat_traffic`)."""
    key = lowered.elaborated.statics.get(field, "")
    if not key.startswith("instance "):
        raise ValueError(f"`{field}` is not an instance")
    return key.split(" ", 1)[1]


class _IterationTimer:
    """`f(decodes, decode_context, prefill_tokens, prefill_context) -> s` from the plan's formula.

    The shape's contexts are rounded to 8 tokens (the iteration's time moves by far less than a part
    in a thousand within that). Only the nodes the shape moves are computed (42 of the flagship's
    630); the others they read are the plan's values, and a search the formula reads whose answer
    the shape cannot move (the running batch at the peak, whose trials read none of these inputs)
    is given its value in the plan rather than solved again. Those nodes are compiled once into
    programs of the register machine (`scalar.py`, `sim_engine.run_program`: bit for bit the
    vectorised evaluator's values) and
    grouped by the parts of the shape they read: the decode attention reads the decodes and their
    context, the GEMMs and the collectives the decodes and the prefill tokens, the prefill
    attention the prefill tokens and their context, and the sum all four. Each group but the last
    keeps its values by its parts (`GROUP_MEMO` of them at most), so an iteration with a prefill
    computes only the groups whose parts are new, then the sum; a decode-only shape, which a
    replica repeats step after step, is kept whole. A group keeps only its exports, the values
    later groups read. Where the engine's ranges are given (`lengths`: the values each part of the
    key takes), a kept group of at least `TABLE_NODES` nodes whose longest part takes at most
    `TABLE_LENGTH` values keeps whole rows along that part instead: the GEMMs' group (25 nodes,
    tens of µs by its program) at every prefill token count up to the budget for each number of
    decodes, one vectorised pass of about a millisecond (`_row`), bit for bit the programs'
    values. The keys, the lookups and the programs run in `sim_engine.ShapeTimer`, compiled with
    the event loop, which the simulator calls directly (`function()`). Where the shape moves a
    search, each shape is one pass of the vectorised evaluator instead (about 0.35 ms)."""

    GROUP_MEMO = 100_000
    TABLE_NODES = 10
    TABLE_LENGTH = 16_384

    def __init__(self, lowered: Lowered, deployment: str, prompt_tokens: float,
                 lengths: tuple[int, int, int, int] = (0, 0, 0, 0)) -> None:
        self.lowered = lowered
        self.target = f"{deployment}.iteration_time"
        self.inputs = [f"{deployment}.{name}" for name in ITERATION_INPUTS]
        self.only = needed(lowered.elaborated, [ir.Ref(self.target, lowered.elaborated.nodes[self.target].dim,
                                                       lowered.elaborated.nodes[self.target].span, "iteration_time")])
        self.only |= set(self.inputs)
        el = lowered.elaborated
        reach = {name: ir.downstream(el, name) for name in self.inputs}
        shaped = set().union(*reach.values())  # what the shape moves
        self.settled = {n: np.array([float(lowered.values[n])]) for n in self.only - shaped
                        if ir.is_search(el.nodes[n].expr) and n in lowered.values}
        moved = self.only & shaped
        self.pass_nodes, self.constants = self.only, dict(self.settled)
        self.prompt_tokens = max(prompt_tokens, 1.0)
        self.lengths = lengths  # each part of the key: the values it takes, 0 to length − 1
        self.shaped: Any = None  # the compiled timer (`sim_engine.ShapeTimer`), where the formula compiles
        if not any(ir.is_search(el.nodes[n].expr) for n in moved):
            read = {d for n in moved for d in (*el.nodes[n].deps, *ir.refs(el.nodes[n].expr))}
            frontier = read - moved
            self.pass_nodes = moved | frontier | set(self.inputs)  # a fixed value is read only for a node of the pass
            self.constants = {d: self.settled[d] if d in self.settled else _plan_value(lowered.values, d)
                              for d in frontier}
            self.shaped = self._shaped([n for n in el.order if n in moved and n not in reach], reach)
        self.memo: dict[tuple[int, int, int, int], float] = {}  # decode-only shapes, where not compiled
        self._evaluations = 0

    def _shaped(self, nodes: list[str], reach: dict[str, set[str]]) -> Any:
        """The nodes by the parts of the key they read (`KEY_PARTS`), compiled, in a
        `sim_engine.ShapeTimer` (None if a formula does not compile). One group for each set of
        parts that no other set read by some node contains (short of the whole key), and one, last,
        for the nodes that read the whole key; a node goes into the first group, in that order,
        whose parts include its own, so that each group reads only the inputs, itself and the
        groups before it (a group's lookup costs more than computing the few nodes of a smaller one)."""
        el = self.lowered.elaborated
        parts = {n: frozenset(KEY_PARTS[i] for i, name in enumerate(self.inputs) if n in reach[name]) for n in nodes}
        whole = frozenset(KEY_PARTS)
        read = set(parts.values()) - {whole}
        order = sorted((p for p in read if not any(p < q for q in read)), key=lambda p: (len(p), sorted(p)))
        order += [whole] if whole in parts.values() else []
        home = {n: next(g for g in order if parts[n] <= g) for n in nodes}
        by_group = [[n for n in nodes if home[n] == g] for g in order]
        slots = {name: i for i, name in enumerate(self.inputs)}
        for group in by_group:
            slots.update((n, len(slots)) for n in group)
        try:
            programs, env = compile_programs(el, by_group, slots, {d: _plain(v) for d, v in self.constants.items()},
                                             engine_module().OPCODES)
        except Unsupported:
            return None
        self.slots = slots
        loop = engine_module()
        groups = []
        for index, (p, g) in enumerate(zip(order, by_group)):
            later = {r for h in by_group[index + 1:] for n in h for r in (*el.nodes[n].deps, *ir.refs(el.nodes[n].expr))}
            exports = [n for n in g if n in later or n == self.target]
            axis = max(p, key=lambda part: self.lengths[part]) if p != whole else -1
            tabulated = len(g) >= self.TABLE_NODES and axis >= 0 and 0 < self.lengths[axis] <= self.TABLE_LENGTH
            groups.append(loop.ShapeGroup(slots[g[0]], slots[g[-1]] + 1, programs[index].code, programs[index].calls, sorted(p), p != whole,
                                          [slots[n] for n in exports], axis if tabulated else -1,
                                          functools.partial(self._row, axis, exports) if tabulated else None))
        return loop.ShapeTimer(groups, env, slots[self.target], self.prompt_tokens, self.GROUP_MEMO,
                               (self.lengths[0], self.lengths[1]))

    def _row(self, axis: int, exports: list[str], key: list[int]) -> list[list[Any]]:
        """A tabulated group's exports at every value of its axis (0 to the axis's length − 1), the
        key's other parts as given: one pass of the vectorised evaluator, whose values are the
        programs' bit for bit (`scalar.py`)."""
        length = self.lengths[axis]
        parts = [np.arange(length, dtype=float) if i == axis else np.full(length, float(key[i])) for i in range(4)]
        decodes, context, tokens, chunk_context = parts
        fixed = dict(zip(self.inputs, (decodes, context * 8.0, tokens, tokens / self.prompt_tokens, chunk_context * 8.0)))
        out = evaluate_many(self.lowered.elaborated, self.lowered.values, {**self.constants, **fixed}, self.pass_nodes)
        return [np.broadcast_to(np.asarray(out[n], dtype=float), (length,)).tolist() for n in exports]

    @property
    def groups(self) -> list[Any]:
        return [] if self.shaped is None else list(self.shaped.groups)

    @property
    def evaluations(self) -> int:
        """Shapes whose time was computed."""
        return self._evaluations if self.shaped is None else int(self.shaped.evaluations)

    def function(self) -> IterationTime:
        """What the simulator calls: the compiled timer itself where there is one (no Python call
        in between), else this object."""
        return self.shaped if self.shaped is not None else self

    def __call__(self, decodes: Any, decode_context: Any, prefill_tokens: Any, prefill_context: Any) -> float:
        if self.shaped is not None:
            return float(self.shaped(int(decodes), float(decode_context), int(prefill_tokens), float(prefill_context)))
        key = (int(decodes), round(float(decode_context) / 8), int(prefill_tokens), round(float(prefill_context) / 8))
        found = self.memo.get(key)
        if found is None:
            self._evaluations += 1
            found = self._vector(key)
            if key[2] == 0:
                self.memo[key] = found
        return found

    def _vector(self, key: tuple[int, int, int, int]) -> float:
        fixed = dict(zip(self.inputs, (np.array([float(key[0])]), np.array([key[1] * 8.0]), np.array([float(key[2])]),
                                       np.array([key[2] / self.prompt_tokens]), np.array([key[3] * 8.0]))))
        out = evaluate_many(self.lowered.elaborated, self.lowered.values, {**self.constants, **fixed}, self.pass_nodes)
        return float(np.asarray(out[self.target], dtype=float).reshape(-1)[0])


KEY_PARTS = (0, 1, 2, 2, 3)
"""The part of the timer's key (decodes, decode context / 8, prefill tokens, prefill context / 8)
each of `ITERATION_INPUTS` is computed from (`chunk_prompts` from the prefill tokens)."""


def _plain(value: Any) -> Any:
    """A constant of the timer's pass as the scalar evaluator takes it."""
    return float(np.asarray(value).reshape(-1)[0]) if isinstance(value, np.ndarray) else value


def _plan_value(values: dict[str, Any], node: str) -> Any:
    """A node's value as a pass of the vectorised evaluator reads it from the plan (`vector._scalar`;
    nan where the plan has none)."""
    if node not in values:
        return np.nan
    value = values[node]
    return bool(value) if isinstance(value, bool) else float(value)
