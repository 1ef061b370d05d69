"""The JSON forms of the reports, for machines: every value a number, with its unit and the text
the documents print beside it.

Contract:
- `number(value, dim, text)` is the *number* record, `{"value", "unit", "text"}`: the value in
  base SI units (null when it is not finite), the dimension of that base unit (`B`, `s`,
  `B/token`, `1` for a plain number) and the value as the documents show it.
- `interval(...)` is the *interval* record, `{"low", "high", "unit", "text", "method"}`: an
  input given as a range (`given`), or a result's interval over the ranges (`corners` where it
  is monotone in each, else `sampled`); `undefined` (low and high null) where the result has no
  value on part of the ranges.
- `document_json(doc, compilation)` is the JSON report, schema `plan.report/2`; `checks_json`
  the check records it shares with `plan check --format json` (`plan.check/1`).
The shapes are JSON Schemas shipped in `planc/schemas/` (`schema_path(name)`), documented in
docs/report-json.md and docs/diff.md; the tests validate every example's output against them.
Nothing here evaluates the plan: it reads the values the compile produced and the views the
documents are rendered from, so a number and its text cannot disagree.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from importlib import resources
from pathlib import Path
from typing import Any

from ..pipeline import Compilation
from ..semantics import ir
from ..semantics.units import Dim
from .answer_views import ChoiceNumbers
from .view import DocumentView, QuantityView, breakdown_terms

REPORT_SCHEMA = "plan.report/2"


def schema_path(name: str) -> Path:
    """The JSON Schema of one output (`plan.report`, `plan.diff`, `plan.check`), as shipped."""
    return Path(str(resources.files("planc.schemas") / f"{name}.schema.json"))


def number(value: Any, dim: ir.Type | str, text: str) -> dict[str, Any]:
    """The *number* record."""
    x = float(value)
    return {"value": x if math.isfinite(x) else None, "unit": str(dim), "text": text}


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def interval(low: float | None, high: float | None, dim: ir.Type | str, text: str, method: str) -> dict[str, Any]:
    """The *interval* record."""
    return {"low": _finite(low), "high": _finite(high), "unit": str(dim), "text": text, "method": method}


def _triple(t: tuple[Any, Any, str] | None) -> dict[str, Any] | None:
    """A (value, dimension, text) as a *number*; null where undefined or not a number."""
    return number(*t) if t is not None and not isinstance(t[0], bool) else None


def _choice_numbers(c: ChoiceNumbers) -> dict[str, Any]:
    """A choice's values as *number* records beside the texts the document prints."""
    return {"number": _triple(c.value),
            "others": [{"branch": branch, "value": _triple(v)} for branch, v in c.others],
            "conditions": [{"condition": cond, "holds": holds, "left": _triple(left), "right": _triple(right)}
                           for cond, holds, left, right in c.conditions]}


def _node_interval(node_id: str, compilation: Compilation, text: str) -> dict[str, Any] | None:
    """The interval of a quantity over the plan's input ranges, or null without one."""
    u, lowered = compilation.uncertainty, compilation.lowered
    assert lowered is not None
    node = lowered.elaborated.nodes[node_id]
    if node.interval is not None:
        return interval(float(node.interval[0]), float(node.interval[1]), node.dim, text, "given")
    if u is None:
        return None
    if node_id in u.undefined:
        return interval(None, None, node.dim, text, "undefined")
    found = u.intervals.get(node_id)
    if found is None:
        return None
    return interval(found.low, found.high, node.dim, text, "corners" if found.monotone else "sampled")


def _quantity(q: QuantityView, compilation: Compilation) -> dict[str, Any]:
    lowered = compilation.lowered
    assert lowered is not None
    node = lowered.elaborated.nodes[q.id]
    record = asdict(q)
    value = lowered.values[q.id]
    record["value"] = bool(value) if node.dim == ir.BOOL else number(value, node.dim, q.text)
    del record["text"]
    record["range"] = _node_interval(q.id, compilation, q.range) if q.range else None
    of = lowered.elaborated.nodes.get(q.breakdown_of or q.id)
    terms = breakdown_terms(of, lowered.values) if of is not None and q.breakdown else []
    total = sum(v for _, v in terms)
    record["breakdown"] = [{"term": tex, "value": number(v, of.dim if of else "1", text), "share": v / total}
                           for (tex, text, _), (_, v) in zip(q.breakdown, terms)]
    return record


def _summary(doc: DocumentView, compilation: Compilation) -> list[dict[str, Any]]:
    lowered = compilation.lowered
    assert lowered is not None
    u = compilation.uncertainty
    out = []
    for i, (view, expr) in enumerate(zip(doc.summary, lowered.elaborated.summary)):
        found = u.summary[i] if u is not None and i < len(u.summary) else None
        out.append({
            "label": view.label, "location": view.location, "text": view.text,
            "value": number(view.value, expr.dim, view.text) if view.value is not None else None,
            "range": interval(found.low, found.high, expr.dim, view.range, "corners" if found.monotone else "sampled")
            if found is not None else None,
        })
    return out


