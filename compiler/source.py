"""Source files and spans: the bottom layer every other stage stands on.

Contract
- `SourceFile` holds a file's path (as the user or an import named it), its text, and
  precomputed line starts; `line_col(offset)` is 1-based and counts columns in characters.
- `Span(file, start, end)` is a half-open character range in one `SourceFile`. Every AST
  node and every diagnostic label carries one; line and column are computed only when a
  span is rendered.
- `read_source(path)` never raises: it returns `(SourceFile | None, problem)` where `problem`
  is one of the `LoadProblem` values (missing, directory, not UTF-8, empty, unreadable), so the
  caller turns it into a diagnostic with its own code.
"""

from __future__ import annotations

import bisect
import enum
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, eq=False)
class SourceFile:
    """One file's text. Identity equality: two loads of one path are two files."""

    path: str
    text: str = field(repr=False)
    is_stdlib: bool = False
    line_starts: tuple[int, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        starts, at = [0], self.text.find("\n")
        while at >= 0:
            starts.append(at + 1)
            at = self.text.find("\n", at + 1)
        object.__setattr__(self, "line_starts", tuple(starts))

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self.line_starts, offset) - 1
        return line + 1, offset - self.line_starts[line] + 1

    def line_text(self, line: int) -> str:
        """The text of a 1-based line, without its newline."""
        start = self.line_starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start:] if end < 0 else self.text[start:end]

    @property
    def line_count(self) -> int:
        return len(self.line_starts)


@dataclass(frozen=True, slots=True)
class Span:
    file: SourceFile
    start: int
    end: int

    def __repr__(self) -> str:
        return f"Span({self.file.path}:{self.start}-{self.end})"

    def __reduce__(self) -> tuple[type[Span], tuple[SourceFile, int, int]]:
        # pickled ASTs hold thousands of spans; the constructor is much faster than the
        # generic state restore of a frozen, slotted dataclass
        return Span, (self.file, self.start, self.end)

    @property
    def line(self) -> int:
        return self.file.line_col(self.start)[0]

    def location(self) -> str:
        line, col = self.file.line_col(self.start)
        return f"{self.file.path}:{line}:{col}"

    @property
    def text(self) -> str:
        return self.file.text[self.start : self.end]

    def to(self, other: Span) -> Span:
        """The span from the start of this one to the end of `other` (same file)."""
        return Span(self.file, min(self.start, other.start), max(self.end, other.end))


class LoadProblem(enum.Enum):
    MISSING = "missing"
    DIRECTORY = "directory"
    NOT_UTF8 = "not-utf8"
    EMPTY = "empty"
    UNREADABLE = "unreadable"


def read_source(path: Path, shown_as: str, *, is_stdlib: bool = False) -> tuple[SourceFile | None, LoadProblem | None, str]:
    """Read a plan file. Returns (file, problem, detail); exactly one of file/problem is set."""
    try:
        if path.is_dir():
            return None, LoadProblem.DIRECTORY, ""
        if not path.exists():
            return None, LoadProblem.MISSING, ""
        raw = path.read_bytes()
    except OSError as exc:
        return None, LoadProblem.UNREADABLE, exc.strerror or str(exc)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, LoadProblem.NOT_UTF8, f"byte 0x{raw[exc.start]:02x} at offset {exc.start}"
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        return SourceFile(shown_as, text, is_stdlib), LoadProblem.EMPTY, ""
    return SourceFile(shown_as, text, is_stdlib), None, ""
