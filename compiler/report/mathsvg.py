"""LaTeX → self-contained SVG for the HTML and PDF reports, with ziamath.

Contract: `latex_to_svg(tex, inline) -> str` returns one `<svg>` element drawn with paths only
(no fonts, no `<text>`, no ids, no external references), sized in `em` so it follows the text
size, with its baseline on the text baseline, or — when the formula cannot be drawn — an escaped
`<code class="tex">` of the LaTeX: a report never fails over one formula. The result is
deterministic and cached per (tex, inline). ziamath is imported on first use only.

The LaTeX comes from `report.latex`, a small known subset. Before layout, `\\text{…}` and
`\\mathrm{…}` groups are taken out whole (their escapes undone here, since latex2mathml
mishandles escaped braces inside `\\text`) and put back as single MathML tokens, and redundant
`<mrow>` wrappers are removed: ziamath measures the children of a row twice, so each nesting
level doubles the work, and a multi-letter name spelt letter by letter is a node per letter.
For the same reason the measuring pass is skipped for rows with nothing to stretch
(`_lean_rows`). ziamath's settings are process-global: they are set for each call and restored,
so rendering is not thread-safe (the report renders on one thread).
"""

from __future__ import annotations

import functools
import html
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any
from xml.etree import ElementTree as ET

FONT_SIZE = 24.0  # ziamath's base size in SVG user units: 1 em of the surrounding text
# Scripts and nested fractions shrink as in TeX, but never below 70 %: the names in a plan's
# formulas are long words, unreadable at TeX's 50 % scriptscript size.
MIN_SIZE = 0.7
PRECISION = 1  # decimals of path coordinates: 0.1/24 em, below a device pixel at any reading size

# One `\text{…}` / `\mathrm{…}` group whose body holds only plain characters and the escapes of
# `report.latex.text`; anything else (nested braces, `^{2}`) is left to latex2mathml.
_ESCAPES = {"\\backslash{}": "\\", "\\hat{}": "^", "\\sim{}": "~", "\\,": " ", "\\ ": " "}
_ESCAPE = r"\\backslash\{\}|\\hat\{\}|\\sim\{\}|\\[{}$%#&_ ,]"
_GROUP = re.compile(r"\\(text|mathrm)\{((?:[^{}\\]|" + _ESCAPE + r")*)\}")
_UNESCAPE = re.compile(_ESCAPE)
_PLACEHOLDER = re.compile("\ue000(\\d+)\ue001")  # private-use marks: no plan text collides
_NBSP = "\u00a0"


def latex_to_svg(tex: str, inline: bool) -> str:
    """The formula as an inline `<svg>` (paths only), or an escaped `<code>` fallback."""
    return _render(tex, inline)


@functools.lru_cache(maxsize=4096)
def _render(tex: str, inline: bool) -> str:
    try:
        return _svg(tex, inline)
    except Exception:  # noqa: BLE001 - any failure of the typesetter degrades to the source
        return fallback(tex)


def fallback(tex: str) -> str:
    return '<code class="tex">' + html.escape(tex, quote=True) + "</code>"


def _svg(tex: str, inline: bool, lean: bool = True) -> str:
    from ziamath.config import config
    from ziamath.zmath import Math

    with _settings(config), _quiet(), (_lean_rows() if lean else nullcontext()):
        root = Math(to_mathml(tex, inline)).svgxml()
    return _finish(root, tex)


def to_mathml(tex: str, inline: bool) -> ET.Element:
    """MathML for `tex` (namespace-free tags), with text groups whole and rows flattened."""
    from latex2mathml.converter import convert

    protected, groups = _protect(tex)
    root = ET.fromstring(convert(protected, display="inline" if inline else "block"))
    for el in root.iter():
        el.tag = el.tag.rpartition("}")[2]
    root.attrib.pop("xmlns", None)
    for el in root.iter("mtext"):
        match = _PLACEHOLDER.fullmatch(el.text or "")
        if match is None:
            continue
        kind, body = groups[int(match.group(1))]
        if not body.strip():
            el.text = _NBSP  # ziamath cannot lay out an empty <mtext>
        elif kind == "mathrm":
            el.tag = "mi"
            el.set("mathvariant", "normal")
            el.text = body.replace(" ", _NBSP)
        else:
            el.text = body.replace(" ", _NBSP)
    _flatten(root)
    return root


def _protect(tex: str) -> tuple[str, list[tuple[str, str]]]:
    groups: list[tuple[str, str]] = []

    def take(match: re.Match[str]) -> str:
        groups.append((match.group(1), _UNESCAPE.sub(lambda m: _ESCAPES.get(m.group(0), m.group(0)[1:]),
                                                     match.group(2))))
        return "\\text{\ue000" + str(len(groups) - 1) + "\ue001}"

    return _GROUP.sub(take, tex), groups


