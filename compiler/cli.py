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


def progress(step: str) -> None:
    """`plan: compiling x.plan…` on stderr before a step that can take over a second, when
    stderr is a terminal; quiet otherwise (CI logs, pipes, tests)."""
    if sys.stderr.isatty():
        click.echo(f"plan: {step}…", err=True)


def _diagnostics(compilation: object, fmt: str) -> None:
    from .render_diagnostics import render_human, render_json, render_short

    diags = compilation.diagnostics  # type: ignore[attr-defined]
    if not diags:
        return
    if fmt == "json":
        click.echo(render_json(diags), err=True, nl=False)
    elif fmt == "short":
        click.echo(render_short(diags), err=True, nl=False)
    else:
        click.echo(render_human(diags, color=sys.stderr.isatty()), err=True, nl=False)


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

    fmt = _output_format(output, fmt, ("md", "json", "html", "pdf"))
    stem = "stdin" if str(plan_file) == "-" else plan_file.stem
    target = output if output is not None else Path(stem + "." + fmt)
    if figures and (fmt != "md" or str(target) == "-"):
        raise click.UsageError("--figures writes SVG files beside a Markdown report: use it with --format md and "
                               "-o FILE (HTML and PDF carry their figures inline)")
    diag_fmt = diag_fmt or ("json" if fmt == "json" else "human")
    progress(f"compiling {plan_file}")
    result = compile_plan(plan_file)
    _diagnostics(result, diag_fmt)
    if not result.ok:  # no report: 2 for an invalid plan, 1 for a well-formed one the physics cannot meet
        sys.exit(result.exit_code)
    from .report.ahead import ahead
    from .report.view import build_document

    drawn = None
    if fmt in ("html", "pdf"):  # drawn in a second process while this one prices the levers and writes the page
        from .report.html import drawable_figures

        progress("drawing the figures")
        drawn = ahead(lambda: drawable_figures(result))
    progress("pricing the levers and writing the document")  # the levers are variants, computed on first use
    doc = build_document(result, brief=brief)
    links = _write_figures(result, target) if figures else []
    data = _report(fmt, doc, result, links, drawn)
    _emit(target, data, f" ({result.failed_checks} check(s) failed)" if result.failed_checks else "")
    sys.exit(result.exit_code)


SUFFIX_FORMATS = {".md": "md", ".markdown": "md", ".json": "json", ".html": "html", ".htm": "html", ".pdf": "pdf"}
A_FORMAT = {"md": "a Markdown", "json": "a JSON", "html": "an HTML", "pdf": "a PDF"}


def _output_format(output: Path | None, fmt: str | None, allowed: tuple[str, ...]) -> str:
    """The format of a report: `--format` if given, else the one `-o`'s suffix names, else the
    first of `allowed`. A `--format` that contradicts the suffix, or a suffix of a format this
    command does not write, is a usage error (exit 2) that names both."""
    suffix = output.suffix.lower() if output is not None and str(output) != "-" else ""
    named = SUFFIX_FORMATS.get(suffix)
    if named is not None and fmt is not None and named != fmt:
        raise click.UsageError(f"--format {fmt} contradicts -o {output}, whose suffix `{suffix}` names "
                               f"{A_FORMAT[named]} file: drop --format, or give -o a `.{fmt}` name")
    if named is not None and named not in allowed:
        writes = " or ".join(A_FORMAT[a].split(" ", 1)[1] for a in allowed)
        raise click.UsageError(f"-o {output} names {A_FORMAT[named]} file, which this command does not write "
                               f"(it writes {writes})")
    return fmt or named or allowed[0]


def _emit(target: Path, data: str | bytes, detail: str = "") -> None:
    """Write an output to `target` (`-` is stdout) and say so on stderr; a target that cannot be
    written is a one-line message and exit 2, not a traceback."""
    if str(target) == "-":
        if isinstance(data, bytes):
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        else:
            click.echo(data, nl=False)
        return
    try:
        if isinstance(data, bytes):
            target.write_bytes(data)
        else:
            target.write_text(data, encoding="utf-8")
    except OSError as exc:
        _cannot_write(target, exc)
    click.echo(f"wrote {target}{detail}", err=True)


def _cannot_write(target: Path, exc: OSError) -> None:
    click.echo(f"plan: cannot write {target}: {exc.strerror or exc}", err=True)
    sys.exit(2)


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
        _cannot_write(folder, exc)
    if drawn:
        click.echo(f"wrote {len(drawn)} figure(s) to {folder}", err=True)
    return figure_files(drawn, directory)


