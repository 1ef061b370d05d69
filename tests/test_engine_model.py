"""The serving engine model (stdlib `deployment`, sections Continuous batching, KV admission,
Operating point): its fixed point, its length statistics, and its agreement with the
discrete-event simulator (`compiler/simulate.py`) that serves the same traffic with the plan's
own iteration physics."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from planc.exact import search_bounds
from planc.pipeline import Compilation, compile_plan
from planc.simulate import lognormal_fit
from planc.vector import evaluate_many

from .sim_agreement import replay_agrees

WORKLOADS = {  # prompt mean, p99; output mean, p99
    "chat": (1000, 6000, 250, 1000),
    "long_prompt": (4000, 16000, 200, 600),
    "long_output": (300, 1000, 1000, 4000),
}


def plan(workload: str, utilization: float, extra: str = "") -> str:
    """The workload's plan at this utilisation target; `extra` adds fields to the deployment, and
    an SLO it sets replaces the default one (an instance sets each field once)."""
    p, p99, o, o99 = WORKLOADS[workload]
    slos = "".join(f"\n  {line}" for line in ("ttft_slo = 5 s", "tpot_slo = 60 ms") if line.split(" = ")[0] + " =" not in extra)
    return f'''import "models/llama-3.1-8b"
import "hardware/h100-sxm"
traffic t {{
  daily_active_users = 1 M users
  requests_per_user = 10 requests/user/day
  peak_factor = 3
  prompt_tokens = {p} tokens
  prompt_tokens_p99 = {p99} tokens
  output_tokens = {o} tokens
  output_tokens_p99 = {o99} tokens
}}
deployment d {{
  model = llama_3_1_8b
  hardware = h100_sxm
  traffic = t
  utilization_target = {utilization}{slos}{extra}
}}
'''


def values(c: Compilation) -> dict[str, float]:
    assert c.lowered is not None, [d.message for d in c.diagnostics]
    return {k: float(v) for k, v in c.lowered.values.items()}  # type: ignore[arg-type]


def test_the_running_batch_is_the_largest_that_meets_the_slos(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(plan("chat", 0.6))
    v = values(c)
    assert 1 <= v["d.batch"] < v["d.max_num_seqs"]
    assert v["d.tpot"] <= v["d.tpot_slo"] and v["d.ttft_tail"] <= v["d.ttft_slo"]
    beyond, parts = search_bounds(c.lowered.elaborated, "d.batch", c.lowered.values)  # type: ignore[union-attr]
    assert beyond == v["d.batch"] + 1
    failing = [" ".join(p[0].span.text.split()) for p in parts if p[1] is False]
    # one more sequence and the KV cache fills in more than 1 % of the iterations (the preemption
    # target): at 317 sequences it binds alone, the TPOT SLO 5 % short of its limit
    assert failing == ["kv_admits"]
    assert 0.94 * v["d.tpot_slo"] < v["d.tpot"] < 0.96 * v["d.tpot_slo"]
    assert v["d.preemption_probability"] > 0.8 * v["d.preemption_target"]


@pytest.mark.parametrize("extra", ["", "\n  draft_tokens = 4"])
def test_the_operating_point_is_the_fixed_point_of_littles_law(compile_text: Callable[[str], Compilation], extra: str) -> None:
    v = values(compile_text(plan("chat", 0.6, extra)))
    # batch = rate × decode time: the operating batch completes the replica's share of the peak
    assert v["d.operating_rate"] <= v["d.peak_replica_rate"]
    assert v["d.operating_batch"] == pytest.approx(
        v["d.peak_replica_rate"] * v["d.tpot_at_peak"] * v["t.output_tokens"], rel=0.02)
    assert v["d.operating_batch"] < v["d.batch"] and v["d.tpot_at_peak"] < v["d.tpot"]
    # the same law at capacity, draft model steps included: a request decodes for output × TPOT
    assert v["d.replica_request_rate"] * v["d.tpot"] * v["t.output_tokens"] == pytest.approx(v["d.batch"], rel=1e-9)


def test_the_draft_model_drafts_for_the_decodes_and_prefills_the_chunk_once(compile_text: Callable[[str], Compilation]) -> None:
    """With speculative decoding an iteration adds the draft model's work: γ decode steps over the
    running sequences and the iteration's prompt chunk once, each at c of the target's time. An
    iteration without prefill is Leviathan et al.'s step, (1 + γ·c) of the target's; the chunk is
    not drafted γ times."""
    v = values(compile_text(plan("chat", 0.6, "\n  draft_tokens = 4")))
    d = "d."
    gamma, c = v[d + "draft_tokens"], v[d + "draft_cost_ratio"]
    target, share = v[d + "target_step_time"], v[d + "prefill_share"]
    mixed_target = v["d@mixed_step_time.iteration_time"]  # the target's iteration with the chunk
    assert gamma == 4 and 0 < share < 1 and mixed_target > target  # the iterations carry prompt chunks
    assert v[d + "step_time"] == pytest.approx(target * (1 + gamma * c), rel=1e-12)  # Leviathan's step
    assert v[d + "mixed_step_time"] == pytest.approx(v[d + "step_time"] + (mixed_target - target) * (1 + c), rel=1e-12)
    # the mean iteration: the target's mean T̄, γ draft steps over the decodes, the chunk drafted once
    mean = (1 - share) * target + share * mixed_target
    assert v[d + "mean_step_time"] == pytest.approx(mean + c * (gamma * target + (mean - target)), rel=1e-12)
    assert v[d + "decode_tpot"] == pytest.approx(target * (1 + gamma * c) / v[d + "tokens_per_step"], rel=1e-12)
    # the draft prefills every prompt token too: the prefill queue, the TTFT and a prefill pool see it
    chunk = v[d + "prefill_cost_chunk"]
    assert v[d + "prefill_token_time"] == pytest.approx((v["d@prefill_token_time.iteration_time"] - target) / chunk * (1 + c), rel=1e-12)
    assert v[d + "prefill_time"] == pytest.approx(v[d + "prefill_chunks"] * v[d + "prefill_chunk_time"] * (1 + c), rel=1e-12)
    # without a draft, nothing is added
    off = values(compile_text(plan("chat", 0.6)))
    assert off["d.step_time"] == off["d.target_step_time"] and off["d.draft_prefill_factor"] == 1
    assert off["d.prefill_time"] == pytest.approx(off["d.prefill_chunks"] * off["d.prefill_chunk_time"], rel=1e-15)


def test_speculation_stops_paying_where_the_verified_positions_cost_more_than_they_save(
        compile_text: Callable[[str], Compilation]) -> None:
    """`speculation_limit` is the largest batch at which a decode token comes faster with the draft
    than without: one sequence more and it does not; at one sequence the gain is Leviathan et al.'s
    Theorem 3.8, (1 − α^(γ+1)) / ((1 − α)(γ·c + 1)), less what the extra verified positions cost
    the step. Short sequences, so that the GEMMs, not the KV reads, make the step: the draft's
    verified positions share a sequence's KV reads, and where those dominate speculation pays at
    every batch."""
    short = plan("chat", 0.6, "\n  max_num_seqs = 4096").replace("prompt_tokens = 1000 tokens", "prompt_tokens = 100 tokens")
    short = short.replace("prompt_tokens_p99 = 6000 tokens", "prompt_tokens_p99 = 400 tokens")
    c = compile_text(short.replace("output_tokens = 250 tokens", "output_tokens = 50 tokens")
                     .replace("output_tokens_p99 = 1000 tokens", "output_tokens_p99 = 200 tokens"))
    v = values(c)
    d = "d."
    alpha, gamma, cost = v[d + "acceptance_rate"], v[d + "speculation_probe"], v[d + "draft_cost_ratio"]
    theorem = (1 - alpha ** (gamma + 1)) / ((1 - alpha) * (gamma * cost + 1))
    assert theorem == pytest.approx(2.80, abs=0.005)
    assert 0.97 * theorem < v[d + "speculative_gain_single"] <= theorem
    limit = v[d + "speculation_limit"]
    assert 1 < limit < v[d + "max_num_seqs"]
    assert c.lowered is not None
    gains = evaluate_many(c.lowered.elaborated, c.lowered.values, {"d.batch": np.array([limit, limit + 1])}, None)
    at_limit, beyond = (float(x) for x in np.asarray(gains["d.speculative_gain"]).reshape(-1))
    assert at_limit >= 1 > beyond


def test_a_decoding_sequence_sees_the_batch_with_itself_in_it(compile_text: Callable[[str], Compilation]) -> None:
    """TPOT is timed at one more sequence than the mean running (E[N²]/E[N] for a Poisson number
    running; the simulator's check is in test_simulate.py), while the arrivals that load the
    prefill follow the mean; a static batch is always whole."""
    c = compile_text(plan("long_prompt", 0.6))
    v = values(c)
    assert v["d.seen_batch"] == v["d.batch"] + 1
    assert c.lowered is not None
    seen = evaluate_many(c.lowered.elaborated, c.lowered.values, {"d.batch": np.array([v["d.batch"] + 1])}, None)
    assert v["d.seen_step_time"] > v["d.mean_step_time"]
    assert v["d.seen_step_time"] < float(np.asarray(seen["d.mean_step_time"]).reshape(-1)[0])  # the arrivals stay at the mean
    static = values(compile_text(plan("long_prompt", 0.6, "\n  static_batching = true")))
    assert static["d.seen_batch"] == static["d.batch"]


def test_the_ttft_quantile_is_that_of_the_arrival_cases(compile_text: Callable[[str], Compilation]) -> None:
    """Chunked prefill is gated service: an iteration prefills the prompts that arrived during the
    one before (T' = step + c·A(T)). A prompt waits the rest of the iteration it arrives in and the
    prompts that arrive during it. Its TTFT is a mixture of four cases (a decode-only or a prefill
    iteration, at the two Gauss–Legendre points of the uniform rest), whose weights, means and
    variances add up to the wait's own first two moments, and the reported percentile is the
    mixture's quantile."""
    from statistics import NormalDist

    v = values(compile_text(plan("chat", 0.6)))
    d = "d."
    rho, st, step, a2 = v[d + "prefill_utilization"], v[d + "step_time"], v[d + "mean_step_time"], v[d + "arrival_spread"]
    # the iteration's cumulants by the recursion, and the iteration a prompt arrives in (length-biased)
    k2 = step * a2 / (1 - rho ** 2)
    assert v[d + "iteration_variance"] == pytest.approx(k2, rel=1e-9)
    t1 = step + k2 / step
    assert v[d + "arrival_iteration"] == pytest.approx(t1, rel=1e-9)
    t2 = v[d + "arrival_iteration_square"]
    assert v[d + "prefill_wait"] == pytest.approx((0.5 + rho) * t1, rel=1e-9)
    pd = (1 - v[d + "prefill_share"]) * st / step
    assert v[d + "decode_arrival_share"] == pytest.approx(pd, rel=1e-9)
    own, own_var = v[d + "own_time_mean"], v[d + "own_time_variance"]
    cases = [(pd / 2, v[d + "decode_near_ttft"], v[d + "decode_ttft_variance"]),
             (pd / 2, v[d + "decode_far_ttft"], v[d + "decode_ttft_variance"]),
             ((1 - pd) / 2, v[d + "prefill_near_ttft"], v[d + "prefill_near_variance"]),
             ((1 - pd) / 2, v[d + "prefill_far_ttft"], v[d + "prefill_far_variance"])]
    # the cases' mixture has the TTFT's mean, W + own, and its variance, Var W + Var own, with
    # E[W²] = (1/3 + ρ + ρ²)·E[T*²] + a₂·E[T*] (W = U·T* + c·A(T*), U uniform)
    mean = sum(w * m for w, m, _ in cases)
    assert mean == pytest.approx(v[d + "prefill_wait"] + own, rel=1e-9) and mean == pytest.approx(v["d.ttft_mean"], rel=1e-9)
    wait_square = (1 / 3 + rho + rho ** 2) * t2 + a2 * t1
    variance = sum(w * (s2 + m * m) for w, m, s2 in cases) - mean ** 2
    assert variance == pytest.approx(wait_square - v[d + "prefill_wait"] ** 2 + own_var, rel=1e-9)
    # the percentile: each case a lognormal with its mean and variance, the mixture's distribution
    # at the reported figure is the SLO percentile
    def cdf(t: float) -> float:
        return sum(w * NormalDist(math.log(m) - math.log(1 + s2 / m ** 2) / 2, math.sqrt(math.log(1 + s2 / m ** 2))).cdf(math.log(t))
                   for w, m, s2 in cases)

    assert v[d + "percentile"] == 0.99 and cdf(v["d.ttft_tail"]) == pytest.approx(0.99, abs=1e-9)
    # skewed: most prompts get their first token sooner than the mean
    assert 0 < pd < 1 and cdf(mean) > 0.6


def test_lengths_are_lognormals_with_the_given_mean_and_p99(compile_text: Callable[[str], Compilation]) -> None:
    v = values(compile_text(plan("chat", 0.6)))
    _mu, sigma = lognormal_fit(1000, 6000)  # the simulator's own fit
    assert v["t.prompt_sigma"] == pytest.approx(sigma, rel=1e-12)
    rng = np.random.default_rng(1)
    out = rng.lognormal(math.log(250) - v["t.output_sigma"] ** 2 / 2, v["t.output_sigma"], 2_000_000)
    assert np.percentile(out, 99) == pytest.approx(1000, rel=0.01)
    assert v["t.output_tokens_biased"] == pytest.approx((out ** 2).mean() / out.mean(), rel=0.01)
    assert v["t.output_tokens_third"] == pytest.approx((out ** 3).mean() / out.mean(), rel=0.03)
    # a sequence running at a random moment: its prompt and half its output, length-biased
    assert v["d.mean_context"] == pytest.approx(1000 + v["t.output_tokens_biased"] / 2, rel=1e-12)


@pytest.mark.parametrize(("window", "refused"), [(6000, 0.01), (7000, None), (12000, None)])
def test_prompts_longer_than_the_window_are_refused(compile_text: Callable[[str], Compilation], window: int,
                                                   refused: float | None) -> None:
    """With the engine's max_model_len at the plan's context, the prompts at least that long are
    refused (vLLM's InputProcessor._validate_prompt_len): at the p99 prompt, 1 % of them, by the
    lognormal's own fit; beyond it, its upper tail, against draws from the simulator's fit."""
    v = values(compile_text(plan("chat", 0.6, f"\n  context = {window} tokens")))
    mu, sigma = lognormal_fit(1000, 6000)
    tail = 0.5 * math.erfc((math.log(window) - mu) / (sigma * math.sqrt(2)))
    assert v["d.refused_share"] == pytest.approx(refused if refused is not None else tail, rel=1e-9)
    draws = np.random.default_rng(2).lognormal(mu, sigma, 2_000_000)
    assert v["d.refused_share"] == pytest.approx((draws >= window).mean(), rel=0.05)
    assert v["d.refused_rate"] == pytest.approx(v["d.refused_share"] * v["t.peak_qps"], rel=1e-12)


def test_paged_admission_holds_more_than_reserving_the_full_context(compile_text: Callable[[str], Compilation]) -> None:
    paged = values(compile_text(plan("chat", 0.6, "\n  kv = fp8\n  tpot_slo = 1 s\n  ttft_slo = 1000 s")))
    reserved = values(compile_text(plan("chat", 0.6, "\n  kv = fp8\n  tpot_slo = 1 s\n  ttft_slo = 1000 s\n  reserve_full_context = true")))
    assert reserved["d.batch"] == min(reserved["d.max_batch"], reserved["d.max_num_seqs"])
    assert paged["d.batch"] > reserved["d.batch"]
    assert paged["d.preemption_probability"] <= 0.01


def test_prefix_caching_cuts_the_prefill(compile_text: Callable[[str], Compilation]) -> None:
    cold = values(compile_text(plan("long_prompt", 0.6)))
    warm = values(compile_text(plan("long_prompt", 0.6, "\n  prefix_hit_rate = 0.5")))
    assert warm["d.new_prompt_tokens"] == cold["d.new_prompt_tokens"] / 2
    assert warm["d.ttft_at_peak"] < cold["d.ttft_at_peak"] and warm["d.devices"] <= cold["d.devices"]


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
@pytest.mark.parametrize("utilization", [0.3, 0.6])
def test_the_analytic_model_agrees_with_the_simulator(tmp_path: Path, workload: str, utilization: float) -> None:
    """Both serve the same peak with the same iteration physics; the analytic model's steady state
    (running batch, TPOT) and its queue (TTFT) against the simulated distribution."""
    replay_agrees(tmp_path, plan(workload, utilization))


def test_the_itl_tail_of_a_replica_that_rarely_prefills_is_a_decode_step_at_the_batchs_quantile(tmp_path: Path) -> None:
    """Long outputs at light load: fewer than 1 % of the iterations carry a prompt, so the p99
    inter-token latency is a decode-only iteration, at the quantile of the running batch (a
    Poisson count about it) that the percentile leaves, not at its mean: the mean-batch step put it
    at the mean TPOT, 28 % under the simulated p99 (docs/physics.md §7.7)."""
    from planc.replay import replay

    reasoning = {"prompt_tokens = 1000": "prompt_tokens = 300", "prompt_tokens_p99 = 6000": "prompt_tokens_p99 = 1000",
                 "output_tokens = 250": "output_tokens = 4000", "output_tokens_p99 = 1000": "output_tokens_p99 = 16000"}
    text = plan("chat", 0.3)
    for chat, long in reasoning.items():
        text = text.replace(chat, long)
    path = tmp_path / "p.plan"
    path.write_text(text, encoding="utf-8")
    c = compile_plan(path)
    assert c.lowered is not None
    v = {k: float(x) for k, x in c.lowered.values.items() if not isinstance(x, str)}  # type: ignore[arg-type]
    assert v["d.itl_tail_at_peak"] > 1.1 * v["d.tpot_at_peak"]
    runs = [replay(c.lowered, "d", duration=4000, replicas=2, seed=seed) for seed in (3, 4, 5)]
    simulated = sorted(r.simulated["itl_p99"] for r in runs)[1]
    assert runs[0].analytic["itl_p99"] == pytest.approx(simulated, rel=0.15)


@pytest.mark.parametrize(("example", "pool"), [("100m_dau", "chat"), ("mixed_precision_pools", "free_pool")])
def test_the_itl_tail_counts_the_prompts_that_arrive_together(example: str, pool: str) -> None:
    """At the ITL quantile an iteration carries the prompts that arrived during the iteration
    before it: a Poisson count, given at least one, whose mean is the arrival rate times that
    iteration's length, short after a decode-only iteration and long after one that carries
    prefill, so prefills come in runs. One prompt's quantile put the flagship's p99 ITL 19 % and
    the free pool's (W4A16, whose prefill runs at the BF16 rate) 47 % under the simulated ones;
    the count, after either kind of iteration, within 8 % (docs/physics.md §7.7)."""
    from planc.replay import replay

    c = compile_plan(Path(__file__).parent.parent / "examples" / f"{example}.plan")
    assert c.lowered is not None
    v = {k: float(x) for k, x in c.lowered.values.items() if k.startswith(pool + ".") and not isinstance(x, str)}  # type: ignore[arg-type]
    w, after_decode, after_prefill = (v[f"{pool}.{k}"] for k in ("itl_prefill_weight", "itl_after_decode", "itl_after_prefill"))
    carrying = sum(v[f"{pool}.itl_{k}"] for k in ("one_prompt", "two_prompts", "more_after_decode", "more_after_prefill"))
    assert carrying == pytest.approx((1 - w) * -math.expm1(-after_decode) + w * -math.expm1(-after_prefill))
    assert after_prefill > 3 * after_decode  # a prefill iteration is the longer one
    runs = [replay(c.lowered, pool, duration=1800, replicas=4, seed=seed) for seed in (0, 1, 2)]
    simulated = sorted(r.simulated["itl_p99"] for r in runs)[1]
    assert runs[0].analytic["itl_p99"] == pytest.approx(simulated, rel=0.08)


def test_plan_simulate_prints_the_simulated_and_the_analytic_figures(tmp_path: Path) -> None:
    from click.testing import CliRunner
    from planc.cli import main

    path = tmp_path / "p.plan"
    path.write_text(plan("chat", 0.6), encoding="utf-8")
    result = CliRunner().invoke(main, ["simulate", str(path), "--duration", "60", "--replicas", "1"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("d: 1 replica(s) at ") and "requests measured, seed 0, random router" in lines[0]
    assert "90 % interval" in lines[1]
    rows = {line[:28].strip(): line for line in lines[2:]}
    for label, field in [("TPOT (mean)", "d.tpot_at_peak"), ("TTFT p99", "d.ttft_at_peak"), ("running sequences (mean)", "d.operating_batch")]:
        assert field in rows[label] and "%" in rows[label]
        assert " – " in rows[label] and ("inside" in rows[label] or "outside" in rows[label])  # the run's sampling error
    assert lines[-3].startswith("90 % interval: the run's sampling error, a block bootstrap")
    wrong = CliRunner().invoke(main, ["simulate", str(path), "--deployment", "nope"])
    assert wrong.exit_code == 2 and "no deployment `nope`" in wrong.output


def test_plan_simulate_refuses_an_engine_the_simulator_cannot_run_with_a_help_line(tmp_path: Path) -> None:
    """A plan that compiles with a token budget below max_num_seqs (vLLM refuses it at start-up):
    an error in the plan's terms and what to change, exit 2, never a traceback."""
    from click.testing import CliRunner
    from planc.cli import main

    path = tmp_path / "p.plan"
    path.write_text(plan("chat", 0.6, "\n  max_num_seqs = 512\n  prefill_chunk = 256 tokens"), encoding="utf-8")
    assert compile_plan(path).ok
    result = CliRunner().invoke(main, ["simulate", str(path), "--duration", "20"])
    assert result.exit_code == 2, result.output
    assert "error: `d` cannot be simulated: its token budget, `d.prefill_chunk` = 256 tokens, is below `max_num_seqs` = 512" in result.output
    assert "= help: set `prefill_chunk` to at least `max_num_seqs` tokens" in result.output
    assert "Traceback" not in result.output and "internal error" not in result.output


@pytest.mark.parametrize(("extra", "said"), [
    ("\n  draft_tokens = 4", "`d.draft_tokens` = 4: the simulator runs no draft model"),
    ("\n  static_batching = true", "`d.static_batching` is true: the simulator's scheduler is continuous batching"),
    ("\n  disaggregated = true", "`d.disaggregated` is true: the simulator serves prefill and decode on the same replicas"),
])
def test_plan_simulate_refuses_a_policy_it_does_not_run_rather_than_simulate_another(tmp_path: Path, extra: str, said: str) -> None:
    """The analytic model knows speculative decoding, static batches and disaggregated pools; the
    simulator serves continuous batching of one token a sequence an iteration, in one pool. It
    says so, exit 2, instead of printing figures of another engine beside the plan's."""
    from click.testing import CliRunner
    from planc.cli import main

    path = tmp_path / "p.plan"
    path.write_text(plan("chat", 0.6, extra), encoding="utf-8")
    assert compile_plan(path).ok
    result = CliRunner().invoke(main, ["simulate", str(path), "--duration", "20"])
    assert result.exit_code == 2, result.output
    assert f"error: `d` cannot be simulated: {said}" in result.output
    assert "= help: simulate the plan with" in result.output and "Traceback" not in result.output


def _erlang_c(c: int, a: float) -> float:
    """Erlang C from its textbook sum (Kleinrock, Queueing Systems I, eq. 3.42), for small c."""
    top = a ** c / math.factorial(c) * c / (c - a)
    return top / (sum(a ** k / math.factorial(k) for k in range(c)) + top)


def test_disaggregated_prefill_takes_the_prompts_off_the_decode_replicas(
        compile_text: Callable[[str], Compilation]) -> None:
    """DistServe's split: the decode replicas' iterations carry no prompt tokens, so their TPOT at
    a batch is the pure decode step; the prompts queue on a pool of their own, sized for its
    load, and the fleet is both pools."""
    assert _erlang_c(2, 1.0) == pytest.approx(1 / 3)  # the textbook value the check below relies on
    mixed = values(compile_text(plan("long_prompt", 0.6)))
    split = values(compile_text(plan("long_prompt", 0.6, "\n  disaggregated = true")))
    assert mixed["d.prefill_pool_devices"] == 0 and mixed["d.prefill_load"] > 0
    assert split["d.prefill_load"] == 0 and split["d.prefill_share"] == 0
    assert split["d.mean_step_time"] == split["d.step_time"]  # no prefill interference
    # its TPOT is the pure decode step, at the batch a decoding sequence sees (itself included)
    seen = values(compile_text(plan("long_prompt", 0.6, f"\n  disaggregated = true\n  batch = {split['d.batch'] + 1:.0f}")))
    assert split["d.tpot"] == pytest.approx(seen["d.step_time"], rel=1e-12) and split["d.tpot"] > split["d.step_time"]
    # at the same running batch the decode replica is faster than one that also prefills
    same = values(compile_text(plan("long_prompt", 0.6, f"\n  disaggregated = true\n  batch = {mixed['d.batch']:.0f}")))
    assert same["d.tpot"] < mixed["d.tpot"]
    # the prefill pool: the mean prompt alone is its service; sized for the peak and the burst
    service = split["d.prefill_time"]
    assert split["d.prefill_pool_service_time"] == service
    assert split["d.prefill_pool_replicas"] == max(
        math.ceil(split["t.peak_qps"] * service / 0.6), math.ceil(split["t.burst_qps"] * service) + 1)
    c, a = int(split["d.prefill_pool_replicas"]), split["t.burst_qps"] * service
    assert split["d.prefill_pool_wait_probability"] == pytest.approx(_erlang_c(c, a), rel=1e-9)
    wait = max(math.log(_erlang_c(c, a) / 0.01), 0) * service / (c - a) * split["d.prefill_variability"]
    assert split["d.ttft_tail"] == pytest.approx(wait + service * 16000 / 4000, rel=1e-9)
    assert split["d.devices"] == (split["d.total_replicas"] + c + 1) * split["d.replica_devices"]


def test_plan_simulate_warns_when_the_replicas_do_not_keep_up(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Iterations four times as long as the plan's physics says: the simulated replicas finish far
    fewer requests than arrive, the queue grows for the whole run, and the command says so (the
    JSON's keeps_up is false) instead of printing percentiles as if there were a steady state."""
    import json

    import planc.replay as replay_module
    from click.testing import CliRunner
    from planc.cli import main

    path = tmp_path / "p.plan"
    path.write_text(plan("chat", 0.6), encoding="utf-8")
    args = ["simulate", str(path), "--duration", "60", "--replicas", "1"]
    steady = CliRunner().invoke(main, [*args, "--format", "json"])
    assert json.loads(steady.stdout)["keeps_up"] is True and "did not keep up" not in CliRunner().invoke(main, args).output
    timed = replay_module._IterationTimer.function

    def slower(self):  # type: ignore[no-untyped-def]
        f = timed(self)
        return lambda d, c, p, q: 4 * f(d, c, p, q)

    monkeypatch.setattr(replay_module._IterationTimer, "function", slower)
    data = json.loads(CliRunner().invoke(main, [*args, "--format", "json"]).stdout)
    assert data["keeps_up"] is False and data["backlog"] > 0.05 and data["completed_rate"] < data["rate"]
    text = CliRunner().invoke(main, args)
    assert text.exit_code == 0 and "warning: the replicas did not keep up" in text.output
