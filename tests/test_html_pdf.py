"""The HTML and PDF design documents: self-contained, escaped, deterministic, nothing fetched.

The flagship is rendered once per format (module fixtures): figures and PDF layout are the
slow parts. Figures are included when `report.figures` is available, so these tests
hold with or without it.
"""

from __future__ import annotations

import io
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import escape
from planc.cli import main
from planc.pipeline import Compilation, compile_plan
from planc.report import latex, mathhtml
from planc.report.html import breakable, figures_of, inline_svg, render_html
from planc.report.view import DocumentView, build_document

from .conftest import REPO
from .flagship import FLAGSHIP as FIGURES

FLAGSHIP = REPO / "examples" / "100m_dau.plan"


def _weasyprint_problem() -> str | None:
    try:
        import weasyprint  # noqa: F401
    except (ImportError, OSError) as exc:  # OSError: a system library (Pango) is missing
        return f"weasyprint cannot be imported ({exc}); install plan-compiler[pdf]"
    return None


WEASYPRINT_PROBLEM = _weasyprint_problem()
HAVE_WEASYPRINT = WEASYPRINT_PROBLEM is None
needs_weasyprint = pytest.mark.skipif(not HAVE_WEASYPRINT, reason=WEASYPRINT_PROBLEM or "")

# Every string the plan controls carries markup, URLs, Markdown/LaTeX specials and unicode.
EVIL = r'''
title "Evil <script>alert(1)</script> plan | $x$ \\ `tick` — ünïcødé ✓"
scope "<img src=\"file:///etc/passwd\"> and <link rel=stylesheet href=\"http://example.com/x.css\"> | $ \\ ` ü"

kind box "<script>alert(0)</script> a box" {
  input budget: GiB "<script>alert(1)</script> budget | $a$ \\n ` ü" source "<img src=\"file:///etc/passwd\"> <a href=\"http://example.com/\">x</a>"
  input used: GiB = 20 GiB "used <link rel=stylesheet href=\"http://example.com/x.css\">"
  section "<script>alert(4)</script> Section | $ \\ `" {
    derive spare: GiB = budget - used "<b>spare</b> & more | $ \\ `" source "<img src=\"file:///etc/passwd\">" symbol "\\text{<script>x</script>}"
  }
}
box b { budget = 48 GiB source "<link rel=stylesheet href=\"http://example.com/x.css\"> ü | $ \\ `" }
check b.spare >= {need} GiB "<script>alert(2)</script> fits"
scenario "<img src=x onerror=alert(3)> | $ \\ `" { b.budget = 64 GiB }
ask "<img src=\"file:///etc/passwd\"> max used": maximize b.used subject to b.spare >= 0 B
summary b.spare, b.used
'''
PAYLOADS = ("<script>alert(1)</script>", '<img src="file:///etc/passwd">',
            '<link rel=stylesheet href="http://example.com/x.css">', "<b>spare</b>")


@dataclass
class Rendered:
    compilation: Compilation
    doc: DocumentView
    figures: list
    html: str
    seconds: float


def _render(path: Path) -> Rendered:
    compilation = compile_plan(path)
    assert compilation.ok, [d.message for d in compilation.diagnostics]
    doc = build_document(compilation)
    figures = figures_of(compilation)
    start = time.perf_counter()
    html = render_html(doc, figures)
    return Rendered(compilation, doc, figures, html, time.perf_counter() - start)


@pytest.fixture(scope="module")
def flagship() -> Rendered:
    return _render(FLAGSHIP)