def _report(fmt: str, doc: DocumentView, result: Compilation, figures: list[Any] | None = None,
            drawn: Callable[[], tuple[list[Any], str | None]] | None = None) -> str | bytes:
    """The report in `fmt`: text for md, json and html, bytes for pdf (with the figures `drawn`
    gives, when it is given: the work started ahead)."""
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
    from .report.pdf import PdfUnavailable, render_pdf, require_weasyprint

    try:
        require_weasyprint()  # before waiting for the figures, which takes a second
        plots, missing = figures_of()
        if missing:  # the printed document without its figures is not the one asked for
            raise PdfUnavailable(f"the PDF report needs its figures: {missing}")
        progress("laying out the PDF pages")
        return render_pdf(doc, plots)
    except PdfUnavailable as exc:
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
        result = compile_plan(plan_files[0])
        if diag_fmt is not None:
            _diagnostics(result, diag_fmt)
        _check_json(result)
        sys.exit(result.exit_code)
    sys.exit(max(_check_text(compile_plan(path), diag_fmt or "human") for path in plan_files))


def _check_text(result: Compilation, diag_fmt: str) -> int:
    """The diagnostics of one plan, then a line per check (its location names the file); the exit code."""
    _diagnostics(result, diag_fmt)
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
                _diagnostics(SimpleNamespace(diagnostics=problems), "human")
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
                _cannot_write(path, exc)
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

    fmt = _output_format(output, fmt, ("md", "json"))

    diag_fmt = diag_fmt or ("json" if fmt == "json" else "human")
    base, head = compile_plan(base_file), compile_plan(head_file)
    _diagnostics(base, diag_fmt)
    _diagnostics(head, diag_fmt)
    if not (base.ok and head.ok):
        sys.exit(2)
    from .report.diff import diff_documents, diff_json
    from .report.markdown import render_diff_markdown, render_json
    from .report.view import build_document

    compared = diff_documents(build_document(base, levers=False), build_document(head, levers=False))
    data = render_diff_markdown(compared) if fmt == "md" else render_json(diff_json(compared))
    _emit(output, data)
    sys.exit(head.exit_code)


@main.command()
@click.argument("rows_dir", metavar="ROWS", type=click.Path(path_type=Path, file_okay=False), default="validation/rows")
@click.option("-o", "--output", type=click.Path(path_type=Path, allow_dash=True), default="-",
              help="where to write the fidelity report (default: stdout)")
@click.option("--baseline", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="recorded group figures (JSON): exit 1 if a group's median |error| worsened")
@click.option("--record", is_flag=True, help="write the figures of this run to --baseline instead of comparing")
@click.option("--before", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="group figures of an earlier physics (JSON) to show beside this run's")
@click.option("--only", metavar="GLOB", default="*", help="score only the rows whose id matches GLOB")
def validate(rows_dir: Path, output: Path, baseline: Path | None, record: bool, before: Path | None, only: str) -> None:
    """Score the stdlib's physics against the published measurements in ROWS (validation/rows):
    per group the median and p90 |error|, the bias and roofline-floor violations, as Markdown
    (docs/fidelity.md). Exit 0, or 1 if a group worsened beyond --baseline, or 2 on bad input."""
    import fnmatch
    import json

    from . import validate as v

    if not rows_dir.is_dir():
        click.echo(f"plan: {rows_dir}: no such directory of validation rows", err=True)
        sys.exit(2)
    rows, problems = v.load_rows(rows_dir)
    for problem in problems:
        click.echo(f"plan: {problem}", err=True)
    rows = [r for r in rows if fnmatch.fnmatch(r.id, only)]
    progress(f"predicting {len(rows):,} validation rows")
    predictions = v.predict(rows)
    groups = v.score(predictions)
    def figures(path: Path | None) -> dict[str, dict[str, float]] | None:
        if path is None or not path.exists():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            click.echo(f"plan: cannot read {path}: {exc}", err=True)
            sys.exit(2)
        return data if isinstance(data, dict) else None

    recorded = None if record else figures(baseline)
    _emit(output, v.render(groups, predictions, figures(before)))
    if record and baseline is not None:
        _emit(baseline, v.baseline_of(groups))
    worse = v.compare(groups, recorded) if recorded else []
    for line in worse:
        click.echo(f"plan: worse than recorded: {line}", err=True)
    sys.exit(2 if problems else 1 if worse else 0)


