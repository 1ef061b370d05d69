"""docs/tutorial.md runs as written: each file it shows is written, each `plan` command it shows
is run in a fresh folder with the exit code it states (`# exit N`, else 0), and each output it
shows appears in what the command printed (or in the file an `<!-- in: FILE -->` names). The
numbers may move with the physics: each number of a shown line, with its unit, matches any."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner
from planc.cli import main

from .conftest import REPO

TUTORIAL = REPO / "docs" / "tutorial.md"
_BLOCK = re.compile(r"(?:<!-- (file|in): (\S+) -->\n)?```(\w+)\n(.*?)```", re.S)
# a number, with the time, size or percent unit after it (a margin of 6.8 µs may become 1.2 ms)
_UNIT = r"(?: ?(?:µs|ms|ns|s|%|[KMGT]iB|B)(?!\w))?"
_NUMBER = re.compile(r"\d[\d,.]*" + _UNIT)


def _pattern(line: str) -> re.Pattern[str]:
    parts = _NUMBER.split(line)
    return re.compile((r"[\d,.]+" + _UNIT).join(re.escape(p) for p in parts))


def test_the_tutorial_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = _BLOCK.findall(TUTORIAL.read_text(encoding="utf-8"))
    output, commands, shown = "", 0, 0
    for marker, name, language, body in blocks:
        if language == "plan":
            assert marker == "file", "every plan the tutorial shows is a file it names"
            (tmp_path / name).write_text(body, encoding="utf-8")
        elif language == "sh":
            for line in body.splitlines():
                if not line.startswith("plan "):
                    continue  # the set-up line
                command, _, comment = line.partition("#")
                expected = int(comment.split()[1]) if comment.strip().startswith("exit") else 0
                result = CliRunner().invoke(main, shlex.split(command)[1:])
                output = result.output
                assert result.exit_code == expected, (line, output)
                commands += 1
        elif language == "text":
            target = (tmp_path / name).read_text(encoding="utf-8") if marker == "in" else output
            for line in body.strip("\n").splitlines():
                assert _pattern(line).search(target), (line, target[:3000])
                shown += 1
    assert commands >= 7 and shown >= 10
