"""The flagship's figure table (tests/flagship.py) is what the compiler computes now."""

from __future__ import annotations

from .flagship import FLAGSHIP, current


def test_the_flagship_table_is_current() -> None:
    # on a physics change: `python -m tests.flagship` prints the new table to paste
    assert current() == FLAGSHIP
