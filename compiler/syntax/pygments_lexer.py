"""A Pygments lexer for plan files, registered under the name `plan`.

Contract: `PlanLexer` is a `pygments.lexer.Lexer` (name and alias `plan`, files `*.plan`) whose
tokens are `highlight.pieces`: the grammar's own terminals, lexed by Lark's basic lexer, so the
highlighting cannot drift from the language. Keywords are `Keyword`, strings `String`, numbers
and money `Number`, comments `Comment.Single`, names and units `Name`, the rest `Text` or
`Punctuation`/`Operator`. The package registers it as the entry point `pygments.lexers: plan`,
so `pygmentize -l plan FILE` and every highlighter built on Pygments find it once the package
is installed. Pygments is imported only by whoever loads this module.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from pygments.lexer import Lexer
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Text

from .highlight import pieces

_TOKENS: dict[str, Any] = {"keyword": Keyword, "string": String, "number": Number, "comment": Comment.Single,
                           "name": Name}


class PlanLexer(Lexer):  # type: ignore[misc]
    name = "plan"
    aliases: ClassVar[list[str]] = ["plan"]
    filenames: ClassVar[list[str]] = ["*.plan"]
    mimetypes: ClassVar[list[str]] = ["text/x-plan"]

    def get_tokens_unprocessed(self, text: str) -> Iterator[tuple[int, Any, str]]:
        at = 0
        for kind, piece in pieces(text):
            yield at, _token(kind, piece), piece
            at += len(piece)


def _token(kind: str, piece: str) -> Any:
    if kind:
        return _TOKENS[kind]
    if piece.isspace():
        return Text.Whitespace
    if all(c in "()[]{},.:" for c in piece.strip()):
        return Punctuation
    return Operator if piece.strip() else Text
