"""Tests for `planc.render_diagnostics`: human, short and JSON forms."""

from __future__ import annotations

import json
import re

import pytest
from planc.diagnostics import (
    DUPLICATE_NAME,
    FILE_MISSING,
    INFEASIBLE,
    UNEXPECTED_EOF,
    UNKNOWN_NAME,
    Diagnostic,
    Label,
)
from planc.render_diagnostics import render_human, render_json, render_short, to_json
from planc.source import SourceFile, Span

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def span_of(file: SourceFile, needle: str, nth: int = 0) -> Span:
    """The span of the `nth` occurrence of `needle` in `file`."""
    start = -1
    for _ in range(nth + 1):
        start = file.text.index(needle, start + 1)
    return Span(file, start, start + len(needle))


def plan_file() -> SourceFile:
    lines = ["# header"] + [f"x{i} = {i}" for i in range(2, 12)] + ["  params = layres * 2", ""]
    return SourceFile("plans/x.plan", "\n".join(lines))


def kinds_file() -> SourceFile:
    return SourceFile("stdlib/kinds.plan", "kind Model {\n\n  input layers: count\n}\n", is_stdlib=True)


def unknown_layres(*secondary: Label, notes: tuple[str, ...] = ()) -> Diagnostic:
    plan = plan_file()
    return UNKNOWN_NAME.at(
        span_of(plan, "layres"),
        "not declared",
        help="did you mean `layers`?",
        secondary=secondary,
        notes=notes,
        name="layres",
    )


def question_warning() -> Diagnostic:
    plan = SourceFile("plans/q.plan", "compare a with b\n")
    return INFEASIBLE.at(span_of(plan, "compare"), "not answered", unknown="b", detail="even `b` = 1 fails")


def missing_file() -> Diagnostic:
    notes = ["searched in `plans/`"]
    return FILE_MISSING.at(None, help="check the path", notes=notes, path="plans/nope.plan")


# --- human form ----------------------------------------------------------------------------


def test_single_line_primary_with_help() -> None:
    expected = (
        "error[E0201]: unknown name `layres`\n"
        "  --> plans/x.plan:12:12\n"
        "   |\n"
        "12 |   params = layres * 2\n"
        "   |            ^^^^^^ not declared\n"
        "   = help: did you mean `layers`?\n"
        "\n"
        "plan: 1 error\n"
    )
    assert render_human([unknown_layres()]) == expected


def test_secondary_in_another_file_gets_its_own_snippet() -> None:
    kinds = kinds_file()
    similar = Label(span_of(kinds, "layers"), "a similar name is declared here")
    diag = unknown_layres(similar, notes=("names are case-sensitive",))
    expected = (
        "error[E0201]: unknown name `layres`\n"
        "  --> plans/x.plan:12:12\n"
        "   |\n"
        "12 |   params = layres * 2\n"
        "   |            ^^^^^^ not declared\n"
        "   |\n"
        "  ::: stdlib/kinds.plan:3:9\n"
        "   |\n"
        " 3 |   input layers: count\n"
        "   |         ------ a similar name is declared here\n"
        "   = help: did you mean `layers`?\n"
        "   = note: names are case-sensitive\n"
        "\n"
        "plan: 1 error\n"
    )
    assert render_human([diag]) == expected


def test_without_stdlib_lines_a_stdlib_snippet_is_named_by_file_and_text() -> None:
    """The form of the goldens: a stdlib line that moves changes nothing, nor does a stdlib
    line number wider than the plan's widen the gutter; the plan's own lines keep theirs."""
    kinds = SourceFile("stdlib/kinds.plan", "\n" * 120 + "  input layers: count\n", is_stdlib=True)
    diag = unknown_layres(Label(span_of(kinds, "layers"), "a similar name is declared here"))
    expected = (
        "error[E0201]: unknown name `layres`\n"
        "  --> plans/x.plan:12:12\n"
        "   |\n"
        "12 |   params = layres * 2\n"
        "   |            ^^^^^^ not declared\n"
        "   |\n"
        "  ::: stdlib/kinds.plan\n"
        "   |\n"
        "   |   input layers: count\n"
        "   |         ------ a similar name is declared here\n"
        "   = help: did you mean `layers`?\n"
        "\n"
        "plan: 1 error\n"
    )
    assert render_human([diag], stdlib_lines=False) == expected
    assert "  ::: stdlib/kinds.plan:121:9\n" in render_human([diag])  # what the terminal shows


