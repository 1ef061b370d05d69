"""Render the design document as one self-contained HTML file (also the source of the PDF).

Contract: `render_html(doc, figures=(), created=None, figure_images=False) -> str`,
byte-identical for the same inputs. The page follows the Markdown design document section by
section, adds a table of contents, and references nothing outside itself: the stylesheet
(`design.css`, read from the package) is inlined, math is HTML text from `mathhtml`, figures are
inline SVG from `figures`, and the only links are in-page `#anchors`. With `figure_images` (the
PDF's page) each figure is instead an `<img>` whose source is its SVG document as a `data:` URL:
WeasyPrint draws it with the same SVG renderer, to the same pixels, without running the page's
stylesheet over the figure's elements (about half of all the elements of the brief document).

Escaping: the Jinja environment autoescapes and is strict. Every string from the plan reaches
the page as text. Markup is made in this module only, for three things we generate ourselves:
the package's stylesheet, the markup of a formula (`mathhtml`), and the SVG of a figure.
"""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import jinja2
from markupsafe import Markup

from .answer_views import QuestionView
from .mathhtml import latex_to_html
from .placement import BODY, PARTS, place
from .placement import parts as document_parts
from .templating import environment, template_source
from .view import DocumentView, QuantityView


class FigureLike(Protocol):
    name: str
    title: str
    caption: str
    svg: str


@dataclass(frozen=True)
class FigureView:
    anchor: str
    title: str
    caption: str
    svg: Markup


@dataclass(frozen=True)
class TocEntry:
    anchor: str
    title: str


@dataclass
class Page:
    """What the template needs besides the document: anchors, math and figures, all prepared."""

    css: Markup
    created: str | None
    toc: list[TocEntry]
    parts: dict[str, str]  # fixed part (":summary", ...) → anchor
    sections: dict[str, str]  # section title → anchor
    quantities: dict[str, str]  # quantity id → anchor
    question_anchors: list[str]  # parallel to doc.questions
    answers: list[tuple[str, QuestionView]]  # (anchor, question) for the answered ones
    derivations: dict[str, list[Markup]]  # quantity id → its lines, in display math
    part_figures: dict[str, list[FigureView]]  # fixed part → the figures that close it
    section_figures: dict[str, list[FigureView]]  # section title → the figures that close it
    sensitivity_figures: dict[str, list[FigureView]]  # sensitivity target → its figures
    math: Callable[[str], Markup]  # inline math
    source: list[tuple[str, str]]  # the plan's text as (token class, piece), for the appendix


def render_html(doc: DocumentView, figures: Sequence[FigureLike] = (), created: str | None = None,
                figure_images: bool = False) -> str:
    """The page; `created` (ISO 8601) is written as the document's date, for the PDF's metadata."""
    page = build_page(doc, figures, created, figure_images)
    return _env().get_template("design.html.j2").render(doc=doc, page=page)


