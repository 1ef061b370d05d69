"""The decision section: sentences computed from the records, true for every example.

A `finding` is stated when its condition holds, with its holes filled by the values of the
quantities they name. These tests check that on every example each sentence the document states
is true (its condition holds when re-evaluated by the vectorised evaluator, an implementation
independent of the exact one that chose it, and each number in it is the value of the quantity
it links to), that each finding left out is false, that the sentences about the search and the
checks say what their records say, and that the language reports bad findings at the user's line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from planc import exact
from planc.pipeline import Compilation, compile_plan
from planc.report.decision import percent
from planc.report.markdown import render_markdown
from planc.report.view import build_document
from planc.semantics import ir
from planc.vector import evaluate

from .flagship import FLAGSHIP as FIGURES

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "examples").glob("*.plan"))
FLAGSHIP = REPO / "examples" / "100m_dau.plan"


@pytest.fixture(scope="module")
def compiled() -> dict[str, Compilation]:
    return {e.stem: compile_plan(e) for e in EXAMPLES}


def _vector_values(c: Compilation) -> dict[str, np.ndarray]:
    assert c.lowered is not None
    return {k: np.asarray(float(v)) for k, v in c.lowered.values.items()}


@pytest.mark.parametrize("example", [e.stem for e in EXAMPLES])
def test_every_stated_finding_holds_and_every_other_does_not(example: str, compiled: dict[str, Compilation]) -> None:
    c = compiled[example]
    assert c.ok and c.lowered is not None
    values = _vector_values(c)
    stated = {id(s.finding) for s in c.lowered.findings}
    for f in c.lowered.elaborated.findings:
        holes = [p.expr for p in f.parts if isinstance(p, ir.Hole)]
        if not all(all(r in values for r in ir.refs(h)) for h in holes):
            continue
        holds = bool(evaluate(f.expr, values))
        assert holds == (id(f) in stated), (f.instance, f.span.location(), holds)


@pytest.mark.parametrize("example", [e.stem for e in EXAMPLES])
def test_every_number_in_a_finding_is_the_value_of_its_quantity(example: str, compiled: dict[str, Compilation]) -> None:
    c = compiled[example]
    assert c.lowered is not None
    doc = build_document(c)
    by_text = {x.text: x for x in doc.decision.findings}
    assert len(by_text) == len(doc.decision.findings) or doc.decision.several
    texts = {q.id: q.text for q in [*doc.assumptions, *doc.specifications, *(q for s in doc.sections for q in s.quantities)]}
    for stated, sentence in zip(c.lowered.findings, doc.decision.findings):
        holes = [p for p in stated.finding.parts if isinstance(p, ir.Hole)]
        numbers = [(t, n) for t, n in sentence.parts if n]
        assert len(numbers) == len(holes)  # in the stdlib every hole names a quantity
        for (text, node), hole, value in zip(numbers, holes, stated.values):
            assert isinstance(hole.expr, ir.Ref) and hole.expr.node == node
            expected = percent(float(value)) if hole.percent else texts.get(node)
            if expected is not None:
                assert text == expected, (node, text, expected)
            assert math.isclose(float(value), float(c.lowered.values[node]), rel_tol=1e-12)


def test_the_flagship_states_its_regime_sizing_and_memory(compiled: dict[str, Compilation]) -> None:
    doc = build_document(compiled["100m_dau"])
    text = " ".join(x.text for x in doc.decision.findings)
    assert "Decode is memory-bound" in text and "Prefill is compute-bound" in text
    assert f"Throughput at the peak sizes the fleet: {FIGURES['chat.replicas']} replicas" in text
    assert "A rolling update at the peak overloads the fleet" in text
    groups = [title for title, _ in doc.decision.groups]
    assert groups == ["Why", "Kernels", "Out of memory", "Production"]
    # exactly one of each pair of opposite findings
    assert text.count("Decode is memory-bound") + text.count("Decode is compute-bound") == 1
    assert text.count("A rolling update at the peak") == 1


@pytest.mark.parametrize("example", [e.stem for e in EXAMPLES])
def test_the_kv_alert_is_the_quantile_the_sentences_say_it_is(example: str, compiled: dict[str, Compilation]) -> None:
    """The KV-growth and on-call sentences say the running batch passes the alert in only the
    preemption target's share of iterations, and, where the batch is not held by the cache, that
    the alert comes before the cache fills: both checked on the normal law the model uses."""
    from statistics import NormalDist

    c = compiled[example]
    assert c.lowered is not None
    v = {k: float(x) for k, x in c.lowered.values.items() if isinstance(x, (int, float, Fraction))}
    text = " ".join(x.text for x in build_document(c).decision.findings)
    for n in sorted({k.rsplit(".", 1)[0] for k in v if k.endswith(".kv_usage_alert") and "@" not in k}):
        if v.get(f"{n}.reserve_full_context", 0.0):
            continue
        sd = max(v[f"{n}.kv_working_set_sd"], 1.0)
        over = 1 - NormalDist().cdf((v[f"{n}.kv_usage_alert"] * v[f"{n}.kv_capacity_tokens"] - v[f"{n}.kv_working_set"]) / sd)
        assert over == pytest.approx(v[f"{n}.preemption_target"], rel=1e-6), n
        if v[f"{n}.preemption_probability"] < v[f"{n}.preemption_target"] / 2:
            assert "before the cache fills" in text
            assert v[f"{n}.kv_usage_alert"] < 1, n


def test_a_variants_breakdown_is_where_the_quantity_goes_not_its_variance(compiled: dict[str, Compilation]) -> None:
    """A quantity computed by a `where` shows the breakdown of a sum in its variant; a sum of
    squared or cubed units (the TTFT's variance) is skipped: its shares say nothing of the time."""
    c = compiled["100m_dau"]
    doc = build_document(c)
    nodes = c.elaborated.nodes  # type: ignore[union-attr]
    shown = [q for s in doc.sections for q in s.quantities if q.breakdown_of]
    assert shown
    for q in shown:
        dim = nodes[q.id].dim
        assert nodes[q.breakdown_of].dim not in (dim ** 2, dim ** 3), (q.id, q.breakdown_of)
    ttft = next(q for q in shown if q.id == "chat.ttft_at_peak")
    assert nodes[ttft.breakdown_of].field == "iteration_gpu_time"


def test_the_risks_name_the_tightest_check_and_the_one_a_search_makes_tight(compiled: dict[str, Compilation]) -> None:
    c = compiled["100m_dau"]
    assert c.lowered is not None
    doc = build_document(c)
    slack = []
    for outcome, check in zip(c.lowered.checks, doc.checks):
        if outcome.holds and outcome.right:
            slack.append((float(outcome.right - outcome.left) / abs(float(outcome.right)), check.label))
    slack.sort()
    # the batch is solved as the largest that meets the SLOs: one sequence more and the p99 TTFT
    # check fails, and nothing else does, so it is the tightest (TPOT keeps about a tenth in hand)
    _, parts = exact.search_bounds(c.lowered.elaborated, "chat.batch", c.lowered.values)
    assert [" ".join(p[0].span.text.split()) for p in parts if p[1] is False] == ["ttft_tail <= ttft_slo"]
    searched = {"p99 TTFT SLO at capacity (a burst)"}
    assert {label for _, label in slack[:1]} == searched
    others = [s for s in slack if s[1] not in searched]
    risks = [r.text for r in doc.decision.risks]
    assert risks[0].startswith(f"Of the checks no search sets, the tightest is the check “{others[0][1]}”")
    assert risks[0].endswith(f"{percent(others[0][0])} to spare.")
    assert not any("TPOT SLO" in r and "by construction" in r for r in risks)
    for (share, label), text in zip(slack[:1], risks[1:2]):
        assert text.startswith(f"The check “{label}” is tight by construction")
        assert text.endswith(f"{percent(share)} to spare, because chat.batch is the largest value at which it "
                             "holds (a search of the plan sets it there).")


def test_with_no_search_behind_it_the_tightest_check_is_named_alone(compiled: dict[str, Compilation]) -> None:
    c = compiled["recommender"]
    assert c.lowered is not None
    risks = [r.text for r in build_document(c).decision.risks]
    assert risks[0].startswith("The tightest margin is the check “ranking latency budget”")
    assert not any("by construction" in r for r in risks)


def test_the_search_sentence_names_its_best_row_and_the_declared_plan(compiled: dict[str, Compilation]) -> None:
    c = compiled["100m_dau"]
    doc = build_document(c)
    search = next(a for a in c.answers if getattr(a, "kind", "") == "search")
    feasible = [values[0] for _, values in search.rows if not values[1]]
    assert search.rows[search.best][1][0] == min(feasible)
    opening, first, declared = (x.text for x in doc.decision.deploy[:3])
    assert opening == f"As declared, the plan gives chat.devices = {FIGURES['chat.devices']}, and all 4 of its checks pass."
    assert f"({search.evaluated} configurations, {search.feasible} of them meeting its constraints)" in first
    assert search.best_setting in first
    # the winner's values are shown as every value of the document is, as the declared plan's are
    # the declared plan (the engine's 8,192-token chunk) is the search's best: a smaller chunk prefills
    # a prompt in more iterations, each paying the prefill-attention call's fixed time in every layer
    assert search.best_setting == "weights = fp8, tensor_parallel = 4, prefill_chunk = 8,192 tokens"
    assert declared == ("The plan as declared (weights = fp8, tensor_parallel = 4, prefill_chunk = 8,192 tokens) "
                        "is the search's choice.")


def test_the_decision_opens_with_the_declared_plans_headline_and_its_failing_checks(
        compile_text: Callable[..., Compilation]) -> None:
    text = FLAGSHIP.read_text(encoding="utf-8") + 'check chat.batch >= 100000 "a batch no device holds"\n'
    c = compile_text(text)
    opening = build_document(c).decision.deploy[0]
    assert opening.text.startswith("As declared, the plan gives chat.devices = ")
    assert opening.text.endswith(", and 1 of its 5 checks fails (see the risks below).")
    assert (FIGURES["chat.devices"], "chat.devices") in opening.parts  # the number links to its derivation


def test_a_declared_plan_tied_with_the_search_says_it_is_one_of_the_best(compile_text: Callable[..., Compilation]) -> None:
    """A 16,384-token chunk prefills the flagship's prompts in the iterations an 8,192-token one does,
    so the two rows tie; the search names the first of them, and the plan as declared is one of the best."""
    text = FLAGSHIP.read_text(encoding="utf-8").replace("  tensor_parallel = 4\n", "  tensor_parallel = 4\n  prefill_chunk = 16384 tokens\n", 1)
    c = compile_text(text)
    assert c.ok and c.lowered is not None, c.diagnostics
    search = next(a for a in c.answers if getattr(a, "kind", "") == "search")
    assert search.best_setting == "weights = fp8, tensor_parallel = 4, prefill_chunk = 8,192 tokens"
    assert float(c.lowered.values["chat.cost_per_month"]) == search.rows[search.best][1][0]
    declared = build_document(c).decision.deploy[2].text
    assert declared.startswith("The plan as declared (weights = fp8, tensor_parallel = 4, prefill_chunk = 16,384 tokens) "
                               "is one of the best: its cost_per_month is the same, ")


def test_a_declared_plan_worse_than_the_search_says_by_how_much(compile_text: Callable[..., Compilation]) -> None:
    text = FLAGSHIP.read_text(encoding="utf-8").replace("  weights = fp8\n", "  weights = bf16\n")
    c = compile_text(text)
    assert c.ok, c.diagnostics
    doc = build_document(c)
    declared = doc.decision.deploy[2].text
    search = next(a for a in c.answers if getattr(a, "kind", "") == "search")
    best = search.rows[search.best][1][0]
    assert c.lowered is not None
    mine = float(c.lowered.values["chat.cost_per_month"])
    assert mine > best
    assert declared.startswith("The plan as declared (weights = bf16, tensor_parallel = 4")
    assert f"{percent((mine - best) / best)} more: the search's choice saves" in declared


def test_links_resolve_and_the_brief_document_has_no_appendix(compiled: dict[str, Compilation]) -> None:
    for name, example in compiled.items():  # what the appendix leaves out is never linked to
        text = render_markdown(build_document(example))
        anchors = set(re.findall(r'<a id="([^"]+)"></a>', text))
        links = set(re.findall(r"\]\(#([^)]+)\)", text))
        assert links and links <= anchors, (name, links - anchors)
    c = compiled["100m_dau"]
    full = render_markdown(build_document(c))
    brief = render_markdown(build_document(c, brief=True))
    assert "## Decision" in brief and "## Assumptions" not in brief and "## Memory" not in brief
    assert "](#" not in brief  # nothing to link to
    assert brief.count("\n") < full.count("\n") / 5


@pytest.mark.parametrize("example", [e.stem for e in EXAMPLES])
def test_what_the_appendix_leaves_out_as_of_no_effect_changes_nothing(compiled: dict[str, Compilation], example: str) -> None:
    # each quantity `exact.moot` finds, set to another value, leaves every other quantity as it was
    # once everything it reaches is evaluated again (searches and their trials are never moot)
    c = compiled[example]
    assert c.lowered is not None
    el, values = c.lowered.elaborated, c.lowered.values
    moot = exact.moot(el, values, set())
    trials = ir.all_trial_nodes(el)
    for m in sorted(moot):
        changed = dict(values)
        old = values[m]
        changed[m] = (not old) if isinstance(old, bool) else old / 2 if old else Fraction(1, 2)  # within its domain
        reached = ir.downstream(el, m) - {m} - trials
        for n in el.order:
            if n in reached and not ir.is_search(el.nodes[n].expr):
                try:
                    changed[n] = exact.evaluate(el.nodes[n].expr, changed)
                except exact.EvalError:
                    assert n in moot, (m, n)  # only what is itself of no effect may fail to evaluate
                    continue
                if n not in moot:
                    assert changed[n] == values[n], (example, m, n)


def test_a_dense_model_derives_no_expert_tile_and_a_moe_model_does(compiled: dict[str, Compilation]) -> None:
    dense = render_markdown(build_document(compiled["100m_dau"]))
    moe = render_markdown(build_document(compiled["moe_qwen3"]))
    omitted = re.search(r"of no effect on any result, for this plan \(not derived here\): (.*`chat\.expert_tile`.*)", dense)
    assert omitted and "`chat.expert_fill`" in omitted.group(1) and "`chat.expert_rows`" in omitted.group(1)
    assert 'id="q-chat-expert-tile"' not in dense and 'id="q-chat-expert-fill"' not in dense
    assert 'id="q-ide-pool-expert-tile"' in moe and 'id="q-ide-pool-expert-fill"' in moe


def test_live_references_leave_out_a_zero_factor_s_partners_and_the_untaken_branch(
        compile_text: Callable[..., Compilation]) -> None:
    c = compile_text('''
kind box {
  input a: count
  input b: count
  input c: count
  derive product: count = a * b "b is hidden while a is zero"
  derive quotient: count = a / c "c is hidden while a is zero"
  derive chosen: count = if a > 0 then b else c "b is hidden while a is not above zero"
  derive both: count = product + quotient + chosen "reads all three"
}
box zero { a = 0; b = 2; c = 5 }
box one { a = 1; b = 2; c = 5 }
''')
    assert c.lowered is not None, c.diagnostics
    el, values = c.lowered.elaborated, c.lowered.values
    live = {n: exact.live_refs(el.nodes[n].expr, values) for n in el.order if not el.nodes[n].is_input}
    assert live["zero.product"] == {"zero.a"} and live["zero.quotient"] == {"zero.a"}
    assert live["zero.chosen"] == {"zero.a", "zero.c"}
    assert live["one.product"] == {"one.a", "one.b"} and live["one.quotient"] == {"one.a", "one.c"}
    assert live["one.chosen"] == {"one.a", "one.b"}
    # `zero.b` is read by `product` (under a zero factor) and `chosen` (its untaken branch) only
    assert exact.moot(el, values, set()) & {"zero.a", "zero.b", "zero.c", "one.a", "one.b", "one.c"} == {"zero.b"}
    assert "zero.b" not in exact.moot(el, values, {"zero.b"})  # what the plan states elsewhere stays


# ---- the language --------------------------------------------------------------------------

KIND = '''
kind server {
  input requests: requests/s
  input capacity: requests/s
  derive utilization: count = requests / capacity "share of the capacity in use"
  %s
}
server web { requests = 80 requests/s; capacity = 100 requests/s }
'''


def _stated(c: Compilation) -> list[str]:
    assert c.lowered is not None, c.diagnostics
    return [build_document(c).decision.findings[i].text for i in range(len(c.lowered.findings))]


def test_a_finding_is_stated_with_its_numbers_when_it_holds(compile_text: Callable[..., Compilation]) -> None:
    c = compile_text(KIND % '''finding utilization < 0.9 "Busy: {utilization:%} of {capacity}; \\"ok\\"."
  finding utilization >= 0.9 "Saturated."''')
    assert _stated(c) == ['Busy: 80 % of 100 requests/s; "ok".']


@pytest.mark.parametrize(("finding", "code", "where"), [
    ('finding true "At {nothing}."', "E0201", "nothing"),
    ('finding true "At {requests / capacity}."', "E0111", "{requests / capacity}"),
    ('finding true "At {requests:%}."', "E0303", "{requests:%}"),
    ('finding requests "At {requests}."', "E0303", "requests"),
])
def test_a_bad_finding_is_a_diagnostic_at_its_text(compile_text: Callable[..., Compilation], finding: str, code: str,
                                                     where: str) -> None:
    c = compile_text(KIND % finding)
    errors = [d for d in c.diagnostics if d.is_error]
    assert [d.code for d in errors] == [code]
    span = errors[0].primary.span
    assert span.text == where


# ---- levers ----------------------------------------------------------------------------------

LEVERS = '''
kind server {
  input requests: requests/s
  input capacity: requests/s
  derive utilization: count = requests / capacity "share of the capacity in use"
  derive servers: count = ceil(requests / capacity * 10) "servers"
  require capacity < 1000 requests/s "too fast"
  lever "double capacity" if utilization > 0.5 { capacity = 200 requests/s } "buy {capacity} more" gate "a load test at {utilization:%}"
  lever "halve capacity" if utilization > 0.95 { capacity = 50 requests/s }
  lever "same as the plan's" { capacity = 300 requests/s } "the kind's"
  lever "impossible" { capacity = 5000 requests/s }
}
server web { requests = 80 requests/s; capacity = 100 requests/s }
lever "triple capacity" { web.capacity = 300 requests/s } "the plan's"
summary web.servers, web.utilization
check web.utilization < 0.9 "under 90 %"
'''


def test_levers_are_priced_where_they_apply(compile_text: Callable[..., Compilation]) -> None:
    c = compile_text(LEVERS)
    assert c.ok, c.diagnostics
    doc = build_document(c)
    assert doc.lever_columns == ("web.servers", "web.utilization")
    rows = {v.label: v for v in doc.levers}
    # "halve capacity" does not apply (80 % < 95 %); the kind's 300 requests/s is the plan's lever
    assert set(rows) == {"triple capacity", "double capacity", "impossible"}
    assert rows["triple capacity"].cells == ("3 (−62.5 %)", "0.2667 (−66.7 %)")
    assert rows["double capacity"].cells[0] == "4 (−50 %)"
    assert "".join(t for t, _ in rows["double capacity"].takes) == "buy 100 requests/s more"
    assert "".join(t for t, _ in rows["double capacity"].gate) == "a load test at 80 %"
    assert rows["impossible"].effect is None and rows["impossible"].checks.startswith("not a valid plan: too fast")
    assert [v.label for v in doc.levers] == ["triple capacity", "double capacity", "impossible"]  # largest cut first
    assert not [d for d in c.diagnostics if d.is_error]  # an impossible lever is a row, not an error


@pytest.mark.parametrize(("lever", "code"), [
    ('lever "x" { nothing = 1 }', "E0203"),
    ('lever "x" if requests { capacity = 1 requests/s }', "E0303"),
    ('lever "x" { capacity = 1 requests/s } "at {nowhere}"', "E0201"),
])
def test_a_bad_lever_is_a_diagnostic(compile_text: Callable[..., Compilation], lever: str, code: str) -> None:
    c = compile_text(KIND % lever)
    assert [d.code for d in c.diagnostics if d.is_error] == [code]


def test_the_flagships_levers_match_the_plan_computed_with_each(compile_text: Callable[..., Compilation],
                                                                compiled: dict[str, Compilation]) -> None:
    doc = build_document(compiled["100m_dau"])
    rows = {v.label: v for v in doc.levers}
    assert doc.levers[0].label == "distilled 40-layer student"  # the largest cut of the fleet
    assert "FP8 KV cache" in rows and "speculative decoding, 4 draft tokens" in rows
    assert sum("INT4" in label for label in rows) == 1  # the plan's own INT4 lever stands for the stdlib's
    assert rows["INT4 weights (W4A16), by QAT"].effect > 0  # more devices: W4A16 prefills at the BF16 peak
    assert rows["static batching instead of continuous"].checks.startswith("not a valid plan: no value of `batch`")
    # and why, with both sides: one sequence's batch already misses the p99 TTFT (it waits for a whole batch)
    why = re.search(r"`ttft_tail <= ttft_slo` fails there: ([0-9.]+) s against 800 ms$", rows["static batching instead of continuous"].checks)
    assert why is not None and float(why.group(1)) > 0.8
    # the FP8 KV row is the plan compiled with FP8 KV, and a plan that has it is not offered it
    text = FLAGSHIP.read_text(encoding="utf-8").replace("  weights = fp8\n", "  weights = fp8\n  kv = fp8\n")
    c = compile_text(text)
    assert c.ok and c.lowered is not None
    devices = c.lowered.values["chat.devices"]
    assert rows["FP8 KV cache"].cells[0].startswith(f"{int(devices):,} devices")
    assert "FP8 KV cache" not in {v.label for v in build_document(c).levers}


def test_the_decision_names_the_lever_that_cuts_most(compiled: dict[str, Compilation]) -> None:
    doc = build_document(compiled["100m_dau"])
    passing = [v for v in doc.levers if v.effect is not None and v.checks == "all pass"]
    best = min(passing, key=lambda v: v.effect)
    sentence = doc.decision.deploy[-1].text
    assert sentence.startswith(f"Of the levers priced below, {best.label} cuts chat.devices the most, to {best.cells[0]}")


def test_a_blue_green_footprint_is_stated_only_for_a_fleet_of_one_deployment(compiled: dict[str, Compilation]) -> None:
    flagship = build_document(compiled["100m_dau"])
    c = compiled["100m_dau"]
    assert c.lowered is not None
    best = next(v for v in flagship.levers if v.effect is not None and v.checks == "all pass")
    both = round(float(c.lowered.values["chat.devices"]) * (2 + best.effect))
    assert f"runs both fleets during the switch, {both:,} devices at once" in flagship.decision.deploy[-1].text
    # two pools: a lever changes one of them, so the two fleets of the switch are not the total twice
    pools = build_document(compiled["mixed_precision_pools"])
    assert pools.decision.several and pools.decision.deploy
    assert "blue/green" not in " ".join(x.text for x in pools.decision.deploy)


def test_a_search_setting_shows_its_numbers_as_the_document_does() -> None:
    from fractions import Fraction

    from compiler.solve.literals import label_of, setting_label
    from compiler.source import SourceFile, Span
    from compiler.syntax import ast

    def number(written: str) -> ast.Number:
        digits, *units = written.split()
        span = Span(SourceFile("t.plan", written), 0, len(written))
        unit_span = Span(span.file, written.index(units[0]), len(written)) if units else None
        return ast.Number(span, digits, Fraction(digits.replace("_", "")), tuple(units), unit_span)

    assert setting_label(number("8192  tokens")) == "8,192 tokens"
    assert setting_label(number("8_192 tokens")) == "8,192 tokens"
    assert setting_label(number("16384 tokens")) == "16,384 tokens"  # no digit rounded away
    assert setting_label(number("0.75")) == "0.75"
    assert setting_label(number("2e9 B")) == "2,000,000,000 B"
    # a table row joins its values with ", ": there the number stays as written
    assert label_of(number("8192 tokens")) == "8192 tokens"
