"""The accelerator's kernel constants come from the H200 microbenchmark (docs/measurements/h200.md),
and the deployment's GEMM operator reproduces what was measured.

- Each constant of `stdlib/hardware/h200.plan` that cites the page is recomputed here from the raw
  results the page records (bench/microbench/results/), so neither can drift from the other.
- The dense-GEMM operator (`gemm_time`, streamed weights and FLOPs joined by the roofline norm,
  plus each GEMM's fixed time) is held to the 70 measured GEMM stacks of Llama-3.1-8B (BF16, FP8)
  and Llama-3.1-70B (FP8) from 1 to 8,192 rows, and the plain max it replaced is shown to miss them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from planc.pipeline import Compilation
from planc.vector import evaluate_many

from .conftest import REPO

RESULTS = REPO / "bench" / "microbench" / "results"
RUN1 = json.loads((RESULTS / "h200-2026-12-04-run1.json").read_text(encoding="utf-8"))
RUN2 = json.loads((RESULTS / "h200-2026-12-04-run2.json").read_text(encoding="utf-8"))
H100 = json.loads((RESULTS / "h100-2026-12-06-run1.json").read_text(encoding="utf-8"))
LAYERS = {"llama-3.1-8b": 32, "llama-3.1-70b": 80}
H200_PART = {"part_file": "h200", "part": "h200"}
H100_PART = {"part_file": "h100-sxm", "part": "h100_sxm"}

PLAN = """
import "models/{model}"
import "hardware/{part_file}"
accelerator hx = {part} {{ {override} }}
traffic t {{ daily_active_users = 1 M users; requests_per_user = 10 requests/user/day; peak_factor = 2
  prompt_tokens = 1000 tokens; output_tokens = 250 tokens }}
deployment d {{ model = {instance}; hardware = hx; traffic = t; batch = 1; weights = {weights} }}
"""


def values(c: Compilation) -> dict[str, Any]:
    assert c.ok, [d.message for d in c.diagnostics]
    assert c.lowered is not None
    return c.lowered.values


def fit(points: list[tuple[float, float, float]]) -> tuple[float, float]:
    """Least squares of time = bytes / bandwidth + kernels · fixed, in relative error: (bandwidth, fixed)."""
    a = np.array([[b / t, n / t] for b, n, t in points])
    (inverse, fixed), *_ = np.linalg.lstsq(a, np.ones(len(points)), rcond=None)
    return 1 / inverse, fixed


def stack_points(runs: tuple[dict[str, Any], ...]) -> list[tuple[float, float, float]]:
    """(bytes, GEMMs, seconds) of each measured model stack at M = 1 and of its output head alone; the
    row-scaled FP8 kernel of this PyTorch build grounds nothing (see the pages) and is left out."""
    points = []
    for run in runs:
        for key, rows in run["gemm_stack"].items():
            if key.endswith("/fp8"):
                continue
            model, _, *layers = key.split("/")
            gemms = 4 * (int(layers[0].removesuffix("layers")) if layers else LAYERS[model])
            points += [(rows[0]["weight_bytes"], gemms, rows[0]["layers_s"]), (rows[0]["head_bytes"], 1, rows[0]["head_s"])]
    return points


LARGE_M = {"llama-3.1-8b/bf16": 8192, "llama-3.1-70b/bf16/40layers": 4096, "llama-3.1-8b/fp8_tensor": 8192,
           "llama-3.1-70b/fp8_tensor": 2048}
"""The stacks at large M whose rate over MAMF is a part's gemm_shape_efficiency: BF16 and FP8, 8B and 70B shapes."""


def large_m_shares(runs: tuple[dict[str, Any], ...], mamf: dict[str, float]) -> list[float]:
    return [row["layers_TFLOP/s"] / mamf["fp8" if "fp8" in key else "bf16"]
            for run in runs for key, m in LARGE_M.items() for row in run["gemm_stack"].get(key, []) if row["m"] == m]


