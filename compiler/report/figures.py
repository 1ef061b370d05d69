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
  matplotlib is imported inside `build_figures` only (the Markdown path never loads it), and
  pyplot never: figures are `matplotlib.figure.Figure` objects, dropped once saved. rc
  settings are scoped with `rc_context`. Nothing is read from disk or the network.
- A plan that did not compile (`compilation.lowered is None`) has no figures.
"""

from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

from ..semantics import ir
from ..semantics.units import Dim, format_quantity, unit_scale

FIGSIZE = (6.0, 3.5)
TOP_SENSITIVITIES = 8
LATENCY_BATCHES = tuple(2**k for k in range(10))  # 1 .. 512, log2 steps
_RC: Any = {  # matplotlib types rcParams keys as Literals: Any keeps mypy quiet with or without it
    "svg.hashsalt": "plan",
    "svg.fonttype": "none",  # text as <text>: selectable, and drawn by the font engine
    "font.size": 8.0,
    "axes.titlesize": 9.0,
    "axes.labelsize": 8.0,
    "legend.fontsize": 7.0,
    "xtick.labelsize": 7.0,
    "ytick.labelsize": 7.0,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.5,
    "lines.linewidth": 1.4,
    "path.simplify": False,
}
_METADATA = {"Date": None, "Creator": None, "Type": None, "Format": None}
_BLUE, _ORANGE, _GREEN, _RED, _GREY, _INK = "#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8c8c8c", "#222222"
_BYTES = Dim.of(bytes=1)


@dataclass(frozen=True)
class Figure:
    name: str  # file-safe, e.g. "chat-roofline"
    title: str
    caption: str  # one sentence: what it shows and how to read it
    svg: str  # a complete standalone SVG document


def build_figures(compilation: Any) -> list[Figure]:
    """The figures of a compiled plan, in report order: per deployment, then the answers."""
    lowered = getattr(compilation, "lowered", None)
    if lowered is None:
        return []
    import matplotlib

    plan = _Plan(lowered.elaborated, lowered.values)
    out: list[Figure] = []
    with matplotlib.rc_context(_RC):
        for declared in plan.el.figures:
            out += _drawn(_DECLARED[declared.name], plan, _Roles(declared))
        uncertainty = getattr(compilation, "uncertainty", None)
        if uncertainty is not None:
            out += _drawn(_ranges, lowered, uncertainty)
        # One tornado: the headline result (the first `summary` item); the report's tables
        # give the elasticities of the others.
        for sensitivity in (getattr(compilation, "sensitivities", None) or [])[:1]:
            out += _drawn(_tornado, sensitivity)
        for answer in getattr(compilation, "answers", None) or []:
            if getattr(answer, "kind", None) == "search" and getattr(answer, "pareto", None):
                out += _drawn(_pareto_scatter, answer)
    return _unique_names(out)


def has_figures(compilation: Any) -> bool:
    """Whether `build_figures` would draw anything (a deployment, input ranges, a sensitivity, a
    Pareto front), decided without importing matplotlib: so a report can say that figures were
    left out because matplotlib is missing, and stay quiet for a plan that has none."""
    lowered = getattr(compilation, "lowered", None)
    if lowered is None:
        return False
    return bool(lowered.elaborated.figures
                or getattr(compilation, "uncertainty", None) is not None
                or getattr(compilation, "sensitivities", None)
                or any(getattr(a, "kind", None) == "search" and getattr(a, "pareto", None)
                       for a in getattr(compilation, "answers", None) or []))


def _drawn(draw: Any, *args: Any) -> list[Figure]:
    """One figure (or none). Figures are made without pyplot (whose import alone costs about
    a second, and whose registry would have to be emptied): nothing outlives the call."""
    fig = draw(*args)
    return [fig] if fig is not None else []


# ---- the plan's values and sweeps ---------------------------------------------------------


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


# ---- units and text -----------------------------------------------------------------------

_MULTIPLIER_STEPS = ((1e9, "G"), (1e6, "M"), (1e3, "k"))
_TICK_STEPS = ((1e15, "P"), (1e12, "T"), *_MULTIPLIER_STEPS)  # a roofline's FLOP/s reach 10^15


def _unit(value: float, dim: Any, unit: str | None = None) -> tuple[float, str]:
    """(scale, label) to show values near `value` of `dim`: the display unit if one is asked
    for, else the unit `format_quantity` would pick; plain SI if neither applies."""
    if not isinstance(dim, Dim):
        return 1.0, ""
    if unit:
        try:
            scale, unit_dim = unit_scale(unit)
        except ValueError:
            scale, unit_dim = None, None
        if unit_dim == dim and scale:
            return _with_multiplier(value, float(scale), unit.strip())
    if math.isfinite(value) and value != 0:
        label = format_quantity(abs(value), dim).lstrip("$").partition(" ")[2]
        if label:
            try:
                scale, unit_dim = unit_scale(label)
            except ValueError:
                scale, unit_dim = None, None
            if unit_dim == dim and scale:
                if label == str(dim):
                    return _with_multiplier(value, float(scale), label)
                return float(scale), label
    return _with_multiplier(value, 1.0, "" if dim.is_dimensionless else str(dim))


def _with_multiplier(value: float, scale: float, label: str) -> tuple[float, str]:
    shown = abs(value) / scale if math.isfinite(value) else 0.0
    for size, word in _MULTIPLIER_STEPS:
        if shown >= size:
            return scale * size, f"{word} {label}".strip()
    return scale, label


def _axis_label(name: str, unit: str) -> str:
    return _tx(f"{name} ({unit})" if unit else name)


def _q(value: float, dim: Any, unit: str | None = None) -> str:
    if not isinstance(dim, Dim) or not math.isfinite(value):
        return f"{value:.4g}"
    try:
        return format_quantity(value, dim, unit)
    except ValueError:
        return format_quantity(value, dim)


def _tx(text: str) -> str:
    """Text for matplotlib: a `$` is a dollar, never the start of mathtext."""
    return text.replace("$", r"\$")


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "figure"


def _unique_names(figures: list[Figure]) -> list[Figure]:
    seen: dict[str, int] = {}
    out = []
    for f in figures:
        n = seen.get(f.name, 0) + 1
        seen[f.name] = n
        out.append(f if n == 1 else Figure(f"{f.name}-{n}", f.title, f.caption, f.svg))
    return out


def _finish(fig: Any, name: str, title: str, caption: str) -> Figure:
    """Render to a standalone SVG with a <title> and <desc>, and close the figure."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata=_METADATA)
    svg = re.sub(r"<!DOCTYPE[^>]*>\s*", "", buf.getvalue(), count=1)  # its DTD address is the only URL
    svg = re.sub(r"\A<\?xml[^>]*\?>", '<?xml version="1.0" encoding="utf-8"?>', svg)
    open_end = svg.index(">", svg.index("<svg")) + 1
    svg = (svg[:open_end] + f"\n <title>{escape(title)}</title>\n <desc>{escape(caption)}</desc>"
           + svg[open_end:])
    return Figure(name, title, caption, svg)


