"""The names people give a catalog model or accelerator, read as the catalog's stem.

Contract
- `model_stem(name, stems)`: the stem itself, or a Hugging Face id or repository name of it
  (`meta-llama/Meta-Llama-3.1-8B-Instruct`, `mistralai/Mixtral-8x7B-Instruct-v0.1`: the name after
  the owner, without `Meta-` and the chat or instruct suffixes, which change no shape); else the
  name as given, lower-cased.
- `accelerator_stem(name, stems)`: the stem itself, or its name with spaces or underscores for
  hyphens, the vendor before it, its memory where the catalog has one part of that name
  (`H200 141GB`), its board named (`H200 SXM`, `A100-SXM4-80GB`, `h100_sxm5`): each reading of
  the name, then each reading of those, the first that is a stem; else the name as given,
  normalised. A family named alone where the catalog has several parts of it (`A100`: 40 or
  80 GB; `H100`: SXM or PCIe) is read as none of them.
- Pure functions of a string and the catalog's stems. What they return is a stem or a name that
  is not one, which the caller refuses (`plan validate` as a row problem, `plan init` as an
  error): nothing a user writes reaches a plan's text unless it is a stem.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

# a model's name as its Hugging Face repository spells it, less what does not change its shapes
_MODEL_NOISE = re.compile(r"^(meta-)|(-instruct|-chat|-hf|-base|-it|-v0\.[0-9])+$")
_ACCELERATOR_READINGS: tuple[Callable[[str], str], ...] = (
    lambda n: re.sub(r"^(nvidia|amd-instinct|amd|intel|google)-", "", n),  # the vendor
    lambda n: re.sub(r"-(\d+)-gb\b", r"-\1gb", n),  # `80 GB`
    lambda n: re.sub(r"-\d+gb$", "", n),  # the memory of the one part of that name
    lambda n: re.sub(r"-sxm\d", "-sxm", n),  # SXM5 is the SXM board
    lambda n: re.sub(r"-sxm\d?", "", n),  # the board of the one part of that name
)


def model_stem(name: str, stems: Iterable[str]) -> str:
    name = name.strip().lower()
    stems = set(stems)
    if name in stems:
        return name
    bare = _MODEL_NOISE.sub("", name.rsplit("/", 1)[-1])
    return bare if bare in stems else name


def accelerator_stem(name: str, stems: Iterable[str]) -> str:
    stems = set(stems)
    readings = [re.sub(r"[\s_]+", "-", name.strip().lower())]
    for change in _ACCELERATOR_READINGS:
        readings += [r for r in map(change, readings) if r not in readings]
    return next((r for r in readings if r in stems), readings[0])
