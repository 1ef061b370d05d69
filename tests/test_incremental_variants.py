"""A variant of a plan (a lever, a question's `given`, a comparison's or a search's point)
elaborated from the memo of the plan it varies is the variant elaborated in full: the same
report, byte for byte, and the nodes the overrides cannot reach are the plan's own objects."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from planc import diagnostics as dx
from planc import lower as lowering
from planc.pipeline import Compilation, compile_plan
from planc.report.machine import document_json
from planc.report.markdown import render_json, render_markdown
from planc.report.view import build_document
from planc.semantics import elaborate as elaboration
from planc.semantics.elaborate import elaborate_variant
from planc.syntax import ast

from .conftest import REPO

FLAGSHIP = REPO / "examples" / "100m_dau.plan"

# questions whose variants change the plan's shape, not only its numbers: another accelerator
# (an instance), other precisions (enums), a map entry, a static switch, and the search's axes
QUESTIONS = '''
compare chat over hardware in [h100_sxm, h200]
compare chat over kv in [bf16, fp8]
scenario "eager" { chat.cuda_graphs = false }
scenario "bf16 on h200" { chat.hardware = h200; chat.weights = bf16 }
scenario "slower fp8 matmuls" { h100_sxm.matmul_flops[fp8] = 1000 TFLOP/s }
'''


def _reports(path: Path) -> tuple[str, str, int]:
    c = compile_plan(path)
    assert c.ok, [d.message for d in c.diagnostics]
    doc = build_document(c)
    return render_markdown(doc), render_json(document_json(doc, c)), c.exit_code


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Path]]:
    root = tmp_path_factory.mktemp("incremental")
    shaped = root / "shaped.plan"
    shaped.write_text(FLAGSHIP.read_text(encoding="utf-8") + QUESTIONS, encoding="utf-8")
    yield [shaped, REPO / "examples" / "request_classes.plan", REPO / "examples" / "sliding_window_gemma.plan"]


def test_a_variant_from_the_memo_reports_what_the_full_elaboration_does(
        plans: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    for path in plans:
        incremental = _reports(path)
        with monkeypatch.context() as m:
            m.setattr(elaboration, "INCREMENTAL", False)
            full = _reports(path)
        assert incremental == full, path.name


def _variant(c, overrides: dict[tuple[str, str], str]):  # type: ignore[no-untyped-def]
    """A lean variant of a compiled plan, from its memo, with each override a boolean, an enum
    member or an instance named in the plan."""
    assert c.program is not None and c.elaborated is not None
    span = c.elaborated.nodes["chat.batch"].span
    exprs = {k: ast.Bool(span, v == "true") if v in ("true", "false") else ast.Name(span, v)
             for k, v in overrides.items()}
    sink = dx.Sink()
    out = elaborate_variant(c.program, sink, exprs, lean=True, base=c.elaborated)
    assert not sink.has_errors, [d.message for d in sink.items]
    return out


def test_what_an_override_cannot_reach_is_kept_and_what_it_reaches_is_not() -> None:
    c = compile_plan(FLAGSHIP)
    base = c.elaborated
    assert base is not None
    eager = _variant(c, {("chat", "cuda_graphs"): "false"})
    # the model's parameter count does not read the deployment's CUDA-graph switch: the same node
    params = next(n for n in base.nodes if n.endswith(".params") and not n.startswith("chat"))
    assert eager.nodes[params] is base.nodes[params]
    # the runtime overhead reads it (`if cuda_graphs then ...`): elaborated again, to another formula
    assert eager.nodes["chat.runtime_overhead"] is not base.nodes["chat.runtime_overhead"]
    assert eager.nodes["chat.runtime_overhead"].expr != base.nodes["chat.runtime_overhead"].expr
    # the KV budget reads the overhead by name, so its formula and its node are the plan's
    assert eager.nodes["chat.kv_budget"] is base.nodes["chat.kv_budget"]
    # another accelerator: the nodes that read its figures are elaborated again, against the H200's
    h200 = _variant(c, {("chat", "hardware"): "h200"})
    assert h200.nodes[params] is base.nodes[params]
    assert h200.nodes["chat.usable_memory"] is not base.nodes["chat.usable_memory"]
    assert "h200.memory" in h200.nodes["chat.usable_memory"].deps


CUTOFF = '''
kind box "a toy" {
  input a: count = 2 "a count"
  derive floor_of: count = max(a, 5) "at least five"
  derive tripled: count = floor_of * 3 "three times that"
  derive plus: count = a + 1 "one more than a"
}
box b { }
summary b.tripled
scenario "a of 3" { b.a = 3 }
scenario "a of 7" { b.a = 7 }
'''


def test_a_variant_stops_evaluating_where_a_value_comes_out_unchanged(
        compile_text: Callable[[str], Compilation], evaluated_nodes: list[str]) -> None:
    """Lowering a variant from the plan it varies evaluates what an override reaches, and stops
    below a node whose value comes out the same, of the same type: what reads only such nodes
    is the plan's own value (`lower._same_value`). Where the value moves, the readers move too."""
    evaluated = evaluated_nodes
    c = compile_text(CUTOFF)
    assert c.ok, [d.message for d in c.diagnostics]
    # the plan once, then each scenario: `max(3, 5)` is still 5, so `tripled` is not evaluated
    # for "a of 3"; `max(7, 5)` is 7, so it is for "a of 7"
    assert evaluated.count("b.tripled") == 2
    assert evaluated.count("b.floor_of") == 3 and evaluated.count("b.plus") == 3
    rows = dict(row for a in c.answers for row in a.rows)
    assert rows["a of 3"] == [15] and rows["a of 7"] == [21]


def test_a_rational_and_a_float_of_the_same_value_are_not_the_same_value() -> None:
    from fractions import Fraction
    assert not lowering._same_value(1.0, Fraction(1))
    assert not lowering._same_value(Fraction(1), True)
    assert lowering._same_value(Fraction(3, 2), Fraction(3, 2)) and lowering._same_value(0.5, 0.5)
