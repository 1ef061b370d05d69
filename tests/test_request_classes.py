"""Request classes sharing one pool (stdlib `traffic_mix`, `request_class`; docs/physics.md §7.8):
the mix's moments against a Monte Carlo sample of the mixture, its rates and arrivals, each
class's own TTFT through `other.f where (...)`, and the analytic model against the simulator
serving the same mixture."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from planc.diagnostics import Severity
from planc.pipeline import Compilation
from planc.sim_traffic import LengthClass, Workload, lengths, lognormal_fit

from .sim_agreement import CLASS_TTFT_P50, CLASS_TTFT_P99, replay_agrees

CLASS = """traffic {name} {{ daily_active_users = {dau}; requests_per_user = 10 requests/user/day; peak_factor = {peak}
  prompt_tokens = {p} tokens; prompt_tokens_p99 = {p99} tokens; output_tokens = {o} tokens; output_tokens_p99 = {o99} tokens{extra} }}
"""
CHAT = {"name": "chat", "dau": "1 M users", "peak": 3, "p": 1000, "p99": 6000, "o": 250, "o99": 1000, "extra": ""}
DOCS = {"name": "docs", "dau": "500 k users", "peak": 3, "p": 4000, "p99": 16000, "o": 200, "o99": 600, "extra": ""}
HEAD = 'import "models/llama-3.1-8b"\nimport "hardware/h100-sxm"\n'
POOL = """traffic_mix both {{ first = chat; second = docs }}
deployment d {{ model = llama_3_1_8b; hardware = h100_sxm; traffic = {traffic}; utilization_target = {u}; ttft_slo = 5 s; tpot_slo = 60 ms }}
"""
VIEWS = """request_class chat_class { deployment = d; traffic = chat }
request_class docs_class { deployment = d; traffic = docs; ttft_slo = 10 s }
"""


def mixed(u: float = 0.6, chat: dict[str, object] = CHAT, docs: dict[str, object] = DOCS, traffic: str = "both",
          views: bool = True) -> str:
    return HEAD + CLASS.format(**chat) + CLASS.format(**docs) + POOL.format(traffic=traffic, u=u) + (VIEWS if views else "")


def values(c: Compilation) -> dict[str, float]:
    assert c.ok and c.lowered is not None, [d.message for d in c.diagnostics]
    return {k: float(v) for k, v in c.lowered.values.items() if not isinstance(v, str)}  # type: ignore[arg-type]


def sample(classes: list[tuple[float, dict[str, object]]], n: int, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """n (prompt, output) lengths of the mixture, unrounded: each class's lognormals, drawn by share."""
    rng = np.random.default_rng(seed)
    pick = rng.choice(len(classes), size=n, p=[s for s, _ in classes])
    prompt, output = np.empty(n), np.empty(n)
    for i, (_, c) in enumerate(classes):
        mine = pick == i
        for out, mean, p99 in ((prompt, c["p"], c["p99"]), (output, c["o"], c["o99"])):
            mu, sigma = lognormal_fit(float(mean), float(p99))  # type: ignore[arg-type]
            out[mine] = rng.lognormal(mu, sigma, int(mine.sum()))
    return prompt, output


