"""The report's drawing kit, private to its figures (`figures.py`, `answer_figures.py`): the
`Figure` record, matplotlib's settings for byte-identical SVG with text as text, colours, units
and tick formatters, and turning a matplotlib figure into a standalone SVG. matplotlib is imported
inside the functions that draw, never at import time.
"""

from __future__ import annotations

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
