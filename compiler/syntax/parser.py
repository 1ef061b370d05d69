"""The parser facade: source text → AST, or syntax diagnostics. The only module that runs Lark.

Contract
- `parse(file) -> (Module | None, diagnostics)`. On a syntax error the module is None and there
  is exactly one diagnostic (LALR stops at the first error): what was expected, in words, what
  was found, and — at end of file — which block is still open and where it was opened.
- A file this process has parsed (or loaded) before, with the same path and text, is the same
  `Module` again (`_PARSED`, the last 256 files: ASTs are immutable, and a validation run or a
  test session compiles the stdlib hundreds of times); `forget()` empties it. Otherwise a file
  parsed before comes from the parse cache (`cache.py`); Lark and the AST builder are
  imported only when something must be parsed, so a compile whose files are all cached never
  loads them. The grammar (`grammar/plan.lark`, loaded from the installed package) is compiled
  once per process. Newlines end statements; `_Continuations` drops the newlines inside brackets, after
  an operator or before one, and before a description string or `source`, so long expressions
  and annotations may continue on the next line.
"""

from __future__ import annotations

import collections
import functools
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .. import diagnostics as dx
from ..cachedir import loads_restricted, read_entry, write_entry
from ..source import SourceFile, Span
from . import ast
from . import cache as _cache

if TYPE_CHECKING:
    from lark import Lark, Token, Tree
    from lark.exceptions import UnexpectedCharacters, UnexpectedInput

_OPEN = {"LPAR", "LSQB"}
_CLOSE = {"RPAR", "RSQB"}
_BINARY = {"PLUS", "MINUS", "MUL_OP", "COMP_OP", "CIRCUMFLEX", "AND", "OR", "DOT", "_ARROW", "_DOTDOT"}
# (Not `=`: a value missing at the end of a line is a clearer error than a continuation.)
_JOINS_NEXT = _BINARY | {"COMMA", "COLON", "LBRACE", "IF", "THEN", "ELSE", "NOT"} | _OPEN

# Words for the terminals a user can be told to write.
_WORDS = {
    "NAME": "a name",
    "UNIT": "a unit",
    "NUMBER": "a number",
    "MONEY": "an amount like `$2.5/h`",
    "STRING": "a string",
    "_NL": "a newline",
    "$END": "end of file",
    "COMP_OP": "a comparison",
    "MUL_OP": "`*` or `/`",
}
_EXPRESSION_START = {"NAME", "NUMBER", "MONEY", "LPAR", "MINUS", "NOT", "IF", "TRUE", "FALSE"}
_STATEMENT_START = {"ASK", "CHECK", "COMPARE", "ENUM", "IMPORT", "KIND", "LET", "SCENARIO", "SCOPE", "SEARCH",
                    "SOLVE", "SUMMARY", "SWEEP", "TITLE"}
_OPERATORS = {"PLUS", "MINUS", "MUL_OP", "COMP_OP", "CIRCUMFLEX", "AND", "OR", "DOT", "LSQB", "UNIT"}


_OPTIONS: dict[str, Any] = {"parser": "lalr", "propagate_positions": True, "maybe_placeholders": True}
# what Lark lets a loaded parser be given (the rest is in its saved options)
_LOAD_OPTIONS: dict[str, Any] = {"propagate_positions": True}


@functools.cache
def _parser() -> Lark:
    """The LALR parser, its tables from the private cache when a previous process built them.

    Lark's own `cache=True` is not used: it keeps an unsigned pickle at a predictable name in the
    shared temp directory and unpickles it before checking it, so another local user could plant
    code there. The tables go through `cachedir`'s signed entries instead, serialised as plain
    data (no class may be named in them), and loading them takes 7 ms against 0.2 s to build.
    """
    from lark import Lark

    name = "lark-" + _cache.grammar_digest() + ".tables"
    payload = read_entry(name)
    data = loads_restricted(payload) if payload is not None else None
    if isinstance(data, dict):
        try:
            loaded: Lark = Lark._load_from_dict(  # type: ignore[no-untyped-call]
                data["data"], data["memo"], postlex=_Continuations(), **_LOAD_OPTIONS)
            return loaded
        except Exception:  # a signed entry of another Lark version: rebuild it below
            pass
    parser = Lark.open_from_package("planc.grammar", "plan.lark", postlex=_Continuations(), **_OPTIONS)
    write_entry(name, _tables(parser))
    return parser


