"""Validation: the stdlib's physics scored against published measurements.

Contract
- `load_rows(directory) -> (rows, problems)` reads every `*.csv` under `directory` in the schema
  of `validation/README.md`. A row whose fields are malformed (a metric we do not score, a
  number that is not one, a model or accelerator the catalog lacks) is a problem with its file
  and line, never an exception; nothing from a row reaches the plan text unless it matched a
  strict pattern (a catalog stem, a dtype name, a decimal number).
- `predict(row) -> Prediction` writes a plan that states the row's setup (model, accelerator,
  engine, precisions, parallelism, batch, lengths) with every other input at its stdlib default,
  compiles it with the ordinary pipeline, and reads the quantity the metric names. The plan is
  the physics' own: nothing is fitted, and a row the physics cannot express says why. A row
  whose plan differs from an earlier row's only in lengths, parallelism and batch is that plan
  varied in those numbers (`pipeline.vary`), which predicts what compiling its own text does.
- `score(predictions) -> list[Group]`: per group (metric × architecture × precision class, and
  each metric pooled) the count, median and p90 of |error|, the signed median bias, and for step
  times how often the roofline floor exceeds the measurement (it never may).
- `sample(rows, every)`: a stratified, stable subset for CI — in each stratum (metric, model,
  weights, accelerator) the ⌈n / every⌉ rows whose ids hash lowest, scoreable ones first, so
  every stratum and every group of `score` is in it, and adding a row moves at most its own stratum's choice.
- `render(groups, predictions) -> str` is `docs/fidelity.md`; `compare(groups, baseline)` lists
  the groups whose median |error| worsened beyond the recorded figure by more than a tolerance.
"""

from __future__ import annotations

import collections
import csv
import functools
import hashlib
import json
import re
import statistics
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from .catalog_names import accelerator_stem, model_stem
from .jobs import fork_workers

if TYPE_CHECKING:
    from .pipeline import Compilation

# metric -> (quantity of the deployment, unit factor from the stdlib's base unit to the row's unit)
METRICS: dict[str, tuple[str, float]] = {
    "decode_step": ("step_time", 1e3),
    # a benchmark at fixed concurrency c (each finished request replaced at once): the mean
    # iteration a request's decodes are in, which carries the prefills of the other c − 1
    # requests' replacements (`arrival_batch`, set in `plan_text`); no draft model, so one token each
    "itl": ("mean_step_time", 1e3),
    "ttft": ("prefill_time", 1e3),  # a batch's first token comes out of its prefill (no static-batching wait)
    "prefill": ("prefill_time", 1e3),
    "static_throughput": ("batch_output_tokens_per_s", 1.0),
    "e2e_latency": ("e2e_latency", 1e3),
    # all requests at once with in-flight batching: as many run together as the engine admits
    # (its cap, and whole sequences of KV reserved: TensorRT-LLM's GUARANTEED_NO_EVICT), each
    # group prefilled, then decoded to the end
    "max_throughput": ("batch_output_tokens_per_s", 1.0),
}
UNITS = {"decode_step": "ms", "itl": "ms", "ttft": "ms", "prefill": "ms", "static_throughput": "tokens/s", "e2e_latency": "ms",
         "max_throughput": "tokens/s"}
ENGINES = {"vllm": "vllm", "sglang": "sglang", "trtllm": "trtllm", "nim": "trtllm",  # NIM runs TensorRT-LLM
           "gpt-fast": "pytorch", "torchao": "pytorch"}  # any other engine: scored as vLLM
"""Engine names -> the stdlib profile they ran. The `pytorch` profile is gpt-fast's loop (torchao's
generate.py is a copy of it): K and V repeated to every query head, attention with a mask, no split
along the context. A row that names only PyTorch does not say it ran that loop; PyTorch's own
attention, `scaled_dot_product_attention` on its FlashAttention kernel, reads each KV head once for
its group of query heads and splits a decode's context over the SMs
(github:pytorch/pytorch@03b7c19dbe228c9febd503755f723240945f8067:aten/src/ATen/native/transformers/cuda/flash_attn/flash_api.cpp,
`mha_fwd`: `seqlenq_ngroups_swapped`, `set_params_splitkv` with `num_splits` 0, the heuristic), the
physics of vLLM's decode, the default profile, which it is scored with. A row's `profile` column
names the gpt-fast loop outright."""
_TRTLLM_0_9 = re.compile(r"^v?0\.[0-9]([^0-9]|$)")  # 0.5-0.9: the releases before XQA was the GQA default
_TRTLLM_0_18 = re.compile(r"^v?0\.1[0-8]([^0-9]|$)")  # 0.10-0.18: trtllm-bench on TensorRT engines



