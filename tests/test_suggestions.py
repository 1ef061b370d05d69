"""`did you mean …?`: what a plan sets is an input, so inputs are proposed first, and the usual
ways of getting a name wrong (an abbreviation, a word of it, a misspelling) each find it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from planc.pipeline import Compilation
from planc.semantics.elaborate import suggestion

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
