"""Nothing an agent starts outlives its trial: every process runs under a keeper, a child subreaper.

A coding agent starts shells, servers and background jobs, and some leave its session (`setsid`), fork twice so
their parent is gone, clear their environment or ignore SIGTERM. Killing a session or a process group misses
those. So trialrun starts a small keeper process (`python -I -S -c KEEPER`) that makes itself a child subreaper
(`prctl(PR_SET_CHILD_SUBREAPER)`: Linux 3.4+, no privilege needed) and then starts the agent. Every process the
agent starts, however it detaches, stays a descendant of the keeper: an orphan is re-parented to the nearest
subreaper, never past it. When the agent exits (or trialrun says stop, or trialrun dies), the keeper SIGKILLs every
descendant it finds in /proc, reaps them, and repeats until it has no child at all (only then can no descendant
be left), then reports what it killed. The keeper reports over its stdin, a socket pair (the agent gets
/dev/null): `way LEADER subreaper` once started, `exit STATUS HELD` the moment the agent exits (HELD: 1 when it left
processes running), `k PID ARGV` per
process killed, `done STATUS` at the end; end-of-file from trialrun's side means "kill everything now", so a
trialrun killed by SIGKILL still leaves nothing behind.

Why this and not the alternatives (measured by `bench/containment.py` on the 2-core machine; figures in the
README): a PID namespace (`unshare --pid --fork`, bwrap) is as thorough, but unprivileged it needs user
namespaces, which many machines and containers forbid (Ubuntu 24.04's AppArmor rule, Docker's default seccomp
profile), and it makes the agent PID 1 or adds a wrapper; a cgroup's `cgroup.kill` is atomic, but a user can
write a cgroup only where systemd delegated one, rarely in CI or a container; a session scan (what trialrun did
before) misses `setsid`. The keeper works for any user on any Linux, costs one small interpreter start per
trial (about 10 ms; an agent trial takes seconds), and does its /proc scans in its own process, never on
trialrun's event loop. In the bwrap sandbox the keeper runs inside, next to the agent (so it can say what it
killed), and the sandbox's PID namespace is a second wall. Where there is no subreaper (not Linux) the keeper
falls back to the agent's process group and says so (`way LEADER process group`).
"""

from __future__ import annotations

import array
import asyncio
import os
import socket
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence

__all__ = ["KEEPER", "keeper_argv", "keeper_inside", "Reports", "AsyncKeeper", "SyncKeeper", "kill_session",
           "session_members"]

