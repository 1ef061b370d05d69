"""The LaTeX form of a formula reads as the formula: powers bracket any base that is not an atom."""

from __future__ import annotations

from fractions import Fraction

from planc.report import latex
from planc.semantics import ir
from planc.semantics.units import DIMENSIONLESS
from planc.source import SourceFile, Span

FILE = SourceFile("x.plan", "(a / b) ^ p")
SPAN = Span(FILE, 0, 11)


def ref(name: str) -> ir.Ref:
    return ir.Ref(name, DIMENSIONLESS, SPAN, name)


def test_a_fraction_raised_to_a_power_is_bracketed() -> None:
    # (t_c / t_m)^p in the GEMMs' roofline norm: without brackets the power seems to raise the denominator
    power = ir.Op("^", (ir.Op("/", (ref("a"), ref("b")), DIMENSIONLESS, SPAN), ref("p")), DIMENSIONLESS, SPAN)
    assert latex.to_latex(power, lambda leaf: leaf.text) == "\\left(\\frac{a}{b}\\right)^{p}"
    # an atom is not, and a difference was not and is not
    assert latex.to_latex(ir.Op("^", (ref("a"), ref("p")), DIMENSIONLESS, SPAN), lambda leaf: leaf.text) == "a^{p}"
    one = ir.Lit(Fraction(1), DIMENSIONLESS, SPAN, "1")
    base = ir.Op("-", (one, ref("a")), DIMENSIONLESS, SPAN)
    assert latex.to_latex(ir.Op("^", (base, ref("p")), DIMENSIONLESS, SPAN), lambda leaf: leaf.text) == "\\left(1 - a\\right)^{p}"
