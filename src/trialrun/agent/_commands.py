"""Shell commands the agent's tools start: their output read with bounded memory, and no command left behind.

A command runs in a session of its own (`start_new_session=True`) with an environment cut to an allow-list
(`command_env`: never the parent's credentials), marked with a `TRIALRUN_COMMAND` variable its children inherit.
Killing a command kills its process group, every process of its session (children that moved to another group), and
every process that carries its mark (children that left with `setsid`, found by a /proc scan on Linux).
Every live command is registered here, so that it dies whenever nobody waits for it any more:

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
import secrets
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

__all__ = ["CallScope", "CURRENT_CALL", "Finished", "run_shell", "stop_commands", "cut_note", "command_env", "COMMAND_ENV"]

#: What a command inherits from trialrun's own environment (and `LC_*`), plus the names a user passes: enough to find
#: programs and speak the user's language, never an API key or token of the process running the evaluation.
COMMAND_ENV = ("PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR", "USER", "LOGNAME", "SHELL", "COLORTERM",
               "NO_COLOR", "COLUMNS", "LINES")
_MARK = "TRIALRUN_COMMAND"
_RUN_MARK = f"{os.getpid()}-{secrets.token_hex(4)}"  # this process's commands: <run mark>/<number>
_counter = iter(range(1, 1 << 62))


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

# -- the registry of live process groups ---------------------------------------------------------------------
_LOCK = threading.Lock()
_GROUPS: dict[int, Path] = {}  # process group id -> the workspace its command runs in
_MARKS: dict[str, tuple[Path, int]] = {}  # a command's mark -> (its workspace, its start tick); kept until
#                                           stop_commands: a `setsid x &` child lives on after its command


def _start_tick(pid: int) -> int:
    """When a process started, in clock ticks since boot (/proc/PID/stat field 22); 0 where unknown. A command's
    children start after it, so a scan for them skips older processes without reading their environment."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return int(handle.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return 0


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # already gone
        pass


def _kill_marked(sids: set[int], marks: set[str] | None, prefix: str | None = None, since: int = 0) -> int:
    """Kill every process (but this one) whose session is in `sids`, or whose `TRIALRUN_COMMAND` mark is in `marks`
    or starts with `prefix`: a /proc scan (Linux), repeated while it finds any (a child may fork as it dies).
    Processes that started before tick `since` are not looked at."""
    if not os.path.isdir("/proc/self"):
        return 0
    me, killed = os.getpid(), 0
    wanted = {f"{_MARK}={mark}".encode() for mark in marks or ()}
    start = f"{_MARK}={prefix}".encode() if prefix else None
    for _ in range(10):
        found = 0
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) == me:
                continue
            pid = int(entry.name)
            try:
                with open(f"/proc/{pid}/stat", "rb") as handle:
                    fields = handle.read().rsplit(b")", 1)[1].split()
                if fields[0] == b"Z" or int(fields[19]) < since:  # a zombie (dead), or older than the commands
                    continue
                hit = int(fields[3]) in sids
                if not hit and (wanted or start):
                    with open(f"/proc/{pid}/environ", "rb") as handle:
                        variables = handle.read().split(b"\0")
                    hit = any(v in wanted or (start is not None and v.startswith(start)) for v in variables)
                if hit:
                    os.kill(pid, signal.SIGKILL)
                    found += 1
            except (OSError, IndexError, ValueError):  # gone, not ours, or unreadable
                continue
        killed += found
        if not found:
            break
    return killed


def _kill_command(pgid: int, mark: str, leader_unreaped: bool, since: int) -> None:
    """Kill a command's group, its session and the children that left it (`setsid`), by its mark. The session is
    matched by id only while its leader (the command's shell) is not reaped yet: until then the id cannot have been
    given to an unrelated process."""
    _kill_group(pgid)
    _kill_marked({pgid} if leader_unreaped else set(), {mark}, since=since)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def stop_commands(root: str | os.PathLike[str] | None = None) -> int:
    """Kill every command (and its background children) still alive that shell tools started, under `root` only
    when given; returns how many process groups were signalled. Runs at interpreter exit for all of them."""
    base = None if root is None else Path(root).resolve()
    with _LOCK:
        chosen = [pgid for pgid, where in _GROUPS.items() if base is None or where == base or base in where.parents]
        for pgid in chosen:
            del _GROUPS[pgid]
        marks = {mark for mark, (where, _) in _MARKS.items() if base is None or where == base or base in where.parents}
        since = min((_MARKS[mark][1] for mark in marks), default=0)
        for mark in marks:
            del _MARKS[mark]
    for pgid in chosen:
        _kill_group(pgid)
    if marks:  # by mark only: a finished command's session id may belong to another process by now
        _kill_marked(set(), marks, _RUN_MARK + "/" if base is None else None, since=0 if base is None else since)
    return len(chosen)


atexit.register(stop_commands)


def _register(pgid: int, root: Path) -> None:
    with _LOCK:
        # Groups left behind by commands that finished (`server &`) are kept until they are empty: prune them here.
        for old in [p for p in _GROUPS if p != pgid and not _group_alive(p)]:
            del _GROUPS[old]
        _GROUPS[pgid] = root