def _tables(parser: Lark) -> bytes:
    """The parser's tables as a pickle of builtin values only (no loader or postlexer objects)."""
    import pickle

    from lark.grammar import Rule
    from lark.lark import _LOAD_ALLOWED_OPTIONS
    from lark.lexer import TerminalDef

    data, memo = parser.memo_serialize([TerminalDef, Rule])
    dropped = _LOAD_ALLOWED_OPTIONS | {"import_paths", "source_path"}
    data["options"] = {key: value for key, value in data["options"].items() if key not in dropped}
    return pickle.dumps({"data": data, "memo": memo}, protocol=pickle.HIGHEST_PROTOCOL)


class _Continuations:
    """Drops newlines inside brackets and after a token that cannot end a statement.

    (Newlines followed by a continuation — an operator, a description string, `source` — are
    ignored by the lexer itself; see `_NL` in the grammar. A post-lexer cannot look ahead
    without confusing Lark's contextual lexer.)
    """

    always_accept = ("_NL",)

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        depth = 0
        previous: Token | None = None
        for token in stream:
            kind = token.type
            if kind == "_NL" and (depth > 0 or (previous is not None and previous.type in _JOINS_NEXT)):
                continue
            depth = max(depth + (kind in _OPEN) - (kind in _CLOSE), 0)
            previous = token
            yield token


# ---- limits: every later stage is bounded by these (docs/language.md, "Limits") ------------
MAX_LINE_LENGTH = 10_000  # characters in one line
MAX_STRING_LENGTH = 4_096  # characters in one string literal, quotes excluded
MAX_NUMBER_DIGITS = 100  # digits in one number literal (underscores, point and exponent excluded)
MAX_EXPONENT = 1_000  # magnitude of a number literal's exponent: `1e1000` at most
MAX_NESTING = 100  # depth of the syntax tree: a chain of 90-odd `+` terms, far beyond the stdlib's 15
_MAX_REPORTED = 10  # limit diagnostics per file


def parse(file: SourceFile) -> tuple[ast.Module | None, list[dx.Diagnostic]]:
    long_lines = _long_lines(file)
    if long_lines:
        return None, long_lines
    key = (file.path, file.is_stdlib, file.text)
    known = _PARSED.get(key)
    if known is not None:
        _PARSED.move_to_end(key)
        return known, []
    cached = _cache.load(file)
    if cached is not None:
        _remember(key, cached)
        return cached, []
    from lark.exceptions import UnexpectedInput

    from .builder import build

    try:
        tree = _parser().parse(file.text)
    except UnexpectedInput as exc:
        return None, [_syntax_error(file, exc)]
    except RecursionError:  # not expected from an LALR parser; a diagnostic all the same
        return None, [dx.TOO_DEEP.at(Span(file, 0, 0), "", limit=MAX_NESTING, help=_DEEP_HELP)]
    beyond = _beyond_limits(tree, file)
    if beyond:
        return None, beyond
    module, problems = build(tree, file)
    if module is not None and not problems:
        _cache.store(file, module)
        _remember(key, module)
    return module, problems


_PARSED: collections.OrderedDict[tuple[str, bool, str], ast.Module] = collections.OrderedDict()


def _remember(key: tuple[str, bool, str], module: ast.Module) -> None:
    _PARSED[key] = module
    while len(_PARSED) > 256:
        _PARSED.popitem(last=False)


def forget() -> None:
    """Parse every file again (from the parse cache or the text): a test of those paths."""
    _PARSED.clear()


def _long_lines(file: SourceFile) -> list[dx.Diagnostic]:
    out = []
    starts = (*file.line_starts, len(file.text) + 1)
    for index in range(len(file.line_starts)):
        if starts[index + 1] - 1 - starts[index] > MAX_LINE_LENGTH:
            at = starts[index] + MAX_LINE_LENGTH
            out.append(dx.LINE_TOO_LONG.at(
                Span(file, at, at + 1), f"character {MAX_LINE_LENGTH + 1:,} of the line", line=index + 1,
                limit=MAX_LINE_LENGTH, help="break the line: a newline inside brackets or before an operator "
                                            "continues a statement"))
            if len(out) == _MAX_REPORTED:
                break
    return out


