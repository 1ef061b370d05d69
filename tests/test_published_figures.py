"""End-to-end figures the stdlib must reproduce, each with its source and tolerance.

The efficiencies and overheads a deployment needs are inputs; here they are set to the values
measured in the same report, so what is tested is the memory arithmetic in the stdlib, not a
constant tuned to the answer.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import pytest
from planc.pipeline import Compilation

PLAN = """
import "models/{file}"
import "hardware/h100-sxm"
traffic t {{
  daily_active_users = 1 M users
  requests_per_user = 10 requests/user/day
  peak_factor = 2
  prompt_tokens = 1000 tokens
  output_tokens = 250 tokens
}}
deployment d {{
  model = {model}
  hardware = h100_sxm
  traffic = t
  weights = {weights}
  tensor_parallel = {tp}
  batch = 1
  context = 8192 tokens
  activation_peak = {activation} GiB
  non_torch_memory = {non_torch} GiB
  cuda_graphs = false
  memory_utilization = 0.9
}}
"""


def gib(c: Compilation, node: str) -> float:
    assert c.ok, [d.message for d in c.diagnostics]
    assert c.lowered is not None
    return float(c.lowered.values[node]) / 2**30


@pytest.mark.parametrize(("file", "model", "weights", "tp", "activation", "non_torch", "weights_gib", "kv_gib"), [
    # vLLM v0.11 on H100 (CUDA sees 79.18 GiB), gpu_memory_utilization 0.9 (its default then) — "vLLM Empirical Memory
    # Profiling Results" (docs/physics.md §4.3): Llama-3.1-8B TP1 weights 14.99 GiB, KV 51.38 GiB
    ("llama-3.1-8b", "llama_3_1_8b", "bf16", 1, 4.76, 0.13, 14.99, 51.38),
    # same source: Llama-3.3-70B-FP8-dynamic at TP2, weights 33.88 GiB per GPU, KV 32.00 GiB
    ("llama-3.3-70b", "llama_3_3_70b", "fp8", 2, 4.84, 0.55, 33.88, 32.00),
])
def test_vllm_memory_split(compile_text: Callable[[str], Compilation], file: str, model: str, weights: str,
                           tp: int, activation: float, non_torch: float, weights_gib: float, kv_gib: float) -> None:
    c = compile_text(PLAN.format(file=file, model=model, weights=weights, tp=tp,
                                 activation=activation, non_torch=non_torch))
    # tolerance 0.5 %: the measured split also counts a few buffers outside these terms
    assert gib(c, "d.weight_bytes_per_device") == pytest.approx(weights_gib, rel=5e-3)
    assert gib(c, "d.kv_budget") == pytest.approx(kv_gib, rel=5e-3)


def test_disaggregated_kv_transfer(compile_text: Callable[[str], Compilation]) -> None:
    # docs/physics.md §6.4 (DistServe's method): Llama-3.1-70B, 1,000-token prompt, BF16 KV = 328 MB,
    # 6.6 ms at 50 GB/s
    c = compile_text(PLAN.format(file="llama-3.1-70b", model="llama_3_1_70b", weights="fp8", tp=4,
                                 activation=4.84, non_torch=1))
    assert c.lowered is not None
    assert float(c.lowered.values["d.kv_transfer_time"]) == pytest.approx(6.55e-3, rel=1e-2)


def test_training_compute_matches_the_llama_3_paper(compile_text) -> None:  # type: ignore[no-untyped-def]
    # Llama 3 paper (Dubey et al. 2024, §3.3): the 405B flagship was pre-trained with 3.8e25 FLOPs
    # on 15.6T tokens; the distillation kind's student term is that 6·N·D rule
    c = compile_text("""
import "models/llama-3.1-405b"
import "models/llama-3.1-8b"
import "hardware/h100-sxm"
distillation run {
  student = llama_3_1_405b
  teacher = llama_3_1_8b
  tokens = 15.6 T tokens
  hardware = h100_sxm
  devices = 16384 devices
}
""")
    assert c.ok and c.lowered is not None
    v = c.lowered.values
    assert float(v["run.student_flops"]) == pytest.approx(3.8e25, rel=0.01)
    # the teacher adds one forward pass per token: 2·N_teacher·D, exactly
    assert v["run.teacher_flops"] == 2 * v["llama_3_1_8b.active_params"] * Fraction(156, 10) * 10**12
    assert v["run.flops"] == v["run.student_flops"] + v["run.teacher_flops"]


QUANTIZATION = """
import "models/llama-3.1-70b"
import "hardware/h100-sxm"
quantization ptq {{
  model = llama_3_1_70b
  target = int4
  hardware = h100_sxm
{quality}}}
quantization qat = ptq {{ qat_tokens = 2 G tokens; quality_drop = 1 % }}
"""


def test_quantization_prices_qat_and_saves_the_published_int4_bytes(compile_text) -> None:  # type: ignore[no-untyped-def]
    c = compile_text(QUANTIZATION.format(quality="  quality_drop = 2 %\n"))
    assert c.ok and c.lowered is not None
    v = c.lowered.values
    params = v["llama_3_1_70b.params"]
    assert params == 70_553_706_496
    # W4A16 with group-128 FP16 scales: 4 + 16/128 bits = 0.515625 B per weight (docs/physics.md §9.1),
    # so INT4 saves 1.484375 B per weight against BF16
    assert v["ptq.weight_bytes_saved"] == params * Fraction(1484375, 10**6)
    # PTQ trains nothing; QAT is the 6·N·D rule over its tokens (dense model: active = total)
    assert v["ptq.qat_flops"] == 0 and v["ptq.qat_cost"] == 0
    assert v["qat.qat_flops"] == 6 * params * 2 * 10**9
    # at 40 % of the H100 SXM's 989.4 TFLOP/s dense BF16 on 8 devices: 3.10 days, 594 device-hours
    seconds = 6 * 70_553_706_496 * 2e9 / (989.4e12 * 0.4 * 8)
    assert float(v["qat.qat_time"]) == pytest.approx(seconds, rel=1e-3)
    assert v["qat.qat_device_hours"] == v["qat.qat_time"] * 8  # values are in base units (seconds)
    assert v["ptq.quality_kept"] == Fraction(98, 100) and v["qat.quality_kept"] == Fraction(99, 100)


def test_quantization_accuracy_must_be_stated(compile_text) -> None:  # type: ignore[no-untyped-def]
    # the quality a quantised model keeps cannot be derived: a plan that does not state it is invalid
    c = compile_text(QUANTIZATION.format(quality=""))
    assert not c.ok
    assert any(d.code == "E0204" and "quality_drop" in d.message for d in c.diagnostics)
