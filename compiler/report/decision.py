"""The decision section: what to deploy and why, as sentences built from computed records.

Contract: `build_decision(compilation, builder) -> DecisionView`. No sentence is free text
about the plan. Each is one of three things:
- a `finding` of the plan's kinds whose condition holds, its holes the values of quantities
  (the physics and its wording live in the stdlib, beside the formulas they read);
- a template over a search's answer record: its winner, and the declared configuration
  against it (the same objective, or how much the search's choice saves);
- a template over the checks: those that fail, the tightest margin of those that pass, and a
  check that holds at the plan's values but not over all of its input ranges.
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


def build_decision(compilation: Compilation, b: Any) -> DecisionView:
    from .view import location

    lowered = compilation.lowered
    assert lowered is not None
    findings = tuple(_finding(s, b, location(s.finding.span, _name(s.finding))) for s in lowered.findings)
    return DecisionView(
        deploy=tuple(s for ans in compilation.answers for s in _search(ans, b, location)),
        findings=findings,
        risks=_risks(compilation, b, location),
        several=len({s.subject for s in findings}) > 1,
    )


def _name(finding: ir.Finding) -> str:
    """How a finding is named where it is defined: its first words (a stdlib location names a
    block and a field, never a line, so that it does not move when a line is added above it)."""
    first = next((p for p in finding.parts if isinstance(p, str)), "")
    words = first.split()[:5]
    return f"finding “{' '.join(words)}…”"


def percent(value: float) -> str:
    return f"{format_number(100 * value, 3)} %"


def _finding(stated: Stated, b: Any, where: str) -> Sentence:
    parts: list[tuple[str, str]] = []
    values = iter(stated.values)
    for part in stated.finding.parts:
        if isinstance(part, str):
            parts.append((part, ""))
            continue
        value = next(values)
        node = part.expr.node if isinstance(part.expr, ir.Ref) else ""
        unit = b.nodes[node].unit if node else None
        text = percent(float(value)) if part.percent else b.format(value, part.expr.dim, unit)
        parts.append((text, node))
    return Sentence(tuple(parts), "finding", stated.finding.instance, where, stated.finding.section or "Findings")


def _search(ans: Any, b: Any, location: Any) -> list[Sentence]:
    """The search's winner, then the plan as declared against it."""
    from ..solve import TableAnswer
    from .view import _cell

    if not isinstance(ans, TableAnswer) or ans.kind != "search" or ans.best is None:
        return []
    column = ans.columns[0]
    best = float(ans.rows[ans.best][1][0])
    where = location(ans.stmt.span)
    subject = ans.stmt.subject.dotted
    out = [Sentence((
        (f"The search over {', '.join(ans.axes)} ({ans.evaluated:,} configurations, {ans.feasible:,} of them "
         f"meeting its constraints) finds {ans.best_setting} best, with {column[0]} = ", ""),
        (_cell(best, column), ""), (".", "")), "deploy", subject, where)]
    if not ans.objective_node or len(ans.declared) != len(ans.axes) or not all(any(d) for d in ans.declared):
        return out
    declared = ", ".join(f"{axis} = {label or b.value_text(node)}" for axis, (label, node) in zip(ans.axes, ans.declared))
    value = float(b.lowered.values[ans.objective_node])
    link = ans.objective_node
    head = (f"The plan as declared ({declared}) ", "")
    shown_value = (b.value_text(ans.objective_node), link)
    if math.isclose(value, best, rel_tol=1e-9, abs_tol=0.0):
        parts = (head, (f"is one of the best: its {column[0]} is the same, ", ""), shown_value, (".", ""))
    else:
        lower_is_better = ans.stmt.objective == "minimize"
        worse = value > best if lower_is_better else value < best
        gap = abs(value - best)
        if worse:
            relative = gap / abs(best) if best else math.inf
            parts = (head, (f"has {column[0]} = ", ""), shown_value,
                     (f", {percent(relative)} {'more' if lower_is_better else 'less'}: the search's choice "
                      f"{'saves' if lower_is_better else 'gains'} ", ""), (_cell(gap, column), ""), (".", ""))
        else:
            parts = (head, (f"has a better {column[0]}, ", ""), shown_value,
                     (", than any configuration the search accepts: it lies outside the search's axes or fails one "
                      "of its constraints (see the checks).", ""))
    return out + [Sentence(parts, "deploy", subject, where)]


def _risks(compilation: Compilation, b: Any, location: Any) -> tuple[Sentence, ...]:
    """The failed checks, the tightest margin of those that pass, and the checks that hold at the
    plan's values but not over all of its input ranges."""
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
            out.append(Sentence((
                (f"The check “{label}” holds at the plan's values but only on {percent(u.checks[index])} of its "
                 "input ranges: the assumptions the plan gives as ranges decide it.", ""),), "risk", "", location(check.span)))
    if margins:
        slack, _, label, sides, check = min(margins, key=lambda m: (m[0], m[1]))
        out.insert(0, Sentence((
            (f"The tightest margin is the check “{label}”: ", ""), sides[0], (" against ", ""), sides[1],
            (f", {percent(slack)} to spare.", "")), "risk", "", location(check.span)))
    return tuple(out)


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
