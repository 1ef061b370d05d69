"""Extract the engines' measured kernels from NVIDIA's aiconfigurator collections into CSV.

aiconfigurator (github:ai-dynamo/aiconfigurator) publishes, per GPU and engine version, kernels as
the engines run them, each captured in a CUDA graph and replayed. Five extractions:

- `allreduce`: one tensor-parallel all-reduce as the engine issues it (vLLM's and SGLang's
  `tensor_model_parallel_all_reduce`, TensorRT-LLM's AllReduce with its AUTO strategy,
  collector/network/collect_all_reduce.py), TP 2-8, on the parts of three NVLink generations.
  `message_size` there counts BF16 elements; the CSV gives bytes (2 per element) and seconds, with
  the file each row comes from. Read by docs/measurements/allreduce.md and
  tests/test_allreduce_measurements.py.
- `attention`: one decode-attention call as the engine runs it (vLLM's FlashAttention-3 backend
  with its KV-cache write, collector/vllm/collect_attn.py; SGLang's FA3 RadixAttention layer, which
  writes the cache too, collector/sglang/collect_attn.py; TensorRT-LLM's attention op of the PyTorch
  backend, its XQA decode kernels, collector/trtllm/collect_attn.py), BF16 or FP8 KV cache, head size 128, no
  sliding window, for the per-device heads of the Llama family: 32 query and 8 KV heads
  (Llama-3.1-8B), 64 and 8 (-70B on one device), 32 and 4, 16 and 2, 8 and 1 (-70B at TP 2, 4 and
  8). `step` + 1 is the context. Read by docs/measurements/attention.md and
  tests/test_attention_measurements.py.
- `context`: one prefill-attention call as the engine runs it (collector/<engine>/collect_attn.py,
  the context phase: vLLM's FlashAttention-3 and SGLang's FA3 backend, TensorRT-LLM's attention op
  of the PyTorch backend), each prompt `tokens` long with no cached prefix, causal, head size 128,
  no sliding window, the same per-device heads as `attention`, batch 1-256, prompts 1-16,384 tokens,
  BF16 or FP8 KV cache with the attention input each engine runs for it (SGLang's FP8 kernel for an
  FP8 cache, the others' BF16 kernels); and vLLM's FlashAttention-2 prefill on an A100 SXM (0.14.0)
  and an L40S (0.24.0), BF16 cache, the parts FlashAttention-3 does not run on. Read by docs/measurements/attention.md and
  tests/test_prefill_attention_measurements.py.
- `gemm`: one weight GEMM as vLLM runs it, BF16 through `torch.nn.functional.linear` (cuBLAS) and
  FP8 W8A8 through `CutlassFP8ScaledMMLinearKernel` (collector/vllm/collect_gemm.py), at the decode
  rows M = 1, 2, 4, 8 and 16, for every N × K of the collection whose weights are 16 MB to 1.2 GB:
  vLLM 0.24.0 on an H100 SXM and an H200 SXM (both), an L40S (BF16), and vLLM 0.14.0 on an A100 SXM
  (BF16, which that collection names `vllm_default`).
  Read by docs/measurements/gemm.md and tests/test_gemm_measurements.py.
- `dense`: TensorRT-LLM 1.3.0rc20's NVFP4 weight GEMMs (its Linear, which quantises the BF16 input to
  FP4 blocks as every forward does; collector/trtllm/collect_gemm.py) on a B200 and a GB200, at 2,048
  rows and more with N and K of 4,096 or more. Read by docs/measurements/gemm.md and
  tests/test_gemm_measurements.py.
- `moe`: one MoE layer's routed experts as each engine runs them (collector/<engine>/collect_moe.py:
  routing alignment or permutation, the two grouped GEMMs and the gated activation), tokens routed
  evenly (`distribution = balanced`), every expert sliced over the tensor-parallel group
  (`moe_ep_size = 1`), gated experts only, on an H100 SXM and an H200 SXM, for every expert shape of
  the collection (hidden 2,048-7,168; 8-512 experts; top 1-22) at TP 1-32 and 1-16,384 tokens. The
  kernels: vLLM's Triton fused MoE (BF16 unquantised, FP8 block-scaled), SGLang's Triton fused MoE
  (the same two), TensorRT-LLM's CUTLASS MoE (BF16, FP8 per-tensor, FP8 block-scaled). `weights`
  is the dtype name of stdlib/kinds/dtype.plan. Read by docs/measurements/moe.md and
  tests/test_moe_measurements.py.

Run once with pandas and pyarrow (not dependencies of plan), on a mirror of the repository:

    python bench/microbench/aiconfigurator.py allreduce MIRROR_GIT_DIR > bench/microbench/results/aiconfigurator-allreduce.csv
    python bench/microbench/aiconfigurator.py attention MIRROR_GIT_DIR > bench/microbench/results/aiconfigurator-attention.csv
    python bench/microbench/aiconfigurator.py context MIRROR_GIT_DIR > bench/microbench/results/aiconfigurator-context.csv
    python bench/microbench/aiconfigurator.py gemm MIRROR_GIT_DIR > bench/microbench/results/aiconfigurator-gemm.csv
    python bench/microbench/aiconfigurator.py dense MIRROR_GIT_DIR > bench/microbench/results/aiconfigurator-dense-fp4.csv
    python bench/microbench/aiconfigurator.py moe MIRROR_GIT_DIR > bench/microbench/results/aiconfigurator-moe.csv
"""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from typing import Any