_DEEP_HELP = "give parts of the expression names of their own with `let` or `derive`"
_NUMBER_PARTS = re.compile(r"\$?([0-9_.]*)(?:[eE]([+-]?)([0-9_]*))?")


def _beyond_limits(tree: Tree[Token], file: SourceFile) -> list[dx.Diagnostic]:
    """Literals and nesting beyond the limits, found by one walk of the parse tree without
    recursion, before anything is built from it (so that `1e99999999` is refused before the
    number exists, and a deep tree before a recursive pass walks it)."""
    from lark import Token, Tree

    out: list[dx.Diagnostic] = []
    deep = False
    stack: list[tuple[Tree[Token], int]] = [(tree, 1)]
    while stack and len(out) < _MAX_REPORTED:
        node, depth = stack.pop()
        if depth > MAX_NESTING and not deep:
            deep = True
            meta = node.meta
            start = getattr(meta, "start_pos", 0) if not getattr(meta, "empty", True) else 0
            out.append(dx.TOO_DEEP.at(Span(file, start, getattr(meta, "end_pos", start) if start else 0),
                                      "nested too deeply", limit=MAX_NESTING, help=_DEEP_HELP))
        for child in node.children:
            if isinstance(child, Tree):
                stack.append((child, depth + 1))
            elif isinstance(child, Token):
                problem = _literal_problem(child, file)
                if problem is not None:
                    out.append(problem)
    return out


def _literal_problem(token: Token, file: SourceFile) -> dx.Diagnostic | None:
    span = Span(file, token.start_pos or 0, token.end_pos or 0)
    if token.type == "STRING" and len(token) - 2 > MAX_STRING_LENGTH:
        return dx.STRING_TOO_LONG.at(span, f"{len(token) - 2:,} characters", limit=MAX_STRING_LENGTH,
                                     help="a description or source is a sentence or two; cite a document "
                                          "for the rest")
    if token.type not in ("NUMBER", "MONEY"):
        return None
    match = _NUMBER_PARTS.match(str(token))
    assert match is not None
    digits = sum(ch.isdigit() for ch in match.group(1))
    if digits > MAX_NUMBER_DIGITS:
        return dx.NUMBER_TOO_LONG.at(span, f"{digits:,} digits", limit=MAX_NUMBER_DIGITS,
                                     help="write it with an exponent (`1.5e30`) or a unit prefix (`1.5 G`)")
    exponent = (match.group(3) or "").replace("_", "")
    if exponent and (len(exponent) > 5 or int(exponent) > MAX_EXPONENT):
        return dx.EXPONENT_TOO_LARGE.at(span, "exponent too large", limit=MAX_EXPONENT,
                                        help="a plan's quantities lie within about 1e±308, the range of a float")
    return None


# ---- syntax errors ------------------------------------------------------------------------


def _syntax_error(file: SourceFile, exc: UnexpectedInput) -> dx.Diagnostic:
    from lark.exceptions import UnexpectedCharacters, UnexpectedToken

    if isinstance(exc, UnexpectedCharacters):
        return _bad_character(file, exc)
    assert isinstance(exc, UnexpectedToken)
    token = exc.token
    expected = _expected_words(exc.accepts or exc.expected)
    if token.type == "$END":
        span = Span(file, len(file.text), len(file.text))
        opened = _open_blocks(file, len(file.text))
        if opened:
            header, at = opened[-1]
            return dx.UNEXPECTED_EOF.at(
                span, "the file ends here",
                expected=f"the block `{header}` is still open",
                secondary=[dx.Label(at, "this block is never closed")],
                help="add `}` to close it",
            )
        return dx.UNEXPECTED_EOF.at(span, "the file ends here", expected=f"expected {expected}",
                                    help="finish the statement")
    start = token.start_pos or 0
    span = Span(file, start, token.end_pos if token.end_pos is not None else start + len(token))
    found = _describe(token)
    return dx.UNEXPECTED_TOKEN.at(
        span, f"expected {expected} here", expected=expected, found=found, help=_help_for(token, expected, file),
    )


