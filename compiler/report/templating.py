"""The Jinja environment both text formats render with.

Contract: `environment(**options)` is a strict Jinja2 environment (`StrictUndefined`, block
trimming, trailing newline kept) whose templates come from the package (`planc.templates`),
never from the file system around the plan, with `options` (autoescaping) on top. Compiled
templates are kept as signed entries of the compiler's private cache (`cachedir.py`), so a compile
does not re-compile the design template every time. Jinja's bytecode is marshalled code, run when
loaded: an entry is used only when its HMAC verifies, Jinja checks it against the template's
source, and a damaged entry or an unwritable directory is a miss, never an error.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import jinja2

from ..cachedir import read_entry, write_entry
from ..semantics import ir


def template_source(name: str) -> str:
    return resources.files("planc.templates").joinpath(name).read_text(encoding="utf-8")


class _SignedBytecodeCache(jinja2.BytecodeCache):
    """Entries are named by the template (Jinja's key, which covers its source) and by the
    environment's options (`tag`): the compiled code depends on them too (a `finalize` function
    is called from it), so the HTML and Markdown environments never share an entry, and an option
    added later never runs with code compiled without it."""

    def __init__(self, tag: str = "") -> None:
        self.tag = tag

    def _name(self, bucket: jinja2.bccache.Bucket) -> str:
        return f"jinja-{bucket.key}{self.tag}.cache"

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        payload = read_entry(self._name(bucket))
        if payload is not None:
            try:
                bucket.bytecode_from_string(payload)
            except Exception:  # a signed entry of another Python or Jinja: compile afresh
                bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        write_entry(self._name(bucket), bucket.bytecode_to_string())


def _options_tag(options: dict[str, Any]) -> str:
    """A short digest of the options that shape the compiled code (functions by their names)."""
    import hashlib

    shown = sorted((key, getattr(value, "__qualname__", repr(value))) for key, value in options.items())
    return "-" + hashlib.sha256(repr(shown).encode()).hexdigest()[:12] if options else ""


def environment(**options: Any) -> jinja2.Environment:
    """The Jinja environment of every report format, with the filters they share (`shown`: a
    quantity's id as a reader sees it, `ir.shown`)."""
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(template_source),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        bytecode_cache=_SignedBytecodeCache(_options_tag(options)),
        **options,
    )
    env.filters["shown"] = ir.shown
    return env
