"""How the model endpoint gets into a bubblewrap sandbox's own network namespace, with no relay process.

The sandbox has a loopback of its own (`--unshare-net`), so the agent's http://127.0.0.1:PORT is not the
endpoint's. Instead of relaying bytes, trialrun makes a listening socket at that address INSIDE the sandbox's
network namespace and hands it to the endpoint, whose thread accepts on it like on its own port: the agent's
connections go straight to the endpoint. Per trial:

1. bwrap runs `/bin/sh` first, which takes a lock file (`--lock-file`), says it is ready through one FIFO and
   waits for an answer on another before it execs the agent.
2. trialrun's handoff thread (one per process, waiting on every trial's FIFOs at once: nothing per trial blocks
   or starts a thread) reads the sandbox's pid from the lock (`F_GETLK` names the holder, in our pid namespace;
   bwrap's first process takes it just after forking the shell, so in that moment's race it looks again a
   millisecond later) and opens its network namespace (`/proc/PID/ns/net`; the lock is checked again after the open, so a reused
   pid cannot slip in).
3. The namespace helper, a small single-threaded process started once per run, forks; the child enters the
   namespace's owning user namespace and the network namespace (`setns`, which a multithreaded process such as
   trialrun may not do for a user namespace), makes the listening socket and passes it back (SCM_RIGHTS).
4. The endpoint serves that socket; `ok` goes down the FIFO and the shell runs the agent, then names what the
   agent left running (the namespace ends it when the shell exits).

Where the helper cannot enter the namespace (a setuid bubblewrap, a seccomp filter), the thread answers `relay`
instead: the shell execs a few lines of Python inside the sandbox that make the socket there and hand it out
through a Unix socket bound into the sandbox, then exec the agent. Either way no process stays between the agent
and the endpoint. Standard library only, as is the one module it imports (`_per_process`). An answer that is neither (or none: trialrun went away) ends the trial's command with 125 and
the reason on stderr.
"""

from __future__ import annotations

import atexit
import errno
import fcntl
import os
import selectors
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._util.per_process import PerProcess

__all__ = ["Handoff", "SOCKET_DIR", "inner_command"]

SOCKET_DIR = "/tmp/.trialrun-endpoint"  # inside the sandbox (in its private /tmp)
_FLOCK = "hhqqi"   # struct flock: l_type, l_whence, l_start, l_len, l_pid (native layout)

#: Why the namespace helper cannot be used in this process (None: it can); set on the first lasting failure.
helper_problem: str | None = None
_LOCK_TRIES, _LOCK_RETRY_S = 200, 0.001  # at most about 0.2 s for bwrap's first process to take its lock
#: How many handoffs went each way ("namespace", "relay"), and why the last fallback happened.
used: Counter[str] = Counter()
last_fallback: str | None = None

# Inside the sandbox, before the agent: wait for trialrun's answer, then run the agent (through the forwarder, on
# the fallback). When the agent ends by itself, what it left running dies with the sandbox's PID namespace, under the
# keeper's eyes but with pids that are no longer anything's: so the shell writes those processes down first (`left`,
# pids of the namespace), as the keeper would have named them. A forwarder that could not start the agent exits 127.
_WAIT = f"""printf x > {SOCKET_DIR}/ready
read -r answer < {SOCKET_DIR}/go
py=$1 code=$2 address=$3
shift 3
case $answer in
ok) "$@" ;;
relay) "$py" -I -S -c "$code" "$address" "$@" ;;
*) printf 'trialrun sandbox: %s\\n' "${{answer:-the model endpoint could not be set up}}" >&2
   exit 125 ;;
esac
status=$?
for p in /proc/[0-9]*; do
  n=${{p#/proc/}}
  [ "$n" = 1 ] || [ "$n" = $$ ] && continue
  a=$(tr '\\0' ' ' < "$p/cmdline" 2>/dev/null) || continue
  [ -n "$a" ] && printf 'pid %s: %s\\n' "$n" "${{a% }}"
done > {SOCKET_DIR}/left.new 2>/dev/null
mv -f {SOCKET_DIR}/left.new {SOCKET_DIR}/left 2>/dev/null
exit $status
"""

