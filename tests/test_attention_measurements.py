"""The engines' decode-attention constants come from the calls NVIDIA's aiconfigurator measured
(docs/measurements/attention.md), and the deployment's decode attention reproduces them.

- `bench/microbench/results/aiconfigurator-attention.csv` holds the measured calls: vLLM's and
  SGLang's FlashAttention-3 decode with its KV-cache write, on an H100 SXM and an H200 SXM, BF16
  and FP8 KV, for the per-device heads of the Llama family, batch 1-2,048, context 2-131,072.
- The fit the page describes (per call, per piece, the bandwidth share of an FP8 cache) is
  recomputed here, so the engines' constants in `stdlib/engines/` cannot drift from the data.
- The model is held to every measured call, and the model before (the accelerator's FlashAttention-2
  call, no cost per piece, a paged cache at 0.81 of the streaming bandwidth and an FP8 cache at the
  full rate) is shown to miss them.
"""

from __future__ import annotations

import csv
import functools
from collections.abc import Callable

import numpy as np
import pytest
from planc.pipeline import Compilation

from .conftest import REPO

CSV = REPO / "bench" / "microbench" / "results" / "aiconfigurator-attention.csv"
ROWS = list(csv.DictReader(CSV.open(encoding="utf-8")))
# the catalog's figures for the two parts: streaming bandwidth, a graph kernel's time (the KV-cache
# write, one of the layer's small kernels), FlashAttention-2's call (the model before), DRAM latency
PART = {"h200_sxm": (4.15e12, 0.84e-6, 9.0e-6), "h100_sxm": (2.97e12, 0.99e-6, 9.5e-6)}
MEMORY_LATENCY, UNITS, SPLITS, TILE = 348.1e-9, 132, 32, 128
ENGINES = ("sglang", "vllm")


def calls(engine: str) -> dict[str, np.ndarray]:
    rows = [r for r in ROWS if r["engine"] == engine]

    def column(name: str) -> np.ndarray:
        return np.array([float(r[name]) for r in rows])

    kv_bytes = np.array([1.0 if r["kv_dtype"] == "fp8" else 2.0 for r in rows])
    part = [PART[r["gpu"]] for r in rows]
    pieces = column("batch") * column("kv_heads")
    return {"seconds": column("seconds"), "pieces": pieces, "kv_bytes": kv_bytes,
            "bytes": pieces * column("context") * 128 * 2 * kv_bytes,
            "stream": np.array([p[0] for p in part]), "kernel": np.array([p[1] for p in part]),
            "fa2": np.array([p[2] for p in part])}


def model(c: dict[str, np.ndarray], latency: float | np.ndarray, piece: float, paged: float, narrow: float) -> np.ndarray:
    """`deployment.decode_attention_time` of one layer plus its call's fixed time and the cache write."""
    share = np.where(c["kv_bytes"] == 1, paged * narrow, paged)
    in_flight = c["pieces"] * SPLITS * TILE * 256 * c["kv_bytes"] / MEMORY_LATENCY
    bandwidth = np.minimum(c["stream"] * share, in_flight)
    return latency + c["kernel"] + c["pieces"] * piece / UNITS + c["bytes"] / bandwidth


def fit(c: dict[str, np.ndarray]) -> tuple[float, float, float, float]:
    """Call latency, piece time, paged share and narrow-KV share minimising the squared relative
    error: for each pair of shares on a grid of 0.01 the two times are a linear least-squares fit."""
    t = c["seconds"]
    best: tuple[float, float, float, float, float] | None = None
    for paged in np.arange(0.8, 1.0001, 0.01):
        for narrow in np.arange(0.3, 1.0001, 0.01):
            rest = model(c, 0.0, 0.0, paged, narrow) - c["kernel"]
            a = np.stack([np.ones_like(t), c["pieces"] / UNITS], axis=1) / t[:, None]
            (latency, piece), *_ = np.linalg.lstsq(a, 1 - (rest + c["kernel"]) / t, rcond=None)
            error = float(np.sum((model(c, latency, piece, paged, narrow) / t - 1) ** 2))
            if best is None or error < best[0]:
                best = (error, float(latency), float(piece), float(paged), float(narrow))
    assert best is not None
    return best[1:]