def _flatten(el: ET.Element) -> None:
    """Remove `<mrow>`s that change nothing: a row of one element, and a row inside a row
    (unless it is fenced, or starts with an operator, whose spacing depends on its position)."""
    for child in el:
        _flatten(child)
    children: list[ET.Element] = []
    for child in el:
        if child.tag == "mrow" and not child.attrib and len(child) == 1 and child[0].tag != "mo":
            children.append(child[0])
        elif (el.tag in ("mrow", "math") and child.tag == "mrow" and not child.attrib and len(child)
              and child[0].tag != "mo" and not any(c.tag == "mo" and c.get("fence") for c in child)):
            children.extend(child)
        else:
            children.append(child)
    el[:] = children


def _finish(root: ET.Element, tex: str) -> str:
    """Size the drawing in em, put its baseline on the text baseline, label it for readers."""
    x, y, w, h = (float(v) for v in root.attrib["viewBox"].split())
    for key in ("width", "height", "viewBox"):
        del root.attrib[key]
    root.set("viewBox", f"{_num(x)} {_num(y)} {_num(w)} {_num(h)}")
    root.set("width", f"{_num(w / FONT_SIZE, 3)}em")
    root.set("height", f"{_num(h / FONT_SIZE, 3)}em")
    root.set("style", f"vertical-align:{_num(-(y + h) / FONT_SIZE, 3)}em")
    root.set("role", "img")
    root.set("aria-label", " ".join(tex.split()))
    root.set("class", "math")
    root.attrib.pop("xmlns:xlink", None)
    for el in root.iter():
        el.attrib.pop("id", None)  # paths only: nothing to refer to, nothing to collide
    _merge_glyphs(root)
    svg = ET.tostring(root, encoding="unicode")
    # ElementTree names the SVG namespace `ns0:` when it was declared as an attribute; keep it plain.
    return svg.replace("<ns0:", "<").replace("</ns0:", "</").replace("xmlns:ns0=", "xmlns=")


def _merge_glyphs(root: ET.Element) -> None:
    """One `<path>` for all the glyphs: a renderer pays per element, and the fill is the same.
    (Glyph outlines share one orientation, so the union under the nonzero rule is exact.)"""
    glyphs = [el for el in root if el.tag == "path" and set(el.attrib) == {"d", "fill"} and el.get("fill") == "black"]
    if len(glyphs) < 2:
        return
    glyphs[0].set("d", " ".join(el.get("d", "").strip() for el in glyphs))
    for el in glyphs[1:]:
        root.remove(el)


def _num(value: float, digits: int = PRECISION) -> str:
    text = f"{value:.{digits}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


@contextmanager
def _settings(cfg: Any) -> Iterator[None]:
    """ziamath's settings are process-global: set ours for the call and restore them."""
    saved = (cfg.svg2, cfg.precision, cfg.math.fontsize, cfg.minsizefraction)
    cfg.svg2, cfg.precision, cfg.math.fontsize, cfg.minsizefraction = False, PRECISION, FONT_SIZE, MIN_SIZE
    try:
        yield
    finally:
        cfg.svg2, cfg.precision, cfg.math.fontsize, cfg.minsizefraction = saved


@contextmanager
def _lean_rows() -> Iterator[None]:
    """ziamath lays out every child of a row twice: once without its stretchy operators, to
    know how tall to make the fences, then for real. A row with no stretchy operator anywhere
    below it has nothing to size, and the first pass is wasted; nested rows make that waste
    exponential. Skipping it changes no output (tests compare the two) and typesets the
    flagship about 2.5x faster."""
    from ziamath.nodes.mrow import Mrow

    measure = Mrow.__dict__.get("_get_height_nostretch")
    if measure is None:  # another ziamath: leave it alone
        yield
        return

    def lean(self: Any, line: list[ET.Element], **kwargs: Any) -> Any:
        if any(_sizes_to_row(child) for child in line):
            return measure(self, line, **kwargs)
        return 0.0, 0.0  # read only by stretchy operators sized to this row, and there are none

    Mrow._get_height_nostretch = lean  # type: ignore[method-assign]
    try:
        yield
    finally:
        Mrow._get_height_nostretch = measure  # type: ignore[method-assign]


@functools.cache
def _stretchy() -> frozenset[str]:
    from ziamath.operators import operators

    return frozenset(op for (op, _form), params in operators.items() if params.get("stretchy") == "true")


# Elements that lay out their children as a row of their own, measured for their own fences.
_ROWS = frozenset({"mrow", "math", "mtd", "mtr", "none"})


def _sizes_to_row(el: ET.Element) -> bool:
    """Whether `el`, or an element below it outside any nested row, is an operator that
    stretches to the height of the enclosing row (the only reader of that measurement)."""
    if el.tag in _ROWS:
        return False
    if el.tag == "mfenced" or (el.tag in ("mo", "mi") and (
            el.get("stretchy", "false") != "false" or (el.text or "").strip() in _stretchy())):
        return True
    return any(_sizes_to_row(child) for child in el)


@contextmanager
def _quiet() -> Iterator[None]:
    """ziamath logs through the root logger; its warnings have no place on our stderr."""
    root = logging.getLogger()

    def drop(record: logging.LogRecord) -> bool:
        return False

    root.addFilter(drop)
    try:
        yield
    finally:
        root.removeFilter(drop)
