"""Reductions over an enumeration (`sum(... for h in e)`), map defaults, and the autoscaled fleet
they let the stdlib compute from a 24-hour traffic profile (docs/physics.md §12)."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import pytest
from planc.pipeline import Compilation, compile_plan

from .conftest import REPO

SITE = """
enum hour {{ h00; h01; h02 }}
kind site {{
  input load: map[hour] count = 1 "load in each hour"
  input base: W = 10 W
  {derive}
}}
site a {{ load[h01] = 3 }}
site b {{ }}
"""


def test_sum_max_and_min_over_an_enumeration_with_a_map_default(compile_text: Callable[[str], Compilation]) -> None:
    derives = ("derive total: W = sum(base * load[h] for h in hour)\n"
               "  derive peak: count = max(load[h] for h in hour)\n"
               "  derive trough: count = min(load[h] for h in hour)")
    compilation = compile_text(SITE.format(derive=derives))
    assert compilation.ok, compilation.diagnostics
    values = compilation.lowered.values
    assert values["a.total"] == Fraction(50)  # 10 W × (1 + 3 + 1): the unset entries take the default
    assert values["b.total"] == Fraction(30)
    assert (values["a.peak"], values["a.trough"]) == (3, 1)
    # each term reads its own entry: the formula names load[h00], load[h01], load[h02]
    node = compilation.lowered.elaborated.nodes["a.total"]
    assert [r.text for r in _refs(node.expr) if "load" in r.text] == ["load[h00]", "load[h01]", "load[h02]"]
    # the entries the instance does not set read one quantity, the default: one assumption, not one per key
    nodes = compilation.lowered.elaborated.nodes
    assert "a.load[h01]" in nodes and "a.load[h00]" not in nodes and "a.load[h02]" not in nodes
    assert nodes["a.load"].overridden is False and compilation.lowered.values["a.load"] == 1
    assert [r.node for r in _refs(node.expr) if "load" in r.text] == ["a.load", "a.load[h01]", "a.load"]


def test_a_map_set_as_a_whole_stands_for_the_entries_the_instance_does_not_set(
        compile_text: Callable[[str], Compilation]) -> None:
    # `load = 2` in an instance was dropped without a word; it is the instance's own default now
    text = SITE.format(derive="derive total: W = sum(base * load[h] for h in hour)").replace(
        "site b { }", "site b { load = 2 }").replace("site a { load[h01] = 3 }", "site a { load = 2; load[h01] = 3 }")
    compilation = compile_text(text)
    assert compilation.ok and compilation.lowered is not None, compilation.diagnostics
    values, nodes = compilation.lowered.values, compilation.lowered.elaborated.nodes
    assert values["a.total"] == Fraction(70)  # 10 W × (2 + 3 + 2): the entry it sets, the whole map's value elsewhere
    assert values["b.total"] == Fraction(60)
    assert nodes["b.load"].overridden is True and not nodes["b.load"].span.file.is_stdlib
    bad = compile_text(SITE.format(derive="derive peak: count = max(load[h] for h in hour)").replace(
        "site b { }", "site b { load = 2 s }"))
    assert not bad.ok and any(d.code == "E0302" for d in bad.diagnostics)


def test_a_derived_instance_that_sets_a_map_as_a_whole_replaces_its_bases_entries(
        compile_text: Callable[[str], Compilation]) -> None:
    # the nearest instance that sets an entry or the whole map decides: `c = a { load = 5 }` is 5 in
    # every hour, a's entry for h01 included (it used to keep a's 3 there without a word); an entry
    # of c's own still stands before its whole value
    text = SITE.format(derive="derive total: W = sum(base * load[h] for h in hour)") + (
        "site c = a { load = 5 }\nsite d = a { load = 5; load[h02] = 7 }\nsite e = a { base = 20 W }\n")
    compilation = compile_text(text)
    assert compilation.ok and compilation.lowered is not None, compilation.diagnostics
    values = compilation.lowered.values
    assert values["c.total"] == Fraction(150)  # 10 W × (5 + 5 + 5)
    assert values["d.total"] == Fraction(170)  # 10 W × (5 + 5 + 7)
    assert values["e.total"] == Fraction(100)  # 20 W × (1 + 3 + 1): a's entry and the kind's default, inherited
    # the engines' maps alike: a derived engine's whole value is its call time for every cache format
    engine = compile_text("""
