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
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
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
    elaborated_cleanly: bool = False  # elaboration reported no error (the graph is the whole plan's)

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
                 also: Sequence[Callable[[Lowered], Any] | Later[Any]] = (), answering: bool = True) -> Compilation:
    """`texts`: real paths to text that stands in for those files on disk (the language
    server's unsaved buffers). `report`: a document will be rendered from the result, so the
    levers it prices start at once, in a second process when there is one, while the questions
    are answered (the same prices either way); after them there, `also` (more work the report
    needs, each given the lowered plan: the CLI's figures of the plan) and the input ranges
    (`uncertainty`), then the `jobs.Later` works of `also`, whose work is given the lowered plan and
    the input sent later (the answers' figures). `Compilation.also` gives their getters, in the
    order of `also` (`jobs.ahead_each`'s). What that process has not started when this one needs it
    is done here, but for a `Later`. `progress` is told of a step that can take over a second (the
    CLI prints it on a terminal). `answering=False`: the plan lowered and its checks evaluated, its
    questions left unanswered and the summary's sensitivities not computed (`plan init`'s probes
    of a degree read only the fleet and the exit code)."""
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
        result.elaborated_cleanly = not sink.has_errors
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
            if answering and not sink.has_errors and (elaborated.questions or elaborated.summary):
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


_WRITTEN = re.compile(r"(\d+(?:\.\d+)?)(?![\d.eE_])")  # a literal's leading plain number, before its unit


def vary(compiled: Compilation, numbers: Mapping[tuple[str, str], int]) -> Compilation | None:
    """The plan of `compiled` with some of its numeric inputs, each written as a plain number
    (`("chat", "tensor_parallel"): 4`), set to other numbers: its elaborated graph lowered again
    with those literals (`ir.with_literals`, as the solver builds a question's numeric variants),
    rather than the changed text loaded and elaborated anew. Its values, checks
    and errors are those of the plan with the numbers written in; it carries no lints of
    elaboration, no remedies and no answers (`plan init`'s probes of each degree). None when the
    plan did not elaborate cleanly or a name is not a number the plan writes: compile the text."""
    el = compiled.elaborated
    if el is None or not compiled.elaborated_cleanly:
        return None
    literals: dict[str, tuple[ir.Lit, Any]] = {}
    for (instance, name), number in numbers.items():
        node_id = ir.node_id(instance, name)
        node = el.nodes.get(node_id)
        written = _WRITTEN.match(node.expr.text) if node is not None and isinstance(node.expr, ir.Lit) else None
        if node is None or not node.is_input or written is None or Fraction(written[1]) == 0:
            return None
        old = node.expr
        assert isinstance(old, ir.Lit)
        # the number in the literal's own unit (`128 tokens`, `2 ms`): its value scales as the written number
        literal = ir.Lit(old.value * Fraction(number) / Fraction(written[1]), old.dim, old.span,
                         f"{number}{old.text[written.end(1):]}")
        literals[node_id] = (literal, node.span)
    sink = dx.Sink()
    variant = ir.with_literals(el, literals)
    lowered = lower(variant, sink, reuse=compiled.lowered, remedies=False)
    result = Compilation(compiled.path, source=compiled.source, program=compiled.program, elaborated=variant,
                         elaborated_cleanly=True)
    result.diagnostics = sink.sorted()
    if not sink.has_errors:
        result.lowered = lowered
    return result


def _propagate(lowered: Lowered) -> Any:
    from .uncertainty import propagate  # numpy loads only for a plan with ranges

    return propagate(lowered)
