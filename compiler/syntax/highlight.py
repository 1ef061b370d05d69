"""Token classes for showing plan source: the syntax highlighting of the report's appendix.

Contract: `lexed(text)` yields (terminal, piece) pairs whose pieces concatenate to the text up to
where Lark's basic lexer, over all of the grammar's terminals, stops (it then raises Lark's
error); white space between tokens is a piece of terminal "". `pieces(text) -> list[tuple[str,
str]]` cuts the text into (class, piece) pairs whose pieces concatenate to the text exactly. The class is "keyword", "string", "number", "comment",
"name" or "" (punctuation, white space, anything else). The classes come from the grammar's own
terminals, lexed by Lark's basic lexer over all of them (no parse: a plan with errors still
highlights); text the lexer cannot read is returned as one plain piece. Lark is imported here
only when a report asks for highlighting. `keywords()` is the set of the language's keywords, the
words no name may be (`plan import-hf` checks an instance name against it).
"""

from __future__ import annotations

from collections.abc import Iterator

from .parser import _parser

_CLASSES = {"STRING": "string", "NUMBER": "number", "MONEY": "number", "COMMENT": "comment",
            "NAME": "name", "UNIT": "name"}


def lexed(text: str) -> Iterator[tuple[str, str]]:
    at = 0
    for token in _parser().lex(text, dont_ignore=True):
        start, end = token.start_pos, token.end_pos
        if start is None or end is None or start < at:
            continue
        if start > at:
            yield "", text[at:start]
        yield token.type, text[start:end]
        at = end
    if at < len(text):
        yield "", text[at:]


def _keyword_terminals() -> dict[str, str]:
    """The grammar's keywords: terminal name → the word (a terminal whose pattern is a word)."""
    from lark.lexer import PatternStr

    return {t.name: t.pattern.value for t in _parser().terminals
            if isinstance(t.pattern, PatternStr) and t.pattern.value.isalpha()}


def keywords() -> frozenset[str]:
    """Every word the grammar reserves (`kind`, `figure`, `where`, `log2`, ...): each terminal
    whose pattern is a literal that could otherwise be read as a name."""
    import re

    from lark.lexer import PatternStr

    return frozenset(t.pattern.value for t in _parser().terminals
                     if isinstance(t.pattern, PatternStr) and re.fullmatch(r"[A-Za-z_]\w*", t.pattern.value))


def pieces(text: str) -> list[tuple[str, str]]:
    from lark.exceptions import LarkError

    keywords = set(_keyword_terminals())
    out: list[tuple[str, str]] = []
    at = 0
    try:
        for terminal, piece in lexed(text):
            kind = "keyword" if terminal in keywords else _CLASSES.get(terminal, "")
            out.append((kind, piece))
            at += len(piece)
    except LarkError:
        pass  # the rest is shown as it is
    if at < len(text):
        out.append(("", text[at:]))
    return out
