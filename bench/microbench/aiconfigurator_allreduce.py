"""Extract the engines' measured all-reduce curves from NVIDIA's aiconfigurator collections.

aiconfigurator (github:ai-dynamo/aiconfigurator) publishes, per GPU and engine version, the time of
one tensor-parallel all-reduce as the engine issues it (`tensor_model_parallel_all_reduce` of vLLM
and SGLang, TensorRT-LLM's AllReduce with its AUTO strategy), captured in a CUDA graph and replayed
(collector/network/collect_all_reduce.py). `message_size` there counts BF16 elements; the CSV this
writes gives bytes (2 per element) and seconds, with the file each row comes from.

Run once with pandas and pyarrow (not dependencies of plan), on a mirror of the repository:

    python bench/microbench/aiconfigurator_allreduce.py MIRROR_GIT_DIR > bench/microbench/results/aiconfigurator-allreduce.csv

`docs/measurements/allreduce.md` reads the CSV; `tests/test_allreduce_measurements.py` refits the
engines' constants from it.
"""

from __future__ import annotations

import csv
import io
import subprocess
import sys

COMMIT = "095f58a51c4ca8e61b66ec108d86f223f8d559ce"
ROOT = "aic-core/src/aiconfigurator_core/systems/data"
FILES = [  # (gpu, engine, version): the newest collection of each engine on each part, by NVLink generation
    ("a100_sxm", "vllm", "0.14.0"), ("a100_sxm", "sglang", "0.5.10"), ("a100_sxm", "trtllm", "1.0.0"),  # NVLink 3
    ("h100_sxm", "vllm", "0.24.0"), ("h200_sxm", "vllm", "0.24.0"),  # NVLink 4
    ("h100_sxm", "sglang", "0.5.14"), ("h200_sxm", "sglang", "0.5.14"),
    ("h100_sxm", "trtllm", "1.3.0rc20"), ("h200_sxm", "trtllm", "1.3.0rc20"),
    ("b200_sxm", "vllm", "0.24.0"), ("gb200", "vllm", "0.24.0"),  # NVLink 5
    ("b200_sxm", "sglang", "0.5.14"), ("gb200", "sglang", "0.5.14"),
    ("b200_sxm", "trtllm", "1.3.0rc20"), ("gb200", "trtllm", "1.3.0rc20"),
]


def main(git_dir: str) -> None:
    import pandas as pd  # only here: the extraction's own dependency

    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["gpu", "engine", "version", "tp", "bytes", "seconds", "source"])
    for gpu, engine, version in FILES:
        path = f"{ROOT}/{gpu}/comm/{engine}/{version}/custom_allreduce_perf.parquet"
        blob = subprocess.run(["git", "--git-dir", git_dir, "show", f"{COMMIT}:{path}"],
                              check=True, capture_output=True).stdout
        frame = pd.read_parquet(io.BytesIO(blob))
        if "kernel_source" in frame and frame.kernel_source.str.contains("graph").any():
            frame = frame[frame.kernel_source.str.contains("graph")]  # the CUDA-graph rows, not eager
        for row in frame.sort_values(["num_gpus", "message_size"]).itertuples():
            out.writerow([gpu, engine, version, int(row.num_gpus), 2 * int(row.message_size),
                          f"{float(row.latency) * 1e-3:.6e}", f"ai-dynamo/aiconfigurator@{COMMIT}:{path}"])


if __name__ == "__main__":
    main(sys.argv[1])
