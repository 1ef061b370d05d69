"""LaTeX → HTML and CSS math for the HTML and PDF reports: text set in the page's fonts.

Contract: `latex_to_html(tex, inline) -> str` returns one `<span class="math">` whose content is
text and `<span>`/`<i>`/`<sup>`/`<sub>` elements styled by `templates/design.css` (fractions
as stacked boxes with a rule, radicals with an overline, `cases` as a small table; around tall
content, parentheses and braces as their glyph scaled and brackets as borders), or — when the formula cannot be converted — an escaped `<code class="tex">` of the
LaTeX: a report never fails over one formula. Every piece of text from the formula is escaped;
the element carries the LaTeX in `data-tex` for a reader who wants to copy it. The result is
deterministic and cached per (tex, inline).

Why text and not drawings: WeasyPrint has no MathML and runs no JavaScript, so the choice is
between glyph outlines (ziamath's SVG, which WeasyPrint parses point by point: about 30 s of the
flagship's PDF) and text laid out with CSS, which WeasyPrint sets with the font engine it uses
for the rest of the page (about 3 s for the same formulas), and which a reader can select and
search in the PDF. The layout is TeX's in outline, not in detail: binary operators and
relations get a medium space, fences around a fraction or a table stretch, nested fractions
and scripts shrink, and a long display formula may break after a top-level operator
rather than run off the page.

The LaTeX comes from `report.latex` (and `sympy.latex` for the closed forms of asks), a small
known subset. latex2mathml turns it into MathML; before that, `\\text{…}` and `\\mathrm{…}`
groups are taken out whole (their escapes undone here, since latex2mathml mishandles escaped
braces inside `\\text`) and put back as single MathML tokens.
"""

from __future__ import annotations

import functools
import html
import re
from xml.etree import ElementTree as ET

# One `\text{…}` / `\mathrm{…}` group whose body holds only plain characters and the escapes of
# `report.latex.text`; anything else (nested braces, `^{2}`) is left to latex2mathml.
_ESCAPES = {"\\backslash{}": "\\", "\\hat{}": "^", "\\sim{}": "~", "\\,": " ", "\\ ": " "}
_ESCAPE = r"\\backslash\{\}|\\hat\{\}|\\sim\{\}|\\[{}$%#&_ ,]"
_GROUP = re.compile(r"\\(text|mathrm)\{((?:[^{}\\]|" + _ESCAPE + r")*)\}")
_UNESCAPE = re.compile(_ESCAPE)
_PLACEHOLDER = re.compile("\ue000(\\d+)\ue001")  # private-use marks: no plan text collides
_NBSP = "\u00a0"
_SPACE = "\u2005"  # a four-per-em space: TeX's medium space (4/18 em) around operators
_THIN = "\u2009"

# Operators set with space on both sides when they stand between two operands; a relation
# that opens a line (`= 4 · 1`, the substituted form) keeps the space after it.
_BINARY = frozenset("+−-·×∧∨")
_RELATIONS = frozenset("=<>≤≥≠≈∼→")
# Invisible operators (function application, invisible times and separator) print nothing.
_INVISIBLE = frozenset("\u2061\u2062\u2063\u2064")
_FRACTION = 0.9  # a fraction's height in lines, per line of numerator and denominator
_FENCE_SCALE = 0.85  # a glyph fence's vertical scale per line of the content's height
# Fence characters → the shape of the fence around tall content (a CSS class): parentheses and
# braces stretch as their glyph scaled, the others are drawn as the borders of their cells.
_GLYPH_FENCES = frozenset({"paren", "brace"})
_FENCES = {"(": "paren", ")": "paren", "[": "bracket", "]": "bracket", "⌈": "ceil", "⌉": "ceil",
           "⌊": "floor", "⌋": "floor", "|": "bar", "{": "brace", "}": "brace"}


def latex_to_html(tex: str, inline: bool) -> str:
    """The formula as HTML text and spans, or an escaped `<code>` fallback."""
    return _render(tex, inline)


@functools.lru_cache(maxsize=4096)
def _render(tex: str, inline: bool) -> str:
    try:
        body, _height = _Writer().row(list(to_mathml(tex, inline)))
    except Exception:
        return fallback(tex)
    kind = "math inline" if inline else "math"
    return f'<span class="{kind}" data-tex="{html.escape(" ".join(tex.split()), quote=True)}">{body}</span>'


def fallback(tex: str) -> str:
    return '<code class="tex">' + html.escape(tex, quote=True) + "</code>"


def to_mathml(tex: str, inline: bool) -> ET.Element:
    """MathML for `tex` (namespace-free tags), with `\\text`/`\\mathrm` groups as single tokens."""
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
        if kind == "mathrm":
            el.tag = "mi"
            el.set("mathvariant", "normal")
        el.text = body.replace(" ", _NBSP)
    return root


def _protect(tex: str) -> tuple[str, list[tuple[str, str]]]:
    groups: list[tuple[str, str]] = []

    def take(match: re.Match[str]) -> str:
        groups.append((match.group(1), _UNESCAPE.sub(lambda m: _ESCAPES.get(m.group(0), m.group(0)[1:]),
                                                     match.group(2))))
        return "\\text{\ue000" + str(len(groups) - 1) + "\ue001}"

    return _GROUP.sub(take, tex), groups


