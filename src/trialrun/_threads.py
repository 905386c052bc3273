"""Daemon worker threads that never keep a job waiting: an idle worker takes it at once, else a new one starts.

Tools with a time limit run here. A shared fixed-size pool would count the time a call waits for a free worker
against its limit (busy tools that were never slow would time out); a fresh thread per call costs a thread start on
every call. Idle workers are kept (up to a bound) and reused. Workers are daemons, so a tool stuck past its limit
never holds the interpreter open.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from queue import SimpleQueue

__all__ = ["Workers"]

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

    def _work(self, inbox: SimpleQueue[Callable[[], None]]) -> None:
        while True:
            inbox.get()()
            with self._lock:
                if len(self._idle) >= _MAX_IDLE:
                    return
                self._idle.append(inbox)
