"""Figures for the report: the physics of each deployment and the answers, drawn as SVG.

Contract
- `build_figures(compilation) -> list[Figure]`. Each `Figure` has a file-safe `name`
  (`chat-roofline`), a `title`, a one-sentence `caption` saying what it shows and how to read
  it, and `svg`, a complete standalone SVG document (text as `<text>` in DejaVu Sans with
  the generic `sans-serif` after it, so a reader can select and search it and the PDF sets it
  with the font engine rather than outlines; no external references, no URLs other than the
  SVG namespace declarations).
- For every `figure` a kind declares, for each of its instances (`Elaborated.figures`), in
  declaration order: the figure of that name (`compiler/figure_roles.py`) drawn from the
  quantities its roles name, and nothing else — this module knows no field of any kind. The
  stdlib's deployment declares a roofline with the decode and prefill operating points; memory
  per device stacked over batch and over context, with the usable memory and the out-of-memory
  boundary; latency against throughput over batch 1..512 with the TPOT SLO of the plan's
  checks. The curves are the plan's own node graph re-evaluated with `vector.evaluate_many`
  (points where it is undefined are dropped), never a re-derivation.
- From the answers: a tornado chart for each `solve.Sensitivity` (the 8 largest
  elasticities) and a Pareto scatter for each search whose `pareto` is non-empty.
- Output is byte-identical across runs: `svg.hashsalt` fixed, no date or creator metadata.
  matplotlib is imported inside the drawing functions only (the Markdown path never loads it), and
  pyplot never: figures are `matplotlib.figure.Figure` objects, dropped once saved. rc
  settings are scoped with `rc_context`. Nothing is read from disk or the network.
- A plan that did not compile (`compilation.lowered is None`) has no figures.
- `build_figures` is `joined(plan_figures(lowered), answer_figures(compilation))`: the plan's
  figures need only the lowered plan, so the CLI draws them in a second process while the
  questions are answered, and the answers' once they are.
- The answers' figures are drawn in `answer_figures.py`, and both draw with the kit in
  `chart.py` (settings, colours, units, SVG output).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..semantics import ir
from .answer_figures import _pareto_scatter, _ranges, _tornado
from .chart import (
    _BLUE,
    _BYTES,
    _GREEN,
    _GREY,
    _INK,
    _ORANGE,
    _RC,
    _RED,
    Figure,
    _axis_label,
    _finish,
    _int_text,
    _log_125_locator,
    _new,
    _null_formatter,
    _plain_formatter,
    _q,
    _token_formatter,
    _tx,
    _unique_names,
    _unit,
    slug,
)

LATENCY_BATCHES = tuple(2**k for k in range(10))  # 1 .. 512, log2 steps


def build_figures(compilation: Any) -> list[Figure]:
    """The figures of a compiled plan, in report order: per deployment, then the answers."""
    lowered = getattr(compilation, "lowered", None)
    if lowered is None:
        return []
    return joined(plan_figures(lowered), answer_figures(compilation))


def plan_figures(lowered: Any) -> list[Figure]:
    """The figures the plan's kinds declare, drawn from the lowered plan alone (so they can be
    drawn before the questions are answered: `jobs.ahead_each`). Names as drawn: `joined` makes them
    unique together with the answers' figures."""
    import matplotlib

    plan = _Plan(lowered.elaborated, lowered.values)
    out: list[Figure] = []
    with matplotlib.rc_context(_RC):
        for declared in plan.el.figures:
            out += _drawn(_DECLARED[declared.name], plan, _Roles(declared))
    return out


@dataclass(frozen=True)
class AnswerData:
    """What the answers' figures read of a compilation (`answer_figures` takes either): small and
    picklable, so that a process forked before the questions were answered, which has the lowered
    plan already, can be sent the rest and draw them (`answer_data`, `jobs.Later`)."""

    lowered: Any
    uncertainty: Any
    sensitivities: list[Any]
    answers: list[Any]


