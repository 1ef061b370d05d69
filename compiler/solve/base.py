"""The solver's common ground: naming a field, building a variant of the plan, elaborating a
question's expressions against it, and reading a question's domains.

Contract
- `SolverBase(program, lowered, sink)` holds the plan as compiled (`base`) and the diagnostics
  sink; its questions arrive typed, their paths already resolved to fields by elaboration
  (`semantics/questions.py`); each question kind is a mixin over it (`ask.py`, `tables.py`, `search.py`,
  `sensitivity.py`) and `Solver` in `__init__` is their union.
- A question's `given`, a scenario's assignments and a sweep's points are *overrides*: they
  replace a field's definition, as an assignment in the plan would. `variant(overrides, span)`
  is the plan so changed, evaluated and memoised: numeric overrides of quantities the plan has
  replace those nodes without re-elaborating (`_substituted`); overrides of enum or instance
  fields (weights = fp8) re-elaborate the plan (`elaborate_variant`). `variant(overrides, span,
  reads, unknown)` is the same plan evaluated only where a question reads it (an ask): its
  expressions, its unknown and the plan's requirements (`elaborate_reads`, `lower(only=)`). A
  variant that is not a valid plan (a requirement fails, or what is evaluated has no value) is a
  diagnostic at the question (E0503), or at the question's own value when the error lies there
  (E0409 on `2.5`); a part of the plan an ask does not read is not evaluated, so it cannot fail
  the ask.
- `range_of`/`points` check a domain (finite ends, low end first, a log step above zero, whole
  numbers for a field declared `integer`) before a point is built; `sized` checks the product
  of the domains against `MAX_POINTS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .. import diagnostics as dx
from ..exact import EvalError, evaluate, is_whole
from ..lower import Lowered, lower
from ..semantics import ir
from ..semantics.elaborate import elaborate_expr, elaborate_reads, elaborate_variant
from ..semantics.resolve import Program
from ..semantics.values import static_key
from ..syntax import ast
from .graph import within
from .literals import (
    expr_key,
    finite_literal,
    is_neg_number,
    number_like,
    range_points,
    range_size,
    short_number,
)

MAX_POINTS = 1_000_000
"""The most variants one question may evaluate, whatever its kind (search, sweep, compare,
scenario), checked from the domains' sizes before a single point is built."""


