"""The decision section: what to deploy and why, as sentences built from computed records.

Contract: `build_decision(compilation, builder) -> DecisionView`. No sentence is free text
about the plan. Each is one of three things:
- a `finding` of the plan's kinds whose condition holds, its holes the values of quantities
  (the physics and its wording live in the stdlib, beside the formulas they read);
- a template over a search's answer record: its winner, and the declared configuration
  against it (the same objective, or how much the search's choice saves);
- a template over the checks: those that fail, the tightest margin of those that pass (a check
  that stops a solved `largest` behind the headline is tight by construction, and said to be),
  and a check that holds at the plan's values but not over all of its input ranges.
Every number is a part that names the quantity it shows, so the templates link it to that
quantity's derivation. Order is the plan's: instances as they
were first reached, findings as their kinds declare them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..lower import Stated
from ..pipeline import Compilation
from ..semantics import ir
from ..semantics.units import Dim, format_number, format_quantity


@dataclass(frozen=True)
class Sentence:
    """One sentence: pieces of text, each with the quantity whose value it is ("" for words), which
    the templates link to that quantity's derivation when the document shows it."""

    parts: tuple[tuple[str, str], ...]
    kind: str  # "deploy", "finding" or "risk"
    subject: str  # the instance it is about ("" for the plan as a whole)
    location: str  # where its rule is written: the finding, the search, the check
    group: str = ""  # a finding's section in its kind: the heading it is stated under

    @property
    def text(self) -> str:
        return "".join(text for text, _ in self.parts)


@dataclass(frozen=True)
class LeverView:
    """A lever priced against the plan: each numeric summary item of its variant with its change,
    the checks, and what it takes and must pass first (sentences with their numbers)."""

    label: str
    subject: str
    cells: tuple[str, ...]  # parallel to the numeric summary items
    checks: str
    takes: tuple[tuple[str, str], ...]
    gate: tuple[tuple[str, str], ...]
    source: str
    location: str
    effect: float | None  # relative change of the first summary item: the table's order (None: not a valid plan)
    # parallel to `cells`: (value in base units, its dimension, relative change; None when the base is 0)
    numbers: tuple[tuple[float, str, float | None], ...] | None = None


@dataclass(frozen=True)
class DecisionView:
    deploy: tuple[Sentence, ...] = ()
    findings: tuple[Sentence, ...] = ()
    risks: tuple[Sentence, ...] = ()
    several: bool = False  # findings about more than one instance: each names its subject

    @property
    def groups(self) -> list[tuple[str, list[Sentence]]]:
        """The findings by the section of the kind that declares them, in the order first stated."""
        out: dict[str, list[Sentence]] = {}
        for x in self.findings:
            out.setdefault(x.group, []).append(x)
        return list(out.items())

    def __bool__(self) -> bool:
        return bool(self.deploy or self.findings or self.risks)


def build_decision(compilation: Compilation, b: Any, columns: tuple[str, ...] = (),
                   levers: tuple[LeverView, ...] = ()) -> DecisionView:
    from .view import location

    lowered = compilation.lowered
    assert lowered is not None
    findings = tuple(_finding(s, b, location(s.finding.span, _name(s.finding))) for s in lowered.findings)
    several = len({s.subject for s in findings}) > 1
    # both fleets of a blue/green switch add up only when the lever's subject is the whole fleet
    headline = _count_headline(lowered) if not several else None
    return DecisionView(
        deploy=_declared(compilation, b, location)
        + tuple(s for ans in compilation.answers for s in _search(ans, b, location))
        + _best_lever(columns, levers, headline),
        findings=findings,
        risks=_risks(compilation, b, location),
        several=several,
    )


def _declared(compilation: Compilation, b: Any, location: Any) -> tuple[Sentence, ...]:
    """The plan as declared: its first summary item and how many of its checks pass."""
    lowered = compilation.lowered
    assert lowered is not None
    el = lowered.elaborated
    if not el.summary:
        return ()
    expr = el.summary[0]
    node = expr.node if isinstance(expr, ir.Ref) else ""
    value = b.value_text(node) if node else b.format(lowered.summary[0], expr.dim)
    label = " ".join(expr.span.text.split())
    parts: list[tuple[str, str]] = [(f"As declared, the plan gives {label} = ", ""), (value, node)]
    total = len(lowered.checks)
    failing = sum(1 for outcome in lowered.checks if not outcome.holds)
    if total:
        verdict = (f"all {total} of its checks pass" if not failing and total > 1 else "its check passes" if not failing
                   else f"{failing} of its {total} checks fail{'s' if failing == 1 else ''} (see the risks below)")
        parts.append((f", and {verdict}", ""))
    return (Sentence((*parts, (".", "")), "deploy", "", location(expr.span)),)


