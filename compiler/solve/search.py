"""`search`: every configuration of the given axes, the feasible ones ranked by the objective,
the first rejected ones with the constraint that eliminated them, and the Pareto front of two
plotted quantities.

Contract: static axes (an enum member, an instance) re-elaborate the plan, one variant per
combination; numeric axes are evaluated together, vectorised, on only the nodes the objective,
the constraints and the plotted quantities read.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from ..semantics import ir
from ..semantics.units import DIMENSIONLESS
from ..syntax import ast
from .answers import TableAnswer
from .base import SolverBase
from .literals import is_neg_number, label_of, literal_value, setting_label, static_label

PROGRESS_CONFIGURATIONS = 100_000
"""A search of this many configurations or more says so as it starts (about a second on 2 cores)."""


class Searches(SolverBase):
    def search(self, q: ir.Search) -> TableAnswer | None:
        """Evaluate every configuration (static choices re-elaborate the plan; numeric axes are
        evaluated together, vectorised, on only the nodes the objective and constraints read)."""
        import numpy as np

        from ..vector import evaluate as vec_eval
        from ..vector import evaluate_many, needed

        axes = self._search_axes(q)
        if axes is None:
            return None
        static_axes, numeric_axes = axes
        shape = tuple(len(p) for _, p in numeric_axes)
        total = math.prod(shape) * math.prod(len(p) for _, p in static_axes)
        if total >= PROGRESS_CONFIGURATIONS:
            self.progress(f"searching {total:,} configurations")
        blocks: list[tuple[tuple[ast.Expr, ...], Any, Any, Any, list[Any]]] = []
        for static_combo in itertools.product(*(p for _, p in static_axes)):
            overrides = {t: v for (t, _), v in zip(static_axes, static_combo)}
            variant = self.variant(overrides, q.span) if overrides else self.base
            if variant is None:
                continue
            found = [self.expr_in(e, variant) for e in (q.target.expr, *q.constraints, *(c.expr for c in q.pareto))]
            exprs = [e for e in found if e is not None]
            if len(exprs) != len(found):
                return None
            grids = np.meshgrid(*[np.array([float(literal_value(p)) for p in pts]) for _, pts in numeric_axes],
                                indexing="ij") if numeric_axes else []
            fixed = {node_id: g.ravel() for (node_id, _), g in zip(numeric_axes, grids)}
            n = math.prod(shape) if numeric_axes else 1
            vals = evaluate_many(variant.elaborated, variant.values, fixed, needed(variant.elaborated, exprs) | set(fixed),
                                 keep={r for e in exprs for r in ir.refs(e)} | set(fixed))

            def as_array(e: ir.Expr, kind: type, vals: dict[str, Any] = vals, n: int = n) -> Any:
                return np.broadcast_to(np.asarray(vec_eval(e, vals), dtype=kind), (n,))

            objective = as_array(exprs[0], float)
            failed = np.full(n, -1)
            for k, c in enumerate(exprs[1:1 + len(q.constraints)]):
                failed[(failed < 0) & ~as_array(c, bool)] = k
            failed[(failed < 0) & ~np.isfinite(objective)] = len(q.constraints)
            extras = [as_array(e, float) for e in exprs[1 + len(q.constraints):]]
            blocks.append((static_combo, objective, failed, n, extras))
        return self._search_table(q, static_axes, numeric_axes, shape, blocks)

    def _search_axes(self, q: ir.Search) -> tuple[list[Any], list[Any]] | None:
        if self.sized(q, q.axes) is None:
            return None
        static_axes: list[tuple[ir.FieldRef, list[ast.Expr]]] = []
        numeric_axes: list[tuple[str, list[ast.Expr]]] = []
        for d in q.axes:
            pts = self.points(d, self.base)
            if pts is None:
                return None
            t = d.field
            node_id = ir.node_id(*t)
            if node_id in self.nodes and all(isinstance(p, ast.Number) or is_neg_number(p) for p in pts):
                numeric_axes.append((node_id, pts))
            else:
                static_axes.append((t, pts))
        return static_axes, numeric_axes

    def _search_table(self, q: ir.Search, static_axes: list[Any], numeric_axes: list[Any],
                      shape: tuple[int, ...], blocks: list[Any]) -> TableAnswer:
        import numpy as np

        def parts(b: int, i: int, shown: Any = label_of) -> list[str]:
            static_combo = blocks[b][0]
            idx = np.unravel_index(i, shape) if shape else ()
            return [shown(e) for e in static_combo] + [shown(pts[j]) for (_, pts), j in zip(numeric_axes, idx)]

        def label(b: int, i: int) -> str:
            return ", ".join(parts(b, i))

        reasons = [" ".join(c.span.text.split()) for c in q.constraints] + ["undefined"]
        sign = -1.0 if q.objective == "maximize" else 1.0
        # the configurations that meet the constraints, best first (ties: in the order of the grid), in
        # numpy: a million tuples sorted in Python took longer than evaluating them
        objective = np.concatenate([sign * np.asarray(obj, dtype=float) for _, obj, _, _, _ in blocks]) if blocks else np.zeros(0)
        block = np.concatenate([np.full(n, b) for b, (_, _, _, n, _) in enumerate(blocks)]) if blocks else np.zeros(0, int)
        index = np.concatenate([np.arange(n) for _, _, _, n, _ in blocks]) if blocks else np.zeros(0, int)
        meets = np.nonzero(np.concatenate([failed < 0 for _, _, failed, _, _ in blocks]))[0] if blocks else np.zeros(0, int)
        best = meets[np.lexsort((index[meets], block[meets], objective[meets]))[:10]]
        ranked = [(float(objective[k]), int(block[k]), int(index[k])) for k in best]
        rejected = [(b, int(i)) for b, (_, _, failed, _, _) in enumerate(blocks) for i in np.nonzero(failed >= 0)[0][:5]][:5]
        plot_axes = q.pareto
        node_id = ir.node_id(*q.target.field)
        table = TableAnswer(q, "search", f"{q.objective} {q.target.label}", [], [])
        table.evaluated = sum(blk[3] for blk in blocks)
        table.columns = [(q.target.label, *self._dim_of(q.target)), ("eliminated by", "text", None)]
        # a plotted axis that is the objective itself is its column, not a copy of it
        own = [k for k, p in enumerate(plot_axes) if p.label != q.target.label]
        table.columns += [(plot_axes[k].label, *self._dim_of(plot_axes[k])) for k in own]
        table.plot_columns = tuple(2 + own.index(k) if k in own else 0 for k in range(len(plot_axes)))

        def axis_value(b: int, i: int) -> list[float]:
            return [float(e[i]) for e in blocks[b][4]]

        def extra(b: int, i: int) -> list[float]:
            return [axis_value(b, i)[k] for k in own]

        front: list[tuple[int, int]] = []
        if len(plot_axes) == 2 and len(meets):
            points = [(axis_value(b, i)[0], axis_value(b, i)[1], b, i) for b, i in zip(block[meets].tolist(), index[meets].tolist())]
            front = [(points[k][2], points[k][3]) for k in pareto_front([(x, y) for x, y, _, _ in points])]
        shown = [(b, i) for _, b, i in ranked]
        shown += [bi for bi in front if bi not in shown]  # the whole Pareto front is listed
        table.rows = [(label(b, i), [float(blocks[b][1][i]), "", *extra(b, i)]) for b, i in shown]
        table.rows += [(label(b, i), [float(blocks[b][1][i]), reasons[int(blocks[b][2][i])], *extra(b, i)]) for b, i in rejected]
        table.best = 0 if ranked else None
        table.pareto = [shown.index(bi) for bi in front]  # indices into rows
        axis_names = [t[1] for t, _ in static_axes] + [ir.field_ref(n)[1] for n, _ in numeric_axes]
        table.axes = axis_names
        table.feasible = len(meets)
        table.objective_node = node_id if node_id in self.base.values else ""
        statics = self.base.elaborated.statics
        table.declared = [(static_label(statics.get(ir.node_id(*t))), "") for t, _ in static_axes]
        table.declared += [("", n) if n in self.base.values else ("", "") for n, _ in numeric_axes]
        if ranked:
            table.best_setting = ", ".join(f"{n} = {v}" for n, v in zip(axis_names, parts(*shown[0], shown=setting_label)))
        table.notes.append(f"{table.evaluated:,} configurations over {', '.join(axis_names)}; {len(meets):,} meet the constraints")
        if front:
            table.notes.append("Pareto front (" + ", ".join(p.label for p in plot_axes) + "): "
                               + "; ".join(label(b, i) for b, i in front[:12]))
        return table

    def _dim_of(self, column: ir.Column) -> tuple[ir.Type, str | None]:
        node = self.nodes.get(ir.node_id(*column.field))
        return (node.dim, node.unit) if node is not None else (DIMENSIONLESS, None)


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats in both coordinates (both minimised)."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))
    front, best = [], math.inf
    for i in order:
        if points[i][1] < best:
            front.append(i)
            best = points[i][1]
    return front

