"""Nothing an agent starts outlives its trial: every process runs under a keeper, a child subreaper.

A coding agent starts shells, servers and background jobs, and some leave its session (`setsid`), fork twice so
their parent is gone, clear their environment or ignore SIGTERM. Killing a session or a process group misses
those. So each agent (and each command of the reference agent's run_command) is started by a keeper: a small
process that made itself a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`: Linux 3.4+, no privilege needed).
Every process the agent starts, however it detaches, stays a descendant of the keeper: an orphan is re-parented
to the nearest subreaper, never past it. When the agent exits (or trialrun says stop, or trialrun dies), the keeper
SIGKILLs every descendant it finds in /proc, reaps them, and repeats until it has no child at all (only then can
no descendant be left), then reports what it killed.

The keeper is a process of the same user as the agent, which the agent can kill or stop: three more lines hold then.
(2) The keeper server that forked it (below) is its warden: a child subreaper too, told by the kernel the moment a
keeper is killed or stopped (SIGCHLD, WUNTRACED), it kills everything of that keeper and reports it on the keeper's
socket (`lost HOW`, `w PID ARGV`, `done`). (3) The keeper enters a cgroup of its own where this user may make one
(`scope`): what the agent starts is born in it and cannot leave it by any fork, session or environment. (4) Every kept
command carries a marker in its environment. When neither the keeper nor its warden answers (trialrun asks the kernel:
a pidfd of the agent says when it ended, /proc whether the keeper is stopped or gone), trialrun sweeps the cgroup, the
keeper's session and tree, and the marker's holders itself (`_Keeping.take_over`), without waiting out the timeout.
What each line killed is listed with how it was found.

The keeper talks over a socket pair, its fd 0 (the agent gets /dev/null): `way LEADER KEEPER subreaper` once the
agent started, `cgroup ok` (or `cgroup no REASON`), `exit STATUS HELD` the moment it exits (HELD: 1 when it left
processes running), `k PID ARGV` per process killed, `done STATUS` at the end. End-of-file from trialrun's side means
"kill everything now", so a trialrun killed by SIGKILL still leaves nothing behind, and trialrun notices the agent's
exit from its event loop the moment it happens (no sleeps, no child-watcher polling, no /proc scan on the loop).

Keepers are forks of one keeper server per trialrun process (`python -I -S -c KEEPER serve`, started on first use):
a request carries the argv, cgroup, folder and environment, with the control socket and the output pipes attached,
and costs about a millisecond, where a new interpreter costs 10-15 ms of CPU. With the bwrap sandbox the keeper runs
around bwrap, and the sandbox's PID namespace is a wall the agent cannot see past (its keeper is not in it).

Why this and not the alternatives (`bench/containment.py`, interleaved, as root and as nobody; figures in
docs/sandbox.md): a session scan (what trialrun did before) misses `setsid` (2 of 4 survived a normal end); a PID
namespace (`unshare --pid --fork`, bwrap) is as thorough, but unprivileged it needs user namespaces, which many
machines and containers forbid (Ubuntu 24.04's AppArmor rule, Docker's default seccomp profile), and it makes the
agent PID 1; a cgroup's `cgroup.kill` is atomic, but a user can write a cgroup only where systemd delegated one
(refused to `nobody` here), rarely in CI or a container: so it is a line where it can be had, not the only one. The
keeper works for any user on any Linux, at +0.3 ms of CPU a trial. Fallbacks: without a subreaper (not Linux, or a
Python without ctypes) the keeper kills the agent's process group and says so (`way LEADER KEEPER process group`);
without a Python to run a keeper (an embedded interpreter) trialrun kills the agent's session, what carries its
marker and what descends from those by a /proc scan (`Scope.sweep`), off the event loop, and warns once that a child
that left its session and cleared its environment may escape.
"""

from __future__ import annotations

import array
import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence

from .keeper_source import KEEPER
from .scope import Scope, processes, refused, state_of

__all__ = ["KEEPER", "keeper_argv", "Reports", "AsyncKeeper", "SyncKeeper", "session_members"]


def _python() -> str | None:
    """The interpreter that runs keepers (this one, its path resolved: a sandbox may hide a `..` on the way), or
    None where there is none to run (an embedded interpreter), said once."""
    python = sys.executable
    if not python or not os.access(python, os.X_OK):
        _warn_once("trialrun: no Python executable to run a keeper (sys.executable is "
                   f"{python!r}): an agent's processes are killed by session and by a marker in their environment, "
                   "and one that leaves its session and clears its environment may outlive its trial")
        return None
    return os.path.realpath(python)


