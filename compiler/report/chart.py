"""The report's drawing kit, private to its figures (`figures.py`, `answer_figures.py`): the
`Figure` record, matplotlib's settings for byte-identical SVG with text as text, colours, units
and tick formatters, placing a figure's axes so that its texts fit (`_fit`, from the font's
measures: no layout engine), and turning a matplotlib figure into a standalone SVG. matplotlib is
imported inside the functions that draw, never at import time.
"""

from __future__ import annotations

import functools
import io
import math
import re
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

from ..semantics.units import Dim, format_quantity, unit_scale

FIGSIZE = (6.0, 3.5)


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


_PAD = 4.0  # points of air between the figure's edge and the outermost text


def _text_size(text: str, size: float) -> tuple[float, float]:
    """(width, height) in points of text at `size` points (its widest line, and its lines' height),
    from the font's own advances (FreeType, unhinted), a little widened as renderers draw them:
    what matplotlib's layout would measure, without a renderer or a tick drawn. The font is the
    settings' family (the figures never change it)."""
    return _measure(text, float(size))


@functools.lru_cache(maxsize=4096)
def _measure(text: str, size: float) -> tuple[float, float]:
    import matplotlib
    from matplotlib.font_manager import FontProperties, findfont, get_font
    from matplotlib.ft2font import LoadFlags

    font = get_font(findfont(FontProperties(family=matplotlib.rcParams["font.family"])))
    font.set_size(size, 72)
    lines = text.replace("\\$", "$").split("\n")
    widths = []
    for line in lines:
        font.set_text(line, 0.0, flags=LoadFlags.NO_HINTING)
        widths.append(font.get_width_height()[0] / 64 * _WIDTH_MARGIN)
    return max(widths, default=0.0), 1.2 * size * len(lines)


_WIDTH_MARGIN = 1.04  # renderers hint and round glyphs a little wider than the font's advances (Agg: 2 %)


def _points(size: Any) -> float:
    """A font size from the settings (8.0, or "medium") in points."""
    from matplotlib.font_manager import FontProperties

    return float(FontProperties(size=size).get_size_in_points())


def _tick_texts(axis: Any) -> list[str]:
    """The labels the axis will draw: its major and minor ticks inside its view."""
    low, high = sorted(axis.get_view_interval())
    out = []
    for locs, formatter in ((axis.get_majorticklocs(), axis.get_major_formatter()),
                            (axis.get_minorticklocs(), axis.get_minor_formatter())):
        inside = [v for v in locs if low - 1e-9 * abs(low) <= v <= high + 1e-9 * abs(high)]
        out += [t for t in formatter.format_ticks(inside) if t]
    return out


def _fit(fig: Any) -> None:
    """Place the one axes so that its tick labels, axis labels, title and an outside legend fit
    the figure with `_PAD` to spare, measured from the font (`_text_size`). Matplotlib's
    constrained layout found the same by laying out every tick of the figure twice, which was
    about a third of the time a figure takes to draw. Run again, it gives the same."""
    import matplotlib

    ax = fig.axes[0]
    rc: Any = matplotlib.rcParams  # typed by Literal keys: Any, as for _RC
    width, height = (float(v) * 72 for v in fig.get_size_inches())
    tick_room = {a: float(rc[f"{a}tick.major.size"]) + float(rc[f"{a}tick.major.pad"]) for a in "xy"}
    ax.get_xlim(), ax.get_ylim()  # settle the view (autoscaling) before its ticks are read
    y_ticks = [_text_size(t, _points(rc["ytick.labelsize"])) for t in _tick_texts(ax.yaxis)]
    x_ticks = [_text_size(t, _points(rc["xtick.labelsize"])) for t in _tick_texts(ax.xaxis)]
    label_size = _points(rc["axes.labelsize"])
    ylabel = ax.get_ylabel()
    xlabel = ax.get_xlabel()
    left = (_PAD + max((w for w, _ in y_ticks), default=0.0) + tick_room["y"]
            + (_text_size(ylabel, label_size)[1] + float(rc["axes.labelpad"]) if ylabel else 0.0))
    bottom = (_PAD + max((h for _, h in x_ticks), default=0.0) + tick_room["x"]
              + (_text_size(xlabel, label_size)[1] + float(rc["axes.labelpad"]) if xlabel else 0.0))
    title = ax.get_title()
    top = _PAD + (_text_size(title, _points(rc["axes.titlesize"]))[1] + float(rc["axes.titlepad"]) if title else 0.0)
    right = _PAD + (x_ticks[-1][0] / 2 if x_ticks else 0.0)  # the last tick label hangs over the axes' end
    legend = ax.get_legend()
    anchor = legend.get_bbox_to_anchor().transformed(ax.transAxes.inverted()) if legend is not None else None
    if legend is not None and anchor is not None and anchor.x0 > 1:  # a legend beside the axes, not in them
        size = _points(rc["legend.fontsize"])
        texts = [t.get_text() for t in legend.get_texts()]
        right = _PAD + (anchor.x0 - 1) * (width - left - right) + size * (
            float(rc["legend.handlelength"]) + float(rc["legend.handletextpad"]) + 2 * float(rc["legend.borderpad"])
            + 2 * float(rc["legend.borderaxespad"])) + max((_text_size(t, size)[0] for t in texts), default=0.0)
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height)


def _finish(fig: Any, name: str, title: str, caption: str) -> Figure:
    """Render to a standalone SVG with a <title> and <desc>, and close the figure."""
    _fit(fig)
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

    fig = MplFigure(figsize=FIGSIZE)  # placed by `_fit`, not a layout engine
    ax = fig.subplots()
    ax.set_title(_tx(title))
    return fig, ax


def _int_text(x: float) -> str:
    return f"{int(x):,}" if math.isfinite(x) and float(x).is_integer() else f"{x:.4g}"


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
