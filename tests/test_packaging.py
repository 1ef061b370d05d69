"""Build a wheel, install it into a fresh virtual environment, compile the example elsewhere.

This is the path a user takes with `pip install plan-compiler`: the grammar, stdlib and
templates must come from the installed package, not from the checkout.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from .conftest import REPO


@pytest.mark.skipif(os.environ.get("PLAN_SKIP_PACKAGING") == "1", reason="PLAN_SKIP_PACKAGING=1")
def test_wheel_installs_and_compiles_from_elsewhere(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(REPO)],
                   check=True, capture_output=True)
    (wheel,) = wheels.glob("*.whl")
    env_dir = tmp_path / "env"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    # Pygments too: the wheel registers its lexer with it (`pygmentize -l plan`)
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel), "pygments"], check=True, capture_output=True)
    work = tmp_path / "elsewhere"
    work.mkdir()
    example = REPO / "examples" / "100m_dau.plan"
    proc = subprocess.run([str(env_dir / "bin" / "plan"), "compile", str(example), "-o", "doc.md"],
                          cwd=work, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    doc = (work / "doc.md").read_text(encoding="utf-8")
    assert "## Memory" in doc and "`<stdlib>/kinds/deployment.plan › deployment." in doc
    # the pages of the diagnostic codes ship with it: `plan explain` reads them from the package
    proc = subprocess.run([str(env_dir / "bin" / "plan"), "explain", "E0302"],
                          cwd=work, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (REPO / "docs" / "errors" / "E0302.md").read_text(encoding="utf-8")
    # and so does the physics reference the stdlib's sources cite
    proc = subprocess.run([str(env_dir / "bin" / "plan"), "physics", "5.4"],
                          cwd=work, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("### 5.4 ") and "### 5.5 " not in proc.stdout
    # the JSON Schemas ship with it too
    proc = subprocess.run([str(env_dir / "bin" / "plan"), "schema", "report"],
                          cwd=work, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (REPO / "compiler" / "schemas" / "plan.report.schema.json").read_text(encoding="utf-8")
    # the lexer is found by its name through the package's entry point
    proc = subprocess.run([str(env_dir / "bin" / "pygmentize"), "-l", "plan", "-f", "html", str(example)],
                          cwd=work, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert '<span class="k">import</span>' in proc.stdout and '<span class="c1"># The classic' in proc.stdout
    # the wheel carries the simulator's event loop compiled (setup.py), and the installed
    # package runs it: its stamp matches the installed source
    loop = subprocess.run([str(py), "-c", "from planc.simulate import engine_module; print(engine_module().__name__)"],
                          cwd=work, capture_output=True, text=True, check=True).stdout.strip()
    assert loop == ("planc.sim_engine" if os.environ.get("PLAN_PURE_PYTHON") else "planc._sim_engine_native")
    # the installed package, not the checkout, provided the stdlib
    where = subprocess.run([str(py), "-c", "import planc, pathlib; print(pathlib.Path(planc.__file__).parent)"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).is_relative_to(env_dir)


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    """The README's second command (set up, lint, types, tests) is the last line of `.ci/run`."""
    import re

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"```sh\n(.+?)\n```", readme)
    assert len(commands) >= 2 and "pytest" in commands[1]
    for step in ("ruff check", "mypy", "pytest"):
        assert step in commands[1]
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert script[-1] == commands[1]
