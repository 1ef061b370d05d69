"""The physics pinned to published values (each test names its source)."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import pytest
import sympy as sp
from planc.pipeline import Compilation


def values(c: Compilation) -> dict[str, Fraction | float | bool]:
    assert c.ok, [d.message for d in c.diagnostics]
    assert c.lowered is not None
    return c.lowered.values


def deployment(model: str, weights: str = "bf16", kv: str = "bf16", tp: int = 4) -> str:
    return f"""
import "models/{model}"
import "hardware/h100-sxm"
traffic t {{
  daily_active_users = 1 M users
  requests_per_user = 10 requests/user/day
  peak_factor = 2
  prompt_tokens = 1000 tokens
  output_tokens = 250 tokens
}}
deployment d {{
  model = {model.replace('-', '_').replace('.', '_')}
  hardware = h100_sxm
  traffic = t
  weights = {weights}
  kv = {kv}
  tensor_parallel = {tp}
  batch = 1
  context = 8192 tokens
}}
"""


@pytest.mark.parametrize(("model", "params"), [
    # docs/physics.md §1.1, matching the published checkpoints' parameter counts
    ("llama-3.1-8b", 8_030_261_248),
    ("llama-3.1-70b", 70_553_706_496),
])
def test_parameter_counts(compile_text: Callable[[str], Compilation], model: str, params: int) -> None:
    v = values(compile_text(deployment(model)))
    name = model.replace("-", "_").replace(".", "_")
    assert v[f"{name}.params"] == params


@pytest.mark.parametrize(("model", "kv", "per_token"), [
    # docs/physics.md §3.1: 2 · layers · kv_heads · head_dim · bytes (Databricks, vLLM paper)
    ("llama-3.1-8b", "bf16", 131_072),
    ("llama-3.1-8b", "fp8", 65_536),
    ("llama-3.1-70b", "bf16", 327_680),
])
def test_kv_bytes_per_token(compile_text: Callable[[str], Compilation], model: str, kv: str, per_token: int) -> None:
    v = values(compile_text(deployment(model, kv=kv)))
    assert v["d.kv_bytes_per_token"] == per_token


def test_kv_heads_replicate_when_tensor_parallel_exceeds_them(compile_text: Callable[[str], Compilation]) -> None:
    # docs/physics.md §3.1: with TP = 16 > 8 KV heads each device still holds one head
    v = values(compile_text(deployment("llama-3.1-70b", tp=16)))
    assert v["d.kv_split"] == 8
    assert v["d.kv_bytes_per_token_per_device"] == 327_680 // 8
    v4 = values(compile_text(deployment("llama-3.1-70b", tp=4)))
    assert v4["d.kv_bytes_per_token_per_device"] == 81_920  # docs/physics.md §14 step 3


def test_fp8_checkpoint_weights_keep_embeddings_in_bf16(compile_text: Callable[[str], Compilation]) -> None:
    # docs/physics.md §14 step 2: 68.45 B × 1 B + 2 × 1.0507 B × 2 B = 72.66 GB (67.67 GiB);
    # measured 67.72 GiB for Llama-3.3-70B-FP8 in vLLM (docs/physics.md §4.3)
    v = values(compile_text(deployment("llama-3.1-70b", weights="fp8", tp=4)))
    assert float(v["d.weight_bytes"]) == pytest.approx(72.66e9, rel=1e-3)
    assert float(v["d.weight_bytes"]) / 2**30 == pytest.approx(67.72, rel=2e-3)


def test_ridge_point_h100(compile_text: Callable[[str], Compilation]) -> None:
    # docs/physics.md §5.1: H100-SXM ridge 295 FLOP/B in BF16, 591 in FP8
    assert float(values(compile_text(deployment("llama-3.1-8b")))["d.ridge_point"]) == pytest.approx(295, abs=0.5)
    v = values(compile_text(deployment("llama-3.1-8b", weights="fp8")))
    assert float(v["d.ridge_point"]) == pytest.approx(591, abs=0.5)


def test_prefill_flops_llama_70b(compile_text: Callable[[str], Compilation]) -> None:
    # docs/physics.md §2.2: 138.2 TFLOP to prefill a 1,000-token prompt on Llama-3.1-70B
    v = values(compile_text(deployment("llama-3.1-70b")))
    # prefill_flops is per device: the deployment helper shards the model over TP 4
    assert float(v["d.prefill_flops"]) * 4 == pytest.approx(138.2e12, rel=1e-3)


def test_traffic_chain_worked_example(compile_text: Callable[[str], Compilation]) -> None:
    # docs/physics.md §14 step 1: 100 M DAU × 10 requests/day, peak ×3 → 11,574 → 34,722 requests/s
    text = deployment("llama-3.1-8b").replace("1 M users", "100 M users").replace("peak_factor = 2", "peak_factor = 3")
    v = values(compile_text(text))
    assert float(v["t.average_qps"]) == pytest.approx(11_574.07, rel=1e-6)
    assert float(v["t.peak_qps"]) == pytest.approx(34_722.2, rel=1e-6)
    assert float(v["t.peak_prompt_tokens_per_s"]) == pytest.approx(34.72e6, rel=1e-3)
    assert float(v["t.peak_output_tokens_per_s"]) == pytest.approx(8.68e6, rel=1e-3)


WORST_ATTENTION = "d@tpot_worst@seen_step_time@target_step_time.decode_attention_time"  # the decode step of `tpot_worst`: every sequence at the full context


def test_decode_step_worked_example(compile_text: Callable[[str], Compilation]) -> None:
    # docs/physics.md §14 step 6: Llama-3.1-70B FP8, TP4, 76 sequences at 8,192 tokens, BF16 KV:
    # 17.64 GB weights actually read (the input embedding is a lookup) + 51.0 GB KV per device;
    # 27.3 ms at 75 % of 3.35 TB/s; with TP all-reduces TPOT ≈ 29 ms. The worked example has no
    # kernels' fixed times, per-step engine time or attention's fixed work per piece: with those set
    # to nothing (an engine and an accelerator `bare`) the step reproduces it; the defaults then add
    # exactly those terms.
    # The memory inputs are the worked example's (vLLM 0.11 at 0.9 of the device, its measured
    # activation peak and buffers), not today's defaults.
    bare = ("engine bare = vllm { step_overhead = 0 s; attention_latency[bf16] = 0 s; attention_piece_time[bf16] = 0 s; gemm_latency[fp8] = 0 s }\n"
            "accelerator bare_h100 = h100_sxm { gemm_latency = 0 s; attention_latency = 0 s; kernel_latency = 0 s }\n")
    # static batching: the worked example times decode steps alone (no prefill chunk shares them)
    text = deployment("llama-3.1-70b", weights="fp8", tp=4).replace("batch = 1", "batch = 76\n  mbu = 0.75\n  static_batching = true\n"
        "  memory_utilization = 0.9; activation_peak = 4.84 GiB; non_torch_memory = 1 GiB; cuda_graph_memory = 0.5 GiB")
    v = values(compile_text(bare + text.replace("tensor_parallel = 4", "tensor_parallel = 4\n  engine = bare")
                            .replace("hardware = h100_sxm", "hardware = bare_h100")))
    assert float(v["d.tpot_worst"]) == pytest.approx(0.029, rel=0.05)
    full = values(compile_text(text, name="default.plan"))
    gaps = full["d.kernel_time"] + full["vllm.step_overhead"]
    pieces = (full[WORST_ATTENTION] - v[WORST_ATTENTION])
    assert float(full["d.tpot_worst"]) == pytest.approx(float(v["d.tpot_worst"] + gaps + pieces), rel=1e-12)  # the H100's cube-root norm: floats
    # vLLM's FlashAttention-3 with a BF16 cache: 3.05 µs of an SM for each of 76 sequences × 2 KV
    # heads in 80 layers, shared by 132 SMs (docs/measurements/attention.md); its paged cache streams
    # at the full rate
    assert float(pieces) == pytest.approx(80 * 76 * 2 * 3.05e-6 / 132, rel=1e-9)
    assert float(v["d.gemm_weight_bytes"]) == pytest.approx(17.64e9, rel=1e-3)
    assert float(v["d.kv_bytes_per_device"]) == pytest.approx(51.0e9, rel=2e-3)
    memory_time = float(v["d.gemm_weight_bytes"] + v["d.kv_bytes_per_device"]) / (3.35e12 * 0.75)
    assert memory_time == pytest.approx(0.0273, rel=0.02)
    assert v["d.decode_memory_bound"] is True
    assert float(v["d.kv_capacity_tokens"]) == pytest.approx(629_220, rel=1e-3)  # docs/physics.md §14 step 4
    assert v["d.max_batch"] == 76  # docs/physics.md §14 step 5


def test_gb_and_gib_are_different(compile_text: Callable[[str], Compilation]) -> None:
    v = values(compile_text("let a = 80 GB\nlet b = 80 GiB\n"))
    assert v["a"] == 80 * 10**9 and v["b"] == 80 * 2**30


def test_full_expression_is_over_inputs_only(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(deployment("llama-3.1-8b"))
    assert c.lowered is not None
    full = c.lowered.full("d.memory_per_device")
    inputs = {c.lowered.symbols[n] for n, node in c.lowered.elaborated.nodes.items() if node.is_input}
    assert full.free_symbols <= inputs
    subs = {c.lowered.symbols[n]: sp.Rational(str(c.lowered.values[n]))
            for n, node in c.lowered.elaborated.nodes.items() if node.is_input}
    assert full.xreplace(subs) == sp.Rational(str(c.lowered.values["d.memory_per_device"]))


def test_pipeline_parallel_does_not_cut_per_token_latency(compile_text) -> None:  # type: ignore[no-untyped-def]
    # docs/physics.md §6.2: a token passes the stages one after another. Splitting the layers over two
    # stages halves each device's bytes per step but doubles the stages a token waits for, so the
    # TPOT changes only by the hand-off between the stages
    plan = """
