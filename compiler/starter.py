"""`plan init`: a commented starter plan for a catalog model and accelerator, that compiles.

Contract
- `choices(folder)` lists the stems of the installed stdlib's `models/` or `hardware/` plans
  (`llama-3.1-70b`, `h100-sxm`), sorted; `resolve(name, folder)` the stem a name reads as (a
  Hugging Face id, `H200 SXM`: `catalog_names`); `unknown(name, folder)` is None for a name that
  reads as one of them, else a `StarterProblem` with the nearest stems.
- `parse_users(text)` reads `--dau`: a positive number with an optional `k`, `M` or `G`
  (`1M`, `2.5 M`, `100000`), as the plan's words (`1 M users`); anything else is None.
- `starter(model, hardware, users)` returns the plan's text: a title, the two imports, a
  `traffic` block, a `deployment` block that sets the model, accelerator, traffic and tensor
  parallelism and lists the main other knobs as comments with their defaults, descriptions and
  sources (read from the installed stdlib's `kinds/deployment.plan`, so they say what the
  compiler will use), two checks and a summary. The running batch is the engine model's result,
  not set. The tensor-parallel degree is chosen by compiling, as a capacity planner would: of 1,
  2, 4, …, 64, the one at which the plan compiles with exit 0 (the weights fit, a batch meets the
  SLOs, both checks hold) with the fewest devices, ties to the smaller degree. The fleet shrinks
  as a wider replica leaves more room for KV, then grows as the all-reduces and the thinner
  GEMMs cost more, so the degrees are tried in order until one after the best needs more devices
  or fails. The degrees tried and their fleets are written in the choice's source. The first
  degree is compiled in full, the others vary its elaborated plan in that one number
  (`pipeline.vary`: the same fleets and errors), and no probe answers the summary's questions.
  When no degree up to 64 works, `StarterProblem` says why, with the compiler's first error.
- Nothing from the command line reaches the plan's text unchecked: stems are matched against
  the folder's files and the user count against a strict pattern.
"""

from __future__ import annotations

import difflib
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import __version__, catalog_names

TENSOR_PARALLEL = (1, 2, 4, 8, 16, 32, 64)
DEPLOYMENT, TRAFFIC = "chat", "chat_traffic"
# the deployment's main knobs, listed in the starter at their defaults
KNOBS = ("weights", "kv", "engine", "pipeline_parallel", "context", "memory_utilization", "utilization_target",
         "ttft_slo", "tpot_slo", "regions", "spare_replicas", "prefix_hit_rate")
_DECL = re.compile(r"^([a-z_][a-z0-9_]*)\s+([a-z_][a-z0-9_]*)\s*(?:=\s*[a-z_][a-z0-9_]*\s*)?\{", re.MULTILINE)
_USERS = re.compile(r"(\d{1,12}(?:\.\d{1,6})?)\s*([kMG]?)")


class StarterProblem(Exception):
    def __init__(self, message: str, help: str) -> None:
        super().__init__(message)
        self.message, self.help = message, help


def _stdlib() -> Path:
    from .semantics.resolve import stdlib_root

    return stdlib_root()


def choices(folder: str) -> list[str]:
    return sorted(p.stem for p in (_stdlib() / folder).glob("*.plan"))


def resolve(name: str, folder: str) -> str:
    """The stem of `folder` that `name` reads as: a Hugging Face id for a model, a board's or a
    vendor's spelling for an accelerator (`catalog_names`); else `name`, normalised."""
    read = catalog_names.model_stem if folder == "models" else catalog_names.accelerator_stem
    return read(name, choices(folder))


def unknown(stem: str, folder: str) -> StarterProblem | None:
    known = choices(folder)
    read = resolve(stem, folder)  # lower-cased, its spaces hyphens: `A100` is near `a100-40gb`
    if read in known:
        return None
    close = list(dict.fromkeys([c for c in known if read and c.startswith(read)]
                               + difflib.get_close_matches(read, known, n=3, cutoff=0.5)))[:3]
    hint = f"did you mean {' or '.join(f'`{c}`' for c in close)}? " if close else ""
    return StarterProblem(f"no {folder.removesuffix('s')} `{stem}` in the stdlib's {folder}/",
                          f"{hint}choose one of: {', '.join(known)}")