@functools.cache
def profiles() -> frozenset[str]:
    """The engine profiles the stdlib ships (every `engine` instance under engines/)."""
    names: set[str] = set()
    for entry in resources.files("planc.stdlib").joinpath("engines").iterdir():
        if entry.name.endswith(".plan"):
            names |= set(re.findall(r"^engine\s+([a-z_][a-z0-9_]*)", entry.read_text(encoding="utf-8"), re.M))
    return frozenset(names)


def engine_of(row: Row) -> str:
    """The stdlib engine profile a row ran on: the row's own `profile`, else by engine and version
    (an engine the stdlib does not profile is scored as vLLM)."""
    if row["profile"]:
        return row["profile"]
    if row["engine"] == "trtllm" and _TRTLLM_0_9.match(row["engine_version"]):
        return "trtllm_0_9"
    if row["engine"] == "trtllm" and _TRTLLM_0_18.match(row["engine_version"]):
        return "trtllm_0_18"
    return ENGINES.get(row["engine"], "vllm")


@functools.cache
def dtypes() -> frozenset[str]:
    """The numeric formats the stdlib's `dtype` enum declares (stdlib/kinds/dtype.plan), each member a
    line `name { bytes = …; compute = … }`."""
    text = resources.files("planc.stdlib").joinpath("kinds", "dtype.plan").read_text(encoding="utf-8")
    return frozenset(re.findall(r"^\s+([a-z_][a-z0-9_]*)\s*\{\s*bytes\b", text, re.M))


_STEM = re.compile(r"^[a-z0-9][a-z0-9.\-]{0,60}$")
_NUMBER = re.compile(r"^[0-9]+(\.[0-9]+)?$")
_INSTANCE = re.compile(r"^(decoder|mla_decoder|accelerator)\s+([a-z_][a-z0-9_]*)", re.M)


_NAMES = frozenset({"metric", "model", "gpu", "engine", "weights", "compute", "kv", "profile"})
_ENGINE_ALIASES = {"tensorrt-llm": "trtllm", "tensorrt_llm": "trtllm", "trt-llm": "trtllm", "trt_llm": "trtllm"}


@dataclass(frozen=True)
class Row:
    file: str
    line: int
    fields: dict[str, str]

    def __getitem__(self, key: str) -> str:
        value = self.fields.get(key, "").strip()
        if key in _NAMES:  # catalog names and formats: `H200`, `BF16`, `TensorRT-LLM` as the stems they are
            value = value.lower()
            if key == "model":  # a Hugging Face id, or the row's hf_id when it names none
                return model_stem(value or self.fields.get("hf_id", ""), _catalogs()[0])
            if key == "gpu":  # `H200 SXM`, `A100-SXM4-80GB`
                return accelerator_stem(value, _catalogs()[1])
            return _ENGINE_ALIASES.get(value, value) if key == "engine" else value
        return value

    @property
    def id(self) -> str:
        return self["id"]


@dataclass
class Prediction:
    row: Row
    measured: float
    predicted: float | None = None
    floor: float | None = None
    problem: str | None = None
    arch: str = ""
    precision: str = ""

    @property
    def error(self) -> float | None:
        return None if self.predicted is None else (self.predicted - self.measured) / self.measured


@dataclass
class Group:
    name: str
    n: int
    median: float
    p90: float
    bias: float
    floor_violations: int = 0
    floor_checked: int = 0
    skipped: int = 0
    ids: list[str] = field(default_factory=list)


def _catalog(folder: str) -> dict[str, tuple[str, str]]:
    """stem -> (kind, instance name), for the stdlib's models or hardware."""
    out = {}
    for entry in resources.files("planc.stdlib").joinpath(folder).iterdir():
        if entry.name.endswith(".plan"):
            match = _INSTANCE.search(entry.read_text(encoding="utf-8"))
            if match:
                out[entry.name[:-5]] = (match.group(1), match.group(2))
    return out