def _name(finding: ir.Finding) -> str:
    """How a finding is named where it is defined: its first words (a stdlib location names a
    block and a field, never a line, so that it does not move when a line is added above it)."""
    first = next((p for p in finding.parts if isinstance(p, str)), "")
    words = first.split()[:5]
    return f"finding “{' '.join(words)}…”"


def percent(value: float) -> str:
    return f"{format_number(100 * value, 3)} %"


def _finding(stated: Stated, b: Any, where: str) -> Sentence:
    return Sentence(_filled(stated.finding.parts, stated.values, b), "finding", stated.finding.instance, where,
                    stated.finding.section or "Findings")


def _filled(template: tuple[str | ir.Hole, ...], values: tuple[Any, ...], b: Any) -> tuple[tuple[str, str], ...]:
    """A sentence's pieces: its text, and each hole as its value with the quantity it shows."""
    parts: list[tuple[str, str]] = []
    filled = iter(values)
    for part in template:
        if isinstance(part, str):
            parts.append((part, ""))
            continue
        value = next(filled)
        node = part.expr.node if isinstance(part.expr, ir.Ref) else ""
        unit = b.nodes[node].unit if node else None
        text = percent(float(value)) if part.percent else b.format(value, part.expr.dim, unit)
        parts.append((text, node))
    return tuple(parts)


def build_levers(compilation: Compilation, b: Any) -> tuple[tuple[str, ...], tuple[LeverView, ...]]:
    """The levers that apply, priced: (the numeric summary items, one view per lever), the largest
    cut of the first summary item first, the levers whose variant is not a valid plan last."""
    from .view import location

    views = []
    labels: tuple[str, ...] = ()
    for ans in compilation.levers:
        numeric = [k for k, (_, dim, _) in enumerate(ans.columns) if isinstance(dim, Dim)]
        labels = tuple(ans.columns[k][0] for k in numeric)
        lever = ans.offered.lever
        effect = None
        numbers = None
        if ans.values is None:
            cells = ("—",) * len(numeric)
            checks = f"not a valid plan: {ans.reason}"
        else:
            cells = tuple(_change(ans.baseline[k], ans.values[k], ans.columns[k]) for k in numeric)
            failing = [ans.columns[k][0] for k, (_, dim, _) in enumerate(ans.columns)
                       if dim == ir.BOOL and not ans.values[k]]
            checks = "all pass" if not failing else "fails: " + "; ".join(failing)
            if numeric and ans.baseline[numeric[0]]:
                effect = float(ans.values[numeric[0]]) / float(ans.baseline[numeric[0]]) - 1
            numbers = tuple((float(ans.values[k]), str(ans.columns[k][1]),
                             float(ans.values[k]) / float(ans.baseline[k]) - 1 if float(ans.baseline[k]) else None)
                            for k in numeric)
        views.append(LeverView(lever.label, lever.instance, cells, checks, _filled(lever.takes, ans.offered.takes, b),
                               _filled(lever.gate, ans.offered.gate, b), lever.source or "", location(lever.span), effect,
                               numbers))
    views.sort(key=lambda v: (v.effect is None, v.effect if v.effect is not None else 0.0))
    return labels, tuple(views)


def _change(before: Any, after: Any, column: tuple[str, Any, str | None]) -> str:
    _, dim, unit = column
    text = format_quantity(float(after), dim, unit)
    if float(before) == float(after):
        return f"{text} (same)"
    if not float(before):
        return text
    relative = float(after) / float(before) - 1
    return f"{text} ({'+' if relative > 0 else '−'}{format_number(100 * abs(relative), 3)} %)"


