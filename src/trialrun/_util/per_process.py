"""One object per process, made on first use, that a forked child does not inherit: the endpoint's accepting thread
and the sandbox's handoff thread (a fork copies only the thread that forked, so a child must make its own)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["PerProcess"]

T = TypeVar("T")


class PerProcess(Generic[T]):
    """One `make()` per process, made on first use (`get`). A forked child makes its own: a fork copies only the
    thread that forked, so the parent's object (whose threads are not in the child) is forgotten there, and the lock
    is new too (another thread may have held the parent's)."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self.current: T | None = None  # without making one: None until the first `get`
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forget)

    def get(self) -> T:
        with self._lock:
            if self.current is None:
                self.current = self._make()
            return self.current

    def _forget(self) -> None:
        self.current, self._lock = None, threading.Lock()
