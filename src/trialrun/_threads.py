"""Daemon worker threads that never keep a job waiting: an idle worker takes it at once, else a new one starts.

Tools with a time limit run here. A shared fixed-size pool would count the time a call waits for a free worker
against its limit (busy tools that were never slow would time out); a fresh thread per call costs a thread start on
every call. Idle workers are kept (up to a bound) and reused. Workers are daemons, so a tool stuck past its limit
never holds the interpreter open.
"""

from __future__ import annotations

import _thread
import asyncio
import contextvars
import threading
import time
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any

__all__ = ["Workers", "Job"]

_MAX_IDLE = 64  # workers kept waiting for work; more than this after a burst end when they finish


class Workers:
    """An elastic set of daemon worker threads."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._idle: list[SimpleQueue[Callable[[], None]]] = []
        self._lock = threading.Lock()
        self._started = 0

    def submit(self, job: Callable[[], None]) -> None:
        """Run `job()` now on a worker thread. The job must not raise (it reports its own outcome)."""
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
            if inbox is None:
                self._started += 1
                number = self._started
        if inbox is None:
            inbox = SimpleQueue()
            threading.Thread(target=self._work, args=(inbox,), name=f"{self._name}-{number}", daemon=True).start()
        inbox.put(job)

    def start(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Job:
        """Run `fn(*args, **kwargs)` now on a worker, in a copy of the caller's contextvars; its `Job` says when it
        is done and what it returned or raised."""
        job = Job(contextvars.copy_context(), fn, args, kwargs)
        self.submit(job._run)
        return job

    def _work(self, inbox: SimpleQueue[Callable[[], None]]) -> None:
        while True:
            inbox.get()()
            with self._lock:
                if len(self._idle) >= _MAX_IDLE:
                    return
                self._idle.append(inbox)


class Job:
    """A call running on a worker thread, awaited by blocking (`wait`, with a time limit) or on an event loop
    (`future`), or first the one and then the other: a plain lock, released once when the call returns, so a
    waiting thread wakes at once and nothing is scheduled on a loop unless a future was asked for."""

    __slots__ = ("_context", "_fn", "_args", "_kwargs", "_done", "_mutex", "_outcome", "_future", "duration")

    def __init__(self, context: contextvars.Context, fn: Callable[..., Any], args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> None:
        self._context, self._fn, self._args, self._kwargs = context, fn, args, kwargs
        self._done = _thread.allocate_lock()
        self._done.acquire()
        self._mutex = _thread.allocate_lock()
        self._outcome: tuple[Any, BaseException | None] | None = None
        self._future: asyncio.Future[Any] | None = None
        #: seconds the call took on its worker, once it returned
        self.duration: float | None = None

    def _run(self) -> None:
        started = time.perf_counter()
        try:
            outcome: tuple[Any, BaseException | None] = (self._context.run(self._fn, *self._args, **self._kwargs), None)
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
            outcome = (None, exc)
        self.duration = time.perf_counter() - started
        with self._mutex:
            self._outcome = outcome
            future = self._future
        self._done.release()
        if future is not None:
            try:
                future.get_loop().call_soon_threadsafe(_settle, future, outcome)
            except RuntimeError:  # the loop closed while an abandoned call ran on
                pass

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the call returned (True) or `timeout` seconds passed (False); None waits for ever."""
        if self._done.acquire(True, -1 if timeout is None else max(timeout, 0.0)):
            self._done.release()
            return True
        return False

    def result(self) -> Any:
        """What the call returned (it must be done), or raise what it raised."""
        assert self._outcome is not None, "Job.result() before the call returned"
        value, error = self._outcome
        if error is not None:
            raise error
        return value

    def future(self) -> asyncio.Future[Any]:
        """A future of the running loop that settles with the call's outcome (at once if it is done already)."""
        future = asyncio.get_running_loop().create_future()
        with self._mutex:
            outcome = self._outcome
            if outcome is None:
                self._future = future
        if outcome is not None:
            _settle(future, outcome)
        return future


def _settle(future: asyncio.Future[Any], outcome: tuple[Any, BaseException | None]) -> None:
    if not future.done():  # a timed-out call's future was cancelled: its late outcome goes nowhere
        value, error = outcome
        if error is None:
            future.set_result(value)
        else:
            future.set_exception(error)