def keeper_argv(argv: Sequence[str], *, linger: bool = False, cgroup: str | None = None) -> list[str] | None:
    """`argv` run under a keeper of its own (see the module's docstring), or None where no Python can run one: the
    caller then falls back to a session kill. `linger`: what a finished command left running is kept until `stop`
    (the reference agent's run_command). `cgroup`: the cgroup the keeper makes and enters first (`Scope.cgroup`)."""
    python = _python()
    if python is None:
        return None
    return [python, "-I", "-S", "-c", KEEPER, "command" if linger else "agent", cgroup or "-", "--", *argv]


class _Server:
    """This process's keeper server (started on first use, and again after it died or this process forked)."""

    lock = threading.Lock()
    current: _Server | None = None

    def __init__(self, python: str) -> None:
        self.owner = os.getpid()
        self.sock, theirs = socket.socketpair()
        try:
            self.process = subprocess.Popen([python, "-I", "-S", "-c", KEEPER, "serve"], stdin=theirs.fileno(),
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={},
                                            start_new_session=True)
        finally:
            theirs.close()

    @classmethod
    def send(cls, fds: list[int], body: bytes) -> bool:
        """Hand a request to the server; False when no server can run here."""
        with cls.lock:
            for _ in range(2):  # a server that died meanwhile: once more with a new one
                server = cls.current
                if server is not None and server.owner == os.getpid() and server.stopped():
                    server.process.kill()  # stopped (by an agent, after its warden's work): no warden; a new one
                    server.sock.close()
                    server = cls.current = None
                if server is None or server.owner != os.getpid() or server.process.poll() is not None:
                    python = _python()
                    if python is None:
                        return False
                    try:
                        server = cls.current = cls(python)
                    except OSError:
                        return False
                try:
                    server.sock.sendmsg([b"%08d" % len(body)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                                                 array.array("i", fds))])
                    server.sock.sendall(body)
                    return True
                except OSError:
                    server.sock.close()
                    cls.current = None
            return False


    def stopped(self) -> bool:
        """Stopped (SIGSTOP, or held by a tracer): it would take no request (one read of /proc/PID/stat)."""
        return state_of(self.process.pid) in ("T", "t")

    @classmethod
    def replace_if_stuck(cls) -> None:
        """A server that is stopped or dead is no warden: kill it, and the next request starts a new one (its keepers
        run on; only its copies of their sockets go)."""
        with cls.lock:
            server = cls.current
            if server is None or server.owner != os.getpid():
                return
            if server.process.poll() is None and not server.stopped():
                return
            cls.current = None
        server.process.kill()
        server.sock.close()
        try:
            server.process.wait(5)
        except subprocess.TimeoutExpired:
            pass


def _forget_server() -> None:
    """In a child this process forked: the parent's server and lock are not its own (a lock another thread held
    would stay held for ever)."""
    _Server.lock = threading.Lock()
    _Server.current = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_server)


def _request(mode: str, cgroup: str | None, argv: Sequence[str], env: Mapping[str, str],
             cwd: os.PathLike[str] | str) -> bytes:
    return b"\0".join([mode.encode(), os.fsencode(cgroup or "-"), os.fsencode(cwd), str(len(argv)).encode(),
                       *map(os.fsencode, argv), *(os.fsencode(f"{name}={value}") for name, value in env.items())])


