"""The compiler's private cache directory, shared by the parse cache and the template cache.

Contract: `cache_directory()` is `$PLAN_CACHE_DIR`, else `$XDG_CACHE_HOME/planc`, else
`~/.cache/planc`, created with mode 0700 — or None when `PLAN_NO_CACHE=1`, when it cannot be
created, or when it is not private. What is cached there runs as code when loaded (pickled ASTs,
compiled templates), so the directory is trusted only as Python trusts `__pycache__`: it must
belong to the current user and be writable by nobody else.
"""

from __future__ import annotations

import functools
import os
import stat
from pathlib import Path


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
    if not hasattr(os, "getuid") or info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None
    return path