#: The keeper. `python -I -S -c KEEPER MODE -- ARGV...` keeps one command (its stdin: the control socket). MODE
#: "agent": when the agent exits, kill what it left. MODE "command": when the command exits, report it and keep what
#: it left (a `server &` for the next command) until told to stop or until that ends by itself.
#: `python -I -S -c KEEPER serve` is the keeper server: each request on its stdin (a length, then mode, folder,
#: argv and environment, with the control socket and the output pipes attached) is kept by a fork of it, which
#: costs about a millisecond where a new interpreter costs ten or more. Built-in modules only.
KEEPER = r"""
import os, select, sys, time, _signal
try:  # prctl(PR_SET_CHILD_SUBREAPER), found once (the server's forks inherit it)
    import _ctypes
    PRCTL, call = _ctypes.dlsym(_ctypes.dlopen(None), "prctl"), _ctypes.call_function
except Exception:
    PRCTL = call = None
def keep(mode, argv, env, ctl, out=None):
    me = os.getpid()
    def say(line):
        try:
            os.write(ctl, line.encode("utf-8", "replace") + b"\n")
        except OSError:
            pass
    way = "subreaper" if PRCTL is not None and call(PRCTL, (36, 1, 0, 0, 0)) == 0 else "process group"
    wake, woken = os.pipe()
    os.set_blocking(wake, False)
    os.set_blocking(woken, False)
    _signal.set_wakeup_fd(woken)
    stop = []
    _signal.signal(17, lambda *a: None)
    for number in (1, 2, 15):
        _signal.signal(number, lambda *a: stop.append(1))
    actions = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0)]
    if out is not None:
        actions += [(os.POSIX_SPAWN_DUP2, out[0], 1), (os.POSIX_SPAWN_DUP2, out[1], 2)]
    if b"PATH" in env:  # posix_spawnp looks the program up on this process's PATH
        os.environ["PATH"] = os.fsdecode(env[b"PATH"])
    try:
        leader = os.posix_spawnp(argv[0], argv, env, file_actions=actions, setsigdef=(1, 2, 13, 15, 17, 25),
                                 **({} if way == "subreaper" else {"setpgroup": 0}))
    except OSError as exc:
        say(f"fail {exc.errno} {exc.strerror}")
        os._exit(127)
    say(f"way {leader} {me} {way}")
    blank = os.open("/dev/null", os.O_RDWR)  # the command's output pipes: never held open here
    for fd in (1, 2, *(out or ())):
        os.dup2(blank, fd)
    status = None
    def reap():
        nonlocal status
        ended = None
        while True:
            try:
                pid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pid = -1
            if pid == leader:
                status = ended = -os.WTERMSIG(st) if os.WIFSIGNALED(st) else os.WEXITSTATUS(st)
            elif pid <= 0:
                if ended is not None:  # and whether it left anything running
                    say(f"exit {ended} {int(pid == 0)}")
                return pid == 0
    def drain():
        try:
            os.read(wake, 4096)
        except OSError:
            pass
    try:
        while True:
            children = reap()
            if stop or (status is not None and (mode == "agent" or not children)):
                break
            for ready in select.select([ctl, wake], [], [])[0]:
                if ready == wake:
                    drain()
                    continue
                try:
                    data = os.read(ctl, 4096)
                except OSError:
                    data = b""
                if not data:
                    stop.append(0)
    except Exception as exc:  # never leave the command's processes without their keeper: kill them below
        say(f"crash {exc!r}")
    def below():
        parents, alive = {}, []
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open("/proc/" + name + "/stat", "rb") as f:
                        fields = f.read().rpartition(b")")[2].split()
                except OSError:
                    continue
                parents[int(name)] = int(fields[1])
                if fields[0] != b"Z":
                    alive.append(int(name))
        found = []
        for pid in alive:
            up, hops = parents.get(pid), 0
            while up is not None and hops < 1000:
                if up == me:
                    found.append(pid)
                    break
                up, hops = parents.get(up), hops + 1
        return found
    def argv_of(pid):
        try:
            with open("/proc/" + str(pid) + "/cmdline", "rb") as f:
                text = f.read(600).replace(b"\0", b" ")
        except OSError:
            text = b""
        return " ".join(text.decode("utf-8", "replace").split())[:300] or "?"
    deadline, seen = time.monotonic() + 5, set()
    while reap():
        targets = below() if way == "subreaper" and os.path.isdir("/proc/self") else [-leader]
        for pid in targets:
            if pid > 0 and pid not in seen:
                seen.add(pid)
                say(f"k {pid} {argv_of(pid)}")
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        if time.monotonic() > deadline:
            say("stuck " + " ".join(map(str, targets)))
            break
        select.select([wake], [], [], 0.05)
        drain()
    say(f"done {status}")
    os._exit(0 if status is None else status if status >= 0 else 128 - status)
def serve():
    import _socket
    server = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM, 0, 0)
    def reap(*_):  # the keepers it forked (reaped here, not by the kernel: their CPU time counts as its children's)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
    _signal.signal(17, reap)
    while True:
        try:
            head, fds, _, _ = server.recvmsg(8, _socket.CMSG_SPACE(12), _socket.MSG_CMSG_CLOEXEC)
        except InterruptedError:
            continue
        while head and len(head) < 8:
            head += server.recv(8 - len(head))
        if len(head) < 8:
            os._exit(0)  # trialrun is gone
        passed = [n for level, kind, data in fds for n in memoryview(data).cast("i")]
        size, body = int(head), b""
        while len(body) < size:
            more = server.recv(size - len(body))
            if not more:
                os._exit(0)
            body += more
        if len(passed) != 3:
            for fd in passed:
                os.close(fd)
            continue
        fields = body.split(b"\0")
        mode, cwd, count = fields[0].decode(), fields[1], int(fields[2])
        argv = fields[3:3 + count]
        env = dict(item.split(b"=", 1) for item in fields[3 + count:] if b"=" in item)
        if os.fork() == 0:
            try:
                os.dup2(passed[0], 0)
                os.setsid()
                os.chdir(cwd)
                keep(mode, argv, env, 0, (passed[1], passed[2]))
            except BaseException as exc:
                try:
                    os.write(0, f"fail 0 {exc!r}\n".encode())
                finally:
                    os._exit(127)
        for fd in passed:
            os.close(fd)
if sys.argv[1] == "serve":
    serve()
else:
    try:
        with open("/proc/self/environ", "rb") as f:  # as given: not with the LC_CTYPE Python's start may have added
            given = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
    except OSError:
        given = os.environb
    keep(sys.argv[1], sys.argv[3:], given, 0)
"""