def load_rows(directory: Path) -> tuple[list[Row], list[str]]:
    """Every row of the directory's CSV files (README's schema; the header's names in any case, a
    byte-order mark allowed, columns in any order, missing ones blank), and the problems that drop
    a row (a duplicate id). A row with no id is named by its file and line."""
    rows: list[Row] = []
    problems: list[str] = []
    seen: set[str] = set()
    for path in sorted(directory.glob("*.csv")):
        # a spreadsheet's export: a byte-order mark, and headers in another case or padded
        with path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            for n, record in enumerate(reader, start=2):
                fields = {k.strip().lower(): (v or "") for k, v in record.items() if k is not None}
                fields["id"] = fields.get("id", "").strip() or f"{path.stem}:{n}"  # a row without an id: its place
                row = Row(path.name, n, fields)
                if row.id in seen:
                    problems.append(f"{path.name}:{n}: duplicate id {row.id}")
                    continue
                seen.add(row.id)
                rows.append(row)
    return rows, problems


def sample(rows: Iterable[Row], every: int) -> list[Row]:
    """About one row in `every`, stratified: in each (metric, model, weights, accelerator) stratum
    the ⌈n / every⌉ rows whose ids hash lowest (SHA-256, so the choice is the same on every
    machine and does not follow the files' order), those a plan can state first (a row that
    says too little to be scored would stand for its stratum in vain), in the rows' order."""
    rows = list(rows)
    if every <= 1:
        return rows
    models, hardware = _catalogs()
    strata: dict[tuple[str, ...], list[Row]] = {}
    for row in rows:
        strata.setdefault((row["metric"], row["model"], row["weights"], row["gpu"]), []).append(row)
    chosen: set[str] = set()
    for members in strata.values():
        members = sorted(members, key=lambda r: (plan_text(r, models, hardware)[0] is None,
                                                 hashlib.sha256(r.id.encode()).hexdigest()))
        chosen.update(r.id for r in members[:-(-len(members) // every)])
    return [r for r in rows if r.id in chosen]


def _count(text: str, default: int | None = None) -> int | None:
    if not text:
        return default
    return int(text) if text.isdigit() else None


def kv_dtype(row: Row, weights: str) -> str:
    """The KV cache dtype a row ran with: the one its source states; else the one its checkpoint
    and engine choose; else the activations' 16-bit type.

    A ModelOpt checkpoint (`hf_id` under `nvidia/`, FP8 or FP4 weights) carries an FP8 KV cache
    unless its exporter was told otherwise — NVIDIA/TensorRT-Model-Optimizer@05ab948420d840fbcaa4b32cb5948d99408ed7a6:
    examples/llm_ptq/hf_ptq.py, `--kv_cache_qformat` "default to fp8 if not provided" — and
    TensorRT-LLM's LLM API (the PyTorch backend trtllm-bench runs from v0.19) takes
    `kv_cache_quant_algo` from the checkpoint's hf_quant_config.json when the run does not set one
    (NVIDIA/TensorRT-LLM@7b437aaa73bf5a44b1102aee5c631074da763b8f: tensorrt_llm/llmapi/llm_utils.py
    `ModelLoader._update_from_hf_quant_config`). The checkpoints' own config files are not quoted
    here: this reads the exporter's default, and validation/README.md says so. The default is the
    revision's above; the 2024 scripts the older checkpoints came from also quantised the KV cache
    of an FP8 model ("Always turn on FP8 kv cache to save memory footprint"), though one
    intermediate revision left it off for Hugging Face exports — the reading's known risk."""
    if row["kv"]:
        return row["kv"]
    if row["engine"] == "trtllm" and row["hf_id"].startswith("nvidia/") and weights in ("fp8", "fp4"):
        return "fp8"
    return "fp16" if weights == "fp16" else "bf16"


def weights_dtype(row: Row) -> str:
    """The catalog dtype of a row's weights: the stored format its `weights` column names, multiplied
    as its `compute` column says. An 8-bit format multiplied in 16 bits is that format's weight-only
    variant (W8A16: dequantised inside the GEMM, which runs at the activations' rate), not W8A8 —
    gpt-fast's and torchao's int8 weight-only, for one: the catalog's `<format>_weight_only`
    (stdlib/kinds/dtype.plan)."""
    weights = row["weights"] or "bf16"
    weight_only = f"{weights}_weight_only"
    return weight_only if row["compute"] in ("bf16", "fp16") and weight_only in dtypes() else weights


QUANTISED_HEAD = {"gpt-fast", "torchao"}
"""Engines whose quantisation takes every linear layer, the output head too: gpt-fast's handlers
replace every `nn.Linear` (github:pytorch-labs/gpt-fast@0055c42dfeb98f5c3e1a1ab8c2e4b3025f7d3f3a:
quantize.py, `replace_linear_weight_only_int8_per_channel`, `replace_linear_int4`) and torchao's
`quantize_` keeps its default filter, every `nn.Linear` (github:pytorch/ao@00109449b1ef7893aed692dd3dfe1f8e233bd989:
torchao/_models/llama/generate.py). Their rows are planned with `embeddings` at the weights' format:
the head streams at it (the embedding table, a lookup, stays 16-bit, which the plan's memory ignores)."""


HELD_BATCH = frozenset({"static_throughput", "max_throughput", "ttft", "prefill", "decode_step"})
"""Metrics measured on a batch held together (planned with `static_batching = true`): the static-batch
tables, in-flight batching with every request submitted at once, a prefill or first token timed alone
or in one batch, and a decode step of a fixed batch. `itl` (a fixed concurrency, each finished request
replaced) and `e2e_latency` (its wait and its decodes both read from the continuous model) are not."""


def plan_text(row: Row, models: dict[str, tuple[str, str]], hardware: dict[str, tuple[str, str]]) -> tuple[str | None, str]:
    """The plan that states the row's setup, or None and why it cannot be stated."""
    metric = row["metric"]
    if metric not in METRICS:
        return None, f"metric {metric or '(none)'} is not scored yet"
    model, gpu = row["model"], row["gpu"]
    if not _STEM.match(model) or model not in models:
        return None, f"model {model or '(none)'} is not in the catalog"
    if not _STEM.match(gpu) or gpu not in hardware:
        return None, f"accelerator {gpu or '(none)'} is not in the catalog"
    weights = weights_dtype(row)
    kv = kv_dtype(row, weights)
    if weights not in dtypes() or kv not in dtypes():
        return None, f"precision {weights}/{kv} is not a catalog dtype"
    tp, pp, batch = _count(row["tp"], 1), _count(row["pp"], 1), _count(row["batch"], 1)
    ep = _count(row["ep"], 1)  # unstated: the engines' default, every expert sliced over the TP group
    prompt, output, context = row["input_tokens"], row["output_tokens"], row["context"]
    if tp is None or pp is None or ep is None or batch is None or not all(_NUMBER.match(x) for x in (prompt or "1", output or "1", context or "1")):
        return None, "parallelism, batch or lengths are not whole numbers"
    if context:  # a decode step measured at a stated context
        prompt, output = context, "1"
    if not prompt or not output:
        return None, "input or output length not stated"
    activations = "fp16" if weights == "fp16" or kv == "fp16" else "bf16"
    engine = engine_of(row)
    if engine not in profiles():
        return None, f"engine profile {engine} is not in the catalog"
    # A benchmark that holds its batch — every request there from the start, none arriving while it
    # runs — is a static batch, at any batch size: it has no arrivals whose prompts the iterations
    # must keep up with (continuous batching's `prefill_keeps_up`, which a batch-1 32k-token prompt
    # or 512 decodes at 8k would fail). A prefill's time and a decode step's are the same either way.
    static = "true" if metric in HELD_BATCH else "false"
    total = int(float(prompt)) + int(float(output))
    # the measured batch is the batch, except where the engine decides it (all requests at once)
    cap = "" if metric == "max_throughput" else f"  max_num_seqs = {max(batch, 1)}\n"
    if metric == "decode_step" and context:  # the KV each sequence holds when the step was timed
        cap += f"  running_context = {context} tokens\n"
    if metric == "itl":  # a closed loop of `batch`: the others' completions bring the prompts a request's decodes share iterations with
        cap += f"  arrival_batch = {max(batch, 1) - 1}\n"
    kind, base = models[model]
    # the measurement ran this length, whatever the model card says its context is
    text = f"""import "models/{model}"
import "hardware/{gpu}"
{kind} m = {base} {{ max_context = max({base}.max_context, d.context) }}
traffic t {{
  daily_active_users = 1 users
  requests_per_user = 1 requests/user/day
  peak_factor = 1
  prompt_tokens = {prompt} tokens
  output_tokens = {output} tokens
}}
deployment d {{
  model = m
  hardware = {hardware[gpu][1]}
  traffic = t
  engine = {engine}
  weights = {weights}
  embeddings = {activations if weights in ("bf16", "fp16") else weights if row["engine"] in QUANTISED_HEAD else "bf16"}
  kv = {kv}
  activations = {activations}
  tensor_parallel = {tp}
  pipeline_parallel = {pp}
  expert_parallel = {ep}
  batch = {batch}
{cap}  context = {total} tokens
  static_batching = {static}
}}
"""
    return text, ""


def predict(rows: Iterable[Row]) -> list[Prediction]:
    """Each row's prediction, in the rows' order. Rows are independent plans: with more than one
    core (and `PLAN_JOBS` not 1) they are compiled by forked workers, one per core, which gives
    the same predictions as one process does, in about half the time on two cores."""
    rows = list(rows)
    workers = fork_workers()
    if workers > 1 and len(rows) > 64:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(workers) as pool:
            return pool.map(_predict_one, rows, chunksize=8)
    return [_predict_one(row) for row in rows]


@functools.cache
def _catalogs() -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]]]:
    return _catalog("models"), _catalog("hardware")


