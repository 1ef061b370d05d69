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


# ---- plan check --format json -------------------------------------------------------------


def test_check_json_gives_numbers_with_units_and_the_same_verdicts() -> None:
    status, out, err = run("check", str(EXAMPLE), "--format", "json")
    assert status == 0 and err == ""
    data = json.loads(out)
    assert data["schema"] == "plan.check/1" and data["valid"] is True and data["exit_code"] == 0
    assert data["failed"] == 0 and data["diagnostics"] == []
    text = run("check", str(EXAMPLE))[1].splitlines()
    assert len(data["checks"]) == len(text) == 3
    memory = data["checks"][0]
    assert memory["label"] == "fits in memory at batch and context" and memory["holds"] is True
    assert memory["comparison"] == "<=" and memory["location"] == f"{EXAMPLE}:55"
    assert memory["left"]["unit"] == memory["right"]["unit"] == memory["margin"]["unit"] == "B"
    assert memory["left"]["text"] == "55.81 GiB" and memory["margin"]["text"].startswith("17.03 GiB")
    assert abs(memory["margin"]["value"] - (memory["right"]["value"] - memory["left"]["value"])) < 1
    assert abs(memory["margin"]["relative"] - memory["margin"]["value"] / memory["right"]["value"]) < 1e-12
    tpot = data["checks"][1]
    assert tpot["left"]["unit"] == "s" and 0.02 < tpot["left"]["value"] < 0.04 and tpot["right"]["value"] == 0.04
    # deterministic
    assert run("check", str(EXAMPLE), "--format", "json")[1] == out


def test_check_json_keeps_the_exit_codes(tmp_path: Path) -> None:
    failing = tmp_path / "fail.plan"
    failing.write_text("let a = 3 GB\ncheck a <= 2 GB \"small\"\ncheck a == a\n", encoding="utf-8")
    status, out, _ = run("check", str(failing), "--format", "json")
    data = json.loads(out)
    assert status == 1 and data["exit_code"] == 1 and data["failed"] == 1
    small, same = data["checks"]
    assert small["holds"] is False and small["margin"]["value"] == -1e9 and small["margin"]["relative"] == -0.5
    assert same["holds"] is True and same["comparison"] == "==" and same["margin"] is None
    bad = tmp_path / "bad.plan"
    bad.write_text("let x = 1 GB + 1 s\n", encoding="utf-8")
    status, out, err = run("check", str(bad), "--format", "json")
    data = json.loads(out)
    assert status == 2 and err == "" and data["valid"] is False and data["checks"] == []
    assert [d["code"] for d in data["diagnostics"]] == ["E0302"] and data["diagnostics"][0]["primary"]["line"] == 1
    # diagnostics on stderr as well when asked, and the old `--format short` still means them
    status, _, err = run("check", str(bad), "--format", "json", "--diagnostics", "short")
    assert status == 2 and err.startswith(f"{bad}:1:")
    status, out, err = run("check", str(bad), "--format", "short")
    assert status == 2 and out == "" and err.startswith(f"{bad}:1:")


def test_check_json_is_documented() -> None:
    from .test_report_json import _documented

    documented = _documented()
    data = json.loads(run("check", str(EXAMPLE), "--format", "json")[1])
    assert documented["`plan check --format json`: schema `plan.check/1`"] == set(data)
    assert all(set(c) == documented["check result"] for c in data["checks"])


# ---- the report format follows -o; missing optional libraries are said -------------------