def answer_data(compilation: Any) -> AnswerData:
    """What of a compilation (or of such a record) the answers' figures draw: the input ranges, the
    first sensitivity and the searches with a front; its lowered plan too (None in a record sent
    to a process that has its own: `dataclasses.replace` puts that in)."""
    return AnswerData(getattr(compilation, "lowered", None), getattr(compilation, "uncertainty", None),
                      list(getattr(compilation, "sensitivities", None) or [])[:1],
                      [a for a in getattr(compilation, "answers", None) or []
                       if getattr(a, "kind", None) == "search" and getattr(a, "pareto", None)])


def answer_figures(compilation: Any) -> list[Figure]:
    """The answers' figures: the input ranges, one tornado for the headline result (the first
    `summary` item; the report's tables give the elasticities of the others) and a Pareto
    scatter for each search with a front (`answer_data` picks them)."""
    data = answer_data(compilation)
    if data.lowered is None:
        return []
    import matplotlib

    out: list[Figure] = []
    with matplotlib.rc_context(_RC):
        if data.uncertainty is not None:
            out += _drawn(_ranges, data.lowered, data.uncertainty)
        for sensitivity in data.sensitivities:
            out += _drawn(_tornado, sensitivity)
        for answer in data.answers:
            out += _drawn(_pareto_scatter, answer)
    return out


def joined(plan: list[Figure], answers: list[Figure]) -> list[Figure]:
    """The plan's figures then the answers', as `build_figures` gives them: names made unique."""
    return _unique_names(plan + answers)


def has_plan_figures(lowered: Any) -> bool:
    """Whether `plan_figures` would draw anything, decided without importing matplotlib (so a
    report can say that figures were left out for want of it, and stay quiet for a plan that
    has none); `has_answer_figures` the same for `answer_figures`."""
    return lowered is not None and bool(lowered.elaborated.figures)


def has_answer_figures(compilation: Any) -> bool:
    data = answer_data(compilation)
    return data.lowered is not None and bool(data.uncertainty is not None or data.sensitivities or data.answers)


def _drawn(draw: Any, *args: Any) -> list[Figure]:
    """One figure (or none). Figures are made without pyplot (whose import alone costs about
    a second, and whose registry would have to be emptied): nothing outlives the call."""
    fig = draw(*args)
    return [fig] if fig is not None else []


class _Plan:
    def __init__(self, elaborated: ir.Elaborated, values: dict[str, Any]) -> None:
        self.el = elaborated
        self.values = values
        self.nodes = elaborated.nodes

    def value(self, node_id: str) -> float:
        try:
            v = float(self.values[node_id])
        except (KeyError, TypeError, ValueError):
            return math.nan
        return v

    def dim(self, node_id: str) -> Any:
        node = self.nodes.get(node_id)
        return node.dim if node is not None else None

    def sweep(self, fixed_id: str, points: Any, targets: list[str]) -> dict[str, Any]:
        """`targets` evaluated with `fixed_id` set to each of `points` (float arrays, NaN where
        a target is undefined or missing)."""
        import numpy as np

        from ..vector import evaluate_many, needed

        points = np.asarray(points, dtype=float)
        present = [t for t in targets if t in self.nodes]
        only = needed(self.el, [self.nodes[t].expr for t in present]) | set(present) | {fixed_id}
        with np.errstate(all="ignore"):
            values = evaluate_many(self.el, self.values, {fixed_id: points}, only)
            out = {}
            for t in targets:
                raw = values.get(t, math.nan) if t in self.nodes else math.nan
                out[t] = np.array(np.broadcast_to(np.asarray(raw, dtype=float), points.shape))
        return out

    def slos(self, wanted: set[str], swept: str) -> list[tuple[str, float, str]]:
        """(node, bound, check label) for each check `<node> <= bound` (either way round) of a
        node in `wanted` whose bound does not move with the node `swept`: a constant, or
        quantities such as an SLO input (`<= chat.tpot_slo`), evaluated at the plan's values."""
        out = []
        for check in self.el.checks:
            e = check.expr
            if not (isinstance(e, ir.Op) and len(e.args) == 2 and e.op in ("<", "<=", ">", ">=")):
                continue
            left, right = e.args
            subject, bound = (left, right) if e.op in ("<", "<=") else (right, left)
            if not (isinstance(subject, ir.Ref) and subject.node in wanted):
                continue
            if swept in ir.upstream_of(self.el, _refs(bound)):
                continue
            value = _constant(bound, self.values)
            if value is not None and math.isfinite(value):
                out.append((subject.node, value, check.label or " ".join(check.span.text.split())))
        return out