def test_the_mix_has_the_mixtures_moments(compile_text: Callable[[str], Compilation]) -> None:
    v = values(compile_text(mixed()))
    # the classes' shares are their peak rates': 1 M and 500 k users, 10 requests each, the same peak factor
    assert v["both.first_share"] == pytest.approx(2 / 3, rel=1e-12)
    i, o = sample([(2 / 3, CHAT), (1 / 3, DOCS)], 4_000_000)
    assert v["both.prompt_tokens"] == pytest.approx(2 / 3 * 1000 + 1 / 3 * 4000, rel=1e-12)
    assert v["both.output_tokens"] == pytest.approx(2 / 3 * 250 + 1 / 3 * 200, rel=1e-12)
    assert v["both.prompt_square"] == pytest.approx((i ** 2).mean(), rel=0.02)
    assert v["both.output_square"] == pytest.approx((o ** 2).mean(), rel=0.02)
    assert v["both.prompt_tokens_third"] == pytest.approx((i ** 3).mean() / i.mean(), rel=0.05)
    assert v["both.output_tokens_third"] == pytest.approx((o ** 3).mean() / o.mean(), rel=0.05)
    # the median prompt is the mixture's own, not that of the lognormal with its mean and E[I²]
    assert v["both.prompt_tokens_median"] == pytest.approx(float(np.median(i)), rel=0.01)
    fitted = v["both.prompt_tokens"] * math.exp(-v["both.prompt_sigma"] ** 2 / 2)
    assert abs(fitted / float(np.median(i)) - 1) > 0.1
    # length-biased means stay exact through the moment-matched lognormal
    assert v["both.prompt_tokens_biased"] == pytest.approx(v["both.prompt_square"] / v["both.prompt_tokens"], rel=1e-12)
    assert v["both.output_tokens_biased"] == pytest.approx(v["both.output_square"] / v["both.output_tokens"], rel=1e-12)
    # the cross moments of a sequence running at a random moment (length-biased by its output):
    # the long-prompt class has the shorter outputs, so a running sequence's prompt is below the mean prompt
    assert v["both.running_prompt_tokens"] == pytest.approx((o * i).mean() / o.mean(), rel=0.01)
    assert v["both.running_prompt_tokens"] < v["both.prompt_tokens"]
    assert v["both.running_prompt_square"] == pytest.approx((o * i ** 2).mean() / o.mean(), rel=0.02)
    assert v["both.running_prompt_output"] == pytest.approx((o ** 2 * i).mean() / o.mean(), rel=0.02)


def test_the_window_of_a_mix_serves_each_classs_long_requests(compile_text: Callable[[str], Compilation]) -> None:
    """A small class of long documents: the mix's lognormal puts its p99 below the documents' own
    p99 request, and the deployment's window (`context`) is the longest class's, so the documents
    are not cut (docs/physics.md §7.8)."""
    rare_docs = {**DOCS, "dau": "50 k users", "p": 12000, "p99": 60000, "o": 500, "o99": 1500}
    v = values(compile_text(mixed(docs=rare_docs)))
    assert v["docs.request_context_p99"] == 61500 and v["chat.request_context_p99"] == 7000
    assert v["both.prompt_tokens_p99"] + v["both.output_tokens_p99"] < 30000  # the mix's lognormal alone
    assert v["both.request_context_p99"] == 61500 and v["d.context"] == 61500


def test_the_kv_of_a_running_sequence_follows_the_mixture(compile_text: Callable[[str], Compilation]) -> None:
    # a running sequence holds c = I + U·O tokens, drawn with weight O (a long output runs longer)
    v = values(compile_text(mixed()))
    i, o = sample([(2 / 3, CHAT), (1 / 3, DOCS)], 4_000_000, seed=11)
    u = np.random.default_rng(12).uniform(size=len(o))
    c = i + u * o
    assert v["d.mean_context"] == pytest.approx((o * c).sum() / o.sum(), rel=0.01)
    assert v["d.kv_context_square"] == pytest.approx((o * c ** 2).sum() / o.sum(), rel=0.02)


def test_rates_add_and_arrivals_merge(compile_text: Callable[[str], Compilation]) -> None:
    bursty = dict(DOCS, peak=2, extra="; arrival_cv = 2")  # docs peak at twice their mean, chat at three times
    v = values(compile_text(mixed(docs=bursty)))
    for field in ("requests_per_day", "peak_qps", "burst_qps", "average_qps", "average_tokens_per_s"):
        assert v[f"both.{field}"] == pytest.approx(v[f"chat.{field}"] + v[f"docs.{field}"], rel=1e-12), field
    w = v["chat.peak_qps"] / (v["chat.peak_qps"] + v["docs.peak_qps"])
    assert v["both.first_share"] == pytest.approx(w, rel=1e-12)
    # Whitt's asymptotic method: the merged process's c² is the rate-weighted c² of its parts
    assert v["both.arrival_cv"] == pytest.approx(math.sqrt(w * 1 + (1 - w) * 4), rel=1e-12)
    assert v["both.peak_factor"] == pytest.approx(v["both.peak_qps"] / v["both.average_qps"], rel=1e-12)


