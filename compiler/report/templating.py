"""The Jinja environment both text formats render with.

Contract: `environment(**options)` is a strict Jinja2 environment (`StrictUndefined`, block
trimming, trailing newline kept) whose templates come from the package (`planc.templates`),
never from the file system around the plan, with `options` (autoescaping) on top. Compiled
templates are kept with Jinja's own bytecode cache in the compiler's private cache directory
(`cachedir.py`), so a compile does not re-compile the design template every time; Jinja checks
each entry against the template's source, and without a private directory nothing is cached.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import jinja2

from ..cachedir import cache_directory


def template_source(name: str) -> str:
    return resources.files("planc.templates").joinpath(name).read_text(encoding="utf-8")


def environment(**options: Any) -> jinja2.Environment:
    directory = cache_directory()
    return jinja2.Environment(
        loader=jinja2.FunctionLoader(template_source),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        bytecode_cache=jinja2.FileSystemBytecodeCache(str(directory), "jinja-%s.cache") if directory else None,
        **options,
    )
