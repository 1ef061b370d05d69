"""Reading a Hugging Face `config.json` for `plan import-hf`: the file (never more than the
compiler's size limit, never the network), its JSON (integers kept exact), and the span of every
top-level key and value, so that each diagnostic points at the very text (contract in
`hf_import.py`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import diagnostics as dx
from .source import LoadProblem, SourceFile, Span, read_source

_WHITESPACE = " \t\n\r"


_LOAD_CODES = {
    LoadProblem.MISSING: dx.FILE_MISSING,
    LoadProblem.DIRECTORY: dx.FILE_IS_DIRECTORY,
    LoadProblem.NOT_UTF8: dx.FILE_NOT_UTF8,
    LoadProblem.UNREADABLE: dx.FILE_UNREADABLE,
    LoadProblem.TOO_LARGE: dx.FILE_TOO_LARGE,
    LoadProblem.NOT_REGULAR: dx.FILE_NOT_REGULAR,
}


_LOAD_HELP = {
    LoadProblem.MISSING: "check the path; `plan import-hf` reads a local config.json and never the network "
                         "(download it first, e.g. `huggingface-cli download REPO config.json`)",
    LoadProblem.DIRECTORY: "name the config.json inside it: `DIR/config.json`",
    LoadProblem.NOT_UTF8: "save the file as UTF-8",
    LoadProblem.UNREADABLE: "check the file's permissions",
    LoadProblem.TOO_LARGE: "a config.json is a few kilobytes; is this the right file?",
    LoadProblem.NOT_REGULAR: "save the config to a file first and name that file",
}


def load_config(path: Path, shown: str, sink: dx.Sink) -> SourceFile | None:
    file, problem, detail = read_source(path, shown)
    if problem is LoadProblem.EMPTY:
        return file  # an empty file is not JSON: E0601 from the parser
    if problem is not None:
        sink.add(_LOAD_CODES[problem].at(None, path=shown, detail=detail, help=_LOAD_HELP[problem]))
        return None
    return file


def _parse_int(text: str) -> int | float:
    """A JSON integer; one too long to convert (Python refuses more than 4,300 digits, and no
    config field has more than 20) is read as a float, so that it is reported as a bad value
    (`Infinity`) on its field rather than raising."""
    return int(text) if len(text) <= 100 else float(text)


_DECODER = json.JSONDecoder(parse_int=_parse_int)


def parse_config(file: SourceFile, shown: str, sink: dx.Sink) -> dict[str, Any] | None:
    try:
        data = _DECODER.decode(file.text)
    except json.JSONDecodeError as exc:
        end = min(exc.pos + 1, len(file.text))
        before = file.text[: exc.pos].rstrip(_WHITESPACE)
        if before.endswith(",") and file.text[exc.pos : exc.pos + 1] in ("}", "]"):
            comma = len(before) - 1
            sink.add(dx.HF_NOT_JSON.at(
                Span(file, exc.pos, end), "expected another entry", path=shown, detail=exc.msg.lower(),
                secondary=[dx.Label(Span(file, comma, comma + 1), "after this trailing comma")],
                help="remove the comma after the last entry: JSON allows no trailing comma",
            ))
        else:
            sink.add(dx.HF_NOT_JSON.at(
                Span(file, exc.pos, end), "here", path=shown, detail=exc.msg.lower(),
                help="config.json is strict JSON: double-quoted names and strings, no comments, "
                     "no trailing commas",
            ))
        return None
    except RecursionError:
        sink.add(dx.HF_NOT_JSON.at(Span(file, 0, 0), "", path=shown, detail="nested too deeply",
                                   help="a config.json is an object of names and values a few levels deep; "
                                        "is this the right file?"))
        return None
    if not isinstance(data, dict):
        start = skip_ws(file.text, 0)
        sink.add(dx.HF_BAD_VALUE.at(
            Span(file, start, min(start + 1, len(file.text))), "the top level", field=shown,
            expected="a JSON object", found=describe_value(data),
            help="a Hugging Face config.json is one object: `{\"model_type\": \"llama\", ...}`",
        ))
        return None
    return data


@dataclass(frozen=True)
class Entry:
    key: tuple[int, int]
    value: tuple[int, int]


def skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WHITESPACE:
        i += 1
    return i


def top_level_spans(text: str) -> dict[str, Entry]:
    """Where each key of the (valid) top-level object and its value are; the last duplicate wins,
    as in `json.loads`."""
    decoder = _DECODER
    entries: dict[str, Entry] = {}
    i = skip_ws(text, 0) + 1  # past `{`
    i = skip_ws(text, i)
    while i < len(text) and text[i] == '"':
        key, key_end = decoder.raw_decode(text, i)
        colon = skip_ws(text, key_end)
        value_start = skip_ws(text, colon + 1)
        _, value_end = decoder.raw_decode(text, value_start)
        entries[key] = Entry((i, key_end), (value_start, value_end))
        i = skip_ws(text, value_end)
        if i < len(text) and text[i] == ",":
            i = skip_ws(text, i + 1)
    return entries


def describe_value(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, str):
        return f"the string `{json.dumps(value)}`" if len(value) <= 20 else "a string"
    text = json.dumps(value)
    return f"`{text if len(text) <= 24 else text[:21] + '...'}`"


def plan_string(text: str) -> str:
    """A plan string literal."""
    clean = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ").replace("\r", " ")
    return f'"{clean}"'