COMMIT = "095f58a51c4ca8e61b66ec108d86f223f8d559ce"
ROOT = "aic-core/src/aiconfigurator_core/systems/data"
ALLREDUCE = [  # (gpu, engine, version): the newest collection of each engine on each part, by NVLink generation
    ("a100_sxm", "vllm", "0.14.0"), ("a100_sxm", "sglang", "0.5.10"), ("a100_sxm", "trtllm", "1.0.0"),  # NVLink 3
    ("h100_sxm", "vllm", "0.24.0"), ("h200_sxm", "vllm", "0.24.0"),  # NVLink 4
    ("h100_sxm", "sglang", "0.5.14"), ("h200_sxm", "sglang", "0.5.14"),
    ("h100_sxm", "trtllm", "1.3.0rc20"), ("h200_sxm", "trtllm", "1.3.0rc20"),
    ("b200_sxm", "vllm", "0.24.0"), ("gb200", "vllm", "0.24.0"),  # NVLink 5
    ("b200_sxm", "sglang", "0.5.14"), ("gb200", "sglang", "0.5.14"),
    ("b200_sxm", "trtllm", "1.3.0rc20"), ("gb200", "trtllm", "1.3.0rc20"),
]
ATTENTION = [  # (gpu, engine, version, kernel_source)
    ("h100_sxm", "vllm", "0.24.0", "vllm_flash_attn_fa3"), ("h200_sxm", "vllm", "0.24.0", "vllm_flash_attn_fa3"),
    ("h100_sxm", "sglang", "0.5.14", "fa3"), ("h200_sxm", "sglang", "0.5.14", "fa3"),
    ("h100_sxm", "trtllm", "1.3.0rc20", "torch_flow"), ("h200_sxm", "trtllm", "1.3.0rc20", "torch_flow"),
]
HEADS = {(32, 8), (64, 8), (32, 4), (16, 2), (8, 1)}
CONTEXT_ELSEWHERE = [  # vLLM's FlashAttention-2 prefill on the parts FlashAttention-3 does not run on (BF16 cache)
    ("a100_sxm", "vllm", "0.14.0", "vllm_flash_attn"), ("l40s", "vllm", "0.24.0", "vllm_flash_attn_fa2"),
]
CONTEXT_FORMATS = {  # engine: the (attention input, KV cache) dtypes it runs for each cache format
    "vllm": {("bfloat16", "bfloat16"), ("bfloat16", "fp8")},
    "sglang": {("bfloat16", "bfloat16"), ("fp8", "fp8")},  # an FP8 cache: FlashAttention-3's FP8 kernel
    "trtllm": {("bfloat16", "bfloat16"), ("bfloat16", "fp8")},
}
GEMM = [  # (gpu, engine, version, the kernels kept): BF16 and FP8 on the Hopper parts, BF16 on the parts without FP8 rows of their own
    ("h100_sxm", "vllm", "0.24.0", ("torch.nn.functional.linear", "CutlassFP8ScaledMMLinearKernel")),
    ("h200_sxm", "vllm", "0.24.0", ("torch.nn.functional.linear", "CutlassFP8ScaledMMLinearKernel")),
    ("a100_sxm", "vllm", "0.14.0", ("vllm_default",)),  # the 0.14.0 collection names its BF16 F.linear so
    ("l40s", "vllm", "0.24.0", ("torch.nn.functional.linear",)),
]
MOE = [  # (engine, version, kernel_source, the collection's moe_dtype, the stdlib's dtype)
    ("vllm", "0.24.0", "vllm_unquantizedfusedmoe_triton_tritonexperts", "bfloat16", "bf16"),
    ("vllm", "0.24.0", "vllm_fp8moe_triton_tritonexperts", "fp8_block", "fp8_block"),
    ("sglang", "0.5.14", "sglang_fused_moe_triton", "bfloat16", "bf16"),
    ("sglang", "0.5.14", "sglang_fused_moe_triton", "fp8_block", "fp8_block"),
    ("trtllm", "1.3.0rc20", "moe_torch_flow_cutlass", "bfloat16", "bf16"),
    ("trtllm", "1.3.0rc20", "moe_torch_flow_cutlass", "fp8", "fp8"),
    ("trtllm", "1.3.0rc20", "moe_torch_flow_cutlass", "fp8_block", "fp8_block"),
]
DENSE = [("b200_sxm", "trtllm", "1.3.0rc20"), ("gb200", "trtllm", "1.3.0rc20")]  # NVFP4 GEMMs at large M (`dense`)
GEMM_KERNELS = {"torch.nn.functional.linear": ("bf16", 2), "vllm_default": ("bf16", 2),
                "CutlassFP8ScaledMMLinearKernel": ("fp8", 1)}  # the CSV's name, bytes per weight


