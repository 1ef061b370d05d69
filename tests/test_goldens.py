"""Golden design documents: the Markdown of every example, byte for byte, and the HTML of a small
plan with its structure, text and math exact.

The goldens live in `tests/goldens/`; `PLAN_UPDATE_GOLDENS=1` rewrites them (then read the diff:
a changed golden is a changed design document). The HTML golden replaces the inlined stylesheet
(`templates/design.css`, a file of its own) by a placeholder; everything else — markup, math,
text, numbers, escaping — must match.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
from pathlib import Path

import jsonschema
import pytest
from planc.pipeline import Compilation, compile_plan
from planc.report.machine import document_json, schema_path
from planc.report.markdown import render_json, render_markdown
from planc.report.view import DocumentView, build_document

REPO = Path(__file__).resolve().parent.parent
GOLDENS = Path(__file__).resolve().parent / "goldens"
UPDATE = os.environ.get("PLAN_UPDATE_GOLDENS") == "1"
EXAMPLES = sorted((REPO / "examples").glob("*.plan"))


def _check(golden: Path, text: str) -> None:
    # the stdlib is named by block and field, never by line: a physics edit moves no golden line
    assert not re.search(r"<stdlib>/[\w./-]+:\d", text), re.search(r"<stdlib>/[\w./-]+:\d+", text)
    if UPDATE:
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert golden.is_file(), f"missing {golden.name}; run with PLAN_UPDATE_GOLDENS=1"
    expected = golden.read_text(encoding="utf-8")
    assert text == expected, f"{golden.name} differs from the golden; run with PLAN_UPDATE_GOLDENS=1 and review the diff"


@functools.cache
def compiled(example: Path) -> tuple[Compilation, DocumentView]:
    """Each example compiled once for the goldens and the JSON Schema tests."""
    compilation = compile_plan(example, shown=f"examples/{example.name}")
    assert compilation.ok
    return compilation, build_document(compilation)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_markdown_golden(example: Path) -> None:
    _, doc = compiled(example)
    text = render_markdown(doc)
    _check(GOLDENS / f"{example.stem}.md", text)
    lines = text.splitlines()
    # a table opens a block of its own: after a blank line, or it is read as the paragraph's text
    glued = [n + 1 for n, (before, line) in enumerate(itertools.pairwise(lines), start=1)
             if line.startswith("|") and before.strip() and not before.startswith("|")]
    assert glued == [], f"tables glued to the paragraph before them, at lines {glued}"
    # a variant's quantity is shown as its path of `where`s (ir.shown), never as its internal id
    assert not re.search(r"\b[a-z_][a-z0-9_\\]*@[a-z_][a-z0-9_\\@]*\.[a-z_]", text), \
        re.search(r"\b[a-z_][a-z0-9_\\]*@[a-z_][a-z0-9_\\@]*\.[a-z_]\S*", text)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_json_report_of_every_example_meets_its_schema(example: Path) -> None:
    compilation, doc = compiled(example)
    report = json.loads(render_json(document_json(doc, compilation)))
    schema = json.loads(schema_path("plan.report").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(report, schema, cls=jsonschema.Draft202012Validator)
    # every summary number and its text are the same value
    for item in report["summary"]:
        assert item["value"] is None or item["value"]["text"] == item["text"]


SMALL = REPO / "tests" / "cases" / "units" / "ok" / "range_input.plan"


def test_html_golden() -> None:
    pytest.importorskip("latex2mathml")
    from planc.report.html import render_html

    compilation = compile_plan(SMALL, shown="range_input.plan")
    html = render_html(build_document(compilation))
    html = re.sub(r"(<style>).*?(</style>)", r"\1…\2", html, count=1, flags=re.S)  # templates/design.css itself
    _check(GOLDENS / "range_input.html", html)
