"""Microbenchmarks that ground the accelerator constants of the step physics on a CUDA GPU.

Contract: run on one GPU with PyTorch (`python3 bench/microbench/gpu_ops.py OUT_DIR`); writes
`OUT_DIR/gpu_ops.json` (every measurement, with the shapes, bytes and FLOPs it counted) and prints a
short table. It measures what each operator class of `stdlib/kinds/deployment.plan` assumes, on
random data, timed as CUDA-graph replays with device events (median of the repeats, after warm-up),
each working set several times the L2 so that nothing is served from cache:

- `stream`: device-to-device copy, a read-only reduction and a triad (a = b + s·c), bytes read plus
  written over time: the streaming bandwidth (`stream_bandwidth`).
- `gemm_stack/<model>/<dtype>`: every dense GEMM of one decode (or prefill) forward of a model —
  per layer QKV, O, gate/up, down, then the output head — at M rows, as cuBLAS (BF16, `F.linear`)
  or the row-wise scaled FP8 GEMM (`torch._scaled_mm`, the W8A8 kernel class) runs it: weight bytes
  over time is the bandwidth a decode-shaped GEMM reaches; FLOPs over time at large M the
  achievable GEMM rate.
- `moe_stack`: Mixtral-8x7B's expert GEMMs as one grouped GEMM per layer (`torch._grouped_mm`,
  when this PyTorch has it), M tokens routed top-2.
- `decode_attention`: one decode token per sequence against a KV cache (B sequences × C tokens,
  GQA 32/8 heads of 128) through `scaled_dot_product_attention`; KV bytes over time, against the
  number of (sequence, KV head) work units the kernel can spread over the SMs.
- `launch`: per-kernel time of a CUDA graph of tiny kernels (the gap between kernels) and the CPU
  time of launching them eagerly.
- `weight_only`: Llama-2-7B's layers as gpt-fast runs them at 1-8 rows: BF16 (cuBLAS), INT4 in
  groups of 32 through tinygemm (`aten._weight_int4pack_mm`) and INT8 through `torch.compile`;
  `weight_only_tuned`: the same compiled with gpt-fast's `coordinate_descent_tuning`, under which a
  one-row matmul becomes a Triton multiply-and-reduce that fuses the INT8 conversion.
- `decode_layers`: a whole decode step of Llama-3.1-8B's shapes in eager PyTorch operators (norms,
  rotary, the cache write, GQA attention, SiLU-and-multiply, residual adds, the head and a greedy
  sample) as one CUDA graph, against its GEMMs alone: what a layer costs beyond its weight GEMMs, and
  the kernels it launches. Real engines' decode runs 10-25 % slower than the stacks of GEMMs predict
  (docs/fidelity.md); this measures how much of that is the layer's other kernels.
- `sliced_gemms`: Llama-3.1-70B's layer GEMMs as one device of TP 1, 2, 4 and 8 runs them (QKV and
  gate/up split by columns, O and down by rows), BF16 and FP8, and Mixtral's experts sliced the same
  way: how much of the layer-shape efficiency the narrower slices keep.

On a part with less memory than the H200 a model's stack keeps the layers that fit, and its key
says how many (`llama-3.1-70b/bf16/40layers`); Mixtral's rows record their `layers`.

Nothing here is read by the compiler: the figures reach the stdlib only as constants whose
`source` cites docs/measurements/ (h200.md, h100.md), where the numbers of a run are written down.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F

DRY = not torch.cuda.is_available()  # a dry run on the CPU, tiny shapes, to check the script before a lease
DEV = "cpu" if DRY else "cuda"
BF16 = torch.bfloat16
FP8 = torch.float8_e4m3fn
RESULTS: dict[str, Any] = {}
OUT = sys.argv[1] if len(sys.argv) > 1 else "."


def sync() -> None:
    if not DRY:
        torch.cuda.synchronize()


def save() -> None:
    with open(os.path.join(OUT, "gpu_ops.json"), "w", encoding="utf-8") as f:
        json.dump(RESULTS, f, indent=1, sort_keys=True)


def timed(fn: Callable[[], object], budget_s: float = 0.6, graph: bool = True) -> float:
    """Median seconds of one call of fn, replayed from a CUDA graph (or eagerly)."""
    if DRY:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    run: Callable[[], object] = fn
    if graph:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        run = g.replay
        for _ in range(2):
            run()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    run()
    end.record()
    end.synchronize()
    first = start.elapsed_time(end) / 1e3
    reps = max(3, min(25, int(budget_s / max(first, 1e-6))))
    times = []
    for _ in range(reps):
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def section(name: str, body: Callable[[], object]) -> None:
    t0 = time.time()
    try:
        body()
        RESULTS.setdefault("sections", {})[name] = f"ok in {time.time() - t0:.1f} s"
    except Exception as e:  # a failing section must not cost the others
        RESULTS.setdefault("sections", {})[name] = f"FAILED after {time.time() - t0:.1f} s: {type(e).__name__}: {e}"
    print(f"[{name}] {RESULTS['sections'][name]}", flush=True)
    if not DRY:
        torch.cuda.empty_cache()
    save()


def stream() -> None:
    n = 2 * 1024 ** 3 // 2 if not DRY else 1024  # 2 GiB of bf16 per array
    a, b, c = (torch.randn(n, dtype=BF16, device=DEV) for _ in range(3))
    rows = {}
    t = timed(lambda: a.copy_(b))
    rows["copy"] = {"bytes": 2 * a.nbytes, "s": t, "GB/s": 2 * a.nbytes / t / 1e9}
    t = timed(lambda: torch.sum(b, dtype=torch.float32))
    rows["read"] = {"bytes": b.nbytes, "s": t, "GB/s": b.nbytes / t / 1e9}
    t = timed(lambda: torch.add(b, c, alpha=0.5, out=a))
    rows["triad"] = {"bytes": 3 * a.nbytes, "s": t, "GB/s": 3 * a.nbytes / t / 1e9}
    RESULTS["stream"] = rows


SHAPES = {  # layers, hidden, heads, kv heads, head dim, intermediate, vocab (config.json of each)
    "llama-3.1-8b": (32, 4096, 32, 8, 128, 14336, 128256),
    "llama-3.1-70b": (80, 8192, 64, 8, 128, 28672, 128256),
}
if DRY:
    SHAPES = dict.fromkeys(SHAPES, (2, 64, 4, 2, 16, 128, 256))
MS = [1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 1024, 2048, 4096, 8192]


def layer_shapes(model: str, tp: int = 1) -> list[tuple[int, int]]:
    """(N out, K in) of each dense GEMM of one layer on one of tp devices: Megatron splits QKV and
    gate/up by their output columns, O and down by their input rows."""
    _, h, heads, kv, d, inter, _ = SHAPES[model]
    return [((heads + 2 * kv) * d // tp, h), (h, heads * d // tp), (2 * inter // tp, h), (h, inter // tp)]


def gemm_stack(model: str, dtype: str, max_m: int, layers_override: int = 0, ms: list[int] | None = None, tp: int = 1) -> None:
    layers, h, *_, vocab = SHAPES[model]
    layers = layers_override or layers
    shapes = layer_shapes(model, tp)
    fit = layers_that_fit(sum(n * k for n, k in shapes) * (2 if dtype == "bf16" else 1), layers, share=0.9)
    if fit < layers:  # a part with less memory runs the layers that fit, and the key says how many
        layers = layers_override = fit
    weights: list[list[torch.Tensor]] = []
    scales: list[list[torch.Tensor]] = []
    for _ in range(layers):
        ws, ss = [], []
        for n, k in shapes:
            w = torch.randn(n, k, dtype=BF16, device=DEV) * 0.02
            if dtype == "fp8":
                s = w.abs().amax(dim=1, keepdim=True).float() / 448
                ws.append((w / s).to(FP8))
                ss.append(s.t().contiguous())  # scale_b: (1, N)
            elif dtype == "fp8_tensor":
                s = w.abs().amax().float() / 448
                ws.append((w / s).to(FP8))
                ss.append(s)
            else:
                ws.append(w)
        weights.append(ws)
        scales.append(ss)
    head = torch.randn(vocab, h, dtype=BF16, device=DEV) * 0.02  # the output head stays BF16 in FP8 checkpoints
    weight_bytes = sum(w.nbytes for ws in weights for w in ws)
    rows = []
    for m in [x for x in (ms or MS) if x <= max_m]:
        xs = {k: torch.randn(m, k, dtype=BF16, device=DEV) for _, k in shapes}
        flops = 2 * m * (sum(n * k for n, k in shapes) * layers)
        m_run = m
        if dtype == "fp8":
            try:  # some builds want the rows in multiples of 16: pad them as an engine's kernel would
                torch._scaled_mm(xs[h].to(FP8), weights[0][0].t(), scale_a=torch.ones(m, 1, device=DEV),
                                 scale_b=scales[0][0], out_dtype=BF16)
            except Exception:
                m_run = -(-m // 16) * 16
                xs = {k: torch.randn(m_run, k, dtype=BF16, device=DEV) for _, k in shapes}
            xq = {k: (x / (x.abs().amax(dim=1, keepdim=True).float() / 448)).to(FP8) for k, x in xs.items()}
            sa = {k: (x.abs().amax(dim=1, keepdim=True).float() / 448) for k, x in xs.items()}
            body: Callable[[], object] = partial(scaled_stack, shapes, weights, scales, xq, sa)
        elif dtype == "fp8_tensor":
            xq = {k: (x / (x.abs().amax().float() / 448)).to(FP8) for k, x in xs.items()}
            sa = {k: (x.abs().amax().float() / 448) for k, x in xs.items()}
            body = partial(scaled_stack, shapes, weights, scales, xq, sa)
        else:
            body = partial(linear_stack, shapes, weights, xs)
        t_layers = timed(body)
        t_head = timed(partial(F.linear, xs[h], head))
        rows.append({"m": m, "m_run": m_run, "layers_s": t_layers, "head_s": t_head, "weight_bytes": weight_bytes, "head_bytes": head.nbytes,
                     "layers_GB/s": weight_bytes / t_layers / 1e9, "layers_TFLOP/s": flops / t_layers / 1e12,
                     "head_GB/s": head.nbytes / t_head / 1e9, "head_TFLOP/s": 2 * m * head.numel() / t_head / 1e12})
        print(f"  {model} {dtype} M={m}: layers {t_layers * 1e3:.3f} ms = {rows[-1]['layers_GB/s']:.0f} GB/s, "
              f"{rows[-1]['layers_TFLOP/s']:.0f} TFLOP/s; head {t_head * 1e3:.3f} ms", flush=True)
        key = f"{model}/{dtype}" + (f"/tp{tp}" if tp > 1 else "") + (f"/{layers}layers" if layers_override else "")
        RESULTS.setdefault("gemm_stack", {})[key] = rows
        save()


def linear_stack(shapes: list[tuple[int, int]], weights: list[list[torch.Tensor]], xs: dict[int, torch.Tensor]) -> None:
    for ws in weights:
        for (_, k), w in zip(shapes, ws):
            F.linear(xs[k], w)


def scaled_stack(shapes: list[tuple[int, int]], weights: list[list[torch.Tensor]], scales: list[list[torch.Tensor]],
                 xq: dict[int, torch.Tensor], sa: dict[int, torch.Tensor]) -> None:
    for ws, ss in zip(weights, scales):
        for (_, k), w, s in zip(shapes, ws, ss):
            torch._scaled_mm(xq[k], w.t(), scale_a=sa[k], scale_b=s, out_dtype=BF16)


def repeat_linear(x: torch.Tensor, ws: list[torch.Tensor]) -> None:
    for w in ws:
        F.linear(x, w)


def repeat_scaled(x: torch.Tensor, ws: list[torch.Tensor], one: torch.Tensor) -> None:
    for w in ws:
        torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=BF16)


def gemm_shapes() -> None:
    """One GEMM shape at a time, repeated over enough copies of its weight to exceed the L2 many times."""
    rows = []
    for dtype in ["bf16", "fp8_tensor"]:
        for n, k in [(64, 32)] if DRY else [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336), (10240, 8192),
                                            (8192, 8192), (57344, 8192), (8192, 28672), (128256, 4096)]:
            copies = max(4, min(64, int(4e9 // (n * k * (2 if dtype == "bf16" else 1))))) if not DRY else 2
            ws = [torch.randn(n, k, dtype=BF16, device=DEV) * 0.02 for _ in range(copies)]
            if dtype == "fp8_tensor":
                ws = [w.to(FP8) for w in ws]
            one = torch.ones((), device=DEV)
            for m in [1, 16, 64, 128, 256]:
                x = torch.randn(m, k, dtype=BF16, device=DEV)
                body = partial(repeat_linear, x, ws) if dtype == "bf16" else partial(repeat_scaled, x.to(FP8), ws, one)
                t = timed(body, budget_s=0.3) / copies
                nbytes = ws[0].nbytes
                rows.append({"dtype": dtype, "n": n, "k": k, "m": m, "bytes": nbytes, "s": t, "GB/s": nbytes / t / 1e9,
                             "TFLOP/s": 2 * m * n * k / t / 1e12})
                print(f"  {dtype} {n}x{k} M={m}: {t * 1e6:.1f} us, {nbytes / t / 1e9:.0f} GB/s", flush=True)
            RESULTS["gemm_shapes"] = rows
            save()


def fp8_check() -> None:
    """The FP8 GEMM computes what the BF16 one does, within FP8 rounding."""
    x = torch.randn(64, 4096, dtype=BF16, device=DEV)
    w = torch.randn(6144, 4096, dtype=BF16, device=DEV) * 0.02
    sx = x.abs().amax(dim=1, keepdim=True).float() / 448
    sw = w.abs().amax(dim=1, keepdim=True).float() / 448
    y = torch._scaled_mm((x / sx).to(FP8), (w / sw).to(FP8).t(), scale_a=sx, scale_b=sw.t().contiguous(), out_dtype=BF16)
    ref = x.double() @ w.double().t()
    RESULTS["fp8_rel_error"] = float((y.double() - ref).norm() / ref.norm())


def layers_that_fit(per_layer_bytes: int, layers: int, share: float = 0.8) -> int:
    """As many of a model's layers as fit in share of the device's free memory (all of them on a large part)."""
    if DRY:
        return layers
    free, _ = torch.cuda.mem_get_info()
    return max(1, min(layers, int(share * free // per_layer_bytes)))


def moe_stack(tp: int = 1, ms: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)) -> None:
    """Mixtral's experts, each sliced over tp devices as tensor-parallel experts are (the
    intermediate dimension split: gate/up by columns, down by rows)."""
    layers, h, inter, experts, top = (32, 4096, 14336, 8, 2) if not DRY else (2, 64, 128, 8, 2)  # Mixtral-8x7B config.json
    inter //= tp
    layers = layers_that_fit(experts * 3 * h * inter * 2, layers)
    w13 = [torch.randn(experts, h, 2 * inter, dtype=BF16, device=DEV) * 0.02 for _ in range(layers)]
    w2 = [torch.randn(experts, inter, h, dtype=BF16, device=DEV) * 0.02 for _ in range(layers)]
    per_expert = (h * 2 * inter + inter * h) * 2
    rows = []
    gen = torch.Generator(device="cpu").manual_seed(0)
    for m in ms:
        route = torch.stack([torch.randperm(experts, generator=gen)[:top] for _ in range(m)]).flatten()
        counts = torch.bincount(route, minlength=experts)
        touched = int((counts > 0).sum())
        offs = torch.cumsum(counts, 0).to(torch.int32).to(DEV)
        a = torch.randn(m * top, h, dtype=BF16, device=DEV)
        b = torch.randn(m * top, inter, dtype=BF16, device=DEV)
        t = timed(partial(grouped_stack, w13, w2, a, b, offs))
        rows.append({"m": m, "layers": layers, "experts_touched": touched, "s": t, "touched_GB/s": touched * per_expert * layers / t / 1e9,
                     "TFLOP/s": 2 * m * top * (h * 2 * inter + inter * h) * layers / t / 1e12})
        print(f"  mixtral tp{tp} M={m}: {t * 1e3:.3f} ms, {touched} experts/layer, {rows[-1]['touched_GB/s']:.0f} GB/s", flush=True)
        RESULTS["moe_stack" + (f"/tp{tp}" if tp > 1 else "")] = rows
        save()


TP_MS = [1, 64, 256, 1024, 4096, 8192]


def sliced_gemms() -> None:
    """The GEMMs one device runs when a layer is split over tp of them: Llama-3.1-70B's dense layers
    at TP 1, 2, 4 and 8 (BF16 through cuBLAS, FP8 through the per-tensor scaled GEMM), and Mixtral's
    experts sliced the same way (grouped GEMM). FLOP/s at large M against TP 1 is the share of the
    layer-shape efficiency a slice keeps; the validation's max-throughput rows grow more optimistic
    with TP (docs/physics.md §6.3), and this measures whether the slices' GEMMs are why."""
    for tp in (1, 2, 4, 8):
        for dtype in ("bf16", "fp8_tensor"):
            gemm_stack("llama-3.1-70b", dtype, 8192, ms=TP_MS, tp=tp)
        moe_stack(tp, ms=(64, 512, 2048, 4096))


