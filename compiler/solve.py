"""Solve: answer the plan's questions — ask (optimise one unknown under constraints), solve an
equation for an unknown, scenarios, comparisons, sweeps, searches — and the sensitivities of
the headline numbers.

Contract
- `answer(program, lowered, sink) -> (answers, sensitivities, bindings, levers)` runs after
  lowering: the answers in question order, the elasticities of each summary item, the
  `max`/`min` choices behind the headline (the first summary item), and a function that prices
  every lever that applies (the plan's, then its kinds'; called by the report, not by a check)
  as a variant of the plan on the summary and the checks —
  one that sets what another already did is priced once, as the first; one whose variant is not
  a valid plan (no batch meets the SLOs) says why instead of a price, and is not an error. Every answer is a typed record the
  report formats; nothing here formats text for people except the algebra (LaTeX).
- A question's `given`, a scenario's assignments and a sweep's points are *overrides*: they
  replace a field's definition, as an assignment in the plan would. Numeric overrides of
  quantities re-evaluate the graph (exactly for single points, vectorised with numpy for many);
  overrides of enum or instance fields (weights = fp8) re-elaborate the plan.
- `ask ... maximize x subject to c1, c2 given ...`: each constraint is solved on its own for the
  largest (or smallest) feasible x by bracketed bisection on the exact evaluator — integers for
  counted quantities, so the answer respects every `ceil`, block size and `max` in the physics —
  after checking monotonicity on the bracket; the smallest limit binds and the others are
  reported beside it. The closed form is then derived with sympy on the active piece (ceilings
  relaxed, each `max`/`min`/`if` replaced by the branch active at the answer), isolated for x,
  shown step by step, and checked against the numeric answer.
- Infeasible (even the smallest x violates a constraint) and under-determined (the constraints do
  not involve x, or nothing bounds it) are different diagnostics; an infeasible question makes
  `plan check` exit 1 like a failed check.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from . import diagnostics as dx
from .lower import EvalError, Lowered, evaluate, evaluate_node, is_whole, lower, search_bounds
from .semantics import ir
from .semantics.elaborate import Elaborator, elaborate, static_key
from .semantics.resolve import Program
from .semantics.units import COUNTING_BASES, DIMENSIONLESS, Dim
from .syntax import ast

MAX_DOUBLINGS = 80
LIMIT_TOLERANCE = 1e-9  # relative: where a constraint stops holding, for quantities that are not counted
ROOT_TOLERANCE = 1e-12  # relative: where the two sides of an equation cross
MAX_POINTS = 1_000_000
"""The most variants one question may evaluate, whatever its kind (search, sweep, compare,
scenario), checked from the domains' sizes before a single point is built."""
MAX_SEARCH = MAX_POINTS  # the name searches used before the cap was shared
EXACT_POINTS = 64
"""A sweep or comparison of up to this many points is evaluated exactly, point by point (a table
a person reads); a larger one with numeric axes is evaluated vectorised, as a search is."""
MAX_TABLE_ROWS = 1_000
"""The most rows a sweep's table lists; a larger sweep lists evenly spaced points (every point
is evaluated, and the notes say how many)."""


# ---- answers ------------------------------------------------------------------------------


@dataclass
class Limit:
    """How far one constraint lets the unknown go."""

    constraint: ir.Expr
    value: Fraction | float | None  # None: this constraint does not bound the unknown
    at_limit: tuple[Any, Any] | None = None  # both sides of the constraint at the limit
    beyond: Fraction | float | None = None  # the nearest value past the limit (where it no longer holds)
    requirement: bool = False  # a `require` of the plan's kinds (the end of the question's domain), not a constraint it asks


@dataclass
class AskAnswer:
    stmt: ast.AskStmt
    unknown: str
    unknown_dim: Dim
    integer: bool
    value: Fraction | float | None = None
    limits: list[Limit] = field(default_factory=list)
    binding: Limit | None = None
    bracket: tuple[float, float] | None = None
    iterations: int = 0
    monotone_checked: int = 0
    closed_form: str | None = None  # LaTeX of the isolated unknown
    steps: list[tuple[str, str]] = field(default_factory=list)  # (words, LaTeX)
    closed_value: float | None = None
    objective: str | None = None
    objective_value: Any = None
    infeasible: str | None = None
    lower_limits: bool = False  # the limits are lowest values the constraints need (a minimum), not highest they allow
    tolerance: float | None = None  # relative width of the final bracket; None: exact to the whole number


@dataclass
class TableAnswer:
    """Scenarios, comparisons, sweeps and searches: rows of values over the plan's variants."""

    stmt: ast.Question
    kind: str
    title: str
    columns: list[tuple[str, ir.Type, str | None]]  # label, dimension, display unit
    rows: list[tuple[str, list[Any]]]  # row label, values (None: not evaluable)
    notes: list[str] = field(default_factory=list)
    best: int | None = None
    best_setting: str = ""  # a search's best row as `axis = value, ...`
    axes: list[str] = field(default_factory=list)  # a search's axes, in the order of its row labels
    plot_columns: tuple[int, ...] = ()  # a search's plotted axes: their indices into `columns`
    pareto: list[int] = field(default_factory=list)  # indices into rows
    evaluated: int = 0
    feasible: int = 0  # a search's configurations that meet its constraints
    objective_node: str = ""  # a search's objective, when it is a quantity of the plan
    # a search's axes as the plan declares them: (the static choice's name, or "" and the node
    # that holds the declared number), parallel to `axes`
    declared: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Sensitivity:
    target: str
    dim: ir.Type
    entries: list[tuple[str, float]]  # input node, elasticity d ln y / d ln x


@dataclass
class Choice:
    """A `max`, `min` or `if` in the formulas behind a solved quantity, and which branch is in effect."""

    node: str  # the quantity whose formula makes the choice
    op: str
    branches: list[ir.Expr]  # the one in effect first
    values: list[Any]  # parallel to branches (None where undefined)


@dataclass
class SolveAnswer:
    """`solve <quantity> for <instance>`: a derived quantity with the choices that decide it, or an
    input with the range over which every check of the plan holds (the two ends as asks)."""

    stmt: ast.SolveStmt
    unknown: str
    dim: ir.Type
    value: Any = None
    choices: list[Choice] = field(default_factory=list)
    low: AskAnswer | None = None
    high: AskAnswer | None = None


@dataclass
class LeverAnswer:
    """A lever priced: the summary items and checks of its variant, parallel to the baseline's."""

    offered: Any  # lower.Offered
    columns: list[tuple[str, ir.Type, str | None]]  # the summary items, then the checks
    baseline: list[Any]
    values: list[Any] | None  # None: the variant is not a valid plan
    reason: str = ""  # why not, in the compiler's words


Answer = AskAnswer | TableAnswer | SolveAnswer


# ---- the stage ----------------------------------------------------------------------------


def answer(program: Program, lowered: Lowered, sink: dx.Sink
           ) -> tuple[list[Answer], list[Sensitivity], list[Choice], Callable[[], list[LeverAnswer]]]:
    solver = _Solver(program, lowered, sink)
    answers: list[Answer] = []
    for q in lowered.elaborated.questions:
        result = solver.question(q)
        if result is not None:
            answers.append(result)
    return answers, solver.sensitivities(), solver.headline_choices(), solver.levers