# The fallback, inside the sandbox (standard library, `python -I -S`): make the listening socket in the sandbox's
# network namespace, hand it out through the Unix socket bound in, and exec the agent.
_FORWARDER = f"""
import _socket, os, sys
host, _, port = sys.argv[1].rpartition(":")
argv = sys.argv[2:]
made = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
made.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
made.bind((host, int(port)))
made.listen(128)
out = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
out.connect("{SOCKET_DIR}/handoff.sock")
out.sendmsg([b"L"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, made.fileno().to_bytes(4, sys.byteorder))])
out.close()
made.close()
try:
    os.execvp(argv[0], argv)
except OSError as exc:
    sys.stderr.write(f"trialrun sandbox: cannot run {{argv[0]!r}}: {{exc.strerror}}\\n")
    sys.exit(127)
"""

# The namespace helper (outside, `python -I -S`, single-threaded): per request, a forked child enters the
# namespace and makes the socket; it answers on the reply socket that came with the request.
_HELPER = """
import fcntl, os, signal, socket, sys
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)
CLONE_NEWUSER, CLONE_NEWNET, NS_GET_USERNS = 0x10000000, 0x40000000, 0xB701
if hasattr(os, "setns"):
    setns = os.setns
else:
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    def setns(fd, kind):
        if libc.setns(fd, kind) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
def listener(netns, host, port):
    owner = fcntl.ioctl(netns, NS_GET_USERNS)
    if os.fstat(owner).st_ino != os.stat("/proc/self/ns/user").st_ino:
        setns(owner, CLONE_NEWUSER)
    setns(netns, CLONE_NEWNET)
    made = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    made.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    made.bind((host, port))
    made.listen(128)
    return made
control = socket.socket(fileno=int(sys.argv[1]))
while True:
    try:
        data, fds, _, _ = socket.recv_fds(control, 1024, 2)
    except InterruptedError:
        continue
    except OSError:
        break
    if not data:
        break
    if len(fds) != 2:
        for fd in fds:
            os.close(fd)
        continue
    netns, reply = fds
    if os.fork() == 0:
        answer = socket.socket(fileno=reply)
        try:
            host, port = data.decode().rsplit(" ", 1)
            made = listener(netns, host, int(port))
            socket.send_fds(answer, [b"ok"], [made.fileno()])
        except BaseException as exc:
            try:
                answer.sendall(f"{type(exc).__name__}: {exc}".encode())
            except OSError:
                pass
        os._exit(0)
    os.close(netns)
    os.close(reply)
"""


def python() -> str:
    """The interpreter for the helper and the forwarder, resolved: started through `../x/bin/python`, the
    unresolved path walks through folders the sandbox hides (its /tmp is its own)."""
    return os.path.realpath(sys.executable)


def inner_command(address: str, argv: list[str]) -> list[str]:
    """What the sandbox runs in place of `argv`: the shell that waits for the endpoint, then execs the agent."""
    return ["/bin/sh", "-c", _WAIT, "trialrun-sandbox", python(), _FORWARDER, address, *argv]