def keeper_inside(wrapped: list[str], command: list[str], kept: list[str]) -> list[str]:
    """The keeper of `kept` (= keeper_argv(command)) placed right before `command` at the end of a sandbox's argv
    `wrapped`, so it runs inside, next to the command, and can say what it killed there; around the whole sandbox
    when its argv does not end with the command (the sandbox's PID namespace then kills what is inside, unlisted)."""
    prefix = kept[:len(kept) - len(command)]
    if command and wrapped[len(wrapped) - len(command):] == command:
        return wrapped[:len(wrapped) - len(command)] + prefix + command
    return prefix + wrapped


def _python() -> str | None:
    """The interpreter that runs keepers (this one, its path resolved: a sandbox may hide a `..` on the way), or
    None where there is none to run (an embedded interpreter), said once."""
    python = sys.executable
    if not python or not os.access(python, os.X_OK):
        _warn_once("trialrun: no Python executable to run a keeper (sys.executable is "
                   f"{python!r}): an agent's processes are killed by session, and one that leaves its session "
                   "with setsid may outlive its trial")
        return None
    return os.path.realpath(python)


def keeper_argv(argv: Sequence[str], *, linger: bool = False) -> list[str] | None:
    """`argv` run under a keeper of its own (see the module's docstring), or None where no Python can run one: the
    caller then falls back to a session kill. `linger`: what a finished command left running is kept until `stop`
    (the reference agent's run_command). A new interpreter: for the sandbox, where the keeper runs inside."""
    python = _python()
    if python is None:
        return None
    return [python, "-I", "-S", "-c", KEEPER, "command" if linger else "agent", "--", *argv]


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


def _request(mode: str, argv: Sequence[str], env: Mapping[str, str], cwd: os.PathLike[str] | str) -> bytes:
    return b"\0".join([mode.encode(), os.fsencode(cwd), str(len(argv)).encode(), *map(os.fsencode, argv),
                       *(os.fsencode(f"{name}={value}") for name, value in env.items())])


