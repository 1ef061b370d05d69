"""The commands a new user reaches for after `compile` and `check`: `plan explain`, `plan flags`,
`plan init`, `plan check --format json`, and the report format that follows `-o`'s suffix."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from planc.cli import main
from planc.diagnostics import CODES

from .conftest import REPO

EXAMPLE = REPO / "examples" / "100m_dau.plan"


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


# ---- plan explain -------------------------------------------------------------------------


def test_explain_prints_the_page_of_every_code() -> None:
    for code in CODES:
        status, out, err = run("explain", code)
        assert status == 0, err
        assert out == (REPO / "docs" / "errors" / f"{code}.md").read_text(encoding="utf-8")


def test_explain_accepts_any_case_and_missing_zeros() -> None:
    expected = run("explain", "E0302")[1]
    assert expected.startswith("# E0302: dimension mismatch\n")
    for spelling in ("e0302", "E302", " e302 "):
        assert run("explain", spelling)[1] == expected


def test_explain_an_unknown_code_is_a_diagnostic_with_a_suggestion() -> None:
    status, out, err = run("explain", "E0320")
    assert status == 2 and out == ""
    assert err.startswith("error: `E0320` is not a diagnostic code of plan\n")
    assert "= help: did you mean `E0302` (dimension mismatch)?" in err
    status, _, err = run("explain", "hello")
    assert status == 2 and "did you mean" not in err and "`plan explain` with no code lists every code" in err
    # terminal text stays printable
    status, _, err = run("explain", "E\x1b[31m1")
    assert status == 2 and "\x1b" not in err


def test_explain_without_a_code_lists_the_catalogue() -> None:
    status, out, _ = run("explain")
    assert status == 0
    lines = out.splitlines()
    assert len(lines) == len(CODES)
    assert "E0302  error    dimension mismatch" in lines and "W0407  warning  physics advice" in lines