def parse_users(text: str) -> str | None:
    match = _USERS.fullmatch(text.strip())
    if match is None or float(match.group(1)) <= 0:
        return None
    number, prefix = match.group(1), match.group(2)
    return f"{number} {prefix} users" if prefix else f"{number} users"


@dataclass(frozen=True)
class _Catalog:
    stem: str
    folder: str
    instance: str  # the instance the file declares
    kind: str
    title: str  # the file's first comment line, up to its first comma or full stop


def _catalog(stem: str, folder: str) -> _Catalog:
    text = (_stdlib() / folder / f"{stem}.plan").read_text(encoding="utf-8")
    match = _DECL.search(text)
    if match is None:
        raise StarterProblem(f"`{folder}/{stem}.plan` declares no instance", "choose another")
    first = text.split("\n", 1)[0].lstrip("# ").strip()
    title = re.split(r",|\. ", first, maxsplit=1)[0].strip() or stem
    return _Catalog(stem, folder, match.group(2), match.group(1), title)


# ---- the deployment kind's knobs ----------------------------------------------------------


@dataclass(frozen=True)
class Knob:
    name: str
    default: str  # as written in the kind
    description: str
    source: str | None


def knobs() -> list[Knob]:
    """The deployment kind's main inputs with their defaults, from the installed stdlib."""
    from .semantics.resolve import stdlib_root
    from .source import SourceFile
    from .syntax import ast
    from .syntax.parser import parse

    path = stdlib_root() / "kinds" / "deployment.plan"
    module, _ = parse(SourceFile("<stdlib>/kinds/deployment.plan", path.read_text(encoding="utf-8"), is_stdlib=True))
    found: dict[str, Knob] = {}

    def walk(items: Any) -> None:
        for item in items:
            if isinstance(item, ast.InputDecl) and item.name in KNOBS and item.default is not None:
                default = " ".join(item.default.span.text.split())
                found[item.name] = Knob(item.name, default, item.notes.description or "", item.notes.source)
            elif hasattr(item, "items"):
                walk(item.items)

    for stmt in module.statements if module is not None else ():
        if isinstance(stmt, ast.KindDecl) and stmt.name == "deployment":
            walk(stmt.items)
    return [found[name] for name in KNOBS if name in found]


# ---- the text -----------------------------------------------------------------------------


def _text(model: _Catalog, hardware: _Catalog, users: str, tp: int, how: str) -> str:
    d, t = DEPLOYMENT, TRAFFIC
    lines = [
        f"# A starter plan written by `plan init` (plan {__version__}): {model.title} on {hardware.title}.",
        "# Compile it into a design document with `plan compile FILE -o design.md`, gate on it with",
        "# `plan check FILE`, and print the engine command it implies with `plan flags FILE`.",
        "# The language: docs/language.md; a diagnostic's code: `plan explain CODE`.",
        f'title "{model.title} on {hardware.title} for {users.replace(" users", "")} daily active users"',
        "",
        f'import "models/{model.stem}"',
        f'import "hardware/{hardware.stem}"',
        "",
        "# Who uses the service and how: the request rate at the peak and the lengths drive everything else.",
        f"traffic {t} {{",
        f'  daily_active_users = {users} source "plan init: replace with the product\'s own figure"',
        '  requests_per_user = 10 requests/user/day source "plan init: an assumption to replace"',
        '  peak_factor = 3 source "plan init: a single-region product peaks at 2-3 times its average (docs/physics.md §12)"',
        '  prompt_tokens = 1000 tokens source "plan init: a chat prompt with its history"',
        '  output_tokens = 250 tokens source "plan init: a chat reply"',
        "  # prompt_tokens_p99 = prompt_tokens   # the p99 lengths size the KV cache (context); default: the means",
        "  # output_tokens_p99 = output_tokens",
        "}",
        "",
        "# One model on one accelerator type, replicated for the traffic; `plan flags` turns it into an engine command.",
        f"deployment {d} {{",
        f"  model = {model.instance}",
        f"  hardware = {hardware.instance}",
        f"  traffic = {t}",
        f'  tensor_parallel = {tp} source "plan init: {how}"',
        "  # batch: the running batch is a result, the most sequences at which the KV cache and the SLOs hold",
        "  # The main knobs at their defaults: uncomment a line to change it.",
    ]
    for knob in knobs():
        lines.append(f"  # {knob.name} = {knob.default}")
        lines.append(f"  #     {knob.description}" + (f" (source: {knob.source})" if knob.source else ""))
    lines += [
        "}",
        "",
        f'check {d}.tpot_at_peak <= {d}.tpot_slo "TPOT SLO at the peak"',
        f'check {d}.ttft_at_peak <= {d}.ttft_slo "p99 TTFT SLO at the peak"',
        "",
        f"summary {d}.devices, {d}.batch, {d}.tpot_at_peak, {d}.cost_per_month",
        "",
    ]
    return "\n".join(lines)