@pytest.fixture(scope="module")
def evil_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("evil") / "evil.plan"
    path.write_text(EVIL.replace("{need}", "1"), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def evil(evil_path: Path) -> Rendered:
    return _render(evil_path)


# ---- HTML ---------------------------------------------------------------------------------


def test_html_shows_the_headline_numbers_and_every_part(flagship: Rendered) -> None:
    html, doc = flagship.html, flagship.doc
    assert html.startswith("<!DOCTYPE html>")
    assert f"<title>{escape(doc.title)}</title>" in html
    for s in doc.summary:
        assert str(escape(s.text)) in html, s.label
    assert FIGURES["chat.devices"] in html and FIGURES["chat.tpot"] in html
    for title in ("Decision", "Levers, priced", "Assumptions", "Checks", "Questions", "Sensitivity",
                  *(s.title for s in doc.sections)):
        assert f">{escape(title)}</h2>" in html, title
    # each derived quantity: its heading, its derivation in math, its result as text
    q = next(q for s in doc.sections for q in s.quantities if q.id == "chat.kv_bytes_per_token")
    assert f"<code>{q.id}</code>" in html and f"= {q.text}" in html and q.text == "320 KiB/token"


def test_html_is_self_contained(flagship: Rendered) -> None:
    html = flagship.html
    assert "<script" not in html.lower()
    assert "<link" not in html.lower() and "<iframe" not in html.lower() and "<img" not in html.lower()
    assert not re.search(r"\bsrc\s*=", html)
    assert re.search(r"@import|url\((?!#)", html) is None  # CSS fetches nothing either
    hrefs = re.findall(r'href="([^"]*)"', html)
    assert hrefs and all(h.startswith("#") for h in hrefs), [h for h in hrefs if not h.startswith("#")][:5]
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", html))
    assert urls <= {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}, urls


def test_html_math_is_text(flagship: Rendered) -> None:
    html, doc = flagship.html, flagship.doc
    quantities = [q for s in doc.sections for q in s.quantities]
    assert html.count('<span class="math"') >= len(quantities)
    assert html.count('<code class="tex">') == 0  # every formula of the flagship converts
    # a formula is text a reader can select and search: its names and values are in the page
    assert "kv_bytes_per_token = " in html
    assert '<span class="frac"><span class="num">' in html


def test_html_anchors_are_unique_and_resolve(flagship: Rendered) -> None:
    html = flagship.html
    ids = re.findall(r'\sid="([^"]+)"', html)
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})[:5]
    targets = {h[1:] for h in re.findall(r'href="(#[^"]*)"', html)}
    assert targets <= set(ids), sorted(targets - set(ids))[:5]
    toc = re.search(r'<nav class="toc".*?</nav>', html, re.DOTALL)
    assert toc is not None and toc.group(0).count("<li>") >= 5


def test_html_is_byte_identical_across_renders(flagship: Rendered) -> None:
    again = render_html(flagship.doc, figures_of(flagship.compilation))
    assert again == flagship.html


def test_html_places_figures_when_there_are_any(flagship: Rendered) -> None:
    for fig in flagship.figures:
        assert f">{escape(fig.title)}.</strong>" in flagship.html, fig.name
    if flagship.figures:  # ids of several figures must not collide (checked above) and are scoped
        assert re.search(r'<svg id="f0_svg"', flagship.html)


def test_the_pdfs_page_carries_each_figure_as_an_image_of_the_same_svg(flagship: Rendered) -> None:
    """The PDF is laid out from the HTML page with every inline SVG made an `<img>` of that SVG
    (WeasyPrint draws both alike without the page's stylesheet run over the figure's elements):
    nothing else on the page changes."""
    import base64

    if not flagship.figures:
        pytest.skip("no figures without matplotlib")
    printed = render_html(flagship.doc, flagship.figures, figure_images=True)
    assert "<svg" not in printed
    images = re.findall(r'<img src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)" alt="([^"]*)">', printed)
    assert len(images) == len(flagship.figures) == flagship.html.count("<svg id=")

    def inline(match: re.Match[str]) -> str:
        svg = base64.b64decode(match.group(1)).decode()
        return svg.removeprefix('<?xml version="1.0" encoding="utf-8"?>\n')

    assert re.sub(r'<img src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)" alt="[^"]*">', inline, printed) == flagship.html
    assert sorted(alt for _, alt in images) == sorted(escape(f.title) for f in flagship.figures)  # alt text: its title


