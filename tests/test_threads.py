"""The elastic daemon workers behind timed tools: no job waits for a worker, idle workers are reused."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from trialrun._util.workers import Workers


def test_sequential_jobs_reuse_one_idle_worker() -> None:
    workers = Workers("test-seq")
    names: list[str] = []
    for _ in range(20):
        done = threading.Event()
        workers.submit(lambda done=done: (names.append(threading.current_thread().name), done.set()))
        assert done.wait(5)
        # the worker puts itself back on the idle list just after the job; wait until it has
        for _ in range(1000):
            if workers._idle:
                break
            threading.Event().wait(0.001)
    assert set(names) == {"test-seq-1"}
    assert all(t.daemon for t in threading.enumerate() if t.name.startswith("test-seq-"))


def test_busy_workers_never_make_a_job_wait() -> None:
    workers = Workers("test-busy")
    release, started = threading.Event(), threading.Semaphore(0)

    def blocker() -> None:
        started.release()
        release.wait(5)

    for _ in range(12):  # more jobs than cores: each starts at once on a worker of its own
        workers.submit(blocker)
    assert all(started.acquire(timeout=5) for _ in range(12))
    release.set()


def test_a_job_is_waited_for_by_blocking_or_on_the_loop_and_hands_back_what_it_returned_or_raised() -> None:
    import asyncio

    import pytest

    from trialrun._util.workers import Job

    workers = Workers("test-job")
    ctx_var = __import__("contextvars").ContextVar("ctx_var", default="unset")
    ctx_var.set("caller's")
    quick = workers.start(lambda a, b=0: (a + b, ctx_var.get()), 1, b=2)
    assert quick.wait(5) and quick.wait(0) and quick.result() == (3, "caller's")  # done stays done
    assert quick.duration is not None and quick.duration >= 0

    def boom() -> None:
        raise KeyError("boom")

    failed = workers.start(boom)
    assert failed.wait(5)
    with pytest.raises(KeyError, match="boom"):
        failed.result()

    release = threading.Event()

    async def main() -> tuple[object, object, object]:
        slow: Job = workers.start(lambda: release.wait(5) and "late")
        assert not slow.wait(0.01) and slow.duration is None  # still running: its outcome comes through the loop
        future = slow.future()
        asyncio.get_running_loop().call_later(0.01, release.set)
        late = await asyncio.wait_for(future, 5)
        stuck = workers.start(threading.Event().wait, 0.2)  # given up on: its late outcome goes nowhere
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(stuck.future(), 0.01)
        raising = workers.start(boom)
        raising.wait(5)
        with pytest.raises(KeyError):
            await raising.future()  # a future asked for after the call returned is settled at once
        return late, await quick.future(), stuck.wait(5)

    assert asyncio.run(main()) == ("late", (3, "caller's"), True)


# -- the companion thread of a thread that waits for its timed call (Tool.run_sync) ----------------------------


def _alive(ident: int) -> bool:
    return any(t.ident == ident for t in threading.enumerate())


def _gone(ident: int, seconds: float = 5.0) -> bool:
    for _ in range(int(seconds / 0.005)):
        if not _alive(ident):
            return True
        threading.Event().wait(0.005)
    return False


def test_a_threads_timed_calls_share_one_companion_and_hand_back_values_errors_and_context() -> None:
    import contextvars

    import pytest

    from trialrun._util.workers import call_with_limit

    var = contextvars.ContextVar("var", default="unset")
    var.set("caller's")
    seen = [call_with_limit(lambda n: (n, threading.get_ident(), var.get()), {"n": i}, 5) for i in range(5)]
    assert [value[0] for _, value in seen] == list(range(5)) and all(finished for finished, _ in seen)
    idents = {value[1] for _, value in seen}
    assert len(idents) == 1 and threading.get_ident() not in idents  # one companion, not the caller's own thread
    assert {value[2] for _, value in seen} == {"caller's"}

    def boom() -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        call_with_limit(boom, {}, 5)
    assert call_with_limit(threading.get_ident, {}, 5) == (True, idents.pop())  # a raising call keeps it


def test_a_late_call_is_given_up_on_time_and_its_companion_ends_when_it_returns() -> None:
    import time

    from trialrun._util.workers import call_with_limit

    release = threading.Event()
    started = time.monotonic()
    late = []
    assert call_with_limit(lambda: late.append(threading.get_ident()) or release.wait(5), {}, 0.05) == (False, None)
    assert time.monotonic() - started < 1.0
    finished, after = call_with_limit(threading.get_ident, {}, 5)  # a new companion: the late one is still busy
    assert finished and after != late[0] and _alive(late[0])
    release.set()
    assert _gone(late[0])  # it ended once its late call returned
    assert call_with_limit(threading.get_ident, {}, 5) == (True, after)


def test_a_companion_ends_with_the_thread_it_served() -> None:
    from trialrun._util.workers import call_with_limit

    served: list[int] = []
    caller = threading.Thread(target=lambda: served.append(call_with_limit(threading.get_ident, {}, 5)[1]))
    caller.start()
    caller.join(5)
    assert served and _gone(served[0])


def test_a_call_made_while_one_is_in_flight_on_the_same_thread_gets_its_own_companion_and_outcome() -> None:
    import signal

    import pytest

    from trialrun._util.workers import call_with_limit

    inner: list[tuple[bool, object]] = []

    def on_alarm(signum: int, frame: object) -> None:  # runs on this thread while it waits for the outer call
        inner.append(call_with_limit(lambda: "inner", {}, 5))

    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        assert call_with_limit(lambda: threading.Event().wait(0.3) or "outer", {}, 5) == (True, "outer")
        assert inner == [(True, "inner")]

        def interrupt(signum: int, frame: object) -> None:
            raise KeyboardInterrupt

        signal.signal(signal.SIGALRM, interrupt)  # Ctrl-C while waiting: the late outcome must reach nobody
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        with pytest.raises(KeyboardInterrupt):
            call_with_limit(lambda: threading.Event().wait(0.2) or "stale", {}, 5)
        threading.Event().wait(0.3)  # the interrupted call has returned by now
        assert call_with_limit(lambda: "fresh", {}, 5) == (True, "fresh")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# a fork of a process with threads, on purpose (3.12+ warns of it)
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded, use of fork:DeprecationWarning")
def test_a_forked_child_makes_companions_of_its_own_and_leaves_the_parents_alone() -> None:
    import os

    from trialrun._util.workers import call_with_limit

    parent = call_with_limit(threading.get_ident, {}, 5)[1]  # this thread has a companion now
    pid = os.fork()
    if pid == 0:  # the child: its call must run (the parent's companion is not here), and within its limit
        try:
            ok = call_with_limit(lambda: os.getpid(), {}, 5) == (True, os.getpid())
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert call_with_limit(threading.get_ident, {}, 5) == (True, parent)  # the child did not stop the parent's


# a fork of a process with threads, on purpose (3.12+ warns of it)
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded, use of fork:DeprecationWarning")
def test_a_forked_child_starts_workers_of_its_own() -> None:
    import os

    from trialrun._util.workers import Workers

    workers = Workers("test-fork")
    assert workers.start(lambda: 1).wait(5)
    for _ in range(1000):  # the worker is idle again
        if workers._idle:
            break
        threading.Event().wait(0.001)
    pid = os.fork()
    if pid == 0:  # the idle worker is the parent's: a job must not be handed to it here
        try:
            job = workers.start(os.getpid)
            ok = job.wait(5) and job.result() == os.getpid()
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_without_companions_a_pooled_worker_runs_the_call_and_the_limit_holds(monkeypatch) -> None:
    import errno
    import os
    import time

    import trialrun._util.workers as threads

    def no_pipes() -> tuple[int, int]:
        raise OSError(errno.EMFILE, "Too many open files")

    results: list[object] = []

    def calls() -> None:
        results.append(threads.call_with_limit(lambda: threading.current_thread().name, {}, 5))
        started = time.monotonic()
        results.append(threads.call_with_limit(threading.Event().wait, {"timeout": 2}, 0.05))
        results.append(time.monotonic() - started)

    for patch in (("os.pipe", no_pipes), ("COMPANIONS", False)):
        results.clear()
        with monkeypatch.context() as m:
            m.setattr(os, "pipe", no_pipes) if patch[0] == "os.pipe" else m.setattr(threads, "COMPANIONS", False)
            caller = threading.Thread(target=calls)  # a fresh thread: it has no companion yet
            caller.start()
            caller.join(10)
        first, late, took = results
        assert first[0] is True and first[1].startswith("trialrun-tool-"), patch  # a pool worker, no companion
        assert late == (False, None) and took < 1.0, patch


# -- a worker started `here` is woken on its waiting caller's core; the call itself runs on every core --------


needs_affinity = pytest.mark.skipif(not hasattr(__import__("os"), "sched_setaffinity"), reason="Linux only")


def _back_on_the_idle_list(pool: Workers) -> None:
    for _ in range(1000):
        if pool._idle:
            return
        threading.Event().wait(0.001)


@needs_affinity
def test_a_job_started_here_is_handed_over_on_the_callers_core_and_runs_on_every_core() -> None:
    import os

    from trialrun._util import workers as module

    everywhere = os.sched_getaffinity(0)
    if len(everywhere) < 2:
        pytest.skip("one core: pinning changes nothing to look at")
    pool = Workers("test-here")
    quick = pool.start_here(lambda: (os.sched_getaffinity(0), threading.get_native_id()))  # asked inside the call
    assert quick.wait(5)
    cores, worker = quick.result()
    assert cores == everywhere  # the call never sees the pin
    assert module._sched_getcpu not in (None, module._UNLOADED)  # pinning was really done, not skipped
    _back_on_the_idle_list(pool)
    assert len(os.sched_getaffinity(worker)) == 1  # between calls the worker waits on the caller's core

    plain = pool.start(lambda: (os.sched_getaffinity(0), threading.get_native_id()))  # a caller that does not wait
    assert plain.wait(5) and plain.result() == (everywhere, worker)
    _back_on_the_idle_list(pool)
    assert os.sched_getaffinity(worker) == everywhere  # it is let go of for such a caller
    assert {t.name for t in threading.enumerate() if t.name.startswith("test-here-")} == {"test-here-1"}


@needs_affinity
def test_a_call_runs_on_the_cores_its_caller_may_use_now_not_those_it_had(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process confined after its workers started (`taskset -a -p`): a call, and what it starts, keeps to that
    confinement. (Widening to the cores seen at a worker's start undid it.)"""
    import os

    everywhere = os.sched_getaffinity(0)
    if len(everywhere) < 2:
        pytest.skip("one core: nothing to confine to")
    pool = Workers("test-confined")
    warm = pool.start_here(threading.get_native_id)  # a worker exists, pinned
    assert warm.wait(5)
    _back_on_the_idle_list(pool)
    one = {min(everywhere)}
    tasks = [int(name) for name in os.listdir("/proc/self/task")]
    try:
        for task in tasks:  # what `taskset -a -p -c N PID` does
            try:
                os.sched_setaffinity(task, one)
            except OSError:
                pass
        for start in (pool.start_here, pool.start):
            job = start(lambda: os.sched_getaffinity(0))
            assert job.wait(5) and job.result() == one
    finally:
        for task in tasks:
            try:
                os.sched_setaffinity(task, everywhere)
            except OSError:
                pass


