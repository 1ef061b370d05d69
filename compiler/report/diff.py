"""Two compiled plans side by side: what a change to a plan changes in its results.

Contract: `diff_documents(base, head)` compares the view models of two design documents (the
same `DocumentView`s the reports are rendered from, so every value reads as the reports print
it) and returns a `DiffView`:
- the summary items, checks and question answers of both plans, side by side, with the
  relative change of each summary number;
- the inputs whose values changed (assumptions and specifications), with the head's source;
- the derived quantities whose values changed, with their relative change;
- what exists in only one of the plans.
Quantities are matched by id, summary items and checks by label, questions by kind and title.
A value changed when its text or its exact value differs. `render_diff_markdown` writes it for a
pull-request comment, `diff_json` as JSON (schema `plan.diff/2`, docs/diff.md). Nothing here
evaluates a plan: both are compiled before, and templates only lay the view out.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from .. import __version__
from ..semantics.units import format_number
from .answer_views import QuestionView
from .machine import number
from .view import DocumentView, QuantityView


@dataclass(frozen=True)
class ChangeRow:
    """One compared item: `base` or `head` is empty when the item exists in only one plan."""

    label: str
    base: str
    head: str
    change: str = ""  # relative change, "+12.5 %"; empty when not a number or unchanged
    changed: bool = False
    source: str = ""  # the head's source, for inputs
    location: str = ""  # where the head defines it
    base_value: dict[str, Any] | None = None  # the base's *number* (value in base SI units, unit, text)
    head_value: dict[str, Any] | None = None
    relative: float | None = None  # (head - base) / |base|, when both are numbers and the base is not 0


@dataclass
class DiffView:
    base_plan: str
    head_plan: str
    base_title: str
    head_title: str
    version: str = __version__
    summary: list[ChangeRow] = field(default_factory=list)
    checks: list[ChangeRow] = field(default_factory=list)
    questions: list[ChangeRow] = field(default_factory=list)
    inputs: list[ChangeRow] = field(default_factory=list)  # changed, added or removed only
    derived: list[ChangeRow] = field(default_factory=list)  # changed, added or removed only
    derived_compared: int = 0

    @property
    def changed(self) -> bool:
        return any(r.changed for r in [*self.summary, *self.checks, *self.questions, *self.inputs, *self.derived])


def diff_documents(base: DocumentView, head: DocumentView) -> DiffView:
    out = DiffView(base.plan, head.plan, base.title, head.title)
    out.summary = _matched([(s.label, s) for s in base.summary], [(s.label, s) for s in head.summary],
                           lambda s: s.text, lambda s: s.value, dim=lambda s: s.dim)
    out.checks = _matched([(c.label, c) for c in base.checks], [(c.label, c) for c in head.checks],
                          _verdict, lambda c: None)
    questions = _matched(_numbered(base.questions), _numbered(head.questions), _answer, lambda q: None,
                         compare=lambda q: (q.result, q.headers, q.rows))
    # a table that changed reads the same in one line: say so
    out.questions = [replace(r, head=r.head + " (values changed)") if r.changed and r.head == r.base else r
                     for r in questions]
    base_inputs, head_inputs = _inputs(base), _inputs(head)
    out.inputs = [r for r in _matched(base_inputs, head_inputs, lambda q: q.text, lambda q: q.value,
                                      described=True, dim=lambda q: q.dim) if r.changed]
    base_derived, head_derived = _derived(base), _derived(head)
    out.derived = [r for r in _matched(base_derived, head_derived, lambda q: q.text, lambda q: q.value, dim=lambda q: q.dim)
                   if r.changed]
    out.derived_compared = len({k for k, _ in base_derived} | {k for k, _ in head_derived})
    return out


def _inputs(doc: DocumentView) -> list[tuple[str, QuantityView]]:
    return [(q.id, q) for q in [*doc.assumptions, *doc.specifications]]


def _derived(doc: DocumentView) -> list[tuple[str, QuantityView]]:
    return [(q.id, q) for s in doc.sections for q in s.quantities]


def _verdict(c: Any) -> str:
    return ("✅ pass" if c.holds else "❌ FAIL") + (f", margin {c.margin}" if c.margin else "")


def _numbered(questions: list[QuestionView]) -> list[tuple[str, QuestionView]]:
    """Questions by their title (`ask: max batch at 8k context`, `solve devices for chat`); an
    untitled `compare` or `search` that occurs twice is `compare (2)` the second time."""
    seen: dict[str, int] = {}
    out = []
    for q in questions:
        key = q.title if q.title.startswith(q.keyword) else f"{q.keyword}: {q.title}"
        seen[key] = seen.get(key, 0) + 1
        out.append((key if seen[key] == 1 else f"{key} ({seen[key]})", q))
    return out


def _answer(q: QuestionView) -> str:
    """An ask's answer; a table (scenario, sweep, ...) is compared whole, and named by its size."""
    if q.result and not q.rows:
        return q.result
    return (q.result + " · " if q.result else "") + f"a table of {len(q.rows)} rows"