def test_nearby_secondary_in_same_file_shares_the_snippet() -> None:
    src = SourceFile("p.plan", "let a = 1\nlet b = 2\nlet c = 3\nlet a = 4\n")
    first = Label(span_of(src, "a"), "first declared here")
    diag = DUPLICATE_NAME.at(span_of(src, "a", 1), "declared again", secondary=[first], name="a")
    expected = (
        "error[E0202]: `a` is declared more than once\n"
        " --> p.plan:4:5\n"
        "  |\n"
        "1 | let a = 1\n"
        "  |     - first declared here\n"
        "4 | let a = 4\n"
        "  |     ^ declared again\n"
        "\n"
        "plan: 1 error\n"
    )
    assert render_human([diag]) == expected


def test_distant_secondary_in_same_file_gets_own_snippet_and_gutter_is_widest() -> None:
    src = SourceFile("p.plan", "".join(f"let v{i} = {i}\n" for i in range(1, 11)))
    first = Label(span_of(src, "v1 "), "first here")
    diag = DUPLICATE_NAME.at(span_of(src, "v10"), "again", secondary=[first], name="v10")
    expected = (
        "error[E0202]: `v10` is declared more than once\n"
        "  --> p.plan:10:5\n"
        "   |\n"
        "10 | let v10 = 10\n"
        "   |     ^^^ again\n"
        "   |\n"
        "  ::: p.plan:1:5\n"
        "   |\n"
        " 1 | let v1 = 1\n"
        "   |     --- first here\n"
        "\n"
        "plan: 1 error\n"
    )
    assert render_human([diag]) == expected


def test_labels_on_the_same_line_each_get_a_row_primary_first() -> None:
    src = SourceFile("p.plan", "a = b + c\n")
    other = Label(span_of(src, "c"), "also unknown")
    diag = UNKNOWN_NAME.at(span_of(src, "b"), "here", secondary=[other], name="b")
    expected = (
        "error[E0201]: unknown name `b`\n"
        " --> p.plan:1:5\n"
        "  |\n"
        "1 | a = b + c\n"
        "  |     ^ here\n"
        "  |         - also unknown\n"
        "\n"
        "plan: 1 error\n"
    )
    assert render_human([diag]) == expected


def test_multi_line_span_is_underlined_to_end_of_first_line() -> None:
    src = SourceFile("m.plan", "total = (1 +\n  2)\n")
    start = src.text.index("(")
    span = Span(src, start, src.text.index(")") + 1)
    diag = UNKNOWN_NAME.at(span, "this expression", name="total")
    block = render_human([diag]).split("\n\n")[0]
    assert block.splitlines()[1:] == [
        " --> m.plan:1:9",
        "  |",
        "1 | total = (1 +",
        "  |         ^^^^ this expression",
    ]


def test_zero_width_span_at_end_of_file_points_past_last_character() -> None:
    src = SourceFile("e.plan", "total = (1 +")
    end = len(src.text)
    diag = UNEXPECTED_EOF.at(Span(src, end, end), "expected an expression", expected="expected an expression")
    block = render_human([diag]).split("\n\n")[0]
    assert block.splitlines() == [
        "error[E0102]: unexpected end of file: expected an expression",
        " --> e.plan:1:13",
        "  |",
        "1 | total = (1 +",
        "  |             ^ expected an expression",
    ]


def test_zero_width_span_after_final_newline_is_on_the_empty_last_line() -> None:
    src = SourceFile("e.plan", "total = (1 +\n")
    end = len(src.text)
    diag = UNEXPECTED_EOF.at(Span(src, end, end), "here", expected="`)`")
    block = render_human([diag]).split("\n\n")[0]
    assert block.splitlines()[1:] == [" --> e.plan:2:1", "  |", "2 |", "  | ^ here"]


