"""Parse tree → AST. The one Lark Transformer in the code base.

Contract: `build(tree, file) -> (Module, diagnostics)`. Every node gets the span of the text
it came from. Malformed numbers are reported here (E0104), not by the grammar, so the message
can quote the literal. Nothing downstream sees a Lark object.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from lark import Token, Transformer, Tree, v_args
from lark.tree import Meta as LarkMeta

from .. import diagnostics as dx
from ..source import SourceFile, Span
from . import ast

_STRICT_NUMBER = re.compile(r"^[0-9]+(_[0-9]+)*(\.[0-9]+(_[0-9]+)*)?([eE][+-]?[0-9]+)?$")


def build(tree: Tree[Token], file: SourceFile) -> tuple[ast.Module, list[dx.Diagnostic]]:
    builder = _Builder(file)
    module = builder.transform(tree)
    assert isinstance(module, ast.Module)
    return module, builder.problems


_HOLE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*(:\s*%)?\s*")


def _unquote(token: Token) -> str:
    """A string's text: `\\"` is a quote and `\\\\` a backslash; any other backslash is kept as
    written, so that LaTeX symbols read as they are typed (`symbol "\\alpha"`, `"\\theta"`, `"\\nu"`)."""
    return _unescape(str(token)[1:-1])


def _unescape(text: str) -> str:
    """`\\"` is a quote and `\\\\` a backslash; any other backslash stays as written."""
    return re.sub(r'\\(["\\])', r"\1", text)


@v_args(meta=True)
class _Builder(Transformer[Token, Any]):
    def __init__(self, file: SourceFile) -> None:
        super().__init__()
        self.file = file
        self.problems: list[dx.Diagnostic] = []

    # ---- spans --------------------------------------------------------------------------
    def _span(self, meta: LarkMeta, *children: Any) -> Span:
        if not getattr(meta, "empty", True):
            return Span(self.file, meta.start_pos, meta.end_pos)
        spans = [s for s in (self._of(c) for c in children if c is not None) if s is not None]
        if spans:
            return spans[0].to(spans[-1])
        return Span(self.file, 0, 0)

    def _tok(self, token: Token) -> Span:
        return Span(self.file, token.start_pos or 0, token.end_pos or 0)

    def _of(self, node: Any) -> Span | None:
        if isinstance(node, Token):
            return self._tok(node)
        return getattr(node, "span", None)

    # ---- module and declarations --------------------------------------------------------
    def start(self, meta: LarkMeta, children: list[Any]) -> ast.Module:
        return ast.Module(Span(self.file, 0, len(self.file.text)), tuple(children))

    def import_stmt(self, meta: LarkMeta, children: list[Any]) -> ast.Import:
        (path,) = children
        return ast.Import(self._span(meta), _unquote(path), self._tok(path))

    def meta_stmt(self, meta: LarkMeta, children: list[Any]) -> ast.Meta:
        key, value = children
        return ast.Meta(self._span(meta), str(key), _unquote(value))

    def enum_decl(self, meta: LarkMeta, children: list[Any]) -> ast.EnumDecl:
        name, desc, *members = children
        return ast.EnumDecl(self._span(meta), str(name), self._tok(name), _opt_str(desc), tuple(members))

    def enum_member(self, meta: LarkMeta, children: list[Any]) -> ast.EnumMember:
        name, *rest, notes = children
        attrs = rest[0] if rest else ()
        return ast.EnumMember(self._span(meta), str(name), attrs, notes)

    def attrs(self, meta: LarkMeta, children: list[Any]) -> tuple[ast.Attr, ...]:
        return tuple(children)

    def attr(self, meta: LarkMeta, children: list[Any]) -> ast.Attr:
        name, value = children
        return ast.Attr(self._span(meta), str(name), self._tok(name), value)

    def block_open(self, meta: LarkMeta, children: list[Any]) -> None:
        return None

    def kind_decl(self, meta: LarkMeta, children: list[Any]) -> ast.KindDecl:
        name, parent, desc, _open, *items = children
        return ast.KindDecl(
            self._span(meta), str(name), self._tok(name),
            str(parent) if parent is not None else None,
            self._tok(parent) if parent is not None else None,
            _opt_str(desc), tuple(items),
        )

    def section(self, meta: LarkMeta, children: list[Any]) -> ast.Section:
        title, *items = children
        return ast.Section(self._span(meta), _unquote(title), tuple(items))

    def input_decl(self, meta: LarkMeta, children: list[Any]) -> ast.InputDecl:
        keyword, name, type_, default, notes = children
        return ast.InputDecl(self._span(meta), str(name), self._tok(name), type_, default, notes,
                             spec=keyword.type == "SPEC")

    def derive_decl(self, meta: LarkMeta, children: list[Any]) -> ast.DeriveDecl:
        name, type_, expr, notes = children
        return ast.DeriveDecl(self._span(meta), str(name), self._tok(name), type_, expr, notes)

    def require_decl(self, meta: LarkMeta, children: list[Any]) -> ast.RequireDecl:
        expr, message = children
        return ast.RequireDecl(self._span(meta), expr, _opt_str(message))

    def advise_decl(self, meta: LarkMeta, children: list[Any]) -> ast.RequireDecl:
        expr, message = children
        return ast.RequireDecl(self._span(meta), expr, _opt_str(message), advisory=True)

    def finding_decl(self, meta: LarkMeta, children: list[Any]) -> ast.FindingDecl:
        expr, sentence = children
        return ast.FindingDecl(self._span(meta), expr, self._sentence(sentence))

    def figure_decl(self, meta: LarkMeta, children: list[Any]) -> ast.FigureDecl:
        name, *roles = children
        return ast.FigureDecl(self._span(meta), str(name), self._tok(name), tuple(roles))

    def lever_decl(self, meta: LarkMeta, children: list[Any]) -> ast.LeverDecl:
        label, cond, *rest = children
        takes, _, gate, _, source = rest[-5:]  # the keywords `gate` and `source` are tokens
        assignments = tuple(rest[:-5])
        return ast.LeverDecl(self._span(meta), _unquote(label), cond, assignments,
                             self._sentence(takes) if takes is not None else (),
                             self._sentence(gate) if gate is not None else (), _opt_str(source))

    def _sentence(self, token: Token) -> tuple[str | ast.Hole, ...]:
        """A finding's text split at its `{path}` holes; each hole's path is a name or an
        attribute chain with its own span, so an unknown name is reported inside the string."""
        raw, start = str(token), (token.start_pos or 0)
        parts: list[str | ast.Hole] = []
        at = 1
        for m in re.finditer(r"\{([^{}]*)\}", raw):
            if m.start() > at:
                parts.append(_unescape(raw[at:m.start()]))
            at = m.end()
            hole = _HOLE.fullmatch(m.group(1))
            span = Span(self.file, start + m.start(), start + m.end())
            if hole is None:
                self.problems.append(dx.BAD_HOLE.at(
                    span, "not a quantity", text=m.group(0),
                    help="a hole names a quantity, `{batch}` or `{hardware.memory}`, optionally as a percentage: `{prefill_share:%}`"))
                continue
            pos = start + m.start(1) + hole.start(1)
            expr: ast.Expr | None = None
            for name in hole.group(1).split("."):
                name_span = Span(self.file, pos, pos + len(name))
                expr = ast.Name(name_span, name) if expr is None else ast.Attribute(expr.span.to(name_span), expr, name, name_span)
                pos += len(name) + 1
            assert expr is not None
            parts.append(ast.Hole(span, expr, percent=hole.group(2) is not None))
        if at < len(raw) - 1:
            parts.append(_unescape(raw[at:-1]))
        return tuple(parts)

    def bool_type(self, meta: LarkMeta, children: list[Any]) -> ast.BoolType:
        return ast.BoolType(self._span(meta))

    def unit_words(self, meta: LarkMeta, children: list[Token]) -> tuple[tuple[str, ...], Span]:
        return tuple(str(c) for c in children), self._tok(children[0]).to(self._tok(children[-1]))

    def unit_type(self, meta: LarkMeta, children: list[Any]) -> ast.UnitType:
        ((words, span),) = children
        return ast.UnitType(span, words)

    def map_type(self, meta: LarkMeta, children: list[Any]) -> ast.MapType:
        key, (words, words_span) = children
        return ast.MapType(self._span(meta), str(key), self._tok(key), words, words_span)

    def instance_decl(self, meta: LarkMeta, children: list[Any]) -> ast.InstanceDecl:
        kind, name, base, _open, *fields = children
        return ast.InstanceDecl(
            self._span(meta), str(kind), self._tok(kind), str(name), self._tok(name),
            str(base) if base is not None else None,
            self._tok(base) if base is not None else None, tuple(fields),
        )

    def field(self, meta: LarkMeta, children: list[Any]) -> ast.Field:
        target, value, notes = children
        return ast.Field(self._span(meta), target, value, notes)

    def path(self, meta: LarkMeta, children: list[Any]) -> ast.Path:
        first, *rest = children
        head = ast.PathStep(self._tok(first), str(first), False)
        return ast.Path(self._span(meta), (head, *rest))

    def dot_step(self, meta: LarkMeta, children: list[Token]) -> ast.PathStep:
        return ast.PathStep(self._tok(children[0]), str(children[0]), False)

    def index_step(self, meta: LarkMeta, children: list[Token]) -> ast.PathStep:
        return ast.PathStep(self._tok(children[0]), str(children[0]), True)

    def uncertain(self, meta: LarkMeta, children: list[Any]) -> ast.Uncertain:
        low, high = children
        return ast.Uncertain(self._span(meta), low, high)

    def let_decl(self, meta: LarkMeta, children: list[Any]) -> ast.LetDecl:
        name, type_, expr, notes = children
        return ast.LetDecl(self._span(meta), str(name), self._tok(name), type_, expr, notes)

    def meta(self, meta: LarkMeta, children: list[Any]) -> ast.Annotations:
        desc, _src_kw, source, _sym_kw, symbol = children
        return ast.Annotations(
            self._span(meta, *children), _opt_str(desc), _opt_str(source), _opt_str(symbol)
        )

    # ---- questions ----------------------------------------------------------------------
    def check_stmt(self, meta: LarkMeta, children: list[Any]) -> ast.CheckStmt:
        expr, label = children
        return ast.CheckStmt(self._span(meta), expr, _opt_str(label))

    def summary_stmt(self, meta: LarkMeta, children: list[Any]) -> ast.SummaryStmt:
        return ast.SummaryStmt(self._span(meta), tuple(children))

    def solve_stmt(self, meta: LarkMeta, children: list[Any]) -> ast.SolveStmt:
        subject, unknown = children
        return ast.SolveStmt(self._span(meta), subject, unknown)

    def ask_stmt(self, meta: LarkMeta, children: list[Any]) -> ast.AskStmt:
        title, body = children
        kind, args = body
        span = self._span(meta)
        if kind == "optimize":
            objective, target, over, constraints, given = args
            return ast.AskStmt(span, _unquote(title), objective, target, over, constraints, None, given)
        left, right, target, given = args
        return ast.AskStmt(span, _unquote(title), None, target, None, (), (left, right), given)

    def optimize(self, meta: LarkMeta, children: list[Any]) -> tuple[str, tuple[Any, ...]]:
        objective, target, over, constraints, *given = children
        return "optimize", (objective, target, over, constraints, given[0] if given else ())

    def over(self, meta: LarkMeta, children: list[Any]) -> ast.Path:
        return children[0]  # type: ignore[no-any-return]

    def solve_eq(self, meta: LarkMeta, children: list[Any]) -> tuple[str, tuple[Any, ...]]:
        left, right, target, *given = children
        return "solve", (left, right, target, given[0] if given else ())

    def objective(self, meta: LarkMeta, children: list[Token]) -> str:
        return str(children[0])

    def constraints(self, meta: LarkMeta, children: list[Any]) -> tuple[ast.Expr, ...]:
        return tuple(children)

    def given(self, meta: LarkMeta, children: list[Any]) -> tuple[ast.Assignment, ...]:
        return tuple(children)

    def assignment(self, meta: LarkMeta, children: list[Any]) -> ast.Assignment:
        target, value = children
        return ast.Assignment(self._span(meta), target, value)

    def scenario_stmt(self, meta: LarkMeta, children: list[Any]) -> ast.ScenarioStmt:
        title, *assignments = children
        return ast.ScenarioStmt(self._span(meta), _unquote(title), tuple(assignments))

    def compare_stmt(self, meta: LarkMeta, children: list[Any]) -> ast.CompareStmt:
        subject, domain = children
        return ast.CompareStmt(self._span(meta), subject, domain)

    def sweep_stmt(self, meta: LarkMeta, children: list[Any]) -> ast.SweepStmt:
        subject, *rest = children
        plot = rest.pop() if rest and isinstance(rest[-1], ast.Plot) else None
        return ast.SweepStmt(self._span(meta), subject, tuple(rest), plot)

    def search_stmt(self, meta: LarkMeta, children: list[Any]) -> ast.SearchStmt:
        subject, *rest = children
        plot = rest.pop() if rest and isinstance(rest[-1], ast.Plot) else None
        constraints = rest.pop()
        target = rest.pop()
        objective = rest.pop()
        return ast.SearchStmt(
            self._span(meta), subject, tuple(rest), objective, target, constraints or (), plot
        )

    def domain(self, meta: LarkMeta, children: list[Any]) -> ast.Domain:
        target, values = children
        span = self._span(meta)
        if isinstance(values, tuple) and values and values[0] == "range":
            _, low, high, step = values
            return ast.Domain(span, target, None, low, high, step)
        return ast.Domain(span, target, tuple(values), None, None, None)

    def domain_list(self, meta: LarkMeta, children: list[Any]) -> list[ast.Expr]:
        return [c for c in children if c is not None]

    def domain_range(self, meta: LarkMeta, children: list[Any]) -> tuple[Any, ...]:
        low, high, step = children
        return ("range", low, high, str(step) if step is not None else None)

    def step(self, meta: LarkMeta, children: list[Token]) -> str:
        return str(children[0])

    def plot(self, meta: LarkMeta, children: list[Any]) -> ast.Plot:
        kind, *axes = children
        return ast.Plot(self._span(meta), str(kind), tuple(a for a in axes if a is not None))

    # ---- expressions --------------------------------------------------------------------
    def name(self, meta: LarkMeta, children: list[Token]) -> ast.Name:
        return ast.Name(self._tok(children[0]), str(children[0]))

    def true(self, meta: LarkMeta, children: list[Any]) -> ast.Bool:
        return ast.Bool(self._span(meta), True)

    def false(self, meta: LarkMeta, children: list[Any]) -> ast.Bool:
        return ast.Bool(self._span(meta), False)

    def number(self, meta: LarkMeta, children: list[Token]) -> ast.Number:
        literal, *units = children
        return self._number(meta, literal, str(literal), tuple(str(u) for u in units), units)

    def money(self, meta: LarkMeta, children: list[Token]) -> ast.Number:
        literal, *units = children
        words = ("$",) + tuple(str(u) for u in units)
        return self._number(meta, literal, str(literal)[1:], words, units)

    def _number(
        self, meta: LarkMeta, literal: Token, digits: str, words: tuple[str, ...], units: list[Token]
    ) -> ast.Number:
        span = self._span(meta)
        value = Fraction(0)
        if _STRICT_NUMBER.match(digits):
            value = Fraction(digits.replace("_", ""))
        else:
            self.problems.append(
                dx.BAD_NUMBER.at(
                    self._tok(literal), "not a number",
                    help="write digits with an optional fraction and exponent, e.g. `1.5`, `2e9`, `8_192`",
                    text=str(literal),
                )
            )
        unit_span = self._tok(units[0]).to(self._tok(units[-1])) if units else None
        if str(literal).startswith("$"):
            unit_span = self._tok(literal).to(unit_span) if unit_span else self._tok(literal)
        return ast.Number(span, str(literal), value, words, unit_span)

    def neg(self, meta: LarkMeta, children: list[Any]) -> ast.Unary:
        return ast.Unary(self._span(meta), "-", children[-1])

    def not_op(self, meta: LarkMeta, children: list[Any]) -> ast.Unary:
        return ast.Unary(self._span(meta), "not", children[-1])

    def binop(self, meta: LarkMeta, children: list[Any]) -> ast.BinOp:
        left, op, right = children
        return ast.BinOp(self._span(meta), str(op), left, right, self._tok(op))

    def pow_op(self, meta: LarkMeta, children: list[Any]) -> ast.BinOp:
        base, exponent = children
        caret = Span(self.file, base.span.end, exponent.span.start)
        return ast.BinOp(self._span(meta), "^", base, exponent, caret)

    def compare_op(self, meta: LarkMeta, children: list[Any]) -> ast.Compare:
        left, op, right = children
        return ast.Compare(self._span(meta), str(op), left, right, self._tok(op))

    def and_op(self, meta: LarkMeta, children: list[Any]) -> ast.BoolOp:
        left, right = children
        return ast.BoolOp(self._span(meta), "and", left, right)

    def or_op(self, meta: LarkMeta, children: list[Any]) -> ast.BoolOp:
        left, right = children
        return ast.BoolOp(self._span(meta), "or", left, right)

    def if_expr(self, meta: LarkMeta, children: list[Any]) -> ast.If:
        cond, then, orelse = children
        return ast.If(self._span(meta), cond, then, orelse)

    def attribute(self, meta: LarkMeta, children: list[Any]) -> ast.Attribute:
        value, attr = children
        return ast.Attribute(self._span(meta), value, str(attr), self._tok(attr))

    def index(self, meta: LarkMeta, children: list[Any]) -> ast.Index:
        value, key = children
        return ast.Index(self._span(meta), value, key)

    def where_expr(self, meta: LarkMeta, children: list[Any]) -> ast.Where:
        value, *bindings = children
        return ast.Where(self._span(meta), value, tuple(bindings))

    def reduce(self, meta: LarkMeta, children: list[Any]) -> ast.Reduce:
        func, body, var, over = children
        return ast.Reduce(self._span(meta), str(func), self._tok(func), body, str(var), self._tok(var),
                          str(over), self._tok(over))

    def call(self, meta: LarkMeta, children: list[Any]) -> ast.Call:
        func, *args = children
        return ast.Call(self._span(meta), str(func), self._tok(func), tuple(a for a in args if a is not None))


def _opt_str(token: Any) -> str | None:
    return _unquote(token) if isinstance(token, Token) else None
