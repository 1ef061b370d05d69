"""A cache of parsed ASTs, so that the stdlib is not re-parsed on every compile.

Contract
- `load(file)` returns the AST of a file parsed before — same path, same text, same grammar,
  same compiler version, same sources of the syntax layer and of `source.py` (the classes
  that are pickled and the code that builds them) — or None. `store(file, module)` records a parse that had no errors.
- One entry per file path (and compiler build): a new text of the same file replaces the
  entry, so the cache grows with the number of files compiled, not with the number of edits.
- Entries are signed entries of the compiler's private cache (`cachedir.py`: a directory that
  belongs to the current user and nobody else may write, an HMAC verified before a byte is
  unpickled), and they are unpickled with only the AST's own classes (and `Fraction`)
  constructible, so a damaged or planted entry is a miss, never code run or a wrong AST.
  `PLAN_NO_CACHE=1` turns the cache off.
- Any failure to read or write is silent: the cache only ever saves time.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import pickle
from importlib import resources
from pathlib import Path

from .. import __version__, source
from ..cachedir import loads_restricted, read_entry, write_entry
from ..source import SourceFile
from . import ast


@functools.cache
def grammar_digest() -> str:
    digest = hashlib.sha256(__version__.encode())
    digest.update(resources.files("planc.grammar").joinpath("plan.lark").read_bytes())
    here = Path(__file__).parent
    for path in [*sorted(here.glob("*.py")), here.parent / "source.py"]:  # changed classes invalidate pickles
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@functools.cache
def _allowed() -> frozenset[tuple[str, str]]:
    """The classes an AST pickle may name: the AST's own, the source's, and exact fractions."""
    names = {("fractions", "Fraction")}
    for module in (ast, source):
        names |= {(module.__name__, name) for name, value in vars(module).items()
                  if inspect.isclass(value) and value.__module__ == module.__name__}
    return frozenset(names)


def _entry(file: SourceFile) -> str:
    # the text is not part of the key: `load` compares it, and `store` replaces an older parse
    key = hashlib.sha256("\0".join((grammar_digest(), file.path, str(file.is_stdlib))).encode())
    return key.hexdigest() + ".ast"


def load(file: SourceFile) -> ast.Module | None:
    payload = read_entry(_entry(file))
    if payload is None:
        return None
    module = loads_restricted(payload, _allowed())
    if not isinstance(module, ast.Module) or module.span.file.text != file.text:
        return None
    return module


def store(file: SourceFile, module: ast.Module) -> None:
    try:
        payload = pickle.dumps(module, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, RecursionError):
        return
    write_entry(_entry(file), payload)
