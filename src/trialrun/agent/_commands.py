"""Shell commands the agent's tools start: their output read with bounded memory, and no command left behind.

A command runs under a keeper (`trialrun._contain.keeper`: a child subreaper that started it and to which
every process it starts stays attached, whatever session it moves to or environment it clears), with an
environment cut to an allow-list (`command_env`: never the parent's credentials). Killing a command tells its keeper
to kill everything below it, and it says what it killed. When the command's shell exits, what it left running
(`server &`) is kept for later commands, under the same keeper, until the trial ends. Every live command is
registered here, so that it dies whenever nobody waits for it any more:

- its own timeout (`shell_tools(timeout_s=...)`);
- the tool call giving up on it: `Tool.run`/`Tool.run_sync` open a `CallScope` per call and abandon it on their
  time limit, on asyncio cancellation (a case's timeout, Ctrl-C in the runner) or on KeyboardInterrupt;
- its workspace being removed while it runs (the trial it belonged to is over, even if a synchronous agent was
  abandoned in a thread nobody can stop);
- `stop_commands(root)`, and interpreter exit (atexit) for whatever is still alive, background children included.

Output is read as it arrives, keeping only a head and a tail of `max_output` characters and counting the rest, so
`yes` costs a few kilobytes however long it runs.
"""

from __future__ import annotations

import atexit
import codecs
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._contain.keeper import SyncKeeper
from .._contain.scope import Scope

__all__ = ["CallScope", "CURRENT_CALL", "Finished", "run_shell", "stop_commands", "cut_note", "command_env", "COMMAND_ENV"]

#: What a command inherits from trialrun's own environment (and `LC_*`), plus the names a user passes: enough to find
#: programs and speak the user's language, never an API key or token of the process running the evaluation.
COMMAND_ENV = ("PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR", "USER", "LOGNAME", "SHELL", "COLORTERM",
               "NO_COLOR", "COLUMNS", "LINES")
def command_env(pass_env: tuple[str, ...] | list[str] = ()) -> dict[str, str]:
    """The environment a command starts with: the `COMMAND_ENV` allow-list, `LC_*`, and the `pass_env` names."""
    keep = set(COMMAND_ENV) | set(pass_env)
    return {name: value for name, value in os.environ.items() if name in keep or name.startswith("LC_")}

_CHUNK = 1 << 16
_POLL_S = 0.25  # how often a waiting command checks that its workspace still exists
_DRAIN_S = 1.0  # after a kill, how long to keep reading what a process outside the group still writes


class CallScope:
    """One tool call. What the call starts registers a cleanup; abandoning the call runs them (once)."""

    __slots__ = ("_lock", "_cleanups", "abandoned")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cleanups: dict[object, Callable[[], None]] = {}
        self.abandoned = False

    def hold(self, key: object, cleanup: Callable[[], None]) -> bool:
        """Register `cleanup`; False when the call was already abandoned (the caller must clean up now)."""
        with self._lock:
            if self.abandoned:
                return False
            self._cleanups[key] = cleanup
            return True

    def release(self, key: object) -> None:
        with self._lock:
            self._cleanups.pop(key, None)

    def abandon(self) -> None:
        with self._lock:
            self.abandoned = True
            cleanups = list(self._cleanups.values())
            self._cleanups.clear()
        for cleanup in cleanups:
            cleanup()


#: The tool call running in this context (set by `Tool.run`/`Tool.run_sync`, copied into their worker threads).
CURRENT_CALL: ContextVar[CallScope | None] = ContextVar("trialrun_tool_call", default=None)

# -- the registry of live keepers ------------------------------------------------------------------------------
_LOCK = threading.Lock()
#: every keeper still alive -> the workspace its command ran in; kept after the command ends while what it left
#: running lives (a `server &` for the next command), until `stop_commands`
_KEEPERS: dict[_Kept, Path] = {}


