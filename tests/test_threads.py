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
