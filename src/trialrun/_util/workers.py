"""Daemon worker threads that never keep a job waiting: an idle worker takes it at once, else a new one starts.

Tools with a time limit run here. A shared fixed-size pool would count the time a call waits for a free worker
against its limit (busy tools that were never slow would time out); a fresh thread per call costs a thread start on
every call. Idle workers are kept (up to a bound) and reused. Workers are daemons, so a tool stuck past its limit
never holds the interpreter open.

A caller that blocks a moment for a quick call (the event loop, `Tool.run`) starts it `here`: the worker is pinned to
the core the caller runs on for the hand-offs, which the caller leaves to it as it blocks. Woken on a core of its
own, an idle worker costs the wake-up of an idle CPU (on a virtual machine, the hypervisor's): measured in W1
(bench/agent.py, an async invoke with a timed sync tool) 0.55 -> 0.45 ms of CPU a trial, against 0.36 for the same
round trips by hand. The call itself runs on every core its caller may use (the worker widens itself before and
pins itself again after), so a process or thread it starts inherits no narrowed set: pinned through the call, what
a call started indirectly (a grandchild, a thread's child) could not all be found again to be widened.

A thread that blocks while its timed call runs (`Tool.run_sync`) has a companion of its own instead
(`call_with_limit`): one call at a time, so a byte through a pipe each way is the whole hand-off, with no pool to
pick from (see `call_with_limit` for why a pipe).
"""

from __future__ import annotations

import _thread
import asyncio
import contextvars
import os
import threading
import time
import weakref
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any

__all__ = ["Workers", "Job", "TOOL_WORKERS", "call_with_limit"]

_MAX_IDLE = 64  # workers kept waiting for work; more than this after a burst end when they finish
_POOLS: weakref.WeakSet[Workers] = weakref.WeakSet()  # every pool, for a forked child to forget its idle workers


class _Worker:
    """A worker thread's inbox, its thread id, and the core it is pinned to between calls (-1: none)."""

    __slots__ = ("inbox", "tid", "cpu")

    def __init__(self) -> None:
        self.inbox: SimpleQueue[Callable[[], None]] = SimpleQueue()
        self.tid = 0
        self.cpu = -1

    def pin(self, cpus: set[int]) -> int:
        """Pin the idle worker to the core this thread runs on, of the `cpus` this thread may use now: that core,
        or -1 where there is nothing to gain (one core) or it cannot be done."""
        cpu = _current_cpu()
        if cpu < 0 or len(cpus) < 2 or cpu not in cpus or not self.tid:
            self.free(cpus)
            return -1
        if cpu != self.cpu:
            if not _set_affinity(self.tid, {cpu}):
                self.free(cpus)
                return -1
            self.cpu = cpu
        return cpu

    def free(self, cpus: set[int]) -> None:
        """Let the idle worker run on `cpus` (its caller's now) again."""
        if self.cpu >= 0:
            self.cpu = -1
            _widen(self.tid, cpus)