def _new(title: str) -> tuple[Any, Any]:
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(figsize=FIGSIZE, layout="constrained")
    ax = fig.subplots()
    ax.set_title(_tx(title))
    return fig, ax


def _int_text(x: float) -> str:
    return f"{int(x):,}" if math.isfinite(x) and float(x).is_integer() else f"{x:.4g}"


# ---- deployment figures -------------------------------------------------------------------


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


def _token_formatter() -> Any:
    from matplotlib.ticker import FuncFormatter

    def fmt(v: float, _pos: Any) -> str:
        if v >= 1024 and v % 1024 == 0:
            return f"{int(v // 1024)}k"
        return f"{v:g}"

    return FuncFormatter(fmt)


def _plain_formatter() -> Any:
    """Log-axis ticks as plain numbers with SI multipliers: `100`, `1k`, `10k`, `1P`. (Matplotlib's
    default writes powers of ten in mathtext, whose parser costs about half a second to build.)"""
    from matplotlib.ticker import FuncFormatter

    def fmt(v: float, _pos: Any) -> str:
        for size, word in _TICK_STEPS:
            if abs(v) >= size:
                return f"{v / size:g}{word}"
        return f"{v:g}"

    return FuncFormatter(fmt)


def _log_125_locator() -> Any:
    from matplotlib.ticker import LogLocator

    return LogLocator(base=10, subs=(1.0, 2.0, 5.0))


