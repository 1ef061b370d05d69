"""`plan flags`: the launch command of each deployment, every flag traced to the quantity behind it.

Contract
- `launches(compilation, engine=None, deployment=None)` reads a compiled plan (no errors) and
  returns one `Launch` per `deployment` instance of the main plan (an instance whose kind is or
  extends `deployment`), in the order the plan declares them; `deployment` keeps only that one.
  Every value comes from `compilation.lowered.values` (node ids such as `chat.tensor_parallel`)
  or, for precisions and switches, from the elaborated statics (`chat.kv` → `dtype.fp8`): nothing
  is re-derived here except the memory fractions SGLang and TensorRT-LLM take, which are written
  out as formulas over node ids.
- The engine is the family of the deployment's `engine` instance (vllm, sglang, trtllm, or an
  instance based on one: `trtllm_0_9` is TensorRT-LLM), unless `engine` overrides it. An engine of
  no known family (`pytorch`, a plan's own) is a `FlagsProblem`, as is an unknown `deployment`
  name or a plan with no deployment; each says what to do.
- Whole numbers are printed without decimals; a fraction as an exact decimal when it has at most
  four places, else rounded down to four (a memory fraction rounded down never overcommits).
- Nothing is run: `argv` is the command as a list of words and `command` its shell form, each word
  quoted with `shlex.quote`. The model is the Hugging Face id that the stdlib catalog file of
  the model names in its first line (`from meta-llama/Llama-3.1-70B config.json`), else the
  instance's name, with a note.
- `render_text` and `render_json` are deterministic: the same plan gives the same bytes.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any

from . import __version__

FAMILIES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
PROGRAMS = {"vllm": ("vllm", "serve"), "sglang": ("python", "-m", "sglang.launch_server"), "trtllm": ("trtllm-serve",)}
_CHECKPOINT = re.compile(r"\A#[^\n]*?\bfrom ([A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*) config\.json")
_SIXTEEN_BIT = ("bf16", "fp16")


class FlagsProblem(Exception):
    """Why there is no launch command: a message, and a `help:` line."""

    def __init__(self, message: str, help: str) -> None:
        super().__init__(message)
        self.message, self.help = message, help


@dataclass(frozen=True)
class Flag:
    flag: str  # `--tensor-parallel-size`; for a setting of TensorRT-LLM's options file, its YAML key
    value: str | None  # as printed; None for a switch (`--enforce-eager`)
    quantity: str  # the node id, or a formula over node ids, that gives the value
    quantities: tuple[str, ...]  # the node ids it reads
    note: str = ""


@dataclass(frozen=True)
class Launch:
    deployment: str
    engine: str  # the family whose flags these are: vllm, sglang or trtllm
    plan_engine: str  # the engine instance the plan computed with
    model: str  # the model instance
    checkpoint: str  # what the command serves: a Hugging Face id, else the model's name
    hardware: str
    replicas: int | None  # total_replicas: how many times to launch it
    devices_per_replica: int | None
    argv: tuple[str, ...]
    flags: tuple[Flag, ...]  # the words after the program and the model, in order
    config_file: str | None = None  # TensorRT-LLM: the options file --extra_llm_api_options names
    config: tuple[Flag, ...] = ()  # ... and its settings
    notes: tuple[str, ...] = ()

    @property
    def command(self) -> str:
        return " ".join(shlex.quote(word) for word in self.argv)


# ---- reading the compiled plan ------------------------------------------------------------


@dataclass
class _Deployment:
    name: str
    el: Any
    values: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    def id(self, fld: str) -> str:
        return f"{self.name}.{fld}"

    def value(self, node_id: str) -> Any:
        return self.values.get(node_id)

    def static(self, fld: str) -> str | None:
        """`chat.kv` → `fp8`, `chat.engine` → `vllm`, `chat.cuda_graphs` → `true`."""
        key = self.el.statics.get(self.id(fld))
        if key is None:
            value = self.values.get(self.id(fld))
            return None if value is None else ("true" if value else "false")
        return str(key).split(" ", 1)[1] if key.startswith("instance ") else str(key).rsplit(".", 1)[-1]

    def whole(self, node_id: str) -> str:
        value = self.values[node_id]
        if Fraction(value).denominator != 1:
            self.notes.append(f"{node_id} is {decimal(value)}, not a whole number: rounded down")
        return str(int(Fraction(value)))


def deployments(compilation: Any) -> list[str]:
    el = compilation.lowered.elaborated
    return [name for name in dict.fromkeys(el.main_instances) if "deployment" in el.kinds.get(name, ())]


def family_of(el: Any, engine: str) -> str | None:
    names: tuple[str, ...] = (engine, *el.bases.get(engine, ()))
    return next((name for name in names if name in FAMILIES), None)


def launches(compilation: Any, engine: str | None = None, deployment: str | None = None) -> list[Launch]:
    lowered = compilation.lowered
    assert lowered is not None, "flags are read from a plan that compiled"
    names = deployments(compilation)
    if not names:
        el = lowered.elaborated
        others = [n for n in dict.fromkeys(el.main_instances) if el.kinds.get(n, ("",))[0].endswith("deployment")]
        verb = "is a" if len(others) == 1 else "are each a"
        what = (f"; {', '.join(f'`{n}`' for n in others)} {verb} `{el.kinds[others[0]][0]}`, which runs on no LLM engine"
                if others else "")
        raise FlagsProblem(f"`{compilation.path}` declares no deployment{what}",
                           "`plan flags` prints the engine command of each `deployment` instance of the plan; "
                           "`plan init` writes a starter plan with one")
    if deployment is not None:
        if deployment not in names:
            import difflib

            close = difflib.get_close_matches(deployment, names, n=1)
            hint = f"did you mean `{close[0]}`? " if close else ""
            raise FlagsProblem(f"`{compilation.path}` has no deployment `{deployment}`",
                               f"{hint}its deployments: {', '.join(f'`{n}`' for n in names)}")
        names = [deployment]
    return [_launch(_Deployment(name, lowered.elaborated, lowered.values), engine) for name in names]


def _launch(d: _Deployment, override: str | None) -> Launch:
    plan_engine = d.static("engine") or "vllm"
    family = override or family_of(d.el, plan_engine)
    if family is None:
        raise FlagsProblem(f"deployment `{d.name}` runs engine `{plan_engine}`, which is not based on vLLM, SGLang "
                           "or TensorRT-LLM, so plan knows no command that launches it",
                           "print the flags of one of those engines with --engine vllm|sglang|trtllm")
    if override is not None and family_of(d.el, plan_engine) != override:
        d.notes.append(f"the plan computed these values with engine `{plan_engine}`; --engine {override} prints them "
                       f"as {FAMILIES[override]}'s flags. Set `engine = {override}` in `{d.name}` for "
                       f"{FAMILIES[override]}'s own memory rule and defaults")
    model, hardware = d.static("model") or "", d.static("hardware") or ""
    checkpoint = _checkpoint(d, model)
    flags = {"vllm": _vllm, "sglang": _sglang, "trtllm": _trtllm}[family](d, model, hardware)
    config_file: str | None = None
    config: tuple[Flag, ...] = ()
    if family == "trtllm":
        config_file = f"{d.name}-trtllm.yaml"
        config = _trtllm_options(d)
        flags = (*flags, Flag("--extra_llm_api_options", config_file, "the settings below", ()))
    _precision_notes(d, family)
    program = PROGRAMS[family]
    model_words = ("--model-path", checkpoint) if family == "sglang" else (checkpoint,)
    argv = [*program, *model_words]
    for f in flags:
        argv += [f.flag] if f.value is None else [f.flag, f.value]
    replicas = d.value(d.id("total_replicas"))
    per_replica = d.value(d.id("replica_devices"))
    return Launch(
        deployment=d.name, engine=family, plan_engine=plan_engine, model=model, checkpoint=checkpoint,
        hardware=hardware, replicas=None if replicas is None else int(replicas),
        devices_per_replica=None if per_replica is None else int(per_replica),
        argv=tuple(argv), flags=tuple(flags), config_file=config_file, config=config, notes=tuple(d.notes))


def _checkpoint(d: _Deployment, model: str) -> str:
    """The Hugging Face id the stdlib's catalog file names for a model, else the model's name."""
    node = d.el.nodes.get(f"{model}.layers")
    if node is not None and not d.el.bases.get(model) and node.span.file.is_stdlib:
        match = _CHECKPOINT.match(node.span.file.text)
        if match:
            return match.group(1)
    d.notes.append(f"`{model}` names no published checkpoint: replace it in the command with the model's "
                   "Hugging Face id or local path")
    return model


# ---- the engines --------------------------------------------------------------------------


def _common(d: _Deployment) -> dict[str, Flag]:
    """The quantities every engine takes, by role, with the flag name left to the engine."""
    ids = {k: d.id(k) for k in ("tensor_parallel", "pipeline_parallel", "expert_parallel", "batch",
                                "prefill_chunk", "context", "kv_block_size")}
    return {role: Flag("", d.whole(node), node, (node,)) for role, node in ids.items()}


def _named(flag: Flag, name: str, note: str = "") -> Flag:
    return Flag(name, flag.value, flag.quantity, flag.quantities, note or flag.note)


def _moe(d: _Deployment, model: str) -> bool:
    experts = d.value(f"{model}.experts")
    ep = d.value(d.id("expert_parallel"))
    return experts is not None and experts > 1 and ep is not None and ep > 1


BATCH_NOTE = "the planned batch: the admission cap to set"


def _context(d: _Deployment, flag: Flag, name: str) -> Flag:
    """The context window flag, with what it costs: the requests whose prompt alone is longer are
    refused (`refused_share`, from the lognormal prompt lengths), when the stdlib states them
    (`refuses_requests`: one in 10,000 or more, as its findings do)."""
    share_id = d.id("refused_share")
    share = d.value(share_id)
    note = "the context the KV cache is sized for"
    if share is None or not d.value(d.id("refuses_requests")):
        return _named(flag, name, note)
    return Flag(name, flag.value, flag.quantity, (*flag.quantities, share_id),
                f"{note}, and refuses longer prompts: {share * 100:.3g} % of requests, {share_id}")


def _vllm(d: _Deployment, model: str, hardware: str) -> tuple[Flag, ...]:
    c = _common(d)
    out = [_named(c["tensor_parallel"], "--tensor-parallel-size"), _named(c["pipeline_parallel"], "--pipeline-parallel-size")]
    if _moe(d, model):
        ep = c["expert_parallel"]
        tp = c["tensor_parallel"].value
        whole = "" if ep.value == tp else f" (vLLM has no smaller expert-parallel group: it runs {tp}, not {ep.value})"
        out.append(Flag("--enable-expert-parallel", None, ep.quantity, ep.quantities,
                        f"expert_parallel {ep.value}: vLLM puts whole experts on each tensor-parallel rank{whole}"))
    mu = d.id("memory_utilization")
    out += [_named(c["batch"], "--max-num-seqs", BATCH_NOTE),
            _named(c["prefill_chunk"], "--max-num-batched-tokens"),
            _context(d, c["context"], "--max-model-len"),
            Flag("--gpu-memory-utilization", decimal(d.value(mu)), mu, (mu,))]
    out += _kv_dtype(d, "--kv-cache-dtype", {"fp8": "fp8", "bf16": "bfloat16"})
    out.append(_named(c["kv_block_size"], "--block-size"))
    out += _weights_flag(d, "--quantization")
    out += _activations_flag(d, "--dtype", "float16")
    if d.static("cuda_graphs") == "false":
        out.append(Flag("--enforce-eager", None, d.id("cuda_graphs"), (d.id("cuda_graphs"),), "no CUDA graphs"))
    return tuple(out)


def _sglang(d: _Deployment, model: str, hardware: str) -> tuple[Flag, ...]:
    c = _common(d)
    out = [_named(c["tensor_parallel"], "--tp"), _named(c["pipeline_parallel"], "--pp-size")]
    if _moe(d, model):
        out.append(_named(c["expert_parallel"], "--ep-size"))
    weights, kv, memory = d.id("weight_bytes_per_device"), d.id("kv_budget"), f"{hardware}.memory"
    fraction = (Fraction(d.value(weights)) + Fraction(d.value(kv))) / Fraction(d.value(memory))
    out += [_named(c["batch"], "--max-running-requests", BATCH_NOTE),
            _named(c["prefill_chunk"], "--chunked-prefill-size"),
            _context(d, c["context"], "--context-length"),
            Flag("--mem-fraction-static", decimal(fraction), f"({weights} + {kv}) / {memory}", (weights, kv, memory),
                 "the static pool holds the weights and the KV cache")]
    out += _kv_dtype(d, "--kv-cache-dtype", {"fp8": "fp8_e4m3", "bf16": "bf16"})
    out.append(_named(c["kv_block_size"], "--page-size"))
    out += _weights_flag(d, "--quantization")
    out += _activations_flag(d, "--dtype", "half")
    if d.static("cuda_graphs") == "false":
        out.append(Flag("--disable-cuda-graph", None, d.id("cuda_graphs"), (d.id("cuda_graphs"),), "no CUDA graphs"))
    return tuple(out)


def _trtllm(d: _Deployment, model: str, hardware: str) -> tuple[Flag, ...]:
    c = _common(d)
    out = [_named(c["tensor_parallel"], "--tp_size"), _named(c["pipeline_parallel"], "--pp_size")]
    if _moe(d, model):
        out.append(_named(c["expert_parallel"], "--ep_size"))
    kv, memory = d.id("kv_budget"), f"{hardware}.memory"
    weights, overhead = d.id("weight_bytes_per_device"), d.id("runtime_overhead")
    free = Fraction(d.value(memory)) - Fraction(d.value(weights)) - Fraction(d.value(overhead))
    fraction = Fraction(d.value(kv)) / free if free > 0 else Fraction(0)
    out += [_named(c["batch"], "--max_batch_size", BATCH_NOTE),
            _named(c["prefill_chunk"], "--max_num_tokens"),
            _context(d, c["context"], "--max_seq_len"),
            Flag("--kv_cache_free_gpu_memory_fraction", decimal(fraction), f"{kv} / ({memory} - {weights} - {overhead})",
                 (kv, memory, weights, overhead), "the share of the memory left after weights and overheads that the KV cache takes")]
    return tuple(out)


def _trtllm_options(d: _Deployment) -> tuple[Flag, ...]:
    kv, block = d.id("kv"), d.id("kv_block_size")
    dtype = d.static("kv") or "bf16"
    value = "fp8" if dtype.startswith("fp8") else "auto" if dtype == _sixteen_bit(d) else None
    out = []
    if value is not None:
        out.append(Flag("kv_cache_config.dtype", value, kv, (kv,), "" if value == "fp8" else "the model's 16-bit dtype"))
    else:
        d.notes.append(f"TensorRT-LLM's KV cache has no `{dtype}` dtype that plan knows: {kv} has no setting")
    out.append(Flag("kv_cache_config.tokens_per_block", d.whole(block), block, (block,)))
    if d.static("cuda_graphs") == "false":
        out.append(Flag("cuda_graph_config", "null", d.id("cuda_graphs"), (d.id("cuda_graphs"),), "no CUDA graphs"))
    return tuple(out)


def _sixteen_bit(d: _Deployment) -> str:
    """The dtype the engine computes in and keeps a KV cache of `auto` in: the activations'
    when they are 16-bit, else BF16 (the stdlib's checkpoints are BF16)."""
    activations = d.static("activations") or "bf16"
    return activations if activations in _SIXTEEN_BIT else "bf16"


def _kv_dtype(d: _Deployment, flag: str, names: dict[str, str]) -> list[Flag]:
    kv = d.id("kv")
    dtype = d.static("kv") or "bf16"
    if dtype == _sixteen_bit(d):
        return [Flag(flag, "auto", kv, (kv,), f"{dtype}: the model's 16-bit dtype")]
    name = names.get("fp8" if dtype.startswith("fp8") else dtype)
    if name is None:
        d.notes.append(f"the engine has no `{dtype}` KV cache that plan knows: {kv} has no flag")
        return []
    return [Flag(flag, name, kv, (kv,))]


def _weights_flag(d: _Deployment, flag: str) -> list[Flag]:
    weights = d.static("weights") or "bf16"
    node = d.id("weights")
    if weights in _SIXTEEN_BIT:
        return []
    if weights == "fp8":
        return [Flag(flag, "fp8", node, (node,),
                     "FP8 weights quantised online from the 16-bit checkpoint; leave it out to serve an FP8 checkpoint")]
    d.notes.append(f"{node} is {weights}: serve a checkpoint already quantised to it (the engine reads its "
                   "quantization_config); plan sets no flag for it")
    return []


def _activations_flag(d: _Deployment, flag: str, fp16: str) -> list[Flag]:
    node = d.id("activations")
    return [Flag(flag, fp16, node, (node,))] if d.static("activations") == "fp16" else []


def _precision_notes(d: _Deployment, family: str) -> None:
    if family == "trtllm" and (d.static("weights") or "bf16") == "fp8":
        d.notes.append(f"{d.id('weights')} is fp8: TensorRT-LLM serves FP8 weights from an FP8 checkpoint "
                       "(quantised with NVIDIA ModelOpt, for one): give its path as the model")


# ---- numbers ------------------------------------------------------------------------------


def decimal(value: Any, places: int = 4) -> str:
    """`4`, `0.92`, `0.8665` (rounded down): no exponent, no trailing zeros."""
    exact = Fraction(value)
    scaled = exact * 10**places
    digits = int(scaled) if scaled >= 0 else -int(-scaled)  # towards zero
    if exact.denominator == 1:
        return str(exact.numerator)
    sign = "-" if digits < 0 else ""
    whole, frac = divmod(abs(digits), 10**places)
    text = f"{whole}.{frac:0{places}d}".rstrip("0").rstrip(".")
    return sign + text


# ---- output -------------------------------------------------------------------------------


def render_text(items: list[Launch]) -> str:
    blocks = []
    for item in items:
        words = (*PROGRAMS[item.engine], *(("--model-path",) if item.engine == "sglang" else ()), item.checkpoint)
        lines = [_headline(item),
                 " ".join(shlex.quote(w) for w in words) + f"  ← {item.model}"
                 + ("" if item.checkpoint == item.model else " (the checkpoint its catalog file names)")]
        rows = [(f"  {f.flag}" + ("" if f.value is None else f" {shlex.quote(f.value)}"), _source(f)) for f in item.flags]
        width = max((len(r[0]) for r in rows), default=0)
        lines += [f"{left.ljust(width)}  ← {right}" for left, right in rows]
        if item.config:
            lines += ["", f"# {item.config_file}:"] + _yaml(item.config)
        lines += [f"# note: {n}" for n in item.notes]
        lines += ["", item.command]
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def _headline(item: Launch) -> str:
    where = ""
    if item.replicas is not None and item.devices_per_replica is not None:
        where = (f": launch it on each of {item.replicas} replicas ({item.deployment}.total_replicas), "
                 f"{item.devices_per_replica} × {item.hardware} each ({item.deployment}.replica_devices)")
    return f"# deployment {item.deployment}, {FAMILIES[item.engine]} (engine {item.plan_engine}){where}"


def _source(f: Flag) -> str:
    return f.quantity + (f" ({f.note})" if f.note else "")


def _yaml(settings: tuple[Flag, ...]) -> list[str]:
    """The settings as YAML, nested by their dotted keys, each with its quantity as a comment."""
    rows: list[tuple[str, str]] = []
    open_section = None
    for s in settings:
        section, _, key = s.flag.rpartition(".")
        if section and section != open_section:
            rows.append((f"{section}:", ""))
            open_section = section
        rows.append((f"  {key}: {s.value}" if section else f"{key}: {s.value}", _source(s)))
    width = max(len(text) for text, source in rows if source)
    return [f"{text.ljust(width)}  # ← {source}" if source else text for text, source in rows]


def render_json(items: list[Launch], plan: str) -> str:
    def launch(item: Launch) -> dict[str, Any]:
        data = asdict(item)
        data["command"] = item.command
        data["argv"] = list(item.argv)
        for key in ("flags", "config"):
            data[key] = [{**f, "quantities": list(f["quantities"])} for f in data[key]]
        data["notes"] = list(item.notes)
        return data

    document = {"schema": "plan.flags/1", "plan": plan, "version": __version__,
                "deployments": [launch(i) for i in items]}
    return json.dumps(document, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
