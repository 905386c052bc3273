"""The elastic daemon workers behind timed tools: no job waits for a worker, idle workers are reused."""

from __future__ import annotations

import threading

from trialrun._threads import Workers


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

    from trialrun._threads import Job

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
