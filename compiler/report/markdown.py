"""Render the design document as GitHub-flavoured Markdown (and JSON) with Jinja2.

Contract: `render_markdown(doc, figures) -> str`, byte-identical for the same view model. Figures
are not drawn here: the caller writes them as SVG files beside the Markdown and passes their
link records (`figure_files`); each is shown where the HTML page shows it (`placement.py`). The Jinja
environment is strict (`StrictUndefined`), does not autoescape (this is not HTML), and instead
every string from the plan passes through the `md` filter, which escapes Markdown syntax and
raw HTML; LaTeX strings were escaped when the view model was built. Templates are loaded from
the package (`planc.templates`), never from the file system around the plan.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import jinja2

from .diff import DiffView
from .templating import environment
from .view import DocumentView

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+\-!|$~])")


def md(text: object) -> str:
    """Escape text so GitHub shows it literally (no emphasis, links, HTML or math)."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def md_part(text: object) -> str:
    """`md` for a piece of a sentence: a space at either end is kept, since pieces join."""
    s = str(text)
    lead = " " if s[:1].isspace() else ""
    trail = " " if s[-1:].isspace() and s.strip() else ""
    return lead + md(s) + trail


def anchor(quantity: object) -> str:
    """The fragment id of a quantity's derivation (the same as the HTML page's)."""
    return "q-" + (re.sub(r"[^a-z0-9]+", "-", str(quantity).lower()).strip("-") or "part")


def code(text: object) -> str:
    """Inline code that survives backticks inside the text: its fence is one backtick longer than
    the longest run of backticks in it (CommonMark), padded with spaces when the text has any."""
    s = " ".join(str(text).split())
    if "`" not in s:
        return f"`{s}`"
    fence = "`" * (max(len(run) for run in re.findall(r"`+", s)) + 1)
    return f"{fence} {s} {fence}"


def verbatim(text: object) -> str:
    """Text for a fenced code block: as it is, ending with a newline before the closing fence."""
    s = str(text)
    return s if s.endswith("\n") else s + "\n"


@functools.cache
def _env() -> jinja2.Environment:
    env = environment(autoescape=False)
    env.filters["md"] = md
    env.filters["code"] = code
    env.filters["md_part"] = md_part
    env.filters["anchor"] = anchor
    env.filters["verbatim"] = verbatim
    return env


@dataclass(frozen=True)
class FigureFile:
    """A figure written beside the Markdown file, linked by its relative path (GitHub shows no
    `data:` images)."""

    name: str
    title: str
    caption: str
    path: str  # relative to the Markdown file, URL-quoted


def figure_files(figures: Sequence[Any], directory: str) -> list[FigureFile]:
    """Link records for figures written as `<directory>/<name>.svg`."""
    return [FigureFile(f.name, f.title, f.caption, quote(f"{directory}/{f.name}.svg")) for f in figures]


def render_markdown(doc: DocumentView, figures: Sequence[FigureFile] = ()) -> str:
    placed = {}
    if figures:
        from .placement import place

        placed = {key: [f for _, f in figs] for key, figs in place(figures, doc).items()}
    text = _env().get_template("design.md.j2").render(doc=doc, figures=placed)
    # Runs of blank lines left by the template collapse, except in the plan's own text (the
    # appendix, last), which is shown as it is.
    body, heading, appendix = text.partition(_APPENDIX)
    return re.sub(r"\n{3,}", "\n\n", body) + heading + appendix


_APPENDIX = "\n## Appendix: plan source\n"


def render_diff_markdown(diff: DiffView) -> str:
    """`plan diff` for a pull-request comment (GitHub Markdown)."""
    return re.sub(r"\n{3,}", "\n\n", _env().get_template("diff.md.j2").render(diff=diff))


def render_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
