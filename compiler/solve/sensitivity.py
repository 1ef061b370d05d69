"""The summary's sensitivities, its bindings and the levers priced.

Contract
- `sensitivities()`: elasticities d ln y / d ln x of each summary item with respect to every
  input it depends on (not the definitions: enum attributes, `spec` fields, constant derives),
  with ceilings and floors relaxed, only where the plan stays valid a step either way.
- `headline_choices()`: the `max`/`min` choices behind the first summary item.
- `levers()`: every lever that applies (the plan's, then its kinds'), priced as a variant on the
  summary and the checks; one that sets what another already did is priced once; one whose
  variant is not a valid plan says why instead of a price, and is not an error.
"""

from __future__ import annotations

import math
from typing import Any

from .. import diagnostics as dx
from ..lower import Lowered, lower
from ..semantics import ir
from ..semantics.elaborate import elaborate_variant
from ..semantics.units import Dim
from ..syntax import ast
from .answers import Choice, LeverAnswer, Sensitivity
from .base import SolverBase
from .choices import choices, headline_node, headline_rows, valid_points
from .graph import inputs_of
from .literals import expr_key


class Sensitivities(SolverBase):
    def sensitivities(self) -> list[Sensitivity]:
        """Elasticities ∂ln y/∂ln x of each summary item with respect to every input it depends on,
        on the plan with its ceilings and floors relaxed (a count moves in whole steps, but how hard
        it is pushed is what a reader ranks assumptions by), at the points where the plan stays
        valid a step either way: an input that breaks one of the plan's requirements when nudged
        by 1 % (tensor parallelism that no longer divides the heads, a layer count that pipeline
        stages no longer divide) is a discrete design choice, and an elasticity of it would be an
        artefact. Definitions are not assumptions and get none either:
        the attributes of an enumeration's members (`dtype.fp8.bytes = 1 B`), the fields a kind
        declares `spec` (a model's hidden size, an accelerator's datasheet bandwidth) and a kind's
        constant `derive`s (`kv_shards = 1`)."""
        el = self.base.elaborated
        targets = [e for e in el.summary if isinstance(e, ir.Ref) and isinstance(e.dim, Dim)]
        if not targets:
            return []
        import numpy as np

        from ..vector import evaluate_many

        inputs = sorted({n for t in targets for n in inputs_of(el, t.node)
                         if isinstance(el.nodes[n].dim, Dim) and float(self.base.values[n]) != 0
                         and not el.nodes[n].is_definition})
        if not inputs:
            return []
        h = 1e-2
        points = 2 * len(inputs) + 1  # each input 1 % up, 1 % down; the last point is the plan
        fixed = {}
        for j, n in enumerate(inputs):
            col = np.full(points, float(self.base.values[n]))
            col[2 * j] *= 1 + h
            col[2 * j + 1] *= 1 - h
            fixed[n] = col
        # ceilings and floors relaxed: 17 devices that would be 16.3 without the ceiling still
        # grow with the traffic, though a 1 % change may not reach the next whole device
        vals = evaluate_many(el, self.base.values, fixed, relaxed=True)
        valid = valid_points(self.base, vals, points)
        out = []
        for t in targets:
            y = np.broadcast_to(np.asarray(vals[t.node], dtype=float), (points,))
            base_y = float(y[-1])
            entries = []
            for j, n in enumerate(inputs):
                if base_y == 0 or not (math.isfinite(y[2 * j]) and math.isfinite(y[2 * j + 1])):
                    continue
                if not (valid[2 * j] and valid[2 * j + 1]):
                    continue
                up = math.log(abs(y[2 * j]) + 1e-300) - math.log(abs(base_y))
                down = math.log(abs(base_y)) - math.log(abs(y[2 * j + 1]) + 1e-300)
                # a step (a ceiling, a threshold) at this point: one side moves, the other not or
                # the other way (then they differ by more than 2/3 of the larger), so no
                # meaningful elasticity. A whole-number search answer (the running batch, ~100
                # sequences) moves by whole steps, one on one side and two on the other for the
                # same 1 % nudge: sides within a factor 3 of each other are its quantisation, and
                # their mean is the elasticity
                if abs(up - down) > 2 / 3 * max(abs(up), abs(down)) + 1e-9:
                    continue
                e = (up + down) / (math.log(1 + h) - math.log(1 - h))
                if abs(e) > 1e-6:
                    entries.append((n, e))
            # largest first, as shown (3 digits): equal elasticities (DAU, peak factor, requests
            # per user all scale the traffic) keep the inputs' order, not float noise's
            entries.sort(key=lambda ne: -float(f"{abs(ne[1]):.3g}"))
            out.append(Sensitivity(t.node, t.dim, entries))
        return out

    def headline_choices(self) -> list[Choice]:
        """The `max`/`min` choices behind the first summary item: what binds the headline."""
        headline = headline_node(self.base.elaborated)
        return [c for c in choices(self.base, headline) if c.op != "if"] if headline else []

    def levers(self, prices: list[tuple[list[Any] | None, str]] | None = None) -> list[LeverAnswer]:
        """`prices`: what `lever_prices` gave, when it ran elsewhere (a second process)."""
        if not self.base.elaborated.summary:
            return []
        base = headline_rows(self.base)
        columns = [(label, dim, unit) for label, dim, unit, _ in base]
        distinct = self._distinct_levers()
        prices = self.lever_prices() if prices is None else prices
        assert len(prices) == len(distinct)
        return [LeverAnswer(offered, columns, [v for *_, v in base], values, reason)
                for (offered, _, _), (values, reason) in zip(distinct, prices)]

    def lever_prices(self) -> list[tuple[list[Any] | None, str]]:
        """Each distinct lever's variant on the summary and the checks, or None and why it is not a
        valid plan: the part of `levers` that is work, in plain values that pickle."""
        if not self.base.elaborated.summary:
            return []
        out: list[tuple[list[Any] | None, str]] = []
        for _, overrides, key in self._distinct_levers():
            variant, reason = self._quiet_variant(overrides, key)
            out.append(([v for *_, v in headline_rows(variant)] if variant is not None else None, reason))
        return out

    def _distinct_levers(self) -> list[tuple[Any, dict[ir.FieldRef, ast.Expr], tuple[Any, ...]]]:
        """The levers that apply (the plan's, then its kinds'), each with the overrides that change
        something and their key; one that sets what another already did is left out."""
        seen: set[tuple[Any, ...]] = set()
        out = []
        mine = [o for o in self.base.levers if not o.lever.instance]
        for offered in mine + [o for o in self.base.levers if o.lever.instance]:
            overrides = {t: e for t, e in offered.lever.targets if not self._unchanged(t, e)}
            key = tuple(sorted((t, expr_key(e)) for t, e in overrides.items()))
            if not overrides or key in seen:
                continue
            seen.add(key)
            out.append((offered, overrides, key))
        return out

    def _quiet_variant(self, overrides: dict[ir.FieldRef, ast.Expr], key: tuple[Any, ...]) -> tuple[Lowered | None, str]:
        """`variant` for a lever: a variant that is not a valid plan is a reason, not a diagnostic."""
        if self._variants.get(key) is not None:
            return self._variants[key], ""
        sink = dx.Sink()
        # only the summary and the checks are read: a re-elaboration builds just what they need
        base = self.base.elaborated
        elaborated = self._substituted(overrides) or elaborate_variant(self.program, sink, overrides, lean=True, base=base)
        lowered = lower(elaborated, sink, reuse=self.base, remedies=False) if not sink.has_errors else None
        if lowered is None or sink.has_errors:  # why, with the first note's numbers (what fails, both sides)
            first = next(d for d in sink.items if d.is_error)
            return None, first.message + (f": {first.notes[0]}" if first.notes else "")
        return lowered, ""

