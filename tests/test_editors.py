"""Highlighting for editors and documentation, generated from the grammar so it cannot drift:
the Pygments lexer (`pygmentize -l plan`) and the TextMate grammar (VS Code, GitHub, Shiki)."""

from __future__ import annotations

import json
import re

import pytest

from .conftest import REPO

pygments = pytest.importorskip("pygments")

SOURCES = sorted([*(REPO / "examples").glob("*.plan"), *(REPO / "stdlib").rglob("*.plan")])


def test_the_lexer_is_registered_under_its_name() -> None:
    from planc.syntax.pygments_lexer import PlanLexer
    from pygments.lexers import get_lexer_by_name, get_lexer_for_filename

    assert isinstance(get_lexer_by_name("plan"), PlanLexer)  # through the entry point
    assert isinstance(get_lexer_for_filename("chat.plan"), PlanLexer)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_the_lexer_covers_every_character_of_every_example_and_stdlib_file(path) -> None:  # type: ignore[no-untyped-def]
    from planc.syntax.pygments_lexer import PlanLexer
    from pygments.token import Comment, Error, Keyword, String

    text = path.read_text(encoding="utf-8")
    tokens = list(PlanLexer().get_tokens_unprocessed(text))
    assert "".join(piece for _, _, piece in tokens) == text
    assert all(kind is not Error for _, kind, _ in tokens)
    kinds = {kind for _, kind, _ in tokens}
    assert Keyword in kinds and String in kinds
    if "#" in text:
        assert Comment.Single in kinds


def test_keywords_strings_and_comments_are_told_apart() -> None:
    from planc.syntax.pygments_lexer import PlanLexer
    from pygments.token import Comment, Keyword, Name, Number, String

    text = 'deployment chat {  # the fleet\n  batch = 64 "sequences" source "x"\n}\n'
    tokens = [(kind, piece) for _, kind, piece in PlanLexer().get_tokens_unprocessed(text) if piece.strip()]
    assert (Comment.Single, "# the fleet") in tokens and (Keyword, "source") in tokens
    assert (Name, "batch") in tokens and (Number, "64") in tokens and (String, '"sequences"') in tokens
    assert (Name, "deployment") in tokens  # a kind's name, not a keyword: kinds are declared in the stdlib


def test_the_committed_textmate_grammar_is_the_generated_one() -> None:
    from planc.syntax.textmate import textmate_grammar

    committed = json.loads((REPO / "grammar" / "plan.tmLanguage.json").read_text(encoding="utf-8"))
    assert committed == textmate_grammar(), "run: python -m planc.syntax.textmate > grammar/plan.tmLanguage.json"


def test_the_textmate_patterns_match_what_the_parser_reads() -> None:
    from planc.syntax.textmate import textmate_grammar

    patterns = {p["name"]: p for p in textmate_grammar()["patterns"]}
    keywords = re.compile(patterns["keyword.other.plan"]["match"])
    for word in ("kind", "derive", "finding", "lever", "gate", "search", "where", "subject"):
        assert keywords.fullmatch(word), word
    for name in ("batch", "deployment"):  # a field and a kind: names, not keywords
        assert not keywords.fullmatch(name), name
    numbers = re.compile(patterns["constant.numeric.plan"]["match"])
    assert numbers.match("1.5e9") and numbers.match("100_000")
    assert re.compile(patterns["constant.numeric.money.plan"]["match"]).fullmatch("$2.5")
    assert re.compile(patterns["comment.line.number-sign.plan"]["match"]).match("# a comment")
