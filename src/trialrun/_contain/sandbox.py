"""A bubblewrap sandbox for what agents run: a process agent, and the reference agent's run_command.

Inside: the system read-only (`--ro-bind / /`), the trial's workdir writable, a private HOME, an environment
allow-list (no API keys, no tokens), a PID namespace that dies with the trial (`--unshare-pid
--die-with-parent`: a process that called setsid dies too), and no network at all (`--unshare-net`: only a
loopback of its own). Every place where the host's users and services write files is fresh and empty inside:
`/tmp`, `/var` (with an empty `/var/tmp` and `/var/run` pointing at the new `/run`), `/run` (so `/run/user`
too), `/dev` (so `/dev/shm`), `/home`, `/mnt`, `/media`, `/srv` and the user's home. So no host Unix socket
there (a database's, an ssh or gpg agent's, the session bus) is reachable, and any other socket the host has
bound (listed in /proc/net/unix, wherever it lives) is covered by /dev/null. Abstract sockets belong to the
network namespace, which is the sandbox's own.

What is mounted back (read-only) where those places hide it is a fixed list, decided when the agent is made, never
from a trial's prompt or arguments (`Bwrap.mounts()`):
- the agent's program: its folder, the folder it resolves to, and the node_modules folder it is in;
- files the agent's configured command line names by absolute path (`command: python agent.py`'s script, made
  absolute next to trialrun.toml), but nothing a `{prompt}`, `{workdir}` or `{model}` fill or a preset's
  per-trial arguments name;
- Python's own install (the forwarder's, where the endpoint needs it);
- the paths given as `Bwrap(expose=[...])`.

The model endpoint is the one way out, and it is not a port: a listening socket is made at the endpoint's address
inside the sandbox's network namespace and served by the endpoint itself (`_handoff`), so the agent's configuration
keeps pointing at http://127.0.0.1:PORT, the same URL as without a sandbox, while every other port on the real
loopback (a database, another service) and every outside host stays unreachable. A network namespace was chosen
over a shared one with firewall rules because it needs no root, no iptables and no second network device, and
cannot leak by a misconfigured rule: there is simply no route out.
"""

from __future__ import annotations

import copy
import functools
import os
import shutil
import stat
import subprocess
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

SANDBOXES = ("none", "bwrap", "auto")  # the values of `sandbox =` in trialrun.toml and of `sandbox=`

__all__ = ["Sandbox", "Bwrap", "resolve_sandbox", "SANDBOXES", "bwrap_problem", "ENV_ALLOW", "FRESH"]

#: The variables a sandboxed agent keeps from the caller's environment (the agent's own are added on top).
ENV_ALLOW = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TERM", "TZ", "NO_COLOR", "USER",
             "LOGNAME", "SHELL")
#: The places that are fresh and empty inside (those that exist here), besides /dev and the user's home.
FRESH = ("/tmp", "/var", "/run", "/home", "/mnt", "/media", "/srv")


class Sandbox:
    """No sandbox: the agent runs as the caller, with the caller's environment."""

    name = "none"
    active = False

    def __init__(self, note: str | None = None) -> None:
        self.note = note

    def describe(self) -> str:
        return self.name if self.note is None else f"{self.name} ({self.note})"

    def for_command(self, argv: Sequence[str]) -> Sandbox:
        """This sandbox for an agent whose configured command line is `argv` (what it mounts is decided here)."""
        return self

    def environment(self, home: Path | None) -> dict[str, str]:
        return dict(os.environ)

    def wrap(self, argv: list[str], env: dict[str, str], *, workdir: Path, home: Path | None,
             endpoint: Any, keeper: Sequence[str] = ()) -> tuple[list[str], dict[str, str], Callable[[], None] | None]:
        """`argv` as the sandbox runs it; `keeper`: the words that run a command under its keeper, put right before
        the agent's own command line, so the keeper runs next to it (inside the sandbox)."""
        return [*keeper, *argv], env, None


