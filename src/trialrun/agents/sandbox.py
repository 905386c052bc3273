"""A bubblewrap sandbox for what agents run: a process agent, and the reference agent's run_command.

Inside: the system read-only (`--ro-bind / /`), the trial's workdir writable, a private /tmp and HOME, the user's
home hidden (a tmpfs over it; only the agent's own install folder, Python's, and files the command names are
mounted back, read-only, there and in /tmp),
an environment allow-list (no API keys, no tokens), a PID namespace that dies with the trial
(`--unshare-pid --die-with-parent`: a process that called setsid dies too), and no network at all
(`--unshare-net`: only a loopback of its own).

The model endpoint is the one way out, and it is not a port: outside, a forwarder listens on a Unix socket
bound into the sandbox; inside, a small Python forwarder listens on the endpoint's own loopback address and port
(in the sandbox's network namespace) and relays each connection to that socket. So the agent's configuration
keeps pointing at http://127.0.0.1:PORT, the same URL as without a sandbox, while every other port on the real
loopback (a database, another service) and every outside host stays unreachable. A network namespace with a Unix
socket was chosen over a shared network namespace with firewall rules because it needs no root, no iptables and no
second network device, and cannot leak by a misconfigured rule: there is simply no route out.
"""

from __future__ import annotations

import functools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..config import SANDBOXES

__all__ = ["Sandbox", "Bwrap", "resolve_sandbox", "SANDBOXES", "bwrap_problem", "ENV_ALLOW"]

#: The variables a sandboxed agent keeps from the caller's environment (the agent's own are added on top).
ENV_ALLOW = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TERM", "TZ", "NO_COLOR", "USER",
             "LOGNAME", "SHELL")
_SOCKET_DIR = "/tmp/.trialrun-endpoint"  # inside the sandbox (its private /tmp)


class Sandbox:
    """No sandbox: the agent runs as the caller, with the caller's environment."""

    name = "none"
    active = False

    def __init__(self, note: str | None = None) -> None:
        self.note = note

    def describe(self) -> str:
        return self.name if self.note is None else f"{self.name} ({self.note})"

    def environment(self, home: Path | None) -> dict[str, str]:
        return dict(os.environ)

    def wrap(self, argv: list[str], env: dict[str, str], *, workdir: Path, home: Path | None,
             endpoint: Any) -> tuple[list[str], dict[str, str], Callable[[], None] | None]:
        return argv, env, None


class Bwrap(Sandbox):
    """The bubblewrap sandbox (see the module's docstring)."""

    name = "bwrap"
    active = True

    def __init__(self, note: str | None = None, *, program: str = "bwrap", expose: Sequence[str | os.PathLike[str]] = ()) -> None:
        super().__init__(note)
        self.program = shutil.which(program) or program
        self.expose = [Path(p) for p in expose]

    def environment(self, home: Path | None) -> dict[str, str]:
        env = {key: os.environ[key] for key in ENV_ALLOW if key in os.environ}
        env["TMPDIR"] = "/tmp"
        if home is not None:
            env["HOME"] = str(home)
        return env

    def arguments(self, workdir: Path, home: Path | None, visible: Sequence[Path]) -> list[str]:
        """bwrap's options (everything before `--` and the command)."""
        args = [self.program, "--die-with-parent", "--new-session", "--unshare-all", "--ro-bind", "/", "/",
                "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        for home_dir in _homes():
            args += ["--tmpfs", str(home_dir)]
        hidden = [*_homes(), Path("/tmp").resolve()]
        for path in _dedupe([*visible, *self.expose]):
            if path.exists() and any(_under(path, h) for h in hidden):
                args += ["--ro-bind", str(path), str(path)]
        if home is not None:
            args += ["--bind", str(home), str(home)]
        args += ["--bind", str(workdir), str(workdir), "--chdir", str(workdir)]
        return args

    def wrap(self, argv: list[str], env: dict[str, str], *, workdir: Path, home: Path | None,
             endpoint: Any) -> tuple[list[str], dict[str, str], Callable[[], None] | None]:
        # mounted back read-only where the home or /tmp hides them: the program's install folder, Python (the inner
        # forwarder's), and files the command names by absolute path (a script)
        named = [Path(arg) for arg in argv[1:] if arg.startswith("/") and Path(arg).is_file()]
        visible = [*_install_roots(argv[0]), Path(sys.base_prefix), Path(sys.prefix), *_install_roots(sys.executable),
                   *named]
        args = self.arguments(workdir, home, visible)
        if endpoint is None:
            return [*args, "--", *argv], env, None
        folder = Path(tempfile.mkdtemp(prefix="trialrun-endpoint-"))
        relay = _UnixRelay(folder / "model.sock", urlsplit(endpoint.url))
        host, port = relay.target
        inner = [sys.executable, "-I", "-c", _INNER_FORWARDER, host, str(port), f"{_SOCKET_DIR}/model.sock", "--", *argv]
        args += ["--bind", str(folder), _SOCKET_DIR]

        def cleanup() -> None:
            relay.close()
            shutil.rmtree(folder, ignore_errors=True)

        return [*args, "--", *inner], env, cleanup

    def command(self, command: str, workdir: Path) -> list[str]:
        """A shell command line run in the sandbox (the reference agent's run_command): no network at all."""
        return [*self.arguments(workdir, None, [Path(sys.base_prefix), Path(sys.prefix)]), "--", "/bin/sh", "-c", command]


def _homes() -> list[Path]:
    """The user's home folders to hide: $HOME and the account's home from the password database."""
    found = []
    for value in (os.environ.get("HOME"), _passwd_home()):
        if value and value != "/" and Path(value).is_dir():
            found.append(Path(value).resolve())
    return _dedupe(found)


def _passwd_home() -> str | None:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError):
        return None


