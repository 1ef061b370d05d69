"""Build hook: compiles the simulator's event loop with mypyc; pyproject.toml holds everything else.

Contract: `setup()` with one C extension, `planc._sim_engine_native`, built by mypyc (part of mypy,
a build requirement) from a copy of `compiler/sim_engine.py` with one line added at its end,
`SOURCE_SHA256 = "<hex>"`, the SHA-256 of the original file. `planc.simulate` runs the extension
only while that stamp matches the installed `sim_engine.py`, so an edit made after the build (an
editable install) falls back to the source rather than to stale code. With `PLAN_PURE_PYTHON=1`
in the environment nothing is compiled: the package is pure Python and the simulator two to three
times slower (the toy physics 2.1 times, a plan's own formula 3 times: bench/README.md, `simulate.py`). The same happens, with a warning, where it cannot be
compiled (no C compiler, no Python headers): the extension is optional, so the install never
fails for want of it.

Why mypyc: the event loop does O(1) Python work per iteration and per request, tens of millions
of iterations for an hour of traffic; compiled, the same typed source runs that work as C without
a second implementation to keep in step (tests/test_simulate.py holds both to the same results).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent


def native_extensions() -> list:
    if os.environ.get("PLAN_PURE_PYTHON"):
        return []
    from mypyc.build import mypycify

    source = (HERE / "compiler" / "sim_engine.py").read_bytes()
    package = HERE / "build" / "mypyc-src" / "planc"  # the module's name follows its folder: planc
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    stamp = f'\nSOURCE_SHA256 = "{hashlib.sha256(source).hexdigest()}"\n'
    (package / "_sim_engine_native.py").write_bytes(source + stamp.encode())
    try:
        extensions = mypycify([str((package / "_sim_engine_native.py").relative_to(HERE))], opt_level="3")
    except (Exception, SystemExit) as exc:  # mypyc refused the source (it exits on a type error): pure Python
        print(f"warning: the simulator's event loop is not compiled ({exc}); it will run as Python", file=sys.stderr)
        return []
    for extension in extensions:
        extension.optional = True  # a compiler or header missing: build_ext skips it with a warning
    return extensions


setup(ext_modules=native_extensions())
