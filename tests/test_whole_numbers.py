"""Fields declared `integer` (batch, parallelism degrees, replicas, KV block size) take whole
numbers only: a fraction the plan writes is E0409 at the plan's own value, in an instance, in an
expression or in a question's domain, and a range over such a field steps through whole numbers."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from planc.pipeline import Compilation
from planc.solve.literals import range_points

from .test_infeasible import PLAN

Compile = Callable[[str], Compilation]


def _plan(setting: str = "", question: str = "") -> str:
    """The small plan of the infeasibility tests, with one more line in its deployment."""
    field, _, value = setting.partition(" = ")
    tp, extra = (value, "") if field == "tensor_parallel" else ("1", f"\n  {setting}" if setting else "")
    return PLAN.format(model="llama-3.1-8b", instance="llama_3_1_8b", tp=tp, extra=extra) + question + "\n"


def _errors(c: Compilation) -> list[object]:
    return [d for d in c.diagnostics if d.is_error]


@pytest.mark.parametrize("setting, shown", [("batch = 64.5", "64.5"), ("tensor_parallel = 8 / 3", "2.667"),
                                            ("kv_block_size = 12.5 tokens", "12.5 tokens")])
def test_a_fraction_the_plan_gives_a_count_is_an_error_at_its_own_line(compile_text: Compile, setting: str, shown: str) -> None:
    c = compile_text(_plan(setting))
    (error,) = _errors(c)  # one error, at the root: nothing downstream repeats it
    assert c.exit_code == 2 and error.code == "E0409"
    assert error.primary.span.text == setting.split(" = ")[1] and not error.primary.span.file.is_stdlib
    assert f"not {shown}" in error.message
    (declared,) = error.secondary  # the stdlib's declaration, as a second label
    assert declared.span.text.startswith("integer") and declared.span.file.is_stdlib
    assert error.help.startswith("round it to ")


def test_whole_numbers_pass_and_the_stdlib_may_bind_the_same_fields_to_means(compile_text: Compile) -> None:
    # the stdlib evaluates the step at the mean running batch (`batch = operating_batch`, 39.14
    # here): the declaration holds the plan's values, not the stdlib's own variants
    c = compile_text(_plan("batch = 64"))
    assert c.ok and not _errors(c)
    c = compile_text(_plan("tensor_parallel = 2"))
    assert c.ok and not _errors(c)


def test_the_stdlib_declares_the_counts_whole(compile_text: Compile) -> None:
    c = compile_text(_plan())
    nodes = c.lowered.elaborated.nodes
    whole = {f for f in ("batch", "tensor_parallel", "pipeline_parallel", "expert_parallel", "max_num_seqs",
                         "regions", "spare_replicas", "draft_tokens", "kv_block_size") if nodes[f"chat.{f}"].integral}
    assert whole == {"batch", "tensor_parallel", "pipeline_parallel", "expert_parallel", "max_num_seqs",
                     "regions", "spare_replicas", "draft_tokens", "kv_block_size"}
    assert not nodes["chat.utilization_target"].integral  # a fraction by nature


@pytest.mark.parametrize("question, bad", [("compare chat over tensor_parallel in [1, 2.5]", "2.5"),
                                           ("sweep chat over tensor_parallel in 1 .. 2.5 linear", "2.5"),
                                           ("sweep chat over batch in 0.5 .. 64 log2", "0.5")])
def test_a_question_that_gives_a_count_a_fraction_is_an_error_at_the_value(compile_text: Compile, question: str, bad: str) -> None:
    c = compile_text(_plan(question=question))
    (error,) = _errors(c)
    assert error.code == "E0409" and error.primary.span.text == bad


def test_a_range_over_a_count_steps_through_whole_numbers() -> None:
    assert range_points(1, 100_000, "linear", whole=True) == sorted(set(range_points(1, 100_000, "linear", whole=True)))
    assert all(p.is_integer() for p in range_points(1, 100_000, "linear", whole=True))
    assert len(range_points(1, 100_000, "linear", whole=True)) == 17
    assert not all(p.is_integer() for p in range_points(1, 100_000, "linear"))  # a quantity need not
    assert range_points(1, 64, "log2", whole=True) == [1, 2, 4, 8, 16, 32, 64]


def test_a_domain_named_from_a_quantity_instead_of_the_instance_is_an_error_that_shows_the_form(compile_text: Compile) -> None:
    c = compile_text(_plan(question="sweep chat.devices over chat.batch in 1 .. 50 linear"))
    (error,) = _errors(c)
    assert error.code == "E0201" and "`over batch in ...` varies `chat.batch`" in error.help
