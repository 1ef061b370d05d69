"""`plan fmt`: the canonical layout of a plan file, comments kept, meaning unchanged.

Contract: `format_text(text) -> str` lays out a plan that parses; `FormatError` when the text
does not lex (a plan with errors is not formatted). The layout works on the grammar's own
tokens (Lark's lexer over the grammar's terminals) and keeps every line where it is: no line is
joined, split, added or removed except that a run of blank lines becomes one and the file ends
with one newline, so a diagnostic's line number means the same line before and after.
- A line that starts a statement is indented two spaces per `{` open around it; a line that
  continues one (inside brackets, or after a line that cannot end it) keeps its indentation
  relative to the statement's first line, and is at least two spaces deeper.
- Within a line: one space around `=`, comparisons, `+`, binary `-`, `*`, `/`, `^`, `..` and
  `->`; none before `,`, `:`, `)` and `]` or after `(`, `[` and unary `-`; one after `,` and `:`;
  none around `.`; one around a brace that has code beside it on its line (`chat {`,
  `{ kv = fp8 }`); two before a comment that follows code. Anywhere else a run of spaces
  becomes one and no space stays none (`f(x)` and `f (x)` keep their kind).
- Strings, numbers, units and comments are copied exactly; trailing spaces go.
`format_text(format_text(t)) == format_text(t)`, and `t` and its layout parse to the same
syntax tree (`tests/test_fmt.py` holds both on every example and stdlib file).
"""

from __future__ import annotations

from dataclasses import dataclass

from .highlight import lexed


class FormatError(ValueError):
    """The text does not lex: it is not formatted."""


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str
    space_before: bool  # whether the source had white space before it on its line
    sign: bool = False  # a `-` that is a sign (after an operator, a bracket, a comma), not a subtraction


_BINARY = {"EQUAL", "COMP_OP", "PLUS", "MUL_OP", "CIRCUMFLEX", "_DOTDOT", "_ARROW"}
_NO_SPACE_BEFORE = {"COMMA", "COLON", "RPAR", "RSQB", "DOT", "SEMICOLON"}
_NO_SPACE_AFTER = {"LPAR", "LSQB", "DOT"}
_OPEN, _CLOSE = {"LPAR", "LSQB"}, {"RPAR", "RSQB"}
# after these a `-` is a sign, not a subtraction
_BEFORE_SIGN = _BINARY | {"MINUS", "COMMA", "LPAR", "LSQB", "LBRACE", "COLON", "IF", "THEN", "ELSE", "AND", "OR",
                          "NOT", "IN", "SOURCE"}
# a line that starts with one of these continues the statement above it
_CONTINUES = {"STRING", "SOURCE", "SYMBOL", "GATE", "THEN", "ELSE", "AND", "OR", "_ARROW", "PLUS", "MINUS", "MUL_OP",
              "COMP_OP", "CIRCUMFLEX", "DOT", "SUBJECT", "GIVEN", "TO", "MINIMIZE", "MAXIMIZE", "EQUAL", "_DOTDOT",
              "RPAR", "RSQB"}
# a line that ends with one of these does not end its statement
_OPEN_ENDED = _BINARY | {"MINUS", "COMMA", "LPAR", "LSQB", "COLON", "IF", "THEN", "ELSE", "AND", "OR", "NOT", "WHERE",
                         "DOT", "IN", "OVER"}


def format_text(text: str) -> str:
    lines = _lines(text)
    out: list[str] = []
    depth = 0  # braces open
    brackets = 0  # parentheses and square brackets open
    statement_old = statement_new = 0  # the indentation of the current statement's first line, before and after
    previous: list[_Token] = []
    blank = False
    for indent, tokens in lines:
        if not tokens:
            blank = bool(out)  # blank lines at the top of the file go
            continue
        if blank:
            out.append("")
            blank = False
        first = tokens[0]
        code = [t for t in tokens if t.kind != "COMMENT"]
        continues = bool(code) and (brackets > 0 or first.kind in _CONTINUES or bool(
            previous and previous[-1].kind in _OPEN_ENDED))
        level = depth - (1 if first.kind == "RBRACE" else 0)
        if continues:
            new = max(statement_new + (indent - statement_old), statement_new + 2)
        else:
            new = 2 * max(level, 0)
            statement_old, statement_new = indent, new
        out.append((" " * new + _join(tokens)).rstrip())
        for t in tokens:
            depth += (t.kind == "LBRACE") - (t.kind == "RBRACE")
            brackets = max(brackets + (t.kind in _OPEN) - (t.kind in _CLOSE), 0)
        previous = code or previous
    return "\n".join(out) + "\n" if out else ""


def _join(tokens: list[_Token]) -> str:
    parts: list[str] = []
    before: _Token | None = None
    for t in tokens:
        if before is not None:
            parts.append(_space(before, t))
        parts.append(t.text)
        before = t
    return "".join(parts)


def _space(a: _Token, b: _Token) -> str:
    if b.kind == "COMMENT":
        return "  "
    if "LBRACE" in (a.kind, b.kind) or b.kind == "RBRACE":
        return " "  # `chat {`, `{ kv = fp8 }`
    if b.kind in _NO_SPACE_BEFORE or a.kind in _NO_SPACE_AFTER:
        return ""
    if a.sign:
        return ""
    if a.kind in _BINARY or b.kind in _BINARY or a.kind in ("COMMA", "COLON", "MINUS"):
        return " "
    if b.kind == "MINUS":
        return " " if not b.sign or b.space_before else ""
    return " " if b.space_before else ""


def _lines(text: str) -> list[tuple[int, list[_Token]]]:
    """The text as lines: each its indentation (in columns) and its tokens."""
    from lark.exceptions import LarkError

    out: list[tuple[int, list[_Token]]] = []
    current: list[_Token] = []
    indent = 0
    pending_space = False
    last_code = "LPAR"  # a `-` that opens the file is a sign

    def gap(chunk: str) -> None:
        nonlocal current, indent, pending_space
        if chunk.strip(" \t\r\n\f\\"):
            raise FormatError(f"cannot read {chunk.strip()!r}")
        pieces = chunk.split("\n")
        for k, piece in enumerate(pieces):
            if k > 0:
                out.append((indent, current))
                current, pending_space = [], False
                indent = len(piece) - len(piece.lstrip(" \t"))
            elif piece:
                pending_space = True

    try:
        for terminal, value in lexed(text):
            if not terminal or terminal.startswith("__IGNORE") or terminal == "_NL":
                gap(value)
            else:
                sign = terminal == "MINUS" and last_code in _BEFORE_SIGN
                current.append(_Token(terminal, value, pending_space or not current, sign))
                pending_space = False
                last_code = terminal
    except LarkError as exc:
        raise FormatError(str(exc).splitlines()[0]) from None
    out.append((indent, current))
    return out
