"""Golden cases: `tests/cases/<stage>/{ok,err}/<name>.plan`, checked like mypy's `check-*.test`.

- An `ok` case must compile with no error diagnostics (warnings allowed) and exit code 0.
- An `err` case carries its expected errors as comments on the line where each error's primary
  span starts: `# ERROR E0201` (several codes: `# ERROR E0201 E0302`); an error at end of file
  is written `# ERROR-EOF E0102`, anywhere in the file. The set of (place, code) pairs of the
  error-severity diagnostics must equal the annotations exactly, where a place is a line of the
  case file, `EOF`, or — for an error outside the case file — that file and line (which can
  never match an annotation, so such an error always fails the case). The compilation must
  not be `ok` and must exit with code 2.
- Next to every `err` case, `<name>.expected` holds the full `render_human` output, rendered
  with paths relative to `tests/cases` and stdlib snippets named by file and text without
  line numbers (`stdlib_lines=False`), so that a physics edit that moves a stdlib line does
  not rewrite the goldens of every case that cites a stdlib rule. Run with `PLAN_UPDATE_GOLDENS=1` to rewrite them, then
  review the diff by eye: the messages, carets and help lines are what a user reads.
- Files inside further subdirectories (`imports/err/cycle/`, `imports/ok/lib/`) are imported by
  cases, never cases themselves.
- Problems with the input file itself (missing, a directory, not UTF-8, empty, unreadable) are
  tested at the bottom with temporary paths.
- A case that shows a known compiler bug is listed in `KNOWN_BUGS` and marked
  `xfail(strict=True)`; it has no golden, since its output is wrong. When the bug is fixed the
  case passes, the xfail turns into a failure, and the entry must be removed and the golden
  written (`PLAN_UPDATE_GOLDENS=1`). Bugs in a message, label, help or span of a case whose
  codes and lines are right have their own xfail tests at the bottom.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from planc.diagnostics import Diagnostic
from planc.pipeline import Compilation, compile_plan
from planc.render_diagnostics import render_human

CASES = Path(__file__).resolve().parent / "cases"
STAGES = ("syntax", "names", "units", "eval", "imports")
UPDATE = os.environ.get("PLAN_UPDATE_GOLDENS") == "1"

_ANNOTATION = re.compile(r"#\s*ERROR(?P<eof>-EOF)?(?P<codes>(?:\s+[EW]\d{4})+)\s*$")
_LOOSE_ANNOTATION = re.compile(r"#\s*ERROR")

# Cases whose codes or lines are wrong because of a compiler bug: case -> what is wrong. Each
# entry marks both the annotation test and the golden test of that case.
KNOWN_BUGS: dict[str, str] = {
}


# ---- collecting cases ---------------------------------------------------------------------


def _cases(outcome: str) -> list[Path]:
    return sorted(p for stage in STAGES for p in (CASES / stage / outcome).glob("*.plan"))


def _rel(path: Path) -> str:
    return path.relative_to(CASES).as_posix()


def _params(outcome: str) -> list[object]:
    params = []
    for path in _cases(outcome):
        rel = _rel(path)
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[rel])] if rel in KNOWN_BUGS else []
        params.append(pytest.param(path, id=rel, marks=marks))
    return params


def _compile(path: Path) -> Compilation:
    return compile_plan(path, shown=_rel(path))


# ---- annotations --------------------------------------------------------------------------

Place = tuple[str, "int | str", str]  # (file, line or "EOF", code)


def expected_errors(path: Path) -> set[Place]:
    """The (file, line, code) triples annotated in a case file."""
    rel = _rel(path)
    found: set[Place] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not _LOOSE_ANNOTATION.search(line):
            continue
        match = _ANNOTATION.search(line)
        assert match is not None, f"{rel}:{number}: malformed annotation {line!r}"
        place: int | str = "EOF" if match.group("eof") else number
        found.update((rel, place, code) for code in match.group("codes").split())
    return found


def actual_errors(diagnostics: list[Diagnostic], rel: str) -> set[Place]:
    """The (file, line, code) triples of the error diagnostics, end of file as `EOF`."""
    found: set[Place] = set()
    for d in diagnostics:
        if not d.is_error:
            continue
        if d.primary is None:
            found.add(("<no location>", 0, d.code))
            continue
        span = d.primary.span
        at_eof = span.file.path == rel and span.start >= len(span.file.text)
        found.add((span.file.path, "EOF" if at_eof else span.line, d.code))
    return found


def _describe(places: set[Place]) -> str:
    return "\n".join(f"  {f}:{line}: {code}" for f, line, code in sorted(places, key=str)) or "  (none)"


# ---- the tests ----------------------------------------------------------------------------


def test_every_stage_has_ok_and_err_cases() -> None:
    for stage in STAGES:
        for outcome in ("ok", "err"):
            assert list((CASES / stage / outcome).glob("*.plan")), f"no cases in {stage}/{outcome}"


def test_no_stray_files() -> None:
    """Every file at case level is a case or a golden, and every golden has its case."""
    for stage in STAGES:
        for outcome in ("ok", "err"):
            for path in (CASES / stage / outcome).iterdir():
                if path.is_dir():
                    continue
                assert path.suffix in (".plan", ".expected"), f"unexpected file {_rel(path)}"
                if path.suffix == ".expected":
                    assert outcome == "err", f"golden for an ok case: {_rel(path)}"
                    assert path.with_suffix(".plan").is_file(), f"golden without a case: {_rel(path)}"


@pytest.mark.parametrize("path", _params("ok"))
def test_ok_case(path: Path) -> None:
    assert not expected_errors(path), "an ok case carries no `# ERROR` annotations"
    compilation = _compile(path)
    errors = [d for d in compilation.diagnostics if d.is_error]
    assert not errors, render_human(compilation.diagnostics)
    assert compilation.ok
    assert compilation.exit_code == 0, "an ok case must not contain a failing check"


@pytest.mark.parametrize("path", _params("err"))
def test_err_case_annotations(path: Path) -> None:
    rel = _rel(path)
    expected = expected_errors(path)
    assert expected, f"{rel} has no `# ERROR` annotation"
    compilation = _compile(path)
    actual = actual_errors(compilation.diagnostics, rel)
    assert actual == expected, (
        f"\nexpected:\n{_describe(expected)}\nactual:\n{_describe(actual)}\n\n"
        + render_human(compilation.diagnostics)
    )
    assert compilation.ok is False
    assert compilation.exit_code == 2


@pytest.mark.parametrize("path", _params("err"))
def test_err_case_golden(path: Path) -> None:
    compilation = _compile(path)
    # A case whose errors are wrong (a known bug) fails here before its golden is written.
    assert actual_errors(compilation.diagnostics, _rel(path)) == expected_errors(path)
    assert compilation.exit_code == 2
    rendered = render_human(compilation.diagnostics, stdlib_lines=False)
    golden = path.with_suffix(".expected")
    if UPDATE:
        golden.write_text(rendered, encoding="utf-8")
    assert golden.is_file(), f"missing {_rel(golden)}; run with PLAN_UPDATE_GOLDENS=1"
    assert rendered == golden.read_text(encoding="utf-8")


def test_eof_inside_a_block_names_the_block() -> None:
    """Beyond the golden: the message names the open block and a label shows where it opens."""
    compilation = _compile(CASES / "syntax/err/missing_brace.plan")
    (d,) = compilation.diagnostics
    assert d.code == "E0102" and "`traffic chat_traffic`" in d.message
    assert [(label.span.line, label.span.text) for label in d.secondary] == [(2, "traffic chat_traffic {")]


# ---- the input file itself ----------------------------------------------------------------


def _only_code(compilation: Compilation, code: str) -> Diagnostic:
    assert [d.code for d in compilation.diagnostics] == [code], render_human(compilation.diagnostics)
    assert compilation.ok is False
    assert compilation.exit_code == 2
    return compilation.diagnostics[0]


def test_missing_file(tmp_path: Path) -> None:
    d = _only_code(compile_plan(tmp_path / "nope.plan", shown="nope.plan"), "E0001")
    assert d.message == "cannot read `nope.plan`: no such file"
    assert d.primary is None


def test_directory_instead_of_file(tmp_path: Path) -> None:
    (tmp_path / "plans.plan").mkdir()
    d = _only_code(compile_plan(tmp_path / "plans.plan", shown="plans.plan"), "E0002")
    assert d.message == "`plans.plan` is a directory, not a plan file"


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.plan"
    path.write_bytes('title "Café"\n'.encode("latin-1"))
    d = _only_code(compile_plan(path, shown="latin1.plan"), "E0003")
    assert d.message == "`latin1.plan` is not valid UTF-8 (byte 0xe9 at offset 10)"


@pytest.mark.parametrize("text", ["", "\n", "  \n\t\n"], ids=["no-bytes", "newline", "whitespace"])
def test_empty_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "empty.plan"
    path.write_text(text, encoding="utf-8")
    d = _only_code(compile_plan(path, shown="empty.plan"), "E0004")
    assert d.message == "`empty.plan` contains no declarations"


def test_comment_only_file_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "comments.plan"
    path.write_text("# TODO: write the plan\n", encoding="utf-8")
    _only_code(compile_plan(path, shown="comments.plan"), "E0004")


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "locked.plan"
    path.write_text("let x = 1\n", encoding="utf-8")
    read_bytes = Path.read_bytes

    def refuse(self: Path) -> bytes:  # chmod 000 does not stop root, so refuse by hand
        if self == path.resolve():
            raise PermissionError(13, "Permission denied", str(self))
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", refuse)
    d = _only_code(compile_plan(path, shown="locked.plan"), "E0005")
    assert d.message == "cannot read `locked.plan`: Permission denied"


def test_bom_and_crlf_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "windows.plan"
    path.write_bytes(b'\xef\xbb\xbflet x = 1\r\nlet y = x + 1\r\ncheck y == 2 "crlf"\r\n')
    compilation = compile_plan(path, shown="windows.plan")
    assert compilation.diagnostics == [] and compilation.exit_code == 0


# ---- known bad messages and spans -----------------------------------------------------------
# Each case below compiles with the right codes on the right lines (its golden passes), but a
# message, label, help or span in it is wrong. The test states what it should be.


def _case_error(rel: str, code: str) -> Diagnostic:
    compilation = _compile(CASES / rel)
    return next(d for d in compilation.diagnostics if d.code == code)


def _bug(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=reason)


def test_unknown_name_label() -> None:
    d = _case_error("names/err/unknown_name.plan", "E0201")
    assert d.primary is not None and "name of this name" not in d.primary.text


def test_duplicate_let_help_is_valid_syntax() -> None:
    d = _case_error("names/err/duplicate_let.plan", "E0202")
    assert d.help is not None and "let new_name = capacity {" not in d.help


def test_bad_base_article() -> None:
    d = _case_error("names/err/bad_base.plan", "E0209")
    assert d.primary is not None
    assert "a `accelerator`" not in d.message and "a `accelerator`" not in d.primary.text


def test_ambiguous_unit_hint_quotes_each_choice() -> None:
    d = _case_error("units/err/ambiguous_unit.plan", "E0301")
    assert d.help is not None and "`bit or B`" not in d.help


@pytest.mark.parametrize("rel, word", [
    ("units/err/unknown_unit_after_known.plan", "foo"),
    ("units/err/word_after_number.plan", "check"),
])
def test_unknown_unit_span_is_the_unknown_word(rel: str, word: str) -> None:
    d = _case_error(rel, "E0301")
    assert d.primary is not None and d.primary.span.text == word


def test_name_after_number_hint() -> None:
    d = _case_error("units/err/name_after_number.plan", "E0301")
    assert d.help is not None and "`count`" not in d.help


def test_typed_let_declared_label_points_at_the_type() -> None:
    d = _case_error("units/err/dimension_mismatch_typed_let.plan", "E0302")
    declared = [label for label in d.secondary if label.text.startswith("declared as")]
    assert declared and declared[0].span.text == "s"


def test_missing_value_help() -> None:
    d = _case_error("syntax/err/missing_value.plan", "E0101")
    assert d.help is not None and "after a number" not in d.help


def test_stray_brace_help_adds_information() -> None:
    d = _case_error("syntax/err/stray_brace.plan", "E0101")
    expected = d.message.removeprefix("expected ").rsplit(", found ", 1)[0]
    assert d.help is not None and expected not in d.help


def test_imported_file_paths_are_shown_like_the_main_file() -> None:
    compilation = _compile(CASES / "imports/err/import_cycle.plan")
    d = next(d for d in compilation.diagnostics if d.code == "E0207")
    assert d.primary is not None and d.primary.span.file.path == "imports/err/import_cycle.plan"
    assert "imports/err/cycle/b.plan" in {label.span.file.path for label in d.secondary}


def test_overflow_help_does_not_advise_a_prefix() -> None:
    d = _case_error("eval/err/overflow_literal.plan", "E0403")
    assert d.help is not None and "prefix" not in d.help
