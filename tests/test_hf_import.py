"""`plan import-hf`: a Hugging Face config.json becomes a model instance that compiles.

The fixtures in `tests/fixtures/hf/` are hand copies of the published config.json files (see the
report of the change for where each was read); each import is compiled and pinned to the model's
published parameter count and to its KV-cache size per token.
"""

from __future__ import annotations

import ast
import json
import socket
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from planc.cli import main
from planc.hf_import import ARCHITECTURES, import_config
from planc.pipeline import compile_plan

from .conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "hf"
MODULE = REPO / "compiler" / "hf_import.py"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def imported(tmp_path: Path, fixture: str, name: str) -> tuple[str, dict[str, Any]]:
    """Import a fixture with the CLI, check the plan it wrote, and return (text, values)."""
    out = tmp_path / f"{name}.plan"
    code, _, err = run("import-hf", str(FIXTURES / f"{fixture}.json"), "--name", name, "-o", str(out))
    assert code == 0, err
    assert f"wrote {out}" in err
    text = out.read_text(encoding="utf-8")
    assert run("check", str(out))[0] == 0
    compilation = compile_plan(out)
    assert compilation.ok and compilation.exit_code == 0, [d.message for d in compilation.diagnostics]
    assert compilation.lowered is not None
    prefix = f"{name}."
    values = {k[len(prefix):]: v for k, v in compilation.lowered.values.items() if k.startswith(prefix)}
    return text, values