def _launch(theirs: socket.socket, argv: Sequence[str], env: Mapping[str, str], cwd: os.PathLike[str] | str,
            linger: bool, cgroup: str | None) -> tuple[int, int] | None:
    """`argv` started by a fork of the keeper server, its control socket `theirs`, its stdout and stderr on two new
    pipes: their read ends, or None when no server can run here."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        sent = _Server.send([theirs.fileno(), out_w, err_w],
                            _request("command" if linger else "agent", cgroup, argv, env, cwd))
    finally:
        os.close(out_w)
        os.close(err_w)
    if not sent:
        os.close(out_r)
        os.close(err_r)
        return None
    return out_r, err_r


#: How the keeper server (the warden) found what it killed, by the letter of its report line.
_FOUND = {"w": "found by the keeper server", "c": "found in the trial's cgroup by the keeper server"}


class Reports:
    """What a keeper (and, when the keeper was lost, its warden) said, parsed line by line as it arrives."""

    __slots__ = ("_buffer", "leader", "keeper", "way", "failure", "status", "held", "killed", "stuck", "done",
                 "said_done", "lost", "cgroup", "cgroup_path", "_on_exit")

    def __init__(self, on_exit: Callable[[], None] | None = None) -> None:
        self._buffer = b""
        self.leader: int | None = None  # the command's pid
        self.keeper: int | None = None  # the keeper's pid (its session's id too)
        self.way: str | None = None
        self.failure: OSError | None = None
        self.status: int | None = None  # the agent's own exit status (negative: the signal that killed it)
        self.held = False  # when it exited, it had left processes running (the keeper holds them)
        self.killed: list[str] = []  # "pid N: argv" of every process killed (and how it was found, past the keeper)
        self.stuck: str | None = None  # processes still alive after the keeper's 5 s of killing (uninterruptible)
        self.done = False  # the report is over (its last line, or the end of the stream)
        self.said_done = False  # its last line came: the keeper (or its warden) finished its work
        self.lost: str | None = None  # the keeper was lost: "killed by SIGKILL", "stopped by SIGSTOP", ...
        self.cgroup: str | None = None  # "ok", or "no" (the keeper could not make or enter its cgroup), None: none asked
        self.cgroup_path: str | None = None  # the cgroup it entered (a spare keeper's, made ahead, has its own name)
        self._on_exit = on_exit

    @property
    def exited(self) -> bool:
        return self.status is not None or self.done or self.lost is not None

    def feed(self, data: bytes) -> None:
        """Take what the keeper wrote (b"" at its end: an unfinished report is then finished)."""
        if not data:
            self.done = True
            self._exit()
            return
        lines = (self._buffer + data).split(b"\n")
        self._buffer = lines.pop()
        for raw in lines:
            kind, _, rest = raw.decode("utf-8", "replace").partition(" ")
            self._line(kind, rest)

    def _line(self, kind: str, rest: str) -> None:
        if kind == "k":
            pid, _, argv = rest.partition(" ")
            self.killed.append(f"pid {pid}: {argv}")
        elif kind in _FOUND:
            pid, _, argv = rest.partition(" ")
            self.killed.append(f"pid {pid}: {argv} ({_FOUND[kind]})")
        elif kind == "exit":
            status, _, held = rest.partition(" ")
            self.status, self.held = int(status), held == "1"
            self._exit()
        elif kind == "way":
            leader, keeper, self.way = rest.split(" ", 2)
            self.leader, self.keeper = int(leader), int(keeper)
        elif kind == "cgroup":
            self.cgroup, _, detail = rest.partition(" ")
            if self.cgroup == "ok":
                self.cgroup_path = detail or None
            else:
                refused(f"a keeper could not make or enter its cgroup: {detail}")
        elif kind == "lost":
            self.lost = _signal_words(rest)
            self._exit()
        elif kind == "fail":
            errno, _, message = rest.partition(" ")
            self.failure = OSError(int(errno), message)
            self.done = self.said_done = True
            self._exit()
        elif kind == "stuck":
            self.stuck = rest
        elif kind == "done":
            self.done = self.said_done = True
            if rest != "None" and self.status is None:
                self.status = int(rest)
            self._exit()

    def _exit(self) -> None:
        if self._on_exit is not None:
            callback, self._on_exit = self._on_exit, None
            callback()

    def note(self) -> list[str]:
        """What was killed, for the run's record (the processes that could not be killed last)."""
        return self.killed + ([f"still alive after 5 s of SIGKILL (uninterruptible): {self.stuck}"]
                              if self.stuck else [])


def _signal_words(text: str) -> str:
    """"killed by signal 9" as "killed by SIGKILL" (the warden says numbers)."""
    words, _, number = text.rpartition(" ")
    try:
        return f"{words.removesuffix(' signal')} {signal.Signals(int(number)).name}"
    except ValueError:
        return text


_GONE = "gone without a word (killed?)"