def build_page(doc: DocumentView, figures: Sequence[FigureLike] = (), created: str | None = None,
               figure_images: bool = False) -> Page:
    anchors = _Anchors()
    fixed = document_parts(doc)
    placed = place(figures, doc)
    body = [p for p in fixed if p in BODY]
    if ("part", ":figures") in placed:  # figures with no other place close the body, before the appendix
        body.append(":figures")
    appendix = [p for p in fixed if p not in BODY]
    parts = {p: anchors.new(PARTS[p]) for p in body + appendix}
    sections = {s.title: anchors.new(s.anchor or s.title) for s in doc.sections} if appendix else {}
    toc = [TocEntry(parts[p], PARTS[p]) for p in body + appendix[:1]]
    toc += [TocEntry(sections[s.title], s.title) for s in doc.sections if s.title in sections]
    toc += [TocEntry(parts[p], PARTS[p]) for p in appendix[1:]]
    quantities = {q.id: anchors.new("q-" + q.id) for q in [*doc.assumptions, *doc.specifications,
                  *(q for s in doc.sections for q in s.quantities)] if q.id in doc.linked}
    question_anchors = [anchors.new("question-" + q.title) for q in doc.questions]
    views = {key: [_figure(f, anchors.new("figure-" + f.name), n, figure_images) for n, f in figs]
             for key, figs in placed.items()}
    return Page(
        css=_stylesheet(),
        created=created,
        toc=toc,
        parts=parts,
        sections=sections,
        quantities=quantities,
        question_anchors=question_anchors,
        answers=[(a, q) for a, q in zip(question_anchors, doc.questions) if q.result],
        derivations={q.id: _derivation(q) for s in doc.sections for q in s.quantities} if appendix else {},
        part_figures={k[1]: v for k, v in views.items() if k[0] == "part"},
        section_figures={k[1]: v for k, v in views.items() if k[0] == "section"},
        sensitivity_figures={k[1]: v for k, v in views.items() if k[0] == "sensitivity"},
        math=_inline_math,
        source=[] if doc.brief else _highlighted(doc.source),  # the appendix shows it
    )


def _highlighted(text: str) -> list[tuple[str, str]]:
    if not text:
        return []
    from ..syntax.highlight import pieces

    return pieces(text)


# ---- math ---------------------------------------------------------------------------------


def _derivation(q: QuantityView) -> list[Markup]:
    """`lhs = formula`, then `= substituted` unless it repeats a neighbour (the result line is
    text in the template, so that the PDF's text layer carries every value)."""
    lines = [_math(f"{q.lhs} = {q.formula}", inline=False)]
    if q.shows_substituted:
        lines.append(_math(f"= {q.substituted}", inline=False))
    return lines


def _inline_math(tex: str) -> Markup:
    return _math(tex, inline=True)


def _math(tex: str, inline: bool) -> Markup:
    # latex_to_html returns markup we generated, every piece of plan text escaped, or the
    # escaped LaTeX in <code>.
    return Markup(latex_to_html(tex, inline))


# ---- figures ------------------------------------------------------------------------------


def _figure(fig: FigureLike, anchor: str, n: int, as_image: bool = False) -> FigureView:
    # `_` never occurs in a page anchor, so a figure's ids cannot collide with the page's
    svg = inline_svg(fig.svg, f"f{n}_")
    if not as_image:
        return FigureView(anchor, fig.title, fig.caption, Markup(svg))
    data = base64.b64encode(('<?xml version="1.0" encoding="utf-8"?>\n' + svg).encode()).decode("ascii")
    return FigureView(anchor, fig.title, fig.caption,
                      Markup('<img src="data:image/svg+xml;base64,{}" alt="{}">').format(data, fig.title))


_TAG = re.compile(r"<[^!?/][^>]*>")
_ID = re.compile(r'(?<=\s)id="([^"]+)"')
_XML_PROLOGUE = re.compile(r"<\?xml[^>]*\?>|<!DOCTYPE[^>]*>|<!--.*?-->", re.DOTALL)
_METADATA = re.compile(r"<metadata\b.*?</metadata>\s*", re.DOTALL)
_STYLE = re.compile(r"<style\b[^>]*>(.*?)</style>", re.DOTALL)