def test_each_h200_kernel_constant_is_the_measured_figure(compile_text: Callable[[str], Compilation]) -> None:
    v = values(compile_text(PLAN.format(model="llama-3.1-8b", instance="llama_3_1_8b", weights="bf16", override="", **H200_PART)))
    # a GEMM streams its weights at the device's streaming bandwidth and costs a fixed time more:
    # isolated decode-shaped GEMMs (nine shapes, BF16 and FP8, M = 1 and 16) ...
    isolated = fit([(x["bytes"], 1, x["s"]) for x in RUN2["gemm_shapes"] if x["m"] in (1, 16)])
    # ... and the model stacks at M = 1 (each stack's GEMMs, and its output head alone)
    whole = fit(stack_points((RUN1, RUN2)))
    assert 4.0e12 < isolated[0] < 4.1e12 and 4.2e12 < whole[0] < 4.25e12  # 4.07 and 4.23 TB/s
    assert whole[0] == pytest.approx(RUN1["stream"]["read"]["GB/s"] * 1e9, rel=0.01)  # the read bandwidth itself
    gemm_latency = float(v["hx.gemm_latency"])
    assert gemm_latency == 3.7e-6
    assert min(isolated[1], whole[1]) < gemm_latency < max(isolated[1], whole[1])  # 3.64 and 3.82 µs
    # a layer's GEMMs at large M reach 0.82-0.85 of MAMF: BF16 (8B at 8,192 rows, 70B at 4,096) and FP8
    shares = large_m_shares((RUN1, RUN2), {"bf16": 794.5, "fp8": 1453.4})
    assert len(shares) == 5 and min(shares) > 0.82 and max(shares) < 0.86
    assert float(v["hx.gemm_shape_efficiency"]) == pytest.approx(float(np.mean(shares)), abs=0.01)
    # one small kernel of a CUDA graph: launch to completion
    assert float(v["hx.kernel_latency"]) == pytest.approx(RUN1["launch"]["graph_s_per_kernel"], abs=0.005e-6)
    # a decode-attention call before its bytes count: one sequence of 256-512 tokens, 9.2-9.6 µs
    short = [x["s"] for x in RUN2["attention_sweep"] if x["batch"] == 1 and x["context"] <= 512]
    assert len(short) == 2 and float(v["hx.attention_latency"]) <= min(short) and max(short) < 10e-6


H200_STACKS = [("llama-3.1-8b", "bf16", RUN1, "llama-3.1-8b/bf16"), ("llama-3.1-8b", "bf16", RUN2, "llama-3.1-8b/bf16"),
               ("llama-3.1-8b", "fp8", RUN2, "llama-3.1-8b/fp8_tensor"), ("llama-3.1-70b", "fp8", RUN2, "llama-3.1-70b/fp8_tensor")]
H100_STACKS = [("llama-3.1-8b", "bf16", H100, "llama-3.1-8b/bf16"), ("llama-3.1-8b", "fp8", H100, "llama-3.1-8b/fp8_tensor"),
               ("llama-3.1-70b", "fp8", H100, "llama-3.1-70b/fp8_tensor")]


def stack_errors(compile_text: Callable[[str], Compilation], override: str, part: dict[str, str] = H200_PART,
                 cases: list[tuple[str, str, dict[str, Any], str]] = H200_STACKS) -> list[tuple[str, int, float]]:
    """The deployment's dense GEMMs of one forward at each measured M, against the measured stack."""
    errors = []
    for model, weights, run, key in cases:
        c = compile_text(PLAN.format(model=model, instance=model.replace("-", "_").replace(".", "_"), weights=weights,
                                     override=override, **part))
        v = values(c)
        assert c.lowered is not None
        rows = run["gemm_stack"][key]
        rows_of = np.array([row["m"] for row in rows])
        out = evaluate_many(c.lowered.elaborated, v, {"d.batch": rows_of}, None)
        gemm = np.asarray(out["d@target_step_time.gemm_time"], dtype=float).reshape(-1)
        fixed = (v["llama_3_1_8b.layers" if "8b" in model else "llama_3_1_70b.layers"] * v["vllm.gemm_kernels_per_layer"] + 1) \
            * v["hx.gemm_latency"]
        errors += [(key, row["m"], (g + float(fixed)) / (row["layers_s"] + row["head_s"]) - 1) for row, g in zip(rows, gemm)]
    return errors


def test_the_gemm_operator_reproduces_the_measured_stacks(compile_text: Callable[[str], Compilation]) -> None:
    errors = stack_errors(compile_text, "")
    assert len(errors) == 70
    size = np.array([abs(e) for *_, e in errors])
    assert float(np.median(size)) < 0.025 and float(size.max()) < 0.12 and int((size > 0.08).sum()) <= 3
    # the plain max (a large norm order) misses the points near the ridge by over a fifth
    plain = np.array([abs(e) for *_, e in stack_errors(compile_text, "roofline_order = 64")])
    assert float(plain.max()) > 0.2 and int((plain > 0.08).sum()) >= 15


