"""The grammar is LALR(1) without conflicts, and the lexer's only terminal collisions are the
deliberate ones between names and unit words (the contextual lexer tells them apart)."""

from __future__ import annotations

import logging
from importlib import resources

from lark import Lark, logger
from planc.source import SourceFile
from planc.syntax import ast
from planc.syntax.parser import parse

DELIBERATE = {frozenset({"NAME", "UNIT"})}


def test_no_conflicts_and_only_deliberate_collisions() -> None:
    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    handler = Collect()
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        text = resources.files("planc.grammar").joinpath("plan.lark").read_text(encoding="utf-8")
        Lark(text, parser="lalr", debug=True)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
    assert not [m for m in messages if "conflict" in m.lower()]
    for m in messages:
        if m.startswith("Collision between Terminals"):
            pair = frozenset(m.split("Terminals ")[1].split(".")[0].split(" and "))
            assert pair in DELIBERATE, m
    assert not [m for m in messages if m.startswith("Unused terminals")]


def parse_ok(text: str) -> ast.Module:
    module, problems = parse(SourceFile("t.plan", text))
    assert module is not None and not problems, problems
    return module


def test_units_words_and_continuations() -> None:
    module = parse_ok('let a = 100 M users\nlet b = 4.8 TB/s\nlet c = $2.5/h\nlet d = (1 +\n  2)\n'
                      'let e = 1\n  + 2 "continued" source "x"\n')
    lets = [s for s in module.statements if isinstance(s, ast.LetDecl)]
    assert [s.name for s in lets] == ["a", "b", "c", "d", "e"]
    a = lets[0].expr
    assert isinstance(a, ast.Number) and a.units == ("M", "users")
    c = lets[2].expr
    assert isinstance(c, ast.Number) and c.units == ("$", "/h")
    assert lets[4].notes.description == "continued" and lets[4].notes.source == "x"


def test_strings_keep_latex_backslashes() -> None:
    # `\"` and `\\` are the only escapes: a symbol reads as typed, `\theta` is not a tab
    module = parse_ok('let a = 1 "say \\"hi\\"" source "C:\\\\x" symbol "\\alpha"\n'
                      'let b = 2 symbol "\\theta_{\\nu}"\n')
    a, b = [s for s in module.statements if isinstance(s, ast.LetDecl)]
    assert a.notes.description == 'say "hi"' and a.notes.source == "C:\\x" and a.notes.symbol == "\\alpha"
    assert b.notes.symbol == "\\theta_{\\nu}"


def test_range_step_is_a_keyword_not_a_unit() -> None:
    module = parse_ok("sweep chat over batch in 1 .. 512 log2\n")
    (sweep,) = module.statements
    assert isinstance(sweep, ast.SweepStmt) and sweep.domains[0].step == "log2"
    high = sweep.domains[0].high
    assert isinstance(high, ast.Number) and high.units == ()


def test_every_node_has_a_span_inside_the_text() -> None:
    text = 'kind k { input x: B = 1 GB\n derive y = x * 2 }\nk a { x = 2 GB }\ncheck a.y <= 8 GB "fits"\n'
    module = parse_ok(text)

    def walk(node: object) -> None:
        span = getattr(node, "span", None)
        if span is not None:
            assert 0 <= span.start <= span.end <= len(text)
        for name in getattr(node, "__slots__", ()):
            child = getattr(node, name)
            for c in child if isinstance(child, tuple) else (child,):
                if hasattr(c, "__slots__"):
                    walk(c)

    walk(module)


def test_spec_declares_an_input_that_is_a_fact() -> None:
    module = parse_ok('kind m {\n  spec hidden: count "hidden size"\n  input price: USD/h = 2 USD/h\n}\n'
                      'let spec = 3\n')
    kind = next(s for s in module.statements if isinstance(s, ast.KindDecl))
    hidden, price = kind.items
    assert isinstance(hidden, ast.InputDecl) and hidden.spec and hidden.name == "hidden"
    assert isinstance(price, ast.InputDecl) and not price.spec
    # the word is a keyword only where a kind's field may start: elsewhere it is a name
    (let,) = [s for s in module.statements if isinstance(s, ast.LetDecl)]
    assert let.name == "spec"