def starter(model_stem: str, hardware_stem: str, users: str = "1 M users") -> str:
    for stem, folder in ((model_stem, "models"), (hardware_stem, "hardware")):
        problem = unknown(stem, folder)
        if problem is not None:
            raise problem
    model_stem, hardware_stem = resolve(model_stem, "models"), resolve(hardware_stem, "hardware")
    model, hardware = _catalog(model_stem, "models"), _catalog(hardware_stem, "hardware")
    from .pipeline import compile_plan, vary

    errors: dict[int, Any] = {}  # tensor parallel → the first error at it
    with tempfile.TemporaryDirectory(prefix="plan-init-") as tmp:
        path = Path(tmp) / "starter.plan"
        first: Any = None  # the plan at the first degree, compiled in full

        def compiled(tp: int) -> Any:
            # the other degrees vary its elaborated graph's one number (its values, checks and
            # errors are the full compile's); its questions are not answered: a probe reads the fleet
            nonlocal first
            if first is not None:
                varied = vary(first, {(DEPLOYMENT, "tensor_parallel"): tp})
                if varied is not None:
                    return varied
            path.write_text(_text(model, hardware, users, tp, ""), encoding="utf-8")
            # one name for every candidate: the parse cache keeps one entry, replaced each time
            probe = compile_plan(path, shown="<plan init>", answering=False)
            if first is None or not first.elaborated_cleanly:
                first = probe
            return probe

        best: tuple[float, int] | None = None  # (devices, tensor parallel)
        tried: list[tuple[int, float]] = []  # each degree that compiled, with its fleet
        for tp in TENSOR_PARALLEL:
            probe = compiled(tp)
            if probe.exit_code != 0:
                errors[tp] = next((x for x in probe.diagnostics if x.is_error), None)
                if best is not None:
                    break  # past the best: a wider replica fails (heads that do not divide, the SLOs)
                continue
            devices = float(probe.lowered.values[f"{DEPLOYMENT}.devices"])
            tried.append((tp, devices))
            if best is not None and devices >= best[0]:
                break  # past the bottom of the curve
            best = (devices, tp)
        if best is not None:
            fleets = ", ".join(f"{tp}: {devices:,.0f}" for tp, devices in tried)
            how = (f"of the tensor-parallel degrees tried, the one whose fleet is smallest within the SLOs "
                   f"(devices at degree {fleets})")
            return _text(model, hardware, users, best[1], how)
    # the problem at the largest degree the model's shape allows says most about why
    shaped = [tp for tp, e in errors.items() if e is not None and "must divide" not in e.message]
    why = f" (at tensor parallel {max(shaped)}: {errors[max(shaped)].message})" if shaped else ""
    raise StarterProblem(
        f"no tensor-parallel degree up to 64 gives {model.stem} on {hardware.stem} a plan whose checks hold{why}",
        "choose a larger accelerator or a smaller model, or start from this pair and set the deployment by hand")