@functools.cache
def fitted(engine: str) -> tuple[float, float, float, float]:
    """The fit of an engine's calls, once per test process (not at collection)."""
    return fit(calls(engine))

PLAN = """
import "models/llama-3.1-8b"
import "hardware/h200"
traffic t {{ daily_active_users = 1 M users; requests_per_user = 10 requests/user/day; peak_factor = 2
  prompt_tokens = 1000 tokens; output_tokens = 250 tokens }}
deployment d {{ model = llama_3_1_8b; hardware = h200; traffic = t; batch = 64; engine = {engine}{kv} }}
"""


def test_the_calls_cover_the_llama_heads_on_both_parts() -> None:
    assert len(ROWS) == 6240
    assert {(r["heads"], r["kv_heads"]) for r in ROWS} == {("32", "8"), ("64", "8"), ("32", "4"), ("16", "2"), ("8", "1")}
    assert {(r["gpu"], r["engine"], r["kv_dtype"]) for r in ROWS} == {
        (g, e, k) for g in PART for e in ENGINES for k in ("bfloat16", "fp8")}


@pytest.mark.parametrize("engine", ENGINES)
def test_the_engine_constants_are_the_fit_of_its_measured_calls(compile_text: Callable[[str], Compilation],
                                                                engine: str) -> None:
    latency, piece, paged, narrow = fitted(engine)
    c = compile_text(PLAN.format(engine=engine, kv=""))
    assert c.ok and c.lowered is not None, [d.message for d in c.diagnostics]
    v = c.lowered.values
    assert float(v[f"{engine}.attention_latency"]) == pytest.approx(latency, rel=0.02)
    assert float(v[f"{engine}.attention_piece_time"]) == pytest.approx(piece, rel=0.03)
    assert float(v[f"{engine}.paged_attention_efficiency"]) == pytest.approx(paged, abs=0.005)
    assert float(v[f"{engine}.narrow_kv_attention_efficiency"]) == pytest.approx(narrow, abs=0.005)
    # the deployment's decode attention is that model: Llama-3.1-8B on an H200, 64 sequences, 8 KV
    # heads in each of 32 layers, each piece's fixed time shared by the 132 SMs
    assert v["d.attention_call_latency"] == v[f"{engine}.attention_latency"]
    bytes_time = float(v["d.decode_kv_bytes"]) / float(v["d.attention_bandwidth"])
    assert float(v["d.decode_attention_time"]) == pytest.approx(
        bytes_time + 32 * 64 * 8 * float(v[f"{engine}.attention_piece_time"]) / 132, rel=1e-12)
    assert float(v["d.attention_bandwidth"]) == pytest.approx(4.15e12 * float(v[f"{engine}.paged_attention_efficiency"]))
    fp8 = compile_text(PLAN.format(engine=engine, kv="; kv = fp8"), name="fp8.plan")
    assert fp8.lowered is not None
    assert float(fp8.lowered.values["d.attention_bandwidth"]) == pytest.approx(
        float(v["d.attention_bandwidth"]) * float(v[f"{engine}.narrow_kv_attention_efficiency"]))


@pytest.mark.parametrize("engine", ENGINES)
def test_the_model_reproduces_every_measured_call(engine: str) -> None:
    c = calls(engine)
    error = model(c, *fitted(engine)) / c["seconds"] - 1
    assert np.median(np.abs(error)) < 0.12 and np.percentile(np.abs(error), 90) < 0.26
    assert abs(np.median(error)) < 0.03
    # the model before: FlashAttention-2's call, nothing per piece, 0.81 of the stream for a paged
    # cache whatever its dtype; it was fast by a fifth at the median, by far more for many short
    # sequences, where each piece's fixed work, not the bytes, sets the time
    before = model(c, c["fa2"], 0.0, 0.81, 1.0) / c["seconds"] - 1
    assert np.median(before) < -0.15 and np.median(np.abs(before)) > 1.8 * np.median(np.abs(error))
    short = (c["bytes"] < 50e6) & (c["pieces"] >= 1024)
    assert np.median(before[short]) < -0.5 < np.median(error[short])