def inline_svg(svg: str, prefix: str) -> str:
    """A standalone SVG document made fit to sit inside an HTML page among others: no prologue
    or metadata, every id prefixed (and every reference to it), styles as presentation
    attributes where they can be, and any other stylesheet scoped to the figure (an inline
    `<style>` would otherwise apply to the whole page)."""
    svg = _METADATA.sub("", _XML_PROLOGUE.sub("", svg)).strip()
    ids = {i for tag in _TAG.findall(svg) for i in _ID.findall(tag)}
    if ids:
        names = "|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True))
        refs = re.compile(r'(url\(#|href="#)(' + names + r')(?=[)"])')

        def scope(tag: re.Match[str]) -> str:
            text = _ID.sub(lambda m: f'id="{prefix}{m.group(1)}"', tag.group(0))
            return refs.sub(lambda m: m.group(1) + prefix + m.group(2), text)

        svg = _TAG.sub(scope, svg)
    root = _TAG.search(svg)
    if root is None or not root.group(0).startswith("<svg"):
        raise ValueError("not an SVG document")
    root_id = _ID.search(root.group(0))
    scope_id = root_id.group(1) if root_id else f"{prefix}svg"
    inherited: list[tuple[str, str]] = []

    def stylesheet(match: re.Match[str]) -> str:
        simple = re.fullmatch(r"\s*\*\s*\{([^{}]*)\}\s*", match.group(1))
        decls = _declarations(simple.group(1)) if simple else None
        if decls is None:
            return "<style>" + _scope_css(match.group(1), f"#{scope_id}") + "</style>"
        inherited.extend(decls)  # `* {…}` of inherited properties: the root's attributes
        return ""

    svg = _TAG.sub(_presentation_attributes, _STYLE.sub(stylesheet, svg))
    extra = ("" if root_id else f' id="{scope_id}"') + "".join(f' {k}="{v}"' for k, v in inherited)
    root = _TAG.search(svg)
    assert root is not None
    return svg[:root.start() + 4] + extra + svg[root.start() + 4:]


# SVG properties that are also presentation attributes: a `style="…"` made only of these
# becomes attributes, which every renderer reads without running a CSS engine over the figure.
_PRESENTATION = frozenset({
    "fill", "fill-opacity", "fill-rule", "stroke", "stroke-width", "stroke-opacity", "stroke-linecap",
    "stroke-linejoin", "stroke-miterlimit", "stroke-dasharray", "stroke-dashoffset", "opacity", "clip-path",
    "clip-rule", "color", "display", "visibility", "font-family", "font-size", "font-style", "font-weight",
    "text-anchor", "dominant-baseline"})
_STYLE_ATTR = re.compile(r'\sstyle="([^"]*)"')


def _declarations(css: str) -> list[tuple[str, str]] | None:
    pairs = [tuple(p.strip() for p in d.split(":", 1)) for d in css.split(";") if d.strip()]
    if not all(len(p) == 2 and p[0] in _PRESENTATION and p[1] and '"' not in p[1] for p in pairs):
        return None
    return [(p[0], p[1]) for p in pairs]


def _presentation_attributes(tag: re.Match[str]) -> str:
    text = tag.group(0)
    match = _STYLE_ATTR.search(text)
    decls = _declarations(match.group(1)) if match else None
    if match is None or decls is None:
        return text
    present = set(re.findall(r'\s([a-z-]+)="', text))
    attrs = "".join(f' {k}="{v}"' for k, v in decls if k not in present)
    return text[:match.start()] + attrs + text[match.end():]


def _scope_css(css: str, scope: str) -> str:
    rules = []
    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        scoped = ", ".join(f"{scope} {s.strip()}" if s.strip() != "*" else f"{scope}, {scope} *"
                           for s in selectors.split(","))
        rules.append(f"{scoped} {{{body.strip()}}}")
    return "\n".join(rules)


# ---- anchors, stylesheet, environment -----------------------------------------------------


class _Anchors:
    """Unique, readable fragment ids: `memory`, `q-chat-memory-per-device`, `memory-2`."""

    def __init__(self) -> None:
        self.used: set[str] = {"contents"}

    def new(self, text: str) -> str:
        base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "part"
        anchor, n = base, 1
        while anchor in self.used:
            n += 1
            anchor = f"{base}-{n}"
        self.used.add(anchor)
        return anchor


@functools.cache
def _stylesheet() -> Markup:
    css = template_source("design.css")
    assert "</" not in css, "the stylesheet must not close its <style> element"
    return Markup(css)  # the package's own stylesheet, not plan text


