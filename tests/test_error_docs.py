"""Every diagnostic code has its page in `docs/errors/`, and every page tells the truth.

A page is `# <CODE>: <title>`, a paragraph, then `## Example`, `## What the compiler says` and
`## Fix`. For a page whose `## Example` holds a ```plan block, the example is compiled as
`example.plan` in a temporary directory and must produce the page's code; the first ```plan
block under `## Fix` (on any page) must compile without errors (warnings allowed). The ```text
block under `## What the compiler says` must be exactly what the compiler prints for the
example (with stdlib snippets named by file and text, without line numbers, as in the golden
cases) — for the file-level codes (E0001-E0007, and E0210, which needs several files) the situation the page describes is recreated
here. For the `plan import-hf` codes (E06xx) the example is a ```json block, imported as
`config.json`; a ```json block under `## Fix` must import, and the plan it gives must compile.
`PLAN_UPDATE_GOLDENS=1` rewrites those output blocks in place, like the golden cases.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from planc.diagnostics import CODES
from planc.hf_import import Imported, import_config
from planc.pipeline import Compilation, compile_plan
from planc.render_diagnostics import render_human

DOCS = Path(__file__).resolve().parent.parent / "docs" / "errors"
UPDATE = os.environ.get("PLAN_UPDATE_GOLDENS") == "1"
SECTIONS = ("## Example", "## What the compiler says", "## Fix")
_FENCE = re.compile(r"^```(?P<lang>\w*)\n(?P<body>.*?)^```$", re.M | re.S)


# ---- reading pages ------------------------------------------------------------------------


def page_path(code: str) -> Path:
    return DOCS / f"{code}.md"


def section(text: str, heading: str) -> tuple[int, str]:
    """(offset, text) of the section under `heading`, up to the next `## ` heading."""
    match = re.search(rf"^{re.escape(heading)}\n", text, re.M)
    assert match is not None, f"no `{heading}` section"
    end = text.find("\n## ", match.end())
    end = len(text) if end < 0 else end + 1
    return match.end(), text[match.end() : end]


def first_block(text: str, heading: str, lang: str) -> re.Match[str] | None:
    """The first fenced block of language `lang` in a section (offsets relative to the page)."""
    start, body = section(text, heading)
    for match in _FENCE.finditer(text, start, start + len(body)):
        if match.group("lang") == lang:
            return match
    return None


# ---- recreating what a page shows ---------------------------------------------------------


def _missing(tmp: Path) -> Path:
    return tmp / "example.plan"


def _directory(tmp: Path) -> Path:
    (tmp / "example.plan").mkdir()
    return tmp / "example.plan"


def _latin1(tmp: Path) -> Path:
    (tmp / "example.plan").write_bytes('title "Café"\n'.encode("latin-1"))
    return tmp / "example.plan"


def _empty(tmp: Path) -> Path:
    (tmp / "example.plan").write_bytes(b"")
    return tmp / "example.plan"


def _unreadable(tmp: Path) -> Path:
    (tmp / "example.plan").write_text("let x = 1\n", encoding="utf-8")
    return tmp / "example.plan"


def _too_large(tmp: Path) -> Path:
    (tmp / "example.plan").write_bytes(b"# log\n" * 350_000)
    return tmp / "example.plan"


def _fifo(tmp: Path) -> Path:
    os.mkfifo(tmp / "example.plan")
    return tmp / "example.plan"


def _deep_imports(tmp: Path) -> Path:
    for i in range(40):
        (tmp / f"f{i}.plan").write_text(f'import "./f{i + 1}"\nlet a{i} = 1\n', encoding="utf-8")
    (tmp / "f40.plan").write_text("let a40 = 1\n", encoding="utf-8")
    (tmp / "example.plan").write_text('import "./f1"\nlet a = 1\n', encoding="utf-8")
    return tmp / "example.plan"


SITUATIONS: dict[str, Callable[[Path], Path]] = {
    "E0006": _too_large,
    "E0007": _fifo,
    "E0210": _deep_imports,
    "E0001": _missing,
    "E0002": _directory,
    "E0003": _latin1,
    "E0004": _empty,
    "E0005": _unreadable,
}


def _refuse_to_read(monkeypatch: pytest.MonkeyPatch, target: Path) -> None:
    """Make reading `target` fail with EACCES (chmod 000 does not stop root)."""
    read_bytes = Path.read_bytes

    def refuse(self: Path) -> bytes:
        if self == target.resolve():
            raise PermissionError(13, "Permission denied", str(self))
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", refuse)


def compile_example(tmp: Path, plan: str) -> Compilation:
    path = tmp / "example.plan"
    path.write_text(plan, encoding="utf-8")
    return compile_plan(path, shown="example.plan")


def import_example(tmp: Path, config: str) -> Imported:
    path = tmp / "config.json"
    path.write_text(config, encoding="utf-8")
    return import_config(path, "example", shown="config.json", plan_shown="example.plan")


def compile_page(
    code: str, text: str, tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> Compilation | Imported | None:
    """Compile what the page's example shows; None when the page has nothing to compile."""
    example = first_block(text, "## Example", "plan")
    if example is not None:
        return compile_example(tmp, example.group("body"))
    config = first_block(text, "## Example", "json")
    if config is not None:
        return import_example(tmp, config.group("body"))
    if code in SITUATIONS:
        path = SITUATIONS[code](tmp)
        if code == "E0005":
            _refuse_to_read(monkeypatch, path)
        return compile_plan(path, shown="example.plan")
    return None