def _bad_character(file: SourceFile, exc: UnexpectedCharacters) -> dx.Diagnostic:
    pos = exc.pos_in_stream if exc.pos_in_stream is not None else 0
    char = file.text[pos] if pos < len(file.text) else ""
    if char == '"':
        end = file.text.find("\n", pos)
        end = len(file.text) if end < 0 else end
        return dx.UNTERMINATED_STRING.at(
            Span(file, pos, end), "this string is never closed",
            help='close the string with `"` on the same line',
        )
    if char.isdigit():
        end = pos
        while end < len(file.text) and (file.text[end].isalnum() or file.text[end] in "._"):
            end += 1
        return dx.BAD_NUMBER.at(Span(file, pos, end), "not a number", text=file.text[pos:end],
                                help="write digits with an optional fraction and exponent, e.g. `1.5`, `2e9`")
    shown = repr(char)[1:-1] if char.isprintable() else f"U+{ord(char):04X}"
    return dx.UNEXPECTED_CHARACTER.at(
        Span(file, pos, pos + 1), "not part of the language", char=shown,
        help="remove it; comments start with `#`",
    )


def _terminal_word(name: str) -> str:
    if name in _WORDS:
        return _WORDS[name]
    try:
        pattern = _parser().get_terminal(name).pattern
    except KeyError:
        return name.lower()
    if pattern.type == "str":
        return f"`{pattern.value}`"
    return name.lower()


def _expected_words(names: set[str] | frozenset[str]) -> str:
    names = set(names) - {"COMMENT"}
    words: list[str] = []
    if len(names & _STATEMENT_START) >= 5:
        names -= _STATEMENT_START | {"NAME"}
        words.append("a statement")
    if len(names & _EXPRESSION_START) >= 3:
        names -= _EXPRESSION_START
        words.append("an expression")
    if len(names & _OPERATORS) >= 3:
        names -= _OPERATORS
        words.append("an operator")
    words.extend(sorted({_terminal_word(n) for n in names}))
    if not words:
        return "something else"
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


def _describe(token: Token) -> str:
    if token.type == "_NL":
        return "the end of the line"
    if token.type in ("NAME", "UNIT"):
        return f"`{token}`"
    if token.type == "STRING":
        return f"the string {token}"
    return f"`{token}`"


def _help_for(token: Token, expected: str, file: SourceFile) -> str:
    start = token.start_pos or 0
    if token.type == "UNIT" and token == "$":  # `$-2.5/h`: the sign inside the money literal
        return "money is written `$2.5/h` or `2.5 USD/h`; a sign goes before it: `-$2.5/h`"
    if token.type == "UNIT" and _after_number(file.text, start):
        return "a word after a number is read as its unit; is a newline missing before it?"
    if "`{`" in expected and "`=`" in expected:  # `accelerator cheap from h100_sxm { ... }`
        return "an instance is declared `kind name { field = value }`, or from another as `kind name = base { field = value }`"
    if token.type == "_NL":
        return "the statement is incomplete; continue it or remove the dangling part"
    if token.type == "RBRACE":
        return "this `}` closes no open block: remove it, or look for a missing `{` above"
    if "newline" in expected:
        return "put each statement on its own line (or separate them with `;`)"
    return "see docs/language.md for the statement forms"


def _after_number(text: str, at: int) -> bool:
    """The text before `at` ends in a number (`8 GB`, `2.5e3 tokens`), spaces aside."""
    before = text[:at].rstrip(" \t")
    return bool(before) and (before[-1].isdigit() or before[-1] in "._")


def _open_blocks(file: SourceFile, upto: int) -> list[tuple[str, Span]]:
    """The `{` blocks still open at `upto`, innermost last, with their header text."""
    text = file.text
    stack: list[tuple[str, Span]] = []
    i = 0
    while i < upto:
        ch = text[i]
        if ch == "#":
            nl = text.find("\n", i)
            i = upto if nl < 0 else nl
            continue
        if ch == '"':
            j = i + 1
            while j < upto and text[j] not in '"\n':
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if ch == "{":
            line_start = text.rfind("\n", 0, i) + 1
            header = " ".join(text[line_start:i].split()) or "{"
            stack.append((header, Span(file, line_start + (len(text[line_start:i]) - len(text[line_start:i].lstrip())), i + 1)))
        elif ch == "}" and stack:
            stack.pop()
        i += 1
    return stack
