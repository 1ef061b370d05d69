"""The `plan` commands beside compiling, checking and comparing plans: validate, flags,
simulate, init, schema, explain, physics, lsp and import-hf. `planc.cli` adds them to the `plan`
group (`COMMANDS`); each follows the command's contract in `planc.cli` (exit codes, diagnostics
on stderr, heavy libraries imported only by the command that needs them).
"""

from __future__ import annotations

import functools
import math
import sys
from pathlib import Path

import click

from .cli_io import emit, progress, show_diagnostics


@click.command()
@click.argument("rows_dir", metavar="ROWS", type=click.Path(path_type=Path, file_okay=False), default="validation/rows")
@click.option("-o", "--output", type=click.Path(path_type=Path, allow_dash=True), default="-",
              help="where to write the fidelity report (default: stdout)")
@click.option("--baseline", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="recorded group figures (JSON): exit 1 if a group's median |error| worsened")
@click.option("--record", is_flag=True, help="write the figures of this run to --baseline instead of comparing")
@click.option("--before", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="group figures of an earlier physics (JSON) to show beside this run's")
@click.option("--only", metavar="GLOB", default="*", help="score only the rows whose id matches GLOB")
@click.option("--sample", "every", metavar="N", type=click.IntRange(min=1), default=1, show_default=True,
              help="score a stratified sample of about one row in N (every metric, model, precision and "
                   "accelerator keeps at least one row; the tests use 6)")
def validate(rows_dir: Path, output: Path, baseline: Path | None, record: bool, before: Path | None, only: str,
             every: int) -> None:
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
    rows = v.sample([r for r in rows if fnmatch.fnmatch(r.id, only)], every)
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
    emit(output, v.render(groups, predictions, figures(before)))
    if record and baseline is not None:
        emit(baseline, v.baseline_of(groups))
    worse = v.compare(groups, recorded) if recorded else []
    for line in worse:
        click.echo(f"plan: worse than recorded: {line}", err=True)
    sys.exit(2 if problems else 1 if worse else 0)


@click.command()
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
    show_diagnostics(result, diag_fmt)
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


@click.command()
@click.argument("plan_file", metavar="FILE", type=click.Path(path_type=Path))
@click.option("--deployment", metavar="NAME", default=None, help="the deployment to simulate  [default: the first]")
@click.option("--duration", type=click.FloatRange(min=1, max=86_400), default=300, show_default=True,
              help="seconds of traffic to simulate (the first 10 % warm the replicas up)")
@click.option("--replicas", type=click.IntRange(min=1, max=10_000), default=1, show_default=True,
              help="replicas simulated, each at its share of the peak")
@click.option("--router", type=click.Choice(["random", "round_robin", "least_loaded"]), default="random", show_default=True,
              help="how arrivals are spread over the replicas (the analytic model assumes random)")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="the run's random draws: arrivals, lengths, classes, routes")
@click.option("--seeds", type=click.IntRange(min=1, max=64), default=1, show_default=True,
              help="independent runs, with seeds SEED, SEED+1, ...: the table gives their mean and their range "
                   "(the runs in parallel processes where there are cores)")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="a table, or the `plan.simulate/1` JSON (`plan schema simulate`): each figure with its interval "
                   "and each latency's distribution")
@click.option("--diagnostics", "diag_fmt", type=click.Choice(["human", "short", "json"]), default="human",
              show_default=True, help="how to print problems")
