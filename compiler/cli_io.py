"""What the `plan` commands share to talk to the user: progress lines, diagnostics on stderr, the
format a report is written in, and writing an output (or one line saying why it cannot be).

Contract: nothing here raises for a user's mistake: a contradictory `--format` is a
`click.UsageError` (exit 2), an output that cannot be written one line and exit 2.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click


def progress(step: str) -> None:
    """`plan: compiling x.plan…` on stderr before a step that can take over a second, when
    stderr is a terminal; quiet otherwise (CI logs, pipes, tests)."""
    if sys.stderr.isatty():
        click.echo(f"plan: {step}…", err=True)


def show_diagnostics(compilation: object, fmt: str) -> None:
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


SUFFIX_FORMATS = {".md": "md", ".markdown": "md", ".json": "json", ".html": "html", ".htm": "html", ".pdf": "pdf"}
A_FORMAT = {"md": "a Markdown", "json": "a JSON", "html": "an HTML", "pdf": "a PDF"}


def output_format(output: Path | None, fmt: str | None, allowed: tuple[str, ...]) -> str:
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


def emit(target: Path, data: str | bytes, detail: str = "") -> None:
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
        cannot_write(target, exc)
    click.echo(f"wrote {target}{detail}", err=True)


def cannot_write(target: Path, exc: OSError) -> None:
    click.echo(f"plan: cannot write {target}: {exc.strerror or exc}", err=True)
    sys.exit(2)