def _null_formatter() -> Any:
    from matplotlib.ticker import NullFormatter

    return NullFormatter()


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


# ---- answer figures -----------------------------------------------------------------------


# every figure of compiler/figure_roles.py, by name (tests/test_figures.py checks they agree)
_DECLARED = {"roofline": _roofline, "memory_batch": _memory_vs_batch, "memory_context": _memory_vs_context,
             "latency_throughput": _latency_throughput}


def _tornado(sensitivity: Any) -> Figure | None:
    import numpy as np

    # in the solver's order (largest first, as the tables rank them)
    entries = [(n, float(e)) for n, e in sensitivity.entries if math.isfinite(float(e))][:TOP_SENSITIVITIES]
    if not entries:
        return None
    target = sensitivity.target
    title = f"What {target} is most sensitive to"
    fig, ax = _new(title)
    y = np.arange(len(entries))
    values = np.array([e for _, e in entries])
    ax.barh(y, values, color=[_BLUE if v > 0 else _ORANGE for v in values], height=0.6)
    ax.set_yticks(y, [_tx(n) for n, _ in entries])
    ax.invert_yaxis()
    ax.axvline(0, color=_INK, linewidth=0.8)
    span = float(np.max(np.abs(values)))
    for yi, v in zip(y, values):
        ax.annotate(f"{v:+.2f}", (v, yi), xytext=(3 if v >= 0 else -3, 0), textcoords="offset points",
                    va="center", ha="left" if v >= 0 else "right", fontsize=7)
    ax.set_xlim(-span * 1.3 if (values < 0).any() else 0, span * 1.3 if (values > 0).any() else 0)
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("elasticity  d ln y / d ln x  (% change of the target per 1 % change of the input)")
    caption = (f"The {len(entries)} inputs {target} is most sensitive to, as elasticities: a bar of +0.5 means "
               f"1 % more of that input raises {target} by about 0.5 %, and a negative bar lowers it.")
    return _finish(fig, f"sensitivity-{slug(target)}", title, caption)


def _ranges(lowered: Any, uncertainty: Any) -> Figure | None:
    """The headline results over the input ranges: each summary item's interval as a band
    around its value at the midpoints, in per cent of that value."""
    import numpy as np

    el = lowered.elaborated
    rows = []
    for expr, value, interval in zip(el.summary, lowered.summary, uncertainty.summary):
        if interval is None or expr.dim == ir.BOOL or not float(value):
            continue
        nominal = float(value)
        unit = el.nodes[expr.node].unit if isinstance(expr, ir.Ref) else None
        rows.append((" ".join(expr.span.text.split()), nominal, interval, expr.dim, unit))
    if not rows:
        return None
    title = "Headline results over the input ranges"
    fig, ax = _new(title)
    y = np.arange(len(rows))
    for yi, (_label, nominal, interval, dim, unit) in zip(y, rows):
        low, high = (100 * (v / nominal - 1) for v in (interval.low, interval.high))
        ax.barh(yi, high - low, left=low, height=0.45, color=_BLUE if interval.monotone else _ORANGE, alpha=0.8)
        ax.annotate(_tx(f"{_q(interval.low, dim, unit)} – {_q(interval.high, dim, unit)}"), ((low + high) / 2, yi - 0.25),
                    xytext=(0, 2), textcoords="offset points", va="bottom", ha="center", fontsize=7)
    ax.set_yticks(y, [_tx(r[0]) for r in rows])
    ax.invert_yaxis()
    ax.axvline(0, color=_INK, linewidth=0.8)
    span = max(max(abs(100 * (r[2].low / r[1] - 1)), abs(100 * (r[2].high / r[1] - 1))) for r in rows) or 1.0
    ax.set_xlim(-span * 1.4, span * 1.4)
    ax.set_ylim(len(rows) - 0.5, -0.9)  # room above the first bar for its label
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("change from the value at the midpoints of the input ranges (%)")
    names = ", ".join(uncertainty.inputs)
    caption = (f"Each headline result over the ranges given for {names}: the bar spans its smallest to its largest "
               "value, in per cent of the value the plan computes at the midpoints (the line at 0); blue bars are "
               "monotone in every range (exact, from the corners), orange ones were sampled on a grid.")
    return _finish(fig, "input-ranges", title, caption)