def test_tabs_are_expanded_and_carets_shifted() -> None:
    src = SourceFile("t.plan", "\tcost = \tcots\n")
    diag = UNKNOWN_NAME.at(span_of(src, "cots"), "not declared", name="cots")
    block = render_human([diag]).split("\n\n")[0]
    assert block.splitlines()[1:] == [
        " --> t.plan:1:10",
        "  |",
        "1 |     cost =     cots",
        "  |                ^^^^ not declared",
    ]


def test_tab_inside_span_widens_underline() -> None:
    src = SourceFile("t.plan", "a =\tb\n")
    span = Span(src, src.text.index("="), src.text.index("b") + 1)
    block = render_human([UNKNOWN_NAME.at(span, name="b")]).split("\n\n")[0]
    assert block.splitlines()[-2:] == ["1 | a =    b", "  |   ^^^^^^"]


def test_columns_count_code_points() -> None:
    src = SourceFile("u.plan", "größe = ünknown\n")
    diag = UNKNOWN_NAME.at(span_of(src, "ünknown"), "not declared", name="ünknown")
    block = render_human([diag]).split("\n\n")[0]
    assert block.splitlines()[1:] == [
        " --> u.plan:1:9",
        "  |",
        "1 | größe = ünknown",
        "  |         ^^^^^^^ not declared",
    ]


def test_diagnostic_without_primary_is_header_help_and_notes() -> None:
    expected = (
        "error[E0001]: cannot read `plans/nope.plan`: no such file\n"
        "  = help: check the path\n"
        "  = note: searched in `plans/`\n"
        "\n"
        "plan: 1 error\n"
    )
    assert render_human([missing_file()]) == expected


def test_multi_line_note_is_indented_under_its_text() -> None:
    diag = FILE_MISSING.at(None, notes=["first\nsecond"], path="a")
    assert render_human([diag]).splitlines()[1:3] == ["  = note: first", "          second"]


def test_warning_block_and_blank_line_between_blocks() -> None:
    expected = (
        "warning[W0505]: no value of `b` satisfies the constraint: even `b` = 1 fails\n"
        " --> plans/q.plan:1:1\n"
        "  |\n"
        "1 | compare a with b\n"
        "  | ^^^^^^^ not answered\n"
        "\n"
        "error[E0001]: cannot read `plans/nope.plan`: no such file\n"
        "  = help: check the path\n"
        "  = note: searched in `plans/`\n"
        "\n"
        "plan: 1 error, 1 warning\n"
    )
    assert render_human([question_warning(), missing_file()]) == expected


@pytest.mark.parametrize(
    ("errors", "warnings", "summary"),
    [
        (1, 0, "plan: 1 error"),
        (2, 0, "plan: 2 errors"),
        (0, 1, "plan: 1 warning"),
        (0, 3, "plan: 3 warnings"),
        (2, 1, "plan: 2 errors, 1 warning"),
        (1, 2, "plan: 1 error, 2 warnings"),
    ],
)
def test_summary_line_counts_and_plurals(errors: int, warnings: int, summary: str) -> None:
    diags = [missing_file()] * errors + [question_warning()] * warnings
    text = render_human(diags)
    assert text.endswith("\n\n" + summary + "\n")
    assert text.count("plan: ") == 1


def test_empty_list_renders_nothing() -> None:
    assert render_human([]) == ""
    assert render_human([], color=True) == ""
    assert render_short([]) == ""


def test_color_off_by_default_has_no_escapes() -> None:
    text = render_human([unknown_layres(Label(span_of(kinds_file(), "layers"), "x")), question_warning()])
    assert "\x1b" not in text


