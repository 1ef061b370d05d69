"""`plan explain CODE`: the page of a diagnostic code, as `rustc --explain` prints one.

Contract: the pages are `docs/errors/<CODE>.md`, shipped in the package as `planc.errors`
(package data), so an installed `plan` explains without a checkout. `normalise` accepts a code
in any case and with its leading zeros left off (`e302` → `E0302`). `page(code)` is the page's
text, or None for a code outside the catalogue (`diagnostics.CODES`) or a page that did not ship;
`closest(text)` is the catalogue's nearest code, for the did-you-mean.
"""

from __future__ import annotations

import difflib
import re
from importlib import resources

from .diagnostics import CODES

_CODE = re.compile(r"([EW])0*(\d{1,4})")
PHYSICS = "docs/physics.md"  # the physics reference, shipped as the package planc.docs


def normalise(text: str) -> str:
    """`e302`, `E0302` and ` E0302 ` all name `E0302`; anything else comes back upper-cased."""
    text = text.strip().upper()
    match = _CODE.fullmatch(text)
    return f"{match.group(1)}{int(match.group(2)):04d}" if match else text


def page(code: str) -> str | None:
    if code not in CODES:
        return None
    try:
        return resources.files("planc.errors").joinpath(f"{code}.md").read_text(encoding="utf-8")
    except (OSError, ModuleNotFoundError):
        return None


def physics(section: str | None) -> str | None:
    """docs/physics.md, shipped as `planc.docs`: the whole document, or the section whose heading
    starts with `section` (`5.4`, or `5` for a chapter with its subsections); None if none does."""
    try:
        text = resources.files("planc.docs").joinpath(PHYSICS.rpartition("/")[2]).read_text(encoding="utf-8")
    except (OSError, ModuleNotFoundError):
        return None
    if section is None:
        return text
    heads = [(m.start(), len(m.group(1)), m.group(2)) for m in re.finditer(r"^(#{2,3}) (\d+(?:\.\d+)?) ", text, re.M)]
    for k, (start, level, number) in enumerate(heads):
        if number == section.strip():
            # a section runs to the next heading of its level or above (a chapter keeps its subsections)
            end = next((s for s, lv, _ in heads[k + 1:] if lv <= level), len(text))
            body = text.index("\n", start) + 1
            nxt = re.search(r"^## ", text[body:end], re.M)  # and never past the next chapter
            return text[start:end if nxt is None else body + nxt.start()]
    return None


def closest(text: str) -> str | None:
    """The catalogue code nearest to `text`: the same characters in another order (two digits
    swapped), else by spelling, else the nearest number."""
    match = _CODE.fullmatch(text)
    number = int(match.group(2)) if match else None

    def nearest(codes: list[str]) -> str | None:
        if not codes:
            return None
        return min(codes, key=lambda c: (abs(int(c[1:]) - number), c)) if number is not None else codes[0]

    anagrams = [c for c in sorted(CODES) if sorted(c) == sorted(text)]
    return (nearest(anagrams) or nearest(difflib.get_close_matches(text, sorted(CODES), n=3, cutoff=0.6))
            or (nearest(sorted(CODES)) if number is not None else None))


def listing() -> str:
    """Every code with its severity and title, one a line."""
    return "".join(f"{c.code}  {c.severity.value:<7}  {c.title}\n" for c in sorted(CODES.values(), key=lambda c: c.code))