def test_html_escapes_everything_the_plan_says(evil: Rendered) -> None:
    html = evil.html
    assert "<script" not in html.lower() and "<img" not in html.lower() and "<link" not in html.lower()
    assert "<b>spare" not in html and '<a href="http' not in html
    for payload in PAYLOADS:
        assert str(escape(payload)) in html, payload
    assert "| $x$ \\ `tick` — ünïcødé ✓" in html  # Markdown and LaTeX specials, unicode: as is
    hrefs = re.findall(r'href="([^"]*)"', html)
    assert all(h.startswith("#") for h in hrefs), hrefs
    # the raw LaTeX symbol becomes text (or escaped source), never markup
    assert "&lt;script&gt;x&lt;/script&gt;" in html


def test_html_is_byte_identical_from_a_cold_cache(evil: Rendered) -> None:
    mathhtml._render.cache_clear()
    assert render_html(evil.doc, figures_of(evil.compilation)) == evil.html


# ---- math ---------------------------------------------------------------------------------

MATH_TAGS = {"span", "i", "sup", "sub"}


def _math_tree(out: str) -> ET.Element:
    """The converter's output as XML: it must be well formed, with only our tags."""
    root = ET.fromstring(out)
    tags = {el.tag for el in root.iter()}
    assert tags <= MATH_TAGS, tags
    return root


def test_math_is_text_with_fractions_scripts_and_spaced_operators() -> None:
    out = mathhtml.latex_to_html(r"\mathrm{kv\_bytes} = \frac{2 \cdot L}{\text{1 token}} - x^{2} + n_{kv}", False)
    s, m = "\u2005", "\u00a0"
    assert out == (
        '<span class="math" data-tex="\\mathrm{kv\\_bytes} = \\frac{2 \\cdot L}{\\text{1 token}} - x^{2} + n_{kv}">'
        f'kv_bytes{s}={s}<span class="frac"><span class="num">2{s}·{s}<i>L</i></span>'
        f'<span class="den">1{m}token</span></span>{s}−{s}<i>x</i><sup>2</sup>{s}+{s}<i>n</i><sub><i>k</i><i>v</i></sub></span>')
    _math_tree(out)


def test_math_unary_minus_and_a_leading_relation() -> None:
    # the substituted line starts with `=`: space after it only; a minus after it is a sign
    out = mathhtml.latex_to_html(r"= -\text{3} \cdot \left(-a\right)", False)
    text = "".join(_math_tree(out).itertext())
    assert text == "=\u2005−3\u2005·\u2005(−a)"


def test_math_keeps_the_index_of_a_root() -> None:
    root = _math_tree(mathhtml.latex_to_html(r"\sqrt[3]{x} + \sqrt{y}", True))
    assert "".join(root.itertext()) == "3√x\u2005+\u2005√y"
    assert root.find(".//span[@class='sqrt']/sup") is not None


def test_math_sets_a_thin_space_before_a_name_in_an_implicit_product() -> None:
    # sympy writes a closed form's coefficient and name side by side: `6.71 \cdot 10^{8} \mathrm{batch}`
    text = "".join(_math_tree(mathhtml.latex_to_html(r"6.71 \cdot 10^{8} \mathrm{batch} + 2 h", True)).itertext())
    assert text == "6.71\u2005·\u200510" + "8\u2009batch\u2005+\u20052h"


@pytest.mark.parametrize(("tex", "shape"), [
    (r"\left(\frac{a}{b}\right)", "paren"), (r"\left\lceil \frac{a}{b} \right\rceil", "ceil"),
    (r"\left\lfloor \frac{a}{b} \right\rfloor", "floor"), (r"\left|\frac{a}{b}\right|", "bar"),
])
def test_math_fences_stretch_around_tall_content_only(tex: str, shape: str) -> None:
    tall = _math_tree(mathhtml.latex_to_html(tex, False))
    fence = [el for el in tall.iter("span") if "fence" in el.get("class", "").split()]
    assert len(fence) == 1 and fence[0].get("class") == f"fence {shape}"
    open_, body, close = list(fence[0])
    assert (open_.get("class"), body.get("class"), close.get("class")) == ("open", "body", "close")
    assert "".join(body.itertext()) == "ab"
    if shape == "paren":  # the glyph, scaled to the height of the fraction
        stretch = open_.find("span")
        assert stretch is not None and stretch.text == "(" and "scaleY(1." in stretch.get("style", "")
    else:  # drawn by the cell's borders
        assert not "".join(open_.itertext()) and not "".join(close.itertext())
    flat = tex.replace(r"\frac{a}{b}", "a")
    short = _math_tree(mathhtml.latex_to_html(flat, False))
    assert not any("fence" in el.get("class", "") for el in short.iter("span"))
    assert len("".join(short.itertext())) == 3  # the glyphs themselves: `(a)`, `⌈a⌉`, ...


