"""Calls run on daemon threads: what a trial and a timed tool hand to a thread.

A `concurrent.futures.Executor` whose calls run on daemon threads, each in a copy of the caller's contextvars (the
no-network guard's state among them):

- a call starts at once, on an idle thread or else a new one: a time limit counts from the call's start, never
  from a wait for a free worker of a fixed-size pool (busy tools that were never slow would time out); idle threads
  are kept (up to `keep`) and reused, as starting a thread costs more than the rest of a quick hop;
- daemon threads, because a call given up on (a tool past its limit, a synchronous agent past its case's timeout,
  a Ctrl-C) cannot be stopped: it runs on, abandoned, and must never hold the interpreter open at exit, which
  `ThreadPoolExecutor` does (it joins its workers then).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import itertools
import os
import queue
import threading
import weakref
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any, TypeVar

__all__ = ["DaemonThreads", "DAEMON_THREADS", "call_with_limit"]

_T = TypeVar("_T")
# Where a call's outcome goes: the Future `submit` returns, the reply box of `call` (the caller waits on it), or the
# event loop's future of `start`.
_Box = concurrent.futures.Future[Any] | SimpleQueue[tuple[bool, Any]] | asyncio.Future[Any]
_Call = tuple[contextvars.Context, _Box, Callable[..., Any], tuple[Any, ...], dict[str, Any]]
_EXECUTORS: weakref.WeakSet[DaemonThreads] = weakref.WeakSet()  # for a forked child to forget the idle threads


class DaemonThreads(concurrent.futures.Executor):
    """Each `submit` runs its call at once on a daemon thread (`name-1`, `name-2`, ...) in a copy of the caller's
    contextvars: an idle one, else a new one. At most `keep` idle threads wait for work."""

    def __init__(self, name: str, keep: int = 64) -> None:
        self._name = name
        self._keep = keep
        self._numbers = itertools.count(1)
        self._idle: list[SimpleQueue[_Call]] = []  # their inboxes; the last to finish is the next to work (warm)
        self._lock = threading.Lock()
        _EXECUTORS.add(self)

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[_T]:
        future: concurrent.futures.Future[_T] = concurrent.futures.Future()
        self._take().put((contextvars.copy_context(), future, fn, args, kwargs))
        return future

    def call(self, fn: Callable[..., _T], kwargs: dict[str, Any], limit: float) -> tuple[bool, _T | None]:
        """`fn(**kwargs)` on a thread, waited on for at most `limit` seconds: (True, what it returned), or raise what
        it raised; (False, None) when late (it runs on, abandoned). The outcome comes back through a reply box (a
        `SimpleQueue`: one lock in C, where a Future and `concurrent.futures.wait` take conditions and waiters in
        Python): a timed sync tool makes this hop on every call."""
        reply: SimpleQueue[tuple[bool, Any]] = SimpleQueue()
        self._take().put((contextvars.copy_context(), reply, fn, (), kwargs))
        try:
            ok, value = reply.get(timeout=limit)
        except queue.Empty:
            return False, None
        if ok:
            return True, value
        raise value

    def start(self, fn: Callable[..., _T], /, *args: Any) -> asyncio.Future[_T]:
        """`fn(*args)` on a thread, for the running event loop to await (a trial's synchronous invoke, its graders):
        the outcome is handed to the loop with one `call_soon_threadsafe`, without the concurrent Future (its
        condition) and the chaining that `loop.run_in_executor` adds. Cancelling the future abandons the call."""
        future: asyncio.Future[_T] = asyncio.get_running_loop().create_future()
        self._take().put((contextvars.copy_context(), future, fn, args, {}))
        return future

    def _take(self) -> SimpleQueue[_Call]:
        """The inbox of an idle thread, else of a new one."""
        with self._lock:
            if self._idle:
                return self._idle.pop()
        inbox: SimpleQueue[_Call] = SimpleQueue()
        threading.Thread(target=self._serve, args=(inbox,), name=f"{self._name}-{next(self._numbers)}",
                         daemon=True).start()
        return inbox

    def _serve(self, inbox: SimpleQueue[_Call]) -> None:
        while True:
            context, box, fn, args, kwargs = inbox.get()
            outcome: tuple[bool, Any] | None = None
            if isinstance(box, (SimpleQueue, asyncio.Future)) or box.set_running_or_notify_cancel():
                try:
                    outcome = (True, context.run(fn, *args, **kwargs))
                except BaseException as exc:  # noqa: BLE001 - handed to whoever waits (SystemExit included)
                    outcome = (False, exc)
            del context, fn, args, kwargs  # nothing of the call outlives it here
            with self._lock:  # idle again BEFORE the caller learns the outcome: its next call finds this thread
                stay = len(self._idle) < self._keep
                if stay:
                    self._idle.append(inbox)
            if outcome is not None:
                if isinstance(box, SimpleQueue):
                    box.put(outcome)
                elif isinstance(box, asyncio.Future):
                    try:
                        box.get_loop().call_soon_threadsafe(_settle, box, outcome)
                    except RuntimeError:  # the loop closed meanwhile: nobody waits
                        pass
                elif outcome[0]:
                    box.set_result(outcome[1])
                else:
                    box.set_exception(outcome[1])
            del box, outcome
            if not stay:
                return

    def _forget_idle(self) -> None:
        self._idle = []
        self._lock = threading.Lock()


def _settle(future: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    """On the loop: the outcome into the awaited future, unless it was cancelled meanwhile (a timeout, Ctrl-C)."""
    if future.cancelled():
        return
    if outcome[0]:
        future.set_result(outcome[1])
    else:
        future.set_exception(outcome[1])


def _after_fork() -> None:
    """In a forked child the parent's threads did not come along: a call put in their inboxes would never run."""
    for executor in list(_EXECUTORS):
        executor._forget_idle()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)

#: Where trialrun's own calls run: a trial's synchronous setup, invoke, graders and teardown, and timed tools.
DAEMON_THREADS = DaemonThreads("trialrun")


def call_with_limit(fn: Callable[..., Any], kwargs: dict[str, Any], limit: float) -> tuple[bool, Any]:
    """Run `fn(**kwargs)` on a daemon thread and wait at most `limit` seconds: (True, what it returned), or raise
    what it raised; (False, None) when it is late (it runs on, abandoned). An exception that interrupts the wait
    (Ctrl-C) leaves it running the same way."""
    return DAEMON_THREADS.call(fn, kwargs, limit)
