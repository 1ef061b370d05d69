"""The `plan` command: compile, check and compare plans.

Contract: exit codes 0 ok, 1 a check failed, 2 invalid plan or usage, 3 an internal error (a
bug in the compiler: any exception that escapes a command is reported as
`plan: internal error: <type>: <message>` and a line asking for a bug report, never as a
traceback and never as exit 1, which CI reads as "a check failed"). Diagnostics go to stderr
(human by default, `--format json` or `--short` otherwise); a report is written only when the
plan has no errors. `-` as FILE reads the plan from standard input. Text from the plan printed
to the terminal goes through `terminal_safe` (no control characters). Heavy libraries are
imported only on the paths that need them.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from . import __version__
from .cli_io import cannot_write, emit, output_format, progress, show_diagnostics
from .cli_tools import COMMANDS

if TYPE_CHECKING:
    from collections.abc import Callable

    from .pipeline import Compilation
    from .report.view import DocumentView

EXAMPLES = """
\b
Examples:
  plan compile examples/100m_dau.plan                 # design doc → 100m_dau.md
  plan compile examples/100m_dau.plan -o doc.md
  plan compile examples/100m_dau.plan --format json -o -
  plan compile examples/100m_dau.plan --format html   # one self-contained page → 100m_dau.html
  plan compile examples/100m_dau.plan -o doc.html     # the format follows -o's suffix
  plan compile examples/100m_dau.plan --format pdf    # → 100m_dau.pdf (needs plan-compiler[pdf])
  plan check examples/100m_dau.plan                   # exit 1 if a check fails
  plan diff base.plan head.plan > comment.md          # what a change to a plan changes
  plan init --model llama-3.1-70b --hardware h200 -o my.plan   # a starter plan that compiles
  plan flags examples/100m_dau.plan                   # vllm serve ... --max-num-seqs 64  ← chat.batch
  plan explain E0302                                  # what a diagnostic code means
  plan fmt --check plans/                             # the canonical layout; without --check, rewrite
  plan physics 5.4                                    # a section of the physics the stdlib cites
  plan lsp                                            # the language server, for an editor (stdio)
"""


INTERNAL_ERROR = 3


class _Plan(click.Group):
    """The command group, with the net for internal errors: an exception that escapes a
    command (a bug: bad input is a diagnostic) is one line naming it and exit 3."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except Exception as exc:
            internal_error(exc)


def internal_error(exc: BaseException) -> None:
    """Report an exception that escaped a command, and exit 3."""
    from .render_diagnostics import terminal_safe

    message = terminal_safe(str(exc), 300, newlines=False)
    click.echo(f"plan: internal error: {type(exc).__name__}: {message}", err=True)
    click.echo(f"plan: this is a bug in plan {__version__}, not in your plan; please report it "
               "with the command and the plan that triggered it", err=True)
    sys.exit(INTERNAL_ERROR)


@click.group(cls=_Plan, epilog=EXAMPLES, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="plan")
def main() -> None:
    """plan: a compiler for ML-inference capacity plans.

    Turns a `.plan` file (model, hardware, traffic, SLOs, deployment) into a design document
    in which every number shows its formula, its substituted values and its source.
    """


@main.command()
@click.argument("plan_file", metavar="FILE", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path, allow_dash=True),
              help="where to write the report (default: FILE's name with the format's suffix, in the current directory; `-` for stdout)")
@click.option("--format", "fmt", type=click.Choice(["md", "json", "html", "pdf"]), default=None,
              help="report format: Markdown, JSON, one self-contained HTML page, or PDF (needs `plan-compiler[pdf]`)  "
                   "[default: from -o's suffix (.md, .json, .html, .pdf), else md]")
@click.option("--diagnostics", "diag_fmt", type=click.Choice(["human", "short", "json"]), default=None,
              help="how to print problems  [default: json with --format json, else human]")
@click.option("--figures", is_flag=True,
              help="Markdown: also draw the plots (needs `plan-compiler[pdf]`) as SVG files in a folder beside the "
                   "report, `<report>.figures/`, linked from it (HTML and PDF always carry them inline)")
@click.option("--brief", is_flag=True,
              help="the body only: the decision, the answers, the sensitivities and the figures, without the audit "
                   "appendix (assumptions, derivations, checks in full, plan source)")
