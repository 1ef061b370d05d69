"""The parse cache returns the same AST as a fresh parse, and is ignored when it is not private."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from planc.cachedir import cache_directory
from planc.source import SourceFile
from planc.syntax import cache, parser

TEXT = 'let a = 80 GiB "memory" source "datasheet"\ncheck a > 0 B\n'


def test_a_cached_parse_equals_a_fresh_one(cache_dir: Path) -> None:
    first, problems = parser.parse(SourceFile("t.plan", TEXT))
    assert first is not None and not problems
    assert len(list(cache_dir.glob("*.ast"))) == 1
    parser.forget()  # as a new process would: from the cache on disk, not this process's parse
    second, _ = parser.parse(SourceFile("t.plan", TEXT))
    assert second is not None and second is not first
    assert repr(second.statements) == repr(first.statements)


def test_a_file_parsed_in_this_process_is_the_same_module_until_its_text_changes(cache_dir: Path) -> None:
    first, _ = parser.parse(SourceFile("t.plan", TEXT))
    again, problems = parser.parse(SourceFile("t.plan", TEXT))
    assert again is first and not problems
    assert parser.parse(SourceFile("u.plan", TEXT))[0] is not first  # another path: its own spans
    edited, _ = parser.parse(SourceFile("t.plan", TEXT + "let b = 1 GB\n"))
    assert edited is not None and edited is not first and len(edited.statements) == len(first.statements) + 1
    (cache_dir / cache._entry(SourceFile("t.plan", TEXT))).unlink()
    assert parser.parse(SourceFile("t.plan", TEXT))[0] is first  # from memory, whatever the disk holds


def test_changed_text_misses(cache_dir: Path) -> None:
    parser.parse(SourceFile("t.plan", TEXT))
    assert cache.load(SourceFile("t.plan", TEXT + "\n")) is None


def test_edits_of_a_file_replace_its_entry(cache_dir: Path) -> None:
    # a user who edits and recompiles a plan a thousand times must not get a thousand entries
    for n in range(5):
        text = TEXT + f"let b{n} = {n} GB\n"
        parser.parse(SourceFile("t.plan", text))
        assert cache.load(SourceFile("t.plan", text)) is not None
    assert len(list(cache_dir.glob("*.ast"))) == 1
    parser.parse(SourceFile("u.plan", TEXT))
    assert len(list(cache_dir.glob("*.ast"))) == 2
    assert cache.load(SourceFile("t.plan", TEXT)) is None  # the entry now holds the last text


def test_a_directory_others_can_write_is_not_trusted(cache_dir: Path) -> None:
    cache_dir.mkdir(mode=0o700)
    os.chmod(cache_dir, 0o777)
    cache_directory.cache_clear()
    parser.parse(SourceFile("t.plan", TEXT))
    assert not list(cache_dir.glob("*.ast"))


def test_a_changed_syntax_layer_misses(cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # pickles hold instances of the AST's classes: a new compiler with changed classes must not load them
    parser.parse(SourceFile("t.plan", TEXT))
    assert cache.load(SourceFile("t.plan", TEXT)) is not None
    copy = tmp_path / "syntax"
    copy.mkdir()
    for source in Path(cache.__file__).parent.glob("*.py"):
        (copy / source.name).write_bytes(source.read_bytes())
    (tmp_path / "source.py").write_bytes((Path(cache.__file__).parent.parent / "source.py").read_bytes())
    (copy / "ast.py").write_text((copy / "ast.py").read_text() + "\n# a new field somewhere\n")
    monkeypatch.setattr(cache, "__file__", str(copy / "cache.py"))
    cache.grammar_digest.cache_clear()
    try:
        assert cache.load(SourceFile("t.plan", TEXT)) is None
    finally:
        monkeypatch.undo()
        cache.grammar_digest.cache_clear()
