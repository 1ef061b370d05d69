"""A conditional on a static flag (a `bool` input set in the plan) is resolved while elaborating:
the formula shows only the branch in effect, and a term it switches off disappears rather than
reading `… + 0`."""

from __future__ import annotations

from collections.abc import Callable

from planc.pipeline import Compilation
from planc.report.view import build_document

PLAN = """
kind layer {{
  input width: count
  input bias: bool = false
  derive params: count = width * width + (if bias then width else 0) - (if bias then 0 else 1)
}}
layer a {{ width = 4 }}
layer b {{ width = 4; bias = true }}
let c = {dynamic}
"""


def _formula(c: Compilation, qid: str) -> str:
    return next(q.formula for s in build_document(c).sections for q in s.quantities if q.id == qid)


def test_a_term_switched_off_by_a_static_flag_leaves_the_formula(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(PLAN.format(dynamic="a.params"))
    assert c.ok and c.lowered is not None, c.diagnostics
    v = c.lowered.values
    assert v["a.params"] == 15 and v["b.params"] == 20  # 16 - 1, and 16 + 4 - 0
    assert "+ 0" not in _formula(c, "a.params") and "- 1" in _formula(c, "a.params")
    assert "+ w" in _formula(c, "b.params").replace("\\mathrm{width}", "w") and "- 0" not in _formula(c, "b.params")


def test_a_conditional_on_a_quantity_stays_in_the_formula(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(PLAN.format(dynamic="1 + (if a.params > 10 then 0 else 1)"))
    assert c.ok and c.lowered is not None, c.diagnostics
    assert c.lowered.values["c"] == 1
    assert "cases" in _formula(c, "c")  # decided by a value, not by the plan's structure: shown
