"""What decides a quantity: the `max`, `min`, `if` and searches in the formulas behind it, with
the branch in effect — the headline's bindings, a `solve ... for` answer's choices, and what a
scenario changes.

Contract: functions of a lowered plan (or two: the baseline and a variant); nothing here
reports a diagnostic.
"""

from __future__ import annotations

from typing import Any

from ..exact import EvalError, evaluate, search_bounds
from ..lower import Lowered
from ..semantics import ir
from .answers import Choice
from .graph import span_of, text_of


def choices(lowered: Lowered, node_id: str) -> list[Choice]:
    """Every search, `max`, `min` and `if` in the formulas `node_id` is computed from that
    decides something (its branches differ), with the branch in effect first; the searches (a
    running batch and what limits it) before the rest."""
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


def headline_node(el: ir.Elaborated) -> str | None:
    """The first summary item that is a quantity of the plan: the headline."""
    return next((e.node for e in el.summary if isinstance(e, ir.Ref)), None)


def headline_rows(lowered: Lowered) -> list[tuple[str, ir.Type, str | None, Any]]:
    """The summary items, then the checks, as (label, dimension, display unit, value): the
    columns of a scenario, of a lever's price and of a table without plotted quantities."""
    el = lowered.elaborated
    rows = []
    for expr, value in zip(el.summary, lowered.summary):
        unit = el.nodes[expr.node].unit if isinstance(expr, ir.Ref) else None
        rows.append((" ".join(span_of(expr).text.split()), expr.dim, unit, value))
    for check, outcome in zip(el.checks, lowered.checks):
        rows.append((check.label or " ".join(check.span.text.split()), ir.BOOL, None, outcome.holds))
    return rows


def binding_notes(base: Lowered, variant: Lowered) -> list[str]:
    """What decides the headline (the first `summary` item) in a scenario: each `max`/`min`
    behind it whose binding branch differs from the baseline's, or, when none does, the ones
    that bind in both — a scenario is recomputed, so what binds first is found, not guessed."""
    headline = headline_node(base.elaborated)
    if headline is None or headline not in variant.elaborated.nodes:
        return []

    def keyed(lowered: Lowered) -> dict[tuple[str, str, int], Choice]:
        out: dict[tuple[str, str, int], Choice] = {}
        for c in choices(lowered, headline):
            if c.op == "if":
                continue
            n = sum(1 for k in out if k[:2] == (c.node, c.op))
            out[(c.node, c.op, n)] = c
        return out

    before, after = keyed(base), keyed(variant)
    changed = [f"{ir.shown(k[0])} is now set by {text_of(c.branches[0])} ({c.op}; in the baseline by {text_of(before[k].branches[0])})"
               for k, c in after.items() if k in before and text_of(before[k].branches[0]) != text_of(c.branches[0])]
    if changed:
        return [f"what decides {headline} changes: " + "; ".join(changed)]
    same = [f"{ir.shown(k[0])} by {text_of(c.branches[0])}" for k, c in after.items()][:4]
    return [f"the same constraints decide {headline} as in the baseline: " + ", ".join(same)] if same else []


def valid_points(lowered: Lowered, vals: dict[str, Any], n: int) -> Any:
    """Which of n vectorised points (`vals`, over `lowered`) keep every requirement of the plan's kinds."""
    import numpy as np

    from ..vector import evaluate as evaluate_vector

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
