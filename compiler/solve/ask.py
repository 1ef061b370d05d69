"""`ask` and `solve ... for`: one unknown, optimised under constraints or solved from an equation.

Contract
- `ask ... maximize x subject to c1, c2 given ...`: each constraint is solved on its own for the
  largest (or smallest) feasible x by bracketed bisection on the exact evaluator (`probe.py`) —
  integers for counted quantities, so the answer respects every `ceil`, block size and `max` in
  the physics — after checking monotonicity on the bracket; the smallest limit binds and the
  others are reported beside it. The closed form is then derived with sympy on the active piece
  (`algebra.isolate`: ceilings relaxed, each `max`/`min`/`if` replaced by the branch active at
  the answer), isolated for x, shown step by step, and checked against the numeric answer.
- Infeasible (even the smallest x violates a constraint) and under-determined (the constraints do
  not involve x, or nothing bounds it) are different diagnostics; an infeasible question makes
  `plan check` exit 1 like a failed check.
- `solve <quantity> for <instance>`: a derived quantity with the choices that decide it, or an
  input with the range over which every check of the plan holds (its two ends solved as asks).
"""

from __future__ import annotations

from typing import Any

from .. import diagnostics as dx
from ..lower import Lowered
from ..semantics import ir
from ..semantics.units import DIMENSIONLESS, Dim
from .answers import AskAnswer, Limit, SolveAnswer
from .base import SolverBase
from .choices import choices
from .graph import depends, inputs_of, solved_over_integers, span_of
from .literals import candidates
from .probe import LIMIT_TOLERANCE, ROOT_TOLERANCE, NonMonotone, Probe