@main.command()
@click.argument("plan_file", metavar="FILE", type=click.Path(path_type=Path))
@click.option("--engine", type=click.Choice(["vllm", "sglang", "trtllm"]), default=None,
              help="print this engine's flags  [default: the engine each deployment names (`engine`, default vllm)]")
@click.option("--deployment", metavar="NAME", default=None, help="only the deployment NAME  [default: every one]")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="the commands with each flag's quantity, or the same as JSON")
@click.option("--diagnostics", "diag_fmt", type=click.Choice(["human", "short", "json"]), default="human",
              show_default=True, help="how to print problems")
def flags(plan_file: Path, engine: str | None, deployment: str | None, fmt: str, diag_fmt: str) -> None:
    """Print the engine launch command of each deployment of FILE, every flag with the quantity of
    the compiled plan that gives it (`--max-num-seqs 64  ← chat.batch`). The command is printed,
    never run. Exit 0, 1 if a check of the plan fails (the flags are printed all the same), or 2
    if the plan is invalid or has no deployment."""
    from . import flags as fl
    from .pipeline import compile_plan
    from .render_diagnostics import terminal_safe

    result = compile_plan(plan_file)
    _diagnostics(result, diag_fmt)
    if not result.ok:
        sys.exit(result.exit_code)
    try:
        items = fl.launches(result, engine=engine, deployment=deployment)
    except fl.FlagsProblem as problem:
        click.echo(terminal_safe(f"error: {problem.message}", None, newlines=False), err=True)
        click.echo(terminal_safe(f"  = help: {problem.help}", None, newlines=False), err=True)
        sys.exit(2)
    if fmt == "json":
        click.echo(fl.render_json(items, result.path), nl=False)
    else:
        click.echo(terminal_safe(fl.render_text(items), None), nl=False)
    if result.failed_checks:
        click.echo(f"plan: {result.failed_checks} check(s) of the plan failed: these flags launch a plan that "
                   "does not meet them", err=True)
    sys.exit(result.exit_code)


@main.command()
@click.argument("plan_file", metavar="FILE", type=click.Path(path_type=Path))
@click.option("--deployment", metavar="NAME", default=None, help="the deployment to simulate  [default: the first]")
@click.option("--duration", type=click.FloatRange(min=1, max=86_400), default=300, show_default=True,
              help="seconds of traffic to simulate (the first 10 % warm the replicas up)")
@click.option("--replicas", type=click.IntRange(min=1, max=10_000), default=1, show_default=True,
              help="replicas simulated, each at its share of the peak")
@click.option("--router", type=click.Choice(["random", "round_robin", "least_loaded"]), default="random", show_default=True,
              help="how arrivals are spread over the replicas (the analytic model assumes random)")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--diagnostics", "diag_fmt", type=click.Choice(["human", "short", "json"]), default="human",
              show_default=True, help="how to print problems")
def simulate(plan_file: Path, deployment: str | None, duration: float, replicas: int, router: str, seed: int,
             diag_fmt: str) -> None:
    """Serve the peak of FILE's deployment with a discrete-event simulation of its engine
    (arrivals, router, iteration scheduler, token budget, KV blocks, preemption), every iteration
    timed by the plan's own physics, and print the simulated latencies beside the analytic model's.
    Exit 0, or 2 if the plan is invalid or has no deployment."""
    from .pipeline import compile_plan
    from .replay import ANALYTIC, replay

    progress(f"compiling {plan_file}")
    result = compile_plan(plan_file)
    _diagnostics(result, diag_fmt)
    if not result.ok or result.lowered is None:
        sys.exit(2)
    el = result.lowered.elaborated
    names = [n for n in el.main_instances if "deployment" in el.kinds.get(n, ())]
    if (deployment is not None and deployment not in names) or not names:
        click.echo(f"error: no deployment `{deployment}` in {result.path}" if names else f"error: {result.path} has no deployment",
                   err=True)
        click.echo("  = help: " + (f"choose one of {', '.join(names)}" if names else "declare a `deployment`"), err=True)
        sys.exit(2)
    name = deployment or names[0]
    progress(f"simulating {duration:g} s of `{name}` on {replicas} replica(s)")
    run = replay(result.lowered, name, duration=duration, replicas=replicas, seed=seed, router=router)
    sim = run.simulated
    click.echo(f"{name}: {replicas} replica(s) at {run.rate:,.4g} requests/s for {duration:g} s "
               f"({int(sim['requests']):,} requests measured, seed {seed}, {router} router)")
    labels = {"mean_running": ("running sequences (mean)", 1, ""), "tpot_mean": ("TPOT (mean)", 1e3, " ms"),
              "ttft_p50": ("TTFT p50", 1e3, " ms"), "ttft_p99": ("TTFT p99", 1e3, " ms"), "itl_p99": ("ITL p99", 1e3, " ms")}
    click.echo(f"{'':28}{'simulated':>14}{'analytic':>14}{'difference':>12}")
    for key, field in ANALYTIC.items():
        label, scale, unit = labels[key]
        s_val, a_val = sim[key], run.analytic[key]
        diff = (a_val - s_val) / s_val if s_val else float("nan")
        click.echo(f"{label:28}{s_val * scale:>11,.4g}{unit:3}{a_val * scale:>11,.4g}{unit:3}{diff:>+11.1%}  ({name}.{field})")
    click.echo(f"{'TPOT p99':28}{sim['tpot_p99'] * 1e3:>11,.4g} ms   (no analytic figure)")
    click.echo(f"{'preemptions per request':28}{sim['preemptions_per_request']:>11,.4g}")
    click.echo(f"{'unfinished at the end':28}{int(sim['unfinished']):>11,}")
    sys.exit(0)