def test_the_roofline_norm_is_the_slower_time_far_from_the_ridge(compile_text: Callable[[str], Compilation]) -> None:
    # batch 1: weights only, the FLOPs a rounding error; the norm adds (t_flop/t_mem)²/2 of it
    v = values(compile_text(PLAN.format(model="llama-3.1-8b", instance="llama_3_1_8b", weights="bf16", override="", **H200_PART)))
    memory, compute = v["d.gemm_memory_time"], v["d@target_step_time.gemm_compute_time"]
    assert memory == Fraction(15_009_849_344) / v["hx.stream_bandwidth"]
    ratio = float(compute / memory)
    assert ratio < 0.01
    assert float(v["d@target_step_time.gemm_time"]) == pytest.approx(float(memory) * (1 + ratio ** 2) ** 0.5, rel=1e-12)


BIG = "marketed_memory = 200 GiB\n memory = 199 GiB"  # Llama-3.1-70B in FP8 fills one H100: room for the stack alone


def test_each_h100_kernel_constant_is_the_measured_figure(compile_text: Callable[[str], Compilation]) -> None:
    v = values(compile_text(PLAN.format(model="llama-3.1-8b", instance="llama_3_1_8b", weights="bf16", override="", **H100_PART)))
    stream = float(v["hx.stream_bandwidth"])
    isolated = fit([(x["bytes"], 1, x["s"]) for x in H100["gemm_shapes"] if x["m"] in (1, 16)])
    whole = fit(stack_points((H100,)))
    # the GEMMs stream at the published BabelStream Triad the catalog keeps (2.99 and 2.97 TB/s against 2.97) ...
    assert isolated[0] == pytest.approx(stream, rel=0.01) and whole[0] == pytest.approx(stream, rel=0.01)
    # ... and each costs a fixed time more: 3.68 and 3.35 µs
    gemm_latency = float(v["hx.gemm_latency"])
    assert gemm_latency == 3.5e-6 and min(isolated[1], whole[1]) < gemm_latency < max(isolated[1], whole[1])
    shares = large_m_shares((H100,), {"bf16": 794.5, "fp8": 1402.6})  # the catalog's published MAMF (stas00/ml-engineering)
    assert len(shares) == 4 and min(shares) > 0.85 and max(shares) < 0.87
    assert float(v["hx.gemm_shape_efficiency"]) == pytest.approx(float(np.mean(shares)), abs=0.01)
    assert float(v["hx.kernel_latency"]) == pytest.approx(H100["launch"]["graph_s_per_kernel"], abs=0.005e-6)
    short = [x["s"] for x in H100["attention_sweep"] if x["batch"] == 1 and x["context"] <= 512]
    assert len(short) == 2 and float(v["hx.attention_latency"]) <= min(short) < max(short) < 10e-6


def test_the_h100_stacks_need_their_own_roofline_order(compile_text: Callable[[str], Compilation]) -> None:
    def sizes(override: str) -> np.ndarray:
        errors = stack_errors(compile_text, BIG + "\n " + override, H100_PART, H100_STACKS)
        assert len(errors) == 52
        return np.array([abs(e) for *_, e in errors])

    own = sizes("")  # the catalog's p = 3
    assert float(np.median(own)) < 0.02 and float(own.max()) < 0.09 and int((own > 0.08).sum()) <= 1
    h200 = sizes("roofline_order = 2")
    assert float(h200.max()) > 0.19 and int((h200 > 0.08).sum()) >= 5  # 70B FP8 at 256 rows, +19.5 %
    plain = sizes("roofline_order = 64")
    assert float(plain.max()) > 0.2 and int((plain > 0.08).sum()) >= 8


def test_tinygemm_streams_int4_weights_at_the_measured_share(compile_text: Callable[[str], Compilation]) -> None:
    """gpt-fast's INT4 kernel at one row, against cuBLAS BF16 on the same Llama-2-7B layers: the pytorch engine's
    weight_only_bandwidth is the share of the streaming bandwidth it reaches, once each GEMM's fixed time is taken out."""
    assert H100["weight_only_check"]["int4_vs_dequantised"] < 0.01  # the kernel computes the dequantised product
    plan = PLAN.format(model="llama-3.1-8b", instance="llama_3_1_8b", weights="int4_g32", override="", **H100_PART)
    v = values(compile_text(plan.replace("weights = int4_g32", "weights = int4_g32; engine = pytorch")))
    stream, latency = float(v["hx.stream_bandwidth"]), float(v["hx.gemm_latency"])
    row = {r["kind"]: r for r in H100["weight_only"] if r["m"] == 1}
    share = {k: r["bytes"] / (r["s"] - 5 * r["layers"] * latency) / stream for k, r in row.items()}
    assert share["bf16"] == pytest.approx(1, abs=0.02)  # cuBLAS streams BF16 weights at the device's rate
    assert float(v["pytorch.weight_only_bandwidth"]) == pytest.approx(share["int4"], abs=0.005) == 0.69
    assert v["d.weight_only_gemm"] is True
    assert float(v["d.weight_bandwidth"]) == pytest.approx(0.69 * stream)
    # group 32 with a BF16 scale and zero per group: 4 + 32/32 bits per weight
    assert float(v["dtype.int4_g32.bytes"]) == 0.625


