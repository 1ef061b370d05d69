"""The engines' all-reduce constants come from the curves NVIDIA's aiconfigurator measured
(docs/measurements/allreduce.md), and the deployment's all-reduce reproduces them.

- `bench/microbench/results/aiconfigurator-allreduce.csv` holds the measured points: each engine's
  own all-reduce, replayed in a CUDA graph, at TP 2, 4 and 8 (2 and 4 on GB200) on the parts of
  each NVLink generation: A100 SXM (NVLink 3), H100 SXM and H200 SXM (NVLink 4), B200 and GB200
  (NVLink 5).
- The fit the page describes (latency, share of the link, half-message per engine and generation,
  by least squares in relative error) is recomputed here from those points, so the engines'
  constants in `stdlib/engines/` cannot drift from the data.
- The model's all-reduce time is held to every measured point from 4 KiB to 256 MiB, and on the
  Hopper parts the model it replaced (the engine's small-message latency plus the link's full rate
  below 8 MiB, NVLS-class NCCL beyond) is shown to miss them.
"""

from __future__ import annotations

import csv
from collections.abc import Callable

import numpy as np
import pytest
from planc.pipeline import Compilation

from .conftest import REPO

CSV = REPO / "bench" / "microbench" / "results" / "aiconfigurator-allreduce.csv"
ROWS = list(csv.DictReader(CSV.open(encoding="utf-8")))
GENERATIONS = {"nvlink3": ("a100_sxm",), "nvlink4": ("h100_sxm", "h200_sxm"), "nvlink5": ("b200_sxm", "gb200")}
LINK = {"a100_sxm": 300e9, "h100_sxm": 450e9, "h200_sxm": 450e9, "b200_sxm": 900e9, "gb200": 900e9}  # per direction
HARDWARE = {"nvlink3": "a100-80gb", "nvlink4": "h100-sxm", "nvlink5": "b200"}  # a catalog entry of each
ENGINES = ("sglang", "trtllm", "vllm")

PLAN = """
import "models/llama-3.1-70b"
import "hardware/{gpu}"
traffic t {{ daily_active_users = 1 M users; requests_per_user = 10 requests/user/day; peak_factor = 2
  prompt_tokens = 1000 tokens; output_tokens = 250 tokens }}
deployment d {{ model = llama_3_1_70b; hardware = {hw}; traffic = t; batch = 1; tensor_parallel = 4
  engine = {engine} }}
"""


