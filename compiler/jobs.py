"""How many processes this run may fork for independent work.

Contract: `fork_workers() -> int` is the cores this process may use (its CPU affinity, else the
machine's count), or 1 when the platform cannot fork or `PLAN_JOBS=1` asks for one process.
The figures drawn ahead (`report/ahead.py`) and the validation rows (`validate.py`) both ask it.
"""

from __future__ import annotations

import multiprocessing
import os


def fork_workers() -> int:
    if os.environ.get("PLAN_JOBS", "").strip() == "1" or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