class _Keeping:
    """What both ends of a keeper share: the socket pair, the scope (marker and cgroup), the report, and, once the
    keeper said who it is, pid file descriptors of it and of the command, which say when either ends (without
    polling) and let a lost keeper be killed without a pid-reuse race."""

    def __init__(self, on_exit: Callable[[], None] | None = None, *, cgroup: bool = True) -> None:
        self.ours, self.theirs = socket.socketpair()
        self.scope = Scope(cgroup=cgroup)
        self.reports = Reports(on_exit)
        self.pidfds: dict[int, int] = {}
        #: why trialrun took over from the keeper and its warden (they did not answer), None when it did not
        self.taken: str | None = None

    def _pidfd(self, pid: int | None) -> int | None:
        if pid is None or not hasattr(os, "pidfd_open"):
            return None
        if pid not in self.pidfds:
            try:
                self.pidfds[pid] = os.pidfd_open(pid)
            except OSError:  # gone already (or an old kernel): never opened later, when the pid may be another's
                self.pidfds[pid] = -1
        fd = self.pidfds[pid]
        return fd if fd >= 0 else None

    def _follow_cgroup(self) -> None:
        """The scope's cgroup is the one the keeper says it entered (or none, when it could not)."""
        if self.reports.cgroup is not None and self.scope.cgroup is not None:
            self.scope.cgroup = self.reports.cgroup_path if self.reports.cgroup == "ok" else None

    def unanswered(self) -> str | None:
        """Why the keeper can no longer be waited on (stopped, traced, gone without its last words), or None while
        it can (it runs, or its last words came)."""
        keeper = self.reports.keeper
        if self.reports.said_done or keeper is None:
            return None
        state = state_of(keeper, self._pidfd(keeper))
        if state is None or state in ("Z", "X"):
            return self.reports.lost or _GONE
        if state == "T":
            return "stopped"
        if state == "t":
            return "held by a tracer"
        return None

    def take_over(self, why: str) -> list[str]:
        """The keeper and its warden did not finish (`why`): find and kill what is left of the command (blocking:
        call it off the event loop); what was killed is added to the report."""
        self.taken = why
        self._follow_cgroup()
        keeper = self.reports.keeper
        killed = self.scope.sweep(keeper, self._pidfd(keeper))
        _Server.replace_if_stuck()
        self.reports.killed += killed
        self.reports.lost = self.reports.lost or why
        self.reports.done = True
        return killed

    def close(self) -> None:
        self.ours.close()
        self.theirs.close()
        for fd in self.pidfds.values():
            if fd >= 0:
                os.close(fd)
        self.pidfds.clear()


class AsyncKeeper(_Keeping):
    """The trialrun end of one keeper, on the event loop: nothing here blocks or polls."""

    def __init__(self) -> None:
        self._exit: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        super().__init__(self._exited)
        self.ours.setblocking(False)
        self._reading: asyncio.Task[None] | None = None
        self._watched: int | None = None
        self._check: asyncio.TimerHandle | None = None

    def launch(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: os.PathLike[str] | str) -> tuple[int, int] | None:
        """Start `argv` under a fork of the keeper server (about a millisecond): its stdout and stderr pipes' read
        ends, or None when no server can run here. Then call `started`."""
        return _launch(self.theirs, argv, self.scope.env(env), cwd, False, self.scope.cgroup)

    def started(self) -> None:
        """The keeper is running (it holds its end now)."""
        self.theirs.close()
        self._reading = asyncio.ensure_future(self._read())

    def _exited(self) -> None:
        if not self._exit.done():
            self._exit.set_result(None)

    async def _read(self) -> None:
        loop = asyncio.get_running_loop()
        while not self.reports.done:
            try:
                data = await loop.sock_recv(self.ours, 1 << 16)
            except OSError:
                data = b""
            self.reports.feed(data)
            self._follow_cgroup()
            if self._watched is None and self.reports.leader is not None:
                self._pidfd(self.reports.keeper)  # now: killing it later must not hit a pid that was reused
                self._watch(self.reports.leader)
            if not data:
                return

    def _watch(self, leader: int) -> None:
        """Be told when the command itself ends, by the kernel (its pidfd): if its keeper has not said so a second
        later and cannot say it any more (stopped, gone), the wait is over (`take_over` follows)."""
        self._watched = leader
        fd = self._pidfd(leader)
        if fd is None:
            return
        loop = asyncio.get_running_loop()

        def ended() -> None:
            loop.remove_reader(fd)
            if not self.reports.exited:
                self._check = loop.call_later(1.0, check)

        def check() -> None:
            if self.reports.exited:
                return
            if self.unanswered() is not None:
                self._exited()
            else:
                self._check = loop.call_later(1.0, check)

        loop.add_reader(fd, ended)

    async def exited(self, timeout_s: float | None) -> bool:
        """Wait for the agent to exit (the keeper says so the moment it does, or its warden that it was lost, or the
        kernel that the agent ended and its keeper cannot say so); False on the timeout."""
        try:
            await asyncio.wait_for(asyncio.shield(self._exit), timeout_s)
        except asyncio.TimeoutError:
            return False
        return True

    def stop(self) -> None:
        """Tell the keeper to kill everything now (instant: it does the work)."""
        try:
            self.ours.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    async def finished(self, timeout_s: float = 10.0) -> bool:
        """Wait for the keeper's full report; when it does not come (the keeper stopped or gone, and its warden too;
        at once for those, else after `timeout_s`), trialrun takes over (`take_over`, on a worker thread). False
        when it took over."""
        if self._reading is None:
            return False
        waited = 0.0
        why = None
        while waited < timeout_s:
            step = 0.5 if waited else 0.25
            try:
                await asyncio.wait_for(asyncio.shield(self._reading), step)
            except asyncio.TimeoutError:
                waited += step
                why = self.unanswered()
                if why is not None:
                    break
            if self._reading.done():
                break
        if self.reports.said_done:
            return True
        if self._reading.done():  # its end of the socket closed without its last words: it is gone, or going
            why = _GONE
        why = why or self.unanswered() or f"unanswering for {timeout_s:g} s"
        await asyncio.get_running_loop().run_in_executor(None, self.take_over, why)
        return False

    def close(self) -> None:
        if self._reading is not None and not self._reading.done():
            self._reading.cancel()
        if self._check is not None:
            self._check.cancel()
        if self._watched is not None and self.pidfds.get(self._watched, -1) >= 0:
            try:
                asyncio.get_running_loop().remove_reader(self.pidfds[self._watched])
            except RuntimeError:  # no loop any more
                pass
        super().close()