# a row's unit, as sources write it -> (the metric's unit it converts to, factor)
_UNIT_FACTORS = {"ms": ("ms", 1.0), "s": ("ms", 1e3), "sec": ("ms", 1e3), "us": ("ms", 1e-3), "µs": ("ms", 1e-3),
                 "μs": ("ms", 1e-3), "tokens/s": ("tokens/s", 1.0), "token/s": ("tokens/s", 1.0),
                 "tok/s": ("tokens/s", 1.0), "tokens/sec": ("tokens/s", 1.0), "tps": ("tokens/s", 1.0)}
_THOUSANDS = re.compile(r"^[0-9]{1,3}(,[0-9]{3})+(\.[0-9]+)?$")


def measured_value(row: Row) -> tuple[float | None, str]:
    """The row's measurement in its metric's unit (`UNITS`): its value as written, thousands
    separators allowed, in its `unit` (blank: the metric's own); or None and why it cannot be read.
    A unit of another dimension (a time for a throughput) or one not listed is refused, not guessed."""
    text = row["value"].strip()
    if _THOUSANDS.match(text):  # 20,460 (a comma between groups of three only: `5,2` is not read as 52)
        text = text.replace(",", "")
    try:
        value = float(text)
    except ValueError:
        return None, "value is not a number"
    if row["metric"] not in UNITS:  # not scored: `plan_text` says so
        return value, ""
    want, factor = _UNIT_FACTORS.get(row["unit"].strip().lower() or UNITS[row["metric"]], ("", 0.0))
    if want != UNITS[row["metric"]]:
        return None, f"unit {row['unit']} is not a unit of {row['metric']} ({UNITS[row['metric']]})"
    return value * factor, ""