class _Kept:
    """One command under its keeper, seen from here (or, where no keeper can run, in its own session)."""

    __slots__ = ("keeper", "process", "pipes", "lock", "running", "scope")

    def __init__(self, keeper: SyncKeeper | None, process: subprocess.Popen[bytes] | None,
                 pipes: tuple[int, int], scope: Scope | None = None) -> None:
        self.keeper = keeper
        self.process = process  # only without a keeper
        self.scope = scope  # only without a keeper: its marker, and the sweep that kills what it left
        self.pipes = pipes  # its stdout and stderr (read ends)
        self.running = True  # its output is being read (by the thread that holds `lock`)
        self.lock = threading.RLock()

    def stop(self) -> None:
        """Kill the command and everything it started (from any thread; the keeper does the work)."""
        if self.keeper is not None:
            self.keeper.stop()
        elif self.process is not None:
            _kill_group(self.process.pid)
            self._sweep()

    def _sweep(self) -> list[str]:
        """(without a keeper) Kill its session, what carries its marker, and what descends from those."""
        assert self.process is not None and self.scope is not None
        return self.scope.sweep(None, session=self.process.pid)

    def finish(self) -> list[str]:
        """Stop it and wait for the keeper's report: what was killed."""
        with self.lock:
            if self.keeper is not None:  # (when it cannot answer, trialrun sweeps its scope: `SyncKeeper.finish`)
                self.keeper.stop()
                return self.keeper.finish()
            assert self.process is not None
            _kill_group(self.process.pid)
            killed = self._sweep()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                killed += self._sweep()
                self.process.wait()
            return killed

    def over(self) -> bool:
        """The command ended and nothing it started is left (its keeper ended; without one, its group is empty)."""
        if self.keeper is not None:
            return self.keeper.over()
        assert self.process is not None
        return not _group_alive(self.process.pid)

    def ended(self) -> bool:
        """Nothing of it is alive any more (asked without waiting)."""
        if self.keeper is not None:
            return self.keeper.ended()
        assert self.process is not None
        return self.process.poll() is not None and not _group_alive(self.process.pid)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # already gone
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def stop_commands(root: str | os.PathLike[str] | None = None) -> int:
    """Kill every command (and its background children) still alive that shell tools started, under `root` only
    when given; returns how many commands were stopped. Runs at interpreter exit for all of them."""
    return len(_stop(root))


def left_under(root: str | os.PathLike[str]) -> bool:
    """Whether a command that shell tools started under `root` may still hold processes, or lost its keeper (asked
    without waiting)."""
    base = Path(root).resolve()
    with _LOCK:
        return any(where == base or base in where.parents for where in (*_KEEPERS.values(), *_LOST))


def stop_listing(root: str | os.PathLike[str]) -> list[str]:
    """`stop_commands(root)`, saying what was killed ("pid N: argv"): a trial's note of what its commands left, and
    of what was killed when a command's keeper was lost (`_LOST`)."""
    base = Path(root).resolve()
    with _LOCK:
        lost = [line for where in list(_LOST) if where == base or base in where.parents for line in _LOST.pop(where)]
    return lost + [line for killed in _stop(root) for line in killed]


#: What was killed, by workspace, when a command's keeper was killed or stopped (by the command itself): kept for
#: the trial's note (TrialResult.killed) until `stop_listing` hands it over.
_LOST: dict[Path, list[str]] = {}


def _stop(root: str | os.PathLike[str] | None) -> list[list[str]]:
    base = None if root is None else Path(root).resolve()
    with _LOCK:
        chosen = [kept for kept, where in _KEEPERS.items() if base is None or where == base or base in where.parents]
        for kept in chosen:
            del _KEEPERS[kept]
    for kept in chosen:  # all told first (a running command's reader then sees it end), then each waited for
        kept.stop()
    return [kept.finish() for kept in chosen]


atexit.register(stop_commands)


def _register(kept: _Kept, root: Path) -> None:
    with _LOCK:
        # Keepers of commands that finished (`server &`) are kept until what they hold has ended: prune them here.
        for old in [k for k in _KEEPERS if k is not kept and not k.running and k.ended()]:
            del _KEEPERS[old]
            if old.keeper is not None:
                old.keeper.close()
        _KEEPERS[kept] = root


def _forget_if_over(kept: _Kept) -> None:
    """After the command's shell has exited: forget it unless background children live on under its keeper."""
    if kept.over():
        with _LOCK:
            _KEEPERS.pop(kept, None)
        kept.finish()


# -- output kept within bounds ---------------------------------------------------------------------------------
def cut_note(cut: int, total: int, unit: str = "characters", what: str = "output was") -> str:
    """The one wording of "this much was left out" that every capped tool result uses."""
    return f"\n[... {cut} {unit} cut; {what} {total} {unit} ...]\n"


