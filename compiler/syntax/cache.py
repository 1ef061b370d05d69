"""A cache of parsed ASTs, so that the stdlib is not re-parsed on every compile.

Contract
- `load(file)` returns the AST of a file parsed before — same path, same text, same grammar,
  same compiler version, same sources of the syntax layer and of `source.py` (the classes
  that are pickled and the code that builds them) — or None. `store(file, module)` records a parse that had no errors.
- One entry per file path (and compiler build): a new text of the same file replaces the
  entry, so the cache grows with the number of files compiled, not with the number of edits.
- Entries live in the compiler's private cache directory (`cachedir.py`: `$PLAN_CACHE_DIR`, else
  `~/.cache/planc`; used only if it belongs to the current user and nobody else may write it, since
  entries are pickles, which run code when loaded). `PLAN_NO_CACHE=1` turns the cache off.
- Any failure to read or write is silent: the cache only ever saves time.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import tempfile
from importlib import resources
from pathlib import Path

from .. import __version__
from ..cachedir import cache_directory
from ..source import SourceFile
from . import ast


@functools.cache
def _grammar_digest() -> str:
    digest = hashlib.sha256(__version__.encode())
    digest.update(resources.files("planc.grammar").joinpath("plan.lark").read_bytes())
    here = Path(__file__).parent
    for source in [*sorted(here.glob("*.py")), here.parent / "source.py"]:  # changed classes invalidate pickles
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()


def _entry(file: SourceFile) -> Path | None:
    directory = cache_directory()
    if directory is None:
        return None
    # the text is not part of the key: `load` compares it, and `store` replaces an older parse
    key = hashlib.sha256("\0".join((_grammar_digest(), file.path, str(file.is_stdlib))).encode())
    return directory / (key.hexdigest() + ".ast")


def load(file: SourceFile) -> ast.Module | None:
    entry = _entry(file)
    if entry is None:
        return None
    try:
        with entry.open("rb") as handle:
            module = pickle.load(handle)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        return None
    if not isinstance(module, ast.Module) or module.span.file.text != file.text:
        return None
    return module


def store(file: SourceFile, module: ast.Module) -> None:
    entry = _entry(file)
    if entry is None:
        return
    try:
        fd, tmp = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(module, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, entry)
    except (OSError, pickle.PicklingError, TypeError, RecursionError):
        try:
            os.unlink(tmp)
        except (OSError, UnboundLocalError):
            pass