class Bwrap(Sandbox):
    """The bubblewrap sandbox (see the module's docstring)."""

    name = "bwrap"
    active = True

    def __init__(self, note: str | None = None, *, program: str = "bwrap", expose: Sequence[str | os.PathLike[str]] = ()) -> None:
        super().__init__(note)
        self.program = os.path.realpath(shutil.which(program) or program)
        self.expose = [Path(p).resolve() for p in expose]
        self._program: str | None = None     # the agent's program, from its configuration
        self._files: list[Path] = []          # files its configured command line names
        self._resolved: dict[str, str] = {}   # those arguments as written -> resolved
        self._mounts: list[Path] | None = None

    def for_command(self, argv: Sequence[str]) -> Bwrap:
        made = copy.copy(self)
        made._program = argv[0] if argv and "{" not in argv[0] else None
        named = [arg for arg in argv[1:] if "{" not in arg and os.path.isabs(arg) and os.path.isfile(arg)]
        made._files = [Path(arg).resolve() for arg in named]
        made._resolved = {arg: _physical(arg) for arg in named}
        made._mounts = None
        return made

    def mounts(self) -> list[Path]:
        """The fixed list of what is mounted back read-only where the sandbox hides it (see the module text)."""
        if self._mounts is None:
            program = _install_roots(self._program) if self._program else []
            self._mounts = _dedupe([*program, *self._files, *_python_roots(), *self.expose])
        return list(self._mounts)

    def environment(self, home: Path | None) -> dict[str, str]:
        env = {key: os.environ[key] for key in ENV_ALLOW if key in os.environ}
        env["TMPDIR"] = "/tmp"
        if home is not None:
            env["HOME"] = str(home)
        return env

    def arguments(self, workdir: Path, home: Path | None, visible: Sequence[Path]) -> list[str]:
        """bwrap's options (everything before `--` and the command); `visible`: resolved paths to mount back."""
        workdir = workdir.resolve()
        home = home.resolve() if home is not None else None
        args = [self.program, "--die-with-parent", "--new-session", "--unshare-all", "--ro-bind", "/", "/",
                "--dev", "/dev", "--proc", "/proc"]
        hidden = _hidden_places()
        for place in hidden:
            args += ["--tmpfs", str(place)]
        if Path("/var") in hidden:
            args += ["--dir", "/var/tmp", "--symlink", "../run", "/var/run"]
        shown = _outermost([path for path in visible if any(_within(path, h) for h in hidden) and path.exists()])
        for path in shown:
            args += ["--ro-bind", str(path), str(path)]
        if home is not None:
            args += ["--bind", str(home), str(home)]
        args += ["--bind", str(workdir), str(workdir), "--chdir", str(workdir)]
        for socket_path in _host_sockets(hidden, [*shown, *([home] if home else []), workdir]):
            args += ["--ro-bind", "/dev/null", socket_path]
        return args

    def wrap(self, argv: list[str], env: dict[str, str], *, workdir: Path, home: Path | None,
             endpoint: Any, keeper: Sequence[str] = ()) -> tuple[list[str], dict[str, str], Callable[[], None] | None]:
        mounts = self.mounts() if self._program or self._files else _dedupe([*_install_roots(argv[0]), *self.mounts()])
        args = self.arguments(workdir, home, mounts)
        # the paths it is given, resolved: `/tmp/x/../y/bin/python` walks through a /tmp that is not there inside
        argv = [*keeper, _physical(argv[0]), *(self._resolved.get(a, a) for a in argv[1:])]
        if endpoint is None:
            return [*args, "--", *argv], env, None
        from .handoff import Handoff, inner_command

        url = urlsplit(endpoint.url)
        host, port = url.hostname or "127.0.0.1", url.port or 80
        handoff = Handoff(endpoint, host, port)
        return [*args, *handoff.bwrap_options(), "--", *inner_command(f"{host}:{port}", argv)], env, Ending(handoff)

    def command(self, command: str, workdir: Path) -> list[str]:
        """A shell command line run in the sandbox (the reference agent's run_command): no network at all."""
        return [*self.arguments(workdir, None, _dedupe([*_python_roots(), *self.expose])), "--", "/bin/sh", "-c", command]


class Ending:
    """What `Bwrap.wrap` gives back to call once the trial's command has ended: it lets go of the endpoint's handoff,
    and keeps in `left` what the sandbox's own PID namespace ended with the command (the processes the agent left
    running when it ended by itself, named by the shell inside), for the trial's note of what was killed; None when
    the shell inside did not get to name them (the command was killed)."""

    def __init__(self, handoff: Any) -> None:
        self.handoff = handoff
        self.left: list[str] | None = None

    def __call__(self) -> None:
        self.left = self.handoff.left()
        self.handoff.close()


def _homes() -> list[Path]:
    """The user's home folders to hide: $HOME and the account's home from the password database."""
    return list(_homes_for(os.environ.get("HOME")))


@functools.lru_cache(maxsize=8)
def _homes_for(home: str | None) -> tuple[Path, ...]:
    found = []
    for value in (home, _passwd_home()):
        if value and value != "/" and Path(value).is_dir():
            found.append(Path(value).resolve())
    return tuple(_dedupe(found))


