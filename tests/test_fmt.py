"""`plan fmt`: one canonical layout, comments kept, lines kept, meaning unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from planc.cli import main
from planc.source import SourceFile
from planc.syntax.ast import shape
from planc.syntax.fmt import _lines, format_text
from planc.syntax.parser import parse

from .conftest import REPO

SOURCES = sorted([*(REPO / "examples").glob("*.plan"), *(REPO / "stdlib").rglob("*.plan")])


def _tree(text: str) -> object:
    module, problems = parse(SourceFile("t.plan", text))
    assert module is not None and not problems, problems
    return shape(module)


def _messed(text: str) -> str:
    """The same tokens on the same lines, every line four columns deeper, three spaces wherever
    the layout has any, and none around the operators and commas the layout spaces."""
    out = []
    for indent, tokens in _lines(text):
        line, before = "", None
        for t in tokens:
            if before is not None:
                tight = t.kind in ("EQUAL", "COMMA", "PLUS", "MUL_OP") or before.kind in ("EQUAL", "COMMA", "PLUS")
                line += "" if tight and t.kind != "COMMENT" else ("   " if t.space_before or t.kind == "COMMENT" else "")
            line += t.text
            before = t
        out.append(" " * (indent + 4) + line + "  " if tokens else "")
    return "\n".join(out) + "\n\n\n"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_example_and_stdlib_file_is_laid_out_and_comes_back_from_a_mess(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert format_text(text) == text  # the repository is in the canonical layout
    messy = _messed(text)
    assert messy != text and _tree(messy) == _tree(text)
    laid_out = format_text(messy)
    assert laid_out == text
    assert format_text(laid_out) == laid_out


@pytest.mark.parametrize(("before", "after"), [
    ("let  x=1+2*3\n", "let x = 1 + 2 * 3\n"),
    ("let x = f( a ,b )\n", "let x = f(a, b)\n"),
    ("let x = -1 .. 2\n", "let x = -1 .. 2\n"),
    ("let x = y -1\n", "let x = y - 1\n"),
    ("let x = (-y) ^2\n", "let x = (-y) ^ 2\n"),
    ("deployment   chat{\nmodel=llama   # the model\n}\n", "deployment chat {\n  model = llama  # the model\n}\n"),
    ("kind k {\n      input a: count = 1\n    \"what it is\"\n}\n", 'kind k {\n  input a: count = 1\n    "what it is"\n}\n'),
    ("let a = 1\n\n\n\nlet b = 2   \n", "let a = 1\n\nlet b = 2\n"),
    ("let x = 1", "let x = 1\n"),
    ('lever "x"{ kv = fp8 }\n', 'lever "x" { kv = fp8 }\n'),
])
def test_the_rules(before: str, after: str) -> None:
    assert format_text(before) == after
    assert _tree(before) == _tree(after)


def test_strings_units_and_comments_are_copied_exactly() -> None:
    text = 'let x = 3 tokens/s  #  a   comment=kept\nlet s = "a  =  b {x:%}"\n'
    assert format_text(text) == text


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_fmt_check_rewrites_and_errors(tmp_path: Path) -> None:
    messy = tmp_path / "messy.plan"
    messy.write_text("let  x=1\n", encoding="utf-8")
    clean = tmp_path / "sub" / "clean.plan"
    clean.parent.mkdir()
    clean.write_text("let x = 1\n", encoding="utf-8")
    code, out, err = _run("fmt", "--check", str(tmp_path))
    assert code == 1 and out == f"would reformat {messy}\n" and "1 already laid out, 1 to reformat" in err
    assert messy.read_text(encoding="utf-8") == "let  x=1\n"  # --check changes nothing
    code, _, err = _run("fmt", str(tmp_path))
    assert code == 0 and messy.read_text(encoding="utf-8") == "let x = 1\n" and "1 reformatted" in err
    broken = tmp_path / "broken.plan"
    broken.write_text("let x = 1 +\n", encoding="utf-8")
    code, _, err = _run("fmt", str(broken))
    assert code == 2 and "E0102" in err and broken.read_text(encoding="utf-8") == "let x = 1 +\n"


def test_the_repository_passes_fmt_check() -> None:
    code, out, _ = _run("fmt", "--check", str(REPO / "examples"), str(REPO / "stdlib"))
    assert code == 0 and out == ""
