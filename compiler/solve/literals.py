"""The values questions are written with: a question's literals and ranges, their labels in a
table, the points of a range.

Contract: pure functions of syntax-tree nodes and numbers; no plan is evaluated here.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from ..semantics.units import DIMENSIONLESS, format_number
from ..syntax import ast


def expr_key(e: ast.Expr) -> Any:
    """What an override expression says, independent of where it is written."""
    if isinstance(e, ast.Number):
        return ("number", e.value, e.units)
    if isinstance(e, ast.Name):
        return ("name", e.id)
    return ("text", " ".join(e.span.text.split()))


def static_label(key: str | None) -> str:
    """The name a static choice is written with: `fp8` for `dtype.fp8`, `h100_sxm` for an instance."""
    if key is None:
        return ""
    return key.removeprefix("instance ").rsplit(".", 1)[-1]


def label_of(e: ast.Expr) -> str:
    """How a table row names an axis value: as written (a row joins its values with `, `, so a
    thousands separator would read as another value)."""
    if isinstance(e, ast.Number) and e.unit_span is None:
        return e.text + ("" if not e.units else " " + " ".join(e.units))
    return " ".join(e.span.text.split())


def setting_label(e: ast.Expr) -> str:
    """How a sentence names an axis value after `axis = `: a number as every value of the document is
    shown (`8,192 tokens` for `8192 tokens` or `8_192 tokens`, every digit kept), its units as
    written; any other expression as written."""
    if isinstance(e, ast.Number) and not e.text.startswith("$"):
        digits = format_number(float(e.value), sig=15)
        if e.unit_span is None:
            return digits + ("" if not e.units else " " + " ".join(e.units))
        units = " ".join(e.span.text[e.span.text.index(e.text) + len(e.text):].split())
        return digits + (" " + units if units else "")
    return label_of(e)


def range_size(lo: float, hi: float, step: str) -> int:
    """How many points `range_points` gives, without building them (ends already checked:
    finite, lo <= hi, lo > 0 for a log step)."""
    if step in ("log2", "log10"):
        base = 2 if step == "log2" else 10
        return math.floor((math.log(hi) - math.log(lo)) / math.log(base) + 1e-9) + 1
    if lo.is_integer() and hi.is_integer() and 0 <= hi - lo <= 10_000:
        return int(hi - lo) + 1
    return 17


def range_points(lo: float, hi: float, step: str, whole: bool = False) -> list[float]:
    """The points of a range; `whole`: the ends are whole, and so is every point (17 evenly
    spaced whole numbers when the range holds too many to list)."""
    if whole and step == "linear" and hi - lo > 10_000:
        return sorted({float(round(lo + (hi - lo) * k / 16)) for k in range(17)})
    if step in ("log2", "log10"):
        assert lo > 0, "a log-stepped range starts above zero (checked by range_of)"
        factor = 2 if step == "log2" else 10
        out, x = [], lo
        while x <= hi * (1 + 1e-12):
            out.append(x)
            x *= factor
        return out
    if float(lo).is_integer() and float(hi).is_integer() and 0 <= hi - lo <= 10_000:
        return [float(x) for x in range(int(lo), int(hi) + 1)]  # every whole number in the range
    n = 17
    return [lo + (hi - lo) * k / (n - 1) for k in range(n)]


def finite_literal(e: ast.Expr) -> bool:
    try:
        return math.isfinite(float(literal_value(e)))
    except Exception:
        return False


def plain(x: Any) -> Any:
    """A numpy scalar as the Python value a table row holds (bool or float)."""
    return bool(x) if getattr(getattr(x, "dtype", None), "kind", "") == "b" else float(x)


def number_like(template: ast.Expr, value: float, dim: Any) -> ast.Expr:
    """A literal holding `value` in base units (written with the canonical unit of `dim`)."""
    text = repr(float(value)) if not float(value).is_integer() else str(int(value))
    units = () if dim == DIMENSIONLESS else (str(dim),)
    return ast.Number(template.span, text, Fraction(text), units, None)


def is_neg_number(e: ast.Expr) -> bool:
    return isinstance(e, ast.Unary) and e.op == "-" and isinstance(e.operand, ast.Number)


def literal_value(e: ast.Expr) -> Any:
    from ..semantics.units import parse_unit

    if isinstance(e, ast.Number):
        scale, _ = parse_unit(e.units)
        return e.value * scale
    assert isinstance(e, ast.Unary) and isinstance(e.operand, ast.Number)
    return -literal_value(e.operand)


def short_number(v: Any) -> str:
    try:
        return f"{float(v):.4g}"
    except (TypeError, ValueError):
        return str(v)


def candidates(lo: Any, hi: Any, integer: bool) -> list[Any]:
    lo_f, hi_f = float(lo), float(hi)
    if integer and hi_f - lo_f <= 400:
        return [Fraction(x) for x in range(int(lo_f), int(hi_f) + 1)]
    pts = {lo_f, hi_f}
    if lo_f > 0:
        ratio = (hi_f / lo_f) ** (1 / 64)
        pts |= {lo_f * ratio**k for k in range(65)}
    out = sorted({Fraction(math.floor(p)) if integer else Fraction(p) for p in pts if lo_f <= p <= hi_f})
    return out
