"""The figures drawn from the answers to a plan's questions: the tornado of a sensitivity, the
input ranges, and the Pareto front of a search (contract in `figures.py`).
"""

from __future__ import annotations

import math
from typing import Any

from ..semantics import ir
from .chart import (
    _BLUE,
    _GREY,
    _INK,
    _ORANGE,
    _RED,
    Figure,
    _axis_label,
    _finish,
    _fit,
    _new,
    _q,
    _tx,
    _unit,
    slug,
)

TOP_SENSITIVITIES = 8


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
    ax.set_xlabel("elasticity  d ln y / d ln x\n(% change of the target per 1 % change of the input)")
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

    _fit(fig)  # the axes where they will be drawn
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
    q = table.question
    return q.subject if isinstance(q, (ir.Search, ir.Table)) else ""


def _search_axes(table: Any) -> str:
    """What a configuration's label lists: the searched fields, in order (`weights, batch`)."""
    q = table.question
    return ", ".join(a.label for a in q.axes) if isinstance(q, (ir.Search, ir.Table)) else ""
