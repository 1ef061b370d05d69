"""Where each figure goes in the document, for every format that shows figures.

Contract: `parts(doc)` lists the fixed parts the document has, in order: the body (`:summary`,
the decision, then `:levers`, `:questions` and `:sensitivity` when present), then the appendix unless the
document is brief (`:assumptions`, the plan's sections between it and `:checks`, `:source`);
`BODY` names the parts of the body. `place(figures, doc)` groups figures by where they go: `("part", ":summary")`, `("section", "Memory")` (a section
title of the plan), or `("sensitivity", "chat.devices")` for the sensitivity chart of one target;
a figure whose place the document does not have goes to `("part", ":figures")`, a closing part.
Figures keep their order, and each comes with its index among all figures.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .chart import slug
from .view import DocumentView

# The first rule whose pattern matches a figure's name names its part (a section title of the
# plan, or one of the fixed parts).
FIGURE_PLACES: tuple[tuple[str, str], ...] = (
    (r"-roofline$", ":figures"),  # the body's figures: what the decision reads off them
    (r"-memory-(batch|context)$", ":figures"),
    (r"-latency-throughput$", ":figures"),
    (r"^sensitivity-", ":sensitivity"),
    (r"^input-ranges$", ":assumptions"),
    (r"-pareto$", ":questions"),
)
# The fixed parts of the document, in order, with their titles (section titles come between
# assumptions and checks).
PARTS = {":summary": "Decision", ":levers": "Levers, priced", ":assumptions": "Assumptions", ":checks": "Checks",
         ":questions": "Questions", ":sensitivity": "Sensitivity", ":source": "Appendix: plan source",
         ":figures": "Figures"}
BODY = (":summary", ":levers", ":questions", ":sensitivity", ":figures")


def parts(doc: DocumentView) -> list[str]:
    body = [":summary"] + [p for p, present in ((":levers", doc.levers), (":questions", doc.questions),
                                                (":sensitivity", doc.sensitivities)) if present]
    if doc.brief:
        return body
    return body + [":assumptions"] + [p for p, present in ((":checks", doc.checks), (":source", doc.source)) if present]


def place(figures: Iterable[Any], doc: DocumentView) -> dict[tuple[str, str], list[tuple[int, Any]]]:
    fixed = set(parts(doc))
    sections = {s.title for s in doc.sections} if not doc.brief else set()
    by_slug = {"sensitivity-" + slug(s.target): s.target for s in sorted(doc.sensitivities, key=lambda s: s.target)}
    placed: dict[tuple[str, str], list[tuple[int, Any]]] = {}
    for n, fig in enumerate(figures):
        where = next((p for pattern, p in FIGURE_PLACES if re.search(pattern, fig.name)), ":figures")
        if fig.name in by_slug:
            key = ("sensitivity", by_slug[fig.name])
        elif where in PARTS and where not in BODY and doc.brief:
            continue  # an appendix figure: the brief document has no appendix
        elif where in fixed:
            key = ("part", where)
        else:
            key = ("section", where) if where in sections else ("part", ":figures")
        placed.setdefault(key, []).append((n, fig))
    return placed
