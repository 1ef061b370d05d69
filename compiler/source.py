"""Source files and spans: the bottom layer every other stage stands on.

Contract
- `SourceFile` holds a file's path (as the user or an import named it), its text, and
  precomputed line starts; `line_col(offset)` is 1-based and counts columns in characters.
- `Span(file, start, end)` is a half-open character range in one `SourceFile`. Every AST
  node and every diagnostic label carries one; line and column are computed only when a
  span is rendered.
- `read_source(path)` never raises: it returns `(SourceFile | None, problem)` where `problem`
  is one of the `LoadProblem` values (missing, directory, not UTF-8, empty, unreadable, too
  large, not a regular file), so the caller turns it into a diagnostic with its own code. It
  never blocks and never reads more than `MAX_FILE_BYTES` (+1): a pipe or FIFO named on the
  command line is refused (`-` reads standard input instead), `/dev/zero` is "too large". For a
  file that is not UTF-8 the returned `SourceFile` holds the text decoded with replacement
  characters and `bad_offset` the character offset of the first bad byte, so the diagnostic
  has a line and column. A carriage return not followed by a line feed (old Mac line endings)
  is read as a newline, so CR-only files have lines; CRLF is kept as it is.
- `source_from_text(text, path)` applies the same checks to text already in memory (an
  editor's unsaved buffer, for the language server).
"""

from __future__ import annotations

import bisect
import enum
import os
import re
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, eq=False)
class SourceFile:
    """One file's text. Identity equality: two loads of one path are two files."""

    path: str
    text: str = field(repr=False)
    is_stdlib: bool = False
    line_starts: tuple[int, ...] = field(init=False, repr=False)
    bad_offset: int | None = field(default=None, init=False, repr=False, compare=False)

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
    TOO_LARGE = "too-large"
    NOT_REGULAR = "not-regular"


MAX_FILE_BYTES = 1 << 20
"""The largest plan (or config.json) read: 1 MiB, ten times the whole stdlib. Reading stops one
byte past it, so an endless device is refused instead of filling memory."""
STDIN = "-"
"""The path that names standard input."""
_LONE_CR = re.compile(r"\r(?!\n)")


def read_source(path: Path, shown_as: str, *, is_stdlib: bool = False) -> tuple[SourceFile | None, LoadProblem | None, str]:
    """Read a plan file. Returns (file, problem, detail); exactly one of file/problem is set,
    except for EMPTY and NOT_UTF8, which come with the file (see the module docstring)."""
    try:
        if str(path) == STDIN:
            raw = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
        else:
            info = os.stat(path)
            if stat.S_ISDIR(info.st_mode):
                return None, LoadProblem.DIRECTORY, ""
            if stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode):
                return None, LoadProblem.NOT_REGULAR, "a pipe or socket"
            if stat.S_ISREG(info.st_mode) and info.st_size <= MAX_FILE_BYTES:
                raw = path.read_bytes()
            else:  # too large, or a device whose size is not known (`/dev/zero`): read no more than needed
                with open(path, "rb") as handle:
                    raw = handle.read(MAX_FILE_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        return None, LoadProblem.MISSING, ""
    except (OSError, ValueError) as exc:
        return None, LoadProblem.UNREADABLE, getattr(exc, "strerror", None) or str(exc)
    if len(raw) > MAX_FILE_BYTES:  # located at its start (an empty stand-in: the text is not kept)
        return SourceFile(shown_as, "", is_stdlib), LoadProblem.TOO_LARGE, f"more than {MAX_FILE_BYTES:,} bytes"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        shown = SourceFile(shown_as, _LONE_CR.sub("\n", raw.decode("utf-8", errors="replace")), is_stdlib)
        offset = len(raw[: exc.start].decode("utf-8"))
        object.__setattr__(shown, "bad_offset", offset)
        return shown, LoadProblem.NOT_UTF8, f"byte 0x{raw[exc.start]:02x} at offset {exc.start}"
    return source_from_text(text, shown_as, is_stdlib=is_stdlib)


def source_from_text(text: str, shown_as: str, *, is_stdlib: bool = False) -> tuple[SourceFile | None, LoadProblem | None, str]:
    """A plan's text that is already in memory (an editor's unsaved buffer), checked as
    `read_source` checks a file's: the same size limit, BOM and line endings, and emptiness."""
    if len(text.encode("utf-8", errors="surrogatepass")) > MAX_FILE_BYTES:
        return SourceFile(shown_as, "", is_stdlib), LoadProblem.TOO_LARGE, f"more than {MAX_FILE_BYTES:,} bytes"
    if text.startswith("\ufeff"):
        text = text[1:]
    text = _LONE_CR.sub("\n", text)
    if not text.strip():
        return SourceFile(shown_as, text, is_stdlib), LoadProblem.EMPTY, ""
    return SourceFile(shown_as, text, is_stdlib), None, ""