def test_a_mix_of_one_class_with_itself_is_that_class(compile_text: Callable[[str], Compilation]) -> None:
    twin = dict(CHAT, name="docs")
    one = values(compile_text(mixed(traffic="chat", views=False), name="one.plan"))
    two = values(compile_text(mixed(docs=twin, views=False), name="two.plan"))
    assert two["both.peak_qps"] == pytest.approx(2 * one["chat.peak_qps"], rel=1e-12)
    for field in ("prompt_tokens", "prompt_sigma", "output_sigma", "prompt_tokens_p99", "output_tokens_p99",
                  "prompt_tokens_third", "output_tokens_third", "running_prompt_square", "running_prompt_output"):
        assert two[f"both.{field}"] == pytest.approx(one[f"chat.{field}"], rel=1e-9), field
    # the same traffic at twice the rate: the same replica, twice the replicas
    for field in ("batch", "tpot", "ttft_tail", "kv_context_square", "preemption_probability"):
        assert two[f"d.{field}"] == pytest.approx(one[f"d.{field}"], rel=1e-9), field


def test_a_mix_of_a_mix_serves_three_classes(compile_text: Callable[[str], Compilation]) -> None:
    batch = {"name": "batch_api", "dau": "200 k users", "peak": 3, "p": 300, "p99": 1000, "o": 1000, "o99": 4000, "extra": ""}
    text = mixed(views=False).replace("traffic = both", "traffic = all") + CLASS.format(**batch) + \
        "traffic_mix all { first = batch_api; second = both }\n"
    v = values(compile_text(text))
    rates = {n: v[f"{n}.peak_qps"] for n in ("chat", "docs", "batch_api")}
    total = sum(rates.values())
    assert v["all.peak_qps"] == pytest.approx(total, rel=1e-12)
    shares = [(rates["batch_api"] / total, batch), (rates["chat"] / total, CHAT), (rates["docs"] / total, DOCS)]
    i, o = sample(shares, 4_000_000, seed=5)
    assert v["all.prompt_tokens"] == pytest.approx(sum(s * float(c["p"]) for s, c in shares), rel=1e-12)  # type: ignore[arg-type]
    assert v["all.running_prompt_tokens"] == pytest.approx((o * i).mean() / o.mean(), rel=0.01)
    assert v["all.running_prompt_output"] == pytest.approx((o ** 2 * i).mean() / o.mean(), rel=0.02)
    assert v["all.output_tokens_third"] == pytest.approx((o ** 3).mean() / o.mean(), rel=0.05)
    # the inner mix enters the outer one's median as the lognormal with its mean and median, which
    # is not the inner mixture itself: here 4 % above the sample's median (the flat mix above, 1 %)
    assert v["all.prompt_tokens_median"] == pytest.approx(float(np.median(i)), rel=0.05)


