"""One definition per concept: W0211 for a derived field that restates another's formula."""

from __future__ import annotations

from collections.abc import Callable

from planc.pipeline import Compilation

RESTATING = """
kind step {
  input bytes: B
  input bandwidth: B/s
  input launches: s = 0.3 ms
  derive time: s = bytes / bandwidth + launches * 2
  derive worst: s = 1.5 * (bytes / bandwidth + launches * 2)
  derive scaled: s = 3 * time
}
step s { bytes = 1 GB; bandwidth = 3 TB/s }
"""


def test_a_restated_formula_is_a_warning_at_the_copy(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(RESTATING)
    assert c.ok  # a warning: the plan is computed
    [warning] = [d for d in c.diagnostics if d.code == "W0211"]
    assert warning.primary is not None and warning.primary.span.text == "worst"
    assert warning.secondary[0].span.text == "time"
    assert "`time`" in (warning.help or "")


def test_the_stdlib_states_each_formula_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # every kind of the prelude (deployment's decode and prefill iterations included) is read
    from planc import diagnostics as dx
    from planc.semantics.lint import restated
    from planc.semantics.resolve import load_program

    path = tmp_path / "p.plan"
    path.write_text('import "models/llama-3.1-8b"\nlet a = 1 GB\n', encoding="utf-8")
    sink = dx.Sink()
    program = load_program(path, sink, "p.plan")
    assert program is not None and not sink.has_errors
    restated(program, sink, stdlib=True)
    assert [d.message for d in sink.sorted()] == []
    # and the lint does look at the stdlib when asked: a restating kind there would be reported
    kinds = [d for d in program.names.values() if d.__class__.__name__ == "KindDecl"]
    assert any(k.span.file.is_stdlib for k in kinds)
