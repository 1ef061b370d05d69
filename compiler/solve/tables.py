"""Scenarios, comparisons and sweeps: the plan's summary and checks (or the plotted quantities)
over its variants, one row per point.

Contract: a table of up to `EXACT_POINTS` points is evaluated exactly, point by point (a table
a person reads); a larger one with numeric axes is evaluated vectorised in float64, each
combination of its static axes (an enum member, an instance) one variant, and lists at most
`MAX_TABLE_ROWS` evenly spaced rows (every point is evaluated; the notes say how many). A
scenario's notes say which checks change and what now decides the headline.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from .. import diagnostics as dx
from ..exact import EvalError, evaluate
from ..lower import Lowered
from ..semantics import ir
from ..syntax import ast
from .answers import TableAnswer
from .base import SolverBase
from .choices import binding_notes, headline_rows, valid_points
from .literals import is_neg_number, label_of, literal_value, plain

EXACT_POINTS = 64
"""A sweep or comparison of up to this many points is evaluated exactly, point by point (a table
a person reads); a larger one with numeric axes is evaluated vectorised, as a search is."""
MAX_TABLE_ROWS = 1_000
"""The most rows a sweep's table lists; a larger sweep lists evenly spaced points (every point
is evaluated, and the notes say how many)."""


class Tables(SolverBase):
    def scenario(self, q: ir.Scenario) -> TableAnswer | None:
        variant = self.variant({a.field: a.value for a in q.settings}, q.span)
        if variant is None:
            return None
        base, new = headline_rows(self.base), headline_rows(variant)
        columns = [(label, dim, unit) for label, dim, unit, _ in base]
        table = TableAnswer(q, "scenario", q.title, columns,
                            [("baseline", [v for *_, v in base]), (q.title, [v for *_, v in new])])
        for (label, dim, _, before), (*_, after) in zip(base, new):
            if dim == ir.BOOL and before != after:
                table.notes.append(f"{label}: {'now fails' if before else 'now passes'}")
        table.notes.extend(binding_notes(self.base, variant))
        table.evaluated = 1
        return table

    def table(self, q: ir.Table) -> TableAnswer | None:
        if self.sized(q, q.axes) is None:
            return None
        targets, axes = [], []
        for d in q.axes:
            pts = self.points(d, self.base)
            if pts is None:
                return None
            targets.append(d.field)
            axes.append(pts)
        columns_exprs = [c.expr for c in q.columns]  # none: the plan's summary and checks
        title = " × ".join(f"{t[1]}" for t in targets)
        table = TableAnswer(q, q.keyword, title, [], [])
        total = math.prod(len(a) for a in axes)
        numeric = [ir.node_id(*t) in self.nodes and all(isinstance(p, ast.Number) or is_neg_number(p) for p in pts)
                   for t, pts in zip(targets, axes)]
        if total > EXACT_POINTS and any(numeric):
            return self._vector_table(q, table, targets, axes, numeric, columns_exprs)
        for combo in itertools.product(*axes):
            overrides = dict(zip(targets, combo))
            variant = self.variant(overrides, q.span)
            label = ", ".join(label_of(e) for e in combo)
            if variant is None:
                table.rows.append((label, [None] * max(len(table.columns), 1)))
                continue
            cols = self._evaluate_columns(columns_exprs, variant)
            if not table.columns:
                table.columns = [(c[0], c[1], c[2]) for c in cols]
            table.rows.append((label, [c[3] for c in cols]))
            table.evaluated += 1
        return table

    def _vector_table(self, q: ir.Table, table: TableAnswer, targets: list[ir.FieldRef],
                      axes: list[list[ast.Expr]], numeric: list[bool], columns_exprs: list[ast.Expr]) -> TableAnswer:
        """A large sweep: each combination of its static axes (an enum member, an instance) is a
        variant of the plan; over its numeric axes every point is evaluated in one vectorised
        pass, as a search is (float64; a point that breaks a requirement of the kinds is a row
        without values). At most MAX_TABLE_ROWS evenly spaced rows are listed."""
        import numpy as np

        from ..vector import evaluate as vec_eval
        from ..vector import evaluate_many, needed

        static = [k for k, is_num in enumerate(numeric) if not is_num]
        nums = [k for k, is_num in enumerate(numeric) if is_num]
        num_shape = tuple(len(axes[k]) for k in nums)
        n = math.prod(num_shape)
        blocks: dict[tuple[int, ...], tuple[list[Any], Any] | None] = {}
        for combo in itertools.product(*(range(len(axes[k])) for k in static)):
            variant = self.variant({targets[k]: axes[k][i] for k, i in zip(static, combo)}, q.span)
            if variant is None:
                blocks[combo] = None
                continue
            cols = self._evaluate_columns(columns_exprs, variant)
            if not table.columns:
                table.columns = [(c[0], c[1], c[2]) for c in cols]
            exprs = self._column_irs(columns_exprs, variant)
            grids = np.meshgrid(*[np.array([float(literal_value(p)) for p in axes[k]]) for k in nums], indexing="ij")
            fixed = {ir.node_id(*targets[k]): g.ravel() for k, g in zip(nums, grids)}
            live = [e for e in exprs if e is not None]
            read = live + [r.expr for r in variant.elaborated.requirements]
            vals = evaluate_many(variant.elaborated, variant.values, fixed, needed(variant.elaborated, read) | set(fixed),
                                 keep={r for e in read for r in ir.refs(e)} | set(fixed))
            valid = valid_points(variant, vals, n)
            if not valid.all() and not self.sink.has_errors:  # as an exactly evaluated point would be
                at = int(np.argmin(valid))
                point = ", ".join(label_of(axes[k][i]) for k, i in zip(nums, np.unravel_index(at, num_shape)))
                self.sink.add(dx.QUESTION_INVALID.at(q.span, "this variant is not a valid plan",
                                                     message=f"a requirement of the plan fails at {point}",
                                                     help="check the values this question sets"))
            columns = [None if e is None else np.broadcast_to(np.asarray(vec_eval(e, vals)), (n,)) for e in exprs]
            blocks[combo] = (columns, valid)
            table.evaluated += int(valid.sum())
        total = math.prod(len(a) for a in axes)
        shown = sorted({round(k * (total - 1) / (MAX_TABLE_ROWS - 1)) for k in range(MAX_TABLE_ROWS)}) \
            if total > MAX_TABLE_ROWS else range(total)
        shape = tuple(len(a) for a in axes)
        width = max(len(table.columns), 1)
        for flat in shown:
            idx = np.unravel_index(flat, shape)
            label = ", ".join(label_of(axes[k][i]) for k, i in enumerate(idx))
            block = blocks.get(tuple(int(idx[k]) for k in static))
            at = int(np.ravel_multi_index(tuple(int(idx[k]) for k in nums), num_shape)) if nums else 0
            if block is None or not block[1][at]:
                table.rows.append((label, [None] * width))
                continue
            table.rows.append((label, [None if c is None else plain(c[at]) for c in block[0]]))
        table.notes.append(f"{total:,} points, evaluated vectorised in float64"
                           + (f"; {len(shown):,} evenly spaced points are listed" if total > MAX_TABLE_ROWS else ""))
        return table

    def _column_irs(self, exprs: list[ast.Expr], lowered: Lowered) -> list[ir.Expr | None]:
        """The IR of a table's columns in a variant: its summary and checks, or the plotted paths."""
        if not exprs:
            el = lowered.elaborated
            return [*el.summary, *(c.expr for c in el.checks)]
        out: list[ir.Expr | None] = []
        for e in exprs:
            value = self.expr_in(e, lowered)
            if value is not None:
                out.append(value)
        return out

    def _evaluate_columns(self, exprs: list[ast.Expr], lowered: Lowered) -> list[tuple[str, ir.Type, str | None, Any]]:
        if not exprs:
            return headline_rows(lowered)
        out = []
        for e in exprs:
            value = self.expr_in(e, lowered)
            if value is None:
                continue
            unit = lowered.elaborated.nodes[value.node].unit if isinstance(value, ir.Ref) else None
            try:
                v = evaluate(value, lowered.values)
            except EvalError:
                v = None
            out.append((" ".join(e.span.text.split()), value.dim, unit, v))
        return out