class _Roles:
    """One declared figure of one instance: the node each role names (`node`, None when an
    optional role is not given) and the names of its static roles (`text`)."""

    def __init__(self, declared: ir.Figure) -> None:
        self.inst = declared.instance
        self.nodes = dict(declared.roles)
        self.texts = dict(declared.texts)

    def node(self, role: str) -> str | None:
        return self.nodes.get(role)

    def __getitem__(self, role: str) -> str:  # a required role: the elaborator checked it is given
        return self.nodes[role]


def _refs(e: ir.Expr) -> list[str]:
    if isinstance(e, ir.Ref):
        return [e.node]
    if isinstance(e, ir.Op):
        return [r for a in e.args for r in _refs(a)]
    return []


def _constant(e: ir.Expr, values: dict[str, Any]) -> float | None:
    from ..vector import evaluate

    try:
        return float(evaluate(e, values))
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None


def _roofline(plan: _Plan, roles: _Roles) -> Figure | None:
    import numpy as np

    inst, peak_id, ridge_id, bw_id = roles.inst, roles["peak"], roles["ridge"], roles.node("bandwidth")
    peak, ridge = plan.value(peak_id), plan.value(ridge_id)
    bandwidth = plan.value(bw_id) if bw_id else peak / ridge
    if not all(math.isfinite(v) and v > 0 for v in (peak, ridge, bandwidth)):
        return None
    hardware = plan.nodes[bw_id].owner if bw_id else "the accelerator"
    compute_class = roles.texts.get("compute_class")
    at_class = f" at {compute_class}" if compute_class else ""
    ai_dim, flops_dim = plan.dim(ridge_id), plan.dim(peak_id)
    points = [(label, plan.value(node)) for label in ("decode", "prefill") if (node := roles.node(label)) is not None]
    points = [(label, ai) for label, ai in points if math.isfinite(ai) and ai > 0]
    lo = min([ridge, *(ai for _, ai in points)]) / 10
    hi = max([ridge, *(ai for _, ai in points)]) * 10
    x = np.geomspace(lo, hi, 256)
    roof = np.minimum(peak, bandwidth * x)

    title = f"{inst}: roofline of {hardware}{at_class}"
    fig, ax = _new(title)
    ax.loglog(x, roof, color=_INK, label=_tx(f"roof: min({_q(peak, flops_dim)}, {_q(bandwidth, plan.dim(bw_id) if bw_id else None)} × intensity)"
                                             if bw_id else "roof"))
    ax.axvspan(lo, ridge, color=_BLUE, alpha=0.06, linewidth=0)
    ax.axvline(ridge, color=_GREY, linestyle=":", linewidth=1)
    ax.annotate(_tx(f"ridge {_q(ridge, ai_dim)}"), (ridge, peak), xytext=(4, -12), textcoords="offset points",
                fontsize=7, color=_GREY)
    ax.text(0.02, 0.04, "memory-bound", transform=ax.transAxes, fontsize=7, color=_BLUE)
    ax.text(0.98, 0.04, "compute-bound", transform=ax.transAxes, fontsize=7, color=_GREY, ha="right")
    colors = {"decode": _ORANGE, "prefill": _GREEN}
    for label, ai in points:
        attained = min(peak, bandwidth * ai)
        bound = "memory" if ai < ridge else "compute"
        ax.plot([ai], [attained], "o", color=colors[label], markersize=6, zorder=3,
                label=_tx(f"{label}: {_q(ai, ai_dim)} → {_q(attained, flops_dim)} ({bound}-bound)"))
        ax.annotate(label, (ai, attained), xytext=(5, -11 if label == "decode" else 5), textcoords="offset points",
                    fontsize=7, color=colors[label])
    ax.set_ylim(bandwidth * lo / 2, peak * 3)
    ax.set_xlim(lo, hi)
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(_plain_formatter())
        axis.set_minor_formatter(_null_formatter())
    ax.set_xlabel(_axis_label("arithmetic intensity", str(ai_dim)))
    ax.set_ylabel(_axis_label("attainable", str(flops_dim)))
    ax.legend(loc="upper left", frameon=False)
    caption = (f"Attainable FLOP/s of one {hardware} device{at_class} against arithmetic intensity "
               f"(log-log): left of the ridge at {_q(ridge, ai_dim)} a step is limited by memory "
               f"bandwidth, right of it by peak compute, and the dots place {inst}'s decode and prefill steps on that roof.")
    return _finish(fig, f"{slug(inst)}-roofline", title, caption)