def read(git_dir: str, path: str) -> Any:
    import pandas as pd  # only here: the extraction's own dependency

    blob = subprocess.run(["git", "--git-dir", git_dir, "show", f"{COMMIT}:{path}"], check=True, capture_output=True).stdout
    return pd.read_parquet(io.BytesIO(blob))


def allreduce(git_dir: str, out: Any) -> None:
    out.writerow(["gpu", "engine", "version", "tp", "bytes", "seconds", "source"])
    for gpu, engine, version in ALLREDUCE:
        path = f"{ROOT}/{gpu}/comm/{engine}/{version}/custom_allreduce_perf.parquet"
        frame = read(git_dir, path)
        if "kernel_source" in frame and frame.kernel_source.str.contains("graph").any():
            frame = frame[frame.kernel_source.str.contains("graph")]  # the CUDA-graph rows, not eager
        for row in frame.sort_values(["num_gpus", "message_size"]).itertuples():
            out.writerow([gpu, engine, version, int(row.num_gpus), 2 * int(row.message_size),
                          f"{float(row.latency) * 1e-3:.6e}", f"ai-dynamo/aiconfigurator@{COMMIT}:{path}"])


def llama_calls(frame: Any, kernel: str) -> Any:
    """The calls of `kernel` with head size 128, no sliding window (where the table has the column)
    and beam width 1, for the Llama family's per-device heads."""
    window = frame.window_size == 0 if "window_size" in frame else True
    frame = frame[(frame.kernel_source == kernel) & (frame.head_dim == 128) & window & (frame.beam_width == 1)]
    return frame[[(h, k) in HEADS for h, k in zip(frame.num_heads, frame.num_key_value_heads)]]


def attention(git_dir: str, out: Any) -> None:
    out.writerow(["gpu", "engine", "version", "heads", "kv_heads", "batch", "context", "kv_dtype", "seconds"])
    for gpu, engine, version, kernel in ATTENTION:
        frame = llama_calls(read(git_dir, f"{ROOT}/{gpu}/attention/{engine}/{version}/generation_attention_perf.parquet"), kernel)
        for row in frame.sort_values(["num_heads", "num_key_value_heads", "kv_cache_dtype", "batch_size", "step"]).itertuples():
            out.writerow([gpu, engine, version, int(row.num_heads), int(row.num_key_value_heads), int(row.batch_size),
                          int(row.step) + 1, str(row.kv_cache_dtype), f"{float(row.latency) * 1e-3:.6e}"])


