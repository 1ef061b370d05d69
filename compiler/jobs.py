"""How many processes this run may fork for independent work.

Contract: `fork_workers() -> int` is the cores this process may use (its CPU affinity, else the
machine's count), at most `PLAN_JOBS` when that is a whole number (1: one process; a machine
shared with other work, or a test runner that already runs one process per core, sets it), and 1
when the platform cannot fork. The figures drawn ahead (`report/ahead.py`) and the validation
rows (`validate.py`) both ask it.
"""

from __future__ import annotations

import multiprocessing
import os


def fork_workers() -> int:
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    cores = cpu_cores()
    cap = os.environ.get("PLAN_JOBS", "").strip()
    return max(1, min(cores, int(cap))) if cap.isdigit() else cores


def cpu_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