def _best_lever(columns: tuple[str, ...], levers: tuple[LeverView, ...], headline: tuple[str, float] | None
                ) -> tuple[Sentence, ...]:
    """The lever that cuts the first summary item most while every check passes, from the table,
    and what a blue/green switch to it holds while both fleets run."""
    best = next((v for v in levers if v.effect is not None and v.effect < 0 and v.checks == "all pass"), None)
    if best is None or best.effect is None or not columns:
        return ()
    parts: tuple[tuple[str, str], ...] = ((f"Of the levers priced below, {best.label} cuts {columns[0]} the most, to ", ""), (best.cells[0], ""),
             (" with every check passing", ""))
    if best.takes:
        parts += ((": it takes ", ""), *best.takes)
    if headline is not None:  # the first summary item is a count the two fleets add up in
        text, value = headline
        both = value * (2 + best.effect)
        migration = (f". Migrating to it blue/green runs both fleets during the switch, {round(both):,} {text} at once; "
                     "shifting traffic canary-first holds less")
        parts += ((migration, ""),)
    return (Sentence((*parts, (".", "")), "deploy", best.subject, best.location),)


def _count_headline(lowered: Any) -> tuple[str, float] | None:
    """The first summary item when it counts things (devices, replicas): its unit and value."""
    el = lowered.elaborated
    if not el.summary or not isinstance(el.summary[0], ir.Ref):
        return None
    node = el.nodes[el.summary[0].node]
    dim = node.dim
    if not isinstance(dim, Dim) or str(dim) not in ("devices", "replicas", "1"):
        return None
    return (str(dim) if str(dim) != "1" else "", float(lowered.summary[0]))


def _search(ans: Any, b: Any, location: Any) -> list[Sentence]:
    """The search's winner, then the plan as declared against it."""
    from ..solve.answers import TableAnswer
    from .answer_views import cell

    if not isinstance(ans, TableAnswer) or ans.kind != "search" or ans.best is None:
        return []
    q = ans.question
    assert isinstance(q, ir.Search)
    column = ans.columns[0]
    best = float(ans.rows[ans.best][1][0])
    where = location(q.span)
    subject = q.subject
    opening = (f"The search over {', '.join(ans.axes)} ({ans.evaluated:,} configurations, {ans.feasible:,} of them "
               f"meeting its constraints) finds {ans.best_setting} best, with {column[0]} = ")
    out = [Sentence(((opening, ""), (cell(best, column), ""), (".", "")), "deploy", subject, where)]
    if not ans.objective_node or len(ans.declared) != len(ans.axes) or not all(any(d) for d in ans.declared):
        return out
    declared = ", ".join(f"{axis} = {label or b.value_text(node)}" for axis, (label, node) in zip(ans.axes, ans.declared))
    value = float(b.lowered.values[ans.objective_node])
    link = ans.objective_node
    head = (f"The plan as declared ({declared}) ", "")
    shown_value = (b.value_text(ans.objective_node), link)
    parts: tuple[tuple[str, str], ...]
    if declared == ans.best_setting:
        parts = (head, ("is the search's choice.", ""),)
    elif math.isclose(value, best, rel_tol=1e-9, abs_tol=0.0):
        parts = (head, (f"is one of the best: its {column[0]} is the same, ", ""), shown_value, (".", ""))
    else:
        lower_is_better = q.objective == "minimize"
        worse = value > best if lower_is_better else value < best
        gap = abs(value - best)
        if worse:
            relative = gap / abs(best) if best else math.inf
            verdict = (f", {percent(relative)} {'more' if lower_is_better else 'less'}: the search's choice "
                       f"{'saves' if lower_is_better else 'gains'} ")
            parts = (head, (f"has {column[0]} = ", ""), shown_value, (verdict, ""), (cell(gap, column), ""), (".", ""))
        else:
            outside = (", than any configuration the search accepts: it lies outside the search's axes or fails one "
                       "of its constraints (see the checks).")
            parts = (head, (f"has a better {column[0]}, ", ""), shown_value, (outside, ""))
    return out + [Sentence(parts, "deploy", subject, where)]