def _predict_one(row: Row) -> Prediction:
    models, hardware = _catalogs()
    measured, why = measured_value(row)
    if measured is None:
        return Prediction(row, float("nan"), problem=why)
    if not measured > 0:
        return Prediction(row, measured, problem="value is not positive")
    text, why = plan_text(row, models, hardware)
    if text is None:
        return Prediction(row, measured, problem=why)
    result = _compiled(text, f"{row.file}:{row.line}")
    if result.lowered is not None and row["metric"] == "max_throughput":
        admitted = _admitted(row, result.lowered.values)
        if admitted < 1:
            return Prediction(row, measured, problem="the engine admits no request of this length")
        result = _compiled(_with_batch(text, admitted), f"{row.file}:{row.line}")
    if result.lowered is None:
        first = next((d for d in result.diagnostics if d.is_error), None)
        return Prediction(row, measured, problem="the plan does not compile: " + (first.message if first else "unknown"))
    values = result.lowered.values
    quantity, factor = METRICS[row["metric"]]
    scale = 1.0
    if row["metric"] in ("static_throughput", "max_throughput"):  # replicas of the setup run side by side
        gpus = _count(row["gpus"]) or 1
        scale = gpus / ((_count(row["tp"], 1) or 1) * (_count(row["pp"], 1) or 1))
    prediction = Prediction(row, measured, predicted=float(values[f"d.{quantity}"]) * factor * scale)
    if row["metric"] in ("decode_step", "itl"):  # no iteration of `batch` decodes beats the decode step's roofline
        prediction.floor = float(values["d.step_time_floor"]) * factor
    experts = float(values.get("m.experts", 1))
    prediction.arch = "MLA" if "m.kv_lora_rank" in values else "MoE" if experts > 1 else (
        "MHA" if values.get("m.kv_heads") == values.get("m.heads") else "GQA")
    w = row["weights"] or "bf16"
    prediction.precision = "16-bit" if w in ("bf16", "fp16") else w.split("_")[0]  # a format's variants share its group
    return prediction