def checks_json(doc: DocumentView, compilation: Compilation) -> list[dict[str, Any]]:
    """The checks: the verdict, both sides and the margin as *numbers* (null where a side is
    not a number), where the check is written, and the share of the input ranges it holds on."""
    lowered = compilation.lowered
    assert lowered is not None
    u = compilation.uncertainty
    out = []
    for i, (view, outcome) in enumerate(zip(doc.checks, lowered.checks)):
        expr = outcome.expr
        op = expr.op if isinstance(expr, ir.Op) else None
        dim = expr.args[0].dim if isinstance(expr, ir.Op) and expr.args else None
        numeric = isinstance(dim, Dim) and outcome.left is not None and outcome.right is not None
        margin = None
        if numeric and op in ("<", "<=", ">", ">="):
            assert outcome.left is not None and outcome.right is not None and dim is not None
            lo, hi = (outcome.left, outcome.right) if op in ("<", "<=") else (outcome.right, outcome.left)
            slack, limit = float(hi - lo), float(outcome.right)
            margin = {**number(slack, dim, view.margin), "relative": slack / abs(limit) if limit else None}
        out.append({
            "label": view.label,
            "holds": view.holds,
            "comparison": op if op in ("<", "<=", ">", ">=", "==", "!=") else None,
            "left": number(outcome.left, dim, view.left) if numeric and dim is not None else None,
            "right": number(outcome.right, dim, view.right) if numeric and dim is not None else None,
            "margin": margin,
            "location": view.location,
            "over_ranges": view.over_ranges,
            "holds_share": u.checks[i] if u is not None and i < len(u.checks) else None,
        })
    return out


def _questions(doc: DocumentView, compilation: Compilation) -> list[dict[str, Any]]:
    """Each question as the document states it, and a table answer's cells as numbers:
    `columns` (name and unit) and `values`, one list per row parallel to `rows` after its label."""
    from ..solve.answers import TableAnswer

    lowered = compilation.lowered
    assert lowered is not None
    answered = {id(a.question): a for a in compilation.answers}
    out = []
    for view, question in zip(doc.questions, lowered.elaborated.questions):
        record = asdict(view)
        ans = answered.get(id(question))
        columns: list[dict[str, Any]] = []
        values: list[list[Any]] = []
        if isinstance(ans, TableAnswer):
            columns = [{"name": name, "unit": str(dim) if isinstance(dim, Dim) else ("bool" if dim == ir.BOOL else "text")}
                       for name, dim, _ in ans.columns]
            values = [[_cell(v, dim) for v, (_, dim, _) in zip(row, ans.columns)] for _, row in ans.rows]
        record["columns"], record["values"] = columns, values
        out.append(record)
    return out


def _cell(value: Any, dim: ir.Type | str) -> Any:
    if value is None:
        return None
    if isinstance(dim, Dim):
        try:
            return _finite(float(value))
        except (TypeError, ValueError, OverflowError):
            return None
    return bool(value) if dim == ir.BOOL else str(value)


def _uncertainty(doc: DocumentView, compilation: Compilation) -> dict[str, Any] | None:
    u, lowered = compilation.uncertainty, compilation.lowered
    if doc.uncertainty is None or u is None or lowered is None:
        return None
    inputs = []
    for (node_id, range_text, midpoint), _ in zip(doc.uncertainty.inputs, u.inputs):
        node = lowered.elaborated.nodes[node_id]
        inputs.append({"input": node_id, "range": _node_interval(node_id, compilation, range_text),
                       "midpoint": number(lowered.values[node_id], node.dim, midpoint)})
    return {"inputs": inputs, "method": doc.uncertainty.method}


def document_json(doc: DocumentView, compilation: Compilation) -> dict[str, Any]:
    """The JSON report (schema `plan.report/2`)."""
    sensitivities = {s.target: s for s in compilation.sensitivities}
    return {
        "schema": REPORT_SCHEMA,
        "title": doc.title,
        "scope": doc.scope,
        "plan": doc.plan,
        "version": doc.version,
        "summary": _summary(doc, compilation),
        "quantities": [_quantity(q, compilation) for q in [*doc.assumptions, *doc.specifications,
                                                            *(q for s in doc.sections for q in s.quantities)]],
        "checks": [{**asdict(view), **record} for view, record in zip(doc.checks, checks_json(doc, compilation))],
        "questions": _questions(doc, compilation),
        "sensitivities": [{"target": s.target, "entries": [{"input": n, "elasticity": e, "text": text}
                                                           for (n, e), (_, text) in zip(sensitivities[s.target].entries, s.entries)]}
                          for s in doc.sensitivities],
        "bindings": {"target": doc.bindings_target, "choices": [  # a quantity by its id, as everywhere in the JSON
            {**dict(zip(("quantity", "op", "in_effect", "value", "instead_of"), row)), "quantity": choice.node,
             **_choice_numbers(numbers)}
            for row, numbers, choice in zip(doc.bindings, doc.binding_numbers, getattr(compilation, "bindings", []))]},
        "uncertainty": _uncertainty(doc, compilation),
        "warnings": doc.warnings,
        "source": doc.source,
        "levers": [{"label": v.label, "subject": v.subject,
                    "changes": {column: (None if v.numbers is None else
                                         {**number(v.numbers[k][0], v.numbers[k][1], cell), "relative": v.numbers[k][2]})
                                for k, (column, cell) in enumerate(zip(doc.lever_columns, v.cells))},
                    "checks": v.checks, "takes": "".join(t for t, _ in v.takes), "gate": "".join(t for t, _ in v.gate),
                    "source": v.source, "location": v.location, "effect": v.effect} for v in doc.levers],
        "decision": {part: [{"text": x.text, "kind": x.kind, "subject": x.subject, "location": x.location, "group": x.group,
                              "numbers": [{"text": t, "quantity": n} for t, n in x.parts if n]}
                             for x in getattr(doc.decision, part)]
                     for part in ("deploy", "findings", "risks")},
    }