@needs_affinity
def test_a_system_that_refuses_pinning_still_runs_every_job_and_is_not_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from trialrun._util import workers as module

    asked: list[object] = []

    def refuse(tid: int, cpus: object) -> None:
        asked.append(cpus)
        raise PermissionError(1, "Operation not permitted")  # a container's seccomp or cpuset

    monkeypatch.setattr(module, "_sched_getcpu", module._UNLOADED)
    monkeypatch.setattr(os, "sched_setaffinity", refuse)
    pool = Workers("test-refused")
    jobs = [pool.start_here(lambda n=n: n * 2) for n in range(5)]
    assert [job.wait(5) and job.result() for job in jobs] == [0, 2, 4, 6, 8]
    assert len(asked) == 1 and module._sched_getcpu is None


def test_a_callable_may_name_its_parameters_fn_or_self() -> None:
    pool = Workers("test-names")
    for start in (pool.start, pool.start_here):
        job = start(lambda fn, self: fn + self, fn="a", self="b")
        assert job.wait(5) and job.result() == "ab"


def _tool_calls(tool: object, calls: list[dict[str, object]]) -> list[str]:
    """`Tool.run` under one event loop, with a time limit (the worker path), call after call."""
    import asyncio

    async def main() -> list[str]:
        return [await tool.run(arguments, timeout_s=30) for arguments in calls]  # type: ignore[attr-defined]

    return asyncio.run(main())