import "models/llama-3.1-8b"
import "hardware/h200"
engine mine = vllm { attention_latency = 5 us }
traffic t { daily_active_users = 1 M users; requests_per_user = 10 requests/user/day; peak_factor = 2
  prompt_tokens = 1000 tokens; output_tokens = 250 tokens }
deployment d { model = llama_3_1_8b; hardware = h200; traffic = t; batch = 64; engine = mine }
""", name="engine.plan")
    assert engine.ok and engine.lowered is not None, engine.diagnostics
    assert engine.lowered.values["d.attention_call_latency"] == Fraction(5, 10**6)


def _refs(expr):  # type: ignore[no-untyped-def]
    from planc.semantics import ir

    if isinstance(expr, ir.Ref):
        return [expr]
    return [r for a in getattr(expr, "args", ()) for r in _refs(a)]


@pytest.mark.parametrize(("derive", "code", "text"), [
    ("derive x: count = mean(load[h] for h in hour)", "E0304", "mean"),
    ("derive x: count = sum(load[h] for h in site)", "E0303", "site"),
    ("derive x: count = sum(load[h] > 1 for h in hour)", "E0303", "load[h] > 1"),
    ("derive x: count = sum(load[h] for h in hours)", "E0303", "hours"),
])
def test_a_bad_reduction_is_an_error_at_its_place(compile_text: Callable[[str], Compilation], derive: str,
                                                  code: str, text: str) -> None:
    compilation = compile_text(SITE.format(derive=derive))
    assert not compilation.ok
    (found,) = [d for d in compilation.diagnostics if d.is_error]
    assert (found.code, found.primary.span.text) == (code, text)


def test_a_long_reduction_is_shown_elided_and_a_written_sum_whole() -> None:
    from planc.report import latex
    from planc.semantics import ir
    from planc.semantics.units import DIMENSIONLESS
    from planc.source import SourceFile, Span

    file = SourceFile("x.plan", "load[h] + a + b + c + d + e + f + g + h + i")
    one = Span(file, 0, 7)
    terms = [ir.Lit(Fraction(k), DIMENSIONLESS, one, str(k)) for k in range(24)]
    reduced = terms[0]
    for t in terms[1:]:
        reduced = ir.Op("+", (reduced, t), DIMENSIONLESS, one)
    shown = latex.to_latex(reduced, lambda leaf: leaf.text)
    assert shown == "0 + 1 + \\cdots + 23"
    written = [ir.Lit(Fraction(k), DIMENSIONLESS, Span(file, 2 * k, 2 * k + 1), str(k)) for k in range(10)]
    total = written[0]
    for t in written[1:]:
        total = ir.Op("+", (total, t), DIMENSIONLESS, Span(file, 0, 20))
    assert latex.to_latex(total, lambda leaf: leaf.text) == " + ".join(str(k) for k in range(10))


@pytest.fixture(scope="module")
def ide() -> Compilation:
    compilation = compile_plan(REPO / "examples" / "moe_qwen3.plan", shown="examples/moe_qwen3.plan")
    assert compilation.ok
    return compilation


def test_the_autoscaled_fleet_follows_the_hourly_profile(ide: Compilation) -> None:
    """Recomputed here from the profile the example states: each hour the peak's serving replicas
    times that hour's share of the peak, rounded up, at least one (one region), the spares all day."""
    v = {k: float(x) for k, x in ide.lowered.values.items() if not isinstance(x, bool)}
    profile = [v.get(f"ide.hourly_load[h{h:02d}]", v["ide.hourly_load"]) for h in range(24)]  # unset: the default
    assert profile[3] == 0.1 and profile[12] == 1  # set by the plan, and the default
    serving = v["ide_pool.failover_replicas"]
    hours = sum(max(1, math.ceil(serving * f / max(profile))) for f in profile)
    assert v["ide_pool.replica_hours_per_day"] == pytest.approx(hours * 3600)
    replicas = hours / 24 + v["ide_pool.spare_replicas"]
    assert v["ide_pool.autoscaled_replicas"] == pytest.approx(replicas)
    assert v["ide_pool.autoscaled_devices"] == pytest.approx(replicas * v["ide_pool.replica_devices"])
    assert v["ide_pool.autoscaling_saving"] == pytest.approx(1 - replicas / v["ide_pool.total_replicas"])
    assert 0.4 < v["ide_pool.autoscaling_saving"] < 0.6  # a working day in one region: about half
    assert v["ide.profile_peak_factor"] == pytest.approx(24 / sum(profile))
    stated = [s for s in ide.lowered.findings if "Autoscaling" in "".join(p for p in s.finding.parts if isinstance(p, str))]
    assert len(stated) == 1


