"""Solve: answer the plan's questions — ask (optimise one unknown under constraints), solve an
equation for an unknown, scenarios, comparisons, sweeps, searches — and the sensitivities of
the headline numbers.

Contract
- `answer(program, lowered, sink, progress=) -> (answers, sensitivities, bindings, levers, also)` runs after
  lowering: the answers in question order, the elasticities of each summary item, the
  `max`/`min` choices behind the headline (the first summary item), and a function that prices
  every lever that applies (the plan's, then its kinds'; called by the report, not by a check)
  as a variant of the plan on the summary and the checks, and what `also_ahead` gives (work the
  report needs, done in the levers' second process). Every answer is a typed record
  (`answers.py`) the report formats; nothing here formats text for people except the algebra
  (LaTeX).
- One module per question kind, each a mixin over `SolverBase` (`base.py`: fields, variants,
  domains): `ask.py` (ask, solve ... for), `tables.py` (scenario, compare, sweep), `search.py`,
  `sensitivity.py` (sensitivities, bindings, levers); `probe.py` is the root finding they stand
  on, `choices.py` what decides a quantity, `graph.py` and `literals.py` shared queries on the
  IR and on a question's values. `Solver` below is their union and `question` its dispatch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import diagnostics as dx
from ..jobs import Later, ahead_each
from ..lower import Lowered
from ..semantics import ir
from ..semantics.resolve import Program
from .answers import Answer, AskAnswer, Choice, LeverAnswer, Limit, Sensitivity, SolveAnswer, TableAnswer
from .ask import Asks
from .search import Searches
from .sensitivity import Sensitivities
from .tables import Tables

__all__ = ["Answer", "AskAnswer", "Choice", "LeverAnswer", "Limit", "Sensitivity", "SolveAnswer", "Solver",
           "TableAnswer", "answer"]


def answer(program: Program, lowered: Lowered, sink: dx.Sink, price_ahead: bool = False,
           progress: Callable[[str], None] | None = None, also_ahead: Sequence[Callable[[], Any] | Later[Any]] = ()
           ) -> tuple[list[Answer], list[Sensitivity], list[Choice], Callable[[], list[LeverAnswer]],
                      list[Callable[[], Any]]]:
    """`price_ahead`: a report will read the levers, so their pricing starts now, in a second
    process when there is one (`jobs.ahead_each`), while this one answers the questions.
    `also_ahead`: more work the report needs from the lowered plan, done in that process after
    the levers; the last item gives their results, in order. `progress` is told of a step that
    can take over a second (a search of many configurations)."""
    solver = Solver(program, lowered, sink)
    if progress is not None:
        solver.progress = progress
    levers: Callable[[], list[LeverAnswer]] = solver.levers
    priced = bool(price_ahead and lowered.elaborated.summary and lowered.levers)
    started = ahead_each(([solver.lever_prices] if priced else []) + list(also_ahead))
    if priced:
        prices = started.pop(0)

        def levers() -> list[LeverAnswer]:
            return solver.levers(prices())
    answers: list[Answer] = []
    for q in lowered.elaborated.questions:
        result = solver.question(q)
        if result is not None:
            answers.append(result)
    return answers, solver.sensitivities(), solver.headline_choices(), levers, started


class Solver(Asks, Tables, Searches, Sensitivities):
    """Every question kind over one plan, with the variants they build shared (memoised)."""

    def question(self, q: ir.Question) -> Answer | None:
        if isinstance(q, ir.Ask):
            return self.ask(q)
        if isinstance(q, ir.Scenario):
            return self.scenario(q)
        if isinstance(q, ir.Table):
            return self.table(q)
        if isinstance(q, ir.Search):
            return self.search(q)
        return self.solve(q)