class Workers:
    """An elastic set of daemon worker threads."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._started = 0
        _POOLS.add(self)

    def submit(self, job: Callable[[], None]) -> None:
        """Run `job()` now on a worker thread. The job must not raise (it reports its own outcome)."""
        worker = self._take()
        if worker.cpu >= 0:  # pinned since a caller waited for its last call
            worker.free(_cores_now())
        worker.inbox.put(job)

    def _take(self) -> _Worker:
        """An idle worker, else a new one."""
        with self._lock:
            worker = self._idle.pop() if self._idle else None
            if worker is None:
                self._started += 1
                number = self._started
        if worker is None:
            worker = _Worker()
            thread = threading.Thread(target=self._work, args=(worker,), name=f"{self._name}-{number}", daemon=True)
            thread.start()
            worker.tid = thread.native_id or 0
        return worker

    def start(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Job:
        """Run `fn(*args, **kwargs)` now on a worker, in a copy of the caller's contextvars; its `Job` says when it
        is done and what it returned or raised."""
        job = Job(contextvars.copy_context(), fn, args, kwargs)
        self.submit(job._run)
        return job

    def start_here(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Job:
        """The same, for a caller about to block in `Job.wait`: the worker is woken on the caller's core (which the
        caller leaves to it as it blocks) and hands back from it, so no idle core is woken either way; the call
        itself runs on every core the caller may use."""
        job = Job(contextvars.copy_context(), fn, args, kwargs)
        worker = self._take()
        cpus = _caller_cpus()
        if cpus is not None:
            job._worker, job._cpu, job._cpus = worker, worker.pin(cpus), cpus
        worker.inbox.put(job._run)
        return job

    def _work(self, worker: _Worker) -> None:
        inbox = worker.inbox
        while True:
            inbox.get()()
            with self._lock:
                if len(self._idle) >= _MAX_IDLE:
                    return
                self._idle.append(worker)


# -- pinning a worker to its caller's core (Linux) ----------------------------------------------------------------


def _caller_cpus() -> set[int] | None:
    """The cores this thread may run on now (asked at every call: a process can be confined later, by `taskset -a
    -p` or its cpuset), or None where pinning is not done."""
    return None if _sched_getcpu is None else _cores_now()


def _cores_now() -> set[int]:
    """The cores this thread may run on (every core, where that cannot be asked)."""
    try:
        return os.sched_getaffinity(0)
    except (OSError, AttributeError):
        return set(range(os.cpu_count() or 1))


def _widen(tid: int, cpus: set[int]) -> None:
    """Let thread `tid` (0: this one) run on `cpus`, else on every core the system allows it (the kernel keeps a
    cpuset's bounds); a thread left on one core would hand that core down to what it starts."""
    if not _set_affinity(tid, cpus):
        try:
            os.sched_setaffinity(tid, range(os.cpu_count() or 1))
        except (OSError, ValueError):
            pass


def _set_affinity(tid: int, cpus: set[int]) -> bool:
    """Set the cores of thread `tid` (0: this one); when the system refuses (a container's cpuset or seccomp),
    pinning stops for good."""
    global _sched_getcpu
    try:
        os.sched_setaffinity(tid, cpus)
        return True
    except (OSError, ValueError):
        _sched_getcpu = None
        return False


def _current_cpu() -> int:
    """The core this thread runs on now, or -1. `sched_getcpu` (a vDSO call, well under a microsecond) through
    ctypes, loaded at the first pinned job, not at import."""
    global _sched_getcpu
    getcpu = _sched_getcpu
    if getcpu is None:
        return -1
    if getcpu is _UNLOADED:
        try:
            import ctypes

            getcpu = ctypes.CDLL(None, use_errno=True).sched_getcpu
            getcpu.restype, getcpu.argtypes = ctypes.c_int, []
        except (ImportError, OSError, AttributeError):  # no ctypes, no libc symbol (not glibc or musl)
            _sched_getcpu = None
            return -1
        _sched_getcpu = getcpu
    return int(getcpu())


def _unloaded() -> int:
    return -1


_UNLOADED: Callable[[], int] = _unloaded
#: the libc function, _UNLOADED until first needed, None where there is none or pinning was refused
_sched_getcpu: Callable[[], int] | None = _UNLOADED if hasattr(os, "sched_setaffinity") else None


class Job:
    """A call running on a worker thread, awaited by blocking (`wait`, with a time limit) or on an event loop
    (`future`), or first the one and then the other: a plain lock, released once when the call returns, so a
    waiting thread wakes at once and nothing is scheduled on a loop unless a future was asked for."""

    __slots__ = ("_context", "_fn", "_args", "_kwargs", "_done", "_mutex", "_outcome", "_future", "_worker",
                 "_cpu", "_cpus", "duration")

    def __init__(self, context: contextvars.Context, fn: Callable[..., Any], args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> None:
        self._context, self._fn, self._args, self._kwargs = context, fn, args, kwargs
        self._done = _thread.allocate_lock()
        self._done.acquire()
        self._mutex = _thread.allocate_lock()
        self._outcome: tuple[Any, BaseException | None] | None = None
        self._future: asyncio.Future[Any] | None = None
        self._worker: _Worker | None = None  # pinned to the core of a caller that waits (`Workers.start_here`)
        self._cpu = -1  # that core
        self._cpus: set[int] = set()  # the cores of the caller, which the call runs on
        #: seconds the call took on its worker, once it returned
        self.duration: float | None = None

    def _run(self) -> None:
        cpu = self._cpu
        if cpu >= 0:  # pinned for the hand-off only: what the call starts must not inherit the one core
            _widen(0, self._cpus)
        started = time.perf_counter()
        try:
            outcome: tuple[Any, BaseException | None] = (self._context.run(self._fn, *self._args, **self._kwargs), None)
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
            outcome = (None, exc)
        self.duration = time.perf_counter() - started
        if cpu >= 0 and not _set_affinity(0, {cpu}) and self._worker is not None:  # back on the waiting caller's core
            self._worker.cpu = -1
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


#: The workers of timed tools awaited on an event loop (`Tool.run`), and of calls that can have no companion
TOOL_WORKERS = Workers("trialrun-tool")


# -- a companion thread per calling thread ---------------------------------------------------------------------


class _Box:
    """What a calling thread and its companion share: the call to run, its outcome, and two pipes: `go` (the caller
    writes a byte, the companion reads it) and `done` (the other way, with a poller for the caller's timed wait)."""

    __slots__ = ("go_r", "go_w", "done_r", "done_w", "poller", "call", "outcome", "stopped", "__weakref__")

    def __init__(self) -> None:
        import select

        self.go_r, self.go_w = os.pipe()
        try:
            self.done_r, self.done_w = os.pipe()
        except BaseException:
            os.close(self.go_r)
            os.close(self.go_w)
            raise
        self.poller = select.poll()
        self.poller.register(self.done_r, select.POLLIN)
        self.call: tuple[contextvars.Context, Callable[..., Any], dict[str, Any]] | None = None
        self.outcome: tuple[Any, BaseException | None] | None = None
        self.stopped = False
        _BOXES.add(self)

    def stop(self) -> None:
        """End the companion: at once when idle, else as soon as the call it runs returns (its outcome unread);
        it closes the pipes as it ends."""
        if not self.stopped:
            self.stopped = True
            self.call = None
            try:
                os.write(self.go_w, b"\0")
            except (OSError, TypeError):  # at interpreter exit os may be gone; the daemon thread goes with it
                pass

    def close(self) -> None:
        for fd in (self.go_r, self.go_w, self.done_r, self.done_w):
            os.close(fd)


def _serve(box: _Box) -> None:
    """The companion's loop; it holds the box, never its owner's handle (whose end stops it)."""
    read, write, go, done = os.read, os.write, box.go_r, box.done_w
    try:
        while True:
            read(go, 1)
            call, box.call = box.call, None
            if call is None:  # stopped
                return
            context, fn, kwargs = call
            try:
                box.outcome = (context.run(fn, **kwargs), None)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                box.outcome = (None, exc)
            del call, context, fn, kwargs  # nothing of the call outlives it here
            write(done, b"\0")
    finally:
        box.close()


class _Companion:
    """A calling thread's handle on its companion thread, kept in a thread-local: when the thread ends, the handle
    goes, and the companion stops with it."""

    __slots__ = ("box",)

    def __init__(self) -> None:
        self.box = box = _Box()
        try:
            threading.Thread(target=_serve, args=(box,), name="trialrun-tool-companion", daemon=True).start()
        except BaseException:  # no thread (too many): nothing will close the pipes but this
            box.stopped = True
            box.close()
            raise

    def __del__(self) -> None:
        box = getattr(self, "box", None)  # None when making the box failed
        if box is not None:
            box.stop()


_local = threading.local()
_BOXES: weakref.WeakSet[_Box] = weakref.WeakSet()


def _forget_threads() -> None:
    """In a forked child: the parent's workers and companions did not come along. Idle workers are forgotten (a job
    put in a dead worker's inbox would never run). The companions' pipes are shared with the parent's: each box is
    marked stopped without a word to its companion, and the child's copies are closed; the child's calls get
    companions of their own."""
    global _local
    for pool in list(_POOLS):
        pool._idle = []
        pool._lock = threading.Lock()
    for box in list(_BOXES):
        if not box.stopped:
            box.stopped = True
            box.close()
    _BOXES.clear()
    _local = threading.local()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_threads)
_POLL_MAX_MS = 2**31 - 1  # poll() takes an int of milliseconds: about 24 days


def _ready(poller: Any, seconds: float) -> bool:
    """Whether the companion answered within `seconds` (a limit longer than poll() takes is waited for in parts)."""
    if seconds * 1000.0 <= _POLL_MAX_MS:
        return bool(poller.poll(seconds * 1000.0))
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if poller.poll(min(left * 1000.0, _POLL_MAX_MS)):
            return True
    return False
#: Where companions work: pipes that select.poll takes (not Windows)
COMPANIONS = os.name == "posix"


def call_with_limit(fn: Callable[..., Any], kwargs: dict[str, Any], limit: float) -> tuple[bool, Any]:
    """Run `fn(**kwargs)` on this thread's companion, in a copy of the caller's contextvars, and wait at most `limit`
    seconds: (True, what it returned), or raise what it raised; (False, None) when it is late. It starts at once
    (the companion has nothing else to do), so the limit counts from its start. POSIX only (`COMPANIONS`).

    Why a byte through a pipe and not a lock: `os.write` lets go of the GIL before it wakes the other thread,
    so the woken thread can take the GIL at once. Released under the GIL, a lock wakes a thread that finds the GIL
    held, sleeps again, and is woken once more when the GIL is let go: about 3 context switches a direction instead
    of 1. Measured against the pooled worker and two locks: 16 threads hopping, 52 -> 18 µs of CPU a hop (7.3 -> 3.0
    context switches); bench/agent.py's W1, 10.2 -> 5.0 switches a trial and 0.91-0.97x the CPU.

    A late or interrupted call keeps its companion (a thread cannot be stopped), which ends when the call returns;
    the next call gets a new one. Where there can be no companion (not POSIX, or out of file descriptors or threads)
    a `TOOL_WORKERS` worker runs the call, just as promptly. While a call is in flight its companion is out of the thread-local slot, so a
    call made meanwhile on this thread (by a signal handler) gets a companion of its own.
    """
    companion: _Companion | None = getattr(_local, "companion", None)
    if companion is None:
        try:
            companion = _Companion() if COMPANIONS else None
        except (OSError, RuntimeError):  # out of file descriptors or threads: a pooled worker does it
            companion = None
        if companion is None:
            job = TOOL_WORKERS.start(fn, **kwargs)
            return (True, job.result()) if job.wait(limit) else (False, None)
    else:
        _local.companion = None
    box = companion.box
    box.call = (contextvars.copy_context(), fn, kwargs)
    os.write(box.go_w, b"\0")
    try:
        finished = _ready(box.poller, limit)
    except BaseException:  # interrupted (Ctrl-C): given up on, as a late call is
        box.stop()
        raise
    if not finished:
        box.stop()
        return False, None
    os.read(box.done_r, 1)
    outcome, box.outcome = box.outcome, None
    _local.companion = companion
    del companion, box  # a raised error's traceback keeps this frame: not the handle, which must die with its thread
    assert outcome is not None
    value, error = outcome
    if error is not None:
        raise error
    return True, value