def simulate(plan_file: Path, deployment: str | None, duration: float, replicas: int, router: str, seed: int,
             seeds: int, fmt: str, diag_fmt: str) -> None:
    """Serve the peak of FILE's deployment with a discrete-event simulation of its engine
    (arrivals, router, iteration scheduler, token budget, KV blocks, preemption), every iteration
    timed by the plan's own physics, and print the simulated latencies beside the analytic model's,
    each with its 90 % interval (the run's sampling error), and whether the replicas kept up.
    Exit 0, or 2 if the plan is invalid or has no deployment."""
    from .jobs import ahead_each
    from .pipeline import compile_plan
    from .replay import NotSimulable, combined, simulated_outcome, simulation_json
    from .simulate import INTERVAL_BLOCKS, INTERVAL_LEVEL, INTERVAL_TAIL

    progress(f"compiling {plan_file}")
    result = compile_plan(plan_file)
    show_diagnostics(result, diag_fmt)
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
    progress(f"simulating {duration:g} s of `{name}` on {replicas} replica(s)" + (f", {seeds} runs" if seeds > 1 else ""))
    works = [functools.partial(simulated_outcome, result.lowered, name, duration, replicas, s, router)
             for s in range(seed, seed + seeds)]
    started = ahead_each(works) if len(works) > 1 else works  # the runs are independent: one per core
    try:
        outcomes = [started[i]() for i in reversed(range(len(works)))][::-1]  # from the last: this process takes those not begun
    except NotSimulable as exc:
        click.echo(f"error: `{name}` cannot be simulated: {exc.message}", err=True)
        click.echo(f"  = help: {exc.help}", err=True)
        sys.exit(2)
    run = combined(outcomes)
    if fmt == "json":
        click.echo(simulation_json(run, result.path, duration, router), nl=False)
        sys.exit(0)
    several = seeds > 1
    runs = f"{seeds} runs, seeds {seed}-{seed + seeds - 1}; " if several else ""
    click.echo(f"{name}: {replicas} replica(s) at {run.rate:,.4g} requests/s for {duration:g} s "
               f"({runs}{run.requests:,} requests measured{' in all' if several else ''}"
               f"{'' if several else f', seed {seed}'}, {router} router)")
    level = f"range of {seeds} runs" if several else f"{INTERVAL_LEVEL * 100:.0f} % interval"
    click.echo(f"{'':28}{'mean' if several else 'simulated':>14}{level:>24}{'analytic':>14}{'difference':>12}")
    for row in run.rows:
        scale, unit = (1e3, " ms") if row.unit == "s" else (1.0, "")
        low, high = row.interval
        spread = f"{low * scale:,.4g} – {high * scale:,.4g}{unit}" if math.isfinite(low) else "too few to tell"
        line = f"{row.label:28}{row.simulated * scale:>11,.4g}{unit:3}{spread:>24}"
        if row.analytic is None:
            hint = f": declare a `request_class` of `{name}` for `{row.klass}`" if row.klass else ""
            click.echo(line + f"   (no analytic figure{hint})")
            continue
        where = {True: "inside ", False: "outside", None: "       "}[row.inside]
        diff = row.difference if row.difference is not None else float("nan")
        click.echo(line + f"{row.analytic * scale:>11,.4g}{unit:3}{diff:>+11.1%} {where}  ({row.field})")
    click.echo(f"{'preemptions per request':28}{run.preemptions_per_request:>11,.4g}")
    click.echo(f"{'unfinished at the end':28}{run.unfinished:>11,}")
    if not run.keeps_up:
        click.echo(f"warning: the replicas did not keep up: {run.backlog:.0%} of the window's arrivals still waited for "
                   f"a first token at the end ({run.completed_rate:,.4g} of {run.rate:,.4g} requests/s finished);\nthe "
                   "queue grew for the whole run, so its latencies grow with its length, and the analytic model's "
                   "steady state does not exist at this load")
    if router != "random":
        click.echo(f"the analytic figures assume random routing: a {router.replace('_', '-')} router queues less")
    if several:
        click.echo(f"{level}: the least and the greatest of the {seeds} independent runs' figures, and their mean;\n"
                   "an analytic figure inside the range is as close as these runs can tell (more runs, or longer ones, "
                   "tell more)")
    else:
        click.echo(f"{level}: the run's sampling error, a block bootstrap over {INTERVAL_BLOCKS} equal spans of the "
                   "measured window;\nan analytic figure inside it is as close as this run can tell (a longer run, or "
                   f"more replicas, narrows it);\ntoo few to tell: fewer than {INTERVAL_TAIL} requests beyond the percentile")
    sys.exit(0)


@click.command()
@click.option("--model", default="llama-3.1-8b", show_default=True, metavar="STEM",
              help="the catalog model: a file of the stdlib's models/ without `.plan` (`plan init --list`), "
                   "or its Hugging Face id (`meta-llama/Llama-3.1-8B-Instruct`)")
@click.option("--hardware", default="h100-sxm", show_default=True, metavar="STEM",
              help="the accelerator: a file of the stdlib's hardware/ without `.plan`, or its name with "
                   "its board or memory (`H200 SXM`, `A100-SXM4-80GB`)")
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
    model, hardware = st.resolve(model, "models"), st.resolve(hardware, "hardware")
    emit(output, text, f" ({model} on {hardware}; next: plan compile {output})" if str(output) != "-" else "")


@click.command()
@click.argument("name", type=click.Choice(["report", "check", "diff", "flags", "simulate"]))
def schema(name: str) -> None:
    """Print the JSON Schema (draft 2020-12) of one machine-readable output: `report` for
    `plan compile --format json`, `check` for `plan check --format json`, `diff` for
    `plan diff --format json`, `flags` for `plan flags --format json`, `simulate` for
    `plan simulate --format json` (docs/report-json.md)."""
    from .report.machine import schema_path

    click.echo(schema_path(f"plan.{name}").read_text(encoding="utf-8"), nl=False)


@click.command()
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


@click.command()
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


@click.command()
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


@click.command("import-hf")
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
    show_diagnostics(result, diag_fmt)
    if not result.ok or result.text is None:
        sys.exit(2)
    emit(target, result.text, f" ({result.kind} {name}, model_type {result.model_type})")


COMMANDS = (validate, flags, simulate, init, schema, explain, physics, lsp, import_hf)