def grouped_stack(w13: list[torch.Tensor], w2: list[torch.Tensor], a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor) -> None:
    for l1, l2 in zip(w13, w2):
        torch._grouped_mm(a, l1, offs=offs, out_dtype=BF16)
        torch._grouped_mm(b, l2, offs=offs, out_dtype=BF16)


WO_SHAPES = [(12288, 4096), (4096, 4096), (11008, 4096), (11008, 4096), (4096, 11008)]  # Llama-2-7B as gpt-fast's model.py
# runs a layer: wqkv, wo, then w1, w3, w2 unfused (config.json: hidden 4096, intermediate 11008, 32 heads of 128, 32 layers)


def int4_pack(w: torch.Tensor, group: int, inner_k_tiles: int = 8) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """gpt-fast's int4 weight-only format (quantize.py, group_quantize_tensor and prepare_int4_weight_and_scales_and_zeros):
    asymmetric 4-bit groups along K, packed for tinygemm, scales and zeros as [K/group, N, 2] BF16; and the weight it stands for."""
    n, k = w.shape
    wg = w.float().reshape(n, k // group, group)
    mx, mn = wg.amax(-1, keepdim=True), wg.amin(-1, keepdim=True)
    scale = (mx - mn).clamp(min=1e-6) / 15
    zero = mn + scale * 8
    q = ((wg - mn) / scale).round().clamp(0, 15).to(torch.int32).reshape(n, k)
    packed = torch.ops.aten._convert_weight_to_int4pack((q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8), inner_k_tiles)
    sz = torch.cat([scale.reshape(n, -1, 1), zero.reshape(n, -1, 1)], 2).transpose(0, 1).contiguous().to(BF16)
    deq = ((q.reshape(n, k // group, group).float() - 8) * scale + zero).reshape(n, k).to(BF16)
    return packed, sz, deq


def int8_linear(x: torch.Tensor, w: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """gpt-fast's WeightOnlyInt8Linear.forward: the int8 weight converted in the GEMM's operand, then the row scales."""
    return F.linear(x, w.to(dtype=x.dtype)) * s


def int4_stack(ws: list[tuple[torch.Tensor, torch.Tensor]], xs: dict[int, torch.Tensor], group: int) -> None:
    for packed, sz in ws:
        torch.ops.aten._weight_int4pack_mm(xs[sz.shape[0] * group], packed, group, sz)


def int8_stack(fn: Callable[..., torch.Tensor], ws: list[tuple[torch.Tensor, torch.Tensor]], xs: dict[int, torch.Tensor]) -> None:
    for w, s in ws:
        fn(xs[w.shape[1]], w, s)


def bf16_stack(ws: list[torch.Tensor], xs: dict[int, torch.Tensor], fn: Callable[..., torch.Tensor] = F.linear) -> None:
    for w in ws:
        fn(xs[w.shape[1]], w)


def bf16_linear(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return F.linear(x, w)


def weight_only_tuned() -> None:
    """As weight_only, with the Inductor setting gpt-fast's generate.py makes (coordinate_descent_tuning = True): at one
    row Inductor then lowers a matmul to a Triton multiply-and-reduce, into which the int8 weight's conversion and scale
    fuse. The BF16 GEMMs compiled the same way are gpt-fast's BF16 kernels at batch 1."""
    weight_only(tuned=True)


def weight_only(tuned: bool = False) -> None:
    """Llama-2-7B's 32 layers of GEMMs at M rows as gpt-fast runs them: BF16 (cuBLAS), int8 weight-only (its
    WeightOnlyInt8Linear compiled by torch.compile, as generate.py --compile does) and int4 weight-only, group 32
    (tinygemm, aten._weight_int4pack_mm). Weight bytes over time: what the dequantising kernels stream."""
    layers = 32 if not DRY else 2
    shapes = WO_SHAPES if not DRY else [(256, 256), (128, 256)]
    group = 32
    gen_w = [[torch.randn(n, k, dtype=BF16, device=DEV) * 0.02 for n, k in shapes] for _ in range(layers)]
    bf16 = [w for ws in gen_w for w in ws]
    int8 = []
    for w in bf16:
        s = w.abs().amax(dim=1).float() / 127
        int8.append(((w.float() / s[:, None]).round().clamp(-128, 127).to(torch.int8), s.to(BF16)))
    rows: list[dict[str, Any]] = []
    errors: dict[str, float] = {}
    int4: list[tuple[torch.Tensor, torch.Tensor]] = []
    try:
        for w in (bf16 if not tuned else []):  # the tuned run times the compiled kernels only
            packed, sz, _ = int4_pack(w, group)
            int4.append((packed, sz))
        if int4:
            x = torch.randn(4, shapes[0][1], dtype=BF16, device=DEV)
            y = torch.ops.aten._weight_int4pack_mm(x, int4[0][0], group, int4[0][1])
            ref = F.linear(x, int4_pack(bf16[0], group)[2])
            errors["int4_vs_dequantised"] = float((y.float() - ref.float()).norm() / ref.float().norm())
    except Exception as e:
        int4 = []
        errors["int4_failed"] = f"{type(e).__name__}: {e}"[:300]  # type: ignore[assignment]
    compiled, compiled_bf16 = int8_linear, bf16_linear
    if not DRY:
        import torch._dynamo as dynamo
        import torch._inductor.config as inductor_config
        dynamo.config.automatic_dynamic_shapes = False
        dynamo.config.cache_size_limit = 64
        inductor_config.coordinate_descent_tuning = tuned
        dynamo.reset()
        compiled = torch.compile(int8_linear, fullgraph=True)
        compiled_bf16 = torch.compile(bf16_linear, fullgraph=True)
    x = torch.randn(4, shapes[0][1], dtype=BF16, device=DEV)
    y8 = compiled(x, *int8[0])
    ref8 = F.linear(x, (int8[0][0].float() * int8[0][1].float()[:, None]).to(BF16))
    errors["int8_vs_dequantised"] = float((y8.float() - ref8.float()).norm() / ref8.float().norm())
    RESULTS["weight_only_tuned_check" if tuned else "weight_only_check"] = errors
    bytes_of = {"bf16": sum(w.nbytes for w in bf16), "int8": sum(w.nbytes + s.nbytes for w, s in int8),
                "int4": sum(p.nbytes + z.nbytes for p, z in int4)}
    t0 = time.time()
    for m in ([1, 2] if tuned else [1, 2, 4, 8]) if not DRY else [1, 4]:
        if time.time() - t0 > 150:  # each new M compiles the int8 kernels again: keep the lease short
            break
        xs = {k: torch.randn(m, k, dtype=BF16, device=DEV) for _, k in shapes}
        bodies: dict[str, Callable[[], object]] = {"bf16": partial(bf16_stack, bf16, xs), "int8": partial(int8_stack, compiled, int8, xs)}
        if tuned:
            bodies["bf16"] = partial(bf16_stack, bf16, xs, compiled_bf16)
        elif int4:
            bodies["int4"] = partial(int4_stack, int4, xs, group)
        for kind, body in bodies.items():
            try:
                t = timed(body)
                rows.append({"kind": kind, "m": m, "layers": layers, "s": t, "bytes": bytes_of[kind], "GB/s": bytes_of[kind] / t / 1e9})
                print(f"  llama-2-7b {kind} M={m}: {t * 1e3:.3f} ms = {bytes_of[kind] / t / 1e9:.0f} GB/s", flush=True)
            except Exception as e:
                rows.append({"kind": kind, "m": m, "error": f"{type(e).__name__}: {e}"[:300]})
        RESULTS["weight_only_tuned" if tuned else "weight_only"] = rows
        save()


def attention_stack(q: torch.Tensor, ks: list[torch.Tensor], vs: list[torch.Tensor]) -> None:
    for k, v in zip(ks, vs):
        F.scaled_dot_product_attention(q, k, v, enable_gqa=True)


ATTENTION_POINTS = [(1, 1024), (1, 4096), (1, 8192), (1, 32768), (4, 8192), (8, 8192), (16, 4096), (32, 4096),
                    (64, 2048), (128, 1024), (256, 1024), (64, 8192)]


def decode_attention(key: str = "decode_attention", backends: tuple[str, ...] = ("flash", "efficient")) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    heads, kv_heads, d = 32, 8, 128
    rows = []
    for b, ctx in [(1, 64), (2, 128)] if DRY else ATTENTION_POINTS:
        kv_bytes = 2 * b * kv_heads * ctx * d * 2
        layers = max(1, min(64, int(4e9 // kv_bytes)))  # rotate over enough layers' KV to exceed the L2 many times
        ks = [torch.randn(b, kv_heads, ctx, d, dtype=BF16, device=DEV) for _ in range(layers)]
        vs = [torch.randn(b, kv_heads, ctx, d, dtype=BF16, device=DEV) for _ in range(layers)]
        q = torch.randn(b, heads, 1, d, dtype=BF16, device=DEV)
        for name, backend in [(x, y) for x, y in [("flash", SDPBackend.FLASH_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION)]
                              if x in backends]:
            try:
                with sdpa_kernel([backend]):
                    t = timed(partial(attention_stack, q, ks, vs)) / layers
                rows.append({"backend": name, "batch": b, "context": ctx, "units": b * kv_heads, "kv_bytes": kv_bytes, "s": t,
                             "GB/s": kv_bytes / t / 1e9})
                print(f"  attention {name} B={b} C={ctx}: {t * 1e6:.1f} us/layer = {kv_bytes / t / 1e9:.0f} GB/s", flush=True)
            except Exception as e:
                rows.append({"backend": name, "batch": b, "context": ctx, "error": f"{type(e).__name__}: {e}"[:300]})
        if not DRY:
            torch.cuda.empty_cache()
        RESULTS[key] = rows
        save()


def attention_sweep() -> None:
    """Decode attention at batch 1 over contexts, and over batches at 2k tokens: where the fixed time and the
    parallelism limit end."""
    global ATTENTION_POINTS
    ATTENTION_POINTS = [(1, c) for c in (256, 512, 2048, 16384, 65536)] + [(b, 2048) for b in (2, 4, 8, 16, 32, 128, 256, 512)]
    decode_attention(key="attention_sweep", backends=("flash",))


def rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """gpt-fast's rotary embedding on (B, heads, 1, d): the pairs of each head rotated by the position's angle."""
    x1, x2 = x.float().unflatten(-1, (-1, 2)).unbind(-1)
    return torch.stack((x1 * cos - x2 * sin, x2 * cos + x1 * sin), -1).flatten(-2).type_as(x)


def decode_step(layers: list[dict[str, torch.Tensor]], head: torch.Tensor, norm: torch.Tensor, x: torch.Tensor,
                caches: list[tuple[torch.Tensor, torch.Tensor]], pos: int, cos: torch.Tensor, sin: torch.Tensor,
                shape: tuple[int, ...]) -> torch.Tensor:
    """One decode iteration of a Llama layer stack as a PyTorch-native loop runs it without a compiler: per layer
    an RMSNorm, the fused QKV GEMM, rotary on q and k, the cache write, attention over the cache (GQA), the O GEMM
    and the residual add, an RMSNorm, the fused gate/up GEMM, SiLU-and-multiply, the down GEMM and the residual
    add; then the final norm, the output head and a greedy sample."""
    _, h, heads, kv, d, _, _ = shape
    b = x.shape[0]
    for w, (kc, vc) in zip(layers, caches):
        qkv = F.linear(F.rms_norm(x, (h,), w["ln1"]), w["wqkv"])
        q, k, v = qkv.split([heads * d, kv * d, kv * d], dim=-1)
        q = rotary(q.view(b, heads, 1, d), cos, sin)
        k = rotary(k.view(b, kv, 1, d), cos, sin)
        kc[:, :, pos:pos + 1] = k
        vc[:, :, pos:pos + 1] = v.view(b, kv, 1, d)
        o = F.scaled_dot_product_attention(q, kc[:, :, :pos + 1], vc[:, :, :pos + 1], enable_gqa=True)
        x = x + F.linear(o.reshape(b, heads * d), w["wo"])
        gate, up = F.linear(F.rms_norm(x, (h,), w["ln2"]), w["w13"]).chunk(2, dim=-1)
        x = x + F.linear(F.silu(gate) * up, w["w2"])
    return F.linear(F.rms_norm(x, (h,), norm), head).argmax(dim=-1)


def decode_layers() -> None:
    """A whole decode step of Llama-3.1-8B's shapes, eager PyTorch operators replayed as one CUDA graph, against
    the same step's GEMMs alone: what a layer costs beyond its weight GEMMs (norms, rotary, the cache write,
    attention, the activation, the residual adds: the step's kernel_time and attention in the stdlib), and how
    many kernels it launches (counted by the profiler on one eager call)."""
    shape = SHAPES["llama-3.1-8b"]
    n_layers, h, _, kv, d, _, vocab = shape
    (nq, _), (_, ko), (n13, _), (_, k2) = layer_shapes("llama-3.1-8b")
    layers = [{"ln1": torch.ones(h, dtype=BF16, device=DEV), "ln2": torch.ones(h, dtype=BF16, device=DEV),
               "wqkv": torch.randn(nq, h, dtype=BF16, device=DEV) * 0.02, "wo": torch.randn(h, ko, dtype=BF16, device=DEV) * 0.02,
               "w13": torch.randn(n13, h, dtype=BF16, device=DEV) * 0.02, "w2": torch.randn(h, k2, dtype=BF16, device=DEV) * 0.02}
              for _ in range(n_layers)]
    head = torch.randn(vocab, h, dtype=BF16, device=DEV) * 0.02
    norm = torch.ones(h, dtype=BF16, device=DEV)
    weight_bytes = sum(t.nbytes for w in layers for t in w.values()) + head.nbytes
    rows = []
    for b, ctx in [(1, 32), (2, 64)] if DRY else [(1, 1024), (1, 8192), (16, 1024), (64, 1024), (16, 8192)]:
        caches = [(torch.randn(b, kv, ctx + 1, d, dtype=BF16, device=DEV), torch.randn(b, kv, ctx + 1, d, dtype=BF16, device=DEV))
                  for _ in range(n_layers)]
        x = torch.randn(b, h, dtype=BF16, device=DEV)
        angle = torch.rand(d // 2, device=DEV)
        step = partial(decode_step, layers, head, norm, x, caches, ctx, angle.cos(), angle.sin(), shape)
        t_step = timed(step)
        xs = {k: torch.randn(b, k, dtype=BF16, device=DEV) for _, k in layer_shapes("llama-3.1-8b")}
        t_gemms = timed(partial(linear_stack, layer_shapes("llama-3.1-8b"), [[w["wqkv"], w["wo"], w["w13"], w["w2"]] for w in layers], xs))
        t_head = timed(partial(F.linear, xs[h], head))
        kernels = None
        if not DRY:
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                step()
                sync()
            kernels = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
        kv_bytes = 2 * b * kv * (ctx + 1) * d * 2 * n_layers
        rows.append({"batch": b, "context": ctx, "layers": n_layers, "step_s": t_step, "gemms_s": t_gemms, "head_s": t_head,
                     "beyond_gemms_per_layer_s": (t_step - t_gemms - t_head) / n_layers, "kernels": kernels,
                     "weight_bytes": weight_bytes, "kv_bytes": kv_bytes})
        print(f"  decode step B={b} C={ctx}: {t_step * 1e3:.3f} ms; GEMMs {t_gemms * 1e3:.3f} + head {t_head * 1e3:.3f} ms; "
              f"beyond them {rows[-1]['beyond_gemms_per_layer_s'] * 1e6:.1f} us/layer; kernels {kernels}", flush=True)
        del caches
        if not DRY:
            torch.cuda.empty_cache()
        RESULTS["decode_layers"] = rows
        save()


def tiny_kernels(x: torch.Tensor, n: int) -> None:
    for _ in range(n):
        x.add_(1.0)


def launch() -> None:
    x = torch.zeros(1, device=DEV)
    n = 2000
    body = partial(tiny_kernels, x, n)
    per_kernel_graph = timed(body, graph=True) / n
    sync()
    t0 = time.perf_counter()
    for _ in range(5):
        body()
    cpu = (time.perf_counter() - t0) / (5 * n)
    sync()
    eager = timed(body, graph=False) / n
    RESULTS["launch"] = {"graph_s_per_kernel": per_kernel_graph, "eager_cpu_s_per_kernel": cpu, "eager_gpu_s_per_kernel": eager}


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    if not DRY:
        p = torch.cuda.get_device_properties(0)
        RESULTS["device"] = {"name": p.name, "sms": p.multi_processor_count, "memory": p.total_memory,
                             "l2": getattr(p, "L2_cache_size", None), "torch": torch.__version__, "cuda": torch.version.cuda}
    try:
        RESULTS["nvidia_smi"] = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit",
                                                "--format=csv"], capture_output=True, text=True, timeout=20).stdout
    except Exception as e:
        RESULTS["nvidia_smi"] = str(e)
    torch.manual_seed(0)
    only = set(os.environ.get("ONLY", "").split(",")) - {""}
    plan = [("launch", launch), ("stream", stream), ("fp8_check", fp8_check),
            ("gemm_8b_bf16", lambda: gemm_stack("llama-3.1-8b", "bf16", 8192)),
            ("gemm_8b_fp8", lambda: gemm_stack("llama-3.1-8b", "fp8", 8192)),
            ("gemm_70b_fp8", lambda: gemm_stack("llama-3.1-70b", "fp8", 2048)),
            ("decode_attention", decode_attention), ("moe_stack", moe_stack),
            ("gemm_shapes", gemm_shapes),
            ("gemm_8b_fp8_tensor", lambda: gemm_stack("llama-3.1-8b", "fp8_tensor", 8192)),
            ("gemm_70b_fp8_tensor", lambda: gemm_stack("llama-3.1-70b", "fp8_tensor", 2048)),
            ("gemm_70b_bf16_half", lambda: gemm_stack("llama-3.1-70b", "bf16", 4096, layers_override=40)),
            ("attention_sweep", attention_sweep), ("weight_only", weight_only), ("weight_only_tuned", weight_only_tuned),
            ("decode_layers", decode_layers), ("sliced_gemms", sliced_gemms)]
    for name, body in plan:
        if not only or name in only:
            section(name, body)
    print(json.dumps(RESULTS.get("sections"), indent=1))


if __name__ == "__main__":
    main()
