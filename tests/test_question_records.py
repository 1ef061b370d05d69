"""Questions are elaborated into typed records like the rest of the plan (issue 14 item 3): their
paths resolved to fields once, a misspelt path a diagnostic at the user's own text during
elaboration, a variant of the plan answering none, and no stage after elaboration reading a
question's syntax tree."""

from __future__ import annotations

import re
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import planc
from planc import diagnostics as dx
from planc.pipeline import Compilation
from planc.semantics import ir
from planc.semantics.elaborate import elaborate_variant
from planc.solve import TableAnswer
from planc.syntax import ast

from .test_solve import plan

QUESTIONS = """
ask "max batch": maximize d.batch subject to d.memory_per_device <= d.usable_memory given d.context = 4096 tokens
ask "cheapest": minimize d.cost_per_month over d.tensor_parallel subject to d.tpot <= 40 ms
solve devices for d
scenario "twice the traffic" { t.daily_active_users = 20 M users }
compare d over weights in [fp8, bf16]
sweep d over batch in 8 .. 64 log2 -> line(tpot, devices)
search d over weights in [fp8, bf16], batch in 8 .. 32 log2 minimize devices subject to d.tpot <= 40 ms -> pareto(devices, tpot)
"""


def test_each_question_is_a_typed_record_with_resolved_fields(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(plan(QUESTIONS))
    assert c.ok, [d.message for d in c.diagnostics]
    assert c.elaborated is not None
    ask, cheapest, solve, scenario, compare, sweep, search = c.elaborated.questions
    assert isinstance(ask, ir.Ask) and ask.unknown == ("d", "batch") and ask.quantity is None
    assert [(g.field, g.value.span.text) for g in ask.given] == [(("d", "context"), "4096 tokens")]
    assert isinstance(cheapest, ir.Ask) and cheapest.unknown == ("d", "tensor_parallel")
    assert cheapest.quantity is not None and cheapest.quantity.field == ("d", "cost_per_month")
    assert isinstance(solve, ir.Solve) and solve.field == ("d", "devices") and solve.title == "solve devices for d"
    assert isinstance(scenario, ir.Scenario) and scenario.settings[0].field == ("t", "daily_active_users")
    assert isinstance(compare, ir.Table) and compare.keyword == "compare" and compare.subject == "d"
    assert [a.field for a in compare.axes] == [("d", "weights")] and not compare.columns
    assert isinstance(sweep, ir.Table) and sweep.keyword == "sweep"
    assert sweep.axes[0].whole == c.elaborated.nodes["d.batch"].integral
    assert [col.field for col in sweep.columns] == [("d", "tpot"), ("d", "devices")]
    assert isinstance(search, ir.Search) and search.target.field == ("d", "devices")
    assert [a.label for a in search.axes] == ["weights", "batch"]
    assert [col.label for col in search.pareto] == ["devices", "tpot"]
    # every answer names the record it answers, which is the plan's own
    assert [a.question for a in c.answers] == c.elaborated.questions
    table = next(a for a in c.answers if isinstance(a, TableAnswer) and a.kind == "search")
    assert table.axes == ["weights", "batch"] and table.columns[0][0] == "devices"


def test_a_misspelt_path_is_reported_at_elaboration(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(plan('ask "b": maximize d.bacth subject to d.memory_per_device <= d.usable_memory\n'
                          "sweep d over contxt in 1024 .. 4096 log2\n"))
    errors = [d for d in c.diagnostics if d.is_error]
    assert [d.code for d in errors] == [dx.UNKNOWN_NAME.code] * 2
    first, second = errors
    assert first.primary is not None and first.primary.span.text == "d.bacth"
    assert "did you mean `d.batch`?" in (first.help or "")
    assert second.primary is not None and second.primary.span.text == "contxt"
    assert "did you mean `d.context`?" in (second.help or "")
    assert c.lowered is None and not c.answers  # stopped with the other name errors, before evaluation
    assert c.exit_code == 2


def test_a_given_that_names_no_field_is_reported_with_the_unknown(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(plan('ask "b": maximize d.btch subject to d.tpot <= 40 ms given d.contex = 4096 tokens\n'))
    assert sorted(d.primary.span.text for d in c.diagnostics if d.is_error and d.primary) == ["d.btch", "d.contex"]


def test_solve_for_something_that_is_not_an_instance(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(plan("solve devices for d.model\n"))
    (err,) = [d for d in c.diagnostics if d.is_error]
    assert err.code == dx.WRONG_TYPE.code and err.primary is not None and err.primary.span.text == "d.model"


def test_a_variant_answers_no_question(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(plan(QUESTIONS))
    assert c.program is not None and c.elaborated is not None and len(c.elaborated.questions) == 7
    sink = dx.Sink()
    variant = elaborate_variant(c.program, sink, {("d", "batch"): ast.Number(c.elaborated.questions[0].span, "16", Fraction(16), (), None)})
    assert not sink.has_errors and variant.questions == []


def test_no_stage_after_elaboration_reads_a_question_syntax_tree() -> None:
    """The solve stage and the report read `ir` question records only; the statements' syntax
    classes appear nowhere past `semantics/`."""
    root = Path(planc.__file__).parent
    statement = re.compile(r"\bast\.(AskStmt|SolveStmt|ScenarioStmt|CompareStmt|SweepStmt|SearchStmt|Domain|Plot|Question)\b")
    readers = [p for d in ("solve", "report") for p in sorted((root / d).rglob("*.py"))]
    assert readers
    offenders = [str(p.relative_to(root)) for p in readers if statement.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
    assert not [str(p.relative_to(root)) for p in readers if '"stmt"' in p.read_text(encoding="utf-8")]


def test_a_node_id_reads_back_into_its_owner_and_field() -> None:
    for owner, field in [("chat", "batch"), ("h100_sxm", "peak_flops[bf16]"), ("dtype", "bf16.bytes")]:
        assert ir.field_ref(ir.node_id(owner, field)) == (owner, field)
    assert ir.field_ref("total_devices") == ("", "total_devices")  # a `let`
    assert ir.field_ref("chat@mixed_step_time.batch") == ("chat@mixed_step_time", "batch")  # a variant's node