def test_each_class_has_its_own_ttft_and_the_pools_tpot(compile_text: Callable[[str], Compilation]) -> None:
    v = values(compile_text(mixed()))
    for view in ("chat_class", "docs_class"):
        assert v[f"{view}.tpot"] == v["d.tpot"]
    assert v["chat_class.ttft_tail"] < v["d.ttft_tail"] < v["docs_class.ttft_tail"]
    assert v["chat_class.ttft_at_peak"] < v["d.ttft_at_peak"] < v["docs_class.ttft_at_peak"]
    # the class's mean TTFT: the same wait as every request, then its own prompt's iterations, whose
    # time is a lognormal through the class's median and p99 prompts (convex in the length)
    # (the variant of `d` at the documents' prompts that holds their `ttft_mean` and own-time variants:
    # variants are found by what they bind, as one variant serves every field that binds the same)
    variant = next(k.removesuffix("@own_time_median.ttft_prompt_tokens") for k, x in v.items()
                   if k.startswith("d@") and k.endswith("@own_time_median.ttft_prompt_tokens")
                   and x == v["docs.prompt_tokens_median"]
                   and k.replace("@own_time_median.ttft_prompt_tokens", ".ttft_mean") in v)
    assert v["docs_class.ttft_mean"] == v[f"{variant}.ttft_mean"]
    # the median prompt's own iterations: its prefill at the chunk that carries it (the prompt and
    # what arrives with it), and a decode step in each of its chunks
    median = f"{variant}@own_time_median"
    prompt = 4000 * math.exp(-v["docs.prompt_sigma"] ** 2 / 2)
    assert v[f"{median}.ttft_prompt_tokens"] == pytest.approx(prompt, rel=1e-12)
    own = v[f"{median}.own_prefill_time"]
    assert own == pytest.approx(prompt * v[f"{median}.own_token_time"], rel=1e-12)
    assert v[f"{median}.own_chunk"] == pytest.approx(prompt + v["d.prefill_load"], rel=1e-12)
    chunks = math.ceil(prompt / v["d.chunk_room"])
    assert v[f"{variant}.own_time_median"] == pytest.approx(chunks * v["d.step_time"] + own, rel=1e-12)
    assert v[f"{variant}.ttft_prompt_p99"] == v["docs.prompt_tokens_p99"]
    sigma = math.log(v[f"{variant}.own_time_p99"] / v[f"{variant}.own_time_median"]) / 2.3263478740408408
    assert v[f"{variant}.own_time_sigma"] == pytest.approx(sigma, rel=1e-9)
    own_mean = v[f"{variant}.own_time_median"] * math.exp(sigma ** 2 / 2)
    assert v["docs_class.ttft_mean"] == pytest.approx(v["d.prefill_wait"] + own_mean, rel=1e-9)
    assert v["docs_class.e2e_latency"] == pytest.approx(v["docs_class.ttft_mean"] + 199 * v["d.tpot"], rel=1e-12)
    # its own SLOs: documents have 10 s, chat the deployment's 5 s
    assert v["docs_class.ttft_slo"] == 10 and v["chat_class.ttft_slo"] == 5


def test_a_class_view_of_the_pools_own_traffic_is_the_pool(compile_text: Callable[[str], Compilation]) -> None:
    text = mixed(traffic="chat", views=False) + "request_class all_chat { deployment = d; traffic = chat }\n"
    v = values(compile_text(text))
    for field in ("ttft_tail", "ttft_mean", "ttft_at_peak", "ttft_median_at_peak"):
        assert v[f"all_chat.{field}"] == pytest.approx(v[f"d.{field}"], rel=1e-12), field


def test_where_on_another_instance_names_that_instances_fields(compile_text: Callable[[str], Compilation]) -> None:
    bad = mixed(views=False) + ("kind probe \"a probe\" { input deployment: deployment \"d\"\n"
                                "  derive t: s = deployment.ttft_tail where (ttft_prompt_token = 10 tokens) \"t\" }\n"
                                "probe p { deployment = d }\n")
    c = compile_text(bad)
    assert not c.ok
    [error] = [d for d in c.diagnostics if d.severity is Severity.ERROR]
    # the binding names the other instance's field: "`deployment` has no field", with the suggestion
    assert error.code == "E0203" and "`deployment`" in error.message and "ttft_prompt_tokens" in (error.help or "")


def test_the_simulator_draws_each_requests_class_by_share() -> None:
    classes = (LengthClass(3, 100, 100, 10, 10), LengthClass(1, 5000, 5000, 50, 50))
    w = Workload(rate=1, prompt_mean=1, prompt_p99=1, output_mean=1, output_p99=1, classes=classes)
    prompt, output, klass = lengths(w, 40_000, np.random.default_rng(0))
    assert (klass == 1).mean() == pytest.approx(0.25, abs=0.01)
    assert set(prompt[klass == 0]) == {100} and set(prompt[klass == 1]) == {5000}
    assert set(output[klass == 0]) == {10} and set(output[klass == 1]) == {50}


