"""How the model endpoint gets into a bubblewrap sandbox's own network namespace, with no relay process.

The sandbox has a loopback of its own (`--unshare-net`), so the agent's http://127.0.0.1:PORT is not the
endpoint's. Instead of relaying bytes, trialrun makes a listening socket at that address INSIDE the sandbox's
network namespace and hands it to the endpoint, whose thread accepts on it like on its own port: the agent's
connections go straight to the endpoint. Per trial:

1. bwrap runs `/bin/sh` first, which takes a lock file (`--lock-file`) and waits on a FIFO before it execs the agent.
2. A thread here opens the FIFO (that returns once the shell is waiting), reads the sandbox's pid from the lock
   (`F_GETLK` names the holder, in our pid namespace), and opens its network namespace (`/proc/PID/ns/net`; the
   lock is checked again after the open, so a reused pid cannot slip in).
3. The namespace helper, a small single-threaded process started once per run, forks; the child enters the
   namespace's owning user namespace and the network namespace (`setns`, which a multithreaded process such as
   trialrun may not do for a user namespace) and makes the listening socket, then passes it back (SCM_RIGHTS).
4. The endpoint serves that socket; the thread writes `ok` to the FIFO and the shell execs the agent.

Where the helper cannot enter the namespace (a setuid bubblewrap, a seccomp filter), the thread answers `relay`
instead: the shell execs a few lines of Python inside the sandbox that make the socket there and hand it out
through a Unix socket bound into the sandbox, then exec the agent. Either way no process stays between the agent
and the endpoint. An answer that is neither (or none: trialrun went away) ends the trial's command with 125 and
the reason on stderr.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any

__all__ = ["Handoff", "SOCKET_DIR", "inner_command"]

SOCKET_DIR = "/tmp/.trialrun-endpoint"  # inside the sandbox (in its private /tmp)
_FLOCK = "hhqqi"   # struct flock: l_type, l_whence, l_start, l_len, l_pid (native layout)
_ANSWER_S = 30.0   # how long the helper or the forwarder inside may take to hand the socket over

#: Why the namespace helper cannot be used in this process (None: it can); set on the first lasting failure.
helper_problem: str | None = None
#: How many handoffs went each way ("namespace", "relay"), and why the last fallback happened.
used: Counter[str] = Counter()
last_fallback: str | None = None

# Inside the sandbox, before the agent: wait for trialrun's answer, then exec the agent (or the forwarder).
_WAIT = f"""read -r answer < {SOCKET_DIR}/go
py=$1 code=$2 address=$3
shift 3
case $answer in
ok) exec "$@" ;;
relay) exec "$py" -I -S -c "$code" "$address" "$@" ;;
esac
printf 'trialrun sandbox: %s\\n' "${{answer:-the model endpoint could not be set up}}" >&2
exit 125
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
                self._control = ours
            return self._control

    def listener(self, netns: int, host: str, port: int) -> socket.socket:
        """A socket listening on host:port in network namespace `netns`, made by the helper."""
        mine, theirs = socket.socketpair()
        try:
            try:
                socket.send_fds(self._channel(), [f"{host} {port}".encode()], [netns, theirs.fileno()])
            finally:
                theirs.close()
            mine.settimeout(_ANSWER_S)
            data, fds, _, _ = socket.recv_fds(mine, 1024, 1, socket.MSG_CMSG_CLOEXEC)
        finally:
            mine.close()
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
        raise OSError(errno.ESRCH, "the sandbox holds no lock on its lock file")
    return int(pid)


def _lasting(exc: BaseException) -> bool:
    """A failure that will happen for every trial of this process (no permission to enter namespaces)."""
    text = str(exc)
    return isinstance(exc, PermissionError) or any(s in text for s in ("Errno 1]", "Errno 13]", "Errno 38]"))


