"""The appendix shows the plan's own text: verbatim in Markdown (in a fence no backtick run in
the plan can close), highlighted by the grammar's lexer in HTML, escaped in both."""

from __future__ import annotations

import html
import re
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st
from planc.pipeline import Compilation
from planc.report.html import render_html
from planc.report.markdown import render_markdown
from planc.report.view import build_document
from planc.syntax.highlight import pieces

PLAN = '''# a plan whose text would break a naive appendix: ``` and <script> in a string
let x = 2 GB


let y = x * 3 "three ```x``` <script>alert(1)</script>"
summary y
'''


def test_markdown_appendix_is_the_plan_verbatim(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(PLAN)
    assert c.ok, c.diagnostics
    out = render_markdown(build_document(c))
    _, heading, appendix = out.partition("\n## Appendix: plan source\n")
    assert heading
    fence = "````"  # one longer than the plan's longest run of backticks
    assert f"\n{fence}text\n{PLAN}{fence}\n" in appendix
    assert "\n\n\nlet y" in appendix  # the plan's blank lines are kept


def test_html_appendix_is_highlighted_and_escaped(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(PLAN)
    page = render_html(build_document(c))
    pre = re.search(r'<pre class="plan-source"><code>(.*?)</code></pre>', page, re.S)
    assert pre is not None
    assert '<span class="tok-keyword">let</span>' in pre.group(1)
    assert '<span class="tok-comment"># a plan' in pre.group(1)
    assert "<script>" not in pre.group(1)
    assert html.unescape(re.sub(r"</?span[^>]*>", "", pre.group(1))) == PLAN


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_highlighting_never_loses_or_adds_text(text: str) -> None:
    out = pieces(text)
    assert "".join(p for _, p in out) == text
    assert {k for k, _ in out} <= {"", "keyword", "string", "number", "comment", "name"}