def test_math_cases_is_a_table_with_an_open_brace() -> None:
    root = _math_tree(mathhtml.latex_to_html(
        r"\begin{cases} a & \text{if } c \le 3 \\ b & \text{otherwise} \end{cases}", False))
    classes = [el.get("class") for el in root.iter("span")]
    assert "fence brace" in classes and classes.count("mtr") == 2 and classes.count("mtd") == 4
    fence = next(el for el in root.iter("span") if el.get("class") == "fence brace")
    assert [el.get("class") for el in fence] == ["open", "body"]  # `cases` has no closing fence
    assert "".join(fence[0].itertext()) == "{"


def test_math_is_deterministic_and_cached() -> None:
    tex = r"\frac{\text{63.75 GiB} + \text{3.914 GiB}}{4} + \sqrt{n_{kv}}"
    first = mathhtml.latex_to_html(tex, True)
    assert mathhtml.latex_to_html(tex, True) is first
    mathhtml._render.cache_clear()
    assert mathhtml.latex_to_html(tex, True) == first


def test_math_reads_text_escapes_as_text() -> None:
    # report.latex escapes plan text for \text{...}; the converter gives it back as it was
    tex = r"\text{\$0.7561 a\_b \{c\} 50\% \#1 \& \backslash{} \hat{} \sim{}} \cdot \mathrm{x\_y}"
    mathml = mathhtml.to_mathml(tex, True)
    assert [el.text for el in mathml.iter("mtext")] == ["$0.7561\u00a0a_b\u00a0{c}\u00a050%\u00a0#1\u00a0&\u00a0\\\u00a0^\u00a0~"]
    assert [el.text for el in mathml.iter("mi")] == ["x_y"]
    root = _math_tree(mathhtml.latex_to_html(tex, True))
    assert "".join(root.itertext()) == "$0.7561\u00a0a_b\u00a0{c}\u00a050%\u00a0#1\u00a0&\u00a0\\\u00a0^\u00a0~\u2005·\u2005x_y"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=40))
def test_math_gives_back_any_plan_text_escaped(words: str) -> None:
    # whatever a plan puts in a name or a string arrives as text: never markup, never lost
    root = _math_tree(mathhtml.latex_to_html(r"\text{" + latex.text(words) + "}", True))
    assert "".join(root.itertext()) == words.replace(" ", "\u00a0")


def test_math_falls_back_to_escaped_source() -> None:
    out = mathhtml.latex_to_html(r"\left( <b>", True)
    assert out == '<code class="tex">\\left( &lt;b&gt;</code>'


# ---- figures inside a page ----------------------------------------------------------------


FIGURE = """<?xml version="1.0" encoding="utf-8" standalone="no"?>
<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">
<svg xmlns:xlink="http://www.w3.org/1999/xlink" width="10pt" height="10pt" viewBox="0 0 10 10" xmlns="http://www.w3.org/2000/svg">
 <metadata><rdf:RDF xmlns:dc="http://purl.org/dc/elements/1.1/"/></metadata>
 <defs><style type="text/css">*{stroke-linejoin: round; stroke-linecap: butt}</style>
  <path id="g1" d="M 0 0 L 1 1"/><clipPath id="c1"><rect x="0" y="0" width="5" height="5"/></clipPath></defs>
 <g id="figure_1"><use xlink:href="#g1" style="fill: #4c72b0; stroke: #000000"/>
  <path d="M 0 0" clip-path="url(#c1)" style="fill: none"/></g>
</svg>"""