def _matched(base: list[tuple[str, Any]], head: list[tuple[str, Any]], text: Any, value: Any,
             described: bool = False, compare: Any = None, dim: Any = None) -> list[ChangeRow]:
    """Rows in the head's order, then what only the base has. An item changed when `compare`
    (by default its text) or its value differs. With `dim` (the dimension of an item's value),
    each side is also a *number* record and the change a number."""
    compare = compare or text
    before = dict(base)

    def record(item: Any) -> dict[str, Any] | None:
        if dim is None or item is None or value(item) is None or not dim(item) or dim(item) == "bool":
            return None
        return number(value(item), dim(item), text(item))

    rows = []
    for key, h in head:
        b = before.get(key)
        extra = {"source": h.source or "", "location": h.location} if described else {}
        if b is None:
            rows.append(ChangeRow(key, "", text(h), "new", True, **extra, head_value=record(h)))
            continue
        vb, vh = value(b), value(h)
        changed = compare(b) != compare(h) or (vb is not None and vh is not None and vb != vh)
        rb, rh = record(b), record(h)
        relative = None
        if rb is not None and rh is not None and rb["value"] is not None and rh["value"] is not None and rb["value"]:
            relative = (rh["value"] - rb["value"]) / abs(rb["value"])
        rows.append(ChangeRow(key, text(b), text(h), _relative(vb, vh) if changed else "", changed, **extra,
                              base_value=rb, head_value=rh, relative=relative))
    heads = {k for k, _ in head}
    rows += [ChangeRow(k, text(b), "", "removed", True, base_value=record(b)) for k, b in base if k not in heads]
    return rows


def _relative(b: float | None, h: float | None) -> str:
    if b is None or h is None or not (math.isfinite(b) and math.isfinite(h)):
        return ""
    if b == 0:
        return "from 0" if h != 0 else ""
    change = 100 * (h - b) / abs(b)
    return f"{'+' if change > 0 else ''}{format_number(change, 3)} %"  # signed as every number of the reports


def diff_json(diff: DiffView) -> dict[str, Any]:
    """The comparison as JSON (schema `plan.diff/2`): each row's texts, and its values as *numbers*."""

    def rows(rs: Any) -> list[dict[str, Any]]:
        return [asdict(r) for r in rs]

    return {
        "schema": "plan.diff/2",
        "version": diff.version,
        "base": {"plan": diff.base_plan, "title": diff.base_title},
        "head": {"plan": diff.head_plan, "title": diff.head_title},
        "changed": diff.changed,
        "summary": rows(diff.summary),
        "checks": rows(diff.checks),
        "questions": rows(diff.questions),
        "inputs": rows(diff.inputs),
        "derived": rows(diff.derived),
        "derived_compared": diff.derived_compared,
    }