def test_a_format_multiplied_at_its_own_width_streams_at_the_devices_rate(compile_text: Callable[[str], Compilation]) -> None:
    for weights in ("bf16", "fp8", "fp8_block"):
        plan = PLAN.format(model="llama-3.1-8b", instance="llama_3_1_8b", weights=weights, override="", **H100_PART)
        v = values(compile_text(plan.replace(f"weights = {weights}", f"weights = {weights}; engine = pytorch")))
        assert v["d.weight_only_gemm"] is False and v["d.weight_bandwidth"] == v["d.achieved_bandwidth"]


@pytest.mark.parametrize(("override", "text"), [("roofline_order = 0", "0"), ("gemm_shape_efficiency = 1.2", "1.2"),
                                                ("gemm_latency = -1 us", "-1 us")])
def test_a_kernel_constant_out_of_range_is_an_error_at_the_users_line(compile_text: Callable[[str], Compilation],
                                                                       override: str, text: str) -> None:
    c = compile_text(PLAN.format(model="llama-3.1-8b", instance="llama_3_1_8b", weights="bf16", override=override, **H200_PART))
    assert not c.ok and c.exit_code == 2
    [error] = [d for d in c.diagnostics if d.is_error]
    assert error.code == "E0404" and error.primary is not None
    assert error.primary.span.text == text and not error.primary.span.file.is_stdlib


def test_the_grouped_expert_gemms_are_recorded_as_the_pages_say() -> None:
    """The figures docs/measurements/ gives for PyTorch's grouped GEMM on Mixtral-8x7B's experts
    (which the stdlib does not take: the engines run their own MoE kernels), recomputed from the raw
    rows: the touched experts' bandwidth over M = 1-4 and 8-256, and the FLOP rate at 4,096."""
    run3 = json.loads((RESULTS / "h200-2026-12-04-run3.json").read_text(encoding="utf-8"))
    pages = {"h200": ((RUN1, run3), 4.15e12, 794.5e12), "h100": ((H100,), 2.97e12, 794.5e12)}
    quoted = {"h200": ("2.41–2.58 TB/s at M = 1–4", "2.64–3.02 TB/s", "58–73 %", "582–589 TFLOP/s", "0.73–0.74 of"),
              "h100": ("2.20–2.39 TB/s at M = 1–4", "2.57–2.77 TB/s", "74–93 %", "598 TFLOP/s", "0.75 of MAMF")}
    for page, (runs, stream, mamf) in pages.items():
        rows = [r for run in runs for r in run["moe_stack"]]
        few = [r["touched_GB/s"] * 1e9 for r in rows if r["m"] <= 4]
        mid = [r["touched_GB/s"] * 1e9 for r in rows if 8 <= r["m"] <= 256]
        big = [r["TFLOP/s"] for r in rows if r["m"] == 4096]
        assert all(r["experts_touched"] == 8 for r in rows if r["m"] >= 8)
        lo, hi = min(mid), max(mid)
        figures = (f"{min(few) / 1e12:.2f}–{max(few) / 1e12:.2f} TB/s at M = 1–4", f"{lo / 1e12:.2f}–{hi / 1e12:.2f} TB/s",
                   f"{round(100 * min(r['touched_GB/s'] * 1e9 for r in rows if r['m'] <= 256) / stream)}–{round(100 * hi / stream)} %",
                   "–".join(sorted({f"{min(big):.0f}", f"{max(big):.0f}"})) + " TFLOP/s",
                   "–".join(sorted({f"{min(big) * 1e12 / mamf:.2f}", f"{max(big) * 1e12 / mamf:.2f}"})) + " of")
        text = (REPO / "docs" / "measurements" / f"{page}.md").read_text(encoding="utf-8")
        for want, got in zip(quoted[page], figures, strict=True):
            assert want in text and want.startswith(got), (page, want, got)
