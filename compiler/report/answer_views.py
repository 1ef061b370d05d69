"""The answers to a plan's questions, formatted for the document: an `ask` (its value, the limit
each constraint sets, the closed form), a `solve` (the choices behind a quantity, or the range an
input may take), a table (scenario, compare, sweep, search), and the choices behind the headline.

Contract: pure functions from the solver's answer records (`solve/answers.py`) and the view's
number formatter (`view._Builder`) to frozen view records; nothing is computed here but text.
`view.build_document` calls them; `machine.py` and `decision.py` read their records and `cell`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ..semantics import ir
from ..semantics.units import Dim, format_number, format_quantity

if TYPE_CHECKING:
    from .view import _Builder

MAX_CHOICES = 6  # rows of a solved quantity's choices in the body

@dataclass(frozen=True)
class QuestionView:
    """A question and its answer, formatted: an `ask`, or a table (scenario, compare, sweep, search)."""

    keyword: str
    title: str
    text: str
    location: str
    result: str = ""  # the headline answer
    binding: str = ""  # the constraint that binds
    limits: tuple[tuple[str, str], ...] = ()  # (constraint, how far it lets the unknown go)
    method: str = ""
    steps: tuple[tuple[str, str], ...] = ()  # (words, LaTeX)
    infeasible: str = ""
    headers: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    notes: tuple[str, ...] = ()




def question_view(q: ir.Question, ans: Any, b: _Builder, where: str) -> QuestionView:
    from ..solve.answers import AskAnswer, SolveAnswer, TableAnswer

    base: dict[str, Any] = {"keyword": q.keyword, "title": q.title or q.keyword, "text": q.text, "location": where}
    if isinstance(ans, AskAnswer):
        return _ask_view(base, ans, b)
    if isinstance(ans, SolveAnswer):
        return _solve_view(base, ans, b)
    if isinstance(ans, TableAnswer):
        first = ans.kind if ans.kind != "search" else (", ".join(ans.axes) or "configuration")
        headers = (first,) + tuple(c[0] for c in ans.columns)
        rows = tuple((label, *(cell(v, c) for v, c in zip(values, ans.columns))) for label, values in ans.rows)
        best = ""
        if ans.kind == "search" and ans.best is not None:
            best = f"{ans.best_setting}, giving {ans.columns[0][0]} = {rows[ans.best][1]}"
        return QuestionView(**base, headers=headers, rows=rows, notes=tuple(ans.notes), result=best)
    return QuestionView(**base, result="not answered (see the diagnostics)")


def _ask_view(base: dict[str, Any], ans: Any, b: _Builder) -> QuestionView:
    def fmt(v: Any) -> str:
        return b.format(Fraction(v) if isinstance(v, int) else v, ans.unknown_dim) if v is not None else "unbounded"

    if ans.infeasible:
        return QuestionView(**base, result="infeasible", infeasible=ans.infeasible)
    result = f"{ans.unknown} = {fmt(ans.value)}"
    if ans.objective_value is not None:
        result += f", giving {ans.question.quantity.label} = {_any(b, ans.objective_value)}"
    def limit(v: Any) -> str:
        return f"holds at {fmt(v)}" if ans.question.equation is not None else _bound(v, ans.lower_limits, fmt)

    limits = tuple((_limit_name(lim), limit(lim.value)) for lim in ans.limits)
    binding = _limit_name(ans.binding) if ans.binding is not None else ""
    precision = "to the whole number" if ans.tolerance is None else f"to a relative tolerance of {ans.tolerance:.0e}"
    method = (f"bracketed between {_short(ans.bracket[0])} and {_short(ans.bracket[1])}"
              f"{' over whole numbers' if ans.integer else ''}: {ans.monotone_checked} points checked for monotonicity "
              f"on a vectorised grid, {ans.iterations} exact evaluations to the boundary, {precision}"
              ) if ans.bracket else ""
    steps = tuple(ans.steps)
    if ans.closed_value is not None:
        method += f"; closed form {format_number(float(ans.closed_value), 6)} on the active piece"
    return QuestionView(**base, result=result, binding=binding, limits=limits, method=method, steps=steps)


def _bound(v: Any, lower: bool, show: Callable[[Any], str]) -> str:
    """How far one constraint lets the unknown go: `at most 76`, `at least 15`, `no upper limit`."""
    if v is None:
        return "no lower limit" if lower else "no upper limit"
    return ("at least " if lower else "at most ") + show(v)


def _limit_name(lim: Any) -> str:
    text = " ".join(lim.constraint.span.text.split())
    return f"{text} (a requirement of the plan)" if lim.requirement else text


Value3 = tuple[Any, ir.Type, str]  # a value, its dimension, and its text as the document prints it


@dataclass(frozen=True)
class ChoiceNumbers:
    """One choice behind a quantity, each value with its dimension and text (None where
    undefined): a `max`/`min`/`if`'s branch in effect and the others; a search's first value past
    its answer and each part of its condition there, whether it holds and its two sides."""

    value: Value3 | None
    others: tuple[tuple[str, Value3 | None], ...] = ()
    conditions: tuple[tuple[str, bool | None, Value3 | None, Value3 | None], ...] = ()


def choice_numbers(c: Any, b: _Builder) -> ChoiceNumbers:
    def value(v: Any, dim: ir.Type, unit: str | None = None) -> Value3 | None:
        return None if v is None else (v, dim, b.format(v, dim, unit))

    def text(e: ir.Expr) -> str:
        return " ".join(e.span.text.split())

    if c.op == "largest":
        owner = b.nodes[c.node]
        conditions = []
        for part, (holds, left, right, _beyond) in zip(c.branches, c.values):
            sides = isinstance(part, ir.Op) and left is not None and right is not None
            dim = part.args[0].dim if sides else ir.BOOL
            conditions.append((text(part), holds, value(left, dim) if sides else None, value(right, dim) if sides else None))
        return ChoiceNumbers(value(c.values[0][3], owner.dim, owner.unit), (), tuple(conditions))
    dim = c.branches[0].dim  # every branch of a max, min or if has the same
    return ChoiceNumbers(value(c.values[0], dim), tuple((text(e), value(v, dim)) for e, v in zip(c.branches[1:], c.values[1:])))


def choice_rows(choices: list[Any], b: _Builder) -> tuple[tuple[str, str, str, str, str], ...]:
    """(quantity, max/min/if, the branch in effect, its value, the other branches = values): the
    texts of `_choice_numbers`."""
    def shown(v: Value3 | None) -> str:
        return v[2] if v is not None else "undefined"

    def side(holds: bool | None, left: Value3 | None, right: Value3 | None) -> str:
        verdict = {True: "holds", False: "fails", None: "undefined"}[holds]
        return verdict + (f": {left[2]} vs {right[2]}" if left is not None and right is not None else "")

    rows = []
    for c in choices:
        n = choice_numbers(c, b)
        if c.op == "largest":  # the part of the search's condition that fails one step past its answer
            (first, holds, left, right), rest = n.conditions[0], n.conditions[1:]
            held = [cond for cond, h, *_ in rest if h is True]
            others = "; ".join([f"{cond} {side(h, lo, hi)}" for cond, h, lo, hi in rest if h is not True]
                               + ([f"{', '.join(held)} hold"] if held else []))
            rows.append((ir.shown(c.node), "largest", first, f"{side(holds, left, right)} at {shown(n.value)} (one more than the answer)", others))
            continue
        others = "; ".join(branch if branch == shown(v) else f"{branch} = {shown(v)}" for branch, v in n.others)  # a literal once
        rows.append((ir.shown(c.node), c.op, " ".join(c.branches[0].span.text.split()), shown(n.value), others))
    return tuple(rows)


def _solve_view(base: dict[str, Any], ans: Any, b: _Builder) -> QuestionView:
    node = b.nodes[ans.unknown]

    def show(v: Any) -> str:
        return b.format(v, node.dim, node.unit) if v is not None else "undefined"

    if ans.low is None and ans.high is None:  # a derived quantity and the choices behind it
        rows = choice_rows(ans.choices, b)
        notes: tuple[str, ...] = ("each max, min and if in the formulas the quantity is computed from, with the branch "
                                  "in effect at the plan's values; the first row is the nearest",) if rows else ()
        if len(rows) > MAX_CHOICES:  # the rest are further from the result; each formula in the appendix shows its own
            notes += (f"the {MAX_CHOICES} nearest of {len(rows)}; the derivations in the appendix show every other",)
        return QuestionView(**base, result=f"{ans.unknown} = {show(ans.value)}",
                            headers=("quantity", "choice", "in effect", "value", "instead of"),
                            rows=tuple(rows[:MAX_CHOICES]), notes=notes)
    low, high = ans.low, ans.high
    result = f"{ans.unknown} from {show(low.value)} to {show(high.value) if high.value is not None else 'no upper limit'}"
    ends = []
    for words, a in (("at least", low), ("at most", high)):
        if a.binding is not None:
            ends.append(f"{words} {show(a.value)}: {_limit_name(a.binding)}")
    limits = tuple((f"{'lower' if a is low else 'upper'} end: {_limit_name(lim)}", _bound(lim.value, a is low, show))
                   for a in (low, high) for lim in a.limits)
    return QuestionView(**base, result=result + " while every check holds", binding="; ".join(ends), limits=limits)


def _any(b: _Builder, v: Any) -> str:
    return format_number(float(v)) if not isinstance(v, bool) else str(v).lower()


def _short(x: float) -> str:
    return format_number(float(x))


def cell(value: Any, column: tuple[str, Any, str | None]) -> str:
    _, dim, unit = column
    if value is None:
        return "—"
    if dim == "text":
        return str(value) or "—"
    if not isinstance(dim, Dim):
        return "pass" if value else "FAIL"
    try:
        return format_quantity(float(value), dim, unit)
    except (TypeError, ValueError, OverflowError):
        return "—"
