"""The pipeline in one screen: parse → resolve → elaborate → lower → solve (and carry input
ranges through) → report.

Contract: `compile_plan(path)` never raises for a bad plan; it returns a `Compilation` whose
`diagnostics` say what is wrong. `lowered` is set only when there are no errors, and only then
may a report be rendered from it. `exit_code` follows the CLI convention: 0 ok, 1 a check
failed or the plan is well-formed but infeasible (nothing meets a search's condition, E0407; a
requirement on derived quantities fails, E0408), 2 the plan is invalid.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import diagnostics as dx
from .lower import Lowered, lower
from .semantics import ir
from .semantics.elaborate import elaborate
from .semantics.lint import restated, unused
from .semantics.resolve import Program, load_program

if TYPE_CHECKING:  # the solver loads only for plans with questions or a summary
    from .jobs import Later
    from .solve.answers import Answer, Choice, LeverAnswer, Sensitivity


@dataclass
class Compilation:
    path: str
    diagnostics: list[dx.Diagnostic] = field(default_factory=list)
    lowered: Lowered | None = None
    answers: list[Answer] = field(default_factory=list)
    sensitivities: list[Sensitivity] = field(default_factory=list)
    bindings: list[Choice] = field(default_factory=list)  # what binds the headline
    # every lever that applies, priced: on first use, by the report — a check or a starter's
    # validation does not pay for the variants
    _levers: list[LeverAnswer] | Callable[[], list[LeverAnswer]] | None = None
    uncertainty: Any = None  # uncertainty.Uncertainty, when some input is given as a range
    also: list[Callable[..., Any]] = field(default_factory=list)  # what `compile_plan`'s `also` gives, started ahead
    source: str = ""  # the plan's own text, for the report's appendix
    # what the stages built, for tools that index names (the language server), even when a
    # later stage found errors: the loaded program and the elaborated graph
    program: Program | None = None
    elaborated: ir.Elaborated | None = None

    @property
    def levers(self) -> list[LeverAnswer]:
        if callable(self._levers):
            self._levers = self._levers()
        return self._levers or []

    @property
    def ok(self) -> bool:
        return self.lowered is not None

    @property
    def failed_checks(self) -> int:
        return sum(not c.holds for c in self.lowered.checks) if self.lowered else 0

    @property
    def infeasible(self) -> int:
        return sum(1 for a in self.answers if getattr(a, "infeasible", None))

    @property
    def exit_code(self) -> int:
        if not self.ok:  # infeasible (no value meets a search's condition, the physics' requirements fail) is 1
            errors = [d for d in self.diagnostics if d.is_error]
            infeasible = (dx.NO_FEASIBLE_VALUE.code, dx.INFEASIBLE_PLAN.code)
            return 1 if errors and all(d.code in infeasible for d in errors) else 2
        return 1 if self.failed_checks or self.infeasible else 0


def compile_plan(path: Path | str, shown: str | None = None, texts: Mapping[Path, str] | None = None,
                 report: bool = False, progress: Callable[[str], None] | None = None,
                 also: Sequence[Callable[[Lowered], Any] | Later[Any]] = ()) -> Compilation:
    """`texts`: real paths to text that stands in for those files on disk (the language
    server's unsaved buffers). `report`: a document will be rendered from the result, so the
    levers it prices start at once, in a second process when there is one, while the questions
    are answered (the same prices either way); after them there, `also` (more work the report
    needs, each given the lowered plan: the CLI's figures of the plan) and the input ranges
    (`uncertainty`), then the `jobs.Later` works of `also`, whose work is given the lowered plan and
    the input sent later (the answers' figures). `Compilation.also` gives their getters, in the
    order of `also` (`jobs.ahead_each`'s). What that process has not started when this one needs it
    is done here, but for a `Later`. `progress` is told of a step that can take over a second (the
    CLI prints it on a terminal)."""
    shown = shown if shown is not None else str(path)
    sink = dx.Sink()
    result = Compilation(shown)
    program = load_program(Path(path), sink, shown, texts)
    if program is not None:
        result.source = program.main_file.text
        result.program = program
    if program is not None and not sink.has_errors:
        restated(program, sink)
        elaborated = result.elaborated = elaborate(program, sink)
        if not sink.has_errors:
            unused(program, elaborated, sink)
            lowered = lower(elaborated, sink)
            ranged = not sink.has_errors and any(n.interval for n in elaborated.nodes.values())
            # a report's work on the lowered plan alone, after the levers and beside this process, which
            # takes back what the child has not started when it needs it (the input ranges last: this
            # process does them when its questions end before the child's earlier work)
            ranged_ahead = report and ranged
            from .jobs import Later

            extra = [Later(functools.partial(w.work, lowered)) if isinstance(w, Later) else functools.partial(w, lowered)
                     for w in also] if report and not sink.has_errors else []
            now = [w for w in extra if not isinstance(w, Later)]
            later = [w for w in extra if isinstance(w, Later)]
            ranges = functools.partial(_propagate, lowered)
            ahead = now + ([ranges] if ranged_ahead else []) + later
            started: list[Callable[[], Any]] = []
            if not sink.has_errors and (elaborated.questions or elaborated.summary):
                from .solve import answer  # numpy and sympy load only for plans with questions

                result.answers, result.sensitivities, result.bindings, result._levers, started = answer(
                    program, lowered, sink, price_ahead=report, progress=progress, also_ahead=ahead)
            elif ahead:
                from .jobs import ahead_each

                started = ahead_each(ahead)
            got_now, got_later = started[:len(now)], started[len(started) - len(later):]
            result.also = [got_later.pop(0) if isinstance(w, Later) else got_now.pop(0) for w in extra]
            uncertainty = started[len(now)] if ranged_ahead else ranges
            if ranged and not sink.has_errors:
                result.uncertainty = uncertainty()
            if not sink.has_errors:
                result.lowered = lowered
    result.diagnostics = sink.sorted()
    return result


def _propagate(lowered: Lowered) -> Any:
    from .uncertainty import propagate  # numpy loads only for a plan with ranges

    return propagate(lowered)
