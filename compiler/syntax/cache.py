"""A cache of parsed ASTs, so that the stdlib is not re-parsed on every compile.

Contract
- `load(file)` returns the AST of a file parsed before — same path, same text, same grammar,
  same compiler version — or None. `store(file, module)` records a parse that had no errors.
- Entries live in `$PLAN_CACHE_DIR`, else `$XDG_CACHE_HOME/planc`, else `~/.cache/planc`, in a
  directory created with mode 0700. Entries are pickles, which run code when loaded, so the cache
  is trusted only as Python trusts `__pycache__`: the directory must belong to the current user
  and be writable by nobody else, or it is not used. `PLAN_NO_CACHE=1` turns the cache off.
- Any failure to read or write is silent: the cache only ever saves time.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import stat
import tempfile
from importlib import resources
from pathlib import Path

from .. import __version__
from ..source import SourceFile
from . import ast


@functools.cache
def _directory() -> Path | None:
    if os.environ.get("PLAN_NO_CACHE") == "1":
        return None
    root = os.environ.get("PLAN_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "planc")
    path = Path(root)
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.stat()
    except OSError:
        return None
    if not hasattr(os, "getuid") or info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None
    return path


@functools.cache
def _grammar_digest() -> str:
    text = resources.files("planc.grammar").joinpath("plan.lark").read_text(encoding="utf-8")
    return hashlib.sha256((__version__ + "\0" + text).encode()).hexdigest()


def _entry(file: SourceFile) -> Path | None:
    directory = _directory()
    if directory is None:
        return None
    key = hashlib.sha256("\0".join((_grammar_digest(), file.path, str(file.is_stdlib), file.text)).encode())
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
