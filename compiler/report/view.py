"""View models: everything a template shows, already formatted. Templates compute nothing.

Contract: `build_document(compilation, brief=False, levers=True) -> DocumentView` for a
compilation without errors (`brief`: the body only, the decision and the answers, without the
audit appendix; `levers=False`: the levers are not priced, so neither their table nor the
decision's sentence about the best of them is there — for `plan check` and `plan diff`, which
read neither).
Each quantity carries its formula (LaTeX, names as written or their declared symbols), the same
formula with values and units substituted, the result with a human unit (and the exact value
in base units when it is an integer), its source or the flag "assumption", and the plan line
that defined it. Order is the topological order of the node graph, so output is deterministic.
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from .. import __version__, exact
from ..exact import Value
from ..lower import Lowered, Outcome
from ..pipeline import Compilation
from ..semantics import ir
from ..semantics.lint import reads
from ..semantics.units import DIMENSIONLESS, Dim, format_number, format_quantity
from ..source import Span
from . import latex
from .answer_views import ChoiceNumbers, QuestionView, choice_numbers, choice_rows, question_view
from .decision import DecisionView, LeverView, build_decision, build_levers


@dataclass(frozen=True)
class QuantityView:
    id: str
    name: str
    owner: str
    description: str
    section: str
    is_input: bool
    value: float
    exact: str | None
    text: str  # human value with unit
    exact_text: str | None  # the exact base-unit value, when it says more than `text`
    dim: str
    lhs: str  # LaTeX: the quantity's symbol
    formula: str  # LaTeX: the right-hand side, as written
    substituted: str  # LaTeX: the rhs with values
    result: str  # LaTeX: the value
    source: str | None
    location: str
    overridden: bool
    inputs: tuple[str, ...]
    range: str = ""  # the interval over the plan's input ranges, with how it was found
    is_definition: bool = False  # a specification (a `spec` field, an enum attribute), not an assumption
    # where a sum goes: (term as written in LaTeX, its value, its share of the total) for every
    # term of a sum of three or more, largest first
    breakdown: tuple[tuple[str, str, str], ...] = ()
    # a quantity computed by a `where`: the fields the variant binds with their values there, and
    # the quantity of the variant whose "where it goes" the breakdown is
    where: tuple[str, ...] = ()
    breakdown_of: str = ""

    @property
    def shows_substituted(self) -> bool:
        """Whether a derivation prints the substituted line: not when it would repeat the formula
        (a formula of literals) or the result (a lookup such as `peak_flops[weights.compute]`)."""
        return self.substituted not in (self.formula, self.result)


@dataclass(frozen=True)
class SectionView:
    title: str
    anchor: str
    quantities: tuple[QuantityView, ...]
    # derived quantities that are zero, or a factor of one, for this plan (no experts, no pipeline,
    # no draft model): named, not derived, so that the derivations are the ones that matter
    omitted: tuple[str, ...] = ()


@dataclass(frozen=True)
class CheckView:
    label: str
    expression: str  # LaTeX as written
    substituted: str
    holds: bool
    left: str
    right: str
    margin: str
    location: str
    over_ranges: str = ""  # how much of the input ranges the check holds on


@dataclass(frozen=True)
class SummaryView:
    label: str
    text: str
    location: str
    range: str = ""
    value: float | None = None  # in base SI units; None for a true/false item
    dim: str = ""  # the dimension of `value`'s base unit (`devices`, `s`, `1`); empty for a true/false item


@dataclass(frozen=True)
class UncertaintyView:
    """Inputs given as ranges and how their intervals were carried to the results."""

    inputs: tuple[tuple[str, str, str], ...]  # (input, range, the midpoint the plan uses)
    method: str


@dataclass(frozen=True)
class SensitivityView:
    target: str
    entries: tuple[tuple[str, str], ...]  # (input, elasticity)


@dataclass(frozen=True)
class SensitivityMatrix:
    """The elasticities of every headline to the inputs that move one of them most: one row per
    input (largest effect first), one column per headline ("—": the input does not move it)."""

    targets: tuple[str, ...]
    rows: tuple[tuple[str, tuple[str, ...]], ...]


@dataclass
class DocumentView:
    title: str
    scope: str | None
    plan: str
    version: str
    summary: list[SummaryView] = field(default_factory=list)
    assumptions: list[QuantityView] = field(default_factory=list)
    specifications: list[QuantityView] = field(default_factory=list)  # inputs that are facts, not assumptions
    stated: list[QuantityView] = field(default_factory=list)  # the assumptions the plan itself states (the body lists them)
    sections: list[SectionView] = field(default_factory=list)
    checks: list[CheckView] = field(default_factory=list)
    questions: list[QuestionView] = field(default_factory=list)
    sensitivities: list[SensitivityView] = field(default_factory=list)
    sensitivity_matrix: SensitivityMatrix | None = None
    # what binds the headline: (quantity, max/min, branch in effect, its value, the other branches)
    bindings: tuple[tuple[str, str, str, str, str], ...] = ()
    # the same choices as numbers, for machines (report/machine.py): parallel to `bindings`
    binding_numbers: tuple[ChoiceNumbers, ...] = ()
    bindings_target: str = ""
    uncertainty: UncertaintyView | None = None
    source: str = ""  # the plan's text, shown in the appendix
    source_fence: str = "```"  # a Markdown fence longer than any run of backticks in it
    warnings: list[str] = field(default_factory=list)
    decision: DecisionView = field(default_factory=DecisionView)
    lever_columns: tuple[str, ...] = ()  # the numeric summary items the levers are priced on
    levers: tuple[LeverView, ...] = ()
    brief: bool = False  # the body only: no appendix (assumptions, derivations, checks in full, plan source)
    linked: frozenset[str] = frozenset()  # quantities whose derivation the document shows (numbers link there)

    @property
    def failed_checks(self) -> int:
        return sum(not c.holds for c in self.checks)


_BLOCK = re.compile(r"^(?:kind\s+(\w+)|[a-z_]\w*\s+(\w+)(?:\s*=\s*\w+)?\s*\{)", re.M)


def location(span: Span, field: str | None = None, owner: str = "") -> str:
    """`file:line` of a definition in the user's plan; in the stdlib, the block and field that
    define it (`<stdlib>/kinds/deployment.plan › deployment.step_time`), which a reader can search
    for and which does not move when a line is added above it."""
    if field and span.file.is_stdlib and "." in owner:  # an enumeration member's attribute
        return f"{span.file.path} › {owner}.{field}"
    if field and span.file.is_stdlib:
        starts, names = _blocks(span.file.text)
        k = bisect.bisect_right(starts, span.start) - 1
        if k >= 0:
            return f"{span.file.path} › {names[k]}.{field}"
    return f"{span.file.path}:{span.line}"


@functools.lru_cache(maxsize=64)
def _blocks(text: str) -> tuple[list[int], list[str]]:
    """Where each kind or instance block of a stdlib file starts, and its name."""
    found = [(m.start(), m.group(1) or m.group(2)) for m in _BLOCK.finditer(text)]
    return [start for start, _ in found], [name for _, name in found]


class _Builder:
    def __init__(self, lowered: Lowered, uncertainty: Any = None) -> None:
        self.lowered = lowered
        self.nodes = lowered.elaborated.nodes
        self.texts: dict[str, str] = {}
        self.uncertainty = uncertainty

    def range_text(self, interval: Any, dim: ir.Type, unit: str | None) -> str:
        """`1,072 – 3,136 devices (monotone)`: an interval from `uncertainty.py`."""
        if interval is None:
            return ""
        low, high = self.format(interval.low, dim, unit), self.format(interval.high, dim, unit)
        how = "monotone: from the corners" if interval.monotone else f"sampled on {self.uncertainty.points:,} points"
        return f"{low} – {high} ({how})"

    def node_range(self, node_id: str) -> str:
        u = self.uncertainty
        if u is None:
            return ""
        node = self.nodes[node_id]
        if node.interval is not None:
            low, high = (self.format(v, node.dim, node.unit) for v in node.interval)
            return f"{low} – {high}"  # given; the plan uses the midpoint
        if node_id in u.undefined:
            return f"undefined on {format_number(100 * u.undefined[node_id], 3)} % of the input ranges"
        return self.range_text(u.intervals.get(node_id), node.dim, node.unit)

    def value_text(self, node_id: str) -> str:
        if node_id not in self.texts:
            node = self.nodes[node_id]
            self.texts[node_id] = self.format(self.lowered.values[node_id], node.dim, node.unit)
        return self.texts[node_id]

    @staticmethod
    def format(value: Value, dim: ir.Type, unit: str | None = None) -> str:
        if not isinstance(dim, Dim):
            return "true" if value else "false"
        return format_quantity(float(value), dim, unit)

    def symbol(self, ref: ir.Ref) -> str:
        node = self.nodes[ref.node]
        return latex.symbol(node.symbol) if node.symbol else latex.name(ref.text)

    def formula_leaf(self, leaf: ir.Lit | ir.Ref) -> str:
        if isinstance(leaf, ir.Ref):
            return self.symbol(leaf)
        return _literal(leaf)

    def value_leaf(self, leaf: ir.Lit | ir.Ref) -> str:
        if isinstance(leaf, ir.Ref):
            return "\\text{" + latex.text(self.value_text(leaf.node)) + "}"
        return _literal(leaf)

    def quantity(self, node_id: str) -> QuantityView:
        node = self.nodes[node_id]
        value = self.lowered.values[node_id]
        lhs = latex.symbol(node.symbol) if node.symbol else latex.name(node.field)
        rhs = latex.to_latex(node.expr, self.formula_leaf)
        text = self.value_text(node_id)
        exact = str(value) if isinstance(value, Fraction) and _printable_exactly(value) else None
        return QuantityView(
            id=node_id, name=node.field, owner=node.owner, description=node.description or "",
            section=node.section or "Other quantities", is_input=node.is_input,
            value=float(value),
            exact=exact, text=text, exact_text=_exact_text(value, node.dim, text),
            dim=str(node.dim), lhs=lhs, formula=rhs,
            substituted=latex.to_latex(node.expr, self.value_leaf),
            result="\\text{" + latex.text(text) + "}",
            source=node.source, location=location(node.span, node.field, node.owner), overridden=node.overridden,
            inputs=node.deps, range=self.node_range(node_id), is_definition=node.is_definition,
            **{"breakdown": self.breakdown(node), **self.variant_view(node)},
        )

    def variant_view(self, node: ir.Node) -> dict[str, Any]:
        """For a quantity that is a `where` (its formula names a node of a variant): what the variant
        binds, and the first quantity of the variant (from the one named, downward) with a breakdown,
        other than a moment of the quantity (a time's variance in s², its third moment in s³): the
        shares of a variance are not where the time goes."""
        if not isinstance(node.expr, ir.Ref) or "@" not in self.nodes[node.expr.node].owner:
            return {}
        variant = self.nodes[node.expr.node].owner
        el = self.lowered.elaborated
        bound = tuple(f"{f} = {self.value_text(f'{variant}.{f}')}" for f in el.variants.get(variant, ())
                      if f"{variant}.{f}" in self.nodes)
        seen, queue = set(), [node.expr.node]
        while queue:
            n = queue.pop(0)
            if n in seen or not self.nodes[n].owner.startswith(variant):
                continue
            seen.add(n)
            moment = isinstance(node.dim, Dim) and not node.dim.is_dimensionless and self.nodes[n].dim in (node.dim ** 2, node.dim ** 3)
            rows = () if moment else self.breakdown(self.nodes[n])
            if rows and n != node.id:
                return {"where": bound, "breakdown": rows, "breakdown_of": n}
            queue.extend(self.nodes[n].deps)
        return {"where": bound}

    def breakdown(self, node: ir.Node) -> tuple[tuple[str, str, str], ...]:
        """The shares of a sum of three or more terms that are not all zero: where the time, the
        bytes or the money goes. Terms that are zero for this plan are left out."""
        terms = breakdown_terms(node, self.lowered.values)
        total = sum(v for _, v in terms)
        return tuple((latex.to_latex(t, self.formula_leaf), self.format(v, node.dim, node.unit),
                      f"{format_number(100 * v / total, 3)} %") for t, v in terms)

    def check(self, outcome: Outcome, check: ir.Check, index: int) -> CheckView:
        left = right = margin = ""
        expr = outcome.expr
        if isinstance(expr, ir.Op) and outcome.left is not None and outcome.right is not None:
            dim = expr.args[0].dim
            left, right = self.format(outcome.left, dim), self.format(outcome.right, dim)
            margin = self._margin(outcome, dim)
        return CheckView(
            label=outcome.label or check.span.text, expression=latex.to_latex(expr, self.formula_leaf),
            substituted=latex.to_latex(expr, self.value_leaf), holds=outcome.holds,
            left=left, right=right, margin=margin, location=location(check.span),
            over_ranges=self._over_ranges(index),
        )

    def _over_ranges(self, index: int) -> str:
        u = self.uncertainty
        if u is None or index >= len(u.checks):
            return ""
        share = u.checks[index]
        if share == 1:
            return "holds everywhere"
        if share == 0:
            return "fails everywhere"
        return f"holds on {format_number(100 * share, 3)} %"

    def _margin(self, outcome: Outcome, dim: ir.Type) -> str:
        assert isinstance(outcome.expr, ir.Op) and outcome.left is not None and outcome.right is not None
        op = outcome.expr.op
        if op not in ("<", "<=", ">", ">=") or not isinstance(dim, Dim):
            return ""
        lo, hi = (outcome.left, outcome.right) if op in ("<", "<=") else (outcome.right, outcome.left)
        slack = float(hi - lo)
        limit = float(outcome.right)  # the margin is relative to the limit the check states
        if limit == 0:
            return format_quantity(slack, dim)
        return f"{format_quantity(slack, dim)} ({format_number(100 * slack / abs(limit), 3)} %)"


def breakdown_terms(node: ir.Node, values: dict[str, Value]) -> list[tuple[ir.Expr, float]]:
    """The non-zero terms of a sum of three or more, with their values, largest first; empty
    when the node is not such a sum, a term has no value or one is negative."""
    terms = _summands(node.expr)
    if len(terms) < 3 or not isinstance(node.dim, Dim):
        return []
    from ..exact import EvalError, evaluate

    try:
        numbers = [float(evaluate(t, values)) for t in terms]
    except (EvalError, KeyError, TypeError, ValueError, ZeroDivisionError, OverflowError):
        return []
    if sum(numbers) <= 0 or any(v < 0 for v in numbers) or sum(1 for v in numbers if v > 0) < 3:
        return []
    return sorted(((t, v) for t, v in zip(terms, numbers) if v > 0), key=lambda row: -row[1])


def _summands(expr: ir.Expr) -> list[ir.Expr]:
    """The terms of a sum as written (`a + b + c` → [a, b, c]); one term for anything else."""
    if isinstance(expr, ir.Op) and expr.op == "+":
        return [t for arg in expr.args for t in _summands(arg)]
    return [expr]


def _by_owner(qs: list[QuantityView]) -> list[QuantityView]:
    """Grouped by the instance (or enumeration member) they belong to, in the order the owners
    first appear; within one owner, in the plan's order."""
    rank = {owner: k for k, owner in enumerate(dict.fromkeys(q.owner for q in qs))}
    return sorted(qs, key=lambda q: rank[q.owner])


def _literal(lit: ir.Lit) -> str:
    if lit.dim == ir.BOOL:
        return "\\text{" + ("true" if lit.value else "false") + "}"
    if lit.dim == DIMENSIONLESS and lit.text.replace("_", "").replace(".", "", 1).isdigit():
        return lit.text.replace("_", "")
    number, _, unit = lit.text.partition(" ")
    if "^" in unit:  # exponents print as math: 4\,\mathrm{FLOP/token^{2}}
        parts = [latex.text(p) for p in re.split(r"\^(-?\d+)", unit)]
        body = "".join(p if i % 2 == 0 else "^{" + p + "}" for i, p in enumerate(parts))
        return latex.text(number) + "\\,\\mathrm{" + body + "}"
    return "\\text{" + latex.text(lit.text) + "}"


MAX_EXACT_DIGITS = 100
"""An exact value is printed as a fraction only while its numerator and denominator have at most
this many digits (a long product of rationals can reach thousands, and Python refuses to print
more than 4,300); beyond it the report has the float (`value`, `text`) alone."""


def _printable_exactly(value: Fraction) -> bool:
    limit = MAX_EXACT_DIGITS * 3.33  # bits
    return value.numerator.bit_length() <= limit and value.denominator.bit_length() <= limit


def _exact_text(value: Value, dim: ir.Type, text: str) -> str | None:
    if not isinstance(dim, Dim) or dim == DIMENSIONLESS or not isinstance(value, Fraction) or value.denominator != 1:
        return None
    if abs(value.numerator) >= 10**15:
        return None
    exact = f"{int(value):,} {dim}"
    return None if exact == text else exact


def _anchor(title: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in title.lower()).strip("-")


def _sensitivity_matrix(sensitivities: list[Any], top: int = 5, rows: int = 12) -> SensitivityMatrix | None:
    """Each headline's `top` assumptions, at most `rows` of them in all: those that move some headline
    most (a headline that depends on few inputs would otherwise list ones that barely move it)."""
    if not sensitivities:
        return None
    tables = [dict(s.entries) for s in sensitivities]
    inputs = {name for s in sensitivities for name, _ in s.entries[:top]}
    order = sorted(inputs, key=lambda n: (-max(abs(t.get(n, 0.0)) for t in tables), n))[:rows]
    return SensitivityMatrix(tuple(s.target for s in sensitivities),
                             tuple((n, tuple(f"{t[n]:+.3g}" if n in t else "—" for t in tables)) for n in order))


def _trivial(q: QuantityView) -> bool:
    """A stdlib quantity that is zero for this plan, or a plain factor of exactly one (what the
    plan's own lines define is always derived)."""
    return (not q.is_input and q.location.startswith("<stdlib>") and q.dim != "bool"
            and (q.value == 0 or (q.dim == "1" and q.value == 1)))


def _omitted(q: QuantityView, moot: set[str]) -> bool:
    """A stdlib quantity the appendix names without deriving: trivial, or of no effect for this plan."""
    return _trivial(q) or (q.id in moot and not q.is_input and q.location.startswith("<stdlib>"))


def _stated_refs(el: ir.Elaborated) -> set[str]:
    """The quantities the plan reads outside its own formulas: its summary, checks, requirements,
    findings, levers, figures and the fields its questions name."""
    exprs: list[ir.Expr] = [*el.summary, *(c.expr for c in el.checks),
                            *(r.expr for r in [*el.requirements, *el.advisories])]
    for f in el.findings:
        exprs += [f.expr, *(p.expr for p in f.parts if isinstance(p, ir.Hole))]
    for lv in el.levers:
        exprs += [*([lv.cond] if lv.cond is not None else []),
                  *(p.expr for p in [*lv.takes, *lv.gate] if isinstance(p, ir.Hole))]
    out = {r for e in exprs for r in ir.refs(e)} | {n for fig in el.figures for _, n in fig.roles}
    for q in el.questions:
        fields = [getattr(q, a) for a in ("unknown", "field") if hasattr(q, a)]
        fields += [s.field for s in getattr(q, "settings", ()) + getattr(q, "given", ())]
        fields += [x.field for x in getattr(q, "axes", ()) + getattr(q, "columns", ()) + getattr(q, "pareto", ())]
        fields += [c.field for c in (getattr(q, "quantity", None), getattr(q, "target", None)) if c is not None]
        out.update(ir.node_id(*f) for f in fields)
    return out


def build_document(compilation: Compilation, brief: bool = False, levers: bool = True) -> DocumentView:
    lowered = compilation.lowered
    assert lowered is not None
    el = lowered.elaborated
    u = compilation.uncertainty
    b = _Builder(lowered, u)
    doc = DocumentView(title=el.title or f"Capacity plan: {compilation.path}", scope=el.scope,
                       plan=compilation.path, version=__version__)
    # a variant's quantities (`chat@mixed_step_time.gemm_time`) are shown through the quantity that uses them
    quantities = [b.quantity(n) for n in el.order if "@" not in el.nodes[n].owner]
    # a stdlib input that only requirements read (every entry of a map, which a requirement bounds)
    # moves no result of this plan: it is no assumption of it
    read = reads(el, guards=False)
    inputs = [q for q in quantities if q.is_input and (q.id in read or not q.location.startswith("<stdlib>"))]
    doc.assumptions = _by_owner([q for q in inputs if not q.is_definition])
    doc.specifications = _by_owner([q for q in inputs if q.is_definition])
    doc.stated = [q for q in doc.assumptions if not q.location.startswith("<stdlib>")]
    sections: dict[str, list[QuantityView]] = {}
    for q in quantities:
        if not q.is_input:
            sections.setdefault(q.section, []).append(q)
    # what the document states in the body stays derived, whatever its value
    headline = {r for e in [*el.summary, *(c.expr for c in el.checks),
                            *(p.expr for s in lowered.findings for p in s.finding.parts if isinstance(p, ir.Hole))]
                for r in ir.refs(e)}
    # and what nothing depends on for this plan (a dense model's expert tile) is named, not derived
    moot = set() if brief else exact.moot(el, lowered.values, headline | _stated_refs(el))  # the brief has no appendix
    doc.sections = [SectionView(t, _anchor(t), tuple(q for q in qs if not _omitted(q, moot) or q.id in headline),
                                tuple(q.id for q in qs if _omitted(q, moot) and q.id not in headline))
                    for t, qs in sections.items()]
    doc.checks = [b.check(o, c, i) for i, (o, c) in enumerate(zip(lowered.checks, el.checks))]
    doc.summary = [
        SummaryView(expr.span.text, b.format(value, expr.dim, _unit_of(expr, el)), location(expr.span),
                    (b.range_text(u.summary[i], expr.dim, _unit_of(expr, el)) or "does not depend on them")
                    if u is not None else "",
                    float(value) if isinstance(expr.dim, Dim) else None, str(expr.dim) if isinstance(expr.dim, Dim) else "")
        for i, (expr, value) in enumerate(zip(el.summary, lowered.summary))
    ]
    if u is not None:
        doc.uncertainty = UncertaintyView(
            tuple((n, b.node_range(n), b.value_text(n)) for n in u.inputs),
            f"every quantity that depends on these inputs is evaluated on a grid of {u.levels} values per range "
            f"({u.points:,} points, both ends included). Where a quantity moves the same way along every line of "
            "the grid it is taken as monotone in each range, and its interval comes from the corners; otherwise it "
            "is the smallest and largest value on the grid (sampled), which can miss a narrow extreme between points.")
    answered = {id(a.question): a for a in compilation.answers}
    doc.questions = [question_view(q, answered.get(id(q)), b, location(q.span)) for q in el.questions]
    doc.sensitivities = [
        SensitivityView(s.target, tuple((n, f"{e:+.3g}") for n, e in s.entries[:8]))
        for s in compilation.sensitivities if s.entries  # a result no assumption moves has no table
    ]
    doc.sensitivity_matrix = _sensitivity_matrix([s for s in compilation.sensitivities if s.entries])
    doc.bindings = choice_rows(getattr(compilation, "bindings", []), b)
    doc.binding_numbers = tuple(choice_numbers(c, b) for c in getattr(compilation, "bindings", []))
    summary_refs = [e for e in el.summary if isinstance(e, ir.Ref)]
    doc.bindings_target = summary_refs[0].node if doc.bindings and summary_refs else ""
    doc.source = getattr(compilation, "source", "")
    longest = max((len(run) for run in re.findall(r"`+", doc.source)), default=0)
    doc.source_fence = "`" * max(3, longest + 1)
    doc.warnings = [d.message for d in compilation.diagnostics if not d.is_error]
    if levers:  # each lever is a variant of the plan, computed here on first use
        doc.lever_columns, doc.levers = build_levers(compilation, b)
    doc.decision = build_decision(compilation, b, doc.lever_columns, doc.levers)
    doc.brief = brief
    doc.linked = frozenset() if brief else frozenset(
        q.id for q in [*doc.assumptions, *doc.specifications, *(q for s in doc.sections for q in s.quantities)])
    return doc


def _unit_of(expr: ir.Expr, el: ir.Elaborated) -> str | None:
    return el.nodes[expr.node].unit if isinstance(expr, ir.Ref) else None
