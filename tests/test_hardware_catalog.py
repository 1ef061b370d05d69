"""The accelerator catalog (`stdlib/hardware/*.plan`): every number sourced, peaks dense, memory sane,
and the roofline fields (compute units, on-chip memories, achievable rates, scale-out) set and within
the datasheet peaks.

One file per accelerator, one `accelerator` instance per file, named after the file
(`a100-40gb.plan` declares `a100_40gb`).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
from planc import diagnostics as dx
from planc.pipeline import Compilation, compile_plan
from planc.semantics.resolve import load_program
from planc.syntax import ast

from .conftest import REPO

HARDWARE = REPO / "stdlib" / "hardware"
FILES = sorted(HARDWARE.glob("*.plan"))

EXPECTED = {
    "a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "gh200", "b200", "gb200",
    "l4", "l40s", "mi300x", "mi325x", "tpu-v5e", "tpu-v5p", "tpu-v6e", "gaudi3",
}
# NVIDIA Hopper and Blackwell parts: the FP8 tensor peak is exactly twice the BF16 one (dense).
HOPPER_BLACKWELL = {"h100_sxm", "h100_pcie", "h200", "gh200", "b200", "gb200"}
# Inputs whose value comes from the kind's default, sourced there.
KIND_DEFAULTS = {"interconnect_latency", "collective_base_latency", "interconnect_step_latency", "collective_ll_bandwidth"}
# The per-operator roofline fields every entry sets (no defaults in the kind), each with the unit a
# positivity check compares it against: compute units and on-chip memories, measured achievable
# rates, and the reference system's scale-up domain and scale-out network.
ROOFLINE_FIELDS = {
    "compute_units": "0",
    "l2_cache": "0 B",
    "shared_memory_per_unit": "0 B",
    "stream_bandwidth": "0 B/s",
    "memory_latency": "0 s",
    "scale_up_domain": "0",
    "scale_out_bandwidth": "0 B/s",
    "scale_out_latency": "0 s",
}


def instance_name(path: Path) -> str:
    return path.stem.replace("-", "_")


def compiled(path: Path) -> Compilation:
    result = compile_plan(path)
    assert result.ok, [d.message for d in result.diagnostics]
    return result


def value(result: Compilation, node_id: str) -> Fraction:
    assert result.lowered is not None
    values = result.lowered.values
    assert node_id in values, f"{node_id} is not evaluated (is the entry given and used by a check?)"
    v = values[node_id]
    assert not isinstance(v, bool)
    return Fraction(v)


def test_catalog_covers_exactly_the_listed_accelerators() -> None:
    assert {p.stem for p in FILES} == EXPECTED


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_compiles_without_diagnostics_and_checks_pass(path: Path) -> None:
    result = compiled(path)
    assert not result.diagnostics, [d.message for d in result.diagnostics]
    assert result.exit_code == 0, "a ridge-point check failed"
    assert result.lowered is not None
    assert result.lowered.checks, "every catalog entry pins its ridge points with checks"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_input_node_has_a_source(path: Path) -> None:
    result = compiled(path)
    assert result.lowered is not None
    name = instance_name(path)
    nodes = [n for n in result.lowered.elaborated.nodes.values() if n.owner == name and n.is_input]
    assert nodes, f"no inputs of `{name}` found"
    missing = [n.field for n in nodes if n.field not in KIND_DEFAULTS and not (n.source or "").strip()]
    assert not missing, f"numbers without a source: {missing}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_assignment_in_the_file_has_a_source(path: Path) -> None:
    """Also covers map entries no check reads (the elaborator builds nodes only for used entries)."""
    program = load_program(path, dx.Sink())
    assert program is not None
    instances = [s for s in program.main.statements if isinstance(s, ast.InstanceDecl)]
    assert [i.name for i in instances] == [instance_name(path)]
    (instance,) = instances
    assert instance.kind == "accelerator"
    missing = [f.target.dotted for f in instance.fields if not (f.notes.source or "").strip()]
    assert not missing, f"numbers without a source: {missing}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_memory_does_not_exceed_marketed_memory(path: Path) -> None:
    result = compiled(path)
    name = instance_name(path)
    assert value(result, f"{name}.memory") <= value(result, f"{name}.marketed_memory")


@pytest.mark.parametrize("path", [p for p in FILES if instance_name(p) in HOPPER_BLACKWELL], ids=lambda p: p.stem)
def test_fp8_peak_is_twice_bf16_on_hopper_and_blackwell(path: Path) -> None:
    """A sparse figure slipped in for one of the two would break the exact 2x of the dense peaks."""
    result = compiled(path)
    name = instance_name(path)
    bf16 = value(result, f"{name}.peak_flops[bf16]")
    fp8 = value(result, f"{name}.peak_flops[fp8]")
    assert float(fp8) == pytest.approx(2 * float(bf16), rel=0.01)


def instance_of(path: Path) -> ast.InstanceDecl:
    program = load_program(path, dx.Sink())
    assert program is not None
    (instance,) = [s for s in program.main.statements if isinstance(s, ast.InstanceDecl)]
    return instance


def map_keys(instance: ast.InstanceDecl, field: str) -> set[str]:
    """The keys an instance gives a map field (`peak_flops[bf16] = ...`)."""
    return {
        f.target.steps[1].name
        for f in instance.fields
        if len(f.target.steps) == 2 and f.target.steps[0].name == field and f.target.steps[1].indexed
    }


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_entry_sets_the_roofline_fields(path: Path) -> None:
    """Every field a per-operator roofline reads is given, and `matmul_flops` covers every compute
    class `peak_flops` lists (so no deployment falls back to a peak the device cannot reach)."""
    instance = instance_of(path)
    assigned = {f.target.dotted for f in instance.fields}
    missing = [name for name in ROOFLINE_FIELDS if name not in assigned]
    assert not missing, f"roofline fields not set: {missing}"
    peak = map_keys(instance, "peak_flops")
    assert peak, "no peak_flops entries"
    assert map_keys(instance, "matmul_flops") == peak, "matmul_flops must give exactly the classes of peak_flops"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_achievable_rates_are_positive_and_within_the_peaks(path: Path, compile_text) -> None:  # type: ignore[no-untyped-def]
    """A measured figure never exceeds the datasheet peak: stream_bandwidth <= memory_bandwidth and
    matmul_flops[d] <= peak_flops[d] for every compute class d; every roofline field is positive."""
    name = instance_name(path)
    classes = sorted(map_keys(instance_of(path), "peak_flops"))
    lines = [f'import "hardware/{path.stem}"']
    lines += [f"check {name}.{field} > {zero}" for field, zero in ROOFLINE_FIELDS.items()]
    lines.append(f"check {name}.stream_bandwidth <= {name}.memory_bandwidth")
    lines += [f"check {name}.matmul_flops[{d}] <= {name}.peak_flops[{d}]" for d in classes]
    result = compile_text("\n".join(lines) + "\n", name=f"roofline_{name}.plan")
    assert result.ok, [d.message for d in result.diagnostics]
    assert result.exit_code == 0, "a roofline check failed"
    for field in ROOFLINE_FIELDS:
        assert value(result, f"{name}.{field}") > 0, field
    assert value(result, f"{name}.stream_bandwidth") <= value(result, f"{name}.memory_bandwidth")
    for d in classes:
        achievable = value(result, f"{name}.matmul_flops[{d}]")
        assert 0 < achievable <= value(result, f"{name}.peak_flops[{d}]"), d


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_entry_pins_its_achievable_figures_against_the_peaks(path: Path) -> None:
    """The entry itself checks stream_bandwidth and every matmul_flops class against the peaks, so
    `plan check` on the file catches a measured figure above the datasheet."""
    text = path.read_text(encoding="utf-8")
    name = instance_name(path)
    assert f"check {name}.stream_bandwidth <= {name}.memory_bandwidth" in text
    for d in sorted(map_keys(instance_of(path), "peak_flops")):
        assert f"check {name}.matmul_flops[{d}] <= {name}.peak_flops[{d}]" in text, d


FP8_ON_AMPERE = """
import "models/llama-3.1-8b"
import "hardware/a100-80gb"
traffic t {{ daily_active_users = 1 M users; requests_per_user = 10 requests/user/day; peak_factor = 2
  prompt_tokens = 1000 tokens; output_tokens = 250 tokens }}