def _forget_if_empty(pgid: int) -> None:
    """After the command's shell has exited: forget its group unless background children live on in it."""
    if not _group_alive(pgid):
        with _LOCK:
            _GROUPS.pop(pgid, None)


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
    """How a command ended: its exit code (negative: killed by that signal), its capped output, and why it was
    stopped (None when it ended by itself)."""

    returncode: int
    output: str
    stopped: str | None = None  # "timeout" | "workspace removed"


def run_shell(
    command: str, cwd: Path, timeout_s: float | None, max_output: int, sandbox: Any = None,
    env: dict[str, str] | None = None, pass_env: tuple[str, ...] = (),
) -> Finished:
    """Run `command` through /bin/sh in `cwd`, in a session of its own that never outlives its caller, with `env`
    (default: `command_env()`); in a bubblewrap sandbox when `sandbox` is an active
    `trialrun.agents.sandbox.Sandbox` (its own environment allow-list then, plus the `pass_env` names)."""
    mark = f"{_RUN_MARK}/{next(_counter)}"
    if sandbox is not None and sandbox.active:
        argv: Any = sandbox.command(command, cwd)
        passed = {name: os.environ[name] for name in pass_env if name in os.environ}
        environment = {**sandbox.environment(None), **passed, "HOME": "/tmp"}
    else:
        argv = command
        environment = dict(command_env() if env is None else env)
    environment[_MARK] = mark
    process: subprocess.Popen[bytes] | None = None
    since = [0]  # the command's start tick, once read (0: look at every process)

    def kill() -> None:
        if process is None:  # Ctrl-C inside Popen, after the shell started: it is found by its mark
            _kill_marked(set(), {mark})
        else:
            _kill_command(process.pid, mark, process.returncode is None, since[0])

    scope = CURRENT_CALL.get()
    key = object()
    try:  # from here on, whatever happens (Ctrl-C included, even before Popen returns) kills the command
        process = subprocess.Popen(
            argv, shell=isinstance(argv, str), cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True, env=environment,
        )
        pgid = process.pid
        since[0] = _start_tick(pgid)  # before anything it starts
        with _LOCK:
            _MARKS[mark] = (cwd, since[0])
        _register(pgid, cwd)
        if scope is not None and not scope.hold(key, kill):
            kill()  # the call was abandoned while the command started
        out, err = _Capped(max_output), _Capped(max_output)
        stopped = _pump(process, kill, out, err, cwd, None if timeout_s is None else time.monotonic() + timeout_s)
        return Finished(process.returncode, _render(out, err, max_output), stopped)
    except BaseException as exc:  # KeyboardInterrupt, or anything else that means nobody reads the result
        if process is not None or not isinstance(exc, OSError):  # Popen's OSError: the shell never started
            kill()
        raise
    finally:
        if scope is not None:
            scope.release(key)
        if process is not None:
            for pipe in (process.stdout, process.stderr):
                if pipe is not None:
                    pipe.close()
            if process.poll() is None:
                kill()
                process.wait()
            _forget_if_empty(process.pid)


def _pump(
    process: subprocess.Popen[bytes], kill: Callable[[], None], out: _Capped, err: _Capped, cwd: Path,
    deadline: float | None,
) -> str | None:
    """Read both pipes until they close and the shell exits, or until a reason to stop it; returns that reason."""
    stopped: str | None = None
    grace: float | None = None  # after a kill: stop reading at this time even if a pipe stays open
    next_check = time.monotonic() + _POLL_S

    def stop(reason: str) -> None:
        nonlocal stopped, grace
        kill()
        stopped, grace = reason, time.monotonic() + _DRAIN_S

    with selectors.DefaultSelector() as selector:
        for pipe, sink in ((process.stdout, out), (process.stderr, err)):
            assert pipe is not None
            selector.register(pipe.fileno(), selectors.EVENT_READ, sink)
        while selector.get_map():
            now = time.monotonic()
            if stopped is None:
                if deadline is not None and now >= deadline:
                    stop("timeout")
                elif now >= next_check:
                    next_check = now + _POLL_S
                    if not cwd.is_dir():
                        stop("workspace removed")
            elif grace is not None and now >= grace:
                break  # a process that left the group still holds the pipes: stop reading
            limit = grace if stopped is not None else deadline
            wait = _POLL_S if limit is None else max(0.0, min(_POLL_S, limit - time.monotonic()))
            for ready, _ in selector.select(wait):
                sink = ready.data
                data = os.read(ready.fd, _CHUNK)
                if data:
                    sink.feed(data)
                else:
                    selector.unregister(ready.fd)
                    sink.feed(b"", final=True)
    while stopped is None:  # the pipes closed; the shell itself may still run (`exec >&-; sleep 99`)
        wait = _POLL_S if deadline is None else min(_POLL_S, deadline - time.monotonic())
        try:
            process.wait(max(0.0, wait))
            break
        except subprocess.TimeoutExpired:
            if deadline is not None and time.monotonic() >= deadline:
                stop("timeout")
            elif not cwd.is_dir():
                stop("workspace removed")
    process.wait()
    return stopped