def test_a_flat_profile_saves_nothing_and_says_nothing() -> None:
    flagship = compile_plan(REPO / "examples" / "100m_dau.plan")
    v = flagship.lowered.values
    assert v["chat.autoscaled_replicas"] == v["chat.total_replicas"]
    assert v["chat.autoscaling_saving"] == 0
    assert not [s for s in flagship.lowered.findings
                if any(w in "".join(p for p in s.finding.parts if isinstance(p, str)) for w in ("Autoscaling", "Buying it"))]


def test_a_profile_peakier_than_the_peak_factor_is_advised(tmp_path) -> None:  # type: ignore[no-untyped-def]
    text = (REPO / "examples" / "moe_qwen3.plan").read_text(encoding="utf-8")
    text = text.replace("peak_factor = 2.5", "peak_factor = 1.5")  # the profile's own is 1.93
    path = tmp_path / "peaky.plan"
    path.write_text(text, encoding="utf-8")
    compilation = compile_plan(path)
    advice = [d for d in compilation.diagnostics if d.code == "W0407" and "hourly profile" in d.message]
    assert len(advice) == 1


def test_the_cost_mix_reserves_the_always_on_replicas_and_rents_the_rest(ide: Compilation, tmp_path) -> None:  # type: ignore[no-untyped-def]
    v = {k: float(x) for k, x in ide.lowered.values.items() if not isinstance(x, bool)}
    profile = [v.get(f"ide.hourly_load[h{h:02d}]", v["ide.hourly_load"]) for h in range(24)]
    serving = v["ide_pool.failover_replicas"]
    quietest = min(max(1, math.ceil(serving * f / max(profile))) for f in profile)
    reserved = quietest + v["ide_pool.spare_replicas"]
    assert v["ide_pool.reserved_replicas"] == reserved
    hourly = v["ide_pool.autoscaled_replicas"] - reserved
    price_per_replica = v["ide_pool.replica_devices"] * v["h100_sxm.price"]  # USD/s
    expected = (reserved * (1 - 0.4) + hourly) * price_per_replica
    assert v["ide_pool.mixed_cost_per_month"] == pytest.approx(expected)
    assert v["ide_pool.mixed_cost_per_month"] < v["ide_pool.autoscaled_cost_per_month"] < v["ide_pool.cost_per_month"]

    # on spot, a share of the hourly replicas costs less but is held with headroom for a reclaim
    text = (REPO / "examples" / "moe_qwen3.plan").read_text(encoding="utf-8")
    path = tmp_path / "spot.plan"
    path.write_text(text.replace('  batch = 24 source', '  spot_share = 0.5\n  batch = 24 source'), encoding="utf-8")
    spot = compile_plan(path)
    assert spot.ok
    s = {k: float(x) for k, x in spot.lowered.values.items() if not isinstance(x, bool)}
    expected = (reserved * 0.6 + hourly * 0.5 + hourly * 0.5 / 0.8 * 0.4) * price_per_replica
    assert s["ide_pool.mixed_cost_per_month"] == pytest.approx(expected)
    sentences = ["".join(p for p in st.finding.parts if isinstance(p, str)) for st in spot.lowered.findings]
    assert sum("on spot at" in t for t in sentences) == 1 and not any("spot capacity would take" in t for t in sentences)
