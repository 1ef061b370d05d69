"""Lower: typed nodes → exact values, and → sympy expressions for the questions that need algebra.

Contract
- `lower(elaborated, sink) -> Lowered` evaluates every node in topological order with the exact
  evaluator (`exact.py`): rationals (`Fraction`) stay exact through `+ - * /`, integer powers,
  `min`/`max`/`ceil`/`floor`; `sqrt`, `log`, `exp` and fractional powers give floats (except
  where the answer is exact: a perfect square's root, log 1 = 0, exp 0 = 1). A division
  by zero, the log of a non-positive number, the square root of a negative, a value beyond float
  range, a power closer to zero than 1e-400 (`1e-400 ^ 2`: exact values stay exact below
  the smallest float, but not at any size), a float divided by a rational
  too small for a float (`sqrt(2) / 1e-400`) — each is a diagnostic here on the operation that
  caused it (the evaluator's `EvalError`), never an exception.
- The symbolic form is sympy: every node has a `Symbol` with a generated safe name (`q0`, `q1`,
  ...; never user text) and `local(node)`, its expression over the symbols of the nodes it
  references, built from the IR with sympy constructors (no `sympify`, `parse_expr` or `eval`).
  `full(node)` substitutes the chain down to input symbols. They are built on first use (sympy
  costs more to import than the rest of a compile), by the solver and the tests; a test checks
  for every node of every example that the sympy form evaluates to the exact value.
- Requirements (`require` in kinds) are evaluated after the nodes: a failed one is a diagnostic
  (the plan is physically impossible) and explains the evaluation errors downstream of it, which
  are then not reported. Checks are results (pass/fail with both sides), not errors.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from . import diagnostics as dx
from .builtins import FUNCTIONS, sympy_function
from .exact import COMPARISONS, EvalError, Number, Value, evaluate, evaluate_node, is_whole
from .semantics import ir
from .semantics.units import DIMENSIONLESS, Dim, UnitError, format_quantity, unit_scale
from .source import Span

if TYPE_CHECKING:
    import sympy as sp

@dataclass(frozen=True)
class Outcome:
    """A check or requirement: the comparison, both sides' values, and whether it holds."""

    expr: ir.Expr
    holds: bool
    left: Number | None
    right: Number | None
    label: str | None


@dataclass(frozen=True)
class Stated:
    """A finding whose condition holds, with the value of each hole (parallel to its holes)."""

    finding: ir.Finding
    values: tuple[Value, ...]


@dataclass(frozen=True)
class Offered:
    """A lever that applies to the plan, with the values of the holes of what it takes and of its gate."""

    lever: ir.Lever
    takes: tuple[Value, ...]
    gate: tuple[Value, ...]


@dataclass
class Lowered:
    elaborated: ir.Elaborated
    values: dict[str, Value] = field(default_factory=dict)
    checks: list[Outcome] = field(default_factory=list)
    summary: list[Value] = field(default_factory=list)
    findings: list[Stated] = field(default_factory=list)  # the findings that hold, with their holes' values
    levers: list[Offered] = field(default_factory=list)  # the levers that apply to this plan
    _symbols: dict[str, Any] = field(default_factory=dict)
    _local: dict[str, Any] = field(default_factory=dict)
    _full: dict[str, Any] = field(default_factory=dict)

    @property
    def symbols(self) -> dict[str, sp.Symbol]:
        """One sympy symbol per node, named `q<index>` in topological order."""
        if not self._symbols:
            import sympy as sp

            for i, node_id in enumerate(self.elaborated.order):
                self._symbols[node_id] = sp.Symbol(f"q{i}", real=True)
        return self._symbols

    def local(self, node_id: str) -> sp.Expr:
        """The node's sympy expression over the symbols of the nodes it references."""
        if node_id not in self._local:
            self._local[node_id] = to_sympy(self.elaborated.nodes[node_id].expr, self.symbols)
        return self._local[node_id]

    def full(self, node_id: str) -> sp.Expr:
        """The node's sympy expression over input symbols only."""
        if node_id not in self._full:
            node = self.elaborated.nodes[node_id]
            if node.is_input or ir.is_search(node.expr):  # a search has no closed form: it stands as its own symbol
                self._full[node_id] = self.symbols[node_id]
            else:
                subs = {self.symbols[d]: self.full(d) for d in node.deps}
                self._full[node_id] = self.local(node_id).xreplace(subs)
        return self._full[node_id]