@main.command()
@click.option("--model", default="llama-3.1-8b", show_default=True, metavar="STEM",
              help="the catalog model: a file of the stdlib's models/ without `.plan` (`plan init --list`)")
@click.option("--hardware", default="h100-sxm", show_default=True, metavar="STEM",
              help="the accelerator: a file of the stdlib's hardware/ without `.plan`")
@click.option("--dau", default="1M", show_default=True, metavar="N",
              help="daily active users: a number with an optional k, M or G (`100M`, `2.5k`)")
@click.option("-o", "--output", type=click.Path(path_type=Path, allow_dash=True), default=None,
              help="where to write the plan (`-` for stdout); an existing file is kept unless --force")
@click.option("--force", is_flag=True, help="overwrite FILE if it exists")
@click.option("--list", "list_choices", is_flag=True, help="list the models and accelerators to choose from")
def init(model: str, hardware: str, dau: str, output: Path | None, force: bool, list_choices: bool) -> None:
    """Write a commented starter plan (-o FILE) for a catalog model on a catalog accelerator: traffic,
    a deployment with its main knobs at their defaults, two checks and a summary. Its tensor
    parallelism and batch are chosen so that it compiles with exit 0. Exit 0 when written, 2 on
    an unknown model or accelerator, an existing FILE, or a pair no tensor parallelism up to 64 serves."""
    from . import starter as st
    from .render_diagnostics import terminal_safe

    def fail(message: str, help: str) -> None:
        click.echo(terminal_safe(f"error: {message}", None, newlines=False), err=True)
        click.echo(terminal_safe(f"  = help: {help}", None, newlines=False), err=True)
        sys.exit(2)

    if list_choices:
        click.echo("models:   " + " ".join(st.choices("models")))
        click.echo("hardware: " + " ".join(st.choices("hardware")))
        return
    if output is None:
        raise click.UsageError("say where to write the plan: -o FILE (or -o - for stdout)")
    users = st.parse_users(dau)
    if users is None:
        raise click.BadParameter(f"`{terminal_safe(dau, 40, newlines=False)}` is not a number of users such as "
                                 "`1M`, `250k` or `100000`", param_hint="--dau")
    if str(output) != "-" and output.exists() and not force:
        fail(f"{output} exists", "choose another name, or pass --force to overwrite it")
    try:
        text = st.starter(model, hardware, users)
    except st.StarterProblem as problem:
        fail(problem.message, problem.help)
    _emit(output, text, f" ({model} on {hardware}; next: plan compile {output})" if str(output) != "-" else "")


@main.command()
@click.argument("name", type=click.Choice(["report", "check", "diff", "flags"]))
def schema(name: str) -> None:
    """Print the JSON Schema (draft 2020-12) of one machine-readable output: `report` for
    `plan compile --format json`, `check` for `plan check --format json`, `diff` for
    `plan diff --format json`, `flags` for `plan flags --format json` (docs/report-json.md)."""
    from .report.machine import schema_path

    click.echo(schema_path(f"plan.{name}").read_text(encoding="utf-8"), nl=False)