deployment d {{ model = llama_3_1_8b; hardware = a100_80gb; traffic = t; batch = 16; context = 4096 tokens
  weights = {weights} }}
"""


def test_fp8_on_a_gpu_without_fp8_units_points_at_the_choice(compile_text) -> None:  # type: ignore[no-untyped-def]
    c = compile_text(FP8_ON_AMPERE.format(weights="fp8"))
    # one E0305 per map the deployment reads at the missing key (peak_flops, and matmul_flops where
    # the deployment physics reads the achievable rate too); the catalog gives both the same keys
    errors = [d for d in c.diagnostics if d.is_error]
    assert errors and all(d.code == "E0305" for d in errors)
    for d in errors:
        # the caret is in the stdlib formula; a label points at the user's line that chose FP8
        assert any(label.span.file.path == "plan.plan" and "weights" in label.text for label in d.secondary)
        assert d.help is not None and "`fp32`, `bf16`, `fp16`, `int8`" in d.help
    # the weight-only format serves the same checkpoint: 1 byte per weight, multiplied in BF16
    ok = compile_text(FP8_ON_AMPERE.format(weights="fp8_weight_only"), name="w.plan")
    assert ok.ok and ok.lowered is not None
    v = ok.lowered.values
    assert v["d.compute_flops"] == v["a100_80gb.peak_flops[bf16]"]
    embeddings = 2 * 128_256 * 4_096  # untied input and output embeddings, kept in BF16
    assert v["d.weight_bytes"] == (8_030_261_248 - embeddings) * 1 + embeddings * 2
