"""How many processes this run may fork for independent work, and work started ahead in one.

Contract
- `fork_workers() -> int` is the cores this process may use (its CPU affinity, else the
  machine's count), at most `PLAN_JOBS` when that is a whole number (1: one process; a machine
  shared with other work, or a test runner that already runs one process per core, sets it), and
  1 when the platform cannot fork. `ahead` and the validation rows (`validate.py`) both ask it.
- `ahead(work) -> Callable[[], T]` starts `work()` in a forked child process when this machine
  gives the process a second core and the platform can fork, and returns a function that gives
  `work()`'s result, waiting for the child when it has not finished. The result comes back
  pickled through a pipe, so it is the value `work()` returns here, byte for byte. Whenever the
  child does not deliver one (it raised, it died, the result would not pickle, no fork), the
  function runs `work()` in this process when asked, so the caller sees exactly the result or
  the exception it would have seen without the child: running ahead changes when the work is
  done, never what it gives. `PLAN_JOBS=1` in the environment turns it off. The CLI prices the
  levers ahead while the questions are answered, and draws the figures ahead while the page is
  built.

The child is forked before anything in this process starts a thread (matplotlib and WeasyPrint
are not imported yet when the CLI calls it; the language server never does), and it leaves
through `os._exit` without running this process's exit handlers. It is a daemon: a parent that
never asks for the result does not wait for it.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


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


def ahead(work: Callable[[], T]) -> Callable[[], T]:
    if fork_workers() < 2:
        return work
    try:
        context = multiprocessing.get_context("fork")
        receive, send = context.Pipe(duplex=False)
        child = context.Process(target=_run, args=(work, send), daemon=True)
        child.start()
    except (OSError, ValueError):  # no fork here, or no process to spare: do it when asked
        return work
    send.close()  # this process keeps only the reading end, so a dead child reads as the end of the pipe
    delivered: list[Any] = []

    def result() -> T:
        if not delivered:
            try:
                status, value = receive.recv()
            except Exception:  # EOFError: the child died; or it sent something unreadable
                status, value = "failed", None
            finally:
                receive.close()
                child.join()
            delivered.append(value if status == "ok" else _AGAIN)
        value = delivered[0]
        return work() if value is _AGAIN else value

    return result


_AGAIN = object()  # the child gave no result: the work runs in this process


def _run(work: Callable[[], Any], send: Any) -> None:
    """In the child: the result, or word that there is none (the parent then runs the work
    itself, and so raises the same exception the child met)."""
    try:
        value = work()
    except BaseException:
        send.send(("failed", None))
        return
    try:
        send.send(("ok", value))
    except Exception:  # the result does not pickle
        send.send(("failed", None))
