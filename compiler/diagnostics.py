"""Diagnostics as data: every problem the compiler finds, with a stable code and spans.

Contract
- A `Code` is one kind of problem: a stable identifier (`E0201`), a severity, a short title
  (used for `docs/errors/E0201.md`) and a message template with named fields. The table
  `CODES` at the bottom of this module is the whole catalogue; a test checks that every code
  has its documentation page.
- `Diagnostic` is an immutable record: code, message, primary label (span + text), secondary
  labels (which may point into the stdlib), and an optional `help` line and `note` lines.
- Passes never raise for user errors: they append to a `Sink` and carry on, so a run reports
  many problems; the CLI picks the exit code from `Sink.has_errors`.
- Rendering lives in `compiler.render_diagnostics` (human, one-line and JSON forms).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .source import Span


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Label:
    span: Span
    text: str = ""


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
    severity: Severity
    message: str
    primary: Label | None
    secondary: tuple[Label, ...] = ()
    help: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def sort_key(self) -> tuple[Any, ...]:
        if self.primary is None:
            return ("", 0, self.code)
        return (self.primary.span.file.path, self.primary.span.start, self.code)


@dataclass(frozen=True, slots=True)
class Code:
    code: str
    title: str
    template: str
    severity: Severity = Severity.ERROR

    def at(
        self,
        span: Span | None,
        label: str = "",
        *,
        help: str | None = None,
        secondary: Iterable[Label] = (),
        notes: Iterable[str] = (),
        **fields: Any,
    ) -> Diagnostic:
        """Build a diagnostic of this code with its primary label on `span`."""
        return Diagnostic(
            code=self.code,
            severity=self.severity,
            message=self.template.format(**fields),
            primary=Label(span, label) if span is not None else None,
            secondary=tuple(secondary),
            help=help,
            notes=tuple(notes),
        )


@dataclass
class Sink:
    """Collects diagnostics from every pass."""

    items: list[Diagnostic] = field(default_factory=list)

    def add(self, diagnostic: Diagnostic) -> None:
        self.items.append(diagnostic)

    def extend(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.items.extend(diagnostics)

    @property
    def has_errors(self) -> bool:
        return any(d.is_error for d in self.items)

    def sorted(self) -> list[Diagnostic]:
        seen: set[tuple[Any, ...]] = set()
        unique = []
        for d in sorted(self.items, key=Diagnostic.sort_key):
            key = (d.sort_key(), d.message)
            if key not in seen:
                seen.add(key)
                unique.append(d)
        return unique


W = Severity.WARNING

# --- the catalogue -------------------------------------------------------------------------
# Input files
FILE_MISSING = Code("E0001", "file not found", "cannot read `{path}`: no such file")
FILE_IS_DIRECTORY = Code("E0002", "path is a directory", "`{path}` is a directory, not a plan file")
FILE_NOT_UTF8 = Code("E0003", "file is not UTF-8", "`{path}` is not valid UTF-8 ({detail})")
FILE_EMPTY = Code("E0004", "empty plan", "`{path}` contains no declarations")
FILE_UNREADABLE = Code("E0005", "file cannot be read", "cannot read `{path}`: {detail}")
FILE_TOO_LARGE = Code("E0006", "file too large", "`{path}` is too large to be a plan ({detail})")
FILE_NOT_REGULAR = Code("E0007", "not a regular file", "`{path}` is not a regular file ({detail})")
# Syntax
UNEXPECTED_TOKEN = Code("E0101", "unexpected token", "expected {expected}, found {found}")
UNEXPECTED_EOF = Code("E0102", "unexpected end of file", "unexpected end of file: {expected}")
UNTERMINATED_STRING = Code("E0103", "unterminated string", "unterminated string literal")
BAD_NUMBER = Code("E0104", "malformed number", "malformed number `{text}`")
UNEXPECTED_CHARACTER = Code("E0105", "unexpected character", "unexpected character `{char}`")
NUMBER_TOO_LONG = Code("E0106", "number literal too long", "a number literal may have at most {limit} digits")
EXPONENT_TOO_LARGE = Code("E0107", "exponent too large", "a number's exponent may be at most {limit} in magnitude")
STRING_TOO_LONG = Code("E0108", "string too long", "a string may be at most {limit:,} characters long")
LINE_TOO_LONG = Code("E0109", "line too long", "line {line} is longer than {limit:,} characters")
BAD_HOLE = Code("E0111", "malformed hole", "`{text}` in a finding's sentence is not a quantity")
TOO_DEEP = Code("E0110", "nested too deeply", "the syntax is nested more than {limit} levels deep")
# Names, kinds and imports
UNKNOWN_NAME = Code("E0201", "unknown name", "unknown name `{name}`")
DUPLICATE_NAME = Code("E0202", "duplicate declaration", "`{name}` is declared more than once")
UNKNOWN_FIELD = Code("E0203", "unknown field", "{owner} has no field `{name}`")
MISSING_INPUT = Code("E0204", "missing required input", "{owner} needs a value for `{name}`")
IMPORT_NOT_FOUND = Code("E0205", "import not found", "cannot find plan `{path}` to import")
IMPORT_OUTSIDE = Code("E0206", "import outside allowed roots", "import `{path}` leaves the allowed directories")
IMPORT_CYCLE = Code("E0207", "import cycle", "import cycle: {cycle}")
NOT_A_KIND = Code("E0208", "not a kind", "`{name}` is not a kind")
IMPORT_TOO_DEEP = Code("E0210", "imports nested too deeply", "imports are nested more than {limit} deep")
BAD_FIGURE = Code("E0212", "bad figure declaration", "{message}")
RESTATED = Code("W0211", "restated formula", "`{name}` restates the formula of `{other}` in kind `{kind}`", W)
UNUSED = Code("W0213", "unused derived quantity", "`{name}` in kind `{kind}` is computed, but nothing uses it", W)
BAD_BASE = Code("E0209", "bad base instance", "`{name}` cannot be the base of a `{kind}`: {reason}")
# Types and units
UNKNOWN_UNIT = Code("E0301", "unknown unit", "unknown unit `{unit}`")
DIMENSION_MISMATCH = Code("E0302", "dimension mismatch", "{what}: {left} vs {right}")
WRONG_TYPE = Code("E0303", "wrong type", "expected {expected}, found {found}")
BAD_CALL = Code("E0304", "bad function call", "{message}")
MISSING_KEY = Code("E0305", "missing map entry", "`{owner}` has no entry for `{key}`")
BAD_RANGE = Code("E0306", "bad range", "{message}")
# Evaluation
CYCLE = Code("E0401", "cyclic definition", "cyclic definition: {cycle}")
DIVISION_BY_ZERO = Code("E0402", "division by zero", "division by zero while evaluating `{name}`")
OVERFLOW = Code("E0403", "numeric overflow", "`{name}` overflows ({detail})")
IMPOSSIBLE_VALUE = Code("E0404", "physically impossible value", "{message}")
NOT_A_NUMBER = Code("E0405", "undefined value", "`{name}` has no defined value ({detail})")
NO_FEASIBLE_VALUE = Code("E0407", "no feasible value", "no value of `{var}` meets the condition of `{name}` ({detail})")
UNDERFLOW = Code("E0406", "numeric underflow", "`{name}` underflows ({detail})")
INFEASIBLE_PLAN = Code("E0408", "infeasible plan", "{message}")
NOT_WHOLE = Code("E0409", "not a whole number", "`{name}` takes a whole number{what}, not {value}")
# Questions
CHECK_NOT_COMPARISON = Code("E0502", "check is not a comparison", "a `check` needs a comparison, found {found}")
QUESTION_INVALID = Code("E0503", "question cannot be evaluated", "{message}")
UNDERDETERMINED = Code("E0504", "under-determined question", "`{name}` is not determined by this question")
QUESTION_TOO_LARGE = Code("E0506", "question too large", "{count} points to evaluate (limit {limit})")
INFEASIBLE = Code("W0505", "infeasible question", "no value of `{unknown}` satisfies the constraint: {detail}", W)
ADVICE = Code("W0407", "physics advice", "{message}", W)

# Importing Hugging Face config.json files (`plan import-hf`)
HF_NOT_JSON = Code("E0601", "config is not valid JSON", "`{path}` is not valid JSON: {detail}")
HF_MISSING_FIELD = Code("E0602", "missing config field", "`{path}` gives no value for `{field}`: {needed}")
HF_CONTRADICTION = Code("E0603", "contradictory config fields", "contradictory fields: {detail}")
HF_UNSUPPORTED = Code("E0604", "unsupported architecture", "unsupported architecture: {what}")
HF_BAD_VALUE = Code("E0605", "bad config value", "`{field}` must be {expected}, found {found}")

CODES: dict[str, Code] = {c.code: c for c in list(globals().values()) if isinstance(c, Code)}