def _under(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder)
        return True
    except ValueError:
        return False


def _dedupe(paths: Sequence[Path]) -> list[Path]:
    return list(dict.fromkeys(p.resolve() for p in paths))


def _install_roots(program: str) -> list[Path]:
    """What a program needs to be visible to run: its folder, and for an npm program the node_modules it is in."""
    path = Path(shutil.which(program) or program)
    if not path.exists():
        return []
    roots = [path.parent, path.resolve().parent]
    for parent in path.resolve().parents:
        if parent.name == "node_modules":
            roots.append(parent)
            break
    return roots


class _UnixRelay:
    """Outside the sandbox: a Unix socket whose every connection is relayed to the endpoint's TCP port."""

    def __init__(self, path: Path, url: Any) -> None:
        self.target = (url.hostname or "127.0.0.1", url.port or 80)
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen(64)
        self._closed = False
        threading.Thread(target=self._accept, name="trialrun-sandbox-relay", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=10)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            _pump_both(client, upstream)

    def close(self) -> None:
        self._closed = True
        try:
            self.server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.server.close()


def _pump_both(a: socket.socket, b: socket.socket) -> None:
    """Relay bytes both ways; when either side ends, both are shut down, and the last pump closes them."""
    left = [2]
    lock = threading.Lock()

    def pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(1 << 16):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (sink, source):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            with lock:
                left[0] -= 1
                last = left[0] == 0
            if last:
                a.close()
                b.close()

    for source, sink in ((a, b), (b, a)):
        threading.Thread(target=pump, args=(source, sink), daemon=True).start()


# Inside the sandbox: listen on the endpoint's address (in the sandbox's own loopback), relay each connection to
# the Unix socket, run the agent, and exit with its status. Standard library only; run with `python -I -c`.
_INNER_FORWARDER = r"""
import socket, subprocess, sys, threading
host, port, path, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[5:]
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind((host, port))
server.listen(64)
def pump(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
def accept():
    while True:
        client, _ = server.accept()
        upstream = socket.socket(socket.AF_UNIX)
        try:
            upstream.connect(path)
        except OSError:
            client.close()
            continue
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=pump, args=(a, b), daemon=True).start()
threading.Thread(target=accept, daemon=True).start()
try:
    code = subprocess.call(argv)
except FileNotFoundError as exc:
    sys.stderr.write(f"trialrun sandbox: cannot run {argv[0]!r}: {exc.strerror}\n")
    code = 127
sys.exit(code if code >= 0 else 128 - code)
"""


@functools.lru_cache(maxsize=4)
def bwrap_problem(program: str = "bwrap") -> str | None:
    """Why bubblewrap cannot sandbox here (not installed, or not allowed to make namespaces), or None when it can."""
    found = shutil.which(program)
    if found is None:
        return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    probe = [found, "--die-with-parent", "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
             "--tmpfs", "/tmp", "--", "/bin/true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap could not start: {exc}"
    if done.returncode != 0:
        return f"bubblewrap cannot create its namespaces here: {(done.stderr or done.stdout).strip() or done.returncode}"
    return None


_warned: set[str] = set()


def resolve_sandbox(value: str | Sandbox) -> Sandbox:
    """"none", "bwrap" (an error when bubblewrap is not usable) or "auto" (bwrap when usable; otherwise none,
    said once, clearly)."""
    if isinstance(value, Sandbox):
        return value
    if value not in SANDBOXES:
        raise ValueError(f"sandbox must be one of {', '.join(SANDBOXES)}, got {value!r}")
    if value == "none":
        return Sandbox()
    problem = bwrap_problem()
    if value == "bwrap":
        if problem is not None:
            raise ValueError(f"sandbox 'bwrap': {problem}; use sandbox = 'auto' to run without it where it is absent")
        return Bwrap()
    if problem is None:
        return Bwrap("auto")
    if problem not in _warned:
        _warned.add(problem)
        warnings.warn(f"sandbox 'auto': running WITHOUT a sandbox: {problem}", RuntimeWarning, stacklevel=3)
    return Sandbox(f"auto: {problem}")
