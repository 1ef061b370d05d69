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
  done, never what it gives. `PLAN_JOBS=1` in the environment turns it off.
- `ahead_each(works) -> list[Callable[[], Any]]` is the same for several pieces of work done one
  after another in one child: each result comes back as soon as its work is done (the first can
  be used while the child goes on with the next), and each falls back on its own. A work the
  child has not started when this process asks for it is taken back and done here, and the child
  skips it: whichever process gets to a work first does it, once, so the split adapts to which
  of the two is busier (a plan with few questions leaves this process idle while the child is
  still on an earlier work). For a report the compile prices the levers, then (HTML, PDF) draws
  the plan's own figures and carries the input ranges through in one child while the questions
  are answered, then the answers' figures once it is sent them (a `Later`, below) while this
  process builds the page; `plan simulate --seeds` makes its independent runs in one while this
  process makes the others.

- A work of `ahead_each` may be a `Later(work)`: a work whose input is known only after the child
  has started (the answers to a plan's questions, say). Its getter is `submit(x) -> Callable[[],
  R]`: `submit` sends `x` to the child at once, and the function it returns gives `work(x)`. The
  child does it when it gets to it, in the state its earlier works left it in (matplotlib imported
  and its fonts loaded by the plan's figures, for the answers' figures): that is what it is there
  for, so it is never taken back, and this process waits for it; only when the child gives no
  result (it raised, died, or `x` or the result would not pickle) is `work(x)` run here. A child
  never sent its input ends when this process does. The CLI draws the answers' figures so.

- `standby(warm, work) -> Callable[[X], R]` forks a child now that runs `warm()` at once (imports,
  say) while this process goes on, then waits for one input: the returned function sends it `x`
  and gives `work(x)` from the child. It is for work whose input comes last but whose set-up need
  not wait for it: the PDF's layout, whose library (WeasyPrint, 0.4 s to import) is imported on
  the core the compile leaves idle, and which is sent only the finished page. The same fallbacks
  as `ahead`: whatever the child does not deliver (`warm` or `work` raised, it died, no fork,
  `PLAN_JOBS=1`) is `work(x)` run here, with its result or its exception. A child never sent an
  input ends when this process does (the pipe closes).

The child is forked before anything in this process starts a thread (matplotlib and WeasyPrint
are not imported yet when the CLI calls it; the language server never does), and it leaves
through `os._exit` without running this process's exit handlers. It is a daemon: a parent that
never asks for the result does not wait for it.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")
X = TypeVar("X")


@dataclass(frozen=True)
class Later(Generic[T]):
    """A work of `ahead_each` whose input comes later: its getter is `submit(x)`, and the work is
    called with x (`compile_plan` binds the lowered plan before it)."""

    work: Callable[..., T]


def _here(work: Callable[[], Any] | Later[Any]) -> Callable[..., Any]:
    """A work's getter without a child: the work itself, or for a `Later`, `submit` that does it when asked."""
    if isinstance(work, Later):
        later = work.work
        return lambda x: lambda: later(x)
    return work


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
    result: Callable[[], T] = ahead_each([work])[0]
    return result


def ahead_each(works: Sequence[Callable[[], Any] | Later[Any]]) -> list[Callable[..., Any]]:
    if fork_workers() < 2 or not works:
        return [_here(w) for w in works]
    try:
        context = multiprocessing.get_context("fork")
        receive, send = context.Pipe(duplex=False)
        inbox, to_child = context.Pipe(duplex=False)  # the inputs of the `Later` works
        claims = context.RawArray("b", len(works))  # per work: 0 unclaimed, 1 the child's, 2 this process's
        lock = context.Lock()
        child = context.Process(target=_run, args=(list(works), send, claims, lock, inbox, to_child), daemon=True)
        child.start()
    except (OSError, ValueError):  # no fork here, or no process to spare: do it when asked
        return [_here(w) for w in works]
    send.close()  # this process keeps only the reading end, so a dead child reads as the end of the pipe
    inbox.close()
    delivered: list[Any] = []  # the child's word on each work so far, in order (_AGAIN where it gave no result)
    taken: dict[int, Any] = {}  # the results of the works this process took back

    def receive_up_to(index: int) -> None:
        while len(delivered) <= index:
            try:
                status, value = receive.recv()
            except Exception:  # EOFError: the child died; or it sent something unreadable
                delivered.extend([_AGAIN] * (len(works) - len(delivered)))
                break
            delivered.append(value if status == "ok" else _AGAIN)
        if len(delivered) == len(works) and not receive.closed:
            receive.close()
            child.join()

    def getter(index: int) -> Callable[..., Any]:
        work = works[index]
        if isinstance(work, Later):
            return submitter(index, work)

        def result() -> Any:
            if index in taken:
                return taken[index]
            if len(delivered) <= index and _claim(claims, lock, index, _HERE):  # not started there: done here
                taken[index] = work()
                return taken[index]
            receive_up_to(index)
            value = delivered[index]
            return work() if value is _AGAIN else value

        return result

    def submitter(index: int, later: Later[Any]) -> Callable[[Any], Callable[[], Any]]:
        def submit(x: Any) -> Callable[[], Any]:
            try:
                to_child.send((index, x))
            except Exception:  # the child is gone, or `x` does not pickle (nothing was sent): the
                to_child.close()  # child, waiting for it, reads the end of the pipe and gives no result

            def result() -> Any:
                receive_up_to(index)
                value = delivered[index]
                return later.work(x) if value is _AGAIN else value

            return result

        return submit

    return [getter(i) for i in range(len(works))]


def standby(warm: Callable[[], object], work: Callable[[X], T]) -> Callable[[X], T]:
    if fork_workers() < 2:
        return work
    try:
        context = multiprocessing.get_context("fork")
        inbox, to_child = context.Pipe(duplex=False)
        from_child, outbox = context.Pipe(duplex=False)
        child = context.Process(target=_stand_by, args=(warm, work, inbox, outbox), daemon=True)
        child.start()
    except (OSError, ValueError):  # no fork here, or no process to spare
        return work
    inbox.close()
    outbox.close()  # this process keeps its two ends only, so a dead child reads as the end of the pipe

    def run(x: X) -> T:
        try:
            to_child.send(x)
            status, value = from_child.recv()
        except Exception:  # the child died, or the input or the result would not pickle
            status, value = "failed", None
        finally:
            to_child.close()
        from_child.close()
        child.join()
        return value if status == "ok" else work(x)

    return run


def _stand_by(warm: Callable[[], object], work: Callable[[Any], Any], inbox: Any, outbox: Any) -> None:
    """In the child: `warm()`, then `work` on the one input sent, its result or word that there
    is none (the parent then runs `work` itself and meets the same exception)."""
    with contextlib.suppress(BaseException):  # `work` meets it again, and the parent after it
        warm()
    try:
        x = inbox.recv()
    except EOFError:  # the parent ended without sending anything
        return
    _deliver(outbox, lambda: work(x))


_AGAIN = object()  # the child gave no result: the work runs in this process
_CHILD, _HERE = 1, 2


def _claim(claims: Any, lock: Any, index: int, who: int) -> bool:
    """Whether `who` gets work `index` (no one had it), marking it theirs."""
    with lock:
        if claims[index]:
            return bool(claims[index] == who)
        claims[index] = who
        return True


def _run(works: list[Callable[[], Any] | Later[Any]], send: Any, claims: Any, lock: Any, inbox: Any,
         to_child: Any) -> None:
    """In the child: each work's result in turn, or word that there is none (the parent then
    runs that work itself, and so raises the same exception the child met), or that the parent
    took it first. A `Later` work waits for its input (the inputs come tagged with their work's
    index, in any order); the parent having ended without sending it, the child ends."""
    to_child.close()  # the parent's end, copied by the fork: closed, so the parent's closing it ends the inputs
    inputs: dict[int, Any] = {}
    arrived = _reading(inbox) if any(isinstance(w, Later) for w in works) else None
    for index, work in enumerate(works):
        if isinstance(work, Later):
            while index not in inputs:
                item = arrived.get() if arrived is not None else None
                if item is None:  # the parent ended or sends no more, or sent something unreadable
                    with contextlib.suppress(Exception):
                        send.send(("failed", None))
                    return
                inputs[item[0]] = item[1]
            _claim(claims, lock, index, _CHILD)
            _deliver(send, functools.partial(work.work, inputs.pop(index)))
        elif _claim(claims, lock, index, _CHILD):
            _deliver(send, work)
        else:
            send.send(("taken", None))


def _reading(inbox: Any) -> queue.SimpleQueue[tuple[int, Any] | None]:
    """In the child: the inputs of its `Later` works as they arrive, read by a thread from the
    start, so that the parent's sending them never waits on the child (which may itself be
    waiting to send a large result the parent has not read yet); None once there are no more."""
    arrived: queue.SimpleQueue[tuple[int, Any] | None] = queue.SimpleQueue()

    def read() -> None:
        while True:
            try:
                arrived.put(inbox.recv())
            except Exception:  # EOFError: the parent ended or sends no more
                arrived.put(None)
                return

    threading.Thread(target=read, daemon=True).start()
    return arrived


def _deliver(send: Any, work: Callable[[], Any]) -> None:
    """In a child: ("ok", the result of `work()`), or ("failed", None) when it raised or its
    result does not pickle."""
    try:
        value = work()
    except BaseException:
        send.send(("failed", None))
        return
    try:
        send.send(("ok", value))
    except Exception:  # the result does not pickle
        send.send(("failed", None))