_MEMORY_PARTS = (("weights", "weights", _BLUE), ("overhead", "runtime overhead", _ORANGE), ("kv", "KV cache", _GREEN))


def _memory_stack(plan: _Plan, roles: _Roles, swept: str, points: Any, title: str,
                  xlabel: str, marker: float, marker_text: str, log_x: bool, integer: bool,
                  oom_text: Any) -> tuple[Any, str] | None:
    """The stacked memory figure over one input; returns (figure, out-of-memory text or "").
    The boundary is the first failing point of an integer input, else interpolated between
    the last point that fits and the first that does not."""
    import numpy as np

    parts = [(roles[role], label, color) for role, label, color in _MEMORY_PARTS]
    usable_id = roles["usable"]
    values = plan.sweep(swept, points, [p[0] for p in parts] + [usable_id])
    x = np.asarray(points, dtype=float)
    stack = np.vstack([values[p[0]] for p in parts])
    usable = values[usable_id]
    keep = np.all(np.isfinite(stack), axis=0) & np.isfinite(usable) & np.isfinite(x)
    if keep.sum() < 2:
        return None
    x, stack, usable = x[keep], stack[:, keep], usable[keep]
    total = stack.sum(axis=0)
    scale, unit = _unit(float(np.nanmax(np.concatenate([usable, total]))), _BYTES)

    fig, ax = _new(title)
    ax.stackplot(x, stack / scale, labels=[p[1] for p in parts], colors=[p[2] for p in parts], alpha=0.75,
                 linewidth=0)
    ax.plot(x, usable / scale, color=_INK, linewidth=1.2,
            label=_tx(f"usable memory ({_q(float(usable[0]), _BYTES)})"))
    headroom = usable - total
    over = headroom < 0
    boundary = ""
    if over.any():
        i = int(np.argmax(over))
        if i == 0 or integer:
            edge = float(x[i])
        else:  # where the stack crosses the usable line, between the last fitting and first failing point
            h0, h1 = float(headroom[i - 1]), float(headroom[i])
            edge = float(x[i - 1] + (x[i] - x[i - 1]) * h0 / (h0 - h1)) if h0 != h1 else float(x[i])
        ax.axvspan(edge, float(x[-1]), color=_RED, alpha=0.10, linewidth=0, hatch="///", fill=False)
        ax.axvspan(edge, float(x[-1]), color=_RED, alpha=0.07, linewidth=0)
        ax.axvline(edge, color=_RED, linewidth=1)
        boundary = oom_text(edge)
        ax.annotate(_tx(boundary), (edge, float(np.max(usable)) / scale), xytext=(4, 6), textcoords="offset points",
                    fontsize=7, color=_RED)
    if math.isfinite(marker):
        ax.axvline(marker, color=_INK, linestyle="--", linewidth=1, label=_tx(marker_text))
    if log_x:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(_token_formatter())
    ax.set_xlim(float(x[0]), float(x[-1]))
    # at most twice the usable memory: a stack that keeps climbing past it is clipped, not squashed
    top = min(float(np.max(total)), 2 * float(np.max(usable)))
    ax.set_ylim(0, max(top, float(np.max(usable))) / scale * 1.12)
    ax.set_xlabel(_tx(xlabel))
    ax.set_ylabel(_axis_label("memory per device", unit))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)  # outside: the stack fills the axes
    return fig, boundary


