"""Work started ahead in a second process gives what it gives in this one, or runs here."""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from planc.jobs import Later, ahead, ahead_each, cpu_cores, standby

T = TypeVar("T")

# the machine's cores, whatever PLAN_JOBS the environment sets
needs_two = pytest.mark.skipif(cpu_cores() < 2 or "fork" not in multiprocessing.get_all_start_methods(),
                               reason="needs a second core and fork")


@pytest.fixture(autouse=True)
def every_core(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """These tests are about the second process: a cap in the environment is lifted."""
    monkeypatch.delenv("PLAN_JOBS", raising=False)
    yield


def _marking(mark: Path, work: Callable[[], T]) -> Callable[[], T]:
    """`work`, noting in `mark` that it has started (in whichever process runs it)."""
    def marked() -> T:
        mark.write_text(str(os.getpid()))
        return work()
    return marked


def _wait_for(mark: Path) -> None:
    """Until the child has started the work that writes `mark` (so this process cannot take it back)."""
    for _ in range(2000):
        if mark.exists():
            return
        time.sleep(0.005)
    raise AssertionError(f"{mark} never appeared")


def _wait_for_the_children(*pids: int) -> None:
    """Until the children `pids` have ended (by default every child of this process), 10 s at most."""
    for _ in range(2000):
        alive = {p.pid for p in multiprocessing.active_children()}
        if not (alive & set(pids) if pids else alive):
            return
        time.sleep(0.005)


@needs_two
def test_the_work_runs_in_another_process_and_its_result_comes_back(tmp_path: Path) -> None:
    here = os.getpid()
    result = ahead(_marking(tmp_path / "m", lambda: (os.getpid(), [("svg", "<svg/>" * 50_000)])))  # larger than a pipe's buffer
    _wait_for(tmp_path / "m")
    pid, value = result()
    assert pid != here
    assert value == [("svg", "<svg/>" * 50_000)]
    assert result()[0] == pid  # asked twice, delivered once


@needs_two
def test_several_works_run_in_turn_in_one_child_and_each_result_comes_back_when_it_is_done(tmp_path: Path) -> None:
    here = os.getpid()
    release = tmp_path / "go"

    def second() -> tuple[int, str]:
        for _ in range(2000):  # waits until this process has read the first result
            if release.exists():
                return os.getpid(), release.read_text()
            time.sleep(0.005)
        return os.getpid(), "never released"

    got_first, got_second = ahead_each([_marking(tmp_path / "m", os.getpid), _marking(tmp_path / "m2", second)])
    _wait_for(tmp_path / "m2")
    child = got_first()  # delivered while the child still waits inside the second work
    assert child != here
    release.write_text("released")
    assert got_second() == (child, "released")  # the same child, after the first


@needs_two
def test_a_work_the_child_has_not_started_is_taken_back_and_done_once(tmp_path: Path) -> None:
    here = os.getpid()
    release, ran = tmp_path / "go", tmp_path / "ran"

    def first() -> int:
        for _ in range(2000):  # the child is busy with this until released
            if release.exists():
                break
            time.sleep(0.005)
        return os.getpid()

    def second() -> int:
        with ran.open("a") as f:
            f.write(f"{os.getpid()}\n")
        return os.getpid()

    got_first, got_second = ahead_each([_marking(tmp_path / "m", first), second])
    _wait_for(tmp_path / "m")
    assert got_second() == here  # taken back: done here, without waiting for the first
    assert got_second() == here
    release.write_text("go")
    assert got_first() != here
    _wait_for_the_children()
    assert ran.read_text().split() == [str(here)]  # the child skipped it: done once, here


@needs_two
def test_each_work_falls_back_on_its_own(tmp_path: Path) -> None:
    here = os.getpid()

    def fails_there() -> int:
        if os.getpid() != here:
            raise RuntimeError("only in the child")
        return -1

    def dies_there() -> int:
        return os.getpid() if os.getpid() == here else os._exit(3)

    got = ahead_each([fails_there, os.getpid, _marking(tmp_path / "m", dies_there), os.getpid])
    _wait_for(tmp_path / "m")
    _wait_for_the_children()
    results = [g() for g in got]
    assert results[0] == -1  # ran again here
    assert results[1] != here  # the child went on after the failure
    assert results[2] == here and results[3] == here  # the child died: what it had not delivered runs here


def _pid_and(x: object) -> tuple[int, object]:
    return os.getpid(), x


@needs_two
def test_a_later_work_is_done_in_the_same_child_after_the_others_with_the_input_sent_after_it_started(
        tmp_path: Path) -> None:
    """The answers' figures: the child that drew the plan's (matplotlib warm there) is sent the
    answers once they exist. The child is still busy when the input is sent, and the work is not
    taken back: this process waits for the child."""
    here = os.getpid()
    release = tmp_path / "go"

    def busy() -> int:
        for _ in range(2000):
            if release.exists():
                break
            time.sleep(0.005)
        return os.getpid()

    got_busy, submit = ahead_each([_marking(tmp_path / "m", busy), Later(_pid_and)])
    _wait_for(tmp_path / "m")
    result = submit("answers")
    release.write_text("go")
    child = got_busy()
    assert child != here
    assert result() == (child, "answers")


@needs_two
def test_a_large_input_and_a_large_result_unread_do_not_wait_on_each_other(tmp_path: Path) -> None:
    """This process sends a Later's input before it reads the earlier work's result, and both are
    larger than a pipe's buffer: the child reads its inputs as they come, so neither waits."""
    big = "<svg/>" * 100_000
    got_figures, submit = ahead_each([_marking(tmp_path / "m", lambda: (os.getpid(), big)), Later(_pid_and)])
    _wait_for(tmp_path / "m")
    time.sleep(0.05)  # the child is writing the result, which fills the pipe
    result = submit(big)
    pid, drawn = got_figures()
    assert drawn == big and pid != os.getpid()
    assert result() == (pid, big)


@needs_two
def test_a_later_work_falls_back_here_when_its_input_does_not_pickle_or_the_child_died(tmp_path: Path) -> None:
    here = os.getpid()
    got_first, submit = ahead_each([os.getpid, Later(lambda f: (os.getpid(), f()))])
    assert submit(lambda: "not picklable")() == (here, "not picklable")
    assert got_first() != here

    def dies_there() -> int:
        return os.getpid() if os.getpid() == here else os._exit(3)

    got_dying, submit = ahead_each([_marking(tmp_path / "m", dies_there), Later(_pid_and)])
    _wait_for(tmp_path / "m")
    _wait_for_the_children()
    assert submit(7)() == (here, 7)
    assert got_dying() == here


def test_a_later_work_with_one_process_is_done_here_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAN_JOBS", "1")
    got_first, submit = ahead_each([os.getpid, Later(_pid_and)])
    assert submit(3)() == (os.getpid(), 3) and got_first() == os.getpid()


def test_no_works_and_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ahead_each([]) == []
    monkeypatch.setenv("PLAN_JOBS", "1")
    assert [g() for g in ahead_each([os.getpid, lambda: 7])] == [os.getpid(), 7]


def test_with_plan_jobs_1_it_runs_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAN_JOBS", "1")
    assert ahead(os.getpid)() == os.getpid()


@needs_two
def test_an_exception_in_the_child_is_raised_here_as_it_would_be_without_it(tmp_path: Path) -> None:
    calls: list[int] = []

    def work() -> None:
        calls.append(os.getpid())
        raise ImportError("no matplotlib")

    result = ahead(_marking(tmp_path / "m", work))
    _wait_for(tmp_path / "m")
    with pytest.raises(ImportError, match="no matplotlib"):
        result()
    assert calls == [os.getpid()]  # the child's attempt is not this process's list: it ran again here


@needs_two
def test_a_child_that_dies_or_returns_what_does_not_pickle_leaves_the_work_to_this_process(tmp_path: Path) -> None:
    here = os.getpid()

    def dies() -> int:
        if os.getpid() != here:
            os._exit(3)
        return 42

    result = ahead(_marking(tmp_path / "m", dies))
    _wait_for(tmp_path / "m")
    assert result() == 42

    def unpicklable() -> object:
        return (lambda: os.getpid()) if os.getpid() != here else "here"

    result = ahead(_marking(tmp_path / "m2", unpicklable))
    _wait_for(tmp_path / "m2")
    assert result() == "here"


@needs_two
@pytest.mark.parametrize(("suffix", "mark"), [("html", b"<svg"), ("md", b"Levers")])
def test_the_report_is_the_same_with_and_without_the_second_process(tmp_path: Path, suffix: str, mark: bytes) -> None:
    # HTML: the figures drawn ahead; both: the levers priced ahead
    from click.testing import CliRunner
    from planc.cli import main

    example = Path(__file__).parent.parent / "examples" / "100m_dau.plan"
    pages = []
    for jobs in ("", "1"):
        out = tmp_path / f"jobs{jobs or 'n'}.{suffix}"
        result = CliRunner().invoke(main, ["compile", str(example), "-o", str(out)], env={"PLAN_JOBS": jobs})
        assert result.exit_code == 0, result.output
        pages.append(out.read_bytes())
    assert pages[0] == pages[1] and mark in pages[0]


# ---- standby: set up ahead, then one input ---------------------------------------------------------

@needs_two
def test_a_standby_child_warms_up_at_once_and_does_the_work_on_the_input_it_is_sent(tmp_path: Path) -> None:
    here = os.getpid()
    warmed = tmp_path / "warm"
    run = standby(lambda: warmed.write_text(str(os.getpid())), lambda x: (os.getpid(), x * 2))
    _wait_for(warmed)  # before any input is sent
    child = int(warmed.read_text())
    assert child != here
    pid, value = run("<page/>" * 50_000)  # larger than a pipe's buffer, both ways
    assert (pid, value) == (child, "<page/>" * 100_000)
    # this test's child ends once its work is done (a child of an earlier test in this worker may
    # still be finishing under load: that one is not this test's)
    _wait_for_the_children(child)
    assert child not in {p.pid for p in multiprocessing.active_children()}


@needs_two
def test_a_standby_child_that_fails_leaves_the_work_to_this_process(tmp_path: Path) -> None:
    here = os.getpid()

    def no_library() -> None:
        raise ImportError("no weasyprint")

    def work(x: int) -> int:
        if os.getpid() != here:
            raise ImportError("no weasyprint")
        return x + 1

    assert standby(no_library, work)(41) == 42  # the child's work raised: done here

    def dies(x: int) -> int:
        if os.getpid() != here:
            os._exit(3)
        return x

    assert standby(lambda: None, dies)(7) == 7
    calls: list[int] = []

    def raises(x: int) -> int:
        calls.append(os.getpid())
        raise ValueError("bad page")

    with pytest.raises(ValueError, match="bad page"):
        standby(lambda: None, raises)(1)
    assert calls == [here]  # the child's attempt is not in this process's list: it ran again here


def test_with_plan_jobs_1_standby_is_the_work_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAN_JOBS", "1")
    work = lambda x: (os.getpid(), x)  # noqa: E731
    assert standby(lambda: None, work) is work


@needs_two
def test_a_standby_child_never_sent_an_input_ends_with_this_process(tmp_path: Path) -> None:
    """The CLI starts WeasyPrint's process before the compile; a plan with errors never sends it a
    page, and the command must still end at once."""
    import subprocess
    import sys

    code = ("import os, sys\n"
            "from planc.jobs import standby\n"
            "run = standby(lambda: None, lambda x: x)\n"
            "sys.exit(2)\n")
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PLAN_JOBS": ""})
    assert proc.returncode == 2, proc.stderr
    assert time.perf_counter() - started < 30


@needs_two
def test_the_pdf_is_the_same_laid_out_in_the_standby_process_or_here(tmp_path: Path) -> None:
    from click.testing import CliRunner
    from planc.cli import main

    pytest.importorskip("weasyprint")
    example = Path(__file__).parent.parent / "examples" / "100m_dau.plan"
    pages = []
    for jobs in ("", "1"):
        out = tmp_path / f"jobs{jobs or 'n'}.pdf"
        result = CliRunner().invoke(main, ["compile", str(example), "--brief", "-o", str(out)],
                                    env={"PLAN_JOBS": jobs})
        assert result.exit_code == 0, result.output
        pages.append(out.read_bytes())
    assert pages[0] == pages[1] and pages[0].startswith(b"%PDF-")


def test_plan_jobs_caps_the_forked_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    from planc.jobs import fork_workers

    monkeypatch.setenv("PLAN_JOBS", "1")
    assert fork_workers() == 1
    monkeypatch.setenv("PLAN_JOBS", "64")  # a cap, not a demand: never more than the cores
    assert fork_workers() == cpu_cores()
    for ignored in ("", "many", "-2"):
        monkeypatch.setenv("PLAN_JOBS", ignored)
        assert fork_workers() == cpu_cores()
    monkeypatch.setenv("PLAN_JOBS", "0")
    assert fork_workers() == 1


@needs_two
def test_a_reports_levers_are_priced_in_a_second_process_while_the_questions_are_answered(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from planc.pipeline import compile_plan
    from planc.solve.sensitivity import Sensitivities

    priced_in = tmp_path / "pid"
    own = Sensitivities.lever_prices

    def recorded(self: Sensitivities) -> object:
        priced_in.write_text(str(os.getpid()))
        return own(self)

    monkeypatch.setattr(Sensitivities, "lever_prices", recorded)
    example = Path(__file__).parent.parent / "examples" / "100m_dau.plan"
    ahead_ = compile_plan(example, report=True)
    assert int(priced_in.read_text()) != os.getpid()  # forked before the questions: the child priced them
    here = compile_plan(example)  # no report: priced here, on first use
    assert [(a.values, a.reason) for a in ahead_.levers] == [(a.values, a.reason) for a in here.levers]
    assert int(priced_in.read_text()) == os.getpid()
    assert len(ahead_.levers) >= 10


@needs_two
def test_an_html_reports_input_ranges_and_plan_figures_are_done_after_the_levers_in_their_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner
    from planc import uncertainty
    from planc.cli import main
    from planc.report import figures
    from planc.solve import Solver
    from planc.solve.sensitivity import Sensitivities

    log = tmp_path / "log"
    own_prices, own_figures, own_ranges = Sensitivities.lever_prices, figures.plan_figures, uncertainty.propagate
    own_question = Solver.question

    def ranges(lowered: object) -> object:
        with log.open("a") as f:
            f.write(f"ranges {os.getpid()}\n")
        return own_ranges(lowered)  # type: ignore[arg-type]

    def prices(self: Sensitivities) -> object:
        with log.open("a") as f:
            f.write(f"levers {os.getpid()}\n")
        return own_prices(self)

    def plan_figures(lowered: object) -> object:
        with log.open("a") as f:
            f.write(f"figures {os.getpid()}\n")
        return own_figures(lowered)

    def slow_question(self: Solver, q: object) -> object:  # this process busy long enough for the child
        time.sleep(0.3)                                     # to reach every work before it asks (else it
        return own_question(self, q)                        # would take back what the child had not started)

    monkeypatch.setattr(Sensitivities, "lever_prices", prices)
    monkeypatch.setattr(figures, "plan_figures", plan_figures)
    monkeypatch.setattr(uncertainty, "propagate", ranges)
    monkeypatch.setattr(Solver, "question", slow_question)
    example = Path(__file__).parent.parent / "examples" / "100m_dau.plan"  # its summary has input ranges
    result = CliRunner().invoke(main, ["compile", str(example), "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    done = [line.split() for line in log.read_text().splitlines()]
    assert sorted(what for what, _ in done) == ["figures", "levers", "ranges"]  # each once
    (levers, child), (figures, same) = done[:2]
    assert (levers, figures) == ("levers", "figures") and child == same and int(child) != os.getpid()
    # the ranges last there, or here when this process ended its questions first: by whichever was free
    assert dict(done)["ranges"] in (child, str(os.getpid()))
    assert "over the input ranges" in (tmp_path / "r.html").read_text(encoding="utf-8")


@pytest.fixture
def ranges_done_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[[], list[int]]:
    """The processes that carried input ranges through, in order (a file, which a child writes too)."""
    from planc import uncertainty

    log = tmp_path / "ranges"
    own = uncertainty.propagate

    def ranges(lowered: object) -> object:
        with log.open("a") as f:
            f.write(f"{os.getpid()}\n")
        return own(lowered)  # type: ignore[arg-type]

    monkeypatch.setattr(uncertainty, "propagate", ranges)
    return lambda: [int(pid) for pid in log.read_text().split()] if log.exists() else []


def test_a_compile_without_a_report_does_the_input_ranges_here(ranges_done_in: Callable[[], list[int]]) -> None:
    from planc.pipeline import compile_plan

    result = compile_plan(Path(__file__).parent.parent / "examples" / "100m_dau.plan")  # `plan check`, the language server
    assert ranges_done_in() == [os.getpid()] and result.uncertainty is not None and result.also == []


def test_a_report_without_questions_does_the_input_ranges_here_while_the_levers_are_priced(
        tmp_path: Path, ranges_done_in: Callable[[], list[int]]) -> None:
    from planc.pipeline import compile_plan

    example = Path(__file__).parent.parent / "examples" / "100m_dau.plan"
    questions = ("ask ", "solve ", "compare ", "scenario ", "search ", "  minimize ", "  -> ")
    plain = tmp_path / "plain.plan"  # the flagship with its summary and levers but no question
    plain.write_text("".join(line for line in example.read_text().splitlines(keepends=True)
                             if not line.startswith(questions)))
    result = compile_plan(plain, report=True)
    assert not result.answers and result.levers and result.uncertainty is not None
    assert ranges_done_in() == [os.getpid()]  # this process would only have waited for the levers


@needs_two
def test_a_report_whose_questions_outlast_the_levers_has_its_input_ranges_done_by_the_child(
        monkeypatch: pytest.MonkeyPatch, ranges_done_in: Callable[[], list[int]]) -> None:
    from planc.pipeline import compile_plan
    from planc.solve import Solver

    own = Solver.question

    def slow_question(self: Solver, q: object) -> object:  # the questions outlast the levers, surely
        time.sleep(0.3)
        return own(self, q)

    monkeypatch.setattr(Solver, "question", slow_question)
    result = compile_plan(Path(__file__).parent.parent / "examples" / "100m_dau.plan", report=True)
    done = ranges_done_in()
    assert result.uncertainty is not None and len(done) == 1 and done[0] != os.getpid()
