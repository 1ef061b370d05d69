"""Render the design document as PDF: the HTML page, laid out by WeasyPrint.

Contract: `render_pdf(doc, figures=()) -> bytes`, byte-identical for the same inputs on the same
machine; it is `lay_out(print_page(doc, figures))`, the page written here and laid out wherever
WeasyPrint was imported (the CLI lays it out in a process that imported WeasyPrint while the plan
compiled). The page is the one `render_html` writes (print media: page numbers, a table of contents
with page numbers), with its figures as images of their SVG (`figure_images`: the same drawing,
without the page's stylesheet run over every element of every figure). Nothing is fetched: a `URLFetcher` allows `data:` URLs and files inside the
package's own `templates` folder and refuses everything else, so a plan cannot make the PDF read
(or embed) a local file or reach the network. The PDF carries no date unless `SOURCE_DATE_EPOCH`
is set, in which case that is its creation and modification date; the fonts embedded in it are
stamped with `SOURCE_DATE_EPOCH`, or 0. WeasyPrint is imported here only, when a PDF is asked for.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from .html import FigureLike, render_html
from .view import DocumentView


class FetchRefused(ValueError):
    """A URL the report may not read."""


class PdfUnavailable(RuntimeError):
    """WeasyPrint (or a system library it needs) is not installed."""


def require_weasyprint() -> Any:
    """WeasyPrint, or PdfUnavailable saying how to install it."""
    try:
        import weasyprint
    except (ImportError, OSError) as exc:  # OSError: Pango or another system library is missing
        raise PdfUnavailable(f"PDF output needs WeasyPrint ({exc}); install it with "
                             "`pip install 'plan-compiler[pdf]'`") from exc
    return weasyprint


def render_pdf(doc: DocumentView, figures: Sequence[FigureLike] = ()) -> bytes:
    return lay_out(print_page(doc, figures))


def print_page(doc: DocumentView, figures: Sequence[FigureLike] = ()) -> str:
    """The page WeasyPrint lays out: the HTML report for print, its figures as images. Writing it
    needs no WeasyPrint."""
    return render_html(doc, figures, created=source_date(), figure_images=True)


def lay_out(page: str) -> bytes:
    """The PDF of a page `print_page` wrote. It depends on nothing but the page and
    `SOURCE_DATE_EPOCH`, so a process that imported WeasyPrint ahead can do it (`jobs.standby`)."""
    weasyprint = require_weasyprint()
    fetcher = restricted_fetcher()
    with _only_errors(logging.getLogger("weasyprint")), _source_date_epoch():
        document = weasyprint.HTML(string=page, base_url=_templates_dir().as_uri() + "/", url_fetcher=fetcher)
        pdf = document.write_pdf(pdf_identifier=False)
    assert pdf is not None
    return bytes(pdf)


def weasyprint_installed() -> bool:
    """Whether WeasyPrint can be found, without importing it (a system library it needs may still
    be missing: `require_weasyprint` says so when it imports it)."""
    from importlib.util import find_spec

    return find_spec("weasyprint") is not None


@contextmanager
def _source_date_epoch() -> Iterator[None]:
    """Font subsetting (fontTools) stamps each embedded font with the time of the run unless
    `SOURCE_DATE_EPOCH` is set: set it (to 0 when the user has not) for the render."""
    saved = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = str(_epoch()) if saved is not None else "0"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["SOURCE_DATE_EPOCH"]
        else:
            os.environ["SOURCE_DATE_EPOCH"] = saved


@contextmanager
def _only_errors(logger: logging.Logger) -> Iterator[None]:
    """WeasyPrint warns about CSS it skips and fonts it subsets; a user needs only its errors
    (a resource refused or an image it could not draw)."""
    level = logger.level
    logger.setLevel(max(level, logging.ERROR))
    try:
        yield
    finally:
        logger.setLevel(level)


def source_date() -> str | None:
    """`SOURCE_DATE_EPOCH` as an ISO 8601 date, or None (then the PDF carries no date at all)."""
    if not os.environ.get("SOURCE_DATE_EPOCH", "").strip():
        return None
    return datetime.fromtimestamp(_epoch(), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _epoch() -> int:
    try:
        return max(int(os.environ.get("SOURCE_DATE_EPOCH", "0").strip()), 0)
    except ValueError:
        return 0


def _templates_dir() -> Path:
    return Path(str(resources.files("planc.templates"))).resolve()


def restricted_fetcher() -> Any:
    """A WeasyPrint URL fetcher for `data:` URLs and the package's templates, refusing the rest."""
    from weasyprint.urls import URLFetcher

    class RestrictedFetcher(URLFetcher):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(allowed_protocols=("data", "file"), allow_redirects=False, timeout=1)
            self.refused: list[str] = []

        def fetch(self, url: str, headers: Any = None) -> Any:
            if not is_allowed(url):
                self.refused.append(url)
                raise FetchRefused(f"the report reads no external resource: refused {url[:200]!r}")
            return super().fetch(url, headers)

    return RestrictedFetcher()


def is_allowed(url: str) -> bool:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "data":
        return True
    if scheme != "file" or parts.netloc not in ("", "localhost") or parts.query:
        return False
    root = _templates_dir()
    try:
        path = Path(unquote(parts.path)).resolve()
    except (OSError, ValueError):
        return False
    return path.is_relative_to(root) and path.is_file()