def compile(plan_file: Path, output: Path | None, fmt: str | None, diag_fmt: str | None, figures: bool,
            brief: bool) -> None:
    """Compile FILE into a design document."""
    from .pipeline import compile_plan

    fmt = output_format(output, fmt, ("md", "json", "html", "pdf"))
    stem = "stdin" if str(plan_file) == "-" else plan_file.stem
    target = output if output is not None else Path(stem + "." + fmt)
    if figures and (fmt != "md" or str(target) == "-"):
        raise click.UsageError("--figures writes SVG files beside a Markdown report: use it with --format md and "
                               "-o FILE (HTML and PDF carry their figures inline)")
    diag_fmt = diag_fmt or ("json" if fmt == "json" else "human")
    lay_out = None
    if fmt == "pdf":  # WeasyPrint imported in a second process while this one compiles; it lays out the page
        from .jobs import standby
        from .report.pdf import lay_out as lay_out_here
        from .report.pdf import require_weasyprint

        lay_out = standby(require_weasyprint, lay_out_here)
    progress(f"compiling {plan_file}")
    figured = fmt in ("html", "pdf")
    if figured:  # the figures, drawn in the levers' process while this one answers the questions: the
        from .jobs import Later  # plan's at once, the answers' when they are sent (matplotlib warm there)
        from .report.html import (
            answer_figure_data,
            drawable_answer_figures_of,
            drawable_plan_figures,
            joined_figures,
        )
    result = compile_plan(plan_file, report=True, progress=progress,
                          also=[drawable_plan_figures, Later(drawable_answer_figures_of)] if figured else [])
    show_diagnostics(result, diag_fmt)
    if not result.ok:  # no report: 2 for an invalid plan, 1 for a well-formed one the physics cannot meet
        sys.exit(result.exit_code)
    from .report.view import build_document

    drawn = None
    if figured:
        progress("drawing the figures")
        plan_drawn, submit_answers = result.also
        answers_drawn = submit_answers(answer_figure_data(result))  # drawn there while this process writes the page

        def drawn() -> tuple[list[Any], str | None]:
            return joined_figures(plan_drawn(), answers_drawn())
    progress("pricing the levers and writing the document")  # the levers are variants, computed on first use
    doc = build_document(result, brief=brief)
    links = _write_figures(result, target) if figures else []
    data = _report(fmt, doc, result, links, drawn, lay_out)
    emit(target, data, f" ({result.failed_checks} check(s) failed)" if result.failed_checks else "")
    sys.exit(result.exit_code)


def _write_figures(result: Compilation, target: Path) -> list[Any]:
    """Draw the figures into `<target stem>.figures/` beside the report; their link records."""
    try:
        from .report.figures import build_figures

        drawn = build_figures(result)
    except ImportError as exc:
        click.echo(f"plan: --figures needs matplotlib ({exc}); install it with `pip install 'plan-compiler[pdf]'`",
                   err=True)
        sys.exit(2)
    from .report.markdown import figure_files

    directory = target.stem + ".figures"
    folder = target.parent / directory
    try:
        folder.mkdir(exist_ok=True)
        for fig in drawn:
            (folder / f"{fig.name}.svg").write_text(fig.svg, encoding="utf-8")
    except OSError as exc:
        cannot_write(folder, exc)
    if drawn:
        click.echo(f"wrote {len(drawn)} figure(s) to {folder}", err=True)
    return figure_files(drawn, directory)


def _report(fmt: str, doc: DocumentView, result: Compilation, figures: list[Any] | None = None,
            drawn: Callable[[], tuple[list[Any], str | None]] | None = None,
            lay_out: Callable[[str], bytes] | None = None) -> str | bytes:
    """The report in `fmt`: text for md, json and html, bytes for pdf (with the figures `drawn`
    gives, and the page laid out by `lay_out`, when they are given: the work started ahead)."""
    if fmt in ("md", "json"):
        from .report.machine import document_json
        from .report.markdown import render_json, render_markdown

        return render_markdown(doc, figures or []) if fmt == "md" else render_json(document_json(doc, result))
    from .report.html import drawable_figures, render_html

    figures_of = drawn or (lambda: drawable_figures(result))
    if fmt == "html":
        plots, missing = figures_of()
        if missing:  # the page is still whole without its plots: say so, and write it
            click.echo(f"plan: warning: the HTML report has no figures: {missing}", err=True)
        return render_html(doc, plots)
    from .report import pdf

    try:
        if not pdf.weasyprint_installed():  # before waiting for the figures, which takes a second
            pdf.require_weasyprint()
        plots, missing = figures_of()
        if missing:  # the printed document without its figures is not the one asked for
            raise pdf.PdfUnavailable(f"the PDF report needs its figures: {missing}")
        progress("laying out the PDF pages")
        return (lay_out or pdf.lay_out)(pdf.print_page(doc, plots))
    except pdf.PdfUnavailable as exc:
        click.echo(f"plan: {exc}", err=True)
        sys.exit(2)