def _memory_vs_batch(plan: _Plan, roles: _Roles) -> Figure | None:
    import numpy as np

    inst, batch_id, context_id, max_id = roles.inst, roles["batch"], roles["context"], roles.node("max_batch")
    batch = plan.value(batch_id)
    if not math.isfinite(batch):
        return None
    max_batch = plan.value(max_id) if max_id else math.nan
    top = max(batch, max_batch) if math.isfinite(max_batch) else batch
    top = int(min(max(2, math.ceil(2 * top)), 1_000_000))
    title = f"{inst}: memory per device vs batch"
    context = plan.value(context_id)
    at = f" at {_q(context, plan.dim(context_id))} of context" if math.isfinite(context) else ""
    drawn = _memory_stack(plan, roles, batch_id, np.arange(1, top + 1, dtype=float), title,
                          "batch (sequences per replica)", batch, f"plan: batch {_int_text(batch)}", log_x=False,
                          integer=True, oom_text=lambda edge: f"out of memory from batch {_int_text(edge)}")
    if drawn is None:
        return None
    fig, boundary = drawn
    oom = f"; the shaded region ({boundary}) does not fit" if boundary else ""
    caption = (f"Memory each device of {inst} needs{at} as the batch grows from 1 to {top}, stacked as weights, "
               f"runtime overhead and KV cache against the usable memory line{oom}; the dashed line is the plan's batch.")
    return _finish(fig, f"{slug(inst)}-memory-batch", title, caption)


def _memory_vs_context(plan: _Plan, roles: _Roles) -> Figure | None:
    import numpy as np

    inst, context_id, max_id = roles.inst, roles["context"], roles.node("max_context")
    context = plan.value(context_id)
    high = plan.value(max_id) if max_id else math.nan
    if not math.isfinite(high) or high <= 0:
        high = 16 * context if math.isfinite(context) and context > 0 else math.nan
    if not math.isfinite(high):
        return None
    low = min(1024.0, high / 8)
    points = np.unique(np.concatenate([np.round(np.geomspace(low, high, 240)),
                                       [context] if math.isfinite(context) and low <= context <= high else []]))
    batch = plan.value(roles["batch"])
    title = f"{inst}: memory per device vs context"
    context_dim = plan.dim(context_id)
    drawn = _memory_stack(plan, roles, context_id, points, title, f"context ({context_dim}, log scale)", context,
                          f"plan: context {_q(context, context_dim)}", log_x=True, integer=False,
                          oom_text=lambda edge: f"out of memory beyond ≈ {_q(round(edge), context_dim)}")
    if drawn is None:
        return None
    fig, boundary = drawn
    upto = f"the model's maximum of {_q(high, context_dim)}" if max_id else _q(high, context_dim)
    oom = f"; the shaded region ({boundary}) does not fit" if boundary else ""
    caption = (f"Memory each device of {inst} needs at the plan's batch of {_int_text(batch)} as the context grows "
               f"from {_q(low, context_dim)} to {upto}, stacked as weights, runtime overhead and KV cache against "
               f"the usable memory line{oom}; the dashed line is the plan's context.")
    return _finish(fig, f"{slug(inst)}-memory-context", title, caption)