class SolverBase:
    def __init__(self, program: Program, lowered: Lowered, sink: dx.Sink) -> None:
        self.program = program
        self.base = lowered
        self.sink = sink
        self.nodes = lowered.elaborated.nodes
        self._variants: dict[tuple[Any, ...], Lowered | None] = {}
        self._partial_variants: dict[tuple[Any, ...], Lowered | None] = {}  # evaluated only where a question reads
        self.progress: Callable[[str], None] = lambda step: None  # told of a step that can take over a second

    def variant(self, overrides: dict[ir.FieldRef, ast.Expr], span: Any, reads: tuple[ast.Expr, ...] | None = None,
                unknown: str | None = None) -> Lowered | None:
        """The plan with some definitions replaced, evaluated (memoised: a comparison, a search
        and an ask often build the same variant). An override that sets a field to the value it
        already has is dropped; numeric values for quantities the plan has replace those nodes
        without re-elaborating; anything else (an enum member, an instance, a field the plan does
        not use) re-elaborates the plan. Either way only what changed is evaluated again, and
        the plan's requirements are checked.

        `reads`: the question needs only these expressions of the variant (and `unknown`): only
        what they and the plan's requirements read is evaluated (an ask's `given` at batch 1 has
        no fleet to size), and the variant has no checks or summary. A full variant of the same
        overrides, when one was built, serves it."""
        overrides = {t: e for t, e in overrides.items() if not self._unchanged(t, e)}
        key = tuple(sorted((t, expr_key(e)) for t, e in overrides.items()))
        if not overrides:
            return self.base
        if reads is not None and key not in self._variants:
            partial = (key, tuple(expr_key(e) for e in reads), unknown)
            if partial not in self._partial_variants:
                self._partial_variants[partial] = self._build_variant(overrides, span, reads, unknown)
            return self._partial_variants[partial]
        if key not in self._variants:
            self._variants[key] = self._build_variant(overrides, span)
        return self._variants[key]

    def _build_variant(self, overrides: dict[ir.FieldRef, ast.Expr], span: Any,
                       reads: tuple[ast.Expr, ...] | None = None, unknown: str | None = None) -> Lowered | None:
        sink = dx.Sink()
        elaborated = self._substituted(overrides)
        if elaborated is None and reads is not None:  # lean, on what the question reads
            elaborated = elaborate_reads(self.program, sink, overrides, reads, base=self.base.elaborated)
            if elaborated is None or sink.has_errors or (unknown is not None and unknown not in elaborated.nodes):
                elaborated, sink = None, dx.Sink()  # in full, where the question reports its own problem
        if elaborated is None:
            elaborated = elaborate_variant(self.program, sink, overrides, base=self.base.elaborated)
        only = None if reads is None or sink.has_errors else self._read_by(elaborated, reads, unknown)
        lowered = lower(elaborated, sink, reuse=self.base, remedies=False, only=only) if not sink.has_errors else None
        if lowered is None or sink.has_errors:
            first = next(d for d in sink.items if d.is_error)
            if first.primary is not None and within(first.primary.span, span):  # already at the question's own value (E0409 on `2.5`)
                self.sink.add(first)
                return None
            self.sink.add(dx.QUESTION_INVALID.at(span, "this variant is not a valid plan", message=first.message,
                                                 help="check the values this question sets"))
            return None
        return lowered

    def _read_by(self, elaborated: ir.Elaborated, reads: tuple[ast.Expr, ...], unknown: str | None) -> set[str]:
        """The nodes a question's expressions, the unknown and the plan's requirements and
        advisories read of a variant (an expression that does not elaborate reads nothing here:
        the question reports it when it elaborates it again)."""
        exprs = [r.expr for r in (*elaborated.requirements, *elaborated.advisories)]
        for e in reads:
            value = elaborate_expr(self.program, elaborated, e, dx.Sink())
            if isinstance(value, (ir.Lit, ir.Ref, ir.Op)):
                exprs.append(value)
        return ir.upstream_of(elaborated, [r for e in exprs for r in ir.refs(e)] + ([unknown] if unknown else []))

    def _quiet_expr(self, e: ast.Expr) -> ir.Expr | Any:
        """A question's expression elaborated against the plan (a quantity or a static value such
        as an enum member), or None; reports nothing."""
        return self._elaborated(e, self.base, dx.Sink())

    def _elaborated(self, e: ast.Expr, lowered: Lowered, sink: dx.Sink) -> Any:
        return elaborate_expr(self.program, lowered.elaborated, e, sink)

    def _unchanged(self, target: ir.FieldRef, e: ast.Expr) -> bool:
        node_id = ir.node_id(*target)
        el = self.base.elaborated
        if node_id in el.statics:
            return static_key(self._quiet_expr(e)) == el.statics[node_id]
        node = self.nodes.get(node_id)
        if node is None or not node.is_input:
            return False
        value = self._quiet_expr(e)
        return isinstance(value, ir.Lit) and value.dim == node.dim and value.value == self.base.values.get(node_id)

    def _substituted(self, overrides: dict[ir.FieldRef, ast.Expr]) -> ir.Elaborated | None:
        """The plan's graph with overridden quantities replaced by their literal values, when
        every override is a number for a quantity the plan already has."""
        el = self.base.elaborated
        literals: dict[str, tuple[ir.Lit, Any]] = {}
        for (inst, name), e in overrides.items():
            node_id = ir.node_id(inst, name)
            node = el.nodes.get(node_id)
            value = self._quiet_expr(e) if node is not None else None
            if node is None or not isinstance(value, ir.Lit) or value.dim != node.dim:
                return None
            literals[node_id] = (value, e.span)
        return ir.with_literals(el, literals)

    def expr_in(self, e: ast.Expr, lowered: Lowered) -> ir.Expr | None:
        """Elaborate a question's expression against a (variant) plan."""
        value = self._elaborated(e, lowered, self.sink)
        if isinstance(value, (ir.Lit, ir.Ref, ir.Op)):
            return value
        if value is not None:
            self.sink.add(dx.WRONG_TYPE.at(e.span, "not a quantity", expected="a quantity or a comparison",
                                           found=type(value).__name__, help="name a quantity of the plan"))
        return None

    def points(self, domain: ir.Axis, lowered: Lowered) -> list[ast.Expr] | None:
        """The domain's values; of a field declared `integer`, whole numbers only."""
        bounds = self.range_of(domain, lowered)
        if bounds is None:
            return None
        if isinstance(bounds, list):
            return bounds
        lo, hi, step, dim = bounds
        values = range_points(lo, hi, step, domain.whole)
        return [number_like(domain.low, v, dim) for v in values]  # type: ignore[arg-type]

    def range_of(self, domain: ir.Axis, lowered: Lowered) -> list[ast.Expr] | tuple[float, float, str, Any] | None:
        """A domain's list of values, or a range's checked ends (low, high, step, dimension):
        both ends evaluate to finite numbers, the low end first, a log-stepped range starting
        above zero; of a field declared `integer`, every listed value and both ends whole numbers
        (E0409 at the one that is not). Nothing is built here, so the size
        can be checked first (`domain_size`)."""
        if domain.values is not None:
            for v in domain.values:
                if (isinstance(v, ast.Number) or is_neg_number(v)) and not finite_literal(v):
                    self.sink.add(dx.BAD_RANGE.at(v.span, "beyond ±1.8e308", message="a value of the domain is not a finite number",
                                                  help="write values within about 1e±308"))
                    return None
                if domain.whole and not self._whole_value(v, lowered, ir.node_id(*domain.field)):
                    return None
            return list(domain.values)
        if domain.whole and not all(self._whole_value(e, lowered, ir.node_id(*domain.field))
                                    for e in (domain.low, domain.high) if e is not None):
            return None
        assert domain.low is not None and domain.high is not None
        lo_v, hi_v = (self.expr_in(e, lowered) for e in (domain.low, domain.high))
        if lo_v is None or hi_v is None:
            return None
        step = domain.step or "linear"
        ends = []
        for end, name in ((lo_v, "low"), (hi_v, "high")):
            try:
                value = float(evaluate(end, lowered.values))
            except EvalError as exc:
                self.sink.add(dx.BAD_RANGE.at(exc.span, exc.detail, message=f"the range's {name} end has no value ({exc.kind})",
                                              help="write both ends as numbers within about 1e±308"))
                return None
            except (OverflowError, TypeError, ValueError):
                value = math.inf
            if not math.isfinite(value):
                self.sink.add(dx.BAD_RANGE.at(end.span, "beyond ±1.8e308", message=f"the range's {name} end is not a finite number",
                                              help="write both ends as numbers within about 1e±308"))
                return None
            ends.append(value)
        lo, hi = ends
        if lo > hi:
            self.sink.add(dx.BAD_RANGE.at(domain.span, "empty range", message="the range is empty: its low end is above its high end",
                                          help="write the low end first: `1 .. 512`"))
            return None
        if step != "linear" and lo <= 0:
            self.sink.add(dx.BAD_RANGE.at(lo_v.span, "not above zero", message=f"a `{step}` range must start above zero",
                                          help="start the range at a positive value, e.g. `1 .. 512 log2`, or step it `linear`"))
            return None
        return lo, hi, step, lo_v.dim

    def _whole_value(self, e: ast.Expr, lowered: Lowered, field: str) -> bool:
        """False, with E0409 at the value, if a value given to a field declared `integer` is not
        a whole number (a value that does not evaluate is reported where it is used)."""
        value = self._elaborated(e, lowered, dx.Sink())
        try:
            number = evaluate(value, lowered.values) if isinstance(value, (ir.Lit, ir.Ref, ir.Op)) else None
        except EvalError:
            return True
        if number is None or isinstance(number, bool) or is_whole(number):
            return True
        low = math.floor(number)
        self.sink.add(dx.NOT_WHOLE.at(e.span, f"this is {short_number(number)}", name=field, what="",
                                      value=short_number(number), help=f"use whole numbers, such as {low} or {low + 1}"))
        return False

    def sized(self, q: ir.Question, domains: tuple[ir.Axis, ...]) -> list[list[ast.Expr] | tuple[float, float, str, Any]] | None:
        """Every domain's ends, checked, and their product against the shared cap, before any
        point exists."""
        bounds = []
        for d in domains:
            b = self.range_of(d, self.base)
            if b is None:
                return None
            bounds.append(b)
        total = math.prod(len(b) if isinstance(b, list) else range_size(*b[:3]) for b in bounds)
        if total > MAX_POINTS:
            self.sink.add(dx.QUESTION_TOO_LARGE.at(q.span, "too many points", count=f"{total:,}", limit=f"{MAX_POINTS:,}",
                                                   help="narrow the domains or use coarser steps (`log2`, `log10`)"))
            return None
        return bounds