class Asks(SolverBase):
    def ask(self, q: ir.Ask) -> AskAnswer | None:
        reads = (*(() if q.quantity is None else (q.quantity.expr,)), *q.constraints, *(q.equation or ()))
        lowered = self.variant({g.field: g.value for g in q.given}, q.span, reads, ir.node_id(*q.unknown))
        if lowered is None:
            return None
        unknown = ir.node_id(*q.unknown)
        objective = self.expr_in(q.quantity.expr, lowered) if q.quantity is not None else None
        if q.quantity is not None and objective is None:
            return None
        node = lowered.elaborated.nodes.get(unknown)
        if node is None or not isinstance(node.dim, Dim):
            self.sink.add(dx.UNDERDETERMINED.at(
                q.unknown_span, "not a quantity of this plan", name=unknown,
                help="the unknown must be a numeric field the plan uses, like `chat.batch`"))
            return None
        if q.equation is not None:
            return self.solve_equation(q, lowered, unknown, node)
        constraints = [c for c in (self.expr_in(c, lowered) for c in q.constraints) if c is not None]
        if len(constraints) != len(q.constraints):
            return None
        return self.optimize(q, lowered, unknown, node, constraints, objective)

    def optimize(self, q: ir.Ask, lowered: Lowered, unknown: str, node: ir.Node,
                 constraints: list[ir.Expr], objective: ir.Expr | None) -> AskAnswer | None:
        integer = solved_over_integers(node, lowered.values[unknown])
        maximize = q.objective == "maximize"
        # `a == b` bounds from both sides: as `a <= b` and `a >= b`, each monotone where the other is not
        constraints = [half for c in constraints for half in (
            (ir.Op("<=", c.args, c.dim, c.span), ir.Op(">=", c.args, c.dim, c.span))
            if isinstance(c, ir.Op) and c.op == "==" else (c,))]
        direction_up = maximize if objective is None else None
        ans = AskAnswer(q, unknown, node.dim, integer, tolerance=None if integer else LIMIT_TOLERANCE)  # type: ignore[arg-type]
        probe = Probe(lowered, unknown, integer)
        for c in constraints:
            if not depends(lowered, c, unknown):
                self.sink.add(dx.UNDERDETERMINED.at(
                    span_of(c), f"does not involve `{unknown}`", name=unknown,
                    help="each constraint must depend on the unknown; check the quantity you named"))
                return None
        lo = probe.defined_from(constraints, probe.lowest())
        try:
            start, lows = self._first_feasible(probe, constraints, lo)
            if isinstance(start, ir.Op):  # the constraint that no value of the unknown satisfies
                return self._infeasible(ans, probe, start, lo if not lows else lows[-1].beyond)
            ups = [] if direction_up is False else [probe.limit_up(c, start) for c in constraints]
            lowest = min((u.value for u in ups if u.value is not None), default=None)
            # the plan's requirements bind only if they fail before the constraints' own limit
            if direction_up is not False and (lowest is None or not probe.allowed(lowest)):
                domain = probe.domain_limit(start)
                if domain is not None:
                    ups.append(domain)
        except NonMonotone as exc:
            self.sink.add(dx.QUESTION_INVALID.at(
                q.span, "no single boundary", message=f"`{exc}` is not monotone in `{unknown}`: it holds, fails and "
                "holds again as the unknown grows, so there is no single largest value",
                help="split the range with a `given`, or constrain a quantity that grows with the unknown"))
            return None
        ans.limits = ups
        bounded = [lim for lim in ups if lim.value is not None]
        if objective is None and maximize and not bounded:
            self.sink.add(dx.UNDERDETERMINED.at(
                q.span, "nothing bounds it", name=unknown,
                help="add a constraint that grows with the unknown (memory, latency)"))
            return None
        if objective is None and not maximize:
            ans.value = start
            ans.binding = max(lows, key=lambda lim: lim.value) if lows else None  # type: ignore[arg-type, return-value]
            held = {id(lim.constraint) for lim in lows}
            ans.limits = lows + [Limit(c, None, probe.sides(c, start)) for c in constraints if id(c) not in held]
            ans.lower_limits = True
        elif bounded:
            ans.binding = min(bounded, key=lambda lim: lim.value)  # type: ignore[arg-type, return-value]
            ans.value = ans.binding.value
        ans.iterations, ans.monotone_checked = probe.iterations, probe.samples
        ans.bracket = (float(lo), float(probe.high_seen))
        if objective is not None:
            self._best_objective(ans, probe, objective, start, maximize)
        if ans.binding is not None and ans.value is not None:
            self._closed_form(ans, lowered, ans.binding.constraint, unknown)
        return ans

    def _first_feasible(self, probe: Probe, constraints: list[ir.Expr], lo: Any) -> tuple[Any, list[Limit]]:
        """The smallest value ≥ lo where every constraint holds, and for each constraint that fails
        at lo the value from which it holds (`Limit.value`; the binding one is the largest). A
        constraint that never starts to hold, or one that stops holding before another starts,
        is returned in place of the value: no value satisfies them all."""
        failing = [c for c in constraints if not probe.holds(c, lo)]
        lows: list[Limit] = []
        for c in failing:
            fails = probe.limit_up(ir.Op("not", (c,), ir.BOOL, c.span), lo)  # largest value where c fails
            if fails.value is None or fails.beyond is None:
                return c, lows
            lows.append(Limit(c, fails.beyond, probe.sides(c, fails.beyond), beyond=fails.value))
        start = max((lim.value for lim in lows if lim.value is not None), default=lo)
        for c in constraints:
            if not probe.holds(c, start):
                return c, sorted(lows, key=lambda lim: lim.value)  # type: ignore[arg-type, return-value]
        return start, lows

    def _best_objective(self, ans: AskAnswer, probe: Probe, objective: ir.Expr, lo: Any, maximize: bool) -> None:
        """Scan the feasible range of the unknown (vectorised), confirm the best point exactly."""
        import numpy as np

        from ..vector import evaluate as vec_eval
        from ..vector import evaluate_many, needed

        hi = ans.value if ans.value is not None else probe.high_seen
        points = candidates(lo, hi, ans.integer)
        values = evaluate_many(probe.el, probe.lowered.values, {probe.unknown: np.array([float(p) for p in points])},
                               needed(probe.el, [objective]) | {probe.unknown})
        scores = np.broadcast_to(np.asarray(vec_eval(objective, values), dtype=float), (len(points),))
        sign = -1.0 if maximize else 1.0
        order = sorted(range(len(points)), key=lambda i: (sign * scores[i], float(points[i])))
        for i in order:
            exact = probe.value(objective, points[i])
            if exact is not None:
                ans.objective_value, ans.value = exact, points[i]
                ans.objective = "maximize" if maximize else "minimize"
                return

    def _infeasible(self, ans: AskAnswer, probe: Probe, constraint: ir.Expr, lo: Any) -> AskAnswer:
        from ..semantics.units import format_quantity

        left, right = probe.sides(constraint, lo)
        side_dim = constraint.args[0].dim if isinstance(constraint, ir.Op) and constraint.args else DIMENSIONLESS

        def show(v: Any, dim: Any) -> str:
            return format_quantity(float(v), dim) if v is not None and isinstance(dim, Dim) else str(v)

        ans.infeasible = span_of(constraint).text
        ans.limits = [Limit(constraint, None, (left, right))]
        ans.value = None
        levers = sorted(n for n in inputs_of(probe.el, ir.refs(constraint)[0]) if n != ans.unknown)[:6] if ir.refs(constraint) else []
        self.sink.add(dx.INFEASIBLE.at(
            span_of(constraint), "violated even at the smallest value", unknown=ans.unknown,
            detail=f"even `{ans.unknown}` = {show(lo, ans.unknown_dim)} gives {show(left, side_dim)} against {show(right, side_dim)}",
            help="loosen the constraint, or change an input it depends on"
                 + (": " + ", ".join(f"`{n}`" for n in levers) if levers else ""),
        ))
        return ans

    def solve_equation(self, q: ir.Ask, lowered: Lowered, unknown: str, node: ir.Node) -> AskAnswer | None:
        assert q.equation is not None
        left, right = (self.expr_in(e, lowered) for e in q.equation)
        if left is None or right is None:
            return None
        ans = AskAnswer(q, unknown, node.dim, False, tolerance=ROOT_TOLERANCE)  # type: ignore[arg-type]
        probe = Probe(lowered, unknown, False)
        diff = ir.Op("-", (left, right), left.dim, span_of(left))
        if not depends(lowered, diff, unknown):
            self.sink.add(dx.UNDERDETERMINED.at(q.span, "the equation does not involve it", name=unknown,
                                                help="solve for an input the two sides depend on"))
            return None
        root = probe.root(diff)
        if root is None:
            self.sink.add(dx.INFEASIBLE.at(q.span, "no solution", unknown=unknown,
                                           detail="the two sides never cross for positive values",
                                           help="check that the equation can hold"))
            ans.infeasible = "no crossing"
            return ans
        ans.value = root
        ans.iterations, ans.monotone_checked = probe.iterations, probe.samples
        ans.bracket = probe.bracket
        eq = ir.Op("==", (left, right), ir.BOOL, q.span)
        ans.binding = None
        ans.limits = [Limit(eq, root, probe.sides(eq, root))]
        self._closed_form(ans, lowered, eq, unknown)
        return ans

    def _closed_form(self, ans: AskAnswer, lowered: Lowered, constraint: ir.Expr, unknown: str) -> None:
        """Derive the answer in closed form on the active piece and check it."""
        from .. import algebra

        values = Probe(lowered, unknown, ans.integer).values_at(ans.value, [constraint])
        result = algebra.isolate(lowered, constraint, unknown, ans.value, values)
        if result is None:
            return
        ans.steps, ans.closed_form, ans.closed_value = result

    def solve(self, q: ir.Solve) -> SolveAnswer | None:
        """A derived quantity: its value and every choice (`max`, `min`, `if`) in the formulas it
        is computed from, with the branch in effect and what the others would give. An input: the
        smallest and largest values for which every check of the plan that depends on it holds."""
        node_id = ir.node_id(*q.field)
        node = self.nodes.get(node_id)
        if node is None or not isinstance(node.dim, Dim):
            self.sink.add(dx.UNDERDETERMINED.at(q.field_span, "not a quantity of this plan", name=node_id,
                                                help="name a numeric field of the instance, like `solve devices for chat`"))
            return None
        ans = SolveAnswer(q, node_id, node.dim, self.base.values.get(node_id))
        if not node.is_input:
            ans.choices = choices(self.base, node_id)
            return ans
        checks = [c.expr for c in self.base.elaborated.checks if depends(self.base, c.expr, node_id)]
        if not checks:
            self.sink.add(dx.UNDERDETERMINED.at(
                q.span, "no check of the plan depends on it", name=node_id,
                help="add a `check` on a quantity computed from it, or ask with explicit constraints"))
            return None
        ends = [self.optimize(ir.Ask("ask", f"{objective} {node_id}", q.span, objective, q.field, q.field_span, None,
                                     (), None, ()), self.base, node_id, node, checks, None)
                for objective in ("minimize", "maximize")]
        if None in ends:
            return None
        ans.low, ans.high = ends
        return ans