# ---- the tests ----------------------------------------------------------------------------


def test_every_code_has_a_page() -> None:
    missing = [code for code in CODES if not page_path(code).is_file()]
    assert not missing, f"no page in docs/errors for {', '.join(missing)}"


def test_every_page_has_a_code() -> None:
    pages = {p.stem for p in DOCS.glob("*.md")} - {"README"}
    assert not pages - set(CODES), f"pages for unknown codes: {sorted(pages - set(CODES))}"


def test_readme_lists_every_code() -> None:
    readme = (DOCS / "README.md").read_text(encoding="utf-8")
    for code, entry in CODES.items():
        assert f"| [{code}]({code}.md) | {entry.title} |" in readme, f"README lacks a row for {code}"


@pytest.mark.parametrize("code", sorted(CODES))
def test_page_title(code: str) -> None:
    path = page_path(code)
    if not path.is_file():
        pytest.fail(f"no page for {code}")
    first = path.read_text(encoding="utf-8").split("\n", 1)[0]
    assert first == f"# {code}: {CODES[code].title}"


@pytest.mark.parametrize("code", sorted(CODES))
def test_page_shows_what_the_compiler_says(
    code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = page_path(code)
    if not path.is_file():
        pytest.fail(f"no page for {code}")
    text = path.read_text(encoding="utf-8")
    positions = [text.find(f"\n{heading}\n") for heading in SECTIONS]
    assert all(p >= 0 for p in positions) and positions == sorted(positions), (
        f"a page has the sections {', '.join(SECTIONS)} in this order"
    )
    compilation = compile_page(code, text, tmp_path, monkeypatch)
    assert compilation is not None, "the page needs a ```plan example or a recreated situation"
    codes = [d.code for d in compilation.diagnostics]
    assert code in codes, f"the example produces {codes}, not {code}\n" + render_human(compilation.diagnostics)
    if CODES[code].severity.value == "error":  # invalid: 2; nothing meets a search (infeasible): 1, as a failed check
        assert compilation.exit_code == (1 if code in ("E0407", "E0408") else 2)  # infeasible, as a failed check

    shown = first_block(text, "## What the compiler says", "text")
    assert shown is not None, "`## What the compiler says` needs a ```text block"
    rendered = render_human(compilation.diagnostics, stdlib_lines=False)
    if UPDATE and shown.group("body") != rendered:
        text = text[: shown.start("body")] + rendered + text[shown.end("body") :]
        path.write_text(text, encoding="utf-8")
        shown = first_block(text, "## What the compiler says", "text")
        assert shown is not None
    assert shown.group("body") == rendered, "the page shows other output than the compiler prints"


@pytest.mark.parametrize("code", sorted(CODES))
def test_page_fix_compiles(code: str, tmp_path: Path) -> None:
    path = page_path(code)
    if not path.is_file():
        pytest.fail(f"no page for {code}")
    text = path.read_text(encoding="utf-8")
    _, fix = section(text, "## Fix")
    assert fix.strip(), "`## Fix` is empty"
    block = first_block(text, "## Fix", "plan")
    config = first_block(text, "## Fix", "json")
    if block is None and config is not None:
        imported = import_example(tmp_path, config.group("body"))
        assert imported.ok, render_human(imported.diagnostics)
        return
    if block is None:
        assert code in SITUATIONS, "only the file-level codes may have a fix without a plan"
        return
    compilation = compile_example(tmp_path, block.group("body"))
    errors = [d for d in compilation.diagnostics if d.is_error]
    assert not errors, render_human(compilation.diagnostics)
    assert compilation.exit_code == 0