@main.command()
@click.argument("plan_files", metavar="FILE...", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "human", "short"]), default="text",
              show_default=True,
              help="the checks as lines of text, or as one JSON document on stdout (the checks with their numbers "
                   "and units, and the diagnostics); `human` and `short` are the older spellings of --diagnostics")
@click.option("--diagnostics", "diag_fmt", type=click.Choice(["human", "short", "json"]), default=None,
              help="how to print problems on stderr  [default: human; with --format json they are in the document]")
def check(plan_files: tuple[Path, ...], fmt: str, diag_fmt: str | None) -> None:
    """Check each FILE: exit 0 if every check passes, 1 if one fails or an SLO is out of reach (E0407),
    2 if a plan is invalid (the largest of these over the files)."""
    from .pipeline import compile_plan

    if fmt in ("human", "short"):  # `--format short` meant the diagnostics before --format json existed
        diag_fmt, fmt = diag_fmt or fmt, "text"
    if fmt == "json":
        if len(plan_files) != 1:
            raise click.UsageError("--format json checks one FILE: its document describes one plan")
        result = compile_plan(plan_files[0], progress=progress)
        if diag_fmt is not None:
            show_diagnostics(result, diag_fmt)
        _check_json(result)
        sys.exit(result.exit_code)
    sys.exit(max(_check_text(compile_plan(path, progress=progress), diag_fmt or "human") for path in plan_files))


def _check_text(result: Compilation, diag_fmt: str) -> int:
    """The diagnostics of one plan, then a line per check (its location names the file); the exit code."""
    show_diagnostics(result, diag_fmt)
    if not result.ok:
        return result.exit_code  # 2, or 1 when nothing meets a search's condition (an SLO out of reach)
    from .render_diagnostics import terminal_safe
    from .report.view import build_document

    for c in build_document(result, levers=False).checks:
        verdict = "pass" if c.holds else "FAIL"
        detail = (f": {c.left} vs {c.right}" if c.left else "") + (f", margin {c.margin}" if c.margin else "")
        click.echo(terminal_safe(f"{verdict}  {c.label}{detail}  ({c.location})", None, newlines=False))
    return result.exit_code


def _check_json(result: Compilation) -> None:
    """`plan check --format json`: one document (schema `plan.check/1`) with the checks and the
    diagnostics, on stdout, for a valid plan and an invalid one alike."""
    import json

    from .render_diagnostics import to_json

    checks: list[Any] = []
    if result.ok:
        from .report.machine import checks_json
        from .report.view import build_document

        checks = checks_json(build_document(result, levers=False), result)
    document = {"schema": "plan.check/1", "plan": result.path, "version": __version__, "valid": result.ok,
                "exit_code": result.exit_code, "failed": sum(not c["holds"] for c in checks),
                "checks": checks, "diagnostics": to_json(result.diagnostics)}
    click.echo(json.dumps(document, indent=2, ensure_ascii=False, sort_keys=True))