@pytest.mark.parametrize("utilization", [0.3, 0.6])
def test_the_analytic_mix_agrees_with_the_simulator(tmp_path: Path, utilization: float) -> None:
    """The simulator serves the true mixture (each request's lengths from its class); the analytic
    model serves its moments. Overall within the tolerances of the one-class test
    (tests/test_engine_model.py), per class within looser ones (CLASS_TTFT_P50, CLASS_TTFT_P99).
    Served for 1,000 s (the one-class test's length): a class's p99 rests on its share of the
    requests, and over 200 s the chat p99 of five seeds spread from 0.27 to 0.36 s (at 400 s, 0.29
    to 0.34 s; the analytic figure at 0.3 is 0.26 s, docs/physics.md §7.8). At 400 s even the pool's
    p99, the mean of three seeds, read 0.657 s at 0.6 where 1,000 s read 0.601 s: the documents'
    long prompts that make it are too few in 400 s."""
    run = replay_agrees(tmp_path, mixed(utilization))
    assert run.classes == ["chat", "docs"]
    for klass, view in (("chat", "chat_class"), ("docs", "docs_class")):
        mine, (name, figures) = run.class_simulated[klass], run.class_analytic[klass]
        assert name == view and mine["requests"] > 300
        assert figures["ttft_p50"] == pytest.approx(mine["ttft_p50"], rel=CLASS_TTFT_P50), klass
        assert figures["ttft_p99"] == pytest.approx(mine["ttft_p99"], rel=CLASS_TTFT_P99), klass
    # the documents' long prompts wait as long as chat's, then take longer to prefill
    assert run.class_simulated["docs"]["ttft_p50"] > 2 * run.class_simulated["chat"]["ttft_p50"]


def test_the_pools_median_ttft_of_a_mix_agrees_with_the_simulator() -> None:
    """The example's pool serves chat, a batch API and long documents (1 % of the requests, ten
    times chat's prompts). The lognormal with the mix's mean and E[I²] is wide enough for the
    documents, so its median prompt, 631 tokens, lay far below the mixture's, 759: the pool's
    analytic TTFT p50 was 67.6 ms against 79.0 ms simulated (8 replicas, an hour, seeds 0-1; -14 %).
    The own time at the median is now taken at the mixture's median prompt (docs/physics.md §7.8)."""
    from planc.pipeline import compile_plan
    from planc.replay import replay

    c = compile_plan(Path(__file__).parent.parent / "examples" / "request_classes.plan")
    assert c.lowered is not None
    runs = [replay(c.lowered, "pool", duration=3600, replicas=8, seed=seed) for seed in (0, 1)]
    simulated = sum(r.simulated["ttft_p50"] for r in runs) / len(runs)
    assert runs[0].analytic["ttft_p50"] == pytest.approx(simulated, rel=0.06)


def test_plan_simulate_prints_each_class(tmp_path: Path) -> None:
    from click.testing import CliRunner
    from planc.cli import main

    path = tmp_path / "mix.plan"
    path.write_text(mixed(0.6).replace("request_class docs_class { deployment = d; traffic = docs; ttft_slo = 10 s }\n", ""),
                    encoding="utf-8")
    result = CliRunner().invoke(main, ["simulate", str(path), "--duration", "40", "--replicas", "1"])
    assert result.exit_code == 0, result.output
    rows = {line[:28].strip(): line for line in result.output.splitlines()}
    assert "chat_class.ttft_at_peak" in rows["chat: TTFT p99"] and "%" in rows["chat: TTFT p99"]
    assert "declare a `request_class` of `d` for `docs`" in rows["docs: TTFT p99"]