# the numbers a row's plan writes that differ between rows of one table (lengths, parallelism,
# batch): rows whose plans differ only in these share one elaboration, varied (`pipeline.vary`)
_VARIED = re.compile(r"^  (prompt_tokens|output_tokens|tensor_parallel|pipeline_parallel|expert_parallel|batch"
                     r"|max_num_seqs|arrival_batch|running_context|context) = (\d+)\b", re.MULTILINE)
_BASES: collections.OrderedDict[str, Compilation] = collections.OrderedDict()  # shape → its plan compiled in full
_KEPT = 8  # the shapes kept: rows come table by table


def _compiled(text: str, shown: str) -> Compilation:
    """The row's plan compiled: in full for the first row of its shape (the text, its varied
    numbers blanked), and for the next rows of that shape as that plan varied, which gives the
    same values and errors in a fraction of the time."""
    from .pipeline import compile_plan, vary

    shape = _VARIED.sub(lambda m: f"  {m[1]} = #", text)
    base = _BASES.get(shape)
    if base is not None:
        _BASES.move_to_end(shape)
        numbers = {("t" if m[1] in ("prompt_tokens", "output_tokens") else "d", m[1]): int(m[2]) for m in _VARIED.finditer(text)}
        varied = vary(base, numbers)
        if varied is not None:
            return varied
    with tempfile.TemporaryDirectory(prefix="plan-validate-") as tmp:
        path = Path(tmp) / "row.plan"
        path.write_text(text, encoding="utf-8")
        result = compile_plan(path, shown=shown)
    if result.elaborated_cleanly:
        _BASES[shape] = result
        while len(_BASES) > _KEPT:
            _BASES.popitem(last=False)
    return result


def _admitted(row: Row, values: Mapping[str, object]) -> int:
    """Requests the engine runs together: the requests there are, at most its cap, and as many
    whole sequences (prompt and output) as its KV budget holds."""
    requests = _count(row["batch"]) or 10**9
    return int(min(requests, float(values["d.max_num_seqs"]), float(values["d.max_batch"])))  # type: ignore[arg-type]


def _with_batch(text: str, batch: int) -> str:
    text = re.sub(r"\n  batch = \d+\n", f"\n  batch = {batch}\n", text, count=1)
    text = text.replace("\n  static_batching", f"\n  max_num_seqs = {batch}\n  static_batching", 1)
    return re.sub(r"\n  static_batching = \w+\n", "\n  static_batching = true\n", text, count=1)


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def _group(name: str, members: list[Prediction]) -> Group | None:
    scored = [p for p in members if p.error is not None]
    if not scored:
        return None
    errors = [abs(p.error) for p in scored if p.error is not None]
    signed = [p.error for p in scored if p.error is not None]
    floors = [p for p in scored if p.floor is not None]
    return Group(name, len(scored), statistics.median(errors), _p90(errors), statistics.median(signed),
                 sum(1 for p in floors if p.floor is not None and p.floor > p.measured), len(floors),
                 len(members) - len(scored), [p.row.id for p in scored])


def score(predictions: list[Prediction]) -> list[Group]:
    groups: list[Group] = []
    metrics = sorted({p.row["metric"] for p in predictions if p.row["metric"] in METRICS})
    for metric in metrics:
        members = [p for p in predictions if p.row["metric"] == metric]
        pooled = _group(f"{metric} (all)", members)
        if pooled:
            groups.append(pooled)
        keys = sorted({(p.arch, p.precision) for p in members if p.error is not None})
        for arch, precision in keys:
            g = _group(f"{metric} · {arch} · {precision}",
                       [p for p in members if (p.arch, p.precision) == (arch, precision)])
            if g:
                groups.append(g)
    return groups