def points(engine: str, parts: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """TP, bytes, seconds and link bandwidth of an engine's measured points on some parts, 4 KiB-256 MiB."""
    rows = [r for r in ROWS if r["engine"] == engine and r["gpu"] in parts and 4096 <= int(r["bytes"]) <= 256 << 20]
    return (np.array([int(r["tp"]) for r in rows], dtype=float), np.array([int(r["bytes"]) for r in rows], dtype=float),
            np.array([float(r["seconds"]) for r in rows]), np.array([LINK[r["gpu"]] for r in rows]))


def curve(latency: float, share: float, half: float, tp: np.ndarray, size: np.ndarray, link: np.ndarray) -> np.ndarray:
    """`deployment.allreduce_time` where the engine issues the all-reduce (docs/physics.md §6.1)."""
    return latency + 2 * (tp - 1) / tp * (size + half * size / (size + half)) / (share * link)


def fit(tp: np.ndarray, size: np.ndarray, seconds: np.ndarray, link: np.ndarray) -> tuple[float, float, float]:
    """Latency, share and half-message minimising the squared relative error: for each half-message
    on a logarithmic grid the other two are a linear least-squares fit (weights 1/t); a share above
    1 (faster than the link) is not a candidate."""
    best: tuple[float, float, float, float] | None = None
    for half in np.exp(np.linspace(np.log(1e4), np.log(1e9), 501)):
        bus = 2 * (tp - 1) / tp * (size + half * size / (size + half)) / link
        a = np.stack([np.ones_like(seconds), bus], axis=1) / seconds[:, None]
        (latency, inverse), *_ = np.linalg.lstsq(a, np.ones_like(seconds), rcond=None)
        if inverse < 1:
            continue
        error = float(np.sum((curve(latency, 1 / inverse, half, tp, size, link) / seconds - 1) ** 2))
        if best is None or error < best[0]:
            best = (error, float(latency), float(1 / inverse), float(half))
    assert best is not None
    return best[1], best[2], best[3]


def test_every_row_cites_its_collection() -> None:
    assert len(ROWS) == 12 * 3 * 23 + 3 * 2 * 23
    for r in ROWS:
        assert r["source"] == ("ai-dynamo/aiconfigurator@095f58a51c4ca8e61b66ec108d86f223f8d559ce:aic-core/src/"
                               f"aiconfigurator_core/systems/data/{r['gpu']}/comm/{r['engine']}/{r['version']}/"
                               "custom_allreduce_perf.parquet")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("generation", sorted(GENERATIONS))
def test_the_engine_constants_are_the_fit_of_its_measured_curve(compile_text: Callable[[str], Compilation],
                                                                engine: str, generation: str) -> None:
    gpu = HARDWARE[generation]
    c = compile_text(PLAN.format(engine=engine, gpu=gpu, hw=gpu.replace("-", "_")))
    assert c.ok and c.lowered is not None, [d.message for d in c.diagnostics]
    v = c.lowered.values
    latency, share, half = fit(*points(engine, GENERATIONS[generation]))
    got = [float(v[f"{engine}.allreduce_{name}[{generation}]"]) for name in ("latency", "link_share", "half_message")]
    assert got[0] == pytest.approx(latency, rel=0.03)
    assert got[1] == pytest.approx(share, rel=0.01)
    assert got[2] == pytest.approx(half, rel=0.05)
    # the plan's own all-reduce on a part of that generation is that curve (TP 4, one 16 KiB row of
    # Llama-3.1-70B at batch 1)
    size = float(v["d.allreduce_message"])
    assert size == 8192 * 2
    link = float(v["d.link_bandwidth"])
    assert float(v["d.allreduce_time"]) == pytest.approx(
        curve(*got, np.array([4.0]), np.array([size]), np.array([link]))[0], rel=1e-12)


def old_model(engine: str, tp: np.ndarray, size: np.ndarray) -> np.ndarray:
    """The model before, on the H100 and H200: the engine's 4 KiB latency from an eager unit test
    (vLLM 9 µs, the others 4.5 µs) plus the bus bytes at NVLink's full rate below 8 MiB; NCCL's NVLS
    curve on H100 from 8 MiB (27 µs across 8 GPUs, 478.87 GB/s, a 17.75 MB ramp) or its LL protocol,
    whichever is faster."""
    bus = 2 * (tp - 1) / tp
    own = (9e-6 if engine == "vllm" else 4.5e-6) + bus * size / 450e9
    measured = 27e-6 * (tp - 1) / 7 + bus * (size + 17.75e6 * size / (size + 17.75e6)) / 478.87e9
    low_latency = 6.6e-6 + 2 * (tp - 1) * 0.6e-6 + bus * size / 141e9
    return np.where(size < 8 << 20, own, np.minimum(measured, low_latency))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("generation", sorted(GENERATIONS))
def test_the_curve_reproduces_every_measured_point(engine: str, generation: str) -> None:
    tp, size, seconds, link = points(engine, GENERATIONS[generation])
    assert len(seconds) == {"nvlink3": 51, "nvlink4": 102, "nvlink5": 85}[generation]  # 4 KiB-256 MiB, each TP, each part
    error = np.abs(curve(*fit(tp, size, seconds, link), tp, size, link) / seconds - 1)
    assert np.median(error) < 0.17 and np.percentile(error, 90) < 0.48, (np.median(error), np.percentile(error, 90))
    if generation != "nvlink4":
        return
    before = np.abs(old_model(engine, tp, size) / seconds - 1)
    assert np.median(before) > 0.25 and np.median(before) > 2 * np.median(error)
    # where the fleet's decode batches fall (1-4 MiB at TP 8), the model before was fast by 2.5-3×
    # on TensorRT-LLM
    if engine == "trtllm":
        mid = (size >= 1 << 20) & (size <= 4 << 20) & (tp == 8)
        assert np.all(old_model(engine, tp, size)[mid] / seconds[mid] < 0.45)