def test_the_format_follows_the_output_suffix(tmp_path: Path) -> None:
    for name, starts in (("doc.json", b"{"), ("doc.html", b"<!DOCTYPE html>"), ("doc.md", b"# Chat assistant"),
                         ("doc.MARKDOWN", b"# Chat assistant"), ("doc.txt", b"# Chat assistant")):
        status, _, err = run("compile", str(EXAMPLE), "-o", str(tmp_path / name))
        assert status == 0, (name, err)
        assert (tmp_path / name).read_bytes().lstrip().startswith(starts), name
    # an explicit --format that agrees with the suffix is fine; --format wins over an unknown suffix
    assert run("compile", str(EXAMPLE), "--format", "json", "-o", str(tmp_path / "agree.json"))[0] == 0
    assert run("compile", str(EXAMPLE), "--format", "json", "-o", str(tmp_path / "report.txt"))[0] == 0
    assert (tmp_path / "report.txt").read_text(encoding="utf-8").startswith("{")
    status, out, _ = run("diff", str(EXAMPLE), str(EXAMPLE), "-o", str(tmp_path / "diff.json"))
    assert status == 0 and json.loads((tmp_path / "diff.json").read_text(encoding="utf-8"))


def test_a_format_that_contradicts_the_suffix_is_a_usage_error(tmp_path: Path) -> None:
    status, _, err = run("compile", str(EXAMPLE), "--format", "pdf", "-o", str(tmp_path / "out.html"))
    assert status == 2
    assert "--format pdf contradicts -o" in err and "out.html" in err and "an HTML file" in err
    status, _, err = run("diff", str(EXAMPLE), str(EXAMPLE), "--format", "md", "-o", str(tmp_path / "d.json"))
    assert status == 2 and "--format md contradicts" in err and "a JSON file" in err
    status, _, err = run("diff", str(EXAMPLE), str(EXAMPLE), "-o", str(tmp_path / "d.pdf"))
    assert status == 2 and "does not write" in err and "Markdown or JSON" in err
    assert not list(tmp_path.iterdir())


def _without(monkeypatch: object, *modules: str) -> None:
    """Make `import module` fail as it does where the library is not installed."""
    import sys

    for name in list(sys.modules):
        if any(name == m or name.startswith(m + ".") for m in modules):
            monkeypatch.delitem(sys.modules, name)  # type: ignore[attr-defined]
    for m in modules:
        monkeypatch.setitem(sys.modules, m, None)  # type: ignore[attr-defined]


def test_html_without_matplotlib_says_its_figures_are_missing(tmp_path: Path, monkeypatch: object) -> None:
    _without(monkeypatch, "matplotlib")
    out = tmp_path / "doc.html"
    status, _, err = run("compile", str(EXAMPLE), "-o", str(out))
    assert status == 0 and out.is_file()
    assert "plan: warning: the HTML report has no figures" in err and "pip install 'plan-compiler[pdf]'" in err
    assert "<figure" not in out.read_text(encoding="utf-8")  # with matplotlib the page has 7
    # a plan that has no figures to draw says nothing
    plain = tmp_path / "plain.plan"
    plain.write_text("let a = 1 GB\ncheck a < 2 GB\n", encoding="utf-8")
    status, _, err = run("compile", str(plain), "-o", str(tmp_path / "plain.html"))
    assert status == 0 and "figures" not in err


def test_pdf_and_figures_without_their_libraries_are_errors(tmp_path: Path, monkeypatch: object) -> None:
    _without(monkeypatch, "matplotlib")
    status, _, err = run("compile", str(EXAMPLE), "-o", str(tmp_path / "doc.pdf"))
    assert status == 2 and "matplotlib" in err and "pip install 'plan-compiler[pdf]'" in err
    status, _, err = run("compile", str(EXAMPLE), "--figures", "-o", str(tmp_path / "doc.md"))
    assert status == 2 and "matplotlib" in err and "pip install 'plan-compiler[pdf]'" in err
    _without(monkeypatch, "weasyprint")
    status, _, err = run("compile", str(EXAMPLE), "--format", "pdf", "-o", str(tmp_path / "doc.pdf"))
    assert status == 2 and "WeasyPrint" in err and "pip install 'plan-compiler[pdf]'" in err
    assert not (tmp_path / "doc.pdf").exists()
