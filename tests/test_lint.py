"""One definition per concept: W0211 for a derived field that restates another's formula; and no
concept nothing uses: W0213 for a derived quantity of the user's that nothing reads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
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


UNUSED = """
import "./links"
link uplink { bandwidth = 50 GB/s }
link downlink { bandwidth = 25 GB/s }
fast_link backbone { bandwidth = 400 GB/s }
let total = uplink.round_trip + downlink.round_trip
let asked_for = 2 * total
summary total
check downlink.checked <= 1 s
"""
LINKS = """
kind link {
  input bandwidth: B/s
  input size: B = 1 GB
  derive transfer: s = size / bandwidth
  derive round_trip: s = 2 * transfer
  derive spare: s = 3 * transfer
  derive checked: s = 4 * transfer
}
kind fast_link: link {
  derive margin: s = 10 ms - transfer
}
"""


@pytest.fixture
def compile_links(tmp_path: Path) -> Callable[[str], Compilation]:
    from planc.pipeline import compile_plan

    (tmp_path / "links.plan").write_text(LINKS, encoding="utf-8")

    def run(extra: str = "") -> Compilation:
        (tmp_path / "plan.plan").write_text(UNUSED + extra, encoding="utf-8")
        return compile_plan(tmp_path / "plan.plan", shown="plan.plan")

    return run


def unused_names(c: Compilation) -> list[str]:
    return sorted(d.primary.span.text for d in c.diagnostics if d.code == "W0213" and d.primary)


def test_an_unused_derived_quantity_is_a_warning_at_its_declaration(compile_links: Callable[[str], Compilation]) -> None:
    c = compile_links("")
    assert c.ok and c.exit_code == 0  # a warning: the plan is computed
    warnings = sorted((d.primary.span.text, Path(d.primary.span.file.path).name, d.message)
                      for d in c.diagnostics if d.code == "W0213" and d.primary)
    # `transfer` and `round_trip` are read by formulas, `total` by the summary, `checked` by a check
    # of one instance only (a kind's field is used when any instance reads it); one warning per
    # declaration, however many instances compute it, named with the kind that declares it.
    # `asked_for`, the main plan's own `let`, is a number the user asks the document for.
    assert warnings == [("margin", "links.plan", "`margin` in kind `fast_link` is computed, but nothing uses it"),
                        ("spare", "links.plan", "`spare` in kind `link` is computed, but nothing uses it")]


@pytest.mark.parametrize("reader", [
    'ask "q": maximize uplink.bandwidth subject to uplink.spare <= 1 s',
    "search uplink over size in [1 GB, 2 GB] minimize spare",
    "solve spare for uplink",
    "check backbone.margin >= 0 s",
])
def test_a_question_or_a_check_is_a_use(compile_links: Callable[[str], Compilation], reader: str) -> None:
    c = compile_links(reader + "\n")
    left = {"margin", "spare"} - ({"margin"} if "margin" in reader else {"spare"})
    assert unused_names(c) == sorted(left)


def test_the_examples_derive_nothing_unused() -> None:
    from planc import diagnostics as dx
    from planc.semantics.elaborate import elaborate
    from planc.semantics.lint import unused
    from planc.semantics.resolve import load_program

    for path in sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.plan")):
        sink = dx.Sink()
        program = load_program(path, sink, path.name)
        assert program is not None and not sink.has_errors
        unused(program, elaborate(program, sink), sink)
        assert not [d.message for d in sink.items if d.code == "W0213"], path.name