_STARTS = {
    "child": "import subprocess, sys; open(OUT, 'w').write(subprocess.run([sys.executable, '-c', CHILD], "
             "capture_output=True, text=True).stdout)",
    "grandchild": "import subprocess; subprocess.run(['sh', '-c', 'sleep 0.3 && ' + REPORT + ' > ' + OUT + ' &'])",
    "thread's child": "import threading, subprocess, sys; threading.Thread(target=lambda: open(OUT, 'w').write("
                      "subprocess.run([sys.executable, '-c', CHILD], capture_output=True, text=True).stdout)).start()",
}


@needs_affinity
@pytest.mark.parametrize("how", ["child", "grandchild", "thread's child", "thread"])
def test_what_a_tool_starts_from_a_pinned_hand_off_has_every_core(how: str, tmp_path: Path) -> None:
    """A quick tool's calls are handed over on the loop's core; one of them starts a process (waited for), a shell
    that leaves a background job, a thread that runs a process, or a thread. Each must have every core, as it would
    unpinned: a build or test run a tool starts must not be held to one core. The truth is what each reports of
    itself. (Pinned through the call and widened afterwards, 7 in 10 of a thread's children and half the
    background jobs kept one core: they could not all be found again.)"""
    import os
    import sys

    import trialrun as tr

    everywhere = sorted(os.sched_getaffinity(0))
    if len(everywhere) < 2:
        pytest.skip("one core: pinning changes nothing to look at")
    out = tmp_path / "cores.txt"
    report = f"{sys.executable} -c 'import os; print(sorted(os.sched_getaffinity(0)))'"
    child = "import os, time; time.sleep(0.3); print(sorted(os.sched_getaffinity(0)))"
    workers: list[int] = []
    go = threading.Event()

    @tr.tool
    def work(mode: str) -> str:
        """Quick, or start something."""
        workers.append(threading.get_native_id())
        if mode == "quick":
            return "ok"
        if how == "thread":
            threading.Thread(target=lambda: go.wait(10) and out.write_text(str(sorted(os.sched_getaffinity(0)))),
                             daemon=True).start()
            return "started"
        scope = {"CHILD": child, "REPORT": report, "OUT": str(out)}
        exec(_STARTS[how], scope)  # noqa: S102 - the test's own code
        return "started"

    for _ in range(20):  # on a loaded machine a quick call may overrun the loop's wait: then nothing is pinned
        _tool_calls(work, [{"mode": "quick"}, {"mode": "quick"}, {"mode": "start"}])
        if len(os.sched_getaffinity(workers[-1])) == 1:  # pinned again after the call: it was a pinned hand-off
            break
        go.set()
        threading.Event().wait(0.5)
        out.unlink(missing_ok=True)
        go.clear()
    assert len(os.sched_getaffinity(workers[-1])) == 1, "the worker was never pinned: no pinned hand-off was shown"
    go.set()
    for _ in range(1000):
        if out.exists() and out.read_text().strip():
            break
        threading.Event().wait(0.01)
    assert out.read_text().strip() == str(everywhere)