import "models/llama-3.1-70b"
import "hardware/h100-sxm"
traffic t {{ daily_active_users = 1 M users; requests_per_user = 10 requests/user/day; peak_factor = 2
  prompt_tokens = 1000 tokens; output_tokens = 250 tokens }}
deployment d {{ model = llama_3_1_70b; hardware = h100_sxm; traffic = t; weights = bf16; tensor_parallel = 4
  pipeline_parallel = {pp}; batch = 16; context = 4096 tokens }}
"""
    one, two = (compile_text(plan.format(pp=p), name=f"pp{p}.plan") for p in (1, 2))
    assert one.ok and two.ok
    v1, v2 = one.lowered.values, two.lowered.values
    assert v2["d.decode_memory_bound"] is True  # as decode is
    assert v2["d.decode_bytes_per_step"] * 2 == v1["d.decode_bytes_per_step"]  # half the layers per device
    # only the hand-off is added (the GEMMs' roofline norm is a float: equal to rounding)
    assert float(v2["d.step_time"] - v1["d.step_time"]) == pytest.approx(float(v2["d.pp_time_per_step"]), abs=1e-15)
    assert v2["d.pipeline_bubble"] == Fraction(1, 2)
    # the same throughput from twice the devices: each stage idles half the time
    assert v2["d.replica_output_tokens_per_s"] < v1["d.replica_output_tokens_per_s"]
    assert v2["d.replica_devices"] == 2 * v1["d.replica_devices"]


def test_kernel_fusion_saves_the_published_bytes_per_token_and_layer(compile_text: Callable[[str], Compilation]) -> None:
    # docs/physics.md §11: fused residual-add + RMSNorm moves 4·h·b instead of 5·h·b (two norms a
    # layer); fused silu_and_mul 3·I·b instead of 5·I·b, "~28 KiB/token/layer" for 70B at TP4
    v = values(compile_text(deployment("llama-3.1-70b", tp=4)))
    saved = v["d.unfused_elementwise_bytes"] - v["d.fused_elementwise_bytes"]
    per_token_layer = saved / 80  # batch 1, 80 layers
    mlp_part = 2 * 28_672 // 4 * 2
    assert mlp_part == 28 * 1024
    assert per_token_layer == 2 * 8192 * 2 + mlp_part
    # memory-bound: the time saved is those bytes at the achieved bandwidth
    assert v["d.fusion_time_saved"] == saved / (v["h100_sxm.memory_bandwidth"] * v["d.mbu"])
    assert v["d.elementwise_bytes_per_token"] == v["d.fused_elementwise_bytes_per_token"]  # the engine fuses