def _pareto_scatter(table: Any) -> Figure | None:
    import numpy as np

    columns = list(table.columns)
    if len(table.plot_columns) != 2:
        return None
    ix, iy = table.plot_columns
    eliminated = next((i for i, c in enumerate(columns) if c[1] == "text"), None)
    feasible: list[tuple[float, float, str]] = []
    rejected: list[tuple[float, float, str]] = []
    at: dict[int, int] = {}  # row index -> index into `feasible`
    for r, (label, row) in enumerate(table.rows):
        try:
            x, y = float(row[ix]), float(row[iy])
        except (TypeError, ValueError, IndexError):
            continue
        if not (math.isfinite(x) and math.isfinite(y)):
            continue
        if eliminated is not None and row[eliminated]:
            rejected.append((x, y, str(label)))
        else:
            at[r] = len(feasible)
            feasible.append((x, y, str(label)))
    if not feasible:
        return None
    (xname, xdim, xunit_req), (yname, ydim, yunit_req) = columns[ix], columns[iy]
    xscale, xunit = _unit(max(abs(p[0]) for p in feasible), xdim, xunit_req)
    yscale, yunit = _unit(max(abs(p[1]) for p in feasible), ydim, yunit_req)
    front = [at[r] for r in table.pareto if r in at]  # the search's own front (its rows), not computed again
    subject = _subject(table)
    title = f"{subject}: {table.title}" if subject else table.title
    fig, ax = _new(title)
    fx = np.array([p[0] for p in feasible]) / xscale
    fy = np.array([p[1] for p in feasible]) / yscale
    ax.plot(fx, fy, "o", color=_BLUE, alpha=0.6, markersize=5, label="meets the constraints")
    if rejected:
        ax.plot(np.array([p[0] for p in rejected]) / xscale, np.array([p[1] for p in rejected]) / yscale, "x",
                color=_GREY, markersize=5, label="eliminated by a constraint")
    ax.step(fx[front], fy[front], where="post", color=_RED, linewidth=1, alpha=0.8)
    ax.plot(fx[front], fy[front], "o", color=_RED, markersize=6, label="Pareto front", zorder=3)
    best = getattr(table, "best", None)
    star = None
    if best is not None and 0 <= best < len(table.rows):
        label = str(table.rows[best][0])
        hit = next((i for i, p in enumerate(feasible) if p[2] == label), None)
        if hit is not None:
            ax.plot([fx[hit]], [fy[hit]], "*", color=_ORANGE, markersize=12, zorder=4,
                    label=_tx(f"best: {label}"))
            star = (fx[hit], fy[hit])
    ax.set_xlabel(_axis_label(xname, xunit))
    ax.set_ylabel(_axis_label(yname, yunit))
    axes = _search_axes(table)
    ax.legend(loc="upper right", frameon=True, framealpha=0.85, edgecolor="none",
              title=_tx(f"labels: {axes}") if axes else None, title_fontsize=7)
    points = [*zip(fx, fy)]
    if rejected:
        points += [(p[0] / xscale, p[1] / yscale) for p in rejected]
    _label_points(fig, ax, [((fx[i], fy[i]), _tx(feasible[i][2])) for i in front], points, big=star)
    labelled = f" (labelled {axes})" if axes else ""
    caption = (f"Each point is a configuration the search lists{labelled}, placed by {xname} and {yname} (lower is "
               f"better on both); the red staircase is the Pareto front of the listed feasible configurations, where "
               f"improving one axis costs the other, and grey crosses were eliminated by a constraint.")
    return _finish(fig, f"{slug(subject or 'search')}-pareto", title, caption)