# ---- the symbolic form --------------------------------------------------------------------


def to_sympy(expr: ir.Expr, symbols: dict[str, Any]) -> Any:
    """Build the sympy form of an IR expression (references become their nodes' symbols)."""
    if isinstance(expr, ir.Lit):
        return sympy_literal(expr.value, expr.dim == ir.BOOL)
    if isinstance(expr, ir.Ref):
        return symbols[expr.node]
    return sympy_op(expr.op, [to_sympy(x, symbols) for x in expr.args])


def sympy_literal(value: Any, boolean: bool = False) -> Any:
    """An exact value (Fraction, float or bool) as a sympy atom."""
    import sympy as sp

    if boolean or isinstance(value, bool):
        return sp.true if value else sp.false
    if isinstance(value, float):
        return sp.Float(value)
    value = Fraction(value)
    return sp.Rational(value.numerator, value.denominator)


def sympy_op(op: str, a: list[Any]) -> Any:
    """One IR operation applied to sympy operands."""
    import sympy as sp

    table: dict[str, Callable[[], Any]] = {
        "+": lambda: sp.Add(a[0], a[1]), "-": lambda: sp.Add(a[0], sp.Mul(-1, a[1])),
        "*": lambda: sp.Mul(a[0], a[1]), "/": lambda: sp.Mul(a[0], sp.Pow(a[1], -1)),
        "^": lambda: sp.Pow(a[0], a[1]), "neg": lambda: sp.Mul(-1, a[0]),
        "<": lambda: sp.StrictLessThan(a[0], a[1]), "<=": lambda: sp.LessThan(a[0], a[1]),
        ">": lambda: sp.StrictGreaterThan(a[0], a[1]), ">=": lambda: sp.GreaterThan(a[0], a[1]),
        "==": lambda: sp.Eq(a[0], a[1]), "!=": lambda: sp.Ne(a[0], a[1]),
        "and": lambda: sp.And(a[0], a[1]), "or": lambda: sp.Or(a[0], a[1]), "not": lambda: sp.Not(a[0]),
        "if": lambda: sp.Piecewise((a[1], a[0]), (a[2], True)),
        # a search has no closed form: its value stands as an opaque function of its range
        "largest": lambda: sp.Function("largest")(a[1], a[2], a[4]),
    }
    function = FUNCTIONS.get(op)
    if function is not None:
        return (getattr(sp, function.sympy) if function.sympy else sympy_function(op))(*a)
    return table[op]()


def lower(elaborated: ir.Elaborated, sink: dx.Sink, reuse: Lowered | None = None, remedies: bool = True,
          only: set[str] | None = None) -> Lowered:
    """`reuse`: an evaluated plan this one is a variant of; a node with the same formula over
    inputs whose values are unchanged keeps its value instead of being evaluated again; a node
    evaluated again whose value comes out the same, of the same type, counts as unchanged for
    what reads it (about a fifth of the levers' evaluations cut off that way). `remedies`: an infeasible
    plan's diagnostics search for the inputs that would fix it (`remedy.py`); a variant whose
    diagnostics only say why it is not a valid plan (a lever, a question's variant) skips that.
    `only`: the nodes a question reads of this variant (with its requirements' and advisories'):
    nothing else is evaluated, and the checks, summary, findings and levers are left out."""
    out = Lowered(elaborated)
    failed: set[str] = set()
    changed: set[str] = set()
    problems: list[tuple[ir.Node, EvalError]] = []
    trials = ir.all_trial_nodes(elaborated)  # evaluated by their search, at each value it tries
    answered: dict[str, str] = {}  # the plan's nodes a search's trials hold at its answer (`ir.search_aliases`)
    for node_id in elaborated.order:
        if only is not None and node_id not in only:
            continue
        if node_id in trials:
            changed.add(node_id)
            continue
        node = elaborated.nodes[node_id]
        if not failed.isdisjoint(node.deps) or (ir.is_search(node.expr) and any(
                d in failed or d not in out.values for d in ir.search_inputs(elaborated, node_id))):
            failed.add(node_id)
            continue
        old = reuse.elaborated.nodes.get(node_id) if reuse is not None else None
        if (old is not None and node_id in reuse.values and changed.isdisjoint(node.deps)  # type: ignore[union-attr]
                and (old is node or old.expr == node.expr)):
            out.values[node_id] = reuse.values[node_id]  # type: ignore[union-attr]
            continue
        if node_id in answered:  # the search left its trials at the answer: the same formula, the same value
            out.values[node_id] = value = out.values[answered[node_id]]
        else:
            try:
                out.values[node_id] = value = evaluate_node(elaborated, node_id, out.values)
                if ir.is_search(node.expr):
                    answered.update((p, t) for p, t in ir.search_aliases(elaborated, node_id).items()
                                    if t in out.values)
            except EvalError as exc:
                changed.add(node_id)
                failed.add(node_id)
                problems.append((node, exc))
                continue
        if old is None or node_id not in reuse.values or not _same_value(value, reuse.values[node_id]):  # type: ignore[union-attr]
            changed.add(node_id)  # what reads it is evaluated again; an unchanged value cuts that off
    # An impossible input (zero users) explains the divisions by zero downstream: report the
    # requirement, and the evaluation problems only when no requirement failed.
    _advisories(out, failed, sink)
    if _whole_numbers(out, sink) | _requirements(out, failed, sink, remedies):
        return out
    for node, problem in problems:
        sink.add(_diagnostic(node.id, node.decl_span, problem, elaborated, out if remedies else None))
    if failed or only is not None:
        return out
    for check in elaborated.checks:
        try:
            out.checks.append(_outcome(check.expr, out, check.label))
        except EvalError as exc:
            sink.add(_diagnostic(" ".join(check.expr.span.text.split()), check.span, exc))
    for expr in elaborated.summary:
        try:
            out.summary.append(evaluate(expr, out.values))
        except EvalError as exc:
            sink.add(_diagnostic(" ".join(expr.span.text.split()), expr.span, exc))
    out.findings = _findings(elaborated, out.values)
    out.levers = _levers(elaborated, out.values)
    return out