class Handoff:
    """One trial's handoff: a private folder bound into the sandbox (the FIFO, the lock file, the fallback's Unix
    socket) and the thread that answers the shell waiting in the sandbox."""

    def __init__(self, endpoint: Any, host: str, port: int) -> None:
        self.endpoint = endpoint
        self.host, self.port = host, port
        self.folder = Path(tempfile.mkdtemp(prefix="trialrun-endpoint-"))
        self.go = str(self.folder / "go")
        self.lock_file = str(self.folder / "lock")
        os.mkfifo(self.go, 0o600)
        Path(self.lock_file).touch(0o600)
        self._lock = threading.Lock()
        self._closed = False
        self._done = False
        self._unblock: int | None = None
        self._server: socket.socket | None = None
        self.error: str | None = None
        threading.Thread(target=self._answer, name="trialrun-sandbox-handoff", daemon=True).start()

    def bwrap_options(self) -> list[str]:
        return ["--bind", str(self.folder), SOCKET_DIR, "--lock-file", f"{SOCKET_DIR}/lock"]

    def _answer(self) -> None:
        global helper_problem, last_fallback
        try:
            fd = os.open(self.go, os.O_WRONLY | os.O_CLOEXEC)  # returns once the shell in the sandbox waits on it
        except OSError:
            self._finish()
            return
        try:
            with os.fdopen(fd, "wb", buffering=0) as go:
                if self._closed:
                    return
                try:
                    answer = self._through_namespace()
                    used["namespace"] += 1
                except Exception as exc:  # noqa: BLE001 - every failure falls back to the forwarder inside
                    last_fallback = f"{type(exc).__name__}: {exc}"
                    if _lasting(exc):
                        helper_problem = str(exc)
                    try:
                        answer = self._through_forwarder()
                        used["relay"] += 1
                    except OSError as inner:
                        answer = f"the model endpoint could not be set up: {inner}"
                try:
                    go.write(answer.encode("utf-8", "replace").replace(b"\n", b" ") + b"\n")
                except OSError:  # the sandbox has gone meanwhile
                    return
            if answer == "relay":
                self._receive()
        except Exception as exc:  # noqa: BLE001 - the shell then reads end-of-file and says so
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._finish()

    def _through_namespace(self) -> str:
        if helper_problem is not None:
            raise RuntimeError(f"the namespace helper is not usable here: {helper_problem}")
        pid = _lock_holder(self.lock_file)
        netns = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        try:
            if _lock_holder(self.lock_file) != pid:
                raise OSError(errno.ESRCH, "the sandbox ended while its network namespace was opened")
            listener = _helper.listener(netns, self.host, self.port)
        finally:
            os.close(netns)
        self.endpoint.add_listener(listener)
        return "ok"

    def _through_forwarder(self) -> str:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(self.folder / "handoff.sock"))
        server.listen(1)
        with self._lock:
            self._server = server
            closed = self._closed
        if closed:
            server.close()
            raise OSError(errno.ECANCELED, "the trial ended")
        return "relay"

    def _receive(self) -> None:
        server = self._server
        assert server is not None
        server.settimeout(_ANSWER_S)
        try:
            client, _ = server.accept()
        except OSError:
            return
        with client:
            client.settimeout(_ANSWER_S)
            _, fds, _, _ = socket.recv_fds(client, 16, 1, socket.MSG_CMSG_CLOEXEC)
        for fd in fds:
            listener = socket.socket(fileno=fd)
            if listener.family == socket.AF_INET and listener.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
                self.endpoint.add_listener(listener)
            else:
                listener.close()

    def _finish(self) -> None:
        with self._lock:
            self._done = True
            if self._unblock is not None:
                os.close(self._unblock)
                self._unblock = None
            server, self._server = self._server, None
        if server is not None:
            server.close()
        shutil.rmtree(self.folder, ignore_errors=True)  # here, off the event loop

    def close(self) -> None:
        """The trial's command has ended: a thread still waiting for the shell (bwrap failed before it started)
        or for the forwarder is let go. Never blocks."""
        with self._lock:
            self._closed = True
            if self._done:
                return
            try:  # a reader of the FIFO, held until the thread is done, lets its open return (now or later)
                self._unblock = os.open(self.go, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError:
                pass
            server = self._server
        if server is not None:
            try:
                server.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