def test_inline_svg_scopes_ids_and_styles() -> None:
    out = inline_svg(FIGURE, "f3-")
    assert out.startswith('<svg id="f3-svg"') and "<?xml" not in out and "DOCTYPE" not in out
    assert "<metadata" not in out and "purl.org" not in out
    assert 'id="f3-g1"' in out and 'xlink:href="#f3-g1"' in out and 'clip-path="url(#f3-c1)"' in out
    assert 'id="g1"' not in out
    assert "<style" not in out and 'stroke-linejoin="round"' in out  # `* {...}` became root attributes
    assert 'fill="#4c72b0" stroke="#000000"' in out and "style=" not in out
    assert inline_svg(FIGURE, "f4-") != out  # two figures never share an id


def test_breakable_headers() -> None:
    assert breakable("chat.memory_per_device") == "chat.\u200bmemory_\u200bper_\u200bdevice"


# ---- PDF ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def flagship_pdf(flagship: Rendered) -> tuple[bytes, float]:
    if not HAVE_WEASYPRINT:
        pytest.skip(WEASYPRINT_PROBLEM or "")
    from planc.report.pdf import render_pdf

    mp = pytest.MonkeyPatch()
    mp.delenv("SOURCE_DATE_EPOCH", raising=False)
    try:
        start = time.perf_counter()
        pdf = render_pdf(flagship.doc, flagship.figures)
        return pdf, time.perf_counter() - start
    finally:
        mp.undo()


def _reader(pdf: bytes):
    pypdf = pytest.importorskip("pypdf")
    return pypdf.PdfReader(io.BytesIO(pdf))


def _external_links(reader) -> list[str]:
    uris = []
    for page in reader.pages:
        for annot in page.get("/Annots") or []:
            action = annot.get_object().get("/A")
            if action is not None and action.get_object().get("/URI") is not None:
                uris.append(str(action.get_object()["/URI"]))
    return uris


def _embedded_files(reader) -> list[str]:
    names = reader.trailer["/Root"].get("/Names")
    files = names.get_object().get("/EmbeddedFiles") if names is not None else None
    return list(reader.attachments) + ([str(files)] if files is not None else [])


@needs_weasyprint
def test_pdf_of_the_flagship(flagship: Rendered, flagship_pdf: tuple[bytes, float]) -> None:
    pdf, seconds = flagship_pdf
    print(f"\nflagship: HTML {flagship.seconds:.1f} s, PDF {seconds:.1f} s, {len(pdf) / 1e6:.1f} MB")
    assert pdf.startswith(b"%PDF-")
    reader = _reader(pdf)
    assert len(reader.pages) > 3
    text = "\n".join(page.extract_text() for page in reader.pages[:3])
    assert flagship.doc.title in text
    assert FIGURES["chat.devices"] in text
    assert _embedded_files(reader) == []
    assert _external_links(reader) == []
    info = reader.metadata or {}
    assert "/CreationDate" not in info and "/ModDate" not in info
    assert info.get("/Title") == flagship.doc.title


@needs_weasyprint
def test_pdf_main_body_fits_ten_pages(flagship: Rendered, flagship_pdf: tuple[bytes, float]) -> None:
    """The decision, the levers, the answers and the figures: ten pages at most, with the audit
    appendix after them (or left out, `--brief`)."""
    from planc.report.pdf import render_pdf

    brief = _reader(render_pdf(build_document(flagship.compilation, brief=True), flagship.figures))
    assert len(brief.pages) <= 10
    assert "Audit appendix" not in " ".join(page.extract_text() for page in brief.pages)
    pages = [page.extract_text() for page in _reader(flagship_pdf[0]).pages]
    appendix = next(i for i, text in enumerate(pages) if "Audit appendix" in text)
    assert appendix <= 10, appendix  # the body is pages 1-10 at most


