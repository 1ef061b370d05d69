"""The commands a new user reaches for after `compile` and `check`: `plan explain`, `plan flags`,
`plan init`, `plan check --format json`, `plan schema`, and the report format that follows `-o`'s suffix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from planc.cli import main
from planc.diagnostics import CODES

from .conftest import REPO
from .flagship import FLAGSHIP as FIGURES

EXAMPLE = REPO / "examples" / "100m_dau.plan"


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


# ---- plan explain -------------------------------------------------------------------------


def test_explain_prints_the_page_of_every_code() -> None:
    for code in CODES:
        status, out, err = run("explain", code)
        assert status == 0, err
        assert out == (REPO / "docs" / "errors" / f"{code}.md").read_text(encoding="utf-8")


def test_explain_accepts_any_case_and_missing_zeros() -> None:
    expected = run("explain", "E0302")[1]
    assert expected.startswith("# E0302: dimension mismatch\n")
    for spelling in ("e0302", "E302", " e302 "):
        assert run("explain", spelling)[1] == expected


def test_explain_an_unknown_code_is_a_diagnostic_with_a_suggestion() -> None:
    status, out, err = run("explain", "E0320")
    assert status == 2 and out == ""
    assert err.startswith("error: `E0320` is not a diagnostic code of plan\n")
    assert "= help: did you mean `E0302` (dimension mismatch)?" in err
    status, _, err = run("explain", "hello")
    assert status == 2 and "did you mean" not in err and "`plan explain` with no code lists every code" in err
    # terminal text stays printable
    status, _, err = run("explain", "E\x1b[31m1")
    assert status == 2 and "\x1b" not in err


def test_explain_without_a_code_lists_the_catalogue() -> None:
    status, out, _ = run("explain")
    assert status == 0
    lines = out.splitlines()
    assert len(lines) == len(CODES)
    assert "E0302  error    dimension mismatch" in lines and "W0407  warning  physics advice" in lines


# ---- plan check --format json -------------------------------------------------------------


def test_check_json_gives_numbers_with_units_and_the_same_verdicts() -> None:
    status, out, err = run("check", str(EXAMPLE), "--format", "json")
    assert status == 0 and err == ""
    data = json.loads(out)
    assert data["schema"] == "plan.check/1" and data["valid"] is True and data["exit_code"] == 0
    assert data["failed"] == 0 and data["diagnostics"] == []
    text = run("check", str(EXAMPLE))[1].splitlines()
    assert len(data["checks"]) == len(text) == 4
    memory = data["checks"][0]
    assert memory["label"] == "the weights and the engine's overheads fit, leaving room for KV" and memory["holds"] is True
    line = next(n for n, text in enumerate(EXAMPLE.read_text(encoding="utf-8").splitlines(), 1)
                if text.startswith("check chat.weight_bytes_per_device"))
    assert memory["comparison"] == "<=" and memory["location"] == f"{EXAMPLE}:{line}"
    assert memory["left"]["unit"] == memory["right"]["unit"] == memory["margin"]["unit"] == "B"
    assert memory["left"]["text"] == "21.59 GiB" and memory["margin"]["text"].startswith("51.25 GiB")
    assert abs(memory["margin"]["value"] - (memory["right"]["value"] - memory["left"]["value"])) < 1
    assert abs(memory["margin"]["relative"] - memory["margin"]["value"] / memory["right"]["value"]) < 1e-12
    tpot = data["checks"][1]
    assert tpot["left"]["unit"] == "s" and 0.02 < tpot["left"]["value"] < 0.04 and tpot["right"]["value"] == 0.04
    # deterministic
    assert run("check", str(EXAMPLE), "--format", "json")[1] == out


def test_check_json_keeps_the_exit_codes(tmp_path: Path) -> None:
    failing = tmp_path / "fail.plan"
    failing.write_text("let a = 3 GB\ncheck a <= 2 GB \"small\"\ncheck a == a\n", encoding="utf-8")
    status, out, _ = run("check", str(failing), "--format", "json")
    data = json.loads(out)
    assert status == 1 and data["exit_code"] == 1 and data["failed"] == 1
    small, same = data["checks"]
    assert small["holds"] is False and small["margin"]["value"] == -1e9 and small["margin"]["relative"] == -0.5
    assert same["holds"] is True and same["comparison"] == "==" and same["margin"] is None
    bad = tmp_path / "bad.plan"
    bad.write_text("let x = 1 GB + 1 s\n", encoding="utf-8")
    status, out, err = run("check", str(bad), "--format", "json")
    data = json.loads(out)
    assert status == 2 and err == "" and data["valid"] is False and data["checks"] == []
    assert [d["code"] for d in data["diagnostics"]] == ["E0302"] and data["diagnostics"][0]["primary"]["line"] == 1
    # diagnostics on stderr as well when asked, and the old `--format short` still means them
    status, _, err = run("check", str(bad), "--format", "json", "--diagnostics", "short")
    assert status == 2 and err.startswith(f"{bad}:1:")
    status, out, err = run("check", str(bad), "--format", "short")
    assert status == 2 and out == "" and err.startswith(f"{bad}:1:")


def test_check_json_is_documented() -> None:
    from .test_report_json import _documented

    documented = _documented()
    data = json.loads(run("check", str(EXAMPLE), "--format", "json")[1])
    assert documented["`plan check --format json`: schema `plan.check/1`"] == set(data)
    assert all(set(c) == documented["check result"] for c in data["checks"])
    import jsonschema
    from planc.report.machine import schema_path

    jsonschema.validate(data, json.loads(schema_path("plan.check").read_text(encoding="utf-8")),
                        cls=jsonschema.Draft202012Validator)


# ---- the report format follows -o; missing optional libraries are said -------------------


def test_the_format_follows_the_output_suffix(tmp_path: Path) -> None:
    # which writer a suffix picks does not depend on the plan: a small one shows it in a tenth of
    # the time (the flagship's documents in every format are the goldens' and test_cli's)
    plain = tmp_path / "plain.plan"
    plain.write_text('title "Small"\nlet a = 1 GB\ncheck a < 2 GB\n', encoding="utf-8")
    for name, starts in (("doc.json", b"{"), ("doc.html", b"<!DOCTYPE html>"), ("doc.md", b"# Small"),
                         ("doc.MARKDOWN", b"# Small"), ("doc.txt", b"# Small"), ("small.pdf", b"%PDF")):
        status, _, err = run("compile", str(plain), "-o", str(tmp_path / name))
        assert status == 0, (name, err)
        assert (tmp_path / name).read_bytes().lstrip().startswith(starts), name
    # an explicit --format that agrees with the suffix is fine; --format wins over an unknown suffix
    assert run("compile", str(plain), "--format", "json", "-o", str(tmp_path / "agree.json"))[0] == 0
    assert run("compile", str(plain), "--format", "json", "-o", str(tmp_path / "report.txt"))[0] == 0
    assert (tmp_path / "report.txt").read_text(encoding="utf-8").startswith("{")
    # the flagship once, to Markdown by its suffix: a plan with questions and levers takes the same path
    status, _, err = run("compile", str(EXAMPLE), "-o", str(tmp_path / "flagship.md"))
    assert status == 0, err
    assert (tmp_path / "flagship.md").read_text(encoding="utf-8").startswith("# Chat assistant")
    status, _, _ = run("diff", str(plain), str(plain), "-o", str(tmp_path / "diff.json"))
    assert status == 0 and json.loads((tmp_path / "diff.json").read_text(encoding="utf-8"))


def test_a_format_that_contradicts_the_suffix_is_a_usage_error(tmp_path: Path) -> None:
    status, _, err = run("compile", str(EXAMPLE), "--format", "pdf", "-o", str(tmp_path / "out.html"))
    assert status == 2
    assert "--format pdf contradicts -o" in err and "out.html" in err and "an HTML file" in err
    status, _, err = run("diff", str(EXAMPLE), str(EXAMPLE), "--format", "md", "-o", str(tmp_path / "d.json"))
    assert status == 2 and "--format md contradicts" in err and "a JSON file" in err
    status, _, err = run("diff", str(EXAMPLE), str(EXAMPLE), "-o", str(tmp_path / "d.pdf"))
    assert status == 2 and "does not write" in err and "Markdown or JSON" in err
    assert not list(tmp_path.iterdir())


def _without(monkeypatch: object, *modules: str) -> None:
    """Make `import module` fail as it does where the library is not installed."""
    import sys

    for name in list(sys.modules):
        if any(name == m or name.startswith(m + ".") for m in modules):
            monkeypatch.delitem(sys.modules, name)  # type: ignore[attr-defined]
    for m in modules:
        monkeypatch.setitem(sys.modules, m, None)  # type: ignore[attr-defined]


def test_html_without_matplotlib_says_its_figures_are_missing(tmp_path: Path, monkeypatch: object) -> None:
    _without(monkeypatch, "matplotlib")
    out = tmp_path / "doc.html"
    status, _, err = run("compile", str(EXAMPLE), "-o", str(out))
    assert status == 0 and out.is_file()
    assert "plan: warning: the HTML report has no figures" in err and "pip install 'plan-compiler[pdf]'" in err
    assert "<figure" not in out.read_text(encoding="utf-8")  # with matplotlib the page has 7
    # a plan that has no figures to draw says nothing
    plain = tmp_path / "plain.plan"
    plain.write_text("let a = 1 GB\ncheck a < 2 GB\n", encoding="utf-8")
    status, _, err = run("compile", str(plain), "-o", str(tmp_path / "plain.html"))
    assert status == 0 and "figures" not in err


def test_pdf_and_figures_without_their_libraries_are_errors(tmp_path: Path, monkeypatch: object) -> None:
    _without(monkeypatch, "matplotlib")
    status, _, err = run("compile", str(EXAMPLE), "-o", str(tmp_path / "doc.pdf"))
    assert status == 2 and "matplotlib" in err and "pip install 'plan-compiler[pdf]'" in err
    status, _, err = run("compile", str(EXAMPLE), "--figures", "-o", str(tmp_path / "doc.md"))
    assert status == 2 and "matplotlib" in err and "pip install 'plan-compiler[pdf]'" in err
    _without(monkeypatch, "weasyprint")
    status, _, err = run("compile", str(EXAMPLE), "--format", "pdf", "-o", str(tmp_path / "doc.pdf"))
    assert status == 2 and "WeasyPrint" in err and "pip install 'plan-compiler[pdf]'" in err
    assert not (tmp_path / "doc.pdf").exists()


# ---- plan flags ---------------------------------------------------------------------------

SMALL = """import "models/llama-3.1-8b"
import "hardware/h100-sxm"
traffic t {
  daily_active_users = 1 M users
  requests_per_user = 10 requests/user/day
  peak_factor = 2
  prompt_tokens = 1000 tokens
  output_tokens = 200 tokens
}
deployment d {
  model = MODEL
  hardware = h100_sxm
  traffic = t
  batch = 32
  tensor_parallel = 2
  DEPLOYMENT
}
EXTRA
"""


def small(tmp_path: Path, deployment: str = "", extra: str = "", model: str = "llama_3_1_8b") -> Path:
    path = tmp_path / "small.plan"
    path.write_text(SMALL.replace("DEPLOYMENT", deployment).replace("EXTRA", extra).replace("MODEL", model),
                    encoding="utf-8")
    return path


def flags_json(*args: str) -> tuple[int, dict, str]:
    """`plan flags --format json`, each document checked against its shipped schema."""
    import jsonschema
    from planc.report.machine import schema_path

    status, out, err = run("flags", *args, "--format", "json")
    data = json.loads(out) if out else {}
    if data:
        jsonschema.validate(data, json.loads(schema_path("plan.flags").read_text(encoding="utf-8")),
                            cls=jsonschema.Draft202012Validator)
    return status, data, err


def test_flags_of_the_flagship_trace_every_value_to_its_quantity() -> None:
    status, out, err = run("flags", str(EXAMPLE))
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("# deployment chat, vLLM (engine vllm): launch it on each of ")
    assert lines[1] == "vllm serve meta-llama/Llama-3.1-70B  ← llama_3_1_70b (the checkpoint its catalog file names)"
    rows = {line.split("←")[0].strip(): line.split("←")[1].strip() for line in lines[2:] if "←" in line}
    assert rows["--tensor-parallel-size 4"] == "chat.tensor_parallel"
    assert rows[f"--max-num-seqs {FIGURES['chat.batch']}"].startswith("chat.batch (the planned batch")
    assert rows["--gpu-memory-utilization 0.92"] == "chat.memory_utilization"
    assert rows["--max-num-batched-tokens 8192"] == "chat.prefill_chunk"
    assert rows["--kv-cache-dtype auto"].startswith("chat.kv (bf16")
    assert rows["--block-size 16"] == "chat.kv_block_size"
    assert rows["--pipeline-parallel-size 1"] == "chat.pipeline_parallel"
    assert rows["--max-model-len 7000"].startswith("chat.context")
    # what the window costs: the prompts longer than it are refused, as the plan computes
    assert rows["--max-model-len 7000"].endswith(f"and refuses longer prompts: {float(FIGURES['chat.refused_share']) * 100:.3g} % of requests, chat.refused_share)")
    assert rows["--quantization fp8"].startswith("chat.weights")
    assert "--enable-expert-parallel" not in out  # a dense model
    assert lines[-1].startswith("vllm serve meta-llama/Llama-3.1-70B --tensor-parallel-size 4 ")
    assert run("flags", str(EXAMPLE))[1] == out  # deterministic


def test_the_refusals_are_stated_from_one_threshold_of_the_stdlib(tmp_path: Path) -> None:
    """`refusals_stated` decides both whether the context window's flag names the refused share and
    which long-context finding the document states: raised above the flagship's 0.649 %, neither
    mentions refusals; at its default, both do."""
    from planc.pipeline import compile_plan

    raised = tmp_path / "raised.plan"
    raised.write_text(EXAMPLE.read_text().replace("deployment chat {\n", "deployment chat {\n  refusals_stated = 0.01\n", 1))
    for plan, stated in ((EXAMPLE, True), (raised, False)):
        out = run("flags", str(plan))[1]
        window = next(line for line in out.splitlines() if line.strip().startswith("--max-model-len"))
        assert ("refuses longer prompts" in window) == stated, window
        lowered = compile_plan(plan).lowered
        assert lowered is not None and bool(lowered.values["chat.refuses_requests"]) == stated
        said = " ".join(" ".join(str(p) for p in f.finding.parts if isinstance(p, str)) for f in lowered.findings)
        assert ("route those to a pool of their own rather than turn them away" in said) == stated
        assert ("or route longer requests to a pool of their own" in said) == (not stated)


def test_flags_values_are_the_compiled_values(tmp_path: Path) -> None:
    from planc.flags import decimal
    from planc.pipeline import compile_plan

    plan = small(tmp_path)
    values = compile_plan(plan).lowered.values
    for engine in ("vllm", "sglang", "trtllm"):
        status, data, err = flags_json(str(plan), "--engine", engine)
        assert status == 0, err
        (launch,) = data["deployments"]
        assert launch["engine"] == engine and launch["plan_engine"] == "vllm"
        checked = 0
        for f in launch["flags"] + launch["config"]:
            if f["quantities"] == [f["quantity"]] and f["quantity"] in values and f["value"] not in (None, "auto"):
                assert f["value"] == decimal(values[f["quantity"]]), f
                checked += 1
        assert checked >= 6, engine
        assert all("." not in f["value"] for f in launch["flags"] if f["flag"] in ("--tp", "--tp_size", "--max-num-seqs"))
        # the words of the command are the flags in order, and the command line is their quoted join
        words = launch["argv"]
        assert " ".join(words) == launch["command"]
        assert any("--engine" in n for n in launch["notes"]) or engine == "vllm"


def test_flags_follow_the_deployments_engine(tmp_path: Path) -> None:
    status, data, _ = flags_json(str(small(tmp_path, "engine = sglang")))
    (launch,) = data["deployments"]
    assert status == 0 and launch["engine"] == "sglang" and launch["argv"][:4] == [
        "python", "-m", "sglang.launch_server", "--model-path"]
    by_flag = {f["flag"]: f for f in launch["flags"]}
    assert by_flag["--tp"]["value"] == "2" and by_flag["--max-running-requests"]["quantity"] == "d.batch"
    assert by_flag["--chunked-prefill-size"]["quantity"] == "d.prefill_chunk"
    assert by_flag["--page-size"]["value"] == "1"  # SGLang's own page size, from engines/sglang
    assert by_flag["--mem-fraction-static"]["quantities"] == ["d.weight_bytes_per_device", "d.kv_budget", "h100_sxm.memory"]
    assert 0.5 < float(by_flag["--mem-fraction-static"]["value"]) < 1
    assert launch["notes"] == []
    # an engine based on a catalog engine is of its family; TensorRT-LLM's free fraction is its own 0.9
    status, data, _ = flags_json(str(small(tmp_path, "engine = trtllm_0_9_xqa")))
    (launch,) = data["deployments"]
    assert launch["engine"] == "trtllm" and launch["plan_engine"] == "trtllm_0_9_xqa"
    by_flag = {f["flag"]: f for f in launch["flags"]}
    assert by_flag["--kv_cache_free_gpu_memory_fraction"]["value"] == "0.9"
    assert by_flag["--max_batch_size"]["value"] == "32" and by_flag["--tp_size"]["value"] == "2"
    assert by_flag["--extra_llm_api_options"]["value"] == "d-trtllm.yaml"
    assert {c["flag"]: c["value"] for c in launch["config"]} == {  # the 0.9 releases ran without CUDA graphs
        "kv_cache_config.dtype": "auto", "kv_cache_config.tokens_per_block": "32", "cuda_graph_config": "null"}
    status, data, _ = flags_json(str(small(tmp_path, "engine = mine", "engine mine = sglang { step_overhead = 0.3 ms }")))
    assert data["deployments"][0]["engine"] == "sglang"


def test_flags_for_precisions_switches_and_experts(tmp_path: Path) -> None:
    plan = small(tmp_path, "kv = fp8\n  weights = fp8\n  cuda_graphs = false")
    out = run("flags", str(plan))[1]
    assert "--kv-cache-dtype fp8" in out and "--quantization fp8" in out and "--enforce-eager  " in out
    out = run("flags", str(plan), "--engine", "sglang")[1]
    assert "--kv-cache-dtype fp8_e4m3" in out and "--disable-cuda-graph" in out
    out = run("flags", str(plan), "--engine", "trtllm")[1]
    assert "  dtype: fp8" in out and "cuda_graph_config: null" in out and "FP8 checkpoint" in out
    moe = REPO / "examples" / "mla_deepseek_v3.plan"
    status, data, _ = flags_json(str(moe))
    (launch,) = data["deployments"]
    ep = [f for f in launch["flags"] if f["flag"] == "--enable-expert-parallel"]
    assert status == 0 and ep and ep[0]["value"] is None and ep[0]["quantity"] == "reasoning.expert_parallel"
    assert launch["checkpoint"] == "deepseek-ai/DeepSeek-V3"
    assert any("fp8_block" in n for n in launch["notes"])
    assert "--ep-size 8 " in run("flags", str(moe), "--engine", "sglang")[1]


def test_flags_say_when_vllm_cannot_run_a_smaller_expert_parallel_group(tmp_path: Path) -> None:
    # Mixtral over TP 4 with whole experts on 2 of its devices: SGLang and TensorRT-LLM take the
    # group's size; vLLM's switch puts whole experts on every TP rank, and its note says so
    def mixtral(fields: str) -> str:
        path = tmp_path / "moe.plan"
        path.write_text(SMALL.replace("llama-3.1-8b", "mixtral-8x7b").replace("MODEL", "mixtral_8x7b")
                        .replace("tensor_parallel = 2", "tensor_parallel = 4").replace("DEPLOYMENT", fields)
                        .replace("EXTRA", ""), encoding="utf-8")
        return str(path)

    status, data, _ = flags_json(mixtral("expert_parallel = 2"))
    [ep] = [f for f in data["deployments"][0]["flags"] if f["flag"] == "--enable-expert-parallel"]
    assert status == 0 and "it runs 4, not 2" in ep["note"]
    assert "--ep-size 2 " in run("flags", mixtral("expert_parallel = 2"), "--engine", "sglang")[1]
    [ep] = [f for f in flags_json(mixtral("expert_parallel = 4"))[1]["deployments"][0]["flags"] if f["flag"] == "--enable-expert-parallel"]
    assert "not" not in ep["note"]
    assert not [f for f in flags_json(mixtral(""))[1]["deployments"][0]["flags"] if "expert" in f["flag"]]


@pytest.mark.parametrize(("deployment", "extra", "name", "verb"), [
    ("tensor_parallel = 4", "", "d.tensor_parallel", "set"),  # an instance
    ("", 'scenario "two" { d.batch = 8; d.batch = 16 }', "d.batch", "set"),  # a scenario
    ("", 'lever "both" { d.batch = 8; d.batch = 16 }', "d.batch", "set"),  # a lever
    ("tpot_slo = step_time where (batch = 8, batch = 16)", "", "batch", "bound"),  # a where
    ("", 'ask "a": maximize d.context subject to d.memory_per_device <= 80 GB given d.batch = 1, d.batch = 2', "d.batch", "set"),
])
def test_a_path_set_twice_is_refused_at_the_second(tmp_path: Path, deployment: str, extra: str, name: str, verb: str) -> None:
    # whichever a later stage kept, the other would be dropped without a word (an instance kept the first)
    plan = small(tmp_path, deployment, extra)
    status, _, err = run("check", str(plan))
    assert status == 2 and "E0202" in err and f"`{name}` is declared more than once" in err, err
    assert f"{verb} again here" in err and f"first {verb} here" in err and "help: keep one of the two" in err
    assert err.count("error[") == 1


def test_flags_select_a_deployment_and_say_what_is_wrong(tmp_path: Path) -> None:
    pools = REPO / "examples" / "mixed_precision_pools.plan"
    status, data, _ = flags_json(str(pools))
    assert status == 0 and [d["deployment"] for d in data["deployments"]] == ["paid_pool", "free_pool"]
    status, data, _ = flags_json(str(pools), "--deployment", "free_pool")
    assert [d["deployment"] for d in data["deployments"]] == ["free_pool"]
    status, out, err = run("flags", str(pools), "--deployment", "free_pol")
    assert status == 2 and out == "" and "has no deployment `free_pol`" in err and "did you mean `free_pool`?" in err
    # no deployment at all
    plain = tmp_path / "plain.plan"
    plain.write_text("let a = 1 GB\n", encoding="utf-8")
    status, out, err = run("flags", str(plain))
    assert status == 2 and out == "" and "declares no deployment" in err and "= help:" in err
    status, _, err = run("flags", str(REPO / "examples" / "recommender.plan"))
    assert status == 2 and "`rank` is a `workload_deployment`" in err
    # an engine of no known family
    status, out, err = run("flags", str(small(tmp_path, "engine = pytorch")))
    assert status == 2 and "engine `pytorch`" in err and "--engine vllm|sglang|trtllm" in err
    assert run("flags", str(small(tmp_path, "engine = pytorch")), "--engine", "vllm")[0] == 0
    # an invalid plan is its diagnostics
    bad = tmp_path / "bad.plan"
    bad.write_text("let x = 1 GB + 1 s\n", encoding="utf-8")
    status, out, err = run("flags", str(bad))
    assert status == 2 and out == "" and "error[E0302]" in err


def test_flags_of_a_model_without_a_checkpoint_and_a_failing_check(tmp_path: Path) -> None:
    plan = small(tmp_path, extra='decoder student = llama_3_1_8b { layers = 16 }\ncheck d.tpot < 1 us "fast"',
                 model="student")
    status, out, err = run("flags", str(plan))
    assert status == 1 and "check(s) of the plan failed" in err
    assert "vllm serve student  ← student\n" in out and "names no published checkpoint" in out


def test_flags_page_shows_what_the_command_prints() -> None:
    import re

    page = (REPO / "docs" / "flags.md").read_text(encoding="utf-8")
    block = re.search(r"```text\n\$ plan flags examples/100m_dau.plan\n(.*?)```", page, re.DOTALL)
    assert block is not None
    shown = [line for line in block.group(1).splitlines() if line and not line.endswith("...")]
    actual = run("flags", str(EXAMPLE))[1].replace(str(EXAMPLE), "examples/100m_dau.plan").splitlines()
    # the replica count of the headline moves with the physics; the page need not follow it
    import re as _re

    def steady(lines: list[str]) -> list[str]:
        return [_re.sub(r"\d+ replicas", "N replicas", line) for line in lines]

    assert steady(shown) == steady([line for line in actual if line][: len(shown)])


# ---- plan init ----------------------------------------------------------------------------

STARTER_HARDWARE = ("h100-sxm", "h200", "mi300x")


def test_every_catalog_model_gets_a_starter_that_compiles(tmp_path: Path) -> None:
    """Every model of the stdlib on a few accelerators: the starter compiles with exit 0 (warnings,
    such as a replica wider than a scale-up domain, allowed), and its two checks hold."""
    from planc import starter
    from planc.pipeline import compile_plan

    models = starter.choices("models")
    assert len(models) >= 20 and "llama-3.1-70b" in models
    for hardware in STARTER_HARDWARE:
        for model in models:
            path = tmp_path / f"{model}-{hardware}.plan"
            path.write_text(starter.starter(model, hardware), encoding="utf-8")
            result = compile_plan(path)
            assert result.exit_code == 0, (model, hardware, [d.message for d in result.diagnostics])
            assert len(result.lowered.checks) == 2 and all(c.holds for c in result.lowered.checks)
            assert len(result.lowered.summary) == 4
    # (how long these compiles take is bench/compile_speed.py's to say: a timed test fails on a busy machine)


def test_init_picks_the_degree_with_the_smallest_fleet(tmp_path: Path) -> None:
    """The starter's tensor parallelism is the one whose fleet is smallest: half and twice the degree
    need more devices (or do not compile), and the source names the fleets it compared. Qwen3-30B-A3B
    on H100 is a case where the degree that first runs 32 sequences (1) is not the cheapest (2)."""
    import re

    from planc import starter
    from planc.pipeline import compile_plan

    text = starter.starter("qwen3-30b-a3b", "h100-sxm")
    match = re.search(r"\n  tensor_parallel = (\d+) ", text)
    assert match
    chosen = int(match.group(1))

    def devices(tp: int) -> float | None:
        path = tmp_path / f"tp{tp}.plan"
        path.write_text(text.replace(f"tensor_parallel = {chosen} ", f"tensor_parallel = {tp} "), encoding="utf-8")
        result = compile_plan(path)
        return float(result.lowered.values["chat.devices"]) if result.exit_code == 0 else None

    fleet = devices(chosen)
    assert fleet is not None and f"{chosen}: {fleet:,.0f}" in text
    assert chosen == 2
    for other in (chosen // 2, chosen * 2):
        other_fleet = devices(other)
        assert other_fleet is None or other_fleet > fleet, (other, other_fleet, fleet)


def test_init_writes_a_commented_starter(tmp_path: Path) -> None:
    out = tmp_path / "my.plan"
    status, _, err = run("init", "--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--dau", "100M", "-o", str(out))
    assert status == 0 and f"wrote {out}" in err
    text = out.read_text(encoding="utf-8")
    assert 'import "models/llama-3.1-70b"' in text and 'import "hardware/h100-sxm"' in text
    assert "traffic chat_traffic {" in text and "deployment chat {" in text
    assert "daily_active_users = 100 M users" in text
    assert "tensor_parallel = 4 " in text and "\n  batch = " not in text  # the flagship's degree; the batch is a result
    # the main knobs, commented, with their defaults and sources from the installed stdlib
    assert "  # weights = bf16\n" in text and "  # tpot_slo = 40 ms\n" in text and "  # engine = vllm\n" in text
    assert "(source: docs/physics.md §14 worked example: TPOT SLO 40 ms)" in text
    assert text.count("\ncheck ") == 2 and "\nsummary chat.devices" in text
    status, _, _ = run("check", str(out))
    assert status == 0
    # every commented knob, uncommented, still compiles: the defaults are written as the kind has them
    knobs = tmp_path / "knobs.plan"
    knobs.write_text(text.replace("  # weights = ", "  weights = ").replace("  # kv = ", "  kv = ")
                     .replace("  # engine = ", "  engine = ").replace("  # context = ", "  context = ")
                     .replace("  # memory_utilization = ", "  memory_utilization = ")
                     .replace("  # tpot_slo = ", "  tpot_slo = "), encoding="utf-8")
    assert run("check", str(knobs))[0] == 0
    # the same arguments give the same bytes; an existing file is kept unless --force
    status, _, err = run("init", "--model", "llama-3.1-70b", "--dau", "100M", "-o", str(out))
    assert status == 2 and "exists" in err and "--force" in err
    assert run("init", "--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--dau", "100M", "-o", str(out),
               "--force")[0] == 0
    assert out.read_text(encoding="utf-8") == text
    status, stdout, _ = run("init", "--model", "llama-3.1-70b", "--dau", "100M", "-o", "-")
    assert status == 0 and stdout == text


def test_init_reads_a_models_hugging_face_id_and_an_accelerators_board(tmp_path: Path) -> None:
    """`--model meta-llama/Meta-Llama-3.1-8B-Instruct --hardware "NVIDIA H200 SXM"` writes the plan
    `--model llama-3.1-8b --hardware h200` does, and says so; a family named alone is still asked."""
    named, stems = tmp_path / "named.plan", tmp_path / "stems.plan"
    status, _, err = run("init", "--model", "meta-llama/Meta-Llama-3.1-8B-Instruct", "--hardware", "NVIDIA H200 SXM",
                         "-o", str(named))
    assert status == 0 and "(llama-3.1-8b on h200;" in err
    assert run("init", "--model", "llama-3.1-8b", "--hardware", "h200", "-o", str(stems))[0] == 0
    assert named.read_text(encoding="utf-8") == stems.read_text(encoding="utf-8")
    status, _, err = run("init", "--hardware", "A100", "-o", str(tmp_path / "a.plan"))
    assert status == 2 and "no hardware `A100`" in err and "did you mean `a100-40gb` or `a100-80gb`" in err


def test_init_refuses_what_it_cannot_write(tmp_path: Path) -> None:
    status, out, err = run("init", "--model", "lama-3.1-8b", "-o", str(tmp_path / "a.plan"))
    assert status == 2 and "no model `lama-3.1-8b`" in err and "did you mean `llama-3.1-8b`" in err
    status, _, err = run("init", "--hardware", "h100", "-o", str(tmp_path / "a.plan"))
    assert status == 2 and "did you mean `h100-pcie` or `h100-sxm`" in err
    status, _, err = run("init", "--dau", "1e6; rm -rf /", "-o", str(tmp_path / "a.plan"))
    assert status == 2 and "--dau" in err
    status, _, err = run("init")
    assert status == 2 and "-o FILE" in err
    # a pair no tensor parallelism serves: said, with the reason at the largest degree tried
    status, _, err = run("init", "--model", "llama-3.1-405b", "--hardware", "l4", "-o", str(tmp_path / "a.plan"))
    assert status == 2 and "no tensor-parallel degree up to 64" in err and "at tensor parallel" in err
    assert not list(tmp_path.iterdir())
    status, out, _ = run("init", "--list")
    assert status == 0 and "llama-3.1-70b" in out and "h100-sxm" in out


def test_physics_prints_the_section_a_source_cites() -> None:
    # a source says "docs/physics.md §5.4": the installed plan prints that section, and a chapter
    # number prints the chapter with its subsections
    code, out, _ = run("physics", "5.4")
    assert code == 0 and out.startswith("### 5.4 The iteration as operators")
    assert "### 5.5" not in out and "The GEMMs, dense and routed-expert, are the operators whose two times are joined by a norm" in out
    code, out, _ = run("physics", "7")
    assert code == 0 and out.startswith("## 7 Latency") and "### 7.6 Queueing" in out and "## 8 " not in out
    code, out, _ = run("physics")
    assert code == 0 and out.startswith("# The physics of the stdlib")
    code, _, err = run("physics", "99")
    assert code == 2 and "no section '99'" in err


def test_check_and_diff_do_not_price_the_levers(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Each lever is a variant of the plan: `plan check` and `plan diff` read neither the levers
    table nor the decision, so they must not pay for it."""
    from planc import solve

    def refuse(self: object) -> list[object]:
        raise AssertionError("the levers were priced")

    monkeypatch.setattr(solve.Solver, "levers", refuse)
    status, out, _ = run("check", str(EXAMPLE))
    assert status == 0 and out.count("pass  ") == 4
    status, out, _ = run("diff", str(EXAMPLE), str(EXAMPLE))
    assert status == 0 and out


