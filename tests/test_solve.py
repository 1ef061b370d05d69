"""Questions: answers that satisfy their constraints, closed forms that agree with the numeric
path, and distinct diagnostics for infeasible and under-determined questions."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from planc.pipeline import Compilation
from planc.report.view import build_document
from planc.solve import AskAnswer, TableAnswer

from .flagship import FLAGSHIP as FIGURES

BASE = """
import "models/llama-3.1-70b"
import "hardware/h100-sxm"
traffic t {{
  daily_active_users = 10 M users
  requests_per_user = 10 requests/user/day
  peak_factor = 2
  prompt_tokens = 1000 tokens
  output_tokens = 250 tokens
}}
accelerator gpu = h100_sxm {{ marketed_memory = {hbm} GiB; memory = {hbm} GiB }}
deployment d {{
  model = llama_3_1_70b
  hardware = gpu
  traffic = t
  weights = fp8
  tensor_parallel = 4
  batch = 32
  context = 8192 tokens
}}
{questions}
"""


def plan(questions: str, hbm: int = 79) -> str:
    return BASE.format(hbm=hbm, questions=questions)


def asks(c: Compilation) -> list[AskAnswer]:
    assert c.ok, [d.message for d in c.diagnostics]
    return [a for a in c.answers if isinstance(a, AskAnswer)]


def test_max_batch_round_trip(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(plan('ask "b": maximize d.batch subject to d.memory_per_device <= d.usable_memory'))
    (a,) = asks(c)
    assert a.integer and a.value is not None and a.binding is not None
    # the answer satisfies the constraint; the next whole batch violates it (checked exactly)
    budget = Fraction(c.lowered.values["d.kv_budget"])  # type: ignore[union-attr]
    per_seq = Fraction(c.lowered.values["d.kv_bytes_per_sequence"])  # type: ignore[union-attr]
    assert a.value * per_seq <= budget < (a.value + 1) * per_seq
    # closed form on the active piece agrees with the numeric answer
    assert a.closed_value is not None and int(a.closed_value) == a.value
    assert a.steps and "\\mathrm{batch}" in a.steps[-1][1]


def test_max_context_respects_block_size(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(plan('ask "ctx": maximize d.context subject to d.memory_per_device <= 80 GB given d.batch = 1'))
    (a,) = asks(c)
    assert a.value is not None and a.value % 16 == 0  # whole KV blocks
    assert a.closed_value is not None and 0 <= a.closed_value - float(a.value) < 16


def test_binding_constraint_is_the_smallest_limit(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(plan('ask "b": maximize d.batch subject to d.memory_per_device <= d.usable_memory, '
                          "d.tpot_worst <= 25 ms"))
    (a,) = asks(c)
    limits = {" ".join(lim.constraint.span.text.split()): lim.value for lim in a.limits}
    assert a.binding is not None and a.value == min(v for v in limits.values() if v is not None)


def test_infeasible_is_a_warning_and_exit_1(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(plan('ask "b": maximize d.batch subject to d.memory_per_device <= 10 GB'))
    (a,) = asks(c)
    assert a.infeasible
    codes = {d.code for d in c.diagnostics}
    assert "W0505" in codes and c.exit_code == 1


def test_underdetermined_is_an_error(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(plan('ask "b": maximize d.batch subject to t.peak_qps <= 1000 requests/s'))
    assert not c.ok and "E0504" in {d.code for d in c.diagnostics} and c.exit_code == 2


def test_equation_matches_closed_form(compile_text: Callable[[str], Compilation]) -> None:
    # static batching: no prefill shares the iterations, so the batch may grow until the GEMMs turn compute-bound
    c = compile_text(plan('ask "x": solve d.decode_intensity = d.ridge_point for d.batch given d.weights = bf16, d.static_batching = true'))
    (a,) = asks(c)
    assert a.value is not None and a.closed_value is not None
    assert float(a.value) == pytest.approx(a.closed_value, rel=1e-6)


def test_scenario_and_compare_tables(compile_text: Callable[[str], Compilation]) -> None:
    text = plan('scenario "10x" { t.daily_active_users = 100 M users }\n'
                "compare d over weights in [bf16, fp8]\nsummary d.devices")
    c = compile_text(text)
    tables = [a for a in c.answers if isinstance(a, TableAnswer)]
    scenario, compare = tables
    base_devices, big_devices = scenario.rows[0][1][0], scenario.rows[1][1][0]
    assert big_devices > 9 * base_devices
    assert [r[0] for r in compare.rows] == ["bf16", "fp8"]


def test_search_minimises_subject_to_constraints(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(plan("search d over tensor_parallel in [2, 4, 8], batch in 8 .. 256 log2 "
                          "minimize cost_per_month subject to d.memory_headroom >= 0 B, d.tpot_worst <= 30 ms"))
    (table,) = [a for a in c.answers if isinstance(a, TableAnswer)]
    assert table.evaluated == 3 * 6
    feasible = [r for r in table.rows if r[1][1] == ""]
    assert feasible and feasible[0][1][0] == min(r[1][0] for r in feasible)
    assert table.axes == ["tensor_parallel", "batch"]


def test_a_threshold_crossed_on_one_side_has_no_elasticity(compile_text: Callable[[str], Compilation]) -> None:
    """A 1 % nudge of `x` crosses the threshold up and not down: a step, not an elasticity (the
    sides differ by more than 2/3 of the larger; whole-number answers that move one step one way
    and two the other stay, as the flagship's batch does for its TPOT SLO)."""
    c = compile_text('kind box "toy" {\n  input x: count = 10.05 "near a threshold"\n  input z: count = 3 "a scale"\n'
                     '  derive y: count = (if x < 10 then 2 else 1) * z "a step in x"\n}\nbox b { }\nsummary b.y\n')
    (y,) = [s for s in c.sensitivities if s.target == "b.y"]
    assert dict(y.entries) == pytest.approx({"b.z": 1.0})


def test_a_large_search_says_so_as_it_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 17: progress for a step that can take over a second. A search of at least
    PROGRESS_CONFIGURATIONS configurations tells the compile's `progress` how many, counting the
    static axes; a smaller one stays quiet. (The threshold is lowered here so that the test's
    search stays small.)"""
    from planc.pipeline import compile_plan
    from planc.solve import search

    text = plan("search d over weights in [bf16, fp8], tensor_parallel in [2, 4, 8], batch in 8 .. 256 log2 "
                "minimize cost_per_month subject to d.tpot_worst <= 30 ms")
    path = tmp_path / "p.plan"
    path.write_text(text)
    for threshold, said in ((36, ["searching 36 configurations"]), (37, [])):
        monkeypatch.setattr(search, "PROGRESS_CONFIGURATIONS", threshold)
        heard: list[str] = []
        compile_plan(path, progress=heard.append)
        assert heard == said


def test_a_pareto_axis_that_is_the_objective_is_not_repeated(compile_text: Callable[[str], Compilation]) -> None:
    # pareto(tpot_worst, cost_per_month) with cost as the objective: one cost column, and the
    # plotted axes are tpot_worst (its own column) then the objective's column, in that order
    c = compile_text(plan("search d over tensor_parallel in [2, 4, 8], batch in 8 .. 256 log2 "
                          "minimize cost_per_month subject to d.tpot_worst <= 30 ms -> pareto(tpot_worst, cost_per_month)"))
    (table,) = [a for a in c.answers if isinstance(a, TableAnswer)]
    assert [col[0] for col in table.columns] == ["cost_per_month", "eliminated by", "tpot_worst"]
    assert table.plot_columns == (2, 0)
    assert table.pareto and all(len(values) == 3 for _, values in table.rows)


@settings(max_examples=8, deadline=None)
@given(st.integers(60, 180))
def test_more_memory_never_lowers_max_batch(hbm: int) -> None:
    import tempfile
    from pathlib import Path

    from planc.pipeline import compile_plan

    q = 'ask "b": maximize d.batch subject to d.memory_per_device <= d.usable_memory'
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for h in (hbm, hbm + 20):
            path = Path(tmp) / f"p{h}.plan"
            path.write_text(plan(q, h))
            c = compile_plan(path)
            a = [x for x in c.answers if isinstance(x, AskAnswer)]
            results.append(a[0].value if a and a[0].value is not None else 0)
    assert results[0] > 0 and results[1] >= results[0]


def test_non_monotone_constraint_is_a_diagnostic(compile_text: Callable[[str], Compilation]) -> None:
    text = """
kind k {
  input x: count
  derive wave: count = if x < 10 then 0 else (if x < 20 then 5 else 0)
}
k a { x = 1 }
ask "x": maximize a.x subject to a.wave <= 1
"""
    c = compile_text(text)
    assert not c.ok and "E0503" in {d.code for d in c.diagnostics}


def test_numeric_scenario_still_checks_requirements(compile_text: Callable[[str], Compilation]) -> None:
    # a numeric override takes the fast path (no re-elaboration); the plan's requirements still hold it
    c = compile_text(plan('scenario "no users" { t.daily_active_users = 0 users }\nsummary d.devices'))
    assert "E0503" in {d.code for d in c.diagnostics}
    assert any("there must be users" in d.message for d in c.diagnostics)


def test_a_piece_not_rational_in_the_unknown_is_told_from_the_ir_without_sympy(
        compile_text: Callable[[str], Compilation], monkeypatch: pytest.MonkeyPatch) -> None:
    # exp of the unknown: no closed form, and not one sympy expression built to find that out;
    # exp(log x) and 1^x, which sympy makes rational again, and exp of a term under a zero factor
    # keep theirs
    import planc.algebra as algebra

    built: list[str] = []
    real = algebra.sympy_op
    monkeypatch.setattr(algebra, "sympy_op", lambda op, args: built.append(op) or real(op, args))
    kinds = """
kind k {
  input x: count
  input zero: count = 0
  derive grows: count = exp(x / 50)
  derive back: count = 3 * exp(log(x) + 1)
  derive one: count = (zero + 1) ^ x * 2 * x
  derive muted: count = exp(zero * x) * x
}
k a { x = 1 }
"""
    (grows,) = asks(compile_text(kinds + 'ask "exp": maximize a.x subject to a.grows <= 100\n'))
    assert grows.value == 230 and grows.closed_value is None  # 50 ln 100 = 230.3
    assert built == []
    back, one, muted = asks(compile_text(kinds + """
ask "exp log": maximize a.x subject to a.back <= 100
ask "one to a power": maximize a.x subject to a.one <= 100
ask "under a zero factor": maximize a.x subject to a.muted <= 100
"""))
    assert back.value == 12 and back.closed_value == pytest.approx(100 / (3 * math.e))
    assert one.value == 50 and one.closed_value == 50
    assert muted.value == 100 and muted.closed_value == 100
    assert "exp" in built


def test_given_for_a_derived_quantity_replaces_its_formula(compile_text: Callable[[str], Compilation]) -> None:
    # y is derived from the unknown x; the given replaces y's formula, so while the solver moves x,
    # y stays 10: z = 10 + x <= 100 gives x = 90 (recomputing y = 2x would give 33)
    text = """
kind k {
  input x: count
  derive y: count = 2 * x
  derive z: count = y + x
}
k a { x = 1 }
ask "x": maximize a.x subject to a.z <= 100 given a.y = 10
"""
    (a,) = asks(compile_text(text))
    assert a.value == 90 and a.closed_value == 90


LEAN = """
enum size {{ small; large }}
kind k {{
  input x: count
  input s: size = small
  input b: count = 2
  derive y: count = (if s == small then 2 else 3) * x * b
  input far: count = largest(far, 1, 1000, load <= 600) "a search the question does not read"
  derive load: count = far * y "what the search holds down"
}}
k a {{ x = 1 }}
check a.far >= 1 "a check the question does not read"
summary a.far
ask "x": maximize a.x subject to a.y <= 120 given {given}
"""


@pytest.mark.parametrize(("given", "answer"), [("a.b = 4", 15), ("a.s = large", 20)])
def test_an_asks_variant_evaluates_only_what_the_ask_reads(
        compile_text: Callable[[str], Compilation], evaluated_nodes: list[str], given: str, answer: int) -> None:
    """An ask's `given` builds a variant of which the ask reads its constraints and its unknown:
    that variant evaluates only those and the plan's requirements, not the searches, checks and
    summary of the plan (`SolverBase.variant`'s `reads`), whether the given is a number (the
    plan's graph with a literal) or an enum member (a lean elaboration); the answer is the one
    the whole variant gives."""
    evaluated = evaluated_nodes
    c = compile_text(LEAN.format(given=given))
    assert c.ok, [d.message for d in c.diagnostics]
    (a,) = asks(c)
    assert a.value == answer
    assert evaluated.count("a.far") == 1  # the plan's own, not the variant's
    assert evaluated.count("a.y") == 2  # the plan's, and the variant's


def test_a_part_of_the_variant_the_ask_does_not_read_cannot_fail_it(compile_text: Callable[[str], Compilation]) -> None:
    """`given a.b = 4` leaves a quantity the ask does not read with no value (a division by
    zero): the ask's lean variant never evaluates it, so the ask answers; a requirement of the
    plan that the given breaks still makes the variant invalid (E0503)."""
    text = LEAN.format(given="a.b = 4").replace(
        '  derive load:', '  derive spare: count = 10 / (b - 4) "undefined at b = 4"\n  derive load:')
    c = compile_text(text)
    assert c.ok, [d.message for d in c.diagnostics]
    (a,) = asks(c)
    assert a.value == 15
    broken = compile_text(text.replace('  input b: count = 2\n', '  input b: count = 2\n  require b <= 3 "b is at most 3"\n'))
    assert [d.code for d in broken.diagnostics if d.is_error] == ["E0503"]


def test_an_asks_own_problem_is_reported_at_its_expression_with_a_given(compile_text: Callable[[str], Compilation]) -> None:
    """A lean variant that cannot elaborate the ask's expression hands it to the full variant, so
    the ask reports its own problem as it did before (a unit that does not match, at its line)."""
    c = compile_text(LEAN.format(given="a.s = large").replace("a.y <= 120", "a.y <= 120 s"))
    assert not c.ok
    (d,) = [d for d in c.diagnostics if d.is_error]
    assert d.code == "E0302" and d.primary is not None and d.primary.span.text == "<="
    assert [label.span.text for label in d.secondary] == ["a.y", "120 s"]


def test_override_to_the_current_value_is_the_plan_itself(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(plan("compare d over weights in [fp8, bf16]\nscenario \"same\" { t.peak_factor = 2 }\n"
                          "summary d.devices, d.memory_per_device"))
    compare, scenario = [a for a in c.answers if isinstance(a, TableAnswer)]
    assert compare.rows[0][1] == [c.lowered.summary[0], c.lowered.summary[1]]  # type: ignore[union-attr]
    assert compare.rows[1][1][1] > compare.rows[0][1][1]  # bf16 weights take more memory than fp8
    assert scenario.rows[0][1] == scenario.rows[1][1]


def test_minimize_finds_where_the_constraints_start_to_hold(compile_text: Callable[[str], Compilation]) -> None:
    # y = 100/x <= 7 fails for small x: the fewest x is the first whole number where it holds (it used
    # to answer the smallest value tried, x = 1, where the constraint is violated)
    text = """
kind k {
  input x: count
  derive y: count = 100 / x
  derive z: count = x
}
k a { x = 1 }
ask "x": minimize a.x subject to a.y <= 7, a.z <= 50
"""
    (a,) = asks(compile_text(text))
    assert a.value == 15 and a.binding is not None and " ".join(a.binding.constraint.span.text.split()) == "a.y <= 7"
    assert a.lower_limits and a.closed_value == pytest.approx(100 / 7)


def test_minimize_with_constraints_that_exclude_each_other_is_infeasible(
        compile_text: Callable[[str], Compilation]) -> None:
    text = """
kind k {
  input x: count
  derive y: count = 100 / x
}
k a { x = 1 }
ask "x": minimize a.x subject to a.y <= 7, a.x <= 10
"""
    c = compile_text(text)
    assert "W0505" in {d.code for d in c.diagnostics} and c.exit_code == 1


def test_highest_utilisation_for_the_p99_ttft(compile_text: Callable[[str], Compilation]) -> None:
    # the queueing question: the busiest each replica may run (so the fewest replicas) while the p99
    # TTFT in a burst stays within its budget, under the plan's bursty arrivals (M/G/c, Erlang C)
    # each replica queues its prompts for its own prefill: the busier the replicas run at the peak, the
    # longer the wait (M/G/1 on the prompts' cost, Kingman and Pollaczek–Khinchine)
    c = compile_text(plan('ask "q": maximize d.utilization_target subject to d.ttft_at_peak <= 100 ms'))
    (a,) = asks(c)
    assert a.value is not None and 0 < a.value < 1 and a.binding is not None
    assert " ".join(a.binding.constraint.span.text.split()) == "d.ttft_at_peak <= 100 ms"
    left, right = a.binding.at_limit  # type: ignore[misc]
    assert left <= right == Fraction(1, 10)
    assert a.binding.beyond is not None and a.binding.beyond > a.value  # just past it the budget breaks


def test_a_requirement_of_the_plan_can_bind(compile_text: Callable[[str], Compilation]) -> None:
    # max context at batch 1: memory would allow far more than the model was trained for, and the
    # deployment kind requires `context <= model.max_context`; the requirement binds
    (ctx,) = asks(compile_text(plan('ask "c": maximize d.context subject to d.memory_per_device <= 80 GB '
                                    "given d.batch = 1")))
    assert ctx.value == 131072 and ctx.binding is not None and "max_context" in ctx.binding.constraint.span.text
    memory = next(lim for lim in ctx.limits if "memory_per_device" in lim.constraint.span.text)
    assert memory.value is not None and memory.value > 4 * 131072
    assert ctx.closed_value == 131072  # the closed form of the binding requirement
    # a whole number prints as one, in the steps (not `131072.0`) and in the method (not `131,100`)
    assert ctx.steps[-1][1] == "\\mathrm{context} = 131072"
    compiled = compile_text(plan('ask "c": maximize d.context subject to d.memory_per_device <= 80 GB given d.batch = 1'))
    (view,) = [q for q in build_document(compiled).questions if q.keyword == "ask"]
    assert "closed form 131,072 on the active piece" in view.method


def test_the_prefill_must_keep_up(compile_text: Callable[[str], Compilation]) -> None:
    # a token budget with no room for the prompts that arrive: continuous batching cannot keep up
    c = compile_text(plan("").replace("batch = 32", "batch = 32\n  prefill_chunk = 40 tokens"))
    assert not c.ok
    assert any("queue grows without bound" in d.message for d in c.diagnostics)


def test_solve_a_derived_quantity_shows_what_decides_it(compile_text: Callable[[str], Compilation]) -> None:
    from planc.solve import SolveAnswer

    c = compile_text(plan("solve devices for d"))
    (a,) = [x for x in c.answers if isinstance(x, SolveAnswer)]
    assert a.value == c.lowered.values["d.devices"]  # type: ignore[union-attr]
    replicas = next(ch for ch in a.choices if ch.node == "d.replicas")
    # replicas = max(throughput_replicas, concurrency_replicas): the one in effect comes first
    assert replicas.op == "max" and replicas.values[0] >= replicas.values[1]
    assert replicas.values[0] == c.lowered.values["d.replicas"]  # type: ignore[union-attr]


def test_solve_an_input_gives_the_range_every_check_allows(compile_text: Callable[[str], Compilation]) -> None:
    from planc.solve import SolveAnswer

    c = compile_text(plan("check d.memory_per_device <= d.usable_memory\ncheck d.tpot_worst <= 40 ms\n"
                          "solve batch for d\n"
                          'ask "b": maximize d.batch subject to d.memory_per_device <= d.usable_memory, d.tpot_worst <= 40 ms'))
    solved = next(x for x in c.answers if isinstance(x, SolveAnswer))
    (ask,) = asks(c)
    assert solved.low is not None and solved.high is not None
    assert solved.low.value == 1 and solved.high.value == ask.value  # the same boundary as the explicit ask


def test_solve_needs_an_instance_and_a_check(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(plan("solve batch for nothing"))
    assert "E0303" in {d.code for d in c.diagnostics}
    c = compile_text(plan("solve batch for d"))  # no check depends on the batch
    assert "E0504" in {d.code for d in c.diagnostics}


# ---- sensitivity --------------------------------------------------------------------------

SENSITIVITY = """
kind part {
  input x: count
  input k: count = 2
  input n: count = 4
  require floor(8 / n) * n == 8 "n divides 8"
  derive y: count = k * x ^ 2 + 8 / n
}
part p { x = 3 }
summary p.y
"""


def test_elasticities_are_log_derivatives_where_the_plan_stays_valid(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(SENSITIVITY)
    assert c.ok, c.diagnostics
    [s] = c.sensitivities
    e = dict(s.entries)
    # y = k·x² + 8/n = 20 at x = 3: ∂ln y/∂ln x = 2·k·x²/y = 1.8, ∂ln y/∂ln k = k·x²/y = 0.9
    # (central differences over ±1 % in ln: exact to about 1e-5)
    assert e["p.x"] == pytest.approx(1.8, rel=1e-4) and e["p.k"] == pytest.approx(0.9, rel=1e-4)
    # n = 4 nudged by 1 % no longer divides 8: a design choice, not a dial; it has no elasticity
    assert "p.n" not in e


def test_flagship_sensitivities_name_assumptions_not_parallelism(compile_text: Callable[[str], Compilation]) -> None:
    from planc.pipeline import compile_plan

    from .conftest import REPO

    c = compile_plan(REPO / "examples" / "100m_dau.plan")
    devices = dict(next(s for s in c.sensitivities if s.target == "chat.devices").entries)
    assert devices["chat_traffic.daily_active_users"] == pytest.approx(1, abs=0.02)
    assert devices["chat.utilization_target"] == pytest.approx(-1, abs=0.02)
    assert "chat.tensor_parallel" not in devices and "chat.pipeline_parallel" not in devices
    # a dtype's bytes per element is a definition, not an assumption: no elasticity, though
    # the memory per device depends on it
    memory = dict(next(s for s in c.sensitivities if s.target == "chat.working_memory_per_device").entries)
    # the running batch is a search now: how long the sequences run (the traffic's output) is what
    # moves the memory the running batch holds
    assert "chat_traffic.output_tokens" in memory and not any(n.startswith("dtype.") for n in memory)
    # nor is a `spec` field: the model's architecture, the accelerator's datasheet. The price of a
    # device-hour is an assumption of the same accelerator, and it is listed.
    everything = {n for s in c.sensitivities for n, _ in s.entries}
    assert not any(n.startswith("llama_3_1_70b.") for n in everything)
    # (the accelerator's measured inputs are: its kernel latency moves the TPOT at the peak)
    assert "h100_sxm.memory_bandwidth" not in everything and "h100_sxm.kernel_latency" in everything
    cost = dict(next(s for s in c.sensitivities if s.target == "chat.cost_per_month").entries)
    assert cost["h100_sxm.price"] == pytest.approx(1, abs=1e-6)


def test_a_small_fleet_still_shows_what_pushes_it() -> None:
    """17 devices are a ceiling: 1 % more traffic does not reach the 18th, yet the count is as
    proportional to the traffic as a large fleet's. Sensitivities relax the ceilings."""
    from planc.pipeline import compile_plan

    from .conftest import REPO

    c = compile_plan(REPO / "examples" / "recommender.plan")
    assert c.lowered is not None and c.lowered.values["rank.devices"] == 17
    devices = next(s for s in c.sensitivities if s.target == "rank.devices").entries
    top = dict(devices[:4])
    assert top == pytest.approx({"feed.daily_active_users": 1, "feed.peak_factor": 1,
                                 "feed.requests_per_user": 1, "rank.utilization_target": -1}, abs=1e-6)
    assert [n for n, _ in devices[:3]] == sorted(n for n, _ in devices[:3])  # ties in name order
    # a cost per request does not grow with the number of users, only with the peak over the mean
    cost = dict(next(s for s in c.sensitivities if s.target == "rank.cost_per_million_requests").entries)
    assert "feed.daily_active_users" not in cost and cost["feed.peak_factor"] == pytest.approx(1, abs=1e-6)


def test_a_scenario_names_what_starts_to_bind(compile_text: Callable[[str], Compilation]) -> None:
    from .conftest import REPO

    flagship = (REPO / "examples" / "100m_dau.plan").read_text(encoding="utf-8")
    c = compile_text(flagship + 'scenario "huge batch" { chat.batch = 512 }\n')
    assert c.ok, c.diagnostics
    tables = {a.title: a for a in c.answers if isinstance(a, TableAnswer) and a.kind == "scenario"}
    # 10× the traffic needs 10× the replicas, and the same limits decide the fleet: the p99 TTFT
    # SLO stops the running batch, throughput (not a burst) sets the replicas
    [same] = tables["10x traffic"].notes
    assert same.startswith("the same constraints decide chat.devices as in the baseline: chat.batch by "
                           "ttft_tail <= ttft_slo, chat.replicas by throughput_replicas")
    # a batch of 512 forced on the replicas: the SLOs and the KV cache no longer hold
    notes = tables["huge batch"].notes
    assert "TPOT SLO at the running batch, prefill chunks included: now fails" in notes
    assert "KV cache full in at most 1 % of iterations: now fails" in notes


def test_the_summary_names_what_binds_the_headline() -> None:
    from planc.pipeline import compile_plan
    from planc.report.machine import document_json
    from planc.report.view import build_document

    from .conftest import REPO

    c = compile_plan(REPO / "examples" / "100m_dau.plan")
    doc = build_document(c)
    assert doc.bindings_target == "chat.devices"
    # the running batch is the largest at which the SLOs hold: one more and the p99 TTFT SLO
    # breaks; then the fleet is throughput-bound (more replicas for the peak than for a burst)
    quantity, op, effect, value, _ = doc.bindings[0]
    assert (quantity, op, effect) == ("chat.batch", "largest", "ttft_tail <= ttft_slo") and value.startswith("fails: ")
    assert doc.bindings[1] == ("chat.replicas", "max", "throughput_replicas", FIGURES["chat.replicas"],
                               f"burst_replicas = {FIGURES['chat.burst_replicas']}")
    data = document_json(doc, c)
    assert data["bindings"]["target"] == "chat.devices"
    assert data["bindings"]["choices"][1]["in_effect"] == "throughput_replicas"
    # the iteration inside the mixed step's `where`: a reader sees the path, a machine the id
    assert doc.bindings[2][0] == "chat.seen_step_time › mixed_step_time › iteration_time"
    assert data["bindings"]["choices"][2]["quantity"] == "chat@seen_step_time@mixed_step_time.iteration_time"
    assert data["bindings"]["choices"][2]["quantity"] in c.lowered.values


def test_a_quantity_is_shown_by_its_path_of_wheres() -> None:
    from planc.semantics import ir

    assert ir.shown("chat.batch") == "chat.batch"
    assert ir.shown("total") == "total"  # a `let`
    assert ir.shown("h100_sxm.peak_flops[bf16]") == "h100_sxm.peak_flops[bf16]"
    assert ir.shown("chat@mixed_step_time.iteration_gpu_time") == "chat.mixed_step_time › iteration_gpu_time"
    assert ir.shown("chat@tpot_worst@seen_step_time@step_time.batch") == "chat.tpot_worst › seen_step_time › step_time › batch"


def test_a_constant_of_a_kind_is_not_an_assumption() -> None:
    """The MLA decoder derives `kv_shards = 1` (every TP rank holds the whole latent): a
    definition, like a `spec`. The split of the KV cache then depends on no assumption at all,
    and the report has no sensitivity table for it."""
    from planc.pipeline import compile_plan

    from .conftest import REPO

    c = compile_plan(REPO / "examples" / "mla_deepseek_v3.plan")
    assert c.lowered is not None and c.lowered.elaborated.nodes["deepseek_v3.kv_shards"].is_definition
    split = next(s for s in c.sensitivities if s.target == "reasoning.kv_split")
    assert split.entries == []
    assert "reasoning.kv_split" not in {s.target for s in build_document(c).sensitivities}


def test_a_spec_given_as_a_range_is_an_assumption(compile_text: Callable[[str], Compilation]) -> None:
    """A plan that is unsure of a datasheet figure says so with a range: then it is an assumption,
    listed with the others and ranked by the sensitivities; the same field given as one value is
    a specification."""
    c = compile_text('kind dev {\n  spec bandwidth: B/s "datasheet"\n  input price: USD/h\n}\n'
                     "dev unsure { bandwidth = 3 TB/s .. 3.4 TB/s; price = 2 USD/h }\n"
                     "dev sure { bandwidth = 3.2 TB/s; price = 2 USD/h }\n"
                     "let read_time = 1 GB / unsure.bandwidth + 1 GB / sure.bandwidth\n"
                     "summary read_time\n")
    assert c.ok, c.diagnostics
    assert c.lowered is not None
    nodes = c.lowered.elaborated.nodes
    assert not nodes["unsure.bandwidth"].is_definition and nodes["sure.bandwidth"].is_definition
    (read,) = c.sensitivities
    assert dict(read.entries) == pytest.approx({"unsure.bandwidth": -0.5}, rel=1e-3)
    doc = build_document(c)
    assert "unsure.bandwidth" in {q.id for q in doc.assumptions}
    assert "sure.bandwidth" in {q.id for q in doc.specifications}