def _same_value(new: Value, old: Value) -> bool:
    """The same value of the same type: what is computed from it comes out the same bit for bit
    (a rational 1 and a float 1.0 are equal but lead to different arithmetic downstream)."""
    return type(new) is type(old) and new == old


def _holes(parts: tuple[str | ir.Hole, ...], values: dict[str, Value]) -> tuple[Value, ...]:
    """The values of a sentence's holes, in order."""
    return tuple(evaluate(p.expr, values) for p in parts if isinstance(p, ir.Hole))


def _levers(elaborated: ir.Elaborated, values: dict[str, Value]) -> list[Offered]:
    """The levers whose condition holds (or that have none)."""
    offered = []
    for lever in elaborated.levers:
        try:
            if lever.cond is None or evaluate(lever.cond, values):
                offered.append(Offered(lever, _holes(lever.takes, values), _holes(lever.gate, values)))
        except EvalError:
            continue
    return offered


def _findings(elaborated: ir.Elaborated, values: dict[str, Value]) -> list[Stated]:
    """The findings whose condition holds. One that cannot be evaluated (a hole with no value
    for this plan) is a statement the document does not make, not an error."""
    stated = []
    for f in elaborated.findings:
        try:
            if evaluate(f.expr, values):
                stated.append(Stated(f, _holes(f.parts, values)))
        except EvalError:
            continue
    return stated


_HELP = {
    "infeasible": "the condition cannot be met anywhere in the range: relax what it asks (an SLO, a memory limit) or widen the range",
    "division by zero": "check the inputs this divisor is computed from; none may be zero",
    "overflow": "check the magnitudes and units of the inputs",
    "not a real number": "check the signs of the inputs",
    "underflow": "check the magnitudes and units of the inputs",
}