class _Capped:
    """A stream's first `limit * 3 // 4` and last remaining characters, and how many it had in all."""

    __slots__ = ("head_limit", "tail_limit", "_head", "_head_len", "_tail", "total", "_decoder")

    def __init__(self, limit: int) -> None:
        self.head_limit = limit * 3 // 4
        self.tail_limit = limit - self.head_limit
        self._head: list[str] = []
        self._head_len = 0
        self._tail = ""
        self.total = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, data: bytes, final: bool = False) -> None:
        text = self._decoder.decode(data, final)
        if not text:
            return
        self.total += len(text)
        room = self.head_limit - self._head_len
        if room > 0:
            part = text[:room]
            self._head.append(part)
            self._head_len += len(part)
            text = text[room:]
            if not text:
                return
        if len(text) >= self.tail_limit:
            self._tail = text[len(text) - self.tail_limit:]
        else:
            self._tail = (self._tail + text)[-self.tail_limit:]

    @property
    def complete(self) -> bool:
        return self.total <= self.head_limit + self.tail_limit

    def text(self) -> str:
        """All of it (only when complete)."""
        return "".join(self._head) + self._tail

    def first(self, n: int) -> str:
        """The first n characters (n <= head_limit, or the stream is complete)."""
        return "".join(self._head)[:n]

    def last(self, n: int) -> str:
        """The last n characters (n <= tail_limit, or the stream is complete)."""
        if n <= 0:
            return ""
        whole = self.text() if self.complete else self._tail
        return whole[-n:]


def _render(out: _Capped, err: _Capped, limit: int) -> str:
    """Standard output, then standard error on a line of its own, capped at `limit` characters with a note."""
    sep = "\n" if err.total and out.total and not out.last(1).endswith("\n") else ""
    total = out.total + len(sep) + err.total
    if total <= limit:  # then each stream is complete
        return out.text() + sep + err.text()
    head_n = limit * 3 // 4
    tail_n = limit - head_n
    head = (out.first(head_n) + sep + err.first(head_n))[:head_n]
    tail = (out.last(tail_n) + sep + err.last(tail_n))[-tail_n:] if tail_n else ""
    return head + cut_note(total - head_n - tail_n, total) + tail


# -- running one command -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Finished:
    """How a command ended: its exit code (negative: killed by that signal), its capped output, why it was
    stopped (None when it ended by itself), and what was killed when it was ("pid N: argv")."""

    returncode: int
    output: str
    stopped: str | None = None  # "timeout" | "workspace removed" | "keeper lost"
    killed: tuple[str, ...] = ()
    lost: str | None = None  # how its keeper was lost ("killed by SIGKILL", "stopped by SIGSTOP"), when it was