@needs_weasyprint
def test_pdf_formulas_and_figures_are_searchable_text(flagship: Rendered, flagship_pdf: tuple[bytes, float]) -> None:
    # a reviewer can search the PDF for a name in a formula, a substituted value, an axis label
    text = " ".join(page.extract_text() for page in _reader(flagship_pdf[0]).pages)
    text = re.sub(r"\s+", " ", text.replace("\u00a0", " "))
    assert "ridge_point = compute_flops" in text
    assert "1.979 PFLOP/s" in text and "3.35 TB/s" in text
    if flagship.figures:
        assert "time per output token (ms)" in text


@needs_weasyprint
def test_pdf_table_of_contents_has_page_numbers(flagship: Rendered, flagship_pdf: tuple[bytes, float]) -> None:
    reader = _reader(flagship_pdf[0])
    first = reader.pages[0].extract_text()
    assert re.search(r"Assumptions\s*\.{3,}\s*\d+", first), first[:800]
    assert re.search(r"page 1 of \d+", first), first[-200:]


@pytest.fixture(scope="module")
def evil_pdfs(evil: Rendered) -> list[bytes]:
    if not HAVE_WEASYPRINT:
        pytest.skip(WEASYPRINT_PROBLEM or "")
    from planc.report.pdf import render_pdf

    mp = pytest.MonkeyPatch()
    mp.delenv("SOURCE_DATE_EPOCH", raising=False)
    try:
        return [render_pdf(evil.doc, evil.figures) for _ in range(2)]
    finally:
        mp.undo()


@needs_weasyprint
def test_the_pdf_is_laid_out_from_the_page_with_figure_images(evil: Rendered, monkeypatch: pytest.MonkeyPatch) -> None:
    from planc.report import pdf

    asked: list[bool] = []
    own = pdf.render_html

    def recorded(*args: object, figure_images: bool = False, **kwargs: object) -> str:
        asked.append(figure_images)
        return own(*args, figure_images=figure_images, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pdf, "render_html", recorded)
    assert pdf.render_pdf(evil.doc, evil.figures).startswith(b"%PDF-")
    assert asked == [True]


@needs_weasyprint
def test_pdf_is_byte_identical_across_renders(evil_pdfs: list[bytes]) -> None:
    assert evil_pdfs[0] == evil_pdfs[1]


@needs_weasyprint
def test_pdf_shows_payloads_as_text_and_fetches_nothing(evil: Rendered, evil_pdfs: list[bytes]) -> None:
    pdf = evil_pdfs[0]
    assert b"root:" not in pdf and b"/bin/" not in pdf
    reader = _reader(pdf)
    text = "\n".join(page.extract_text() for page in reader.pages)
    flat = " ".join(text.split())
    assert "<script>alert(1)</script>" in flat and "ünïcødé" in flat
    assert "| $x$ \\ `tick`" in flat and '<img src="file:///etc/passwd">' in flat
    assert _embedded_files(reader) == []
    assert _external_links(reader) == []


@needs_weasyprint
def test_fetcher_refuses_files_and_network() -> None:
    import weasyprint
    from planc.report.pdf import is_allowed, restricted_fetcher

    templates = Path(str(__import__("importlib.resources").resources.files("planc.templates"))).resolve()
    assert is_allowed("data:text/plain,hello")
    assert is_allowed((templates / "design.css").as_uri())
    for url in ("file:///etc/passwd", "http://example.com/x.css", "https://example.com/", "ftp://example.com/x",
                (templates / ".." / ".." / ".." / "etc" / "passwd").as_uri(), "file://remote-host/etc/passwd",
                templates.as_uri() + "/design.css?x=1"):
        assert not is_allowed(url), url
    # what the default fetcher would do with a link to a local file: embed it in the PDF
    fetcher = restricted_fetcher()
    html = ('<a rel="attachment" href="file:///etc/passwd">passwd</a><img src="file:///etc/passwd">'
            '<link rel="stylesheet" href="http://127.0.0.1:9/x.css"><p>x</p>')
    pdf = weasyprint.HTML(string=html, url_fetcher=fetcher).write_pdf()
    assert b"root:" not in pdf
    assert "file:///etc/passwd" in fetcher.refused and "http://127.0.0.1:9/x.css" in fetcher.refused


