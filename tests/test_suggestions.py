"""`did you mean …?`: what a plan sets is an input, so inputs are proposed first, and the usual
ways of getting a name wrong (an abbreviation, a word of it, a misspelling) each find it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from planc.pipeline import Compilation
from planc.semantics.values import suggestion

FIELDS = ["tensor_parallel", "tpot", "tpot_slo", "kv", "kv_budget", "kv_bytes_per_token", "batch", "layers",
          "norms_per_layer", "pipeline_parallel"]
INPUTS = ["tensor_parallel", "tpot_slo", "kv", "batch", "layers", "pipeline_parallel"]


@pytest.mark.parametrize(("typed", "meant"), [
    ("tp", "tensor_parallel"),  # initials, not the derived `tpot` a spelling match would give
    ("pp", "pipeline_parallel"),
    ("kv_cache", "kv"),  # a word of it
    ("tensor_paralel", "tensor_parallel"),  # a misspelling
    ("layer", "layers"),  # not norms_per_layer, which merely shares the word
    ("batchsize", "batch"),
])
def test_the_name_meant(typed: str, meant: str) -> None:
    assert suggestion(typed, FIELDS, INPUTS) == meant


def test_nothing_close_is_no_suggestion() -> None:
    assert suggestion("zzz", FIELDS, INPUTS) is None


def test_an_abbreviated_field_in_a_deployment_suggests_the_input(compile_text: Callable[[str], Compilation]) -> None:
    from .test_infeasible import _plan

    c = compile_text(_plan(extra="\n  tp = 2").replace("  tensor_parallel = 1\n", ""))
    (error,) = [d for d in c.diagnostics if d.code == "E0203"]
    assert error.help == "did you mean `tensor_parallel`?"


def test_a_network_rate_in_gbps_is_a_unit_not_a_misspelt_gpu(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text('import "hardware/h100-sxm"\naccelerator fast = h100_sxm { scale_out_bandwidth = 400 Gbps }\n')
    assert not [d for d in c.diagnostics if d.is_error]
    assert c.lowered.values["fast.scale_out_bandwidth"] == 50 * 10**9


@pytest.mark.parametrize(("text", "hint"), [
    # the sign inside a money literal: not "a word after a number"
    ('let price: USD/h = $-2.5/h\n', "a sign goes before it: `-$2.5/h`"),
    # a header in another language's form
    ('import "hardware/h100-sxm"\naccelerator cheap from h100_sxm { price = 1 USD/h }\n',
     "or from another as `kind name = base { field = value }`"),
    # what the old hint was for: a unit word after a number
    ('let a = 2 foo\n', "a word after a number is read as its unit"),
])
def test_parse_and_unit_hints_fit_the_mistake(compile_text: Callable[[str], Compilation], text: str, hint: str) -> None:
    (error,) = [d for d in compile_text(text).diagnostics if d.is_error]
    assert hint in error.help, error.help


def test_a_failed_requirement_shows_its_sides_in_the_unit_the_plan_writes(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text('import "hardware/h100-sxm"\naccelerator cheap = h100_sxm { price = -2.5 USD/h }\n')
    (error,) = [d for d in c.diagnostics if d.is_error]
    assert error.code == "E0404" and "-2.5 USD/h vs 0 USD/h" in error.notes[0]  # not -6.944e-4 USD/s
