"""Import a Hugging Face `config.json` as one model instance of the stdlib kinds `decoder`/`mla_decoder`.

Contract
- `import_config(path, name, shown=None, plan_shown=None) -> Imported` reads one local file and
  never the network (this module imports nothing that can reach it; a URL is not a path). It maps
  the config's fields onto the kind's inputs, one `input = value source "config.json <field>"`
  line each, under a header comment naming the file and its `model_type`, then compiles the
  generated plan (in a temporary directory, as `plan_shown`). `Imported.text` is that plan, or
  None when there is any error; `Imported.diagnostics` says why, `Imported.exit_code` is 0 or 2.
- Problems are diagnostics, never exceptions and never guesses (only an invalid `name`, the
  caller's error, raises ValueError; the CLI checks it first with `name_problem`). File problems
  reuse E0001-E0003 and E0005 (an empty file is not JSON);
  E0601 the text is not JSON (at the decoder's position); E0602 a field the kind needs is absent
  (at the start of the object) or null (on the null); E0603 two fields contradict each other
  (primary on the first field's value, secondary on the other's); E0604 the `model_type`, or a
  feature of it that the kinds cannot express, is not supported; E0605 a value has the wrong
  type or range. Spans come from scanning the top-level object of the JSON text, so every label
  points at the very key or value.
- A field the config leaves out takes the documented default of its `transformers` config class
  (`num_key_value_heads` absent means MHA; Gemma-2 ties its embeddings), and the source says so.
  A field the kind does not need is ignored; one that would be misread is explained in a comment
  (DeepSeek's `num_key_value_heads`: with MLA the KV cache is the shared latent).
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import diagnostics as dx
from .hf_json import Entry, describe_value, load_config, parse_config, plan_string, skip_ws, top_level_spans
from .pipeline import Compilation, compile_plan
from .source import SourceFile, Span

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


_WORD = re.compile(r"[A-Za-z0-9_.-]{1,40}")


@dataclass(frozen=True)
class Architecture:
    """How one `model_type` maps onto the kinds (the facts of its `transformers` config class)."""

    kind: str  # "decoder" or "mla_decoder"
    config_class: str
    mlp: str  # how its MLP is gated, for the `mlp_matrices` source
    tied_default: bool  # the config class's `tie_word_embeddings` default
    bias: str  # "attention_bias": read the flag; "always": Q, K, V carry biases; "none": no biases
    window: str  # "none", "all" (every layer local), "alternate" (even layers local), "qwen"
    window_default: int | None = None  # the class's `sliding_window` default
    moe: str = "dense"  # "dense", "mixtral", "qwen3_moe" or "deepseek"
    norms: str = ""  # the layer's norms when they are not Llama's two: "four" (Gemma 2), "qk" (Qwen3)


ARCHITECTURES: dict[str, Architecture] = {
    "llama": Architecture("decoder", "LlamaConfig", "SwiGLU", False, "attention_bias", "none"),
    "mistral": Architecture("decoder", "MistralConfig", "SwiGLU", False, "none", "all", 4096),
    "mixtral": Architecture("decoder", "MixtralConfig", "SwiGLU experts", False, "none", "all", None,
                            "mixtral"),
    "qwen2": Architecture("decoder", "Qwen2Config", "SwiGLU", False, "always", "qwen"),
    "qwen3": Architecture("decoder", "Qwen3Config", "SwiGLU", False, "attention_bias", "qwen", norms="qk"),
    "qwen3_moe": Architecture("decoder", "Qwen3MoeConfig", "SwiGLU experts", False, "attention_bias", "qwen",
                              None, "qwen3_moe", norms="qk"),
    "gemma2": Architecture("decoder", "Gemma2Config", "GeGLU", True, "attention_bias", "alternate", 4096,
                           norms="four"),
    "deepseek_v3": Architecture("mla_decoder", "DeepseekV3Config", "SwiGLU experts", False, "none", "none",
                                None, "deepseek"),
}


SUPPORTED = ", ".join(f"`{t}`" for t in sorted(ARCHITECTURES))


@dataclass
class Imported:
    """The outcome of one import: the plan text, or the diagnostics that prevented it."""

    path: str
    name: str
    diagnostics: list[dx.Diagnostic] = field(default_factory=list)
    text: str | None = None
    model_type: str | None = None
    kind: str | None = None

    @property
    def ok(self) -> bool:
        return self.text is not None

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 2


def is_url(argument: str) -> bool:
    """`https://...` and friends: the importer reads local files only."""
    return _URL.match(argument) is not None


def name_problem(name: str) -> str | None:
    """Why `name` cannot name the instance, or None when it can."""
    if not _NAME.fullmatch(name):
        return f"`{name}` is not a plan name: use letters, digits and `_`, not starting with a digit"
    from .syntax.highlight import keywords  # the grammar's own, so a new keyword is refused at once

    if name in keywords():
        return f"`{name}` is a keyword of the plan language"
    return None


def import_config(path: Path | str, name: str, shown: str | None = None, plan_shown: str | None = None,
                  *, verify: bool = True) -> Imported:
    """Read `path` (a local config.json) and build the plan for instance `name` (see module docstring)."""
    problem = name_problem(name)
    if problem is not None:
        raise ValueError(problem)
    shown = shown if shown is not None else str(path)
    result = Imported(shown, name)
    sink = dx.Sink()
    file = load_config(Path(path), shown, sink)
    if file is not None:
        data = parse_config(file, shown, sink)
        if data is not None:
            spans = top_level_spans(file.text)
            importer = _Importer(file, shown, name, data, spans, sink)
            text = importer.run()
            result.model_type, result.kind = importer.model_type, importer.kind
            if not sink.has_errors:
                result.text = text
    result.diagnostics = sink.sorted()
    if result.text is not None and verify:
        compilation = compile_generated(result.text, plan_shown or f"{name}.plan")
        if not compilation.ok:
            result.text = None
            result.diagnostics = compilation.diagnostics
    return result


def compile_generated(text: str, shown: str) -> Compilation:
    """Compile a generated plan as `shown` (it imports nothing, so any directory will do)."""
    with tempfile.TemporaryDirectory(prefix="plan-import-hf-") as tmp:
        path = Path(tmp) / (Path(shown).name or "imported.plan")
        path.write_text(text, encoding="utf-8")
        return compile_plan(path, shown=shown)


@dataclass(frozen=True)
class _Line:
    """An `input = value source "..."` line of the instance, or a comment when `input` is None."""

    input: str | None
    value: str
    source: str = ""


class _Importer:
    def __init__(self, file: SourceFile, shown: str, name: str, data: dict[str, Any],
                 spans: dict[str, Entry], sink: dx.Sink) -> None:
        self.file, self.shown, self.name, self.sink = file, shown, name, sink
        self.data, self.spans = data, spans
        self.lines: list[_Line] = []
        self.model_type: str | None = None
        self.kind: str | None = None
        self.arch: Architecture | None = None

    # -- spans and diagnostics --------------------------------------------------------------

    def value_span(self, key: str) -> Span:
        entry = self.spans.get(key)
        if entry is None:
            return self.object_span()
        return Span(self.file, *entry.value)

    def object_span(self) -> Span:
        start = skip_ws(self.file.text, 0)
        return Span(self.file, start, min(start + 1, len(self.file.text)))

    def missing(self, key: str, needed: str) -> None:
        null = key in self.data
        self.sink.add(dx.HF_MISSING_FIELD.at(
            self.value_span(key) if null else self.object_span(),
            "null here" if null else f"this object has no `{key}`",
            path=self.shown, field=key, needed=needed,
            help=f"add `\"{key}\": ...` from the model's published config.json; the importer does not guess",
        ))

    def bad(self, key: str, expected: str, label: str = "") -> None:
        self.sink.add(dx.HF_BAD_VALUE.at(
            self.value_span(key), label or f"not {expected}", field=key, expected=expected,
            found=describe_value(self.data[key]), help=f"write {expected} here, as published config.json files do",
        ))

    def contradiction(self, first: str, second: str, detail: str, label: str, other: str, help: str) -> None:
        self.sink.add(dx.HF_CONTRADICTION.at(
            self.value_span(first), label, detail=detail,
            secondary=[dx.Label(self.value_span(second), other)], help=help,
        ))

    def unsupported(self, key: str, what: str, label: str, help: str) -> None:
        secondary = [dx.Label(self.value_span("model_type"), "the model type")] if key != "model_type" else []
        self.sink.add(dx.HF_UNSUPPORTED.at(
            self.value_span(key), label, what=what, secondary=secondary, help=help,
        ))

    # -- typed reads ------------------------------------------------------------------------

    def integer(self, key: str, needed: str | None = None, minimum: int = 1) -> int | None:
        """A required (when `needed` says for what) or optional integer field; None if absent or bad."""
        value = self.data.get(key)
        if value is None:
            if needed is not None:
                self.missing(key, needed)
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.bad(key, "a positive integer" if minimum >= 1 else "a non-negative integer")
            return None
        return value

    def need(self, key: str, input: str, minimum: int = 1) -> int | None:
        return self.integer(key, f"`{self.kind}` needs it for `{input}`", minimum)

    def flag(self, key: str) -> bool | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, bool):
            self.bad(key, "`true` or `false`")
            return None
        return value

    def emit(self, input: str, value: int | bool | str, source: str) -> None:
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        self.lines.append(_Line(input, text, source))

    def comment(self, text: str) -> None:
        self.lines.append(_Line(None, text))

    # -- the mapping ------------------------------------------------------------------------

    def run(self) -> str | None:
        arch = self.architecture()
        if arch is None:
            return None
        self.arch, self.kind = arch, arch.kind
        layers = self.need("num_hidden_layers", "layers")
        hidden = self.need("hidden_size", "hidden")
        heads = self.need("num_attention_heads", "heads")
        intermediate = self.need("intermediate_size", "intermediate")
        vocab = self.need("vocab_size", "vocab")
        context = self.need("max_position_embeddings", "max_context")
        self.emit("layers", layers or 0, "config.json num_hidden_layers")
        self.emit("hidden", hidden or 0, "config.json hidden_size")
        self.emit("heads", heads or 0, "config.json num_attention_heads")
        if arch.kind == "mla_decoder":
            self.latent_attention()
        else:
            self.attention(hidden, heads)
        self.emit("intermediate", intermediate or 0, "config.json intermediate_size")
        self.emit("vocab", vocab or 0, "config.json vocab_size")
        self.lines.append(_Line("max_context", f"{context or 0} tokens",
                                "config.json max_position_embeddings"))
        self.mlp()
        self.embeddings()
        self.biases()
        self.norms()
        self.windows(layers)
        self.experts(layers, intermediate)
        return self.render()

    def architecture(self) -> Architecture | None:
        model_type = self.data.get("model_type")
        if model_type is None:
            self.missing("model_type", "the importer needs it to choose between `decoder` and `mla_decoder`")
            return None
        if not isinstance(model_type, str):
            self.bad("model_type", "a string")
            return None
        self.model_type = model_type
        arch = ARCHITECTURES.get(model_type)
        if arch is None:
            shown = model_type if _WORD.fullmatch(model_type) else "this model type"
            self.unsupported(
                "model_type", f"`model_type` `{shown}`", "not a supported model type",
                f"supported model types: {SUPPORTED}. GPT-2- and BERT-style models (plain, ungated MLPs, "
                "learned position embeddings) are out of scope; write such a model's `decoder` instance by "
                "hand (see stdlib/models/)",
            )
        return arch

    def attention(self, hidden: int | None, heads: int | None) -> None:
        kv_heads = self.integer("num_key_value_heads")
        if "num_key_value_heads" not in self.data or self.data["num_key_value_heads"] is None:
            self.emit("kv_heads", heads or 0, "config.json num_key_value_heads absent: MHA, = heads")
        else:
            self.emit("kv_heads", kv_heads or 0, "config.json num_key_value_heads")
            if kv_heads is not None and heads is not None:
                if kv_heads > heads:
                    self.contradiction(
                        "num_key_value_heads", "num_attention_heads",
                        f"`num_key_value_heads` ({kv_heads}) exceeds `num_attention_heads` ({heads})",
                        f"{kv_heads} key/value heads", f"{heads} query heads",
                        "each KV head serves a group of query heads, so there cannot be more of them",
                    )
                elif heads % kv_heads:
                    self.contradiction(
                        "num_attention_heads", "num_key_value_heads",
                        f"`num_attention_heads` ({heads}) is not a multiple of "
                        f"`num_key_value_heads` ({kv_heads})",
                        f"{heads} query heads", f"{kv_heads} key/value heads",
                        "grouped-query attention gives every KV head the same number of query heads",
                    )
        head_dim = self.integer("head_dim")
        if head_dim is not None:
            self.emit("head_dim", head_dim, "config.json head_dim")
        elif self.data.get("head_dim") is None and hidden is not None and heads is not None:
            if hidden % heads:
                self.contradiction(
                    "hidden_size", "num_attention_heads",
                    f"`hidden_size` ({hidden}) is not divisible by `num_attention_heads` ({heads}) "
                    "and there is no `head_dim`",
                    f"{hidden} wide", f"split into {heads} heads",
                    "a config whose heads do not split the hidden size states `head_dim`; add it",
                )
            else:
                self.comment("head_dim: not in config.json, so the kind's default hidden / heads = "
                             f"{hidden // heads}")

    def latent_attention(self) -> None:
        q_rank = self.data.get("q_lora_rank")
        if "q_lora_rank" in self.data and q_rank is None:
            self.unsupported(
                "q_lora_rank", "MLA without a query down-projection (`q_lora_rank: null`)",
                "no query LoRA rank",
                "`mla_decoder` models DeepSeek-V3's attention, whose queries go through a rank-`q_lora_rank` "
                "projection; write this model's instance by hand",
            )
        else:
            self.emit("q_lora_rank", self.need("q_lora_rank", "q_lora_rank") or 0, "config.json q_lora_rank")
        kv_rank = self.need("kv_lora_rank", "kv_lora_rank")
        rope = self.need("qk_rope_head_dim", "qk_rope_dim")
        self.emit("kv_lora_rank", kv_rank or 0, "config.json kv_lora_rank")
        nope = self.need("qk_nope_head_dim", "qk_nope_dim")
        self.emit("qk_nope_dim", nope or 0, "config.json qk_nope_head_dim")
        self.emit("qk_rope_dim", rope or 0, "config.json qk_rope_head_dim")
        self.emit("v_head_dim", self.need("v_head_dim", "v_head_dim") or 0, "config.json v_head_dim")
        if self.flag("attention_bias"):
            self.unsupported("attention_bias", "MLA with attention biases", "biases on the MLA projections",
                             "`mla_decoder` has no bias terms; write this model's instance by hand")
        kv = self.data.get("num_key_value_heads")
        said = f" ({kv})" if isinstance(kv, int) and not isinstance(kv, bool) else ""
        latent = f" = {kv_rank + rope}" if kv_rank is not None and rope is not None else ""
        self.comment(f"num_key_value_heads{said} is not imported: with MLA the KV cache is one latent "
                     "per token,")
        self.comment(f"shared by all heads: kv_lora_rank + qk_rope_head_dim{latent} values (kv_width), not")
        self.comment("per-head K and V. head_dim is the kind's qk_nope_dim + qk_rope_dim.")
        mtp = self.data.get("num_nextn_predict_layers")
        if isinstance(mtp, int) and not isinstance(mtp, bool) and mtp > 0:
            self.comment(f"num_nextn_predict_layers ({mtp}): the multi-token-prediction module is not "
                         "part of")
            self.comment("the main model and is not counted.")

    def mlp(self) -> None:
        assert self.arch is not None
        act = self.data.get("hidden_act", self.data.get("hidden_activation"))
        shown = f" (hidden_act {act})" if isinstance(act, str) and _WORD.fullmatch(act) else ""
        self.emit("mlp_matrices", 3, f"config.json model_type {self.model_type}{shown}: gated MLP "
                                     f"({self.arch.mlp}: gate, up and down projections)")
        if self.flag("mlp_bias"):
            self.unsupported("mlp_bias", "MLP biases (`mlp_bias: true`)", "biases on the MLP projections",
                             "the `decoder` kind has no MLP bias terms; write this model's instance by hand")

    def embeddings(self) -> None:
        assert self.arch is not None
        tied = self.flag("tie_word_embeddings")
        if tied is not None:
            self.emit("tied_embeddings", tied, "config.json tie_word_embeddings")
        elif "tie_word_embeddings" not in self.data or self.data["tie_word_embeddings"] is None:
            default = self.arch.tied_default
            said = "true" if default else "false"
            self.emit("tied_embeddings", default,
                      f"config.json tie_word_embeddings absent: {self.arch.config_class} default {said}")

    def biases(self) -> None:
        assert self.arch is not None
        if self.arch.kind == "mla_decoder":
            return
        if self.arch.bias == "always":
            self.emit("qkv_bias", True,
                      f"config.json model_type {self.model_type}: Q, K and V projections carry biases")
        elif self.arch.bias == "none":
            self.emit("qkv_bias", False, f"config.json model_type {self.model_type}: no attention biases")
        else:
            bias = self.flag("attention_bias")
            if bias is not None:
                self.emit("qkv_bias", bias, "config.json attention_bias")
            elif self.data.get("attention_bias") is None:
                self.emit("qkv_bias", False,
                          f"config.json attention_bias absent: {self.arch.config_class} default false")

    def norms(self) -> None:
        """Norms beyond Llama's two per layer: facts of the model type's code, not of config.json."""
        assert self.arch is not None
        if self.arch.norms == "four":
            self.emit("norms_per_layer", 4, f"config.json model_type {self.model_type}: input, post_attention, "
                      "pre_feedforward and post_feedforward RMSNorms per layer")
        elif self.arch.norms == "qk":
            self.emit("qk_norm", True, f"config.json model_type {self.model_type}: q_norm and k_norm, RMSNorm(head_dim)")

    def windows(self, layers: int | None) -> None:
        assert self.arch is not None
        rule = self.arch.window
        if rule == "none" or layers is None:
            return
        present = "sliding_window" in self.data
        window = self.integer("sliding_window") if present else self.arch.window_default
        if present and self.data["sliding_window"] is not None and window is None:
            return  # a bad value, reported
        where = "config.json sliding_window" if present else \
            f"config.json sliding_window absent: {self.arch.config_class} default {window}"
        if rule == "qwen":
            enabled = self.flag("use_sliding_window")
            if not enabled:
                said = "false" if enabled is False else f"absent: {self.arch.config_class} default false"
                self.emit("local_layers", 0, f"config.json use_sliding_window {said}: every layer attends "
                                             "to the whole context")
                return
        elif rule == "all" and self.flag("use_sliding_window") is False:
            self.emit("local_layers", 0,
                      "config.json use_sliding_window false: every layer attends to the whole context")
            return
        if window is None:
            self.emit("local_layers", 0,
                      "config.json sliding_window null: every layer attends to the whole context")
            return
        local = self.local_layers(rule, layers)
        if local is None:
            return
        count, how = local
        self.emit("local_layers", count, f"config.json {how} ({count} of {layers})")
        self.lines.append(_Line("sliding_window", f"{window} tokens", where))

    def local_layers(self, rule: str, layers: int) -> tuple[int, str] | None:
        """How many layers attend within the window, and the source saying why."""
        types = self.data.get("layer_types")
        if types is not None:
            if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
                self.bad("layer_types", "an array of strings")
                return None
            if len(types) != layers:
                self.contradiction(
                    "layer_types", "num_hidden_layers",
                    f"`layer_types` lists {len(types)} layers but `num_hidden_layers` is {layers}",
                    f"{len(types)} entries", f"{layers} layers", "give `layer_types` one entry per layer",
                )
                return None
            return types.count("sliding_attention"), "layer_types: the `sliding_attention` layers"
        if rule == "all":
            return layers, f"sliding_window, model_type {self.model_type}: every layer attends within " \
                           "the window"
        if rule == "alternate":
            return (layers + 1) // 2, f"sliding_window, model_type {self.model_type}: every other layer, " \
                                      "from the first, attends within the window"
        first = self.integer("max_window_layers", "`decoder` needs it for `local_layers` when "
                             "`use_sliding_window` is true", minimum=0)
        if first is None:
            return None
        return max(0, layers - first), f"use_sliding_window true, max_window_layers {first}: the layers " \
                                       f"from index {first} on attend within the window"

    def experts(self, layers: int | None, intermediate: int | None) -> None:
        assert self.arch is not None
        moe = self.arch.moe
        if moe == "dense":
            return
        routed, per_layer = {"mixtral": ("num_local_experts", "intermediate_size"),
                             "qwen3_moe": ("num_experts", "moe_intermediate_size"),
                             "deepseek": ("n_routed_experts", "moe_intermediate_size")}[moe]
        experts = self.need(routed, "experts")
        chosen = self.need("num_experts_per_tok", "experts_per_token")
        if moe == "deepseek":
            self.deepseek_layers(layers)
        elif moe == "qwen3_moe":
            self.qwen_layers(layers)
        else:
            self.emit("moe_layers", layers or 0,
                      f"config.json num_hidden_layers, model_type {self.model_type}: every layer's MLP is "
                      "a mixture of experts")
        self.emit("experts", experts or 0, f"config.json {routed}")
        self.emit("experts_per_token", chosen or 0, "config.json num_experts_per_tok")
        if moe == "deepseek":
            shared = self.need("n_shared_experts", "shared_experts", minimum=0)
            self.emit("shared_experts", shared or 0, "config.json n_shared_experts")
            self.emit("router_bias", True, f"config.json model_type {self.model_type}: the router's "
                      "e_score_correction_bias, one per routed expert (DeepseekV3TopkRouter)")
        if moe == "mixtral":
            self.emit("expert_intermediate", intermediate or 0,
                      "config.json intermediate_size (each expert is a full-size MLP)")
        else:
            size = self.need(per_layer, "expert_intermediate")
            self.emit("expert_intermediate", size or 0, f"config.json {per_layer}")
        if experts is not None and chosen is not None and chosen > experts:
            self.contradiction(
                "num_experts_per_tok", routed,
                f"`num_experts_per_tok` ({chosen}) exceeds `{routed}` ({experts})",
                f"{chosen} experts per token", f"{experts} experts",
                "a token cannot activate more experts than exist",
            )

    def qwen_layers(self, layers: int | None) -> None:
        given = self.data.get("decoder_sparse_step") is not None
        step = self.integer("decoder_sparse_step") if given else 1
        only = self.data.get("mlp_only_layers", [])
        if only is None:
            only = []
        indices = isinstance(only, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in only)
        if not indices:
            self.bad("mlp_only_layers", "an array of layer indices")
            return
        if step is None or layers is None:
            return
        outside = [i for i in only if not 0 <= i < layers]
        if outside:
            self.contradiction(
                "mlp_only_layers", "num_hidden_layers",
                f"`mlp_only_layers` names layer {outside[0]} but `num_hidden_layers` is {layers}",
                f"layer {outside[0]}", f"layers 0 to {layers - 1}", "layer indices start at 0",
            )
            return
        count = sum(1 for i in range(layers) if i not in only and (i + 1) % step == 0)
        said = "" if given else " (absent: Qwen3MoeConfig default 1)"
        self.emit("moe_layers", count, f"config.json decoder_sparse_step {step}{said}, "
                                       f"mlp_only_layers {only}: the MoE layers ({count} of {layers})")

    def deepseek_layers(self, layers: int | None) -> None:
        dense = self.need("first_k_dense_replace", "dense_layers", minimum=0)
        freq = self.integer("moe_layer_freq") if self.data.get("moe_layer_freq") is not None else 1
        if dense is None or layers is None or freq is None:
            return
        if dense > layers:
            self.contradiction(
                "first_k_dense_replace", "num_hidden_layers",
                f"`first_k_dense_replace` ({dense}) exceeds `num_hidden_layers` ({layers})",
                f"{dense} dense layers", f"{layers} layers",
                "the leading dense layers are some of the layers",
            )
            return
        self.emit("dense_layers", dense, "config.json first_k_dense_replace")
        if freq != 1:
            count = sum(1 for i in range(dense, layers) if i % freq == 0)
            self.emit("moe_layers", count, f"config.json first_k_dense_replace {dense}, "
                                           f"moe_layer_freq {freq}: the MoE layers ({count} of {layers})")

    # -- output -----------------------------------------------------------------------------

    def render(self) -> str:
        architectures = self.data.get("architectures")
        names = [a for a in architectures if isinstance(a, str) and _WORD.fullmatch(a)] \
            if isinstance(architectures, list) else []
        arch = f", architectures {', '.join(names)}" if names else ""
        where = " ".join(self.shown.split())
        config_class = self.arch.config_class if self.arch else "config class"
        out = [
            f"# {self.name}, imported by `plan import-hf` from {where}",
            f"# (model_type {self.model_type}{arch}).",
            "# Every value comes from that file; where the file leaves a field out, the source names",
            f"# the default of transformers' {config_class} that applies.",
            f"{self.kind} {self.name} {{",
        ]
        for line in self.lines:
            if line.input is None:
                out.append(f"  # {line.value}")
            else:
                out.append(f"  {line.input} = {line.value} source {plan_string(line.source)}")
        out.append("}")
        return "\n".join(out) + "\n"