def _diagnostic(name: str, declared: Span, exc: EvalError, elaborated: ir.Elaborated | None = None,
                lowered: Lowered | None = None) -> dx.Diagnostic:
    if exc.kind == "infeasible":
        var = getattr(exc, "var", "x")
        secondary = [dx.Label(declared, "while evaluating this")] if declared != exc.span else []
        search = elaborated.nodes.get(name) if elaborated is not None else None
        user = None
        if search is not None and elaborated is not None:
            # a value the user set that the condition reads within two steps (an SLO), else
            # the first line of theirs that sets something of the instance whose search it is
            user = (ir.set_inputs(elaborated.nodes, list(search.deps), depth=2)[0]
                    or ir.instance_line(elaborated.nodes, search.owner))
        notes = _failed_parts(exc, elaborated)
        fixes = _search_remedies(name, exc, lowered) if lowered is not None else []
        help = ("it has one with " + ", or ".join(fixes) + " (each alone, the others as they are)") if fixes else _HELP[exc.kind]
        if exc.span.file.is_stdlib and user is not None:  # the stdlib's search, at the user's line it rests on
            return dx.NO_FEASIBLE_VALUE.at(user, f"no `{var}` of `{name}` meets its condition with this", name=name,
                                           var=var, detail=exc.detail, help=help, notes=notes,
                                           secondary=[dx.Label(exc.span, "nothing in the range meets this"), *secondary])
        return dx.NO_FEASIBLE_VALUE.at(exc.span, "nothing in the range meets this", name=name, var=var, detail=exc.detail,
                                       secondary=secondary, help=help, notes=notes)
    code = {"division by zero": dx.DIVISION_BY_ZERO, "overflow": dx.OVERFLOW,
            "underflow": dx.UNDERFLOW}.get(exc.kind, dx.NOT_A_NUMBER)
    label = {"division by zero": "this is zero", "overflow": "too large", "underflow": "too small"}.get(exc.kind, exc.detail)
    secondary = [dx.Label(declared, "while evaluating this")] if declared != exc.span else []
    return code.at(exc.span, label, name=name, detail=exc.detail, secondary=secondary, help=_HELP[exc.kind])


def _search_remedies(name: str, exc: EvalError, lowered: Lowered) -> list[str]:
    """The inputs of the plan that would give a failed search an answer, from the first part of
    its condition that fails at the range's start (`remedy.remedies`)."""
    from .remedy import remedies

    failing = [part for part, holds, _, _ in getattr(exc, "parts", []) if holds is False]
    if not failing or name not in lowered.elaborated.nodes:
        return []
    return remedies(lowered, failing[0], search=name)


def _failed_parts(exc: EvalError, elaborated: ir.Elaborated | None) -> list[str]:
    """A search that fails at its range's start: each part of its condition that fails there,
    with both sides (`tpot <= tpot_slo`: 52.1 ms against 40 ms), or that has no value."""
    notes = []
    for part, holds, left, right in getattr(exc, "parts", []):
        text = " ".join(part.span.text.split())
        if holds is None:
            notes.append(f"`{text}` has no value there")
        elif left is not None and right is not None and isinstance(part, ir.Op) and elaborated is not None:
            unit = _written_unit(part.args, elaborated)
            dim = part.args[0].dim
            notes.append(f"`{text}` fails there: {_show(left, dim, unit)} against {_show(right, dim, unit)}")
        else:
            notes.append(f"`{text}` fails there")
    return notes


def _outcome(expr: ir.Expr, out: Lowered, label: str | None) -> Outcome:
    holds = bool(evaluate(expr, out.values))
    left = right = None
    if isinstance(expr, ir.Op) and expr.op in COMPARISONS:
        left, right = (evaluate(a, out.values) for a in expr.args)
    return Outcome(expr, holds, left, right, label)


def _whole_numbers(out: Lowered, sink: dx.Sink) -> bool:
    """E0409 at the plan's line that gives a quantity declared `integer` (a batch, a TP degree,
    a count of replicas) a value that is not a whole number; True if any did. Only values the
    plan writes are held to it: the stdlib binds the same fields to means (`batch =
    operating_batch`, the average running batch) in the variants it derives."""
    bad = False
    for node in out.elaborated.nodes.values():
        value = out.values.get(node.id)
        if (not node.integral or node.span.file.is_stdlib or value is None or isinstance(value, bool)
                or is_whole(value)):
            continue
        bad = True
        low = math.floor(value)
        counted = isinstance(node.dim, Dim) and node.dim != DIMENSIONLESS
        shown = _show(value, node.dim)
        sink.add(dx.NOT_WHOLE.at(
            node.span, f"this is {shown}", name=node.id, what=f" of `{node.dim}`" if counted else "", value=shown,
            secondary=[dx.Label(node.type_span, "declared a whole number here")] if node.type_span else [],
            help=f"round it to {_show(Fraction(low), node.dim)} or {_show(Fraction(low + 1), node.dim)}"))
    return bad