def test_source_date_epoch(monkeypatch: pytest.MonkeyPatch) -> None:
    from planc.report.pdf import source_date

    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    assert source_date() is None
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "86400")
    assert source_date() == "1970-01-02T00:00:00Z"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "not a number")
    assert source_date() == "1970-01-01T00:00:00Z"


def test_html_carries_a_date_only_when_asked(evil: Rendered) -> None:
    assert "dcterms" not in evil.html
    dated = render_html(evil.doc, [], created="1970-01-02T00:00:00Z")
    assert '<meta name="dcterms.created" content="1970-01-02T00:00:00Z">' in dated


# ---- CLI ----------------------------------------------------------------------------------


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def test_cli_html_default_name_and_exit_codes(evil_path: Path, in_tmp: Path) -> None:
    code, _, err = _run("compile", str(evil_path), "--format", "html")
    assert code == 0, err
    page = (in_tmp / "evil.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "wrote evil.html" in err
    failing = in_tmp / "failing.plan"
    failing.write_text(EVIL.replace("{need}", "100"), encoding="utf-8")
    code, _, err = _run("compile", str(failing), "--format", "html", "-o", "f.html")
    assert code == 1 and "check(s) failed" in err
    assert "✗ FAIL" in (in_tmp / "f.html").read_text(encoding="utf-8")
    bad = in_tmp / "bad.plan"
    bad.write_text("let x = 1 GB + 1 s\n", encoding="utf-8")
    code, _, _ = _run("compile", str(bad), "--format", "html")
    assert code == 2 and not (in_tmp / "bad.html").exists()


@needs_weasyprint
def test_cli_pdf(evil_path: Path, in_tmp: Path) -> None:
    code, _, err = _run("compile", str(evil_path), "--format", "pdf")
    assert code == 0, err
    assert (in_tmp / "evil.pdf").read_bytes().startswith(b"%PDF-")


TRICKY = (
    r"\left(\frac{\frac{a}{b} + \left\lceil \frac{x}{y} \right\rceil}{\left|z\right|}\right)^{2}",
    r"\begin{cases} \ln\left(\frac{w}{1 - p}\right) & \text{if } w > 1 - p \\ 0 & \text{otherwise} \end{cases} \cdot q",
    r"\sqrt{\frac{\left(n_{h} + 2 \cdot n_{kv}\right) \cdot d_{h}}{\mathrm{tensor\_parallel}}} - \left\lfloor t \right\rfloor",
    r"\min\left(\frac{\frac{\frac{m}{p}}{e}}{e}, \max\left(1, \frac{2}{3}\right)\right) \le \text{80 GB}",
)


@pytest.mark.parametrize("tex", TRICKY)
def test_tricky_formulas_convert_to_well_formed_math(tex: str) -> None:
    for inline in (True, False):
        out = mathhtml.latex_to_html(tex, inline)
        assert out.startswith('<span class="math'), out
        _math_tree(out)


@needs_weasyprint
def test_pdf_opens_with_the_decision(flagship: Rendered, flagship_pdf: tuple[bytes, float]) -> None:
    """Page 1 is the title, scope and contents, then the decision: what to deploy and the headline
    numbers; the next page goes on with the checks, what decides the fleet and why."""
    reader = _reader(flagship_pdf[0])
    first, second = (re.sub(r"\s+", " ", reader.pages[k].extract_text()) for k in (0, 1))
    assert "Contents" in first and "Decision What to deploy." in first
    for needed in (FIGURES["chat.devices"], FIGURES["chat.cost_per_month"], "The search over weights"):
        assert needed in first, needed
    both = first + " " + second
    for needed in ("p99 TTFT SLO at capacity", "What decides chat.devices", "Why.", "Decode is memory-bound"):
        assert needed in both, needed