@main.command()
@click.argument("code", metavar="CODE", required=False)
def explain(code: str | None) -> None:
    """Explain a diagnostic CODE (`plan explain E0302`): when it fires, an example, the
    compiler's output and the fix, from the page in docs/errors/. Without CODE, list every code.
    Exit 0, or 2 for a code that is not in the catalogue."""
    from . import explain as ex
    from .render_diagnostics import terminal_safe

    if code is None:
        click.echo(ex.listing(), nl=False)
        return
    wanted = ex.normalise(code)
    text = ex.page(wanted)
    if text is not None:
        click.echo(text, nl=False)
        return
    shown = terminal_safe(code, 40, newlines=False)
    close = ex.closest(wanted)
    from .diagnostics import CODES

    if wanted in CODES:  # in the catalogue, but the page did not ship: a broken installation
        click.echo(f"error: no page for `{wanted}` in this installation of plan; "
                   f"see docs/errors/{wanted}.md in the source", err=True)
    else:
        click.echo(f"error: `{shown}` is not a diagnostic code of plan", err=True)
        hint = f"did you mean `{close}` ({CODES[close].title})? " if close else ""
        click.echo(f"  = help: {hint}`plan explain` with no code lists every code", err=True)
    sys.exit(2)


@main.command()
@click.argument("section", metavar="[SECTION]", required=False)
def physics(section: str | None) -> None:
    """Print docs/physics.md, the reference the stdlib's sources cite ("docs/physics.md §5.4"), or
    one SECTION of it (`plan physics 5.4`, `plan physics 7`). Exit 0, or 2 for a section that
    does not exist."""
    from . import explain as ex

    text = ex.physics(section)
    if text is None:
        click.echo(f"error: docs/physics.md has no section {section!r} in this installation of plan", err=True)
        click.echo("  = help: `plan physics` prints the whole document with its numbered sections", err=True)
        sys.exit(2)
    click.echo(text, nl=not text.endswith("\n"))


@main.command()
def lsp() -> None:
    """Run the language server over stdin/stdout, for an editor: diagnostics as you type, hover
    with a quantity's value and derivation, go-to-definition into the stdlib. Needs
    `pip install 'plan-compiler[lsp]'`; docs/editors-and-ci.md shows how to connect an editor."""
    try:
        import pygls  # noqa: F401
    except ImportError as exc:
        click.echo(f"plan: the language server needs pygls ({exc}); install it with "
                   "`pip install 'plan-compiler[lsp]'`", err=True)
        sys.exit(2)
    from .lsp import serve

    serve()


@main.command("import-hf")
@click.argument("config_file", metavar="CONFIG.json", type=click.Path())
@click.option("--name", required=True, metavar="NAME",
              help="name of the model instance, a plan name such as `llama_3_1_8b`")
@click.option("-o", "--output", type=click.Path(path_type=Path, allow_dash=True),
              help="where to write the plan (default: NAME.plan in the current directory; `-` for stdout)")
@click.option("--diagnostics", "diag_fmt", type=click.Choice(["human", "short", "json"]),
              default="human", show_default=True, help="how to print problems")
def import_hf(config_file: str, name: str, output: Path | None, diag_fmt: str) -> None:
    """Import a local Hugging Face CONFIG.json as a model instance (`decoder` or `mla_decoder`).

    Reads only the named file, never the network. Every field of the instance cites the config
    field it came from. Exit 0 when the plan was written, 2 (and nothing written) on problems.
    """
    from .hf_import import import_config, is_url, name_problem

    if is_url(config_file):
        raise click.BadParameter(
            f"`{config_file}` is a URL; `plan import-hf` reads a local file and never the network "
            "(download config.json first, e.g. `huggingface-cli download REPO config.json`)",
            param_hint="CONFIG.json")
    problem = name_problem(name)
    if problem is not None:
        raise click.BadParameter(problem, param_hint="--name")
    target = output if output is not None else Path(f"{name}.plan")
    to_stdout = str(target) == "-"
    result = import_config(Path(config_file), name, shown=config_file,
                           plan_shown=f"{name}.plan" if to_stdout else str(target))
    if any(d.code == "E0202" for d in result.diagnostics):  # the generated plan redeclares a stdlib name
        raise click.BadParameter(f"`{name}` is already declared by the stdlib prelude; choose another name",
                                 param_hint="--name")
    _diagnostics(result, diag_fmt)
    if not result.ok or result.text is None:
        sys.exit(2)
    _emit(target, result.text, f" ({result.kind} {name}, model_type {result.model_type})")


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