class _Solver:
    def __init__(self, program: Program, lowered: Lowered, sink: dx.Sink) -> None:
        self.program = program
        self.base = lowered
        self.sink = sink
        self.nodes = lowered.elaborated.nodes
        self._variants: dict[tuple[Any, ...], Lowered | None] = {}

    # ---- dispatch -------------------------------------------------------------------------
    def question(self, q: ast.Question) -> Answer | None:
        if isinstance(q, ast.AskStmt):
            return self.ask(q)
        if isinstance(q, ast.ScenarioStmt):
            return self.scenario(q)
        if isinstance(q, ast.CompareStmt):
            return self.table(q, q.subject, [q.domain], "compare", None)
        if isinstance(q, ast.SweepStmt):
            return self.table(q, q.subject, list(q.domains), "sweep", q.plot)
        if isinstance(q, ast.SearchStmt):
            return self.search(q)
        assert isinstance(q, ast.SolveStmt)
        return self.solve(q)

    # ---- paths and variants ---------------------------------------------------------------
    def target(self, path: ast.Path, subject: ast.Path | None = None) -> tuple[str, str] | None:
        """(instance, field) named by a path, relative to a subject instance if given."""
        steps = list(path.steps)
        if subject is not None:
            steps = list(subject.steps) + steps
        names = [s.name if not s.indexed else f"[{s.name}]" for s in steps]
        if len(steps) < 2 or not isinstance(self.program.names.get(steps[0].name), ast.InstanceDecl):
            self.sink.add(dx.UNKNOWN_NAME.at(path.span, "not an instance's field", name=path.dotted,
                                             help="name a field of an instance, like `chat.batch`"))
            return None
        field_name = names[1] + "".join(names[2:])
        node_id = f"{steps[0].name}.{field_name}"
        if any(not s.indexed for s in steps[2:]) or (node_id not in self.nodes and node_id not in self.base.elaborated.statics):
            fields = sorted({n.split(".", 1)[1].split("[", 1)[0] for n in (*self.nodes, *self.base.elaborated.statics)
                             if n.split(".", 1)[0] == steps[0].name and "@" not in n})
            from .semantics.elaborate import suggestion

            near = suggestion(field_name, fields, []) if len(steps) == 2 else None
            if subject is not None and len(subject.steps) > 1:  # `sweep chat.devices over chat.batch in ...`
                hint = (f"a question's subject is an instance and its domains name that instance's fields: "
                        f"`over {path.steps[-1].name} in ...` varies `{steps[0].name}.{path.steps[-1].name}`")
            elif near:
                hint = f"did you mean `{steps[0].name}.{near}`?"
            else:
                hint = f"name one field of `{steps[0].name}`, like `{steps[0].name}.batch`"
            shown = ".".join(s.name for s in steps)
            self.sink.add(dx.UNKNOWN_NAME.at(path.span, f"`{shown}` is not a field of `{steps[0].name}`", name=shown, help=hint))
            return None
        return steps[0].name, field_name

    def whole(self, target: tuple[str, str]) -> str:
        """The field's id if it takes whole numbers only (declared `integer`), else ""."""
        node = self.nodes.get(f"{target[0]}.{target[1]}")
        return node.id if node is not None and node.integral else ""

    def variant(self, overrides: dict[tuple[str, str], ast.Expr], span: Any) -> Lowered | None:
        """The plan with some definitions replaced, evaluated (memoised: a comparison, a search
        and an ask often build the same variant). An override that sets a field to the value it
        already has is dropped; numeric values for quantities the plan has replace those nodes
        without re-elaborating; anything else (an enum member, an instance, a field the plan does
        not use) re-elaborates the plan. Either way only what changed is evaluated again, and
        the plan's requirements are checked."""
        overrides = {t: e for t, e in overrides.items() if not self._unchanged(t, e)}
        key = tuple(sorted((t, _expr_key(e)) for t, e in overrides.items()))
        if key not in self._variants:
            self._variants[key] = self._build_variant(overrides, span) if overrides else self.base
        return self._variants[key]

    def _build_variant(self, overrides: dict[tuple[str, str], ast.Expr], span: Any) -> Lowered | None:
        sink = dx.Sink()
        elaborated = self._substituted(overrides) or elaborate(self.program, sink, overrides)
        lowered = lower(elaborated, sink, reuse=self.base) if not sink.has_errors else None
        if lowered is None or sink.has_errors:
            first = next(d for d in sink.items if d.is_error)
            if first.primary is not None and _within(first.primary.span, span):  # already at the question's own value (E0409 on `2.5`)
                self.sink.add(first)
                return None
            self.sink.add(dx.QUESTION_INVALID.at(span, "this variant is not a valid plan", message=first.message,
                                                 help="check the values this question sets"))
            return None
        return lowered

    def _quiet_expr(self, e: ast.Expr) -> ir.Expr | Any:
        """A question's expression elaborated against the plan (a quantity or a static value such
        as an enum member), or None; reports nothing."""
        return self._elaborated(e, self.base, dx.Sink())

    def _elaborated(self, e: ast.Expr, lowered: Lowered, sink: dx.Sink) -> Any:
        elab = Elaborator(self.program, sink)
        elab.out = lowered.elaborated
        elab.done = {n: node.dim for n, node in lowered.elaborated.nodes.items()}  # type: ignore[misc]
        return elab.expr(e, None)

    def _unchanged(self, target: tuple[str, str], e: ast.Expr) -> bool:
        node_id = f"{target[0]}.{target[1]}"
        el = self.base.elaborated
        if node_id in el.statics:
            return static_key(self._quiet_expr(e)) == el.statics[node_id]
        node = self.nodes.get(node_id)
        if node is None or not node.is_input:
            return False
        value = self._quiet_expr(e)
        return isinstance(value, ir.Lit) and value.dim == node.dim and value.value == self.base.values.get(node_id)

    def _substituted(self, overrides: dict[tuple[str, str], ast.Expr]) -> ir.Elaborated | None:
        """The plan's graph with overridden quantities replaced by their literal values, when
        every override is a number for a quantity the plan already has."""
        el = self.base.elaborated
        nodes = dict(el.nodes)
        for (inst, name), e in overrides.items():
            node_id = f"{inst}.{name}"
            node = el.nodes.get(node_id)
            value = self._quiet_expr(e) if node is not None else None
            if node is None or not isinstance(value, ir.Lit) or value.dim != node.dim:
                return None
            nodes[node_id] = dataclasses.replace(node, expr=value, deps=(), is_input=True, overridden=True, interval=None,
                                                 span=e.span, source=None)
        return dataclasses.replace(el, nodes=nodes)

    def expr_in(self, e: ast.Expr, lowered: Lowered) -> ir.Expr | None:
        """Elaborate a question's expression against a (variant) plan."""
        value = self._elaborated(e, lowered, self.sink)
        if isinstance(value, (ir.Lit, ir.Ref, ir.Op)):
            return value
        if value is not None:
            self.sink.add(dx.WRONG_TYPE.at(e.span, "not a quantity", expected="a quantity or a comparison",
                                           found=type(value).__name__, help="name a quantity of the plan"))
        return None

    # ---- ask ------------------------------------------------------------------------------
    def ask(self, q: ast.AskStmt) -> AskAnswer | None:
        unknown_t = self.target(q.target)
        given = {}
        for g in q.given:
            t = self.target(g.target)
            if t is None:
                return None
            given[t] = g.value
        if unknown_t is None:
            return None
        lowered = self.variant(given, q.span)
        if lowered is None:
            return None
        unknown = f"{unknown_t[0]}.{unknown_t[1]}"
        objective: ir.Expr | None = None
        if q.over is not None:
            over_t = self.target(q.over)
            if over_t is None:
                return None
            objective = self.expr_in(_path_expr(q.target), lowered)
            unknown = f"{over_t[0]}.{over_t[1]}"
        node = lowered.elaborated.nodes.get(unknown)
        if node is None or not isinstance(node.dim, Dim):
            self.sink.add(dx.UNDERDETERMINED.at(
                (q.over or q.target).span, "not a quantity of this plan", name=unknown,
                help="the unknown must be a numeric field the plan uses, like `chat.batch`"))
            return None
        if q.equation is not None:
            return self.solve_equation(q, lowered, unknown, node)
        constraints = [c for c in (self.expr_in(c, lowered) for c in q.constraints) if c is not None]
        if len(constraints) != len(q.constraints):
            return None
        return self.optimize(q, lowered, unknown, node, constraints, objective)

    def optimize(self, q: ast.AskStmt, lowered: Lowered, unknown: str, node: ir.Node,
                 constraints: list[ir.Expr], objective: ir.Expr | None) -> AskAnswer | None:
        integer = _is_integer(node, lowered.values[unknown])
        maximize = q.objective == "maximize"
        # `a == b` bounds from both sides: as `a <= b` and `a >= b`, each monotone where the other is not
        constraints = [half for c in constraints for half in (
            (ir.Op("<=", c.args, c.dim, c.span), ir.Op(">=", c.args, c.dim, c.span))
            if isinstance(c, ir.Op) and c.op == "==" else (c,))]
        direction_up = maximize if objective is None else None
        ans = AskAnswer(q, unknown, node.dim, integer, tolerance=None if integer else LIMIT_TOLERANCE)  # type: ignore[arg-type]
        probe = _Probe(lowered, unknown, integer)
        for c in constraints:
            if not _depends(lowered, c, unknown):
                self.sink.add(dx.UNDERDETERMINED.at(
                    _span(c), f"does not involve `{unknown}`", name=unknown,
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

    def _first_feasible(self, probe: _Probe, constraints: list[ir.Expr], lo: Any) -> tuple[Any, list[Limit]]:
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

    def _best_objective(self, ans: AskAnswer, probe: _Probe, objective: ir.Expr, lo: Any, maximize: bool) -> None:
        """Scan the feasible range of the unknown (vectorised), confirm the best point exactly."""
        import numpy as np

        from .vector import evaluate as vec_eval
        from .vector import evaluate_many, needed

        hi = ans.value if ans.value is not None else probe.high_seen
        points = _candidates(lo, hi, ans.integer)
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

    def _infeasible(self, ans: AskAnswer, probe: _Probe, constraint: ir.Expr, lo: Any) -> AskAnswer:
        from .semantics.units import format_quantity

        left, right = probe.sides(constraint, lo)
        side_dim = constraint.args[0].dim if isinstance(constraint, ir.Op) and constraint.args else DIMENSIONLESS

        def show(v: Any, dim: Any) -> str:
            return format_quantity(float(v), dim) if v is not None and isinstance(dim, Dim) else str(v)

        ans.infeasible = _span(constraint).text
        ans.limits = [Limit(constraint, None, (left, right))]
        ans.value = None
        levers = sorted(n for n in _inputs_of(probe.el, ir.refs(constraint)[0]) if n != ans.unknown)[:6] if ir.refs(constraint) else []
        self.sink.add(dx.INFEASIBLE.at(
            _span(constraint), "violated even at the smallest value", unknown=ans.unknown,
            detail=f"even `{ans.unknown}` = {show(lo, ans.unknown_dim)} gives {show(left, side_dim)} against {show(right, side_dim)}",
            help="loosen the constraint, or change an input it depends on"
                 + (": " + ", ".join(f"`{n}`" for n in levers) if levers else ""),
        ))
        return ans

    def solve_equation(self, q: ast.AskStmt, lowered: Lowered, unknown: str, node: ir.Node) -> AskAnswer | None:
        assert q.equation is not None
        left, right = (self.expr_in(e, lowered) for e in q.equation)
        if left is None or right is None:
            return None
        ans = AskAnswer(q, unknown, node.dim, False, tolerance=ROOT_TOLERANCE)  # type: ignore[arg-type]
        probe = _Probe(lowered, unknown, False)
        diff = ir.Op("-", (left, right), left.dim, _span(left))
        if not _depends(lowered, diff, unknown):
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
        from . import algebra

        values = _Probe(lowered, unknown, ans.integer).values_at(ans.value, [constraint])
        result = algebra.isolate(lowered, constraint, unknown, ans.value, values)
        if result is None:
            return
        ans.steps, ans.closed_form, ans.closed_value = result

    # ---- solve <quantity> for <instance> ---------------------------------------------------
    def solve(self, q: ast.SolveStmt) -> SolveAnswer | None:
        """A derived quantity: its value and every choice (`max`, `min`, `if`) in the formulas it
        is computed from, with the branch in effect and what the others would give. An input: the
        smallest and largest values for which every check of the plan that depends on it holds."""
        quantity, subject = q.subject, q.unknown  # `solve devices for chat`
        if len(subject.steps) != 1 or not isinstance(self.program.names.get(subject.steps[0].name), ast.InstanceDecl):
            self.sink.add(dx.WRONG_TYPE.at(subject.span, "not an instance", expected="an instance after `for`",
                                           found=f"`{subject.dotted}`",
                                           help="name the instance the quantity belongs to: `solve devices for chat`"))
            return None
        t = self.target(quantity, subject)
        if t is None:
            return None
        node_id = f"{t[0]}.{t[1]}"
        node = self.nodes.get(node_id)
        if node is None or not isinstance(node.dim, Dim):
            self.sink.add(dx.UNDERDETERMINED.at(quantity.span, "not a quantity of this plan", name=node_id,
                                                help="name a numeric field of the instance, like `solve devices for chat`"))
            return None
        ans = SolveAnswer(q, node_id, node.dim, self.base.values.get(node_id))
        if not node.is_input:
            ans.choices = self._choices(node_id)
            return ans
        checks = [c.expr for c in self.base.elaborated.checks if _depends(self.base, c.expr, node_id)]
        if not checks:
            self.sink.add(dx.UNDERDETERMINED.at(
                q.span, "no check of the plan depends on it", name=node_id,
                help="add a `check` on a quantity computed from it, or ask with explicit constraints"))
            return None
        ends = [self.optimize(ast.AskStmt(q.span, f"{objective} {node_id}", objective, quantity, None, (), None, ()),
                              self.base, node_id, node, checks, None) for objective in ("minimize", "maximize")]
        if None in ends:
            return None
        ans.low, ans.high = ends
        return ans

    def _choices(self, node_id: str, lowered: Lowered | None = None) -> list[Choice]:
        lowered = lowered or self.base
        el = lowered.elaborated
        cone = ir.upstream_of(el, [node_id], searches_as_leaves=True)
        out: list[Choice] = []
        searches: list[Choice] = []  # the searches come first: each is a decision (a running batch) and what limits it
        for n in reversed(el.order):
            if n not in cone:
                continue
            if ir.is_search(el.nodes[n].expr):  # which part of its condition stops it
                beyond, parts = search_bounds(el, n, lowered.values)
                if parts:
                    searches.append(Choice(n, "largest", [p[0] for p in parts], [(p[1], p[2], p[3], beyond) for p in parts]))
                continue
            stack = [el.nodes[n].expr]
            while stack:
                e = stack.pop()
                if not isinstance(e, ir.Op):
                    continue
                stack.extend(e.args)
                if e.op not in ("max", "min", "if"):
                    continue
                branches = list(e.args[1:]) if e.op == "if" else list(e.args)
                values: list[Any] = []
                for b in branches:
                    try:
                        values.append(evaluate(b, lowered.values))
                    except EvalError:
                        values.append(None)
                if e.op == "if":
                    active = 0 if evaluate(e.args[0], lowered.values) else 1
                else:
                    defined = [v for v in values if v is not None]
                    best = (max if e.op == "max" else min)(defined) if defined else None
                    active = values.index(best) if best is not None else 0
                if len({v for v in values if v is not None}) < 2:
                    continue  # every branch gives the same: nothing is decided here
                order = [active] + [i for i in range(len(branches)) if i != active]
                out.append(Choice(n, e.op, [branches[i] for i in order], [values[i] for i in order]))
        return searches + out

    # ---- scenarios, comparisons, sweeps ---------------------------------------------------
    def headline(self, lowered: Lowered) -> list[tuple[str, ir.Type, str | None, Any]]:
        el = lowered.elaborated
        rows = []
        for expr, value in zip(el.summary, lowered.summary):
            unit = el.nodes[expr.node].unit if isinstance(expr, ir.Ref) else None
            rows.append((" ".join(_span(expr).text.split()), expr.dim, unit, value))
        for check, outcome in zip(el.checks, lowered.checks):
            rows.append((check.label or " ".join(check.span.text.split()), ir.BOOL, None, outcome.holds))
        return rows

    def scenario(self, q: ast.ScenarioStmt) -> TableAnswer | None:
        overrides = {}
        for a in q.assignments:
            t = self.target(a.target)
            if t is None:
                return None
            overrides[t] = a.value
        variant = self.variant(overrides, q.span)
        if variant is None:
            return None
        base, new = self.headline(self.base), self.headline(variant)
        columns = [(label, dim, unit) for label, dim, unit, _ in base]
        table = TableAnswer(q, "scenario", q.title, columns,
                            [("baseline", [v for *_, v in base]), (q.title, [v for *_, v in new])])
        for (label, dim, _, before), (*_, after) in zip(base, new):
            if dim == ir.BOOL and before != after:
                table.notes.append(f"{label}: {'now fails' if before else 'now passes'}")
        table.notes.extend(self._binding_notes(variant))
        table.evaluated = 1
        return table

    def levers(self) -> list[LeverAnswer]:
        if not self.base.elaborated.summary:
            return []
        base = self.headline(self.base)
        columns = [(label, dim, unit) for label, dim, unit, _ in base]
        seen: set[tuple[Any, ...]] = set()
        out = []
        mine = [o for o in self.base.levers if not o.lever.instance]
        for offered in mine + [o for o in self.base.levers if o.lever.instance]:
            overrides = {t: e for t, e in offered.lever.targets if not self._unchanged(t, e)}
            key = tuple(sorted((t, _expr_key(e)) for t, e in overrides.items()))
            if not overrides or key in seen:
                continue
            seen.add(key)
            variant, reason = self._quiet_variant(overrides, key)
            out.append(LeverAnswer(offered, columns, [v for *_, v in base],
                                   [v for *_, v in self.headline(variant)] if variant is not None else None, reason))
        return out

    def _quiet_variant(self, overrides: dict[tuple[str, str], ast.Expr], key: tuple[Any, ...]) -> tuple[Lowered | None, str]:
        """`variant` for a lever: a variant that is not a valid plan is a reason, not a diagnostic."""
        if self._variants.get(key) is not None:
            return self._variants[key], ""
        sink = dx.Sink()
        # only the summary and the checks are read: a re-elaboration builds just what they need
        elaborated = self._substituted(overrides) or elaborate(self.program, sink, overrides, lean=True)
        lowered = lower(elaborated, sink, reuse=self.base) if not sink.has_errors else None
        if lowered is None or sink.has_errors:
            return None, next(d.message for d in sink.items if d.is_error)
        return lowered, ""

    def headline_choices(self) -> list[Choice]:
        """The `max`/`min` choices behind the first summary item: what binds the headline."""
        headline = self._headline()
        return [c for c in self._choices(headline) if c.op != "if"] if headline else []

    def _headline(self) -> str | None:
        """The first summary item that is a quantity of the plan: the headline."""
        return next((e.node for e in self.base.elaborated.summary if isinstance(e, ir.Ref)), None)

    def _binding_notes(self, variant: Lowered) -> list[str]:
        """What decides the headline (the first `summary` item) in a scenario: each `max`/`min`
        behind it whose binding branch differs from the baseline's, or, when none does, the ones
        that bind in both — a scenario is recomputed, so what binds first is found, not guessed."""
        headline = self._headline()
        if headline is None or headline not in variant.elaborated.nodes:
            return []

        def keyed(lowered: Lowered) -> dict[tuple[str, str, int], Choice]:
            out: dict[tuple[str, str, int], Choice] = {}
            for c in self._choices(headline, lowered):
                if c.op == "if":
                    continue
                n = sum(1 for k in out if k[:2] == (c.node, c.op))
                out[(c.node, c.op, n)] = c
            return out

        before, after = keyed(self.base), keyed(variant)
        changed = [f"{k[0]} is now set by {_text(c.branches[0])} ({c.op}; in the baseline by {_text(before[k].branches[0])})"
                   for k, c in after.items() if k in before and _text(before[k].branches[0]) != _text(c.branches[0])]
        if changed:
            return [f"what decides {headline} changes: " + "; ".join(changed)]
        same = [f"{k[0]} by {_text(c.branches[0])}" for k, c in after.items()][:4]
        return [f"the same constraints decide {headline} as in the baseline: " + ", ".join(same)] if same else []

    def points(self, domain: ast.Domain, lowered: Lowered, whole: str = "") -> list[ast.Expr] | None:
        """The domain's values; of a field declared `integer`, whole numbers only."""
        bounds = self.range_of(domain, lowered, whole)
        if bounds is None:
            return None
        if isinstance(bounds, list):
            return bounds
        lo, hi, step, dim = bounds
        values = _range_points(lo, hi, step, bool(whole))
        return [_number_like(domain.low, v, dim) for v in values]  # type: ignore[arg-type]

    def range_of(self, domain: ast.Domain, lowered: Lowered,
                 whole: str = "") -> list[ast.Expr] | tuple[float, float, str, Any] | None:
        """A domain's list of values, or a range's checked ends (low, high, step, dimension):
        both ends evaluate to finite numbers, the low end first, a log-stepped range starting
        above zero; with `whole` (the id of a field declared `integer`), every listed value and both
        ends whole numbers (E0409 at the one that is not). Nothing is built here, so the size
        can be checked first (`domain_size`)."""
        if domain.values is not None:
            for v in domain.values:
                if (isinstance(v, ast.Number) or _is_neg_number(v)) and not _finite_literal(v, lowered):
                    self.sink.add(dx.BAD_RANGE.at(v.span, "beyond ±1.8e308", message="a value of the domain is not a finite number",
                                                  help="write values within about 1e±308"))
                    return None
                if whole and not self._whole_value(v, lowered, whole):
                    return None
            return list(domain.values)
        if whole and not all(self._whole_value(e, lowered, whole) for e in (domain.low, domain.high) if e is not None):
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
        self.sink.add(dx.NOT_WHOLE.at(e.span, f"this is {_num(number)}", name=field, what="",
                                      value=_num(number), help=f"use whole numbers, such as {low} or {low + 1}"))
        return False

    def sized(self, q: ast.Question, domains: list[ast.Domain]) -> list[list[ast.Expr] | tuple[float, float, str, Any]] | None:
        """Every domain's ends, checked, and their product against the shared cap, before any
        point exists."""
        bounds = []
        for d in domains:
            b = self.range_of(d, self.base)
            if b is None:
                return None
            bounds.append(b)
        total = math.prod(len(b) if isinstance(b, list) else _range_size(*b[:3]) for b in bounds)
        if total > MAX_POINTS:
            self.sink.add(dx.QUESTION_TOO_LARGE.at(q.span, "too many points", count=f"{total:,}", limit=f"{MAX_POINTS:,}",
                                                   help="narrow the domains or use coarser steps (`log2`, `log10`)"))
            return None
        return bounds

    def table(self, q: ast.Question, subject: ast.Path, domains: list[ast.Domain], kind: str,
              plot: ast.Plot | None) -> TableAnswer | None:
        if self.sized(q, domains) is None:
            return None
        targets, axes = [], []
        for d in domains:
            t = self.target(d.target, subject)
            pts = self.points(d, self.base, self.whole(t)) if t is not None else None
            if t is None or pts is None:
                return None
            targets.append(t)
            axes.append(pts)
        columns_exprs = self._columns(subject, plot)
        if columns_exprs is None:
            return None
        title = " × ".join(f"{t[1]}" for t in targets)
        table = TableAnswer(q, kind, title, [], [])
        total = math.prod(len(a) for a in axes)
        numeric = [f"{t[0]}.{t[1]}" in self.nodes and all(isinstance(p, ast.Number) or _is_neg_number(p) for p in pts)
                   for t, pts in zip(targets, axes)]
        if total > EXACT_POINTS and any(numeric):
            return self._vector_table(q, table, targets, axes, numeric, columns_exprs)
        for combo in itertools.product(*axes):
            overrides = dict(zip(targets, combo))
            variant = self.variant(overrides, q.span)
            label = ", ".join(_label(e) for e in combo)
            if variant is None:
                table.rows.append((label, [None] * max(len(table.columns), 1)))
                continue
            cols = self._evaluate_columns(columns_exprs, variant)
            if not table.columns:
                table.columns = [(c[0], c[1], c[2]) for c in cols]
            table.rows.append((label, [c[3] for c in cols]))
            table.evaluated += 1
        return table

    def _vector_table(self, q: ast.Question, table: TableAnswer, targets: list[tuple[str, str]],
                      axes: list[list[ast.Expr]], numeric: list[bool], columns_exprs: list[ast.Expr]) -> TableAnswer:
        """A large sweep: each combination of its static axes (an enum member, an instance) is a
        variant of the plan; over its numeric axes every point is evaluated in one vectorised
        pass, as a search is (float64; a point that breaks a requirement of the kinds is a row
        without values). At most MAX_TABLE_ROWS evenly spaced rows are listed."""
        import numpy as np

        from .vector import evaluate as vec_eval
        from .vector import evaluate_many, needed

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
            grids = np.meshgrid(*[np.array([float(_literal_value(p, variant)) for p in axes[k]]) for k in nums], indexing="ij")
            fixed = {f"{targets[k][0]}.{targets[k][1]}": g.ravel() for k, g in zip(nums, grids)}
            live = [e for e in exprs if e is not None]
            vals = evaluate_many(variant.elaborated, variant.values, fixed,
                                 needed(variant.elaborated, live + [r.expr for r in variant.elaborated.requirements]) | set(fixed))
            valid = self._valid_points(vals, n, variant)
            if not valid.all() and not self.sink.has_errors:  # as an exactly evaluated point would be
                at = int(np.argmin(valid))
                point = ", ".join(_label(axes[k][i]) for k, i in zip(nums, np.unravel_index(at, num_shape)))
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
            label = ", ".join(_label(axes[k][i]) for k, i in enumerate(idx))
            block = blocks.get(tuple(int(idx[k]) for k in static))
            at = int(np.ravel_multi_index(tuple(int(idx[k]) for k in nums), num_shape)) if nums else 0
            if block is None or not block[1][at]:
                table.rows.append((label, [None] * width))
                continue
            table.rows.append((label, [None if c is None else _plain(c[at]) for c in block[0]]))
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

    def _columns(self, subject: ast.Path, plot: ast.Plot | None) -> list[ast.Expr] | None:
        if plot is None or not plot.axes:
            return []  # the plan's summary and checks
        return [_path_expr(ast.Path(p.span, subject.steps + p.steps)) for p in plot.axes]

    def _evaluate_columns(self, exprs: list[ast.Expr], lowered: Lowered) -> list[tuple[str, ir.Type, str | None, Any]]:
        if not exprs:
            return self.headline(lowered)
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

    # ---- search ---------------------------------------------------------------------------
    def search(self, q: ast.SearchStmt) -> TableAnswer | None:
        """Evaluate every configuration (static choices re-elaborate the plan; numeric axes are
        evaluated together, vectorised, on only the nodes the objective and constraints read)."""
        import numpy as np

        from .vector import evaluate as vec_eval
        from .vector import evaluate_many, needed

        axes = self._search_axes(q)
        target_t = self.target(q.target, q.subject)
        if axes is None or target_t is None:
            return None
        static_axes, numeric_axes = axes
        objective_path = _path_expr(ast.Path(q.target.span, q.subject.steps + q.target.steps))
        plot_axes = q.plot.axes if q.plot is not None and q.plot.kind == "pareto" else ()
        plot_paths = [_path_expr(ast.Path(p.span, q.subject.steps + p.steps)) for p in plot_axes]
        shape = tuple(len(p) for _, p in numeric_axes)
        blocks: list[tuple[tuple[ast.Expr, ...], Any, Any, Any, list[Any]]] = []
        for static_combo in itertools.product(*(p for _, p in static_axes)):
            overrides = {t: v for (t, _), v in zip(static_axes, static_combo)}
            variant = self.variant(overrides, q.span) if overrides else self.base
            if variant is None:
                continue
            found = [self.expr_in(e, variant) for e in (objective_path, *q.constraints, *plot_paths)]
            exprs = [e for e in found if e is not None]
            if len(exprs) != len(found):
                return None
            grids = np.meshgrid(*[np.array([float(_literal_value(p, variant)) for p in pts]) for _, pts in numeric_axes],
                                indexing="ij") if numeric_axes else []
            fixed = {node_id: g.ravel() for (node_id, _), g in zip(numeric_axes, grids)}
            n = math.prod(shape) if numeric_axes else 1
            vals = evaluate_many(variant.elaborated, variant.values, fixed,
                                 needed(variant.elaborated, exprs) | set(fixed))

            def as_array(e: ir.Expr, kind: type, vals: dict[str, Any] = vals, n: int = n) -> Any:
                return np.broadcast_to(np.asarray(vec_eval(e, vals), dtype=kind), (n,))

            objective = as_array(exprs[0], float)
            failed = np.full(n, -1)
            for k, c in enumerate(exprs[1:1 + len(q.constraints)]):
                failed[(failed < 0) & ~as_array(c, bool)] = k
            failed[(failed < 0) & ~np.isfinite(objective)] = len(q.constraints)
            extras = [as_array(e, float) for e in exprs[1 + len(q.constraints):]]
            blocks.append((static_combo, objective, failed, n, extras))
        return self._search_table(q, target_t, static_axes, numeric_axes, shape, blocks, plot_axes)

    def _search_axes(self, q: ast.SearchStmt) -> tuple[list[Any], list[Any]] | None:
        if self.sized(q, list(q.domains)) is None:
            return None
        static_axes: list[tuple[tuple[str, str], list[ast.Expr]]] = []
        numeric_axes: list[tuple[str, list[ast.Expr]]] = []
        for d in q.domains:
            t = self.target(d.target, q.subject)
            pts = self.points(d, self.base, self.whole(t)) if t is not None else None
            if t is None or pts is None:
                return None
            node_id = f"{t[0]}.{t[1]}"
            if node_id in self.nodes and all(isinstance(p, ast.Number) or _is_neg_number(p) for p in pts):
                numeric_axes.append((node_id, pts))
            else:
                static_axes.append((t, pts))
        return static_axes, numeric_axes

    def _search_table(self, q: ast.SearchStmt, target_t: tuple[str, str], static_axes: list[Any],
                      numeric_axes: list[Any], shape: tuple[int, ...], blocks: list[Any],
                      plot_axes: tuple[ast.Path, ...]) -> TableAnswer:
        import numpy as np

        def parts(b: int, i: int) -> list[str]:
            static_combo = blocks[b][0]
            idx = np.unravel_index(i, shape) if shape else ()
            return [_label(e) for e in static_combo] + [_label(pts[j]) for (_, pts), j in zip(numeric_axes, idx)]

        def label(b: int, i: int) -> str:
            return ", ".join(parts(b, i))

        reasons = [" ".join(c.span.text.split()) for c in q.constraints] + ["undefined"]
        sign = -1.0 if q.objective == "maximize" else 1.0
        feasible = [(sign * float(obj[i]), b, int(i)) for b, (_, obj, failed, _, _) in enumerate(blocks)
                    for i in np.nonzero(failed < 0)[0]]
        ranked = sorted(feasible)[:10]
        rejected = [(b, int(i)) for b, (_, _, failed, _, _) in enumerate(blocks) for i in np.nonzero(failed >= 0)[0][:5]][:5]
        node_id = f"{target_t[0]}.{target_t[1]}"
        node = self.nodes.get(node_id)
        table = TableAnswer(q, "search", f"{q.objective} {q.target.dotted}", [], [])
        table.evaluated = sum(blk[3] for blk in blocks)
        table.columns = [(q.target.dotted, node.dim if node else DIMENSIONLESS, node.unit if node else None),
                         ("eliminated by", "text", None)]
        # a plotted axis that is the objective itself is its column, not a copy of it
        own = [k for k, p in enumerate(plot_axes) if p.dotted != q.target.dotted]
        table.columns += [(plot_axes[k].dotted, *self._dim_of(q.subject, plot_axes[k])) for k in own]
        table.plot_columns = tuple(2 + own.index(k) if k in own else 0 for k in range(len(plot_axes)))

        def axis_value(b: int, i: int) -> list[float]:
            return [float(e[i]) for e in blocks[b][4]]

        def extra(b: int, i: int) -> list[float]:
            return [axis_value(b, i)[k] for k in own]

        front: list[tuple[int, int]] = []
        if len(plot_axes) == 2 and feasible:
            points = [(axis_value(b, i)[0], axis_value(b, i)[1], b, i) for _, b, i in feasible]
            front = [(points[k][2], points[k][3]) for k in pareto_front([(x, y) for x, y, _, _ in points])]
        shown = [(b, i) for _, b, i in ranked]
        shown += [bi for bi in front if bi not in shown]  # the whole Pareto front is listed
        table.rows = [(label(b, i), [float(blocks[b][1][i]), "", *extra(b, i)]) for b, i in shown]
        table.rows += [(label(b, i), [float(blocks[b][1][i]), reasons[int(blocks[b][2][i])], *extra(b, i)]) for b, i in rejected]
        table.best = 0 if ranked else None
        table.pareto = [shown.index(bi) for bi in front]  # indices into rows
        axis_names = [t[1] for t, _ in static_axes] + [n.split(".", 1)[1] for n, _ in numeric_axes]
        table.axes = axis_names
        table.feasible = len(feasible)
        table.objective_node = node_id if node_id in self.base.values else ""
        statics = self.base.elaborated.statics
        table.declared = [(_static_label(statics.get(f"{t[0]}.{t[1]}")), "") for t, _ in static_axes]
        table.declared += [("", n) if n in self.base.values else ("", "") for n, _ in numeric_axes]
        if ranked:
            table.best_setting = ", ".join(f"{n} = {v}" for n, v in zip(axis_names, parts(*shown[0])))
        table.notes.append(f"{table.evaluated:,} configurations over {', '.join(axis_names)}; {len(feasible):,} meet the constraints")
        if front:
            table.notes.append("Pareto front (" + ", ".join(p.dotted for p in plot_axes) + "): "
                               + "; ".join(label(b, i) for b, i in front[:12]))
        return table

    def _dim_of(self, subject: ast.Path, p: ast.Path) -> tuple[ir.Type, str | None]:
        node = self.nodes.get(".".join(s.name for s in subject.steps + p.steps))
        return (node.dim, node.unit) if node is not None else (DIMENSIONLESS, None)

    # ---- sensitivity ----------------------------------------------------------------------
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

        from .vector import evaluate_many

        inputs = sorted({n for t in targets for n in _inputs_of(el, t.node)
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
        valid = self._valid_points(vals, points)
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
                if abs(up - down) > 0.5 * max(abs(up), abs(down)) + 1e-9:
                    continue  # a step (ceil, a threshold) at this point: no meaningful elasticity
                e = (up + down) / (math.log(1 + h) - math.log(1 - h))
                if abs(e) > 1e-6:
                    entries.append((n, e))
            # largest first, as shown (3 digits): equal elasticities (DAU, peak factor, requests
            # per user all scale the traffic) keep the inputs' order, not float noise's
            entries.sort(key=lambda ne: -float(f"{abs(ne[1]):.3g}"))
            out.append(Sensitivity(t.node, t.dim, entries))
        return out


# ---- exact probing of one unknown ---------------------------------------------------------


    def _valid_points(self, vals: dict[str, Any], n: int, lowered: Lowered | None = None) -> Any:
        """Which of n vectorised points keep every requirement of the plan's kinds."""
        import numpy as np

        from .vector import evaluate as evaluate_vector

        lowered = lowered or self.base
        env = {**lowered.values, **vals}
        valid = np.ones(n, dtype=bool)
        with np.errstate(all="ignore"):
            for r in lowered.elaborated.requirements:
                try:
                    holds = np.asarray(evaluate_vector(r.expr, env))
                except (ArithmeticError, TypeError, ValueError, KeyError):
                    continue  # not evaluable on the grid: the exact plan checked it already
                valid &= np.broadcast_to(holds.astype(bool), (n,))
        return valid


class _Probe:
    """Evaluates the plan exactly with one input replaced, for bisection and brackets.

    A value of the unknown that breaks one of the plan's requirements (`require` in the kinds: a
    utilisation above 1, a burst the replicas cannot absorb) is outside the question's domain:
    there every constraint counts as not holding and every value as undefined, so the solver
    never answers with a plan the compiler would reject."""

    def __init__(self, lowered: Lowered, unknown: str, integer: bool) -> None:
        self.lowered = lowered
        self.unknown = unknown
        self.integer = integer
        self.iterations = 0
        self.samples = 0
        self.high_seen: Any = 0
        self.bracket: tuple[float, float] | None = None
        self.el = lowered.elaborated
        self.downstream = ir.downstream(self.el, unknown)
        self.requirements = [r.expr for r in self.el.requirements if set(ir.refs(r.expr)) & self.downstream]

    def values_at(self, x: Any, exprs: list[ir.Expr], enforce: bool = True) -> dict[str, Any] | None:
        """Exact values with the unknown at x — only of the nodes `exprs` read; None outside the
        domain (unless `enforce` is off) or where a value is undefined."""
        from .vector import needed

        requirements = self.requirements if enforce else []
        wanted = needed(self.el, [*exprs, *requirements]) & self.downstream
        values = dict(self.lowered.values)
        values[self.unknown] = x
        trials = ir.all_trial_nodes(self.el)  # evaluated by their search
        try:
            for node_id in self.el.order:
                if node_id in wanted and node_id != self.unknown and node_id not in trials:
                    values[node_id] = evaluate_node(self.el, node_id, values)
            if not all(evaluate(r, values) for r in requirements):
                return None
        except EvalError:
            return None
        return values

    def holds(self, c: ir.Expr, x: Any) -> bool:
        return bool(self.value(c, x))  # an undefined point does not satisfy the constraint

    def value(self, e: ir.Expr, x: Any, enforce: bool = True) -> Any:
        values = self.values_at(x, [e], enforce)
        if values is None:
            return None
        try:
            return evaluate(e, values)
        except EvalError:
            return None

    def sides(self, c: ir.Expr, x: Any) -> tuple[Any, Any]:
        if isinstance(c, ir.Op) and len(c.args) == 2 and c.op in ("<", "<=", ">", ">=", "=="):
            return self.value(c.args[0], x), self.value(c.args[1], x)
        return None, None

    def lowest(self) -> Any:
        return Fraction(1) if self.integer else Fraction(1, 10**6) * max(Fraction(self.lowered.values[self.unknown]), Fraction(1))

    def many(self, e: ir.Expr, xs: list[float], dtype: type) -> Any:
        """An expression at many points in one vectorised pass (float64, for bracketing)."""
        import numpy as np

        from .vector import evaluate as vec_eval
        from .vector import evaluate_many, needed

        self.samples += len(xs)
        values = evaluate_many(self.el, self.lowered.values, {self.unknown: np.array(xs, dtype=float)},
                               needed(self.el, [e, *self.requirements]) | {self.unknown})
        out: Any = np.broadcast_to(np.asarray(vec_eval(e, values), dtype=dtype), (len(xs),))
        allowed = np.ones(len(xs), dtype=bool)
        for r in self.requirements:
            allowed &= np.broadcast_to(np.asarray(vec_eval(r, values), dtype=bool), (len(xs),))
        return np.where(allowed, out, False if dtype is bool else np.nan)

    def defined_from(self, constraints: list[ir.Expr], lo: Any) -> Any:
        """The smallest value on the doubling grid from `lo` where every constraint can be evaluated
        (a utilisation of 10⁻⁶ asks for more servers than the queueing model takes): below it the
        question has no answer to give, rather than a violated constraint."""
        import numpy as np

        from .vector import evaluate_many, needed

        grid = [float(lo) * 2.0**k for k in range(MAX_DOUBLINGS)]
        reads = needed(self.el, [*constraints, *self.requirements])
        wanted = reads & self.downstream
        values = evaluate_many(self.el, self.lowered.values, {self.unknown: np.array(grid)}, reads | {self.unknown})
        ok = np.array(self.allowed_many(grid), dtype=bool)
        for node_id in wanted:  # every quantity the exact evaluator would compute must have a value
            if self.el.nodes[node_id].dim != ir.BOOL:
                ok &= np.isfinite(np.broadcast_to(np.asarray(values[node_id], dtype=float), (len(grid),)))
        if ok[0] or not ok.any():
            return lo
        first = Fraction(grid[int(np.argmax(ok))])
        return Fraction(math.ceil(first)) if self.integer else first

    def allowed(self, x: Any) -> bool:
        """Whether x keeps every requirement of the plan (exactly)."""
        return self.values_at(x, []) is not None

    def allowed_many(self, xs: list[float]) -> list[bool]:
        """Whether each value keeps every requirement of the plan (vectorised)."""
        if not self.requirements:
            return [True] * len(xs)
        return self.holds_many(ir.Lit(Fraction(1), ir.BOOL, _span(self.requirements[0]), "true"), xs)

    def domain_limit(self, lo: Any) -> Limit | None:
        """Where the plan's requirements stop admitting larger values, as a limit on the requirement
        that fails first; None when they do not bound the unknown."""
        if not self.requirements:
            return None
        every = self.requirements[0]
        for r in self.requirements[1:]:
            every = ir.Op("and", (every, r), ir.BOOL, _span(r))
        whole = self.limit_up(every, lo, domain=True)
        if whole.value is None or whole.beyond is None:
            return None
        failing = next((r for r in self.requirements if self.value(r, whole.beyond, enforce=False) is False),
                       self.requirements[0])
        return Limit(failing, whole.value, self.sides(failing, whole.value), beyond=whole.beyond, requirement=True)

    def holds_many(self, c: ir.Expr, xs: list[float]) -> list[bool]:
        return [bool(v) for v in self.many(c, xs, bool)]

    def narrow(self, inside: Callable[[list[float]], list[bool]], good: float, bad: float,
               done: Callable[[float, float], bool], c: ir.Expr | None = None) -> tuple[float, float]:
        """Shrink a bracket (`inside` holds at `good`, not at `bad`) 64-fold per vectorised pass of
        65 evenly spaced points, until `done`; with `c`, a point inside past one outside means the
        constraint is not monotone."""
        for _ in range(12):
            if done(good, bad):
                break
            inner = [good + (bad - good) * k / 64 for k in range(65)]
            ok = inside(inner)
            j = ok.index(False) if False in ok else 64
            if c is not None and any(ok[j:]):
                raise_nonmonotone(c)
            good, bad = (inner[j - 1] if j > 0 else good), inner[j]
        return good, bad

    def limit_up(self, c: ir.Expr, lo: Any, domain: bool = False) -> Limit:
        """The largest x ≥ lo where c holds (c holds at lo): bracketed on a vectorised geometric grid
        (which also checks monotonicity), narrowed on linear grids, then exact bisection. A constraint
        monotone over all values gets its own limit even past the plan's domain (the domain's end is
        a limit of its own, `domain_limit`); one that is not is searched within the domain only.
        `domain=True` searches without that distinction."""
        if not domain and self.requirements:
            # c's own limit, as if the plan had no requirements ("memory would allow 671,737 tokens"),
            # when c is monotone over all values; else c's limit within the domain
            saved, self.requirements = self.requirements, []
            try:
                return self.limit_up(c, lo, domain=True)
            except NonMonotone:
                pass
            finally:
                self.requirements = saved
        grid = [float(lo) * 2.0**k for k in range(MAX_DOUBLINGS)]
        ok = self.holds_many(c, grid)  # False outside the domain too
        end = len(grid)
        if not domain and self.requirements:  # monotonicity matters only up to the end of the domain
            allowed = self.allowed_many(grid)
            end = allowed.index(False) if False in allowed else len(grid)
        if all(ok):
            self.high_seen = max(self.high_seen, Fraction(grid[-1]))
            return Limit(c, None)
        first_bad = ok.index(False)
        if any(ok[first_bad:end]):
            raise_nonmonotone(c)
        high = Fraction(grid[first_bad])
        close = (lambda g, b: b - g <= 64) if self.integer else (lambda g, b: b - g <= abs(g) * LIMIT_TOLERANCE)
        g, b = self.narrow(lambda xs: self.holds_many(c, xs), grid[first_bad - 1] if first_bad else float(lo),
                           grid[first_bad], close, c)
        good, bad = Fraction(g), Fraction(b)
        if self.integer:
            good, bad = Fraction(math.floor(good)), Fraction(math.ceil(bad))
        self.high_seen = max(self.high_seen, high)
        while good > lo and not self.holds(c, good):  # float bracketing is approximate: step back exactly
            good, bad = max(Fraction(lo), good - max(bad - good, Fraction(1))), good
        while (bad - good > 1) if self.integer else (bad - good > abs(good) * Fraction(LIMIT_TOLERANCE)):
            mid = Fraction((good + bad) // 2) if self.integer else (good + bad) / 2
            self.iterations += 1
            if self.holds(c, mid):
                good = mid
            else:
                bad = mid
        if not domain and self.requirements and self.value(c, bad, enforce=False) is True:
            return Limit(c, None)  # c still holds where the domain ends: it does not bound the unknown
        return Limit(c, good, self.sides(c, good), beyond=bad)

    def root(self, diff: ir.Expr) -> float | None:
        """Where `diff` changes sign nearest the unknown's value: a vectorised geometric grid over
        2^±40 of it, linear passes down to 1e-12 relative, then exact bisection."""
        import numpy as np

        x0 = max(float(self.lowered.values[self.unknown]), 1e-9)
        xs = [x0 * 2.0**k for k in range(-40, 41)]
        ys = self.many(diff, xs, float)
        s0 = np.sign(ys[40])
        if not np.isfinite(ys[40]):
            return None
        if s0 == 0:
            return x0
        crossings = [k for k in range(81) if np.isfinite(ys[k]) and np.sign(ys[k]) != s0]
        if not crossings:
            return None
        k = min(crossings, key=lambda i: abs(i - 40))
        near = k + 1 if k < 40 else k - 1  # the neighbour towards x0, still on x0's side

        def same_side(pts: Any) -> list[bool]:
            return [bool(np.isfinite(v) and np.sign(v) == s0) for v in self.many(diff, pts, float)]

        a, b = self.narrow(same_side, xs[near], xs[k], lambda g, h: abs(h - g) <= ROOT_TOLERANCE * max(abs(g), 1e-300))

        def f(x: float) -> float | None:
            v = self.value(diff, Fraction(x))
            return None if v is None else float(v)

        return self._bisect(f, *sorted((a, b)))

    def _bisect(self, f: Callable[[float], float | None], a: float, b: float) -> float:
        fa = f(a)
        self.bracket = (a, b)
        for _ in range(200):
            if b - a <= ROOT_TOLERANCE * max(abs(a), 1):
                break
            mid = (a + b) / 2
            self.iterations += 1
            fm = f(mid)
            if fm is None or fa is None:
                break
            if (fm > 0) == (fa > 0):
                a, fa = mid, fm
            else:
                b = mid
        return (a + b) / 2


class NonMonotone(Exception):
    pass


def raise_nonmonotone(c: ir.Expr) -> None:
    raise NonMonotone(_span(c).text)


# ---- helpers ------------------------------------------------------------------------------


def _span(e: ir.Expr) -> Any:
    return e.span


def _path_expr(path: ast.Path) -> ast.Expr:
    expr: ast.Expr = ast.Name(path.steps[0].span, path.steps[0].name)
    for step in path.steps[1:]:
        expr = ast.Attribute(step.span, expr, step.name, step.span)
    return expr


def _is_integer(node: ir.Node, value: Any) -> bool:
    """Fields declared `integer`, and counted quantities (plain counts, tokens, requests,
    devices) that hold a whole number, are solved over integers."""
    if node.integral:
        return True
    dim = node.dim
    if not isinstance(dim, Dim) or not (isinstance(value, Fraction) and value.denominator == 1):
        return False
    from .semantics.units import BASES

    exponents = {b: dim.exponent(b) for b in BASES}
    nonzero = {b: e for b, e in exponents.items() if e != 0}
    return not nonzero or (len(nonzero) == 1 and next(iter(nonzero)) in COUNTING_BASES and next(iter(nonzero.values())) == 1)


def _within(inner: Any, outer: Any) -> bool:
    """One span lies inside another (same file)."""
    return bool(inner.file == outer.file and outer.start <= inner.start and inner.end <= outer.end)


def _depends(lowered: Lowered, e: ir.Expr, unknown: str) -> bool:
    refs = ir.refs(e)
    seen: set[str] = set()
    while refs:
        r = refs.pop()
        if r == unknown:
            return True
        if r in seen or r not in lowered.elaborated.nodes:
            continue
        seen.add(r)
        refs.extend(lowered.elaborated.nodes[r].deps)
    return False




def _inputs_of(el: ir.Elaborated, node_id: str) -> set[str]:
    out, stack, seen = set(), [node_id], set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        node = el.nodes[n]
        if node.is_input:
            out.add(n)
        stack.extend(node.deps)
    return out


def _candidates(lo: Any, hi: Any, integer: bool) -> list[Any]:
    lo_f, hi_f = float(lo), float(hi)
    if integer and hi_f - lo_f <= 400:
        return [Fraction(x) for x in range(int(lo_f), int(hi_f) + 1)]
    pts = {lo_f, hi_f}
    if lo_f > 0:
        ratio = (hi_f / lo_f) ** (1 / 64)
        pts |= {lo_f * ratio**k for k in range(65)}
    out = sorted({Fraction(math.floor(p)) if integer else Fraction(p) for p in pts if lo_f <= p <= hi_f})
    return out


def _expr_key(e: ast.Expr) -> Any:
    """What an override expression says, independent of where it is written."""
    if isinstance(e, ast.Number):
        return ("number", e.value, e.units)
    if isinstance(e, ast.Name):
        return ("name", e.id)
    return ("text", " ".join(e.span.text.split()))


def _static_label(key: str | None) -> str:
    """The name a static choice is written with: `fp8` for `dtype.fp8`, `h100_sxm` for an instance."""
    if key is None:
        return ""
    return key.removeprefix("instance ").rsplit(".", 1)[-1]


def _label(e: ast.Expr) -> str:
    if isinstance(e, ast.Number) and e.unit_span is None:
        return e.text + ("" if not e.units else " " + " ".join(e.units))
    return " ".join(e.span.text.split())


def _range_size(lo: float, hi: float, step: str) -> int:
    """How many points `_range_points` gives, without building them (ends already checked:
    finite, lo <= hi, lo > 0 for a log step)."""
    if step in ("log2", "log10"):
        base = 2 if step == "log2" else 10
        return math.floor((math.log(hi) - math.log(lo)) / math.log(base) + 1e-9) + 1
    if lo.is_integer() and hi.is_integer() and 0 <= hi - lo <= 10_000:
        return int(hi - lo) + 1
    return 17


def _range_points(lo: float, hi: float, step: str, whole: bool = False) -> list[float]:
    """The points of a range; `whole`: the ends are whole, and so is every point (17 evenly
    spaced whole numbers when the range holds too many to list)."""
    if whole and step == "linear" and hi - lo > 10_000:
        return sorted({float(round(lo + (hi - lo) * k / 16)) for k in range(17)})
    if step in ("log2", "log10"):
        assert lo > 0, "a log-stepped range starts above zero (checked by range_of)"
        factor = 2 if step == "log2" else 10
        out, x = [], lo
        while x <= hi * (1 + 1e-12):
            out.append(x)
            x *= factor
        return out
    if float(lo).is_integer() and float(hi).is_integer() and 0 <= hi - lo <= 10_000:
        return [float(x) for x in range(int(lo), int(hi) + 1)]  # every whole number in the range
    n = 17
    return [lo + (hi - lo) * k / (n - 1) for k in range(n)]


def _finite_literal(e: ast.Expr, lowered: Lowered) -> bool:
    try:
        return math.isfinite(float(_literal_value(e, lowered)))
    except Exception:
        return False


def _plain(x: Any) -> Any:
    """A numpy scalar as the Python value a table row holds (bool or float)."""
    return bool(x) if getattr(getattr(x, "dtype", None), "kind", "") == "b" else float(x)


def _number_like(template: ast.Expr, value: float, dim: Any) -> ast.Expr:
    """A literal holding `value` in base units (written with the canonical unit of `dim`)."""
    text = repr(float(value)) if not float(value).is_integer() else str(int(value))
    units = () if dim == DIMENSIONLESS else (str(dim),)
    return ast.Number(template.span, text, Fraction(text), units, None)


def _is_neg_number(e: ast.Expr) -> bool:
    return isinstance(e, ast.Unary) and e.op == "-" and isinstance(e.operand, ast.Number)


def _literal_value(e: ast.Expr, lowered: Lowered) -> Any:
    from .semantics.units import parse_unit

    if isinstance(e, ast.Number):
        scale, _ = parse_unit(e.units)
        return e.value * scale
    assert isinstance(e, ast.Unary) and isinstance(e.operand, ast.Number)
    return -_literal_value(e.operand, lowered)


def _num(v: Any) -> str:
    try:
        return f"{float(v):.4g}"
    except (TypeError, ValueError):
        return str(v)


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats in both coordinates (both minimised)."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))
    front, best = [], math.inf
    for i in order:
        if points[i][1] < best:
            front.append(i)
            best = points[i][1]
    return front


def _text(e: ir.Expr) -> str:
    """An expression as the plan wrote it."""
    return " ".join(e.span.text.split())