class _Helper:
    """The namespace helper process (see the module text): started on first use, ends when trialrun does (its
    control socket reads end-of-file)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self._at_exit = False
        self._owner = os.getpid()

    def _channel(self) -> socket.socket:
        with self._lock:
            if self._process is None or self._process.poll() is not None or self._control is None:
                if self._control is not None:
                    self._control.close()
                ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                try:
                    self._process = subprocess.Popen(
                        [python(), "-I", "-S", "-c", _HELPER, str(theirs.fileno())], pass_fds=[theirs.fileno()],
                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                        start_new_session=True)
                finally:
                    theirs.close()
                if not self._at_exit:
                    atexit.register(self.close)
                    self._at_exit = True
                self._control = ours
            return self._control

    def close(self) -> None:
        """At exit: the helper reads end-of-file and ends (in a forked child, the parent's helper is left alone)."""
        if self._owner != os.getpid():
            return
        with self._lock:
            if self._control is not None:
                self._control.close()
                self._control = None
            if self._process is not None:
                try:
                    self._process.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    self._process.kill()

    def ask(self, netns: int, host: str, port: int) -> socket.socket:
        """Ask for a socket listening on host:port in network namespace `netns`; the answer comes on the socket
        returned (readable when it is there: `answer`)."""
        mine, theirs = socket.socketpair()
        try:
            socket.send_fds(self._channel(), [f"{host} {port}".encode()], [netns, theirs.fileno()])
        except BaseException:
            mine.close()
            raise
        finally:
            theirs.close()
        mine.setblocking(False)
        return mine

    @staticmethod
    def answer(reply: socket.socket) -> socket.socket:
        """The listening socket the helper sent on `reply` (closed here), or OSError saying why not."""
        try:
            data, fds, _, _ = socket.recv_fds(reply, 1024, 1, socket.MSG_CMSG_CLOEXEC)
        finally:
            reply.close()
        if data == b"ok" and len(fds) == 1:
            return socket.socket(fileno=fds[0])
        for fd in fds:
            os.close(fd)
        raise OSError(errno.EIO, data.decode("utf-8", "replace") or "the namespace helper did not answer")


_helper = _Helper()


def _lock_holder(path: str) -> int:
    """The pid (in our pid namespace) of the process holding a lock on `path`: the sandbox's first process."""
    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    try:
        query = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0) + bytes(8)  # room for trailing padding
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
    finally:
        os.close(fd)
    kind, _, _, _, pid = struct.unpack_from(_FLOCK, answer)
    if kind == fcntl.F_UNLCK or pid <= 0:
        raise ProcessLookupError(errno.ESRCH, "the sandbox holds no lock on its lock file")
    return int(pid)


def _lasting(exc: BaseException) -> bool:
    """A failure that will happen for every trial of this process (no permission to enter namespaces)."""
    text = str(exc)
    return isinstance(exc, PermissionError) or any(s in text for s in ("Errno 1]", "Errno 13]", "Errno 38]"))


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