def compare(groups: list[Group], baseline: dict[str, dict[str, float]], tolerance: float = 0.01) -> list[str]:
    """Groups whose median |error| rose above the recorded one by more than `tolerance` (absolute)."""
    worse = []
    for g in groups:
        recorded = baseline.get(g.name)
        if recorded is not None and g.median > recorded["median"] + tolerance:
            worse.append(f"{g.name}: median |error| {g.median:.1%}, recorded {recorded['median']:.1%}")
    return worse


def baseline_of(groups: list[Group]) -> str:
    data = {g.name: {"n": g.n, "median": round(g.median, 4), "p90": round(g.p90, 4), "bias": round(g.bias, 4)}
            for g in groups}
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def render(groups: list[Group], predictions: list[Prediction], before: dict[str, dict[str, float]] | None = None) -> str:
    lines = [
        "# Fidelity: the stdlib's physics against published measurements",
        "",
        "Generated by `plan validate validation/rows --before validation/before.json -o docs/fidelity.md`:",
        "every row of `validation/rows/` (each a published measurement with its citation, schema in",
        "`validation/README.md`) is predicted by a plan that states the row's setup — model, accelerator,",
        "engine, precisions, parallelism, batch, lengths — and leaves every other input at its stdlib",
        "default. Nothing is fitted to these rows. Error is (predicted − measured) / measured, so a",
        "negative bias means predicted times are too short (optimistic) and, for throughputs, a positive",
        "bias means predicted throughput is too high (optimistic). The floor is the roofline at datasheet",
        "peaks with no overheads: it must never exceed a measured step. A `max_throughput` row (all",
        "requests at once, in-flight batching) runs as many requests together as the engine admits —",
        "its cap, and whole sequences of KV reserved, as TensorRT-LLM's GUARANTEED_NO_EVICT does —",
        "each group prefilled and then decoded to its end: a static-batch reading of in-flight batching."
        + (" *Before* is the physics of the previous release (one `mbu`, one roofline `max` per step),"
           " scored on the same rows where its n is not given; a row measured at a fixed concurrency"
           " (`itl`) was a `decode_step` row then." if before else ""),
        "",
        "| group | n | median \\|error\\| | p90 \\|error\\| | bias | floor above measurement |"
        + (" before: median | before: p90 |" if before else ""),
        "|---|---:|---:|---:|---:|---:|" + ("---:|---:|" if before else ""),
    ]
    for g in groups:
        floor = f"{g.floor_violations} of {g.floor_checked}" if g.floor_checked else "–"
        row = f"| {g.name} | {g.n} | {g.median:.1%} | {g.p90:.1%} | {g.bias:+.1%} | {floor} |"
        if before:
            old = before.get(g.name)
            rows_then = "" if not old or old["n"] == g.n else f" (of {old['n']} rows)"  # the group's rows have changed since
            row += f" {old['median']:.1%}{rows_then} | {old['p90']:.1%} |" if old else " – | – |"
        lines.append(row)
    skipped = [p for p in predictions if p.error is None]
    lines += ["", f"{len(predictions) - len(skipped)} rows scored, {len(skipped)} not scored (listed at the end with the reason).",
              "", "## Rows", "", "| id | metric | engine profile | measured | predicted | error | floor |",
              "|---|---|---|---:|---:|---:|---:|"]
    for p in sorted(predictions, key=lambda p: p.row.id):
        if p.error is None or p.predicted is None:
            continue
        unit = UNITS[p.row["metric"]]
        floor = f"{p.floor:.4g}" if p.floor is not None else ""
        lines.append(f"| {p.row.id} | {p.row['metric']} | {engine_of(p.row)} | {p.measured:.4g} {unit} "
                     f"| {p.predicted:.4g} | {p.error:+.1%} | {floor} |")
    if skipped:
        lines += ["", "## Rows not scored", "", "| id | why |", "|---|---|"]
        for p in sorted(skipped, key=lambda p: p.row.id):
            lines.append(f"| {p.row.id} | {(p.problem or '').replace('|', '/')} |")
    return "\n".join(lines) + "\n"