def _latency_throughput(plan: _Plan, roles: _Roles) -> Figure | None:
    import numpy as np

    inst, batch_id, tpot_id, rate_id = roles.inst, roles["batch"], roles["tpot"], roles["rate"]
    worst_id, headroom_id = roles.node("tpot_worst") or "", roles.node("headroom") or ""  # "" names no node: NaN
    batches = np.array(LATENCY_BATCHES, dtype=float)
    values = plan.sweep(batch_id, batches, [tpot_id, worst_id, rate_id, headroom_id])
    rate, tpot, worst, headroom = values[rate_id], values[tpot_id], values[worst_id], values[headroom_id]
    keep = np.isfinite(rate) & np.isfinite(tpot) & (rate > 0)
    if keep.sum() < 2:
        return None
    fits = ~(headroom < 0)  # NaN headroom (no such node) counts as fitting
    time_dim, rate_dim = plan.dim(tpot_id), plan.dim(rate_id)
    base_tpot, base_rate, batch = plan.value(tpot_id), plan.value(rate_id), plan.value(batch_id)
    slos = plan.slos({tpot_id, worst_id}, batch_id)
    tscale, tunit = _unit(float(np.nanmax(np.concatenate([tpot[keep], worst[keep & np.isfinite(worst)],
                                                          [s[1] for s in slos]]))), time_dim)

    title = f"{inst}: latency vs throughput"
    fig, ax = _new(title)
    ax.plot(rate[keep], tpot[keep] / tscale, color=_BLUE, linewidth=1.2, label="TPOT at the mean context")
    ok, bad = keep & fits, keep & ~fits
    ax.plot(rate[ok], tpot[ok] / tscale, "o", color=_BLUE, markersize=4)
    if bad.any():
        ax.plot(rate[bad], tpot[bad] / tscale, "o", markerfacecolor="white", markeredgecolor=_RED, markersize=4,
                label="batch does not fit in memory")
    wkeep = keep & np.isfinite(worst)
    if wkeep.sum() >= 2:
        ax.plot(rate[wkeep], worst[wkeep] / tscale, color=_BLUE, linestyle="--", linewidth=1, alpha=0.7,
                label="TPOT with every sequence at the full context")
    for b, r, t in zip(batches[keep], rate[keep], tpot[keep]):
        ax.annotate(_int_text(b), (r, t / tscale), xytext=(-3, 5), textcoords="offset points", fontsize=6,
                    color=_GREY, ha="right")
    for node, bound, label in slos:
        ax.axhline(bound / tscale, color=_RED, linewidth=1, linestyle=":",
                   label=_tx(f"SLO: {node.split('.', 1)[1]} ≤ {_q(bound, time_dim)} ({label})"))
    if math.isfinite(base_rate) and math.isfinite(base_tpot):
        ax.plot([base_rate], [base_tpot / tscale], "*", color=_ORANGE, markersize=11, zorder=4,
                label=_tx(f"plan: batch {_int_text(batch)}, {_q(base_tpot, time_dim)}, {_q(base_rate, rate_dim)}"))
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(_log_125_locator())
    ax.xaxis.set_major_formatter(_plain_formatter())
    ax.xaxis.set_minor_formatter(_null_formatter())
    ax.set_ylim(bottom=0)
    ax.set_xlabel(_axis_label("output tokens per second of one replica", str(rate_dim)))
    ax.set_ylabel(_axis_label("time per output token", tunit))
    ax.legend(loc="upper left", frameon=True, framealpha=0.85, edgecolor="none")
    slo_text = "the dotted line is the TPOT SLO the plan checks, " if slos else ""
    caption = (f"Time per output token against the output tokens per second of one {inst} replica as the batch "
               f"doubles from 1 to {LATENCY_BATCHES[-1]} (numbers by the points): moving right buys throughput "
               f"with latency, {slo_text}hollow points do not fit in memory and the star is the plan's batch.")
    return _finish(fig, f"{slug(inst)}-latency-throughput", title, caption)


# every figure of compiler/figure_roles.py, by name (tests/test_figures.py checks they agree)
_DECLARED = {"roofline": _roofline, "memory_batch": _memory_vs_batch, "memory_context": _memory_vs_context,
             "latency_throughput": _latency_throughput}