def _hidden_places() -> list[Path]:
    """Where the sandbox puts a fresh, empty folder: FRESH (those that exist) and the homes not under them."""
    places = _fresh_places()
    return places + [home for home in _homes() if not any(_within(home, place) for place in places)]


def _within(path: Path, folder: Path) -> bool:
    """`path` is `folder` or beneath it (both resolved already: no file system call)."""
    return _starts(str(path), str(folder))


def _outermost(paths: Sequence[Path]) -> list[Path]:
    """Resolved paths without those beneath another of them (mounting the folder mounts what is in it)."""
    unique = list(dict.fromkeys(paths))
    return [p for p in unique if not any(q != p and _within(p, q) for q in unique)]


@functools.lru_cache(maxsize=1)
def _fresh_places() -> list[Path]:
    return _dedupe([Path(name) for name in FRESH if Path(name).is_dir()])  # a symlinked /home: its real folder


def _passwd_home() -> str | None:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError):
        return None


def _dedupe(paths: Sequence[Path]) -> list[Path]:
    return list(dict.fromkeys(p.resolve() for p in paths))


def _install_roots(program: str) -> list[Path]:
    """What a program needs to be visible to run: its folder, for an npm program the node_modules it is in, and for
    a script the interpreter its `#!` line names (a PyPI agent's console script: its venv and the Python install
    the venv was made from)."""
    path = Path(shutil.which(program) or program)
    if not path.exists():
        return []
    real = path.resolve()
    roots = [Path(os.path.abspath(path)).parent, real.parent]
    for parent in real.parents:
        if parent.name == "node_modules":
            roots.append(parent)
            break
    return roots + _interpreter_roots(real)


def _interpreter_roots(script: Path) -> list[Path]:
    """The install of the interpreter a script's `#!` line names by its path (`#!/usr/bin/env node` names none:
    PATH finds it inside): the interpreter's folder and the prefix it is in, and for a venv's python the venv and
    the prefix of the Python its pyvenv.cfg names (`home = ...`), where the standard library is."""
    try:
        with open(script, "rb") as file:
            first = file.readline(512)
    except OSError:
        return []
    words = first[2:].split() if first.startswith(b"#!") else []
    if not words or not words[0].startswith(b"/"):
        return []
    interpreter = Path(os.fsdecode(words[0]))
    if interpreter.name == "env" or not interpreter.exists():
        return []
    real = interpreter.resolve()
    roots = [interpreter.parent, real.parent, real.parent.parent]
    venv = interpreter.parent.parent
    try:
        config = (venv / "pyvenv.cfg").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return roots
    roots.append(venv)
    for line in config.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip().startswith("/"):
            home = Path(value.strip())  # the base interpreter's bin folder (a venv made with --copies links none)
            roots += [home, home.parent]
    return roots


@functools.lru_cache(maxsize=1)
def _python_roots() -> tuple[Path, ...]:
    """Python's install, resolved (the forwarder runs it inside; `sys.executable` may hold `..`)."""
    return tuple(_dedupe([Path(sys.base_prefix), Path(sys.prefix), *_install_roots(os.path.realpath(sys.executable)),
                          *_install_roots(sys.executable)]))


def _host_sockets(hidden: Sequence[Path], shown: Sequence[Path]) -> list[str]:
    """The host's bound Unix sockets (/proc/net/unix) that would still be reachable inside: not under a fresh
    place, or under something mounted back. Each is covered by /dev/null."""
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="surrogateescape") as table:
            lines = table.read().splitlines()[1:]
    except OSError:
        return []
    folders: dict[str, str] = {}
    found: list[str] = []
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) < 8 or not fields[7].startswith("/"):
            continue  # unnamed or abstract (the sandbox has its own network namespace, so its own abstract names)
        folder, _, name = fields[7].rpartition("/")
        if folder not in folders:
            folders[folder] = os.path.realpath(folder or "/")
        real = os.path.join(folders[folder], name)
        if any(_starts(real, str(h)) for h in (*hidden, "/dev", "/proc")) and not any(_starts(real, str(s)) for s in shown):
            continue
        try:
            if stat.S_ISSOCK(os.lstat(real).st_mode) and real not in found:
                found.append(real)
        except OSError:
            continue  # removed since it was bound
    return found


def _physical(path: str) -> str:
    """`path` with its folders resolved (`..` taken as the kernel takes it, after symlinks) and its last part kept
    as it is (a venv's `bin/python` is a symlink that must stay the venv's)."""
    if not os.path.isabs(path):
        return path  # relative: the agent's own workdir is where it is looked up, the same inside
    folder, _, name = path.rpartition("/")
    return os.path.join(os.path.realpath(folder or "/"), name)


def _starts(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


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
