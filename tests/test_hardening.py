"""Regression tests for issue 12 (hardening): every defect found by the attack run, each a test
that fails without its fix. Bad input is a located diagnostic with its own code, exit 2; an
exception that still escapes is an internal error, exit 3, never a traceback or exit 1."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from planc.cli import main
from planc.pipeline import compile_plan
from planc.render_diagnostics import render_human, render_short

from .conftest import REPO

EXAMPLE = REPO / "examples" / "100m_dau.plan"
_TEXT = EXAMPLE.read_text(encoding="utf-8")
DEPLOYMENT = _TEXT[:_TEXT.index("\n}\n", _TEXT.index("deployment chat {")) + 3].replace(  # up to the deployment's block
    " .. 12 requests/user/day", "").replace("0.7 .. 0.8", "0.75")


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def compile_text(tmp_path: Path, text: str, name: str = "x.plan") -> tuple[list[str], object]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    c = compile_plan(path, shown=name)
    return [d.code for d in c.diagnostics], c


def located(c: object, code: str) -> None:
    diags = [d for d in c.diagnostics if d.code == code]  # type: ignore[attr-defined]
    assert diags, [d.code for d in c.diagnostics]  # type: ignore[attr-defined]
    assert all(d.primary is not None for d in diags)
    assert c.exit_code == 2  # type: ignore[attr-defined]


# ---- the internal-error net ------------------------------------------------------------------


def test_an_escaping_exception_is_an_internal_error_exit_3(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import planc.pipeline

    def boom(*_: object, **__: object) -> None:
        raise RuntimeError("\x1b]0;boom\x07 planted")

    monkeypatch.setattr(planc.pipeline, "compile_plan", boom)
    for command in ("check", "compile"):
        code, _, err = run(command, str(EXAMPLE), "-o", str(tmp_path / "x.md")) if command == "compile" \
            else run(command, str(EXAMPLE))
        assert code == 3, err
        assert "plan: internal error: RuntimeError:" in err and "Traceback" not in err
        assert "please report it" in err and "0.1.0" in err and "\x1b" not in err


# ---- defect 9: tracebacks on bad input -------------------------------------------------------


@pytest.mark.parametrize(("text", "code"), [
    ("let a = " + " + ".join(["1"] * 500) + "\n", "E0110"),
    ("let a = " + "1" * 4301 + "\n", "E0106"),
    ("let a = 1e-400 ^ 2\n", "E0406"),
    ("let a = sqrt(2) / 1e-400\n", "E0403"),
    ("let a = 1e99999999\n", "E0107"),
    ('title "' + "x" * 5000 + '"\n', "E0108"),
    ("let a = 1" + " " * 10_001 + "\n", "E0109"),
])
def test_pathological_literals_are_located_diagnostics(tmp_path: Path, text: str, code: str) -> None:
    start = time.perf_counter()
    _, c = compile_text(tmp_path, text)
    assert time.perf_counter() - start < 10
    located(c, code)
    render_human(c.diagnostics)  # type: ignore[attr-defined]


def test_a_thousand_nested_imports_are_e0210(tmp_path: Path) -> None:
    for i in range(1000):
        (tmp_path / f"f{i}.plan").write_text((f'import "./f{i + 1}"\n' if i < 999 else "") + f"let a{i} = 1\n")
    c = compile_plan(tmp_path / "f0.plan", shown="f0.plan")
    located(c, "E0210")


@pytest.mark.parametrize(("question", "code"), [
    ("search chat over batch in [1, 1e400] minimize cost_per_month", "E0306"),
    ("sweep chat over batch in 1 .. 10^400 log2", "E0306"),
    ("sweep chat over batch in 0 .. 8 log2", "E0306"),  # defect 2: used to loop for ever
    ("sweep chat over batch in -1 .. 8 log10", "E0306"),
    ("sweep chat over batch in 8 .. 1", "E0306"),  # empty
    ("sweep chat over batch in 1 .. 1000, tensor_parallel in 1 .. 10000", "E0506"),  # defect 4
    ("search chat over batch in 1 .. 10000, tensor_parallel in 1 .. 10000 minimize cost_per_month", "E0506"),
    ("compare chat over batch in 1 .. 1e300", None),  # 17 points: fine
])
def test_questions_are_bounded_before_points_are_built(tmp_path: Path, question: str, code: str | None) -> None:
    start = time.perf_counter()
    codes, c = compile_text(tmp_path, DEPLOYMENT + question + "\n")
    assert time.perf_counter() - start < 20
    if code is None:
        assert c.exit_code in (0, 1, 2) and not {"E0306", "E0506"} & set(codes)  # type: ignore[attr-defined]
    else:
        located(c, code)


def test_a_large_sweep_is_vectorised_and_agrees_with_the_exact_one(tmp_path: Path) -> None:
    start = time.perf_counter()
    _, big = compile_text(tmp_path, DEPLOYMENT + "sweep chat over context in 1 tokens .. 2000 tokens -> line(tpot_worst)\n", "big.plan")
    assert time.perf_counter() - start < 20  # was 49 s, point by point
    _, small = compile_text(tmp_path, DEPLOYMENT + "sweep chat over context in 1 tokens .. 64 tokens -> line(tpot_worst)\n", "small.plan")
    assert big.ok and small.ok  # type: ignore[attr-defined]
    (vec,), (exact,) = big.answers, small.answers  # type: ignore[attr-defined]
    assert len(vec.rows) == 1000 and any("2,000 points" in n for n in vec.notes)
    exact_rows = dict(exact.rows)
    for label, values in vec.rows:
        if label in exact_rows:
            assert values[0] == pytest.approx(float(exact_rows[label][0]), rel=1e-9)


def test_plan_check_dev_zero_is_too_large_not_memory_error() -> None:
    code, _, err = run("check", "/dev/zero")
    assert code == 2 and "error[E0006]" in err and "/dev/zero:1:1" in err


def test_import_hf_with_a_4301_digit_number_is_a_diagnostic(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "llama", "hidden_size": ' + "1" * 4301 + "}")
    code, _, err = run("import-hf", str(config), "--name", "x", "-o", str(tmp_path / "x.plan"))
    assert code == 2 and "Traceback" not in err and "internal error" not in err


def test_huge_exact_values_are_not_printed_as_fractions(tmp_path: Path) -> None:
    # a product of rationals with thousands of digits: the report uses the float
    text = "let a = (1 + 1/3) ^ 300 * (1 + 1/7) ^ 300 / (1 + 1/11) ^ 300 * (7/5) ^ 300\nsummary a\n"
    out = tmp_path / "x.json"
    code, _, err = run("compile", str(tmp_path / "x.plan"), "--format", "json", "-o", str(out)) if (
        tmp_path / "x.plan").write_text(text) else (None, None, None)
    assert code == 0, err
    (q,) = [q for q in json.loads(out.read_text())["quantities"] if q["id"] == "a"]
    assert q["exact"] is None and q["value"]["value"] > 1


def test_the_log_of_a_rational_below_float_range_is_a_number(tmp_path: Path) -> None:
    # 1e-400 is exact and positive, but 0.0 as a float: its log comes from numerator and denominator
    (tmp_path / "x.plan").write_text("let a = log(1e-400)\nlet b = log(1e-400 * 1e-400)\nsummary a, b\n")
    out = tmp_path / "x.json"
    code, _, err = run("compile", str(tmp_path / "x.plan"), "--format", "json", "-o", str(out))
    assert code == 0, err
    values = {q["id"]: q["value"]["value"] for q in json.loads(out.read_text())["quantities"]}
    assert values["a"] == pytest.approx(-400 * math.log(10)) and values["b"] == pytest.approx(-800 * math.log(10))


# ---- defect 11 -----------------------------------------------------------------------------


def test_cr_only_line_endings_are_lines(tmp_path: Path) -> None:
    path = tmp_path / "mac.plan"
    path.write_bytes(b'let a = 1\rlet b = a + 1\rcheck b == 2 "cr"\r')
    c = compile_plan(path, shown="mac.plan")
    assert c.exit_code == 0, render_human(c.diagnostics)


def test_not_utf8_has_a_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "latin.plan"
    path.write_bytes('let a = 1\ntitle "Café"\n'.encode("latin-1"))
    c = compile_plan(path, shown="latin.plan")
    assert render_short(c.diagnostics).startswith("latin.plan:2:11: error[E0003]")


def test_unit_exponent_too_large_says_so(tmp_path: Path) -> None:
    _, c = compile_text(tmp_path, "let a = 1 B^100\n")
    (d,) = c.diagnostics  # type: ignore[attr-defined]
    assert d.code == "E0301" and d.primary.text == "exponent too large" and "at most 12" in d.help


def test_stdin_is_read_with_a_dash_and_a_fifo_is_refused(tmp_path: Path) -> None:
    code, out, err = run("check", "-", stdin='let a = 1\ncheck a == 1 "one"\n')
    assert code == 0 and "pass  one" in out, err
    fifo = tmp_path / "pipe.plan"
    os.mkfifo(fifo)
    proc = subprocess.run([sys.executable, "-m", "planc.cli", "check", str(fifo)], capture_output=True, text=True,
                          timeout=30, check=False)
    assert proc.returncode == 2 and "error[E0007]" in proc.stderr


def test_e0601_always_has_help(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text("[" * 100_000)
    code, _, err = run("import-hf", str(config), "--name", "x", "-o", str(tmp_path / "x.plan"))
    assert code == 2 and "error[E0601]" in err and "= help:" in err


# ---- defect 7: terminal escapes ------------------------------------------------------------


def test_terminal_output_has_no_control_characters(tmp_path: Path) -> None:
    plan = tmp_path / "esc.plan"
    plan.write_text('let a = 1 "\x1b]0;pwned\x07"\ncheck a > 0 "\x1b[2Jcleared"\n')
    code, out, _ = run("check", str(plan))
    assert code == 0 and "\x1b" not in out and "\x07" not in out and "␛[2Jcleared" in out
    plan.write_text('let a = zz # \x1b[2J\x9b\u202e\n')
    code, _, err = run("check", str(plan))
    assert code == 2 and not any(ch in err for ch in "\x1b\x9b\u202e") and "␛[2J" in err


def test_a_long_source_line_is_echoed_as_a_window(tmp_path: Path) -> None:
    plan = tmp_path / "long.plan"
    plan.write_text("let a = 1 " + "x" * 9000 + " + zz\n")
    code, _, err = run("check", str(plan))
    assert code == 2 and max(len(line) for line in err.splitlines()) < 600 and "…" in err


# ---- defect 5: escaping in the reports -----------------------------------------------------

INJECTION = '''kind k {
  input x: count = 2 symbol "x`<img src=y onerror=alert(1)>`"
  derive y: count = x * 2 "d" symbol "<script>alert(1)</script>"
}
k a { }
ask "t `<img src=x onerror=alert(2)>` ``b``": maximize a.x subject to a.y <= 10
check a.y <= 10 "lab `<script>alert(3)</script>`"
summary a.y
'''


def _outside_code(markdown: str) -> str:
    """The Markdown with code spans and fenced blocks removed, as CommonMark reads them."""
    import re

    text = re.sub(r"^(`{3,})[^\n]*\n.*?^\1\s*$", "", markdown, flags=re.M | re.S)
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\":
            out.append(text[i:i + 2])
            i += 2
            continue
        if text[i] == "`":
            j = i
            while j < len(text) and text[j] == "`":
                j += 1
            fence = text[i:j]
            end = text.find(fence, j)
            while end >= 0 and text[end + len(fence):end + len(fence) + 1] == "`":
                end = text.find(fence, end + len(fence) + 1)
            if end >= 0:
                i = end + len(fence)
                continue
        out.append(text[i])
        i += 1
    return "".join(out)


def test_markdown_report_has_no_live_html(tmp_path: Path) -> None:
    plan = tmp_path / "inj.plan"
    plan.write_text(INJECTION)
    out = tmp_path / "inj.md"
    code, _, err = run("compile", str(plan), "-o", str(out))
    assert code == 0, err
    text = out.read_text()
    appendix = text.index("## Appendix: plan source")
    live = _outside_code(text[:appendix])
    for tag in ("<img", "<script", "</script"):
        assert tag not in live.replace("\\<", ""), tag
    # a symbol cannot close the math's code span: its backtick is gone
    assert "$`x\\lt img" in text[:appendix] or "x\\lt img" in text[:appendix]


def test_html_report_escapes_every_string(tmp_path: Path) -> None:
    plan = tmp_path / "inj.plan"
    plan.write_text(INJECTION)
    code, out, err = run("compile", str(plan), "--format", "html", "-o", "-")
    assert code == 0, err
    assert "<img" not in out and "<script" not in out


# ---- defect 10: PDF cost -------------------------------------------------------------------


def test_html_shows_long_strings_cut_and_json_keeps_them(tmp_path: Path) -> None:
    title = "abcdefghij" * 400
    plan = tmp_path / "t.plan"
    plan.write_text(f'title "{title}"\nlet a = 1\nsummary a\n')
    code, html, _ = run("compile", str(plan), "--format", "html", "-o", "-")
    assert code == 0 and title not in html and title[:990] in html and "…" in html
    code, data, _ = run("compile", str(plan), "--format", "json", "-o", "-")
    assert code == 0 and title in data
