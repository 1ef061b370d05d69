"""The compiler's private cache: one directory and one signed-entry format, shared by the parse
cache, the parser's tables and the template cache.

Contract
- `cache_directory()` is `$PLAN_CACHE_DIR`, else `$XDG_CACHE_HOME/planc`, else `~/.cache/planc`,
  created with mode 0700 — or None when `PLAN_NO_CACHE=1`, when it cannot be created, or when it
  is not private. It is trusted only as Python trusts `__pycache__`: it must belong to the
  current user and be writable by nobody else. Nothing is ever cached anywhere else (in
  particular not in the shared temp directory, where another user could plant a file).
- `read_entry(name) -> bytes | None` and `write_entry(name, payload)` store opaque bytes under a
  file name in that directory. Every entry carries a version header and an HMAC-SHA256 of its
  name and payload under a per-user random key (`key`, mode 0600, in the same directory), and
  `read_entry` verifies both before it returns a byte: a truncated, bit-flipped, foreign or
  planted file is a miss (None), never an exception and never a payload.
- `loads_restricted(payload, allowed)` unpickles with only the named classes constructible, so
  even a payload that passed the signature cannot run code: the second of two locks.
- Every failure to read or write (read-only or full directory, a file in the way, a race with
  another process) is silent: the cache only ever saves time.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import io
import os
import pickle
import secrets
import stat
import tempfile
from collections.abc import Collection
from pathlib import Path
from typing import Any

_MAGIC = b"planc-cache/2\n"
_DIGEST = hashlib.sha256().digest_size
_KEY_BYTES = 32


@functools.cache
def cache_directory() -> Path | None:
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
    if not _private(info):
        return None
    return path


def _private(info: os.stat_result) -> bool:
    return hasattr(os, "getuid") and info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


@functools.cache
def _key(directory: Path) -> bytes | None:
    """The directory's signing key: read if it is ours and private, else created; None if neither."""
    path = directory / "key"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        try:
            with open(path, "rb") as handle:
                info = os.fstat(handle.fileno())
                key = handle.read(_KEY_BYTES + 1)
        except OSError:
            return None
        if not stat.S_ISREG(info.st_mode) or not _private(info) or info.st_mode & (stat.S_IRGRP | stat.S_IROTH):
            return None
        return key if len(key) == _KEY_BYTES else None
    except OSError:
        return None
    key = secrets.token_bytes(_KEY_BYTES)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(key)
    except OSError:
        return None
    return key


def _signature(key: bytes, name: str, payload: bytes) -> bytes:
    return hmac.new(key, name.encode() + b"\0" + payload, hashlib.sha256).digest()


def read_entry(name: str) -> bytes | None:
    directory = cache_directory()
    key = _key(directory) if directory is not None else None
    if directory is None or key is None:
        return None
    try:
        with open(directory / name, "rb") as handle:
            blob = handle.read()
    except OSError:
        return None
    head = len(_MAGIC) + _DIGEST
    if len(blob) < head or not blob.startswith(_MAGIC):
        return None
    signature, payload = blob[len(_MAGIC):head], blob[head:]
    if not hmac.compare_digest(signature, _signature(key, name, payload)):
        return None
    return payload


def write_entry(name: str, payload: bytes) -> None:
    directory = cache_directory()
    key = _key(directory) if directory is not None else None
    if directory is None or key is None:
        return
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(_MAGIC + _signature(key, name, payload) + payload)
        os.replace(tmp, directory / name)
    except OSError:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


class _Restricted(pickle.Unpickler):
    def __init__(self, payload: bytes, allowed: Collection[tuple[str, str]]) -> None:
        super().__init__(io.BytesIO(payload))
        self._allowed = allowed

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self._allowed:
            raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a cache entry")
        return super().find_class(module, name)


def loads_restricted(payload: bytes, allowed: Collection[tuple[str, str]] = ()) -> Any:
    """The unpickled payload, or None if it names a class outside `allowed` or is damaged."""
    try:
        return _Restricted(payload, allowed).load()
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError, IndexError,
            KeyError, MemoryError, RecursionError, OverflowError, UnicodeDecodeError):
        return None