def test_plan_simulate_json_carries_each_figure_its_interval_and_the_distributions(tmp_path: Path) -> None:
    """`plan simulate --format json`: valid against the shipped schema, byte-identical run to run,
    the same figures as the table (each class's too), and each latency's percentiles in order."""
    import json

    import jsonschema
    from click.testing import CliRunner
    from planc.cli import main
    from planc.report.machine import schema_path

    path = tmp_path / "mix.plan"
    path.write_text(mixed(0.6).replace("request_class docs_class { deployment = d; traffic = docs; ttft_slo = 10 s }\n", ""),
                    encoding="utf-8")
    args = ["simulate", str(path), "--duration", "60", "--replicas", "2", "--seed", "1"]
    first, again = (CliRunner().invoke(main, [*args, "--format", "json"]) for _ in range(2))
    assert first.exit_code == 0, first.output
    assert first.stdout == again.stdout
    data = json.loads(first.stdout)
    jsonschema.validate(data, json.loads(schema_path("plan.simulate").read_text(encoding="utf-8")),
                        cls=jsonschema.Draft202012Validator)
    assert (data["deployment"], data["replicas"], data["seeds"], data["router"]) == ("d", 2, [1], "random")
    assert data["interval"]["method"] == "block bootstrap"
    assert all(f["runs"] == [f["simulated"]] for f in data["figures"])
    table = CliRunner().invoke(main, args).stdout.splitlines()
    rows = {line[:28].strip(): line for line in table}
    for figure in data["figures"] + [f for c in data["classes"] for f in c["figures"]]:
        scale = 1e3 if figure["unit"] == "s" else 1.0
        assert f"{figure['simulated'] * scale:,.4g}" in rows[figure["label"]]
        if figure["interval"] is not None:
            low, high = figure["interval"]["low"], figure["interval"]["high"]
            assert low <= figure["simulated"] * 1.02 and figure["simulated"] <= high * 1.02
            if figure["analytic"] is not None:
                assert figure["inside"] == (low <= figure["analytic"] <= high)
    assert [c["class"] for c in data["classes"]] == ["chat", "docs"]
    assert sum(c["measured_share"] for c in data["classes"]) == pytest.approx(1)
    assert sum(c["requests"] for c in data["classes"]) == data["requests"]
    docs = next(c for c in data["classes"] if c["class"] == "docs")
    assert all(f["analytic"] is None and f["field"] is None for f in docs["figures"])  # no request_class for it
    for name, ladder in data["distributions"].items():
        values = [ladder[k] for k in ("p50", "p90", "p95", "p99", "p99.9")]
        assert values == sorted(values) and all(v > 0 for v in values), name
    ttft = next(f for f in data["figures"] if f["name"] == "ttft_p99")
    assert ttft["simulated"] == data["distributions"]["ttft"]["p99"]


def test_plan_simulate_seeds_runs_independent_runs_and_gives_their_mean_and_range(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`--seeds 3`: the runs of seeds 2, 3 and 4, each the very run `--seed` gives alone; each
    figure their mean, its interval their range; the same whether the runs share the cores
    (forked processes) or run one after another (PLAN_JOBS=1)."""
    import json

    from click.testing import CliRunner
    from planc.cli import main

    monkeypatch.delenv("PLAN_JOBS", raising=False)  # the runs in a second process where the machine has a second core
    path = tmp_path / "mix.plan"
    path.write_text(mixed(0.6), encoding="utf-8")
    args = ["simulate", str(path), "--duration", "40", "--replicas", "1", "--format", "json"]
    alone = [json.loads(CliRunner().invoke(main, [*args, "--seed", str(s)]).stdout) for s in (2, 3, 4)]
    together = CliRunner().invoke(main, [*args, "--seed", "2", "--seeds", "3"])
    assert together.exit_code == 0, together.output
    data = json.loads(together.stdout)
    assert data["seeds"] == [2, 3, 4] and data["interval"]["method"] == "range of runs"
    assert data["requests"] == sum(a["requests"] for a in alone)
    for i, figure in enumerate(data["figures"]):
        runs = [a["figures"][i]["simulated"] for a in alone]
        assert figure["runs"] == runs
        assert figure["simulated"] == pytest.approx(float(np.mean(runs)), rel=1e-12)
        assert (figure["interval"]["low"], figure["interval"]["high"]) == (min(runs), max(runs))
    monkeypatch.setenv("PLAN_JOBS", "1")
    assert CliRunner().invoke(main, [*args, "--seed", "2", "--seeds", "3"]).stdout == together.stdout
    table = CliRunner().invoke(main, args[:-2] + ["--seed", "2", "--seeds", "3"]).stdout.splitlines()
    assert "3 runs, seeds 2-4" in table[0] and "range of 3 runs" in table[1]
    assert table[-2].startswith("range of 3 runs: the least and the greatest")