def _risks(compilation: Compilation, b: Any, location: Any) -> tuple[Sentence, ...]:
    """The failed checks, the tightest margin of those that pass (those a search makes tight said
    to be so), and the checks that hold at the plan's values but not over all of its input ranges."""
    lowered = compilation.lowered
    assert lowered is not None
    checks = list(zip(lowered.checks, lowered.elaborated.checks))
    out: list[Sentence] = []
    margins = []
    for index, (outcome, check) in enumerate(checks):
        sides = _sides(outcome, b)
        label = outcome.label or " ".join(check.span.text.split())
        if not outcome.holds:
            parts = [(f"The check “{label}” fails", "")]
            if sides:
                parts += [(": ", ""), sides[0], (" against ", ""), sides[1]]
            out.append(Sentence((*parts, (".", "")), "risk", "", location(check.span)))
            continue
        slack = _relative_slack(outcome)
        if slack is not None and sides:
            margins.append((slack, index, label, sides, check))
        u = compilation.uncertainty
        if u is not None and index < len(u.checks) and u.checks[index] < 1:
            text = (f"The check “{label}” holds at the plan's values but only on {percent(u.checks[index])} of its "
                    "input ranges: the assumptions the plan gives as ranges decide it.")
            out.append(Sentence(((text, ""),), "risk", "", location(check.span)))
    if margins:
        # a check that stops a solved `largest` is tight by construction: the search sets the
        # quantity to the last value at which it holds. Say so, and name the tightest of the others.
        stops = _search_stops(getattr(compilation, "bindings", []))
        margins.sort(key=lambda m: (m[0], m[1]))
        setter = [stops.get(k) if (k := _comparison_key(m[4].expr)) is not None else None for m in margins]
        set_by = [(m, node) for m, node in zip(margins, setter) if node is not None]
        free = [m for m, node in zip(margins, setter) if node is None]
        tightest: list[Sentence] = []
        for (slack, _, label, sides, check), node in set_by:
            tightest.append(Sentence((
                (f"The check “{label}” is tight by construction: ", ""), sides[0], (" against ", ""), sides[1],
                (f", {percent(slack)} to spare, because {ir.shown(node)} is the largest value at which it holds "
                 "(a search of the plan sets it there).", "")), "risk", "", location(check.span)))
        if free:
            slack, _, label, sides, check = free[0]
            lead = "Of the checks no search sets, the tightest" if set_by else "The tightest margin"
            tightest.insert(0, Sentence((
                (f"{lead} is the check “{label}”: ", ""), sides[0], (" against ", ""), sides[1],
                (f", {percent(slack)} to spare.", "")), "risk", "", location(check.span)))
        out[:0] = tightest
    return tuple(out)


def _comparison_key(expr: Any) -> tuple[str, str, str] | None:
    """A comparison of two quantities as (op, left, right), written the one way (`a >= b` is `b <= a`)."""
    if not isinstance(expr, ir.Op) or expr.op not in ("<", "<=", ">", ">="):
        return None
    left, right = (a.node if isinstance(a, ir.Ref) else None for a in expr.args)
    if left is None or right is None:
        return None
    return (expr.op, left, right) if expr.op in ("<", "<=") else ({">": "<", ">=": "<="}[expr.op], right, left)


def _search_stops(bindings: Any) -> dict[tuple[str, str, str], str]:
    """The comparisons that stop the plan's solved `largest` quantities behind its headline (each
    fails one step beyond the answer: the solver's `bindings`), each with the quantity it stops."""
    out: dict[tuple[str, str, str], str] = {}
    for c in bindings:
        if c.op != "largest":
            continue
        # the condition reads the search's trial copies (`chat@batch.tpot`: tpot at a trial batch);
        # at the answer each is the plan's own quantity (`chat.tpot`, at batch = chat.batch)
        instance, field = ir.field_ref(c.node)
        trial = f"{instance}@{field}"
        for part, (holds, *_) in zip(c.branches, c.values):
            key = _comparison_key(part)
            if holds is False and key is not None:
                op, *sides = key
                left, right = (f"{instance}.{ir.field_ref(n)[1]}" if ir.field_ref(n)[0] == trial else n for n in sides)
                out.setdefault((op, left, right), c.node)
    return out


def _sides(outcome: Any, b: Any) -> tuple[tuple[str, str], tuple[str, str]] | None:
    expr = outcome.expr
    if not isinstance(expr, ir.Op) or outcome.left is None or outcome.right is None:
        return None
    dim = expr.args[0].dim
    if not isinstance(dim, Dim):
        return None

    def side(arg: ir.Expr, value: Any) -> tuple[str, str]:
        node = arg.node if isinstance(arg, ir.Ref) else ""
        text = b.value_text(node) if node else format_quantity(float(value), dim)
        return text, node

    return side(expr.args[0], outcome.left), side(expr.args[1], outcome.right)


def _relative_slack(outcome: Any) -> float | None:
    """How far a passing inequality is from failing, relative to its limit (its right side)."""
    expr = outcome.expr
    if not isinstance(expr, ir.Op) or expr.op not in ("<", "<=", ">", ">=") or outcome.left is None:
        return None
    left, right = float(outcome.left), float(outcome.right)
    slack = right - left if expr.op in ("<", "<=") else left - right
    return slack / abs(right) if right else None