class _Writer:
    """MathML → HTML. Each method returns (markup, height): the height of the piece in lines of
    text, roughly (1 for text, about 2 for a simple fraction, more when nested). It decides
    whether a fence is set as characters (height 1) or stretches: parentheses and braces as
    their glyph scaled to the height, the square brackets of ceil, floor and abs as borders of
    the cells beside the content, which stretch by themselves."""

    def node(self, el: ET.Element) -> tuple[str, float]:
        tag = el.tag
        if tag in ("mi", "mn", "mtext", "ms"):
            text = html.escape(el.text or "", quote=False)
            italic = tag == "mi" and len(el.text or "") == 1 and el.get("mathvariant", "italic") == "italic"
            return (f"<i>{text}</i>" if italic else text), 1.0
        if tag == "mo":
            return html.escape(_visible(el.text), quote=False), 1.0
        if tag == "mspace":
            return _THIN, 1.0
        if tag == "mfrac" and len(el) == 2:
            (num, num_h), (den, den_h) = self.node(el[0]), self.node(el[1])
            return (f'<span class="frac"><span class="num">{num}</span><span class="den">{den}</span></span>',
                    _FRACTION * (num_h + den_h))
        if tag in ("msup", "msub", "msubsup") and len(el) >= 2:
            return self._scripts(el)
        if tag in ("msqrt", "mroot") and len(el):
            inner, height = self.row([el[0]] if tag == "mroot" else list(el))
            index = f"<sup>{self.node(el[1])[0]}</sup>" if tag == "mroot" and len(el) > 1 else ""
            radix = '<span class="radix tall">√</span>' if height > 1 else '<span class="radix">√</span>'
            return f'<span class="sqrt">{index}{radix}<span class="radicand">{inner}</span></span>', height + 0.1
        if tag == "mtable":
            rows, height = [], 0.0
            for tr in el:
                cells = [self.row(list(td)) for td in tr]
                rows.append('<span class="mtr">' + "".join(f'<span class="mtd">{c}</span>' for c, _ in cells) + "</span>")
                height += max((h for _, h in cells), default=1.0)
            return f'<span class="mtable">{"".join(rows)}</span>', height
        return self.row(list(el))  # mrow, mstyle, mpadded and anything unforeseen: a row

    def row(self, children: list[ET.Element]) -> tuple[str, float]:
        children = [c for c in children if not (c.tag == "mo" and not _visible(c.text))]
        fenced = self._fenced(children)
        if fenced is not None:
            return fenced
        out: list[str] = []
        height = 1.0
        for i, child in enumerate(children):
            markup, child_height = self.node(child)
            height = max(height, child_height)
            between = i > 0 and not _is_operator(children[i - 1])
            if between and child.tag != "mo" and (_is_word(child) or _is_word(children[i - 1])):
                markup = _THIN + markup  # implicit product with a name: `10⁸ batch`, not `10⁸batch`
            if child.tag == "mo" and child.text in _RELATIONS:
                markup = (_SPACE if between else "") + markup + _SPACE
            elif child.tag == "mo" and child.text in _BINARY and between:
                markup = _SPACE + markup + _SPACE
            elif child.tag == "mo" and child.text == ",":
                markup += _SPACE
            out.append(markup)
        return "".join(out), height

    def _fenced(self, children: list[ET.Element]) -> tuple[str, float] | None:
        """`\\left( … \\right)` (or a lone `\\left\\{` before a table): a fence pair
        around content, as characters around a line of text, stretched around anything taller."""
        if not children or not _is_fence(children[0], "prefix"):
            return None
        close = children[-1] if len(children) > 1 and _is_fence(children[-1], "postfix") else None
        inner, height = self.row(children[1:-1] if close is not None else children[1:])
        left = children[0].text or ""
        right = (close.text or "") if close is not None else ""
        if height <= 1.0:
            return html.escape(left, quote=False) + inner + html.escape(right, quote=False), 1.0
        shape = _FENCES.get(left, "paren")

        def side(glyph: str, cls: str) -> str:
            if shape not in _GLYPH_FENCES:  # drawn by the cell's borders
                return f'<span class="{cls}"></span>'
            scale = f"{height * _FENCE_SCALE:.2f}".rstrip("0").rstrip(".")
            return (f'<span class="{cls}"><span class="stretch" style="transform: scaleY({scale})">'
                    f"{html.escape(glyph, quote=False)}</span></span>")

        return (f'<span class="fence {shape}">{side(left, "open")}<span class="body">{inner}</span>'
                f'{side(right, "close") if close is not None else ""}</span>'), height + 0.15

    def _scripts(self, el: ET.Element) -> tuple[str, float]:
        base, height = self.node(el[0])
        parts = [self.node(c)[0] for c in el[1:3]]
        if el.tag == "msup":
            return f"{base}<sup>{parts[0]}</sup>", height
        if el.tag == "msub":
            return f"{base}<sub>{parts[0]}</sub>", height
        return f'{base}<span class="subsup"><sup>{parts[1]}</sup><sub>{parts[0]}</sub></span>', height


def _visible(text: str | None) -> str:
    return "".join(ch for ch in (text or "") if ch not in _INVISIBLE)


def _is_word(el: ET.Element) -> bool:
    return el.tag in ("mi", "mtext") and len((el.text or "").strip()) > 1


def _is_operator(el: ET.Element) -> bool:
    return el.tag == "mo" and el.get("form") != "postfix"


def _is_fence(el: ET.Element, form: str) -> bool:
    return el.tag == "mo" and el.get("fence") == "true" and el.get("form") == form
