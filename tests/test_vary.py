"""`pipeline.vary`: a compiled plan with some of the numbers it writes set to others, lowered again
from its elaborated graph, is the plan with those numbers written in and compiled in full: the
same value for every node, the same checks, the same first error. `plan init`'s probes of each
tensor-parallel degree and `plan validate`'s rows of one table's shape are built this way."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from planc import starter
from planc import validate as v
from planc.pipeline import Compilation, compile_plan, vary

from .conftest import REPO

TP = ("chat", "tensor_parallel")


def _compiled(tmp_path: Path, text: str, name: str) -> Compilation:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return compile_plan(path, answering=False)


def _same_values(a: Compilation, b: Compilation) -> None:
    assert a.lowered is not None and b.lowered is not None
    assert a.lowered.values.keys() == b.lowered.values.keys()
    differ = [n for n, x in a.lowered.values.items() if not (x == b.lowered.values[n] or (
        isinstance(x, float) and math.isnan(x) and math.isnan(b.lowered.values[n])))]  # type: ignore[arg-type]
    assert not differ, differ[:5]
    assert [(c.holds, c.left, c.right, c.label) for c in a.lowered.checks] == [(c.holds, c.left, c.right, c.label) for c in b.lowered.checks]


@pytest.mark.parametrize("degree", [2, 8])
def test_a_varied_degree_is_the_plan_compiled_at_that_degree(tmp_path: Path, degree: int) -> None:
    """Llama-3.1-70B on H200 at tensor parallel 1 (its weights do not fit one device: lowering
    fails) varied to 2 and 8 gives every value and check a plan written at that degree gives."""
    model, hardware = starter._catalog("llama-3.1-70b", "models"), starter._catalog("h200", "hardware")
    one = _compiled(tmp_path, starter._text(model, hardware, "1 M users", 1, ""), "tp1.plan")
    assert one.lowered is None and one.elaborated_cleanly  # the weights do not fit: an error of lowering
    varied = vary(one, {TP: degree})
    assert varied is not None
    full = _compiled(tmp_path, starter._text(model, hardware, "1 M users", degree, ""), f"tp{degree}.plan")
    _same_values(varied, full)
    assert varied.exit_code == full.exit_code


def test_a_varied_plan_that_fails_fails_with_the_full_compiles_error(tmp_path: Path) -> None:
    """Llama-3.1-8B varied from 1 to 3 devices a replica (its 32 heads do not divide by 3) and
    back to 1: the error and the exit code of the plan written at 3, then the plan itself."""
    model, hardware = starter._catalog("llama-3.1-8b", "models"), starter._catalog("h100-sxm", "hardware")
    one = _compiled(tmp_path, starter._text(model, hardware, "1 M users", 1, ""), "tp1.plan")
    three = _compiled(tmp_path, starter._text(model, hardware, "1 M users", 3, ""), "tp3.plan")
    varied = vary(one, {TP: 3})
    assert varied is not None and three.lowered is None and varied.lowered is None
    first = [next(d.message for d in c.diagnostics if d.is_error) for c in (varied, three)]
    assert first[0] == first[1]
    assert varied.exit_code == three.exit_code != 0
    back = vary(one, {TP: 1})
    assert back is not None
    _same_values(back, one)


def test_vary_refuses_what_it_cannot_vary(tmp_path: Path) -> None:
    """A name the plan does not write as a number, or a plan that did not elaborate: None (the
    caller compiles the text)."""
    model, hardware = starter._catalog("llama-3.1-8b", "models"), starter._catalog("h100-sxm", "hardware")
    one = _compiled(tmp_path, starter._text(model, hardware, "1 M users", 1, ""), "tp1.plan")
    assert vary(one, {("chat", "batch"): 8}) is None  # a result of the engine model, not written
    assert vary(one, {("chat", "no_such_field"): 1}) is None
    broken = _compiled(tmp_path, "deployment d { model = nothing }\n", "broken.plan")
    assert vary(broken, {("d", "tensor_parallel"): 2}) is None


def test_a_tables_rows_varied_from_one_elaboration_predict_what_each_compiled_alone_does() -> None:
    """Rows of one shape (TensorRT-LLM 0.9's Llama-2-7B FP8 tables on the H100: static throughput
    at several batches and lengths, and TTFT) scored through the shared elaboration give the
    predictions each row's own plan compiled in full gives."""
    rows, _ = v.load_rows(REPO / "validation" / "rows")
    chosen = [r for r in rows if r.id.startswith("trtllm-v0.9-llama-2-7b-h100-sxm-fp8-tp1-")]
    assert len(chosen) >= 6 and len({r["metric"] for r in chosen}) >= 2
    v._BASES.clear()
    shared = [v._predict_one(r) for r in chosen]
    assert len(v._BASES) < len(chosen)  # rows did share their shape
    alone = []
    for r in chosen:
        v._BASES.clear()
        alone.append(v._predict_one(r))
    assert [(p.predicted, p.floor, p.problem) for p in shared] == [(p.predicted, p.floor, p.problem) for p in alone]
