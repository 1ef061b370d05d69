"""The `plan` command as a user runs it: outputs, exit codes, determinism."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from planc.cli import main

from .conftest import REPO

EXAMPLE = REPO / "examples" / "100m_dau.plan"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_compile_writes_markdown_with_derivations(tmp_path: Path) -> None:
    out = tmp_path / "doc.md"
    code, _, err = run("compile", str(EXAMPLE), "-o", str(out))
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Chat assistant for 100 M daily active users")
    assert "## Assumptions" in text and "**assumption**" in text
    # formula → substituted → result, in GitHub's math syntax
    assert "```math" in text and "\\begin{aligned}" in text
    assert "34.72 k requests/s" in text  # peak QPS, docs/physics.md §14
    assert "`<stdlib>/models/llama-3.1-70b.plan › llama_3_1_70b.layers`" in text  # provenance of an input


def test_markdown_and_json_are_byte_identical_across_runs(tmp_path: Path) -> None:
    for fmt in ("md", "json"):
        a, b = tmp_path / f"a.{fmt}", tmp_path / f"b.{fmt}"
        assert run("compile", str(EXAMPLE), "--format", fmt, "-o", str(a))[0] == 0
        assert run("compile", str(EXAMPLE), "--format", fmt, "-o", str(b))[0] == 0
        assert a.read_bytes() == b.read_bytes()


def test_json_carries_values_units_formulas_and_sources() -> None:
    code, out, _ = run("compile", str(EXAMPLE), "--format", "json", "-o", "-")
    assert code == 0
    data = json.loads(out)
    assert data["schema"] == "plan.report/2"
    q = {x["id"]: x for x in data["quantities"]}
    assert q["llama_3_1_70b.params"]["exact"] == "70553706496"
    assert q["chat.kv_bytes_per_token"]["value"] == {"value": 327680, "unit": "B/token", "text": "320 KiB/token"}
    assert q["chat.kv_bytes_per_token"]["dim"] == "B/token"
    assert q["chat.memory_utilization"]["source"].startswith("the engine")
    assert q["vllm.memory_fraction"]["source"].startswith("vllm-project/vllm@v0.33.0")
    assert "\\frac" in q["chat.weight_bytes_per_device"]["formula"]


def test_check_exit_codes(tmp_path: Path) -> None:
    assert run("check", str(EXAMPLE))[0] == 0
    failing = tmp_path / "fail.plan"
    text = EXAMPLE.read_text()
    assert "tpot_slo = 40 ms" in text
    failing.write_text(text.replace("tpot_slo = 40 ms", "tpot_slo = 1 ms"))
    # a TPOT no batch reaches: the running batch's search finds nothing (infeasible, exit 1)
    code, _, err = run("check", str(failing))
    assert code == 1 and "error[E0407]" in err and "`batch`" in err
    # at the user's SLO, with the stdlib's search beside it
    where = err.split("error[E0407]", 1)[1].splitlines()[1]
    assert where.strip().startswith("-->") and "fail.plan:" in where, err
    assert "tpot_slo = 1 ms" in err and "<stdlib>/kinds/deployment.plan" in err and "nothing in the range meets this" in err
    # what fails at one sequence, with both sides, and the input that would give the search an answer:
    # the SLO relaxed to the nearest value on the remedies' grid above one sequence's step time
    note = re.search(r"note: `tpot <= tpot_slo` fails there: ([0-9.]+) ms against 1 ms", err)
    assert note is not None, err
    fix = re.search(r"help: it has one with `chat.tpot_slo` = ([0-9.]+) ms \(now 1 ms\)", err)
    assert fix is not None, err
    assert float(note.group(1)) <= float(fix.group(1)) < 1.2 * float(note.group(1))
    # a check that fails
    failing.write_text(text.replace('check chat.tpot <= chat.tpot_slo', 'check chat.tpot <= 1 ms'))
    code, out, _ = run("check", str(failing))
    assert code == 1 and "FAIL  TPOT SLO" in out


def test_invalid_plan_exits_2_without_report(tmp_path: Path) -> None:
    bad = tmp_path / "bad.plan"
    bad.write_text("let x = 1 GB + 1 s\n")
    out = tmp_path / "bad.md"
    code, _, err = run("compile", str(bad), "-o", str(out))
    assert code == 2
    assert "error[E0302]" in err and "--> " in err and "help:" in err
    assert not out.exists()


def test_diagnostics_as_json(tmp_path: Path) -> None:
    bad = tmp_path / "bad.plan"
    bad.write_text("let x = y\n")
    code, _, err = run("compile", str(bad), "--diagnostics", "json")
    assert code == 2
    data = json.loads(err)
    assert data["diagnostics"][0]["code"] == "E0201"
    assert data["diagnostics"][0]["primary"]["line"] == 1


def test_usage_errors_exit_2() -> None:
    assert run("compile")[0] == 2
    assert run("frobnicate")[0] == 2
    code, out, _ = run("--version")
    assert code == 0 and "plan" in out


def test_runs_as_module_from_another_directory(tmp_path: Path) -> None:
    # `python -m planc.cli` goes through `run`, which tunes the garbage collector: the report must
    # be the same bytes as the in-process `main` writes, and exit codes must pass through
    proc = subprocess.run([sys.executable, "-m", "planc.cli", "compile", str(EXAMPLE)],
                          cwd=tmp_path, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert run("compile", str(EXAMPLE), "-o", str(tmp_path / "in_process.md"))[0] == 0
    assert (tmp_path / "100m_dau.md").read_bytes() == (tmp_path / "in_process.md").read_bytes()
    bad = tmp_path / "bad.plan"
    bad.write_text("let x = 1 GB + 1 s\n")
    failing = tmp_path / "failing.plan"
    failing.write_text("check 1 GB > 2 GB\n")
    for plan, code in ((bad, 2), (failing, 1)):
        proc = subprocess.run([sys.executable, "-m", "planc.cli", "check", str(plan)],
                              cwd=tmp_path, capture_output=True, text=True, check=False)
        assert proc.returncode == code, proc.stderr


def test_check_that_cannot_be_evaluated_is_a_diagnostic(tmp_path: Path) -> None:
    # found by tests/test_fuzz.py: a comparison with an infinite side used to crash the report
    bad = tmp_path / "bad.plan"
    bad.write_text("check 1 / 0 > 1\n")
    code, _, err = run("check", str(bad))
    assert code == 2 and "error[E0402]" in err


def test_json_report_format_prints_json_diagnostics(tmp_path: Path) -> None:
    bad = tmp_path / "bad.plan"
    bad.write_text("let x = 1 GB + 1 s\n")
    code, _, err = run("compile", str(bad), "--format", "json")
    assert code == 2 and json.loads(err)["diagnostics"][0]["code"] == "E0302"
    code, _, err = run("check", str(bad), "--format", "short")
    assert code == 2 and err.startswith(f"{bad}:1:")


def test_markdown_figures_are_files_beside_the_report(tmp_path: Path) -> None:
    import re
    from urllib.parse import unquote

    out = tmp_path / "my design.md"
    code, _, err = run("compile", str(EXAMPLE), "--figures", "-o", str(out))
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    links = re.findall(r"^!\[[^\n]*\]\(([^)\s]+)\)$", text, re.M)
    assert len(links) >= 6 and "data:" not in text  # GitHub shows no data: images
    for link in links:
        path = tmp_path / unquote(link)
        assert path.parent.name == "my design.figures" and path.suffix == ".svg"
        assert path.read_text(encoding="utf-8").lstrip().startswith(("<?xml", "<svg"))
    # each figure sits in its part: the roofline in the body's figures, before the audit appendix
    roofline = text.index("chat-roofline.svg")
    assert text.rfind("\n## ", 0, roofline) == text.index("\n## Figures") < text.index("\n## Assumptions")
    # the figures are as deterministic as the text
    first = {p.name: p.read_bytes() for p in (tmp_path / "my design.figures").iterdir()}
    assert run("compile", str(EXAMPLE), "--figures", "-o", str(out))[0] == 0
    assert first == {p.name: p.read_bytes() for p in (tmp_path / "my design.figures").iterdir()}
    assert out.read_text(encoding="utf-8") == text


def test_figures_need_a_markdown_file(tmp_path: Path) -> None:
    for args in (("-o", "-"), ("--format", "json", "-o", str(tmp_path / "x.json"))):
        code, _, err = run("compile", str(EXAMPLE), "--figures", *args)
        assert code == 2 and "--figures" in err
    assert not list(tmp_path.iterdir())


def test_markdown_without_figures_links_none(tmp_path: Path) -> None:
    out = tmp_path / "doc.md"
    assert run("compile", str(EXAMPLE), "-o", str(out))[0] == 0
    assert "![" not in out.read_text(encoding="utf-8")
    assert [p.name for p in tmp_path.iterdir()] == ["doc.md"]


def test_an_output_that_cannot_be_written_is_a_message_not_a_traceback(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    for args in (("compile", str(EXAMPLE), "-o", str(missing / "doc.md")),
                 ("diff", str(EXAMPLE), str(EXAMPLE), "-o", str(missing / "diff.md"))):
        code, out, err = run(*args)
        assert code == 2, (args, err)
        assert err.strip().endswith(f"plan: cannot write {args[-1]}: No such file or directory")
        assert "Traceback" not in err and out == ""
