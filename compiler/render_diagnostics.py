"""Rendering diagnostics for people and for tools: human (rustc style), one-line and JSON.

Contract
- `render_human(diags, *, color=False)` renders one block per diagnostic, in the order
  given (callers pass `Sink.sorted()`), blocks separated by a blank line, then a blank line
  and a summary such as `plan: 2 errors, 1 warning` (a zero count is left out; nothing at
  all, not even the summary, for an empty list). The text ends with a newline. A block is:

      error[E0201]: unknown name `layres`
        --> plans/x.plan:12:14
         |
      12 |   params = layres * 2
         |            ^^^^^^ not declared
         |
        ::: stdlib/kinds.plan:3:9
         |
       3 |   input layers: count
         |         ------ a similar name is declared here
         = help: did you mean `layers`?
         = note: ...

  * The gutter is as wide as the largest line number shown anywhere in the block.
  * The primary label is underlined with `^`, secondary labels with `-`.
  * A secondary label in the primary's file within 3 lines of it joins the primary snippet
    (each labelled line once, in line order, its labels below it: primary first, then the
    secondaries in their given order). Every other secondary gets its own
    `::: path:line:col` snippet, in the given order. Snippets are separated by an empty
    gutter line.
  * A span covering several lines is underlined from its start to the end of its first
    line. Every underline has at least one mark, so a zero-width span (such as end of
    file) gets one caret at its column — one past the last character at a line's end.
  * Columns count characters (code points); tabs are shown as 4 spaces and the underline
    is shifted and widened to match. A trailing `\\r` (CRLF files) is not shown.
  * Nothing from the plan reaches the terminal raw: every control character (an ESC that
    would start a terminal sequence, a BEL, a bidirectional override) in a source line, a
    message, a label, a help or a note is shown as one visible stand-in (`␛`, `␇`, `�`), so
    columns still line up; a source line longer than `MAX_SHOWN_LINE` characters is shown as a
    window around its labels with `…` where it is cut, and a message, label or note longer
    than `MAX_SHOWN_TEXT` is cut with `…`.
  * A diagnostic without a primary label is just its header plus help and notes; its
    secondary labels are not shown.
  * `stdlib_lines=False` names a snippet in the stdlib by its file and the text shown, without
    line and column numbers (nor do they widen the gutter): the form of the golden cases and
    the error pages, which a physics edit that moves a stdlib line would otherwise change.
  * `color=True` adds ANSI escapes: `error[...]`/`warning[...]` and the primary carets in
    bold red/yellow, the gutter (line numbers, `|`, `-->`, `:::`, `=`) and secondary marks
    in bold blue. Without it the output contains no escapes.
- `render_short(diags)` gives one line per diagnostic,
  `path:line:col: error[E0201]: message (help: ...)`, without the location when there is
  no primary label and without the help part when there is no help; lines are joined by
  `\\n` and the text ends with a newline unless it is empty.
- `to_json(diags)` returns plain JSON data (str/int/None/list/dict), one dict per
  diagnostic: `code, severity, message, help, notes, primary, secondary`, where a label is
  `{file, line, column, end_line, end_column, label}` (or `null` for a missing primary).
  Lines and columns are 1-based character positions; `end_line`/`end_column` locate the
  first character after the span (the end is exclusive).
- `render_json(diags)` is `{"version": 1, "diagnostics": to_json(diags)}` dumped with
  `indent=2, ensure_ascii=False, sort_keys=True` plus a newline: deterministic bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

from .diagnostics import Diagnostic, Label, Severity
from .source import SourceFile, Span

JSONValue: TypeAlias = "str | int | list[JSONValue] | dict[str, JSONValue] | None"

TAB_WIDTH = 4
NEARBY_LINES = 3
JSON_VERSION = 1
MAX_SHOWN_LINE = 160
MAX_SHOWN_TEXT = 400
_ELLIPSIS = "…"
# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional embeddings,
# overrides and isolates (which reorder what a terminal shows)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str, limit: int | None = MAX_SHOWN_TEXT, *, newlines: bool = True) -> str:
    """`text` with every control character replaced by a visible stand-in of one character
    (`\\x1b` → `␛`; a C1 control or a bidirectional override → `�`), cut to `limit`
    characters with `…`. With `newlines=False` a newline is a stand-in too."""
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + _ELLIPSIS
    if not newlines:
        text = text.replace("\n", "\u2424")
    return _CONTROL.sub(_stand_in, text)


def _stand_in(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)
    return "\u2421" if code == 0x7F else "\ufffd"

_RESET = "\x1b[0m"
_BOLD_RED = "\x1b[1;31m"
_BOLD_YELLOW = "\x1b[1;33m"
_BOLD_BLUE = "\x1b[1;34m"
_SEVERITY_COLORS = {Severity.ERROR: _BOLD_RED, Severity.WARNING: _BOLD_YELLOW}


# --- public API ----------------------------------------------------------------------------


def render_human(diags: Sequence[Diagnostic], *, color: bool = False, stdlib_lines: bool = True) -> str:
    """rustc-style blocks for every diagnostic plus a summary line (see module docstring)."""
    if not diags:
        return ""
    blocks = [_render_block(d, _Style(color, _SEVERITY_COLORS[d.severity], stdlib_lines)) for d in diags]
    return "\n\n".join([*blocks, _summary(diags)]) + "\n"


def render_short(diags: Sequence[Diagnostic]) -> str:
    """One line per diagnostic: `path:line:col: error[E0201]: message (help: ...)`."""
    if not diags:
        return ""
    return "\n".join(_short_line(d) for d in diags) + "\n"


def to_json(diags: Sequence[Diagnostic]) -> list[dict[str, JSONValue]]:
    """JSON-ready data for every diagnostic, in the order given."""
    return [_diagnostic_json(d) for d in diags]


def render_json(diags: Sequence[Diagnostic]) -> str:
    """The versioned JSON document for `diags`, deterministic down to the byte."""
    document = {"version": JSON_VERSION, "diagnostics": to_json(diags)}
    return json.dumps(document, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


# --- styling -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Style:
    """ANSI colouring, or nothing at all when `color` is off."""

    color: bool
    accent: str
    stdlib_lines: bool = True  # False: a stdlib snippet is named by its file and its text alone

    def numbered(self, file: SourceFile) -> bool:
        return self.stdlib_lines or not file.is_stdlib

    def paint(self, text: str, code: str) -> str:
        if not self.color or not text:
            return text
        return f"{code}{text}{_RESET}"

    def severity(self, text: str) -> str:
        return self.paint(text, self.accent)

    def gutter(self, text: str) -> str:
        return self.paint(text, _BOLD_BLUE)


# --- human form: layout --------------------------------------------------------------------


@dataclass(frozen=True)
class _Mark:
    label: Label
    primary: bool


@dataclass(frozen=True)
class _Snippet:
    """Some lines of one file with their labels, introduced by `-->` or `:::`."""

    intro: str
    anchor: Span
    marks: tuple[_Mark, ...]

    def lines(self) -> list[int]:
        return sorted({mark.label.span.line for mark in self.marks})


def _is_near(primary: Span, other: Span) -> bool:
    return other.file is primary.file and abs(other.line - primary.line) <= NEARBY_LINES


def _plan_snippets(primary: Label, secondary: Sequence[Label]) -> list[_Snippet]:
    near = tuple(_Mark(label, False) for label in secondary if _is_near(primary.span, label.span))
    far = [label for label in secondary if not _is_near(primary.span, label.span)]
    first = _Snippet("-->", primary.span, (_Mark(primary, True), *near))
    return [first, *(_Snippet(":::", label.span, (_Mark(label, False),)) for label in far)]


def _gutter_width(snippets: Sequence[_Snippet], style: _Style) -> int:
    return max((len(str(line)) for s in snippets if style.numbered(s.anchor.file) for line in s.lines()), default=1)


# --- human form: text ----------------------------------------------------------------------


def _render_block(diag: Diagnostic, style: _Style) -> str:
    snippets = _plan_snippets(diag.primary, diag.secondary) if diag.primary else []
    width = _gutter_width(snippets, style)
    rows = [_header(diag, style)]
    for index, snippet in enumerate(snippets):
        if index:
            rows.append(_empty_gutter(width, style))
        rows.extend(_render_snippet(snippet, width, style))
    rows.extend(_footer(diag, width, style))
    return "\n".join(rows)


def _header(diag: Diagnostic, style: _Style) -> str:
    return f"{style.severity(f'{diag.severity.value}[{diag.code}]')}: {terminal_safe(diag.message, newlines=False)}"


def _empty_gutter(width: int, style: _Style) -> str:
    return style.gutter(" " * width + " |")


def _render_snippet(snippet: _Snippet, width: int, style: _Style) -> list[str]:
    where = snippet.anchor.location() if style.numbered(snippet.anchor.file) else snippet.anchor.file.path
    rows = [
        f"{' ' * width}{style.gutter(snippet.intro)} {terminal_safe(where, newlines=False)}",
        _empty_gutter(width, style),
    ]
    for line in snippet.lines():
        marks = [m for m in snippet.marks if m.label.span.line == line]
        window = _window(snippet.anchor.file, line, marks)
        rows.append(_source_row(snippet.anchor.file, line, width, style, window))
        rows.extend(_mark_row(m, width, style, window) for m in marks)
    return rows


def _window(file: SourceFile, line: int, marks: Sequence[_Mark]) -> tuple[int, int]:
    """The characters [start, end) of a line that are shown: all of it, or, for a line longer
    than MAX_SHOWN_LINE, a window that starts a little before its first label."""
    size = len(_line_text(file, line))
    if size <= MAX_SHOWN_LINE:
        return 0, size
    first = min(file.line_col(m.label.span.start)[1] - 1 for m in marks) if marks else 0
    start = max(0, min(first - 20, size - MAX_SHOWN_LINE))
    return start, min(size, start + MAX_SHOWN_LINE)


def _source_row(file: SourceFile, line: int, width: int, style: _Style, window: tuple[int, int]) -> str:
    full = _line_text(file, line)
    start, end = window
    text = _expand_tabs(terminal_safe(full[start:end], None, newlines=False))
    if start > 0:
        text = _ELLIPSIS + text
    if end < len(full):
        text += _ELLIPSIS
    gutter = style.gutter(f"{line if style.numbered(file) else '':>{width}} |")
    return f"{gutter} {text}" if text else gutter


def _mark_row(mark: _Mark, width: int, style: _Style, window: tuple[int, int] | None = None) -> str:
    indent, length = _underline_extent(mark.label.span, window)
    marks = ("^" if mark.primary else "-") * length
    label = terminal_safe(mark.label.text, newlines=False)
    text = f"{marks} {label}" if label else marks
    painted = style.severity(text) if mark.primary else style.gutter(text)
    return f"{_empty_gutter(width, style)} {' ' * indent}{painted}"


def _underline_extent(span: Span, window: tuple[int, int] | None = None) -> tuple[int, int]:
    """Display (indent, length) of the underline for `span` on its first line (within the
    window of the line that is shown)."""
    line, start_col = span.file.line_col(span.start)
    text = _line_text(span.file, line)
    end_line, end_col = span.file.line_col(span.end)
    if end_line != line:
        end_col = len(text) + 1
    lo, hi = window if window is not None else (0, len(text))
    first = min(max(start_col - 1, lo), hi)
    last = max(min(end_col - 1, hi), first)
    indent = (1 if lo > 0 else 0) + _display_width(text[lo:first])  # past a leading `…`
    length = _display_width(text[first:last])
    return indent, max(1, length)


def _line_text(file: SourceFile, line: int) -> str:
    return file.line_text(line).removesuffix("\r")


def _display_width(text: str) -> int:
    return sum(TAB_WIDTH if ch == "\t" else 1 for ch in text)


def _expand_tabs(text: str) -> str:
    return text.replace("\t", " " * TAB_WIDTH)


def _footer(diag: Diagnostic, width: int, style: _Style) -> list[str]:
    entries = ([("help", diag.help)] if diag.help is not None else []) + [("note", n) for n in diag.notes]
    return [_footer_row(kind, text, width, style) for kind, text in entries]


def _footer_row(kind: str, text: str, width: int, style: _Style) -> str:
    """`= help: text`, continuation lines aligned under the text."""
    prefix = f"{' ' * width} {style.gutter('=')} {kind}: "
    hanging = "\n" + " " * (width + len(f" = {kind}: "))
    return prefix + hanging.join(terminal_safe(text).split("\n"))


def _summary(diags: Sequence[Diagnostic]) -> str:
    errors = sum(1 for d in diags if d.is_error)
    counts = ((errors, "error"), (len(diags) - errors, "warning"))
    return "plan: " + ", ".join(_plural(n, word) for n, word in counts if n)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


# --- short form ----------------------------------------------------------------------------


def _short_line(diag: Diagnostic) -> str:
    location = f"{diag.primary.span.location()}: " if diag.primary else ""
    hint = f" (help: {diag.help})" if diag.help is not None else ""
    return terminal_safe(f"{location}{diag.severity.value}[{diag.code}]: {diag.message}{hint}",
                         MAX_SHOWN_TEXT * 2, newlines=False)


# --- JSON form -----------------------------------------------------------------------------


def _diagnostic_json(diag: Diagnostic) -> dict[str, JSONValue]:
    notes: list[JSONValue] = list(diag.notes)
    secondary: list[JSONValue] = [_label_json(label) for label in diag.secondary]
    return {
        "code": diag.code,
        "severity": diag.severity.value,
        "message": diag.message,
        "help": diag.help,
        "notes": notes,
        "primary": _label_json(diag.primary) if diag.primary else None,
        "secondary": secondary,
    }


def _label_json(label: Label) -> dict[str, JSONValue]:
    span = label.span
    line, column = span.file.line_col(span.start)
    end_line, end_column = span.file.line_col(span.end)
    return {
        "file": span.file.path,
        "line": line,
        "column": column,
        "end_line": end_line,
        "end_column": end_column,
        "label": label.text,
    }