class SyncKeeper(_Keeping):
    """The trialrun end of one keeper, for a thread that waits on it (the reference agent's run_command). Its
    command gets no cgroup: a command is often a few milliseconds, and entering a cgroup costs it 0.2 ms at the
    median but 9 ms one time in ten on a loaded machine (the kernel waits out an RCU grace period), +7.8 ms median
    for `true` here; the warden, the session and the marker hold a command that attacks its keeper."""

    def __init__(self) -> None:
        super().__init__(cgroup=False)

    def launch(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: os.PathLike[str] | str) -> tuple[int, int] | None:
        """Start `argv` under a fork of the keeper server, keeping what it leaves running (`AsyncKeeper.launch`)."""
        return _launch(self.theirs, argv, self.scope.env(env), cwd, True, self.scope.cgroup)

    def started(self) -> None:
        self.theirs.close()

    def read(self) -> bool:
        """Take what the keeper wrote (the socket is readable); False at its end."""
        try:
            data = self.ours.recv(1 << 16)
        except BlockingIOError:
            return True
        except OSError:
            data = b""
        self.reports.feed(data)
        return bool(data)

    def stop(self) -> None:
        """Tell the keeper to kill everything now (from any thread)."""
        try:
            self.ours.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def finish(self, timeout_s: float = 10.0) -> list[str]:
        """Stop it and wait (bounded) for its report, taking over when it cannot come (`AsyncKeeper.finished`);
        what was killed."""
        import select
        import time

        self.stop()
        start = time.monotonic()
        deadline, why = start + timeout_s, None
        while not self.reports.done and self.ours.fileno() >= 0:
            now = time.monotonic()
            if now >= deadline:
                break
            if select.select([self.ours], [], [], min(0.25, deadline - now))[0]:
                if not self.read():
                    break
            elif now - start > 0.25 and (why := self.unanswered()) is not None:
                break
        if not self.reports.said_done and self.ours.fileno() >= 0:
            if self.reports.done:  # its end of the socket closed without its last words
                why = _GONE
            self.take_over(why or self.unanswered() or f"unanswering for {timeout_s:g} s")
        self.close()
        return self.reports.note()

    def ended(self) -> bool:
        """The keeper has ended (what it said so far is read, without waiting)."""
        import select

        while not self.reports.done and self.ours.fileno() >= 0 and select.select([self.ours], [], [], 0)[0]:
            if not self.read():
                break
        return self.reports.done

    def over(self) -> bool:
        """The command exited and nothing it started is left (waits for the keeper's last words then)."""
        if self.reports.exited and not self.reports.held:
            self.finish()
        return self.reports.done


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def session_members(sid: int) -> list[int]:
    """The live processes of session `sid` (from /proc; empty where there is no /proc)."""
    return [pid for pid, (_, session, _) in processes().items() if session == sid]
