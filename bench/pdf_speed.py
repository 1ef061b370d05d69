"""PDF benchmark: `plan compile --format pdf` of the flagship vs. importing the libraries it needs.

Usage:
    python bench/pdf_speed.py [--runs N] [--strict]

Measures, with the wall clock, in fresh subprocesses of the running interpreter, the median of
N runs (default 3) after one untimed warm-up each, interleaved as in `compile_speed.py`:

  (a) floor: `python -c "import lark, sympy, jinja2, latex2mathml.converter, matplotlib.figure,
      weasyprint"`: every library the PDF path cannot avoid importing;
  (b) pdf:   `python -m planc.cli compile <repo>/examples/100m_dau.plan --format pdf -o out.pdf`,
      from a temporary directory outside the checkout;
  (c) brief: the same with `--brief`: the main body only (decision, levers, answers, figures).

The target (issue 16) is the brief PDF in under 3 s on a 2-core machine without a GPU, and the
full PDF no slower than before the decision section; the ratios to (a) are printed beside them so
that runs on different machines compare. Then one in-process run of each splits it into its
stages (compile, figures, HTML, WeasyPrint layout, PDF writing), so that a reader sees where the
time goes.

Exit status: 0 whatever the verdict, unless `--strict` is given (then 1 when the target is
missed). A failing compile (exit code other than 0 or 1) is an error (exit 2).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from compile_speed import EXAMPLE, _medians, parse_args, print_rows

TARGET_SECONDS = 3.0
FLOOR = "import lark, sympy, jinja2, latex2mathml.converter, matplotlib.figure, weasyprint"


def _stages(brief: bool) -> list[tuple[str, float]]:
    """One in-process PDF of the flagship, timed stage by stage (imports included in each), with
    the garbage collector tuned as the `plan` command tunes it."""
    from planc.cli import tune_collector

    tune_collector()
    marks: list[tuple[str, float]] = []
    start = last = time.perf_counter()

    def mark(label: str) -> None:
        nonlocal last
        now = time.perf_counter()
        marks.append((label, now - last))
        last = now

    from planc.pipeline import compile_plan
    from planc.report.view import build_document

    compilation = compile_plan(EXAMPLE)
    mark("compile")
    doc = build_document(compilation, brief=brief)
    mark("view model (the levers priced)")
    from planc.report.html import figures_of, render_html

    figures = figures_of(compilation)
    mark("figures (matplotlib)")
    page = render_html(doc, figures, figure_images=True)  # the PDF's page, as render_pdf makes it
    mark("HTML page")
    import weasyprint  # type: ignore[import-untyped]
    from planc.report.pdf import _templates_dir, restricted_fetcher

    mark("import weasyprint")
    from weasyprint.text import ffi as weasy_ffi  # type: ignore[import-untyped]

    subsetter = "HarfBuzz" if getattr(weasy_ffi, "harfbuzz_subset", None) is not None else "fontTools"
    document = weasyprint.HTML(string=page, base_url=_templates_dir().as_uri() + "/",
                               url_fetcher=restricted_fetcher()).render()
    mark(f"WeasyPrint layout ({len(document.pages)} pages)")
    document.write_pdf()
    mark(f"WeasyPrint PDF writing (fonts subset by {subsetter})")
    marks.append(("total in one process", time.perf_counter() - start))
    return marks


def main() -> int:
    args = parse_args(__doc__, 3)

    with tempfile.TemporaryDirectory(prefix="plan-bench-") as tmp:
        cwd = Path(tmp)
        floor = [sys.executable, "-c", FLOOR]
        pdf = [sys.executable, "-m", "planc.cli", "compile", str(EXAMPLE), "--format", "pdf", "-o", str(cwd / "out.pdf")]
        brief = [*pdf[:-2], "--brief", "-o", str(cwd / "brief.pdf")]
        medians = _medians({"floor": (floor, {0}), "pdf": (pdf, {0, 1}), "brief": (brief, {0, 1})}, cwd, args.runs)
        size, brief_size = (cwd / "out.pdf").stat().st_size, (cwd / "brief.pdf").stat().st_size
    a, b, c = medians["floor"], medians["pdf"], medians["brief"]
    passed = c <= TARGET_SECONDS
    rows = [
        ("(a) import the PDF path's libraries", f"{a:.2f} s"),
        ("(b) plan compile 100m_dau.plan --format pdf", f"{b:.2f} s  ({size / 1e6:.2f} MB)  b/a {b / a:.1f}"),
        ("(c) the same with --brief", f"{c:.2f} s  ({brief_size / 1e6:.2f} MB)  c/a {c / a:.1f}"),
        ("target", f"c <= {TARGET_SECONDS:.0f} s  {'PASS' if passed else 'FAIL'}"),
    ]
    print_rows(rows, args.runs)
    for label, flag in (("full", False), ("brief", True)):
        print(f"\nstages of one {label} PDF, in one process{' (after the full one: imports warm)' if flag else ''}:")
        stages = _stages(flag)
        width = max(len(text) for text, _ in stages)
        for text, seconds in stages:
            print(f"  {text:<{width}}  {seconds:6.2f} s")
    return 1 if args.strict and not passed else 0


if __name__ == "__main__":
    sys.exit(main())