@main.command()
@click.argument("paths", metavar="PATH...", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--check", is_flag=True, help="change nothing: list the files whose layout differs and exit 1 if any does")
def fmt(paths: tuple[Path, ...], check: bool) -> None:
    """Lay out each plan FILE (or every .plan under a folder) canonically, comments kept: exit 0, 1 with
    --check when a file would change, 2 when one does not parse (it is left as it is)."""
    from types import SimpleNamespace

    from .source import SourceFile
    from .syntax.ast import shape
    from .syntax.fmt import FormatError, format_text
    from .syntax.parser import parse

    files = [f for p in paths for f in (sorted(p.rglob("*.plan")) if p.is_dir() else [p])]
    status, changed, unread = 0, 0, 0
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            click.echo(f"plan: cannot read {path}: {getattr(exc, 'strerror', None) or exc}", err=True)
            status, unread = 2, unread + 1
            continue
        before, problems = parse(SourceFile(str(path), text))
        try:
            laid_out = format_text(text) if before is not None and not problems else None
        except FormatError:
            laid_out = None
        if laid_out is None:  # a plan with errors is not laid out: its diagnostics say why
            if problems:
                show_diagnostics(SimpleNamespace(diagnostics=problems), "human")
            else:
                click.echo(f"plan: cannot lay out {path}: its tokens cannot be read", err=True)
            status, unread = 2, unread + 1
            continue
        if laid_out == text:
            continue
        after, _ = parse(SourceFile(str(path), laid_out))
        if after is None or shape(after) != shape(before):  # a formatter bug must never reach a file
            click.echo(f"plan: internal error: the layout of {path} would change what it means; left as it is",
                       err=True)
            sys.exit(3)
        changed += 1
        if check:
            click.echo(f"would reformat {path}")
        else:
            try:
                path.write_text(laid_out, encoding="utf-8")
            except OSError as exc:
                cannot_write(path, exc)
    if check and changed:
        status = max(status, 1)
    counts = [f"{len(files) - changed - unread} already laid out", f"{changed} {'to reformat' if check else 'reformatted'}"]
    click.echo("plan fmt: " + ", ".join(counts) + (f", {unread} with errors (left as they are)" if unread else ""),
               err=True)
    sys.exit(status)


@main.command()
@click.argument("base_file", metavar="BASE", type=click.Path(path_type=Path))
@click.argument("head_file", metavar="HEAD", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path, allow_dash=True), default="-",
              help="where to write the comparison (default: stdout)")
@click.option("--format", "fmt", type=click.Choice(["md", "json"]), default=None,
              help="Markdown for a pull-request comment, or JSON  [default: from -o's suffix, else md]")
@click.option("--diagnostics", "diag_fmt", type=click.Choice(["human", "short", "json"]), default=None,
              help="how to print problems  [default: json with --format json, else human]")
def diff(base_file: Path, head_file: Path, output: Path, fmt: str | None, diag_fmt: str | None) -> None:
    """Compare two versions of a plan: the summary, checks and answers side by side, and every
    input and derived quantity that changed. Exit 0, or 1 if a check of HEAD fails, or 2 (and
    nothing written) if either plan is invalid."""
    from .pipeline import compile_plan

    fmt = output_format(output, fmt, ("md", "json"))

    diag_fmt = diag_fmt or ("json" if fmt == "json" else "human")
    base, head = compile_plan(base_file), compile_plan(head_file)
    show_diagnostics(base, diag_fmt)
    show_diagnostics(head, diag_fmt)
    if not (base.ok and head.ok):
        sys.exit(2)
    from .report.diff import diff_documents, diff_json
    from .report.markdown import render_diff_markdown, render_json
    from .report.view import build_document

    compared = diff_documents(build_document(base, levers=False), build_document(head, levers=False))
    data = render_diff_markdown(compared) if fmt == "md" else render_json(diff_json(compared))
    emit(output, data)
    sys.exit(head.exit_code)


for _command in COMMANDS:
    main.add_command(_command)


def run() -> None:
    """The `plan` command as a process (the console script and `python -m planc.cli`), with the
    cyclic garbage collector tuned for a short-lived process that allocates a great many objects
    and frees few of them, as mypy's command does:
    - the youngest generation is collected every 200,000 allocations instead of 700, so that
      importing sympy and building the plan's graph do not trigger hundreds of collections that
      find nothing to free;
    - at exit, everything still alive is frozen out of the collector, so that the interpreter's
      shutdown does not walk a heap it is about to free anyway.
    Together they take about a quarter off `plan compile` of the flagship (bench/compile_speed.py).
    `main` itself, which tests call in-process, leaves the collector alone."""
    tune_collector()
    try:
        main()
    finally:
        gc.freeze()


def tune_collector() -> None:
    """The collector's thresholds for a `plan` process (see `run`); bench/ uses them too."""
    gc.set_threshold(200_000, 30, 30)


if __name__ == "__main__":  # pragma: no cover
    run()