def _launch(theirs: socket.socket, argv: Sequence[str], env: Mapping[str, str], cwd: os.PathLike[str] | str,
            linger: bool) -> tuple[int, int] | None:
    """`argv` started by a fork of the keeper server, its control socket `theirs`, its stdout and stderr on two new
    pipes: their read ends, or None when no server can run here."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        sent = _Server.send([theirs.fileno(), out_w, err_w], _request("command" if linger else "agent", argv, env, cwd))
    finally:
        os.close(out_w)
        os.close(err_w)
    if not sent:
        os.close(out_r)
        os.close(err_r)
        return None
    return out_r, err_r


class Reports:
    """What a keeper said, parsed line by line as it arrives."""

    __slots__ = ("_buffer", "leader", "keeper", "way", "failure", "status", "held", "killed", "stuck", "done",
                 "_on_exit")

    def __init__(self, on_exit: Callable[[], None] | None = None) -> None:
        self._buffer = b""
        self.leader: int | None = None  # the command's pid
        self.keeper: int | None = None  # the keeper's pid (its session's id too)
        self.way: str | None = None
        self.failure: OSError | None = None
        self.status: int | None = None  # the agent's own exit status (negative: the signal that killed it)
        self.held = False  # when it exited, it had left processes running (the keeper holds them)
        self.killed: list[str] = []  # "pid N: argv" of every process the keeper killed
        self.stuck: str | None = None  # processes still alive after the keeper's 5 s of killing (uninterruptible)
        self.done = False
        self._on_exit = on_exit

    @property
    def exited(self) -> bool:
        return self.status is not None or self.done

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
            if kind == "k":
                pid, _, argv = rest.partition(" ")
                self.killed.append(f"pid {pid}: {argv}")
            elif kind == "exit":
                status, _, held = rest.partition(" ")
                self.status, self.held = int(status), held == "1"
                self._exit()
            elif kind == "way":
                leader, keeper, self.way = rest.split(" ", 2)
                self.leader, self.keeper = int(leader), int(keeper)
            elif kind == "fail":
                errno, _, message = rest.partition(" ")
                self.failure = OSError(int(errno), message)
                self.done = True
                self._exit()
            elif kind == "stuck":
                self.stuck = rest
            elif kind == "done":
                self.done = True
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


class AsyncKeeper:
    """The trialrun end of one keeper, on the event loop: nothing here blocks or polls."""

    def __init__(self) -> None:
        self.ours, self.theirs = socket.socketpair()
        self.ours.setblocking(False)
        self._exit: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.reports = Reports(self._exited)
        self._reading: asyncio.Task[None] | None = None

    def launch(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: os.PathLike[str] | str) -> tuple[int, int] | None:
        """Start `argv` under a fork of the keeper server (about a millisecond): its stdout and stderr pipes' read
        ends, or None when no server can run here. Then call `started`."""
        return _launch(self.theirs, argv, env, cwd, linger=False)

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
            if not data:
                return

    async def exited(self, timeout_s: float | None) -> bool:
        """Wait for the agent to exit (the keeper says so the moment it does); False on the timeout."""
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
        """Wait for the keeper's full report; False when it did not come in time."""
        if self._reading is None:
            return False
        try:
            await asyncio.wait_for(asyncio.shield(self._reading), timeout_s)
        except asyncio.TimeoutError:
            return False
        return True

    def close(self) -> None:
        if self._reading is not None and not self._reading.done():
            self._reading.cancel()
        self.ours.close()
        self.theirs.close()


class SyncKeeper:
    """The trialrun end of one keeper, for a thread that waits on it (the reference agent's run_command)."""

    def __init__(self) -> None:
        self.ours, self.theirs = socket.socketpair()
        self.reports = Reports()

    def launch(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: os.PathLike[str] | str) -> tuple[int, int] | None:
        """Start `argv` under a fork of the keeper server, keeping what it leaves running (`AsyncKeeper.launch`)."""
        return _launch(self.theirs, argv, env, cwd, linger=True)

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
        """Stop it and wait (bounded) for its report; what was killed."""
        import select
        import time

        self.stop()
        deadline = time.monotonic() + timeout_s
        while not self.reports.done and self.ours.fileno() >= 0:
            left = deadline - time.monotonic()
            if left <= 0 or (select.select([self.ours], [], [], left)[0] and not self.read()):
                break
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

    def close(self) -> None:
        self.ours.close()
        self.theirs.close()


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


# -- the fallback: a session kill (where no keeper can run) -----------------------------------------------------
def session_members(sid: int) -> list[int]:
    """The live processes of session `sid` (from /proc; empty where there is no /proc)."""
    members: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return members
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rpartition(b")")[2].split()
        except OSError:  # gone meanwhile
            continue
        if len(fields) > 3 and fields[3] == str(sid).encode() and fields[0] != b"Z":
            members.append(int(entry))
    return members


def kill_session(sid: int, *, rounds: int = 20) -> list[str]:
    """SIGKILL every process of session `sid` (the leader too) until none is left; returns what was hit. Blocking
    (a /proc scan a round): call it off the event loop."""
    import signal
    import time

    hit: dict[int, str] = {}
    for _ in range(rounds):
        members = session_members(sid)
        if not members:
            break
        for pid in members:
            hit.setdefault(pid, _argv_of(pid))
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)
    try:  # without /proc: at least the process group the session started with
        os.killpg(sid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    return [f"pid {pid}: {argv}" for pid, argv in hit.items()]


def _argv_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            text = handle.read(600).replace(b"\0", b" ")
    except OSError:
        return "?"
    return " ".join(text.decode("utf-8", "replace").split())[:300] or "?"