def fields(text: str) -> dict[str, tuple[str, str]]:
    """`input -> (value, source)` for each field line of the generated instance."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if " = " in line and " source " in line and not line.startswith("#"):
            name, rest = line.split(" = ", 1)
            value, source = rest.split(" source ", 1)
            out[name] = (value, json.loads(source))
    return out


def kv_per_token(values: dict[str, Any]) -> Fraction:
    return values["kv_width"] * values["layers"]


def near(value: Fraction, published: float, tolerance: float = 0.005) -> bool:
    return abs(float(value) / published - 1) <= tolerance


# ---- the published models -----------------------------------------------------------------

ALL = ["llama-3.1-8b", "mistral-7b-v0.1", "mixtral-8x7b", "qwen2.5-7b", "qwen3-30b-a3b", "deepseek-v3", "gemma-2-27b"]


@pytest.mark.parametrize("fixture", ALL)
def test_every_field_cites_its_config_field(tmp_path: Path, fixture: str) -> None:
    text, _ = imported(tmp_path, fixture, "m")
    config = json.loads((FIXTURES / f"{fixture}.json").read_text(encoding="utf-8"))
    lines = text.splitlines()
    assert lines[0].startswith("# m, imported by `plan import-hf` from ") and f"{fixture}.json" in lines[0]
    assert f"model_type {config['model_type']}" in lines[1]
    assert f"{ARCHITECTURES[config['model_type']].kind} m {{" in text
    found = fields(text)
    assert found, text
    for name, (_, source) in found.items():
        assert source.startswith("config.json "), (name, source)
        key = source.split()[1].rstrip(",:")
        assert key in config or "absent" in source, (name, source)


def test_llama_3_1_8b(tmp_path: Path) -> None:
    text, v = imported(tmp_path, "llama-3.1-8b", "llama_3_1_8b")
    assert v["params"] == 8_030_261_248  # meta-llama/Llama-3.1-8B, as stdlib/models/llama-3.1-8b.plan
    assert kv_per_token(v) == 65_536  # 2 · 8 KV heads · 128 · 32 layers
    f = fields(text)
    assert f["kv_heads"] == ("8", "config.json num_key_value_heads")
    assert "head_dim" not in f and v["head_dim"] == 128  # absent: the kind's hidden / heads
    assert f["max_context"] == ("131072 tokens", "config.json max_position_embeddings")
    assert f["tied_embeddings"][0] == "false" and f["qkv_bias"][0] == "false"
    assert f["mlp_matrices"][0] == "3"
    stdlib = compile_plan(REPO / "stdlib" / "models" / "llama-3.1-8b.plan")
    assert stdlib.lowered is not None
    for key in ("params", "kv_width", "active_params", "attention_width"):
        assert v[key] == stdlib.lowered.values[f"llama_3_1_8b.{key}"], key


def test_mistral_slides_every_layer(tmp_path: Path) -> None:
    text, v = imported(tmp_path, "mistral-7b-v0.1", "mistral_7b")
    assert v["params"] == 7_241_732_096  # mistralai/Mistral-7B-v0.1
    assert v["local_layers"] == v["layers"] == 32 and v["global_layers"] == 0
    assert v["sliding_window"] == 4096
    assert fields(text)["sliding_window"] == ("4096 tokens", "config.json sliding_window")


def test_mixtral_total_and_active(tmp_path: Path) -> None:
    _, v = imported(tmp_path, "mixtral-8x7b", "mixtral")
    assert near(v["params"], 46.7e9) and near(v["active_params"], 12.9e9)  # Mixtral paper: 46.7 B / 12.9 B
    assert v["moe_layers"] == 32 and v["experts"] == 8 and v["experts_per_token"] == 2
    assert v["expert_intermediate"] == 14336
    assert v["local_layers"] == 0  # "sliding_window": null
    assert kv_per_token(v) == 65_536


def test_qwen2_5_has_qkv_bias_and_no_window(tmp_path: Path) -> None:
    text, v = imported(tmp_path, "qwen2.5-7b", "qwen")
    f = fields(text)
    assert f["qkv_bias"][0] == "true" and "qwen2" in f["qkv_bias"][1]
    assert f["local_layers"][0] == "0" and "use_sliding_window false" in f["local_layers"][1]
    assert v["params"] == 7_615_616_512  # Qwen2.5-7B: 7.61 B, Q/K/V biases included
    assert kv_per_token(v) == 28_672


def test_qwen3_moe_takes_head_dim_and_expert_sizes_from_the_config(tmp_path: Path) -> None:
    text, v = imported(tmp_path, "qwen3-30b-a3b", "qwen3")
    assert v["head_dim"] == 128 and v["hidden"] / v["heads"] == 64  # head_dim is explicit and differs
    assert v["moe_layers"] == 48 and v["experts"] == 128 and v["experts_per_token"] == 8
    assert v["expert_intermediate"] == 768 and v["shared_experts"] == 0
    assert fields(text)["qk_norm"][0] == "true"  # a fact of the model type: its per-head q/k norms
    assert v["params"] == 30_532_122_624  # Hugging Face num_parameters() (keras-hub qwen3_moe preset)
    assert 3.3e9 <= v["active_params"] < 3.4e9  # Qwen3-30B-A3B: 3.3 B activated


def test_deepseek_v3_is_mla(tmp_path: Path) -> None:
    text, v = imported(tmp_path, "deepseek-v3", "deepseek_v3")
    assert "mla_decoder deepseek_v3 {" in text
    assert v["params"] == 671_026_419_200  # the main model's tensors (MTP excluded), as stdlib/models
    assert fields(text)["router_bias"][0] == "true"
    assert kv_per_token(v) == 35_136  # (512 latent + 64 RoPE key) · 61 layers
    f = fields(text)
    assert "kv_heads" not in f and "head_dim" not in f
    assert "# num_key_value_heads (128) is not imported" in text  # the red herring is named
    assert v["kv_heads"] == v["heads"] == 128 and v["kv_shards"] == 1
    assert v["dense_layers"] == 3 and v["moe_layers"] == 58
    assert v["experts"] == 256 and v["shared_experts"] == 1 and v["expert_intermediate"] == 2048


def test_gemma_2_alternates_windows_and_ties_embeddings(tmp_path: Path) -> None:
    text, v = imported(tmp_path, "gemma-2-27b", "gemma")
    assert v["local_layers"] == 23 and v["global_layers"] == 23 and v["sliding_window"] == 4096
    f = fields(text)
    assert f["tied_embeddings"] == ("true", "config.json tie_word_embeddings absent: Gemma2Config default true")
    assert f["mlp_matrices"][0] == "3"  # GeGLU is gated although hidden_act is a GELU
    assert v["head_dim"] == 128  # explicit: hidden / heads would be 144
    assert f["norms_per_layer"][0] == "4"  # pre- and post-norms around attention and the MLP
    assert v["params"] == 27_227_128_320  # Hugging Face num_parameters() (keras-hub gemma2_27b_en preset)


def test_absent_kv_heads_means_mha(tmp_path: Path) -> None:
    config = json.loads((FIXTURES / "llama-3.1-8b.json").read_text(encoding="utf-8"))
    del config["num_key_value_heads"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    result = import_config(path, "mha")
    assert result.ok and result.text is not None
    assert fields(result.text)["kv_heads"] == ("32", "config.json num_key_value_heads absent: MHA, = heads")


def write(tmp_path: Path, fixture: str, **changes: Any) -> Path:
    config = json.loads((FIXTURES / f"{fixture}.json").read_text(encoding="utf-8"))
    config.update(changes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    return path


def test_qwen_sliding_window_when_enabled_starts_at_max_window_layers(tmp_path: Path) -> None:
    result = import_config(write(tmp_path, "qwen2.5-7b", use_sliding_window=True, max_window_layers=20), "q")
    assert result.text is not None
    f = fields(result.text)
    assert f["local_layers"][0] == "8" and f["sliding_window"][0] == "131072 tokens"


def test_a_left_out_window_takes_the_config_class_default(tmp_path: Path) -> None:
    path = write(tmp_path, "mistral-7b-v0.1")
    config = json.loads(path.read_text(encoding="utf-8"))
    del config["sliding_window"]
    path.write_text(json.dumps(config), encoding="utf-8")
    result = import_config(path, "m")
    assert result.text is not None
    assert fields(result.text)["sliding_window"] == (
        "4096 tokens", "config.json sliding_window absent: MistralConfig default 4096")


def test_output_is_deterministic_and_may_go_to_stdout(tmp_path: Path) -> None:
    config = str(FIXTURES / "deepseek-v3.json")
    first = run("import-hf", config, "--name", "ds", "-o", "-")
    second = run("import-hf", config, "--name", "ds", "-o", "-")
    assert first[0] == 0 and first[1] == second[1] and first[1].startswith("# ds, imported")


# ---- problems: a diagnostic, exit 2, nothing written ----------------------------------------


def llama(**changes: Any) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((FIXTURES / "llama-3.1-8b.json").read_text(encoding="utf-8"))
    for key, value in changes.items():
        if value is _DROP:
            del config[key]
        else:
            config[key] = value
    return config


_DROP = object()


def fails(tmp_path: Path, text: str, code: str) -> Any:
    """Import `text` with the CLI: exit 2, `code` reported, no plan written. Returns the diagnostic."""
    path = tmp_path / "config.json"
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "out.plan"
    exit_code, stdout, err = run("import-hf", str(path), "--name", "m", "-o", str(out))
    assert exit_code == 2, err
    assert f"error[{code}]" in err and not stdout
    assert not out.exists()
    result = import_config(path, "m")
    assert not result.ok and result.text is None and result.exit_code == 2
    (diag,) = [d for d in result.diagnostics if d.code == code]
    return diag


def test_e0601_invalid_json_points_at_the_decoder_position(tmp_path: Path) -> None:
    text = json.dumps(llama(), indent=2)[:-2] + ",\n}"  # a trailing comma
    d = fails(tmp_path, text, "E0601")
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        assert d.primary.span.start == exc.pos
    assert d.secondary[0].span.text == ","


def test_e0601_for_an_empty_file(tmp_path: Path) -> None:
    d = fails(tmp_path, "", "E0601")
    assert d.primary.span.start == 0


def test_e0602_missing_field_names_field_and_kind(tmp_path: Path) -> None:
    d = fails(tmp_path, json.dumps(llama(num_attention_heads=_DROP), indent=2), "E0602")
    assert "`num_attention_heads`" in d.message and "`decoder` needs it for `heads`" in d.message
    assert d.primary.span.start == 0  # nothing in the file to point at: its start


def test_e0602_for_the_mla_kind_and_for_null(tmp_path: Path) -> None:
    config = json.loads((FIXTURES / "deepseek-v3.json").read_text(encoding="utf-8"))
    del config["kv_lora_rank"]
    config["v_head_dim"] = None
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    result = import_config(path, "m")
    missing = {d.message: d for d in result.diagnostics if d.code == "E0602"}
    assert set(missing) == {
        "`" + str(path) + "` gives no value for `kv_lora_rank`: `mla_decoder` needs it for `kv_lora_rank`",
        "`" + str(path) + "` gives no value for `v_head_dim`: `mla_decoder` needs it for `v_head_dim`",
    }
    null = next(d for d in missing.values() if "v_head_dim" in d.message)
    assert null.primary.span.text == "null"


def contradiction(tmp_path: Path, config: dict[str, Any], first: str, second: str) -> Any:
    text = json.dumps(config, indent=2)
    d = fails(tmp_path, text, "E0603")
    assert text[: d.primary.span.start].endswith(f'"{first}": ')
    assert d.primary.span.text == json.dumps(config[first])
    (other,) = d.secondary
    assert text[: other.span.start].endswith(f'"{second}": ')
    return d


def test_e0603_more_kv_heads_than_heads(tmp_path: Path) -> None:
    d = contradiction(tmp_path, llama(num_key_value_heads=64), "num_key_value_heads", "num_attention_heads")
    assert "exceeds" in d.message


def test_e0603_heads_not_a_multiple_of_kv_heads(tmp_path: Path) -> None:
    d = contradiction(tmp_path, llama(num_key_value_heads=12), "num_attention_heads", "num_key_value_heads")
    assert "not a multiple" in d.message


def test_e0603_hidden_not_divisible_without_head_dim(tmp_path: Path) -> None:
    d = contradiction(tmp_path, llama(hidden_size=4100), "hidden_size", "num_attention_heads")
    assert "no `head_dim`" in d.message
    # with an explicit head_dim the same sizes are fine
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(llama(hidden_size=4100, head_dim=128)), encoding="utf-8")
    assert import_config(path, "m").ok


def test_e0603_more_experts_per_token_than_experts(tmp_path: Path) -> None:
    config = json.loads((FIXTURES / "mixtral-8x7b.json").read_text(encoding="utf-8"))
    config["num_experts_per_tok"] = 9
    contradiction(tmp_path, config, "num_experts_per_tok", "num_local_experts")


def test_e0604_unsupported_architecture_lists_the_supported(tmp_path: Path) -> None:
    gpt2 = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 768, "n_head": 12,
            "n_layer": 12, "vocab_size": 50257}
    d = fails(tmp_path, json.dumps(gpt2, indent=2), "E0604")
    assert d.primary.span.text == '"gpt2"'
    assert d.help is not None and all(f"`{t}`" in d.help for t in ARCHITECTURES)


def test_e0605_value_of_the_wrong_type(tmp_path: Path) -> None:
    d = fails(tmp_path, json.dumps(llama(num_hidden_layers="32"), indent=2), "E0605")
    assert d.primary.span.text == '"32"'


def test_missing_file_is_e0001_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out.plan"
    code, _, err = run("import-hf", str(tmp_path / "nope.json"), "--name", "m", "-o", str(out))
    assert code == 2 and "error[E0001]" in err and not out.exists()


def test_bad_instance_name_is_a_usage_error(tmp_path: Path) -> None:
    for name in ("3b", "my-model", "if", "decoder", "traffic"):  # not a name, a keyword, a stdlib name
        code, _, err = run("import-hf", str(FIXTURES / "llama-3.1-8b.json"), "--name", name,
                           "-o", str(tmp_path / "x.plan"))
        assert code == 2 and "--name" in err
    assert not (tmp_path / "x.plan").exists()


def test_every_keyword_of_the_grammar_is_refused_as_a_name() -> None:
    """The reserved words come from the grammar, so a keyword added to it (`figure`, `lever`,
    `advise`) is refused at once, as those of a hand-kept list once were not."""
    from planc.hf_import import name_problem
    from planc.syntax.highlight import keywords

    words = keywords()
    assert {"if", "kind", "where", "figure", "lever", "advise", "finding", "gate", "spec", "log2"} <= words
    assert all("keyword" in (name_problem(w) or "") for w in words)
    assert name_problem("llama_3_1_8b") is None


# ---- never the network --------------------------------------------------------------------


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("plan import-hf tried to open a network connection")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


@pytest.mark.usefixtures("no_network")
def test_a_url_is_a_usage_error_not_a_download(tmp_path: Path) -> None:
    out = tmp_path / "m.plan"
    url = "https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json"
    code, _, err = run("import-hf", url, "--name", "m", "-o", str(out))
    assert code == 2 and "URL" in err and "local file" in err
    assert not out.exists()


@pytest.mark.usefixtures("no_network")
def test_an_import_runs_without_the_network(tmp_path: Path) -> None:
    out = tmp_path / "m.plan"
    assert run("import-hf", str(FIXTURES / "qwen3-30b-a3b.json"), "--name", "m", "-o", str(out))[0] == 0
    assert out.exists()


def test_the_importer_imports_nothing_that_reaches_the_network() -> None:
    tree = ast.parse(MODULE.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    assert not names & {"urllib", "urllib3", "http", "requests", "httpx", "socket", "huggingface_hub", "aiohttp"}