def test_check_takes_several_files_and_exits_with_the_worst(tmp_path: Path) -> None:
    """As a pre-commit hook runs it (`.pre-commit-hooks.yaml`): every changed plan at once."""
    failing = tmp_path / "failing.plan"
    failing.write_text(EXAMPLE.read_text(encoding="utf-8") + 'check chat.batch >= 100000 "a batch no device holds"\n',
                       encoding="utf-8")
    broken = tmp_path / "broken.plan"
    broken.write_text("let x = 1 GB + 1 s\n", encoding="utf-8")
    status, out, _ = run("check", str(EXAMPLE), str(failing))
    assert status == 1 and out.count("pass  ") == 8 and out.count("FAIL  ") == 1 and "failing.plan:" in out
    status, out, err = run("check", str(broken), str(EXAMPLE))
    assert status == 2 and "E0302" in err and out.count("pass  ") == 4  # the others are still checked
    status, _, err = run("check", str(EXAMPLE), str(EXAMPLE), "--format", "json")
    assert status == 2 and "checks one FILE" in err


def test_the_pre_commit_hooks_run_plan_check_and_plan_fmt_on_plan_files() -> None:
    import re

    text = (REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    hooks = {block.split("\n", 1)[0].strip(): dict(re.findall(r"^  (\w+): (.+)$", block, re.M))
             for block in text.split("\n- id: ")[1:]}
    assert set(hooks) == {"plan-check", "plan-fmt"}
    assert hooks["plan-check"]["entry"] == "plan check" and hooks["plan-fmt"]["entry"] == "plan fmt"
    for entry in hooks.values():
        assert entry["language"] == "python"
        assert re.search(entry["files"], "plans/chat.plan") and not re.search(entry["files"], "README.md")


# ---- plan schema --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["report", "check", "diff", "flags", "simulate"])
def test_schema_prints_the_shipped_json_schema_of_each_output(name: str) -> None:
    import jsonschema

    status, out, err = run("schema", name)
    assert status == 0 and err == ""
    schema = json.loads(out)
    jsonschema.Draft202012Validator.check_schema(schema)  # a valid schema, of the version its output names
    assert schema["properties"]["schema"]["const"].startswith(f"plan.{name}/")


def test_schema_of_an_unknown_output_is_a_usage_error() -> None:
    status, _, err = run("schema", "launch")
    assert status == 2 and "'launch' is not one of" in err


# ---- progress on stderr -------------------------------------------------------------------


def test_progress_goes_to_a_terminal_and_never_to_a_pipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import click
    from planc import cli

    out = tmp_path / "doc.md"
    status, _, err = run("compile", str(EXAMPLE), "-o", str(out))  # CliRunner's stderr is not a terminal
    assert status == 0 and "compiling" not in err
    said: list[str] = []

    class Terminal:
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(cli.sys, "stderr", Terminal())
    monkeypatch.setattr(click, "echo", lambda message="", err=False, **_: said.append(message) if err else None)
    cli.progress("laying out the PDF pages")
    assert said == ["plan: laying out the PDF pages…"]
