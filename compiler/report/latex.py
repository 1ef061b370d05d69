"""IR expression → LaTeX, as written (names) or with values substituted.

Contract: `to_latex(expr, leaf)` prints an IR tree with one precedence table and one
parenthesisation rule; `leaf(node)` decides how a reference or literal prints (its name for the
formula, its value with unit for the substituted form), so both forms share term order and
structure. Strings from the plan are escaped with `text()`; nothing here evaluates anything.
"""

from __future__ import annotations

from collections.abc import Callable

from ..builtins import FUNCTIONS
from ..semantics import ir

# Higher binds tighter.
_PREC = {"or": 1, "and": 2, "not": 3, "<": 4, "<=": 4, ">": 4, ">=": 4, "==": 4, "!=": 4,
         "+": 5, "-": 5, "*": 6, "/": 9, "neg": 7, "^": 8}
_ATOM = 10
_INFIX = {"+": " + ", "-": " - ", "*": " \\cdot ", "<": " < ", "<=": " \\le ", ">": " > ",
          ">=": " \\ge ", "==": " = ", "!=": " \\ne ", "and": " \\land ", "or": " \\lor "}
_FUNC = {name: f.latex for name, f in FUNCTIONS.items() if f.latex is not None}  # ceil, floor: brackets
_TEXT_ESCAPES = {"\\": "\\backslash{}", "{": "\\{", "}": "\\}", "$": "\\$", "%": "\\%", "#": "\\#",
                 "&": "\\&", "_": "\\_", "^": "\\hat{}", "~": "\\sim{}"}

Leaf = Callable[[ir.Lit | ir.Ref], str]


def text(s: str) -> str:
    """Escape arbitrary text for use inside `\\text{...}` / `\\mathrm{...}`."""
    return "".join(_TEXT_ESCAPES.get(ch, ch) for ch in s)


def name(s: str) -> str:
    return "\\mathrm{" + text(s) + "}"


def to_latex(expr: ir.Expr, leaf: Leaf) -> str:
    return _Printer(leaf).visit(expr)[0]


LONGEST = 8
"""A reduction (`sum(... for h in hour)`: every term elaborated from one body, so every term has
its span) of more terms than this is shown as its first two, `⋯` and its last: the 24 hours of a
day would not fit a line, and the report's "where it goes" table lists every term with its share.
A sum written out term by term is always shown whole."""


def _one_body(terms: tuple[ir.Expr, ...] | list[ir.Expr]) -> bool:
    return len({(t.span.file.path, t.span.start, t.span.end) for t in terms}) == 1


def _terms(expr: ir.Expr) -> list[ir.Expr]:
    """The terms of a chain of `+` (`((a + b) + c) + d` → a, b, c, d)."""
    out: list[ir.Expr] = []
    while isinstance(expr, ir.Op) and expr.op == "+":
        out.append(expr.args[1])
        expr = expr.args[0]
    return [expr, *reversed(out)]


class _Printer:
    def __init__(self, leaf: Leaf) -> None:
        self.leaf = leaf

    def visit(self, expr: ir.Expr) -> tuple[str, int]:
        if isinstance(expr, (ir.Lit, ir.Ref)):
            return self.leaf(expr), _ATOM
        op, args = expr.op, expr.args
        if op == "largest":  # max{x ∈ [low, high] : condition}, the condition at the answer
            free, low, high, cond = (self.visit(a)[0] for a in args[:4])
            return ("\\max\\{" + free + " \\in [" + low + ", " + high + "] : " + cond + "\\}"), _ATOM
        if op not in _FUNC and op not in _PREC and op not in ("ceil", "floor", "if"):
            raise NotImplementedError(f"no LaTeX form for `{op}`")  # a new IR op must be added here
        if op in ("max", "min") and len(args) > LONGEST and _one_body(args):  # a reduction over an enumeration
            shown = [self.visit(a)[0] for a in (*args[:2], args[-1])]
            return _FUNC[op] + "\\left(" + ", ".join(shown[:2]) + ", \\ldots, " + shown[2] + "\\right)", _ATOM
        if op == "+" and len(terms := _terms(expr)) > LONGEST and _one_body(terms):
            prec = _PREC["+"]
            shown = [self._wrap(t, prec) for t in (*terms[:2], terms[-1])]
            return " + ".join(shown[:2]) + " + \\cdots + " + shown[2], prec
        if op in _FUNC:
            return self._func(op, args), _ATOM
        if op in ("ceil", "floor"):
            left, right = ("\\lceil ", " \\rceil") if op == "ceil" else ("\\lfloor ", " \\rfloor")
            return "\\left" + left + self.visit(args[0])[0] + "\\right" + right, _ATOM
        if op == "if":
            cond, then, orelse = (self.visit(a)[0] for a in args)
            return ("\\begin{cases} " + then + " & \\text{if } " + cond + " \\\\ " + orelse
                    + " & \\text{otherwise} \\end{cases}"), _ATOM
        if op == "/":
            return "\\frac{" + self.visit(args[0])[0] + "}{" + self.visit(args[1])[0] + "}", _PREC["/"]
        if op == "^":
            # a fraction as the base is bracketed too: (a/b)^p, not a fraction whose denominator looks raised
            return self._wrap(args[0], _ATOM) + "^{" + self.visit(args[1])[0] + "}", _PREC["^"]
        if op in ("neg", "not"):
            sign = "-" if op == "neg" else "\\lnot "
            return sign + self._wrap(args[0], _PREC[op]), _PREC[op]
        prec = _PREC[op]
        right_min = prec + 1 if op in ("-", "/") or prec == 4 else prec
        return self._wrap(args[0], prec) + _INFIX[op] + self._wrap(args[1], right_min), prec

    def _wrap(self, expr: ir.Expr, minimum: int) -> str:
        out, prec = self.visit(expr)
        return "\\left(" + out + "\\right)" if prec < minimum else out

    def _func(self, op: str, args: tuple[ir.Expr, ...]) -> str:
        inner = ", ".join(self.visit(a)[0] for a in args)
        if op == "sqrt":
            return "\\sqrt{" + inner + "}"
        if op == "abs":
            return "\\left|" + inner + "\\right|"
        return _FUNC[op] + "\\left(" + inner + "\\right)"


_SYMBOL_UNSAFE = {"`": "", "<": r"\lt ", ">": r"\gt ", "&": r"\&", "$": r"\$", "\n": " ", "\r": " "}


def symbol(text: str) -> str:
    """A plan's `symbol` string as LaTeX that cannot leave the math it is put in: no backtick
    (which would close the Markdown code span or fence around the math and let what follows be
    read as Markdown or HTML), `<`, `>`, `&` and `$` as LaTeX commands, no control character."""
    return "".join(_SYMBOL_UNSAFE.get(ch, ch) for ch in text if ch.isprintable() or ch in "\n\r")