def _requirements(out: Lowered, failed: set[str], sink: dx.Sink, remedies: bool = True) -> bool:
    """Report every failed requirement whose inputs evaluated; True if any failed. One on the
    values of one thing (a utilisation above 100 %, a negative memory) is an invalid value
    (E0404); one on a combination of things (these weights on this accelerator, this TP for this
    model's heads) makes a well-formed plan infeasible (E0408), reported with the numbers of the
    comparison that fails and the inputs that would make it hold."""
    return _clauses(out.elaborated.requirements, out, failed, sink, dx.IMPOSSIBLE_VALUE, "this value",
                    "requirement failed", "required here", "change the value so that the requirement holds",
                    physics=dx.INFEASIBLE_PLAN, propose=remedies)


def _advisories(out: Lowered, failed: set[str], sink: dx.Sink) -> None:
    """A warning for every `advise` clause that does not hold (the plan is computed all the same)."""
    _clauses(out.elaborated.advisories, out, failed, sink, dx.ADVICE, "this choice", "advice", "advised here",
             "the plan is computed as written; change the value if this is not what you meant")


def _clauses(clauses: list[ir.Requirement], out: Lowered, failed: set[str], sink: dx.Sink, code: dx.Code,
             label: str, default: str, where: str, help: str, physics: dx.Code | None = None,
             propose: bool = True) -> bool:
    """A diagnostic at the user's line for every clause whose inputs evaluated and that does not
    hold, with both sides; True if any did not. With `physics`, a clause on derived quantities
    gets that code, the sides of the comparison inside it that fails, and the remedies."""
    any_failed = False
    for req in clauses:
        if any(ref in failed or ref not in out.values for ref in ir.refs(req.expr)):
            continue
        try:
            outcome = _outcome(req.expr, out, req.message)
        except EvalError:
            continue
        if outcome.holds:
            continue
        any_failed = True
        detail = f"`{' '.join(req.expr.span.text.split())}` does not hold"
        if outcome.left is not None and outcome.right is not None and isinstance(req.expr, ir.Op):
            dim = req.expr.args[0].dim
            unit = _written_unit(req.expr.args, out.elaborated)
            detail += f": {_show(outcome.left, dim, unit)} vs {_show(outcome.right, dim, unit)}"
        from .remedy import remedies, sides

        notes = [detail]
        found = sides(out, req.expr)
        if found is not None and found.comparison is not req.expr:
            (lt, lv), (rt, rv) = found.left, found.right
            notes.append(f"it fails at `{lt} {found.comparison.op} {rt}`: {lv} against {rv}")
        if found is not None and found.terms:
            notes.append("with " + ", ".join(f"`{n}` = {v}" for n, v in found.terms))
        nodes = out.elaborated.nodes
        owners = {nodes[n].owner for n in ir.upstream(out.elaborated, [req.expr]) if nodes[n].is_input}
        if physics is None or len(owners) < 2:  # a value of one thing out of its range: invalid input
            sink.add(code.at(req.blame, label, message=f"{req.message or default} in `{req.instance}`",
                             secondary=[dx.Label(req.span, where)], notes=notes, help=help))
            continue
        fixes = remedies(out, req.expr) if propose else []
        fix = ("it holds with " + ", or ".join(fixes) + " (each alone, the others as they are)") if fixes else \
            "no single input of the plan makes it hold: change the model, the accelerator or the precision"
        sink.add(physics.at(req.blame, "the plan cannot meet this", message=f"{req.message or default} in `{req.instance}`",
                            secondary=[dx.Label(req.span, where)], notes=notes, help=fix))
    return any_failed


def _show(value: Number, dim: ir.Type, unit: str | None = None) -> str:
    return format_quantity(float(value), dim, unit) if isinstance(dim, Dim) else str(value)


def _written_unit(sides: tuple[ir.Expr, ...], elaborated: ir.Elaborated) -> str | None:
    """The unit a comparison's sides are best shown in: the declared unit of a field it
    compares, else the unit its literal is written in, unless a base unit (`price >= 0 USD/h`
    shows USD/h, not USD/s); None lets the dimension choose."""
    for side in sides:
        if isinstance(side, ir.Ref) and side.node in elaborated.nodes and elaborated.nodes[side.node].unit:
            return elaborated.nodes[side.node].unit
    for side in sides:
        words = side.text.split()[1:] if isinstance(side, ir.Lit) else []
        if words and isinstance(side.dim, Dim):
            with contextlib.suppress(UnitError):
                scale, dim = unit_scale(" ".join(words))
                if dim == side.dim and scale != 1:  # a base unit (`0 B`) lets the dimension choose
                    return " ".join(words)
    return None
