"""No cache ever runs code another user (or a damaged disk) put there.

Each test plants a hostile pickle or marshalled blob where one of the three caches (parse, parser
tables, templates) would look — including the shared temp directory where Lark's own cache used
to live — and shows it is never loaded: the marker file its unpickling would create stays absent,
and the compile still gives the right answer."""

from __future__ import annotations

import os
import pickle
import tempfile
from pathlib import Path

import pytest
from planc import cachedir
from planc.cachedir import cache_directory, read_entry, write_entry
from planc.source import SourceFile
from planc.syntax import cache, parser

TEXT = 'let a = 80 GiB "memory" source "datasheet"\ncheck a > 0 B\n'


class _Hostile:
    """Unpickling this creates the marker file: the stand-in for arbitrary code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.marker), "w"))


def _hostile(marker: Path) -> bytes:
    return pickle.dumps(_Hostile(marker))


@pytest.mark.parametrize("no_cache", ["1", ""])
def test_a_file_planted_where_lark_caches_is_never_loaded(
        no_cache: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache_dir: Path) -> None:
    from lark import Lark

    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    # Lark names its cache file from the grammar and options: let it create the file the old
    # parser setting (`cache=True`) would read, then replace it with a hostile pickle
    Lark.open_from_package("planc.grammar", "plan.lark", parser="lalr", propagate_positions=True,
                           maybe_placeholders=True, postlex=parser._Continuations(), cache=True)
    planted = list(shared.glob(".lark_*"))
    assert planted, "Lark wrote no cache file to plant over"
    marker = tmp_path / "pwned"
    for path in planted:
        path.write_bytes(path.read_bytes().split(b"\n", 1)[0] + b"\n" + _hostile(marker))  # header, then code
    monkeypatch.setenv("PLAN_NO_CACHE", no_cache)
    cache_directory.cache_clear()
    module, problems = parser.parse(SourceFile("t.plan", TEXT))
    assert module is not None and not problems
    assert not marker.exists()


def test_an_unsigned_parse_entry_is_a_miss(cache_dir: Path, tmp_path: Path) -> None:
    file = SourceFile("t.plan", TEXT)
    parser.parse(file)
    entry = cache_dir / cache._entry(file)
    assert entry.exists()
    marker = tmp_path / "pwned"
    entry.write_bytes(_hostile(marker))
    assert cache.load(file) is None
    assert not marker.exists()


def test_a_signed_entry_that_names_a_foreign_class_is_refused(cache_dir: Path, tmp_path: Path) -> None:
    # the second lock: even with the key (a stolen key, a bug), unpickling constructs AST classes only
    file = SourceFile("t.plan", TEXT)
    marker = tmp_path / "pwned"
    write_entry(cache._entry(file), _hostile(marker))
    assert read_entry(cache._entry(file)) is not None
    assert cache.load(file) is None
    assert not marker.exists()
    # and the parser's tables admit no class at all
    name = "lark-" + cache.grammar_digest() + ".tables"
    write_entry(name, _hostile(marker))
    module, problems = parser.parse(SourceFile("u.plan", TEXT))
    assert module is not None and not problems
    assert not marker.exists()


def test_every_truncation_and_bit_flip_of_an_entry_is_a_miss(cache_dir: Path) -> None:
    file = SourceFile("t.plan", TEXT)
    parser.parse(file)
    entry = cache_dir / cache._entry(file)
    good = entry.read_bytes()
    assert cache.load(file) is not None
    for cut in range(0, len(good), max(1, len(good) // 97)):
        entry.write_bytes(good[:cut])
        assert cache.load(file) is None
    for position in range(0, len(good), max(1, len(good) // 251)):
        for bit in (0, 3, 7):
            damaged = bytearray(good)
            damaged[position] ^= 1 << bit
            entry.write_bytes(bytes(damaged))
            assert cache.load(file) is None
    entry.write_bytes(good)
    assert cache.load(file) is not None


def test_a_key_others_can_read_disables_the_cache(cache_dir: Path) -> None:
    file = SourceFile("t.plan", TEXT)
    parser.parse(file)
    assert cache.load(file) is not None
    os.chmod(cache_dir / "key", 0o644)
    cachedir._key.cache_clear()
    assert cache.load(file) is None


def _markdown(compile_text, plan: str) -> str:
    from planc.report import markdown
    from planc.report.view import build_document

    markdown._env.cache_clear()
    return markdown.render_markdown(build_document(compile_text(plan)))


def test_a_planted_template_entry_is_never_run(cache_dir: Path, tmp_path: Path, compile_text) -> None:
    plan = TEXT + "summary a\n"
    first = _markdown(compile_text, plan)
    entries = list(cache_dir.glob("jinja-*.cache"))
    assert entries
    marker = tmp_path / "pwned"
    from jinja2.bccache import bc_magic

    for entry in entries:  # Jinja's own format: its magic, then a pickle it would load
        entry.write_bytes(bc_magic + _hostile(marker))
    assert _markdown(compile_text, plan) == first
    assert not marker.exists()
    for entry in entries:
        entry.write_bytes(entry.read_bytes()[:10])  # truncated
    assert _markdown(compile_text, plan) == first


def test_a_cache_that_cannot_be_written_costs_nothing(cache_dir: Path, compile_text) -> None:
    plan = TEXT + "summary a\n"
    first = _markdown(compile_text, plan)
    # every entry's place taken by a directory: reads fail, writes fail, the compile does not
    for entry in [*cache_dir.glob("*.cache"), *cache_dir.glob("*.ast"), *cache_dir.glob("*.tables")]:
        entry.unlink()
        entry.mkdir()
    parser._parser.cache_clear()
    assert _markdown(compile_text, plan) == first


def test_the_parser_is_loaded_from_its_signed_tables_and_parses_as_the_built_one(
        cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the entry is worth having only if a later process loads it rather than building again
    built = parser._parser()
    assert read_entry("lark-" + cache.grammar_digest() + ".tables") is not None
    parser._parser.cache_clear()
    from lark import Lark

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the parser was built again although its tables are cached")

    monkeypatch.setattr(Lark, "open_from_package", refuse)
    loaded = parser._parser()
    assert (loaded.options.parser, loaded.options.maybe_placeholders, loaded.options.propagate_positions) == (
        "lalr", True, True)
    text = (Path(__file__).parent.parent / "examples" / "100m_dau.plan").read_text(encoding="utf-8")
    assert loaded.parse(text) == built.parse(text)