# Where a point's label may go, in order of preference: (dx, dy) in points, and its alignment.
# Beside the point first, above and to the right (clear of a Pareto staircase, which runs right,
# then down); then further up or down, with a leader line back to the point.
_LABEL_SPOTS = ((5, 3, "left", "bottom"), (5, -3, "left", "top"), (-5, 3, "right", "bottom"),
                (-5, -3, "right", "top"), (0, 6, "center", "bottom"), (0, -6, "center", "top"),
                (5, 12, "left", "bottom"), (5, -12, "left", "top"), (-5, 12, "right", "bottom"),
                (-5, -12, "right", "top"), (0, 14, "center", "bottom"), (0, -14, "center", "top"))


def _label_points(fig: Any, ax: Any, labels: list[tuple[tuple[float, float], str]],
                  points: list[tuple[float, float]], big: tuple[float, float] | None = None) -> None:
    """Label points so that no label covers another label, a plotted point (`big`: the star of
    the best one) or the legend, nor leaves the axes: each takes the first spot of `_LABEL_SPOTS`
    that is clear, or else the one that covers least. Measured on the laid-out figure, so the
    same data gives the same figure."""
    from matplotlib.transforms import Bbox

    fig.draw_without_rendering()
    px = fig.dpi / 72  # display pixels per point

    def square(xy: Any, half: float) -> Any:
        return Bbox.from_extents(xy[0] - half * px, xy[1] - half * px, xy[0] + half * px, xy[1] + half * px)

    markers = [square(c, 3.5) for c in ax.transData.transform(points)] if points else []
    placed = [] if big is None else [square(ax.transData.transform([big])[0], 6)]
    legend = ax.get_legend()
    if legend is not None:
        placed.append(legend.get_window_extent())
    frame = ax.get_window_extent()

    def covered(box: Any, own: Any) -> float:
        box = box.padded(1.5 * px)  # a little air between neighbours
        outside = box.width * box.height - _overlap(box, frame)
        return float(outside) + sum(_overlap(box, o) for o in placed) + sum(
            _overlap(box, m) for m in markers if not m.contains(*own))

    for xy, text in labels:
        own = ax.transData.transform([xy])[0]
        costs = []
        for dx, dy, ha, va in _LABEL_SPOTS:
            note = ax.annotate(text, xy, xytext=(dx, dy), textcoords="offset points", fontsize=6.5,
                               color=_RED, ha=ha, va=va)
            costs.append(covered(note.get_window_extent(), own))
            note.remove()
            if costs[-1] == 0:
                break
        dx, dy, ha, va = _LABEL_SPOTS[costs.index(min(costs))]
        leader = {"arrowstyle": "-", "color": _RED, "linewidth": 0.4, "shrinkA": 0, "shrinkB": 3} if abs(dy) > 5 else None
        note = ax.annotate(text, xy, xytext=(dx, dy), textcoords="offset points", fontsize=6.5, color=_RED,
                           ha=ha, va=va, arrowprops=leader)
        placed.append(note.get_window_extent())


def _overlap(a: Any, b: Any) -> float:
    """Area two matplotlib boxes share."""
    from matplotlib.transforms import Bbox

    shared = Bbox.intersection(a, b)
    return shared.width * shared.height if shared is not None else 0.0


def _subject(table: Any) -> str:
    subject = getattr(getattr(table, "stmt", None), "subject", None)
    steps = getattr(subject, "steps", None)
    return ".".join(s.name for s in steps) if steps else ""


def _search_axes(table: Any) -> str:
    """What a configuration's label lists: the searched fields, in order (`weights, batch`)."""
    domains = getattr(getattr(table, "stmt", None), "domains", None) or ()
    names = [getattr(getattr(d, "target", None), "dotted", None) for d in domains]
    return ", ".join(n for n in names if n) if all(names) else ""
