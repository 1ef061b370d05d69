"""Step physics v2 (stdlib `deployment`, sections "Step physics", "Decode iteration", "Prefill
iteration"; `engine` profiles; accelerator measurements), each term pinned to a published value
or to the rule it restates, with its source."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import pytest
from planc.pipeline import Compilation

PLAN = """
import "models/{model}"
import "hardware/{gpu}"
traffic t {{ daily_active_users = 1 M users; requests_per_user = 10 requests/user/day; peak_factor = 2
  prompt_tokens = {prompt} tokens; output_tokens = {output} tokens }}
deployment d {{ model = {instance}; hardware = {hw}; traffic = t; batch = {batch}; tensor_parallel = {tp}
  weights = {weights}; engine = {engine} }}
"""


def plan(model: str = "llama-3.1-8b", gpu: str = "h100-sxm", batch: int = 1, tp: int = 1, weights: str = "bf16",
         engine: str = "vllm", prompt: int = 1000, output: int = 250, extra: str = "") -> str:
    return extra + PLAN.format(model=model, instance=model.replace("-", "_").replace(".", "_"), gpu=gpu,
                               hw=gpu.replace("-", "_"), batch=batch, tp=tp, weights=weights, engine=engine,
                               prompt=prompt, output=output)


PREFILL = "d@prefill_chunk_time."  # the iteration of `prefill_chunk_time`: one chunk of the prompt, no decodes


def values(c: Compilation) -> dict[str, Fraction | float | bool]:
    assert c.ok, [d.message for d in c.diagnostics]
    assert c.lowered is not None
    return c.lowered.values


def test_the_input_embedding_is_a_lookup_not_a_read(compile_text: Callable[[str], Compilation]) -> None:
    # Llama-3.1-8B: 8,030,261,248 parameters, 128,256 × 4,096 of them the input embedding; decode
    # streams every other weight (the output head included) once per step
    v = values(compile_text(plan()))
    assert v["d.gemm_weight_bytes"] == (8_030_261_248 - 128_256 * 4_096) * 2 == 15_009_849_344


def test_kernels_without_gqa_reuse_read_the_kv_once_per_query_head(compile_text: Callable[[str], Compilation]) -> None:
    # Llama-2-70B has 64 query heads over 8 KV heads: the masked MHA kernel of TensorRT-LLM 0.5-0.9
    # reads each KV head 8 times a step, XQA once
    legacy = values(compile_text(plan("llama-2-70b", tp=4, engine="trtllm_0_9")))
    xqa = values(compile_text(plan("llama-2-70b", tp=4, engine="trtllm_0_9_xqa"), name="xqa.plan"))
    assert legacy["d.kv_read_factor"] == 8 and xqa["d.kv_read_factor"] == 1
    assert legacy["d.decode_kv_bytes"] == 8 * xqa["d.decode_kv_bytes"]


def test_xqa_of_those_releases_takes_only_heads_of_128_in_groups_of_8(compile_text: Callable[[str], Compilation]) -> None:
    # DecoderXQARunner::shouldUse (TensorRT-LLM 0.6-0.9) refuses head_size != 128 and any grouping
    # but 8 query heads per KV head: Falcon-180B (232 heads of 64 over 8 KV heads) ran the masked
    # MHA kernel with XQA enabled, reading each KV head 29 times; today's XQA takes it
    old = values(compile_text(plan("falcon-180b", gpu="h200", tp=4, weights="fp8", engine="trtllm_0_9_xqa")))
    assert old["d.gqa_kernel"] is False and old["d.kv_read_factor"] == 29
    new = values(compile_text(plan("falcon-180b", gpu="h200", tp=4, weights="fp8", engine="trtllm"), name="new.plan"))
    assert new["d.gqa_kernel"] is True and new["d.kv_read_factor"] == 1
    llama = values(compile_text(plan("llama-2-70b", tp=4, engine="trtllm_0_9_xqa"), name="llama.plan"))
    assert llama["d.gqa_kernel"] is True  # 64 heads of 128 over 8: the shape XQA was written for


def test_tensorrt_engines_without_an_attention_window_keep_the_whole_context(compile_text: Callable[[str], Compilation]) -> None:
    # Mistral-7B-v0.1 windows every layer at 4,096 tokens. TensorRT-LLM's PyTorch backend keeps
    # only the window's KV; its TensorRT engines (0.10-0.18, as trtllm-bench ran them) keep the
    # whole context unless max_attention_window_size is given at run time
    long = {"model": "mistral-7b", "prompt": 20_000, "output": 2_000}
    windowed = values(compile_text(plan(engine="trtllm", **long)))  # type: ignore[arg-type]
    full = values(compile_text(plan(engine="trtllm_0_18", **long), name="full.plan"))  # type: ignore[arg-type]
    assert windowed["d.window"] == 4096 and full["d.window"] == 32768
    assert windowed["d.kv_layer_tokens"] == 32 * 4096
    assert full["d.kv_layer_tokens"] == 32 * full["d.context_allocated"] > 32 * 22_000


def test_attention_without_split_kv_is_limited_by_the_pieces_in_flight(compile_text: Callable[[str], Compilation]) -> None:
    # Little's law: one thread block keeps a 128-token K/V tile in flight (128 × 2 × 128 × 2 B =
    # 64 KiB for Llama-3.1-8B in BF16) for one DRAM latency (348.1 ns on Hopper, pointer chase)
    v = values(compile_text(plan(engine="pytorch", prompt=16_000, output=16)))
    tile = 128 * 2 * 128 * 2
    assert v["d.attention_unit_bandwidth"] == Fraction(tile) / (Fraction(3481, 10) * Fraction(1, 10**9))
    # batch 1 × 8 KV heads = 8 pieces: 1.5 TB/s, half of what the device streams
    assert v["d.attention_units"] == 8
    assert v["d.attention_bandwidth"] == 8 * v["d.attention_unit_bandwidth"] < v["d.achieved_bandwidth"]
    # an engine that splits the context (vLLM: FlashAttention-3, up to 32 splits) fills the device:
    # its paged cache streams at the device's streaming bandwidth (docs/measurements/attention.md)
    split = values(compile_text(plan(engine="vllm", prompt=16_000, output=16), name="split.plan"))
    assert split["d.attention_bandwidth"] == split["d.achieved_bandwidth"]
    # TensorRT-LLM's XQA streams its paged cache at 0.95 of it (docs/measurements/attention.md)
    trt = values(compile_text(plan(engine="trtllm", prompt=16_000, output=16), name="trt.plan"))
    assert trt["d.attention_bandwidth"] == trt["d.achieved_bandwidth"] * Fraction(95, 100)


def test_a_big_batch_pays_for_compute_and_kv_one_after_the_other(compile_text: Callable[[str], Compilation]) -> None:
    # docs/physics.md §14: 70B FP8 TP4 at batch 512 — the GEMMs turn compute-bound while the KV reads
    # stay memory-bound, and they run one after another: the step is their sum, not one max
    v = values(compile_text(plan("llama-3.1-70b", batch=512, tp=4, weights="fp8")))
    gemm_compute = 512 * (v["d.gemm_flops_per_token"] + v["d.head_flops_per_token"]) / v["d.achieved_flops"]
    assert v["d.gemm_compute_time"] == gemm_compute > v["d.gemm_memory_time"] == v["d.gemm_weight_bytes"] / v["d.achieved_bandwidth"]
    assert v["d.gemm_time"] > gemm_compute
    kv_time = v["d.decode_kv_bytes"] / v["d.attention_bandwidth"]
    # and each of the 512 × 2 pieces per layer (a sequence's KV head on the device) costs vLLM's
    # FlashAttention-3 3.05 µs of an SM with a BF16 cache (docs/measurements/attention.md), shared by the 132 SMs
    pieces = 80 * 512 * 2 * v["vllm.attention_piece_time[bf16]"] / 132
    assert v["d.decode_attention_time"] == kv_time + pieces
    one_max = max(v["d.decode_bytes_per_step"] / v["d.achieved_bandwidth"], v["d.decode_flops_per_step"] / v["d.achieved_flops"])
    assert v["d.iteration_gpu_time"] > one_max * Fraction(13, 10)


def test_eager_launches_overlap_the_gpu(compile_text: Callable[[str], Compilation]) -> None:
    # without CUDA graphs the CPU launches each kernel (32 layers × 10 kernels × 5 µs = 1.6 ms)
    # while the GPU works: the step is the slower of the two, not their sum
    eager = values(compile_text(plan(extra="", batch=1).replace("engine = vllm", "engine = vllm; cuda_graphs = false")))
    assert eager["d.launch_time"] == Fraction(16, 10_000)
    gpu = eager["d.iteration_gpu_time"]
    assert eager["d.step_time"] == max(gpu, eager["d.launch_time"]) + eager["d.pp_time_per_step"] + eager["vllm.step_overhead"]


def test_tensor_parallelism_beyond_the_board_runs_on_the_network(compile_text: Callable[[str], Compilation]) -> None:
    # an HGX H100 board is 8 GPUs on NVLink; TP 16 spans two, so its all-reduces cross the
    # scale-out network (one 400 Gb/s NIC per GPU = 50 GB/s)
    inside = values(compile_text(plan("llama-3.1-405b", tp=8, weights="fp8")))
    beyond = values(compile_text(plan("llama-3.1-405b", tp=16, weights="fp8"), name="tp16.plan"))
    assert inside["d.link_bandwidth"] == inside["h100_sxm.interconnect_bandwidth"] == 450 * 10**9
    assert beyond["d.link_bandwidth"] == beyond["h100_sxm.scale_out_bandwidth"] == 50 * 10**9
    assert beyond["d.link_latency"] == beyond["h100_sxm.scale_out_latency"]
    assert inside["d.link_latency"] == Fraction(47, 10**7)  # vLLM's own all-reduce inside the board (NVLink 4)


def test_pcie_cards_talk_over_pcie_inside_the_server(compile_text: Callable[[str], Compilation]) -> None:
    # an L40S has no NVLink: TP 4 in one 8-card server runs its rings over PCIe Gen4 x16 at the
    # 24 GB/s NCCL's topology model gives the link (16 lanes × 120 / 80, src/graph/topo.cc), pays
    # NCCL's latency (vLLM's own all-reduce is off beyond two PCIe-only GPUs), and is told so; TP 16
    # leaves the server and crosses the network
    inside = compile_text(plan("llama-3.1-70b", gpu="l40s", tp=4, weights="fp8"))
    v = values(inside)
    assert v["d.link_bandwidth"] == v["l40s.server_link_bandwidth"] == 24 * 10**9
    # NCCL's own model of a ring of 4 over PCIe, replayed in a decode graph: 6.6 + 2·3 × 1.0 µs
    assert v["d.link_latency"] == v["l40s.collective_base_latency"] + 6 * v["l40s.interconnect_step_latency"]
    assert v["d.link_latency"] == Fraction(126, 10**7)
    assert any("cross PCIe" in d.message for d in inside.diagnostics)
    beyond = values(compile_text(plan("llama-3.1-405b", gpu="l40s", tp=16, weights="fp8"), name="tp16.plan"))
    assert beyond["d.link_bandwidth"] == beyond["l40s.scale_out_bandwidth"]
    assert beyond["d.link_latency"] == beyond["l40s.scale_out_latency"]
    # an H100 PCIe pair shares its NVLink bridge; four cards reach past it over PCIe Gen5 (48 GB/s)
    pair = values(compile_text(plan(gpu="h100-pcie", tp=2), name="pair.plan"))
    four = values(compile_text(plan(gpu="h100-pcie", tp=4), name="four.plan"))
    assert pair["d.link_bandwidth"] == pair["h100_pcie.interconnect_bandwidth"] == 300 * 10**9
    assert four["d.link_bandwidth"] == 48 * 10**9


def test_nccl_latency_scales_with_the_ring(compile_text: Callable[[str], Compilation]) -> None:
    # an engine without its own all-reduce pays NCCL's. In a decode replayed as a CUDA graph, the
    # kernel's own latency, NCCL's model of its ring in the LL protocol (src/graph/tuning.cc):
    # 6.6 µs + 2(n−1) × 0.6 µs over NVLink, 7.8 µs for 2 GPUs and 15.0 µs for 8
    two = values(compile_text(plan(tp=2, engine="pytorch")))
    eight = values(compile_text(plan("llama-3.1-70b", tp=8, engine="pytorch"), name="eight.plan"))
    assert two["d.graph_replay"] and eight["d.graph_replay"]
    assert two["d.nccl_latency"] == two["d.link_latency"] == Fraction(78, 10**7)
    assert eight["d.nccl_latency"] == Fraction(150, 10**7)
    # launched eagerly, each call is issued from the host: 27.0 µs measured across 8 H100s by
    # nccl-tests, and a ring of n takes 2(n−1) steps, so 2 GPUs pay a seventh of it. A prefill
    # iteration is never a graph; a plan may turn the decode graphs off
    assert two[PREFILL + "graph_replay"] is False
    assert two[PREFILL + "nccl_latency"] == two["h100_sxm.interconnect_latency"] / 7 == Fraction(27, 10**6) / 7
    eager = values(compile_text(plan(tp=2, engine="pytorch").replace("engine = pytorch", "engine = pytorch; cuda_graphs = false"),
                                name="eager.plan"))
    assert eager["d.nccl_latency"] == Fraction(27, 10**6) / 7
    # a 16 KiB message (one 8,192-wide BF16 row) goes at LL's bandwidth, capped at 141 GB/s on
    # Hopper: 15.0 µs + 1.75 × 16 KiB / 141 GB/s = 15.2 µs, against 27.2 µs as nccl-tests measures
    # it (the large messages keep the measured curve: the test above)
    assert eight["d.allreduce_message"] == 16384
    assert eight["d.allreduce_time"] == Fraction(150, 10**7) + Fraction(7, 4) * 16384 / (141 * 10**9)
    assert eight["d.nccl_measured_time"] > Fraction(27, 10**6)
    assert eight["d.tp_time_per_step"] == 2 * 80 * eight["d.allreduce_time"]


def test_llama_8b_on_one_l4_gets_a_context_in_the_tens_of_thousands(compile_text: Callable[[str], Compilation]) -> None:
    # the weights leave about 5.5 GB of an L4's 0.92 × 22 GiB; vLLM's profile (activations of its
    # 2,048-token budget below 70 GiB, the sampler over 256 × 128,256 logits) and its CUDA graphs
    # take about 1.5 GB of that: roughly 24k-32k tokens of 128 KiB each
    v = values(compile_text(plan(gpu="l4")))
    assert v["d.prefill_chunk"] == 2048 and v["d.max_num_seqs"] == 256  # vLLM's < 70 GiB tier
    assert 24_000 <= v["d.kv_capacity_tokens"] <= 32_000


@pytest.mark.parametrize(("gpu", "seqs", "tokens"), [("l4", 256, 2048), ("h100-sxm", 1024, 8192), ("b200", 1024, 16384)])
def test_vllm_scheduler_defaults_follow_device_memory(compile_text: Callable[[str], Compilation],
                                                      gpu: str, seqs: int, tokens: int) -> None:
    # vllm/engine/arg_utils.py (v0.33.0): OpenAI server 256/2048 below 70 GiB, 1024/8192 from it,
    # 1024/16384 from 160 GiB
    v = values(compile_text(plan(gpu=gpu, model="llama-3.1-8b")))
    assert (v["d.max_num_seqs"], v["d.prefill_chunk"]) == (seqs, tokens)


def test_the_engines_memory_rules(compile_text: Callable[[str], Compilation]) -> None:
    # vLLM: 0.92 of the device, less everything it profiled
    vllm = values(compile_text(plan(gpu="h200")))
    assert vllm["d.kv_budget"] == (vllm["h200.memory"] * Fraction(92, 100) - vllm["d.weight_bytes_per_device"]
                                   - vllm["d.runtime_overhead"])
    # TensorRT-LLM: 0.9 of what the weights, activations and buffers leave
    trt = values(compile_text(plan(gpu="h200", engine="trtllm"), name="trt.plan"))
    assert trt["d.kv_budget"] == Fraction(9, 10) * (trt["h200.memory"] - trt["d.weight_bytes_per_device"]
                                                    - trt["d.runtime_overhead"])
    # SGLang: mem_fraction_static = 1 − reserve / memory, reserve = 512 MiB + 1.5 MiB per token of its
    # 8,192-token chunk + 128 MiB per device (≥ 10 GiB on big GPUs): 0.91 of an H200, as its rule gives
    sgl = values(compile_text(plan(gpu="h200", engine="sglang"), name="sgl.plan"))
    reserve = (512 + 1.5 * 8192 + 128) * 2**20
    assert sgl["d.engine_reserve"] == reserve
    assert float(sgl["d.kv_budget"]) == pytest.approx(float(sgl["h200.memory"]) - reserve
                                                      - float(sgl["d.weight_bytes_per_device"]), rel=1e-12)
    assert 1 - reserve / float(sgl["h200.memory"]) == pytest.approx(0.91, abs=0.005)


def test_prefill_is_bound_by_reading_the_weights_when_the_prompt_is_short(compile_text: Callable[[str], Compilation]) -> None:
    # a 16-token prompt of Llama-3.1-8B: 2 × 7.5 B × 16 = 0.24 TFLOP, 0.35 ms at the 683 TFLOP/s a
    # layer's GEMMs reach on an H100, against 5.1 ms to stream 15 GB at 2.97 TB/s: the weights bind,
    # and the FLOPs add only (t_c/t_m)³/3 = 0.01 % in the H100's roofline norm (p = 3)
    short = values(compile_text(plan(prompt=16)))
    t_m = float(short["d.gemm_weight_bytes"] / short["d.achieved_bandwidth"])
    t_c = float(short[PREFILL + "gemm_compute_time"])
    p = float(short["h100_sxm.roofline_order"])
    assert p == 3 and t_m == pytest.approx(15_009_849_344 / 2.97e12, rel=1e-12) and t_c / t_m < 0.08
    assert float(short[PREFILL + "gemm_time"]) == pytest.approx(t_m * (1 + (t_c / t_m) ** p) ** (1 / p), rel=1e-12)
    assert float(short[PREFILL + "gemm_time"]) < 1.004 * t_m
    # 8,000 tokens are compute-bound
    long = values(compile_text(plan(prompt=8000), name="long.plan"))
    assert long[PREFILL + "gemm_time"] > long["d.gemm_weight_bytes"] / long["d.achieved_bandwidth"]


def test_a_replica_beyond_the_board_is_advised_at_the_users_line(compile_text: Callable[[str], Compilation]) -> None:
    # costed on the network (above), and said: W0407 at `tensor_parallel = 16`, the stdlib's
    # clause as the secondary label; the plan is still computed, and `plan check` passes
    c = compile_text(plan("llama-3.1-405b", tp=16, weights="fp8").replace("tensor_parallel = 16", "\n  tensor_parallel = 16\n"))
    assert c.ok and c.exit_code == 0
    [advice] = [d for d in c.diagnostics if d.code == "W0407"]  # a dense model: the experts' advice stays quiet
    assert advice.primary is not None and advice.primary.span.text == "16"
    assert not advice.primary.span.file.is_stdlib
    assert advice.secondary[0].span.file.is_stdlib
    assert "scale-out network" in advice.message
    quiet = compile_text(plan("llama-3.1-405b", tp=8, weights="fp8"), name="tp8.plan")
    assert not [d for d in quiet.diagnostics if d.code == "W0407"]


def test_a_short_prefill_streams_its_weights_and_a_long_one_computes(compile_text: Callable[[str], Compilation]) -> None:
    # No wave-quantisation cliff at small M (cuBLAS splits K; docs/measurements/h100.md): a 128-token
    # prefill of Llama-3.1-8B on an H100 costs about its weight reads, and the H100's norm of the two
    # times (p = 3) lifts it above the slower one only by about (t_c/t_m)³/3 of it; an 8,192-token
    # chunk is compute-bound at the rate a layer's shapes reach, 0.86 of MAMF
    short = values(compile_text(plan(prompt=128)))
    t_m, t_c = float(short["d.gemm_memory_time"]), float(short[PREFILL + "gemm_compute_time"])
    assert t_c < t_m and short["h100_sxm.roofline_order"] == 3
    assert float(short[PREFILL + "gemm_time"]) == pytest.approx((t_m ** 3 + t_c ** 3) ** (1 / 3), rel=1e-12)
    assert float(short[PREFILL + "gemm_time"]) < 1.3 * t_m
    long = values(compile_text(plan(prompt=8192), name="long.plan"))
    assert long["d.achieved_flops"] == long["h100_sxm.matmul_flops[bf16]"] * Fraction(86, 100) == Fraction(68327, 100) * 10**12
    assert float(long[PREFILL + "gemm_compute_time"]) > 5 * float(long["d.gemm_memory_time"])
    assert float(long[PREFILL + "gemm_time"]) == pytest.approx(float(long[PREFILL + "gemm_compute_time"]), rel=0.02)


def test_each_experts_tokens_fill_whole_tiles(compile_text: Callable[[str], Compilation]) -> None:
    # vLLM's fused_moe pads every expert's tokens to the block size: Mixtral-8x7B (8 experts, 2 per
    # token) at batch 256 gives each expert 64 tokens, half of a 128-row tile
    v = values(compile_text(plan("mixtral-8x7b", batch=256, tp=2)))
    assert float(v["d.experts_touched"]) == pytest.approx(1, abs=1e-12)
    assert float(v["d.expert_rows"]) == pytest.approx(64, rel=1e-12)
    assert float(v["d.expert_fill"]) == pytest.approx(0.5, rel=1e-12)
    # at batch 1 the token's two experts each get one row
    one = values(compile_text(plan("mixtral-8x7b", batch=1, tp=2), name="b1.plan"))
    assert one["d.experts_touched"] == Fraction(1, 4) and one["d.expert_rows"] == 1
    assert one["d.expert_tile"] == 16 and float(one["d.expert_fill"]) == pytest.approx(1 / 16, rel=1e-12)


@pytest.mark.parametrize(("batch", "rows", "tile"), [(32, 8, 16), (48, 12, 32), (64, 16, 32), (128, 32, 64), (1024, 256, 128)])
def test_the_expert_tile_is_the_one_vllm_tunes_for_the_tokens(
        compile_text: Callable[[str], Compilation], batch: int, rows: int, tile: int) -> None:
    """The grouped GEMM's tile follows the tokens each expert gets: BLOCK_SIZE_M in vLLM's tuned
    fused_moe config for Mixtral's experts on an H100 (E=8,N=7168,device_name=NVIDIA_H100_80GB_HBM3.json,
    vllm-project/vllm@02ba322d: M = 32 → 16, 48 and 64 → 32, 128 → 64, 1024 → 128, M the tokens, a
    quarter of them per expert at top-2). Its weight reads and padded FLOPs are joined by the
    accelerator's roofline norm, as the dense GEMMs' are."""
    v = values(compile_text(plan("mixtral-8x7b", batch=batch, tp=2), name=f"b{batch}.plan"))
    assert float(v["d.expert_rows"]) == pytest.approx(rows, rel=1e-3)  # all 8 experts touched, but for (3/4)^batch
    assert v["d.expert_tile"] == tile
    actual = float(v["d.expert_rows"])
    assert float(v["d.expert_fill"]) == pytest.approx(actual / (tile * math.ceil(actual / tile)), rel=1e-12)
    t_m, t_c, p = float(v["d.expert_memory_time"]), float(v["d.expert_compute_time"]), float(v["h100_sxm.roofline_order"])
    assert float(v["d.expert_time"]) == pytest.approx((t_m ** p + t_c ** p) ** (1 / p), rel=1e-12)


# NCCL AllReduce over 8 devices: bus bandwidth by message size, the published tables the catalog's
# allreduce_* fields come from (github:Azure/AI-benchmarking-guide, Azure_Results/ND_*_results.md,
# "NCCL Bandwidth": H100 NCCL 2.18.5 @f350e7e6, H200 NCCL 2.20.5 @7f20e5fa, A100 NCCL 2.18.5 @3bb66cac)
NCCL_BUSBW = {
    "h100-sxm": {8 << 20: 172.13e9, 32 << 20: 295.53e9, 128 << 20: 400.61e9, 1 << 30: 466.35e9},
    "h200": {8 << 20: 181.94e9, 32 << 20: 300.91e9, 128 << 20: 412.45e9, 1 << 30: 467.58e9},
    "a100-80gb": {8 << 20: 89.99e9, 32 << 20: 132.77e9, 128 << 20: 174.18e9, 1 << 30: 228.10e9},
}


@pytest.mark.parametrize("gpu", sorted(NCCL_BUSBW))
def test_an_nccl_all_reduce_takes_the_time_the_published_curve_gives(compile_text: Callable[[str], Compilation],
                                                                    gpu: str) -> None:
    """Llama-3.1-70B (8,192 wide, BF16 activations) at TP 8 through NCCL (gpt-fast's engine): an
    iteration of r rows all-reduces r × 16 KiB. From 8 MiB up the model's time is within 12 % of
    the measured one (2(n−1)/n of the message over the measured bus bandwidth); on H100 a latency
    plus the link's rate, the model before, was 30 % fast at 8 MiB and 21 % at 32 MiB."""
    import numpy as np
    from planc.vector import evaluate_many

    table = NCCL_BUSBW[gpu]
    c = compile_text(plan(model="llama-3.1-70b", gpu=gpu, tp=8, engine="pytorch"))
    el, exact = c.lowered.elaborated, values(c)  # type: ignore[union-attr]
    sizes = np.array(sorted(table), dtype=float)
    got = evaluate_many(el, exact, {"d.decode_sequences": sizes / (8192 * 2)})
    assert np.array_equal(got["d.allreduce_message"], sizes)
    measured = np.array([1.75 * s / table[int(s)] for s in sizes])
    assert np.all(np.abs(got["d.allreduce_time"] / measured - 1) < 0.12), got["d.allreduce_time"] / measured
    if gpu == "h100-sxm":
        old = 27e-6 + 1.75 * sizes / 450e9
        assert old[1] / measured[1] < 0.8 and old[0] / measured[0] < 0.75


def test_the_engines_own_all_reduce_follows_its_measured_curve_at_every_size(
        compile_text: Callable[[str], Compilation]) -> None:
    """vLLM issues every all-reduce of a TP group inside the scale-up domain itself: its kernel below
    8 MiB (its `max_size`), its NCCL configuration from there. Its time at every size is the curve
    measured for it (docs/measurements/allreduce.md): 4.7 µs, then the bus bytes with a 1.7 MB
    ramp at 0.75 of the link. A decode batch of 64 on Llama-3.1-70B (1 MiB), 512 rows (8 MiB) and a
    2,048-token chunk (32 MiB); an engine without its own (gpt-fast's) keeps NCCL's curve."""
    import numpy as np
    from planc.vector import evaluate_many

    c = compile_text(plan(model="llama-3.1-70b", tp=8, engine="vllm"))
    el, exact = c.lowered.elaborated, values(c)  # type: ignore[union-attr]
    got = evaluate_many(el, exact, {"d.decode_sequences": np.array([64.0, 512.0, 2048.0])})
    assert got["d.custom_allreduce_used"].tolist() == [True, False, False]
    assert bool(exact["d.engine_allreduce"])
    sizes = np.array([1 << 20, 8 << 20, 32 << 20], dtype=float)
    assert np.array_equal(got["d.allreduce_message"], sizes)
    curve = 4.7e-6 + 1.75 * (sizes + 1.7e6 * sizes / (sizes + 1.7e6)) / (0.75 * 450e9)
    assert got["d.allreduce_time"] == pytest.approx(curve, rel=1e-12)
    nccl = values(compile_text(plan(model="llama-3.1-70b", tp=8, engine="pytorch"), name="nccl.plan"))
    assert not nccl["d.engine_allreduce"]


def _with_ep(text: str, ep: int) -> str:
    return text.replace("engine = vllm }", f"engine = vllm; expert_parallel = {ep} }}")


def test_experts_are_sliced_over_the_tensor_parallel_group_unless_placed_whole(
        compile_text: Callable[[str], Compilation]) -> None:
    # vLLM (enable_expert_parallel = False) and TensorRT-LLM (moe_tp_size = tp_size) slice every
    # expert over the TP group by default; whole experts over EP = TP hold the same bytes per device
    # and need no all-to-all (the tokens are on every device after attention's all-reduce): at
    # batch 512 every expert is touched and the two placements differ only in the experts' GEMMs —
    # the busiest device's share of the token-expert pairs, and the width of what each device
    # multiplies (docs/measurements/moe.md: vLLM's grouped GEMMs keep w / (w + 350) of their rate)
    sliced = values(compile_text(plan("mixtral-8x7b", batch=512, tp=4)))
    whole = values(compile_text(_with_ep(plan("mixtral-8x7b", batch=512, tp=4), 4), name="ep4.plan"))
    assert sliced["d.expert_parallel"] == 1 and sliced["d.expert_spread"] == 0
    assert float(sliced["d.busiest_experts_touched"]) == pytest.approx(float(sliced["d.experts_touched"]), rel=1e-15)
    assert sliced["d.busiest_expert_load"] == 1
    assert whole["d.weight_bytes_per_device"] == sliced["d.weight_bytes_per_device"]
    assert float(whole["d.busiest_experts_touched"]) == pytest.approx(1, abs=1e-9)
    load = float(whole["d.busiest_expert_load"])  # 1 + 1.05·√(3/1024)
    assert load == pytest.approx(1 + float(whole["d.expert_spread"]) * math.sqrt(3 / 1024), rel=1e-12) and load < 1.06
    assert float(sliced["d.expert_spread"]) == 0 and float(whole["d.expert_spread"]) == pytest.approx(1.049, abs=1e-3)
    gap = float(whole["d.iteration_gpu_time"]) - float(sliced["d.iteration_gpu_time"])
    assert gap == pytest.approx(float(whole["d.expert_time"]) - float(sliced["d.expert_time"]), rel=1e-9)  # the experts alone
    assert float(sliced["d.expert_slice_width"]) == 14336 / 4 and float(whole["d.expert_slice_width"]) == 14336
    assert float(sliced["d.expert_width_share"]) == pytest.approx(3584 / (3584 + 350), rel=1e-12)
    assert float(whole["d.expert_width_share"]) == pytest.approx(14336 / (14336 + 350), rel=1e-12)
    # whole experts' wider GEMMs (0.98 of the rate against 0.91) outweigh the busiest device's 3 % more pairs
    assert gap < 0


def _busiest(experts: int, k: int, ep: int, tokens: int, draws: int = 4000) -> tuple[float, float]:
    """Uniform top-k routing simulated: the mean over steps of the busiest device's fraction of its
    experts touched, and of its token-expert pairs over the mean."""
    import numpy as np
    rng = np.random.default_rng(7)
    group = experts // ep
    touched, pairs = 0.0, 0.0
    for _ in range(draws):
        picks = np.argsort(rng.random((tokens, experts)), axis=1)[:, :k]
        count = np.bincount(picks.ravel(), minlength=experts).reshape(ep, group)
        touched += (count > 0).sum(axis=1).max() / group
        pairs += count.sum(axis=1).max() / (tokens * k / ep)
    return touched / draws, pairs / draws


@pytest.mark.parametrize(("model", "gpu", "weights", "ep", "batch"), [
    ("mixtral-8x7b", "h100-sxm", "bf16", 2, 1), ("mixtral-8x7b", "h100-sxm", "bf16", 4, 1),
    ("mixtral-8x7b", "h100-sxm", "bf16", 2, 8), ("deepseek-v3", "h200", "fp8", 8, 1),
    ("deepseek-v3", "h200", "fp8", 8, 16), ("qwen3-30b-a3b", "h100-sxm", "bf16", 4, 32),
    ("qwen3-30b-a3b", "h100-sxm", "bf16", 8, 1)])
def test_expert_parallel_balance(compile_text: Callable[[str], Compilation], model: str, gpu: str, weights: str,
                                 ep: int, batch: int) -> None:
    """With whole experts over EP devices the step waits for the device whose experts the tokens
    touched most: the stdlib's binomial count with Blom's expected maximum (docs/physics.md §6.3)
    against a simulation of uniform top-k routing. At batch 1 Mixtral at EP 2 has both of the
    token's experts on one device in 12 of 28 draws, 0.357 of its four experts on average."""
    v = values(compile_text(_with_ep(plan(model, gpu=gpu, batch=batch, tp=ep, weights=weights), ep), name="ep.plan"))
    experts, k = int(v[f"{model.replace('-', '_')}.experts"]), int(v[f"{model.replace('-', '_')}.experts_per_token"])
    touched, pairs = _busiest(experts, k, ep, batch)
    assert float(v["d.busiest_experts_touched"]) == pytest.approx(touched, rel=0.07)
    assert float(v["d.busiest_expert_load"]) == pytest.approx(pairs, rel=0.10)
    assert float(v["d.busiest_experts_touched"]) > float(v["d.experts_touched"])
    if (model, ep, batch) == ("mixtral-8x7b", 2, 1):
        assert touched == pytest.approx((1 + Fraction(12, 28)) / 4, abs=0.01)


def test_expert_parallelism_divides_the_tensor_parallel_group(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(_with_ep(plan("mixtral-8x7b", tp=2), 4))
    assert not c.ok and [d.code for d in c.diagnostics if d.severity.value == "error"] == ["E0408"]  # a combination the plan chose (E0408), not one value out of range