def context(git_dir: str, out: Any) -> None:
    out.writerow(["gpu", "engine", "version", "heads", "kv_heads", "batch", "tokens", "attention_dtype", "kv_dtype",
                  "seconds"])
    for gpu, engine, version, kernel in ATTENTION + CONTEXT_ELSEWHERE:
        frame = llama_calls(read(git_dir, f"{ROOT}/{gpu}/attention/{engine}/{version}/context_attention_perf.parquet"), kernel)
        frame = frame[[(a, k) in CONTEXT_FORMATS[engine] for a, k in zip(frame.attn_dtype, frame.kv_cache_dtype)]]
        for row in frame.sort_values(["num_heads", "num_key_value_heads", "kv_cache_dtype", "batch_size", "isl"]).itertuples():
            out.writerow([gpu, engine, version, int(row.num_heads), int(row.num_key_value_heads), int(row.batch_size),
                          int(row.isl), str(row.attn_dtype), str(row.kv_cache_dtype), f"{float(row.latency) * 1e-3:.6e}"])


def gemm(git_dir: str, out: Any) -> None:
    out.writerow(["gpu", "engine", "version", "weights", "m", "n", "k", "weight_bytes", "seconds"])
    for gpu, engine, version, kernels in GEMM:
        frame = read(git_dir, f"{ROOT}/{gpu}/gemm/{engine}/{version}/gemm_perf.parquet")
        frame = frame[frame.kernel_source.isin(list(kernels)) & frame.m.isin([1, 2, 4, 8, 16])
                      & ((frame.kernel_source != "vllm_default") | (frame.gemm_dtype == "bfloat16"))]
        for row in frame.sort_values(["kernel_source", "n", "k", "m"]).itertuples():
            name, width = GEMM_KERNELS[row.kernel_source]
            size = int(row.n) * int(row.k) * width
            if 16e6 <= size <= 1.2e9:
                out.writerow([gpu, engine, version, name, int(row.m), int(row.n), int(row.k), size,
                              f"{float(row.latency) * 1e-3:.6e}"])


def dense(git_dir: str, out: Any) -> None:
    """TensorRT-LLM's NVFP4 GEMMs on Blackwell at a layer's large shapes (2,048 rows and more, N and
    K of 4,096 or more): the rate its dense GEMMs reach in prefill and large batches."""
    out.writerow(["gpu", "engine", "version", "weights", "m", "n", "k", "seconds"])
    for gpu, engine, version in DENSE:
        frame = read(git_dir, f"{ROOT}/{gpu}/gemm/{engine}/{version}/gemm_perf.parquet")
        frame = frame[(frame.gemm_dtype == "nvfp4") & (frame.m >= 2048) & (frame.n >= 4096) & (frame.k >= 4096)]
        for row in frame.sort_values(["n", "k", "m"]).itertuples():
            out.writerow([gpu, engine, version, "fp4", int(row.m), int(row.n), int(row.k),
                          f"{float(row.latency) * 1e-3:.6e}"])


def moe(git_dir: str, out: Any) -> None:
    out.writerow(["gpu", "engine", "version", "weights", "tokens", "hidden", "intermediate", "experts", "topk", "tp",
                  "seconds"])
    for gpu in ("h100_sxm", "h200_sxm"):
        for engine, version, kernel, collected, name in MOE:
            frame = read(git_dir, f"{ROOT}/{gpu}/moe/{engine}/{version}/moe_perf.parquet")
            frame = frame[(frame.kernel_source == kernel) & (frame.moe_dtype == collected)
                          & (frame.distribution == "balanced") & (frame.moe_ep_size == 1)]
            for row in frame.sort_values(["hidden_size", "inter_size", "num_experts", "topk", "moe_tp_size",
                                          "num_tokens"]).itertuples():
                out.writerow([gpu, engine, version, name, int(row.num_tokens), int(row.hidden_size), int(row.inter_size),
                              int(row.num_experts), int(row.topk), int(row.moe_tp_size),
                              f"{float(row.latency) * 1e-3:.5e}"])


if __name__ == "__main__":
    {"allreduce": allreduce, "attention": attention, "context": context, "dense": dense, "gemm": gemm, "moe": moe}[sys.argv[1]](sys.argv[2], csv.writer(sys.stdout, lineterminator="\n"))