def run_shell(
    command: str, cwd: Path, timeout_s: float | None, max_output: int, sandbox: Any = None,
    env: dict[str, str] | None = None, pass_env: tuple[str, ...] = (),
) -> Finished:
    """Run `command` through /bin/sh in `cwd`, under a keeper that never lets it or anything it starts outlive its
    caller, with `env` (default: `command_env()`); in a bubblewrap sandbox when `sandbox` is an active
    `trialrun._contain.sandbox.Sandbox` (its own environment allow-list then, plus the `pass_env` names)."""
    if sandbox is not None and sandbox.active:
        wrapped: list[str] = sandbox.command(command, cwd)
        passed = {name: os.environ[name] for name in pass_env if name in os.environ}
        environment = {**sandbox.environment(None), **passed, "HOME": "/tmp"}
    else:
        wrapped = ["/bin/sh", "-c", command]
        environment = dict(command_env() if env is None else env)
    # the keeper around the sandbox, if any: in bwrap what the shell left dies with it (its PID namespace)
    keeper: SyncKeeper | None = SyncKeeper()
    kept: _Kept | None = None
    scope = CURRENT_CALL.get()
    key = object()
    try:  # from here on, whatever happens (Ctrl-C included, even before the keeper says it started) kills the
        #   command: closing our end of the keeper's socket is its order to kill everything
        assert keeper is not None
        pipes = keeper.launch(wrapped, env=environment, cwd=cwd)
        if pipes is not None:
            kept = _Kept(keeper, None, pipes)
            keeper.started()
        else:  # no Python to run a keeper: a session of its own, killed by a /proc scan (setsid escapes it)
            keeper.close()
            keeper = None
            marked = Scope(cgroup=False)
            process = subprocess.Popen(wrapped, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, start_new_session=True, env=marked.env(environment))
            assert process.stdout is not None and process.stderr is not None
            kept = _Kept(None, process, (process.stdout.fileno(), process.stderr.fileno()), marked)
        _register(kept, cwd)
        if scope is not None and not scope.hold(key, kept.stop):
            kept.stop()  # the call was abandoned while the command started
        out, err = _Capped(max_output), _Capped(max_output)
        with kept.lock:
            try:
                stopped = _pump(kept, out, err, cwd, None if timeout_s is None else time.monotonic() + timeout_s)
            finally:
                kept.running = False
        lost = keeper.reports.lost if keeper is not None else None
        if lost is not None:  # the command killed or stopped its keeper: its warden (or trialrun) killed the rest
            stopped = "keeper lost"
        killed = tuple(kept.finish()) if stopped is not None else ()
        lost = keeper.reports.lost if keeper is not None else None
        if lost is not None:
            with _LOCK:
                _LOST.setdefault(cwd.resolve(), []).extend(killed)
        status = keeper.reports.status if keeper is not None else kept.process.returncode if kept.process else None
        return Finished(status if status is not None else -9, _render(out, err, max_output), stopped, killed, lost)
    except BaseException:  # KeyboardInterrupt, or anything else that means nobody reads the result
        if kept is not None:
            kept.stop()
        elif keeper is not None:
            keeper.close()  # the keeper may have started: our end closed, it kills everything
        raise
    finally:
        if scope is not None:
            scope.release(key)
        if kept is not None:
            if kept.process is not None:
                for pipe in (kept.process.stdout, kept.process.stderr):
                    if pipe is not None:
                        pipe.close()
            else:
                for fd in kept.pipes:
                    os.close(fd)
            _forget_if_over(kept)


def _pump(kept: _Kept, out: _Capped, err: _Capped, cwd: Path, deadline: float | None) -> str | None:
    """Read both pipes until they close and the shell exits, or until a reason to stop it; returns that reason."""
    process, keeper = kept.process, kept.keeper
    stopped: str | None = None
    grace: float | None = None  # after a kill: stop reading at this time even if a pipe stays open
    next_check = time.monotonic() + _POLL_S

    def stop(reason: str) -> None:
        nonlocal stopped, grace
        kept.stop()
        stopped, grace = reason, time.monotonic() + _DRAIN_S

    def shell_exited() -> bool:
        if keeper is not None:
            return keeper.reports.exited
        assert process is not None
        return process.poll() is not None

    with selectors.DefaultSelector() as selector:
        for fd, sink in zip(kept.pipes, (out, err)):
            selector.register(fd, selectors.EVENT_READ, sink)
        if keeper is not None:
            selector.register(keeper.ours, selectors.EVENT_READ, keeper)
        pipes = 2
        while pipes or not shell_exited():
            now = time.monotonic()
            if stopped is None:
                if deadline is not None and now >= deadline:
                    stop("timeout")
                elif now >= next_check:
                    next_check = now + _POLL_S
                    if not cwd.is_dir():
                        stop("workspace removed")
            elif grace is not None and now >= grace:
                break  # something still holds the pipes: stop reading
            if process is not None and not pipes:  # no keeper to say the shell exited (`exec >&-; sleep 99`)
                try:
                    process.wait(_POLL_S if deadline is None else max(0.0, min(_POLL_S, deadline - now)))
                except subprocess.TimeoutExpired:
                    pass
                continue
            limit = grace if stopped is not None else deadline
            wait = _POLL_S if limit is None else max(0.0, min(_POLL_S, limit - time.monotonic()))
            for ready, _ in selector.select(wait):
                if ready.data is keeper:
                    assert keeper is not None
                    if not keeper.read():
                        selector.unregister(keeper.ours)
                    continue
                sink = ready.data
                data = os.read(ready.fd, _CHUNK)
                if data:
                    sink.feed(data)
                else:
                    selector.unregister(ready.fd)
                    sink.feed(b"", final=True)
                    pipes -= 1
    return stopped