class _Worker:
    """The one thread that answers every sandbox's shell: a selector over the trials' FIFOs and sockets, and a
    queue of what the event loop asks (a new trial, a trial that ended). Nothing here waits on one trial."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: list[tuple[str, Handoff]] = []
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._timers: list[tuple[float, Handoff, Callable[[], None]]] = []
        threading.Thread(target=self._run, name="trialrun-sandbox-handoff", daemon=True).start()

    def ask(self, what: str, handoff: Handoff) -> None:
        with self._lock:
            self._jobs.append((what, handoff))
        self._wake_w.send(b"x")

    def watch(self, item: Any, handoff: Handoff, step: Callable[[], None]) -> None:
        """(in the thread) Call `step` when `item` is readable."""
        self._selector.register(item, selectors.EVENT_READ, (handoff, step))
        handoff.watched.append(item)

    def forget(self, handoff: Handoff) -> None:
        """(in the thread) Stop watching what `handoff` had watched."""
        for item in handoff.watched:
            try:
                self._selector.unregister(item)
            except (KeyError, ValueError):
                pass
        handoff.watched.clear()

    def later(self, delay_s: float, handoff: Handoff, step: Callable[[], None]) -> None:
        """(in the thread) Call `step` after `delay_s`."""
        self._timers.append((time.monotonic() + delay_s, handoff, step))

    def _run(self) -> None:
        while True:
            timeout = None
            if self._timers:
                timeout = max(0.0, min(when for when, _, _ in self._timers) - time.monotonic())
            ready = self._selector.select(timeout)
            if self._timers:
                now = time.monotonic()
                due = [timer for timer in self._timers if timer[0] <= now]
                self._timers = [timer for timer in self._timers if timer[0] > now]
                for _, handoff, step in due:
                    if not handoff.finished:
                        self._guarded(handoff, step)
            for key, _ in ready:
                if key.fileobj is self._wake_r:
                    try:
                        self._wake_r.recv(4096)
                    except BlockingIOError:
                        pass
                    with self._lock:
                        jobs, self._jobs = self._jobs, []
                    for what, handoff in jobs:
                        self._guarded(handoff, handoff.begin if what == "begin" else handoff.end)
                    continue
                handoff, step = key.data
                self._guarded(handoff, step)

    def _guarded(self, handoff: Handoff, step: Callable[[], None]) -> None:
        try:
            step()
        except Exception as exc:  # noqa: BLE001 - a trial's handoff failing never stops the others'
            try:
                handoff.fail(f"{type(exc).__name__}: {exc}")
            except Exception:  # noqa: BLE001 - its shell then reads end-of-file when the trial ends
                pass


_WORKER: PerProcess[_Worker] = PerProcess(_Worker)  # the handoff thread, one for every trial


def _forget_in_child() -> None:
    """In a child this process forked: the namespace helper is the parent's (its control socket shared), so the
    child starts its own on first use (the handoff thread is forgotten by `_WORKER`)."""
    global _helper
    _helper = _Helper()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


class Handoff:
    """One trial's handoff: a private folder bound into the sandbox (the two FIFOs, the lock file, the fallback's
    Unix socket), answered by the handoff thread. Made and closed on the event loop without waiting on anything."""

    def __init__(self, endpoint: Any, host: str, port: int) -> None:
        self.endpoint = endpoint
        self.host, self.port = host, port
        self.folder = Path(tempfile.mkdtemp(prefix="trialrun-endpoint-"))
        os.mkfifo(self.folder / "ready", 0o600)
        os.mkfifo(self.folder / "go", 0o600)
        self.lock_file = str(self.folder / "lock")
        os.close(os.open(self.lock_file, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600))
        # both FIFOs open both ways here: the shell's opens never wait, and closing `go` unanswered is an EOF to it
        self._ready = os.open(self.folder / "ready", os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        self._go = os.open(self.folder / "go", os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        self.watched: list[Any] = []
        self._server: socket.socket | None = None
        self._reply: socket.socket | None = None
        self._client: socket.socket | None = None
        self.finished = False
        self._tries = 0
        self.way: str | None = None
        self.error: str | None = None
        self._worker = _WORKER.get()
        self._worker.ask("begin", self)

    def bwrap_options(self) -> list[str]:
        return ["--bind", str(self.folder), SOCKET_DIR, "--lock-file", f"{SOCKET_DIR}/lock"]

    def left(self) -> list[str] | None:
        """What the agent left running when it ended by itself, as the shell inside wrote it down ("pid N: argv",
        pids of the sandbox's namespace) before the namespace ended them; None when the shell wrote nothing (it was
        killed: a timeout). The folder is the sandbox's to write, so the file is read as a hostile one: a regular
        file only, bounded, never waited on."""
        from .._util.safe_read import UnreadableFile, read_bytes

        try:
            data = read_bytes(self.folder / "left", "the sandbox's list of what its command left", limit=1 << 16)
        except UnreadableFile:
            return None
        lines = data.decode("utf-8", "replace").splitlines()
        return [line[:310] for line in lines if line.startswith("pid ")][:200]

    def close(self) -> None:
        """The trial's command has ended (or never started): let go of everything. Never blocks."""
        self._worker.ask("end", self)

    # -- in the handoff thread ----------------------------------------------------------------------------------
    def begin(self) -> None:
        if not self.finished:
            self._worker.watch(self._ready, self, self._shell_ready)

    def _shell_ready(self) -> None:
        os.read(self._ready, 64)
        self._worker.forget(self)
        if helper_problem is not None:
            self._fall_back(RuntimeError(f"the namespace helper is not usable here: {helper_problem}"))
            return
        self._enter()

    def _enter(self) -> None:
        try:
            try:
                pid = _lock_holder(self.lock_file)
            except ProcessLookupError:
                # bwrap's first process takes the lock just after it forks the shell, so the shell can be ready a
                # moment before the lock is held: look again shortly (rare; a few times at most)
                self._tries += 1
                if self._tries <= _LOCK_TRIES:
                    self._worker.later(_LOCK_RETRY_S, self, self._enter)
                    return
                raise
            netns = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            try:
                if _lock_holder(self.lock_file) != pid:
                    raise OSError(errno.ESRCH, "the sandbox ended while its network namespace was opened")
                reply = _helper.ask(netns, self.host, self.port)
            finally:
                os.close(netns)
        except Exception as exc:  # noqa: BLE001 - every failure falls back to the forwarder inside
            self._fall_back(exc)
            return
        for used_up in ("ready", "lock"):  # what the agent, once it runs, will find of the handoff: only `go`
            _unlink(self.folder / used_up)
        self._reply = reply
        self._worker.watch(reply, self, self._helper_answered)

    def _helper_answered(self) -> None:
        self._worker.forget(self)
        reply, self._reply = self._reply, None
        assert reply is not None
        try:
            listener = _helper.answer(reply)
        except Exception as exc:  # noqa: BLE001
            self._fall_back(exc)
            return
        self.endpoint.add_listener(listener)
        used["namespace"] += 1
        self.way = "namespace"
        self._answer("ok")

    def _fall_back(self, exc: BaseException) -> None:
        global helper_problem, last_fallback
        last_fallback = f"{type(exc).__name__}: {exc}"
        if _lasting(exc):
            helper_problem = str(exc)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(self.folder / "handoff.sock"))
        server.listen(1)
        server.setblocking(False)
        self._server = server
        self._worker.watch(server, self, self._forwarder_connected)
        used["relay"] += 1
        self.way = "relay"
        self._answer("relay")

    def _forwarder_connected(self) -> None:
        assert self._server is not None
        try:
            client, _ = self._server.accept()
        except BlockingIOError:
            return
        self._worker.forget(self)
        self._server.close()  # one forwarder only: nothing the agent starts later can hand a socket in
        self._server = None
        _unlink(self.folder / "handoff.sock")
        client.setblocking(False)
        self._client = client
        self._worker.watch(client, self, self._forwarder_sent)

    def _forwarder_sent(self) -> None:
        assert self._client is not None
        try:
            _, fds, _, _ = socket.recv_fds(self._client, 16, 1, socket.MSG_CMSG_CLOEXEC)
        except BlockingIOError:
            return
        self._worker.forget(self)
        for fd in fds:
            listener = socket.socket(fileno=fd)
            if listener.family == socket.AF_INET and listener.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
                self.endpoint.add_listener(listener)
            else:
                listener.close()

    def _answer(self, text: str) -> None:
        try:
            os.write(self._go, text.encode("utf-8", "replace").replace(b"\n", b" ") + b"\n")
        except OSError:  # the sandbox has gone meanwhile
            pass

    def fail(self, reason: str) -> None:
        self._worker.forget(self)
        self.error = reason
        self._answer(f"the model endpoint could not be set up: {reason}")

    def end(self) -> None:
        """Everything let go, once the trial's command has ended (until then the FIFOs stay open, or the shell
        could open `go` after the answer was written and wait for a writer forever)."""
        if self.finished:
            return
        self.finished = True
        self._worker.forget(self)
        for fd in (self._ready, self._go):  # a shell still waiting reads end-of-file and says so
            os.close(fd)
        for item in (self._server, self._reply, self._client):
            if item is not None:
                item.close()
        shutil.rmtree(self.folder, ignore_errors=True)
