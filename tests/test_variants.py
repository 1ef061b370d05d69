"""`where` (a formula at other values of some fields) and `largest` (the largest whole value of a
field at which a condition holds): the language's one mechanism for using a definition at other
arguments, which the stdlib uses for the engine's iterations and its running batch."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import numpy as np
from planc.pipeline import Compilation
from planc.semantics import ir
from planc.vector import evaluate_many

BOX = '''
kind box "a toy" {
  input n: count = largest(n, 1, 1000, cost <= limit) "items"
  input limit: s = 1 s "budget"
  input unit: s = 3 ms "time per item"
  input extra: s = 0 s "extra"
  derive cost: s = 10 ms + n * unit + extra "time for n items"
  derive doubled: s = cost where (unit = 2 * unit) "cost at twice the unit time"
  derive n_slow: count = largest(n, 1, 1000, cost where (extra = 100 ms) <= limit) "items with extra"
  derive nested: s = doubled where (extra = 1 s) "doubled, with a second of extra"
}
box b { }
'''


def values(c: Compilation) -> dict[str, object]:
    assert c.lowered is not None, c.diagnostics
    return c.lowered.values


def test_largest_is_the_largest_whole_value_meeting_the_condition(compile_text: Callable[[str], Compilation]) -> None:
    v = values(compile_text(BOX))
    assert v["b.n"] == 330  # 10 ms + 330 · 3 ms = 1 s; 331 items take 1.003 s
    assert v["b.cost"] == Fraction(1)
    assert v["b.n_slow"] == 296  # (1 s − 110 ms) / 3 ms = 296.7


def test_where_recomputes_what_depends_on_the_bound_fields_only(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(BOX)
    v = values(c)
    assert v["b.doubled"] == Fraction(199, 100)  # 10 ms + 330 · 6 ms, at the instance's own n
    assert v["b.nested"] == Fraction(299, 100)  # the where inside `doubled` and the outer one both hold
    nodes = c.lowered.elaborated.nodes  # type: ignore[union-attr]
    # fields that do not depend on a bound one are the instance's own nodes, not copies
    assert not any(n.endswith(".limit") and "@" in n for n in nodes)
    assert "b@doubled.cost" in nodes and "b@doubled.unit" in nodes and "b@doubled.extra" not in nodes


PINNED = BOX.replace("box b { }", """
kind pins "a field of a where kept at its own value" {
  input a: s = 2 s "an argument"
  input k: count = 3 "a factor"
  derive b: s = k * a "read by what is pinned"
  derive c: s = b + a "reads the bound a and the pinned b"
  derive d: s = b * 2 "reads only the pinned b"
  derive kept: s = c where (a = 5 s, b = b) "c at another a, b as it is"
  derive kept_d: s = d where (a = 5 s, b = b) "d, which reads nothing that moves"
  derive moved: s = c where (a = 5 s) "c at another a, b moving with it"
  derive moved_b: s = b where (a = 5 s) "b at that a, written in another field"
}
pins p { }
box b { }""")


def test_a_field_bound_to_its_own_value_is_pinned(compile_text: Callable[[str], Compilation]) -> None:
    """`x where (a = ..., b = b)` keeps `b` at its value although it reads `a`: no node is made
    for `b`, nor for what reads only `b`, in the variant (a field that is not pinned moves)."""
    c = compile_text(PINNED)
    v = values(c)
    assert v["p.kept"] == 11  # b = 3 · 2 s kept, a = 5 s
    assert v["p.moved"] == 20  # b = 3 · 5 s moves with a
    assert v["p.kept_d"] == v["p.d"] == 12
    nodes = c.lowered.elaborated.nodes  # type: ignore[union-attr]
    kept = [n for n in nodes if n.startswith("p@kept.")]
    assert sorted(kept) == ["p@kept.a", "p@kept.c"], kept
    assert not any(n.startswith("p@kept_d.") for n in nodes)  # nothing in it moves: d is the instance's own
    assert "p@moved.b" in nodes


def test_the_same_bindings_are_one_variant_wherever_written(compile_text: Callable[[str], Compilation]) -> None:
    """`where (a = 5 s)` in two fields is one variant: `moved_b` reads the `b` that `moved` made."""
    c = compile_text(PINNED)
    v = values(c)
    assert v["p.moved_b"] == 15
    nodes = c.lowered.elaborated.nodes  # type: ignore[union-attr]
    assert not any(n.startswith("p@moved_b.") for n in nodes)
    expr = nodes["p.moved_b"].expr
    assert isinstance(expr, ir.Ref) and expr.node == "p@moved.b"


def test_a_given_override_reaches_every_variant(compile_text: Callable[[str], Compilation]) -> None:
    plan = BOX + 'ask "n at 2 s": solve b.cost = 2 s for b.extra given b.limit = 2 s\n'
    v = values(compile_text(BOX.replace("limit: s = 1 s", "limit: s = 2 s")))
    assert v["b.n"] == 663 and v["b.n_slow"] == 630
    assert compile_text(plan).ok


def test_nothing_feasible_is_E0407_with_exit_1(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(BOX.replace("limit: s = 1 s", "limit: s = 5 ms"))
    assert [d.code for d in c.diagnostics if d.is_error] == ["E0407"] * len([d for d in c.diagnostics if d.is_error])
    assert c.exit_code == 1 and c.lowered is None


def test_largest_must_be_a_whole_formula_of_a_count_of_the_instance(compile_text: Callable[[str], Compilation]) -> None:
    bad = [
        BOX.replace("largest(n, 1, 1000, cost <= limit)", "1 + largest(n, 1, 1000, cost <= limit)"),
        BOX.replace("largest(n, 1, 1000, cost <= limit)", "largest(n, 1 s, 1000, cost <= limit)"),
        BOX.replace("largest(n, 1, 1000, cost <= limit)", "largest(m, 1, 1000, cost <= limit)"),
        BOX.replace("largest(n, 1, 1000, cost <= limit)", "largest(n, 1, 1000, cost)"),
        BOX.replace("(unit = 2 * unit)", "(speed = 2 * unit)"),
        BOX.replace("(unit = 2 * unit)", "(unit = 2)"),
    ]
    for text in bad:
        c = compile_text(text)
        assert not c.ok and c.exit_code == 2, text
        assert all(d.primary is not None for d in c.diagnostics if d.is_error)


def test_the_vectorised_search_agrees_with_the_exact_one(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(BOX)
    lowered = c.lowered
    assert lowered is not None
    limits = np.array([0.5, 1.0, 2.0, 0.004])
    out = evaluate_many(lowered.elaborated, lowered.values, {"b.limit": limits})
    for limit, n, slow in zip(limits, out["b.n"], out["b.n_slow"]):
        exact = values(compile_text(BOX.replace("limit: s = 1 s", f"limit: s = {limit} s"))) if limit > 0.01 else None
        if exact is None:  # even one item misses the budget: no value
            assert np.isnan(n)
            continue
        assert n == exact["b.n"] and slow == exact["b.n_slow"]


def test_a_step_searches_other_than_whole_values(compile_text: Callable[[str], Compilation]) -> None:
    text = BOX.replace('derive n_slow: count = largest(n, 1, 1000, cost where (extra = 100 ms) <= limit)',
                       'derive n_slow: count = largest(n, 1 / 4, 1000, cost where (extra = 100 ms) <= limit, 1 / 4)')
    c = compile_text(text)
    assert values(c)["b.n_slow"] == Fraction(1186, 4)  # (1 s − 110 ms) / 3 ms = 296.67: the last quarter below it
    out = evaluate_many(c.lowered.elaborated, c.lowered.values, {"b.limit": np.array([1.0, 0.5])})  # type: ignore[union-attr]
    assert list(out["b.n_slow"]) == [296.5, 130.0]  # (0.5 s − 110 ms) / 3 ms = 130 exactly


def test_searches_are_opaque_to_the_algebra(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(BOX)
    assert c.lowered is not None
    assert ir.is_search(c.lowered.elaborated.nodes["b.n"].expr)
    assert "largest" in str(c.lowered.local("b.n"))
    # over the inputs, a search is a symbol of its own: what depends on it is algebra in that symbol
    assert c.lowered.full("b.n") == c.lowered.symbols["b.n"]
    assert c.lowered.symbols["b.n"] in c.lowered.full("b.cost").free_symbols