def test_color_on_paints_header_carets_and_gutter() -> None:
    kinds = kinds_file()
    diags = [unknown_layres(Label(span_of(kinds, "layers"), "similar")), question_warning()]
    colored = render_human(diags, color=True)
    assert "\x1b[1;31merror[E0201]\x1b[0m: unknown name `layres`" in colored
    assert "\x1b[1;31m^^^^^^ not declared\x1b[0m" in colored
    assert "\x1b[1;33mwarning[W0505]\x1b[0m" in colored
    assert "\x1b[1;33m^^^^^^^ not answered\x1b[0m" in colored
    assert "\x1b[1;34m12 |\x1b[0m   params = layres * 2" in colored
    assert "\x1b[1;34m------ similar\x1b[0m" in colored
    assert ANSI.sub("", colored) == render_human(diags)


# --- short form ----------------------------------------------------------------------------


def test_short_form_one_line_each_with_trailing_newline() -> None:
    text = render_short([unknown_layres(), question_warning(), missing_file()])
    assert text == (
        "plans/x.plan:12:12: error[E0201]: unknown name `layres` (help: did you mean `layers`?)\n"
        "plans/q.plan:1:1: warning[W0505]: no value of `b` satisfies the constraint: even `b` = 1 fails\n"
        "error[E0001]: cannot read `plans/nope.plan`: no such file (help: check the path)\n"
    )


# --- JSON form -----------------------------------------------------------------------------


def test_json_shape_and_positions() -> None:
    kinds = kinds_file()
    diag = unknown_layres(Label(span_of(kinds, "layers"), "similar"), notes=("n1", "n2"))
    doc = json.loads(render_json([diag, missing_file()]))
    assert doc["version"] == 1
    first, second = doc["diagnostics"]
    assert first == {
        "code": "E0201",
        "severity": "error",
        "message": "unknown name `layres`",
        "help": "did you mean `layers`?",
        "notes": ["n1", "n2"],
        "primary": {
            "file": "plans/x.plan",
            "line": 12,
            "column": 12,
            "end_line": 12,
            "end_column": 18,
            "label": "not declared",
        },
        "secondary": [
            {
                "file": "stdlib/kinds.plan",
                "line": 3,
                "column": 9,
                "end_line": 3,
                "end_column": 15,
                "label": "similar",
            }
        ],
    }
    assert second["primary"] is None
    assert second["secondary"] == []
    assert second["notes"] == ["searched in `plans/`"]


def test_json_multi_line_and_unicode_positions() -> None:
    src = SourceFile("m.plan", "größe = (1 +\n  2)\n")
    span = Span(src, src.text.index("("), src.text.index(")") + 1)
    (item,) = to_json([UNKNOWN_NAME.at(span, name="x")])
    primary = item["primary"]
    assert isinstance(primary, dict)
    assert (primary["line"], primary["column"], primary["end_line"], primary["end_column"]) == (1, 9, 2, 5)
    text = render_json([UNKNOWN_NAME.at(span, name="größe")])
    assert '"message": "unknown name `größe`"' in text  # ensure_ascii=False


def _is_plain_json(value: object) -> bool:
    if value is None or isinstance(value, (str, int)):
        return not isinstance(value, bool)
    if isinstance(value, list):
        return all(_is_plain_json(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_plain_json(v) for k, v in value.items())
    return False


def test_to_json_is_plain_data_matching_render_json() -> None:
    diags = [unknown_layres(Label(span_of(kinds_file(), "layers"))), question_warning(), missing_file()]
    data = to_json(diags)
    assert _is_plain_json(data)
    assert json.loads(render_json(diags))["diagnostics"] == data


def test_render_json_format() -> None:
    text = render_json([])
    assert text == '{\n  "diagnostics": [],\n  "version": 1\n}\n'


# --- determinism ---------------------------------------------------------------------------


def test_same_input_renders_same_text() -> None:
    def build() -> list[Diagnostic]:
        similar = Label(span_of(kinds_file(), "layers"), "similar")
        return [unknown_layres(similar), question_warning(), missing_file()]

    for render in (render_human, render_short, render_json):
        assert render(build()) == render(build())
    assert render_human(build(), color=True) == render_human(build(), color=True)
