"""The stdlib's `source "... docs/physics.md §N ..."` citations point at a document the repository
ships: every cited section exists as a numbered heading of docs/physics.md, no citation names the
document without its path, and the document cites only what a reader can open."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "physics.md"
# the trees whose text reaches a reader: the stdlib's sources, the compiler, the report templates and
# the shipped examples
CITING = ("stdlib", "compiler", "templates", "examples")
SUFFIXES = {".plan", ".py", ".j2", ".md", ".html", ".css"}

SECTION = r"\d+(?:\.\d+)*"
# "docs/physics.md §5.4", "§1.1-1.2", "§5.4, §6.2, §7.2", "§1.3, §3.1": every number of the run
CITATION = re.compile(rf"docs/physics\.md\s+§({SECTION}(?:\s*(?:,|-|–|and)\s*§?{SECTION})*)")
HEADING = re.compile(rf"^#{{2,3}} ({SECTION}) \S", re.M)


def headings(text: str) -> set[str]:
    """Section numbers of the `## N Title` and `### N.M Title` headings."""
    return set(HEADING.findall(text))


def cited(text: str) -> set[str]:
    return {n for run in CITATION.findall(text) for n in re.findall(SECTION, run)}


def citing_files() -> list[Path]:
    return sorted(p for tree in CITING for p in (REPO / tree).rglob("*")
                  if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts)


def citations() -> dict[str, list[str]]:
    """Section number → the files that cite it."""
    found: dict[str, list[str]] = {}
    for path in citing_files():
        for n in cited(path.read_text(encoding="utf-8")):
            found.setdefault(n, []).append(str(path.relative_to(REPO)))
    return found


def test_the_stdlib_cites_the_document() -> None:
    found = citations()
    assert len(found) >= 30, "the stdlib's sources should cite docs/physics.md by section"
    assert any(f.startswith("stdlib/") for files in found.values() for f in files)


def missing_sections(doc: str, found: dict[str, list[str]]) -> dict[str, list[str]]:
    present = headings(doc)
    return {n: files for n, files in found.items() if n not in present}


def test_every_cited_section_is_a_heading_of_the_document() -> None:
    missing = missing_sections(DOC.read_text(encoding="utf-8"), citations())
    assert not missing, f"cited sections with no heading in docs/physics.md: {missing}"


@pytest.mark.parametrize("section", ["1.1", "5.4", "7.6", "8", "14"])
def test_removing_a_cited_heading_is_caught(section: str) -> None:
    text = DOC.read_text(encoding="utf-8")
    without = re.sub(rf"^#{{2,3}} {re.escape(section)} .*$", "", text, flags=re.M)
    assert without != text
    assert section in missing_sections(without, citations())


@pytest.mark.parametrize(("text", "sections"), [
    ('source "physics: docs/physics.md §5.4, §6.2, §7.2"', {"5.4", "6.2", "7.2"}),
    ('source "docs/physics.md §1.1-1.2; Llama-3.1-8B"', {"1.1", "1.2"}),
    ('"(docs/physics.md §13)."', {"13"}),
    ('"docs/physics.md §9.1, weight-only"', {"9.1"}),
])
def test_citation_runs_are_read_whole(text: str, sections: set[str]) -> None:
    assert cited(text) == sections


def test_no_citation_omits_the_path() -> None:
    bare = re.compile(r"(?<!docs/)\bphysics\.md")
    offenders = [f"{path.relative_to(REPO)}:{i}" for path in citing_files()
                 for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if bare.search(line)]
    assert not offenders, f"cite the document by its path, docs/physics.md: {offenders}"


def test_the_document_cites_nothing_outside_the_repository_a_reader_cannot_open() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert not re.search(r"\bshared/|/shared\b|/work/", text)
    # its sections are numbered uniquely, in order
    numbers = HEADING.findall(text)
    assert len(numbers) == len(set(numbers))
    assert numbers == sorted(numbers, key=lambda n: tuple(int(x) for x in n.split(".")))