def breakable(text: object) -> str:
    """Text that may wrap after `.`, `_` and `/` (a zero-width space): long dotted names in
    narrow table headers break between words instead of inside them."""
    return re.sub(r"([._/])(?=\w)", "\\1\u200b", str(text))


MAX_SHOWN_STRING = 1_000
"""The most characters of one string from the plan (a title, a description, a source) the page
shows; a longer one is cut with `…`, so that the cost of laying out the page (WeasyPrint's grows
faster than linearly with the length of a paragraph) stays bounded. The JSON report keeps the
full text."""


def _bounded(value: Any) -> Any:
    """Jinja's `finalize`: every expression's value on its way into the page. A string from the
    plan is one line (strings cannot span lines); the plan's source, our markup and numbers pass."""
    if type(value) is str and len(value) > MAX_SHOWN_STRING and "\n" not in value:
        return value[: MAX_SHOWN_STRING - 1] + "…"
    return value


@functools.cache
def _env() -> jinja2.Environment:
    env = environment(autoescape=jinja2.select_autoescape(enabled_extensions=("html", "html.j2"), default=True),
                      finalize=_bounded)
    env.filters["breakable"] = breakable
    return env


MATPLOTLIB_MISSING = "drawing its figures needs matplotlib ({detail}); install it with `pip install 'plan-compiler[pdf]'`"


def drawable_figures(compilation: Any) -> tuple[list[Any], str | None]:
    """The figures of a compilation, and None; or no figures and why, when the plan has figures
    but matplotlib (or a library it needs) cannot be imported. A plan without figures is ([], None)."""
    lowered = getattr(compilation, "lowered", None)
    if lowered is None:
        return [], None
    return joined_figures(drawable_plan_figures(lowered), drawable_answer_figures(compilation))


def drawable_plan_figures(lowered: Any) -> tuple[list[Any], str | None]:
    """`drawable_figures`' first part: the figures the plan's kinds declare, from the lowered
    plan alone (what the answers add is `drawable_answer_figures`; `joined_figures` puts the two together)."""
    from .figures import has_plan_figures, plan_figures

    try:
        return list(plan_figures(lowered)), None
    except ImportError as exc:
        return [], (MATPLOTLIB_MISSING.format(detail=exc) if has_plan_figures(lowered) else None)


def drawable_answer_figures(compilation: Any) -> tuple[list[Any], str | None]:
    from .figures import answer_figures, has_answer_figures

    try:
        return list(answer_figures(compilation)), None
    except ImportError as exc:
        return [], (MATPLOTLIB_MISSING.format(detail=exc) if has_answer_figures(compilation) else None)


def answer_figure_data(compilation: Any) -> Any:
    """What `drawable_answer_figures_of` needs of a compilation besides its lowered plan: small and
    picklable, for a process forked after lowering (`figures.answer_data`, its plan left out)."""
    import dataclasses

    from .figures import answer_data

    return dataclasses.replace(answer_data(compilation), lowered=None)


def drawable_answer_figures_of(lowered: Any, data: Any) -> tuple[list[Any], str | None]:
    """`drawable_answer_figures` from `answer_figure_data`'s record and this process's lowered plan:
    the CLI has them drawn in the process that drew the plan's figures (`jobs.Later`), where
    matplotlib is imported and its fonts loaded already."""
    import dataclasses

    return drawable_answer_figures(dataclasses.replace(data, lowered=lowered))


def joined_figures(plan: tuple[list[Any], str | None], answers: tuple[list[Any], str | None]
                   ) -> tuple[list[Any], str | None]:
    """The two parts as `drawable_figures` gives them: the figures, and why some are missing."""
    from .figures import joined

    return joined(plan[0], answers[0]), plan[1] or answers[1]


def figures_of(compilation: Any) -> list[Any]:
    """The figures of a compilation, or none when the figures module is not available."""
    try:
        from .figures import build_figures

        return list(build_figures(compilation))
    except ImportError:  # no figures module, or its plotting library is not installed
        return []
