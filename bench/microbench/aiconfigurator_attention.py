"""Extract the engines' measured decode attention from NVIDIA's aiconfigurator collections.

aiconfigurator (github:ai-dynamo/aiconfigurator) publishes, per GPU and engine version, the time of
one decode-attention call as the engine runs it: vLLM's FlashAttention-3 backend with its KV-cache
write (collector/vllm/collect_attn.py), SGLang's FA3 RadixAttention layer, which writes the cache
too (collector/sglang/collect_attn.py), for a batch of sequences of one context each, BF16 or FP8
KV cache. This keeps the rows of head size 128 with no sliding window for the per-device head
shapes of the Llama family: 32 query and 8 KV heads (Llama-3.1-8B), 64 and 8 (-70B on one
device), 32 and 4, 16 and 2, 8 and 1 (-70B at TP 2, 4 and 8). `step` + 1 is the context.

Run once with pandas and pyarrow (not dependencies of plan), on a mirror of the repository:

    python bench/microbench/aiconfigurator_attention.py MIRROR_GIT_DIR > bench/microbench/results/aiconfigurator-attention.csv

`docs/measurements/attention.md` reads the CSV; `tests/test_attention_measurements.py` refits the
engines' constants from it.
"""

from __future__ import annotations

import csv
import io
import subprocess
import sys

COMMIT = "095f58a51c4ca8e61b66ec108d86f223f8d559ce"
ROOT = "aic-core/src/aiconfigurator_core/systems/data"
FILES = [  # (gpu, engine, version, kernel_source)
    ("h100_sxm", "vllm", "0.24.0", "vllm_flash_attn_fa3"), ("h200_sxm", "vllm", "0.24.0", "vllm_flash_attn_fa3"),
    ("h100_sxm", "sglang", "0.5.14", "fa3"), ("h200_sxm", "sglang", "0.5.14", "fa3"),
]
HEADS = {(32, 8), (64, 8), (32, 4), (16, 2), (8, 1)}


def main(git_dir: str) -> None:
    import pandas as pd  # only here: the extraction's own dependency

    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["gpu", "engine", "version", "heads", "kv_heads", "batch", "context", "kv_dtype", "seconds"])
    for gpu, engine, version, kernel in FILES:
        path = f"{ROOT}/{gpu}/attention/{engine}/{version}/generation_attention_perf.parquet"
        blob = subprocess.run(["git", "--git-dir", git_dir, "show", f"{COMMIT}:{path}"],
                              check=True, capture_output=True).stdout
        frame = pd.read_parquet(io.BytesIO(blob))
        frame = frame[(frame.kernel_source == kernel) & (frame.head_dim == 128) & (frame.window_size == 0)
                      & (frame.beam_width == 1)]
        frame = frame[[(h, k) in HEADS for h, k in zip(frame.num_heads, frame.num_key_value_heads)]]
        for row in frame.sort_values(["num_heads", "num_key_value_heads", "kv_cache_dtype", "batch_size", "step"]).itertuples():
            out.writerow([gpu, engine, version, int(row.num_heads), int(row.num_key_value_heads), int(row.batch_size),
                          int(row.step) + 1, str(row.kv_cache_dtype), f"{float(row.latency) * 1e-3:.6e}"])


if __name__ == "__main__":
    main(sys.argv[1])
