"""A trial's scope: what finds its processes when its keeper cannot (the third line of containment).

Each keeper (an agent's, or a run_command's) gets a scope: a marker in the command's environment
(`TRIALRUN_SCOPE=<random>`), and, for an agent, a cgroup v2 of its own where the machine lets this user make one (its
keeper is in it before the command starts, so everything the command starts is born in it and stays in it, whatever
session, parent or environment it takes; the keeper says which cgroup that is: a spare keeper the server made ahead
names its own). The keeper (first line) and the keeper server, its warden (second line:
`keeper_source`), kill what a trial leaves. When neither answered (both stopped, or killed), trialrun takes over here:
`sweep` kills, round after round until none is left, what the cgroup holds, what is below the keeper, what is in the
keeper's session, what carries the marker, and what descends from any of those, each named with how it was found.

Why not trialrun's own process as a child subreaper: it would also adopt the orphans of everything else that process
runs (the user's tests in a pytest session, the suite's own tools), and nothing tells an adopted orphan from a child
the process started itself, so trialrun would have to leave them as zombies or risk reaping (and stealing the exit
status of) a child the user's code waits for. The keeper server is trialrun's own process, runs no user code, and is
the subreaper instead.

The cgroup is used where the kernel has `cgroup.kill` (Linux 5.14+) and this user can write its own cgroup (root, or
a cgroup systemd delegated: `systemd-run --user --scope -p Delegate=yes ...`); elsewhere it is left out, said once in
`cgroup_problem()`, and the other lines hold. Standard library only; `sweep` reads /proc and blocks: call it off the
event loop.
"""

from __future__ import annotations

import functools
import itertools
import os
import secrets
import signal
import time
from collections.abc import Mapping
from pathlib import Path

__all__ = ["Scope", "MARKER", "cgroup_base", "cgroup_problem", "refused", "state_of", "processes", "argv_of"]

#: The environment variable each kept command carries (a random value per keeper).
MARKER = "TRIALRUN_SCOPE"

_counter = itertools.count(1)
_problem: list[str] = []  # why cgroups are not used here (set once, at the first lasting failure)


def _own_cgroup() -> tuple[Path | None, str]:
    """This process's cgroup v2 folder, or None and why not (from /proc/self/cgroup and /proc/self/mountinfo)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError as exc:
        return None, f"no /proc ({exc.strerror})"
    own = next((line[3:] for line in lines if line.startswith("0::")), None)
    if own is None:
        return None, "no cgroup v2 hierarchy (cgroup v1 only)"
    for line in mounts:
        left, _, right = line.partition(" - ")
        if right.split(" ", 1)[0] != "cgroup2":
            continue
        fields = left.split()
        root, point = fields[3], fields[4]
        if own == root or own.startswith(root.rstrip("/") + "/"):
            relative = own[len(root.rstrip("/")):].lstrip("/")
            return Path(point, relative), ""
    return None, "the cgroup v2 hierarchy is not mounted here"


@functools.lru_cache(maxsize=1)
def cgroup_base() -> Path | None:
    """Where this process's trial cgroups go (its own cgroup), or None where it cannot make and enter them."""
    base, why = _own_cgroup()
    if base is None:
        _problem.append(why)
        return None
    if not (os.access(base, os.W_OK | os.X_OK) and os.access(base / "cgroup.procs", os.W_OK)):
        _problem.append(f"{base} is not this user's to write (no delegated cgroup)")
        return None
    _remove_stale(base)
    return base


def cgroup_problem() -> str | None:
    """Why trials get no cgroup here (None: they do, or no trial asked yet)."""
    return _problem[0] if _problem else None


def refused(reason: str) -> None:
    """A keeper could not make or enter its cgroup: no more cgroups in this process (the reason kept)."""
    if not _problem:
        _problem.append(reason)


def _remove_stale(base: Path) -> None:
    """The empty trial cgroups that trialrun processes which are gone left behind (killed before their removal)."""
    try:
        names = [entry.name for entry in os.scandir(base) if entry.name.startswith("trialrun-")]
    except OSError:
        return
    for name in names:
        owner = name.split("-")[1]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            try:
                os.rmdir(base / name)
            except OSError:
                pass


class Scope:
    """One keeper's scope: its marker and (where possible) the path of its cgroup, made by the keeper."""

    __slots__ = ("marker", "cgroup")

    def __init__(self, *, cgroup: bool = True) -> None:
        """`cgroup` False: no cgroup (there is no keeper to make and enter it)."""
        self.marker = secrets.token_hex(8)
        base = cgroup_base() if cgroup and not _problem else None
        self.cgroup = str(base / f"trialrun-{os.getpid()}-{next(_counter)}") if base is not None else None

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` with the marker."""
        return {**env, MARKER: self.marker}

    def sweep(self, keeper: int | None, pidfd: int | None = None, *, session: int | None = None) -> list[str]:
        """Kill what is left of this scope when its keeper and its warden did not (blocking: /proc is read each
        round): each process as "pid N: argv (how it was found)". `keeper`: its pid (None when unknown); `pidfd`, a
        pid file descriptor of it, makes killing it safe from pid reuse. `session`: the session the command was
        started in, when there is no keeper (the keeper's own, else)."""
        named: dict[int, str] = {}
        deadline = time.monotonic() + 5
        while True:
            alive = keeper is not None and _alive(keeper, pidfd)
            found = self._find(keeper, alive, keeper if session is None else session)
            for pid, how in found.items():
                if pid not in named:
                    named[pid] = f"pid {pid}: {argv_of(pid)} ({how})"
            for pid in found:
                _kill(pid)
            if self.cgroup is not None and found:
                _write(self.cgroup + "/cgroup.kill", "1")
            if alive:
                _kill(keeper, pidfd)  # type: ignore[arg-type]
            if not found or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        self.remove()
        return list(named.values())

    def _find(self, keeper: int | None, keeper_alive: bool, session: int | None) -> dict[int, str]:
        """This scope's live processes (not the keeper), each with how it was found: in its cgroup, in its keeper's
        session (the keeper made one), carrying its marker, and below any of those (or below the keeper while it
        lives: a stopped keeper's tree is whole)."""
        table = processes()
        found: dict[int, str] = {}
        if self.cgroup is not None:
            for pid in _members(self.cgroup):
                found.setdefault(pid, "found in the trial's cgroup")
        if session is not None:
            how = "found in its keeper's session" if session == keeper else "found in its session"
            for pid, (_, sid, _) in table.items():
                if sid == session:
                    found.setdefault(pid, how)
        marker = f"{MARKER}={self.marker}".encode()
        for pid in table:
            if pid not in found and _carries(pid, marker):
                found[pid] = "found by the trial's marker"
        # and what descends from those, or is in a session one of them made (a child that left the session, or whose
        # parent is gone, and cleared its environment), until nothing more is found
        roots = set(found) | ({keeper} if keeper is not None and keeper_alive else set())
        while True:
            more = {}
            for pid, (parent, sid, _) in table.items():
                if pid in found:
                    continue
                if sid in roots and sid != keeper:
                    more[pid] = "found in a session a process of the trial made"
                    continue
                up, hops = parent, 0
                while up in table and hops < 1000:
                    if up in roots:
                        more[pid] = "found below its keeper" if up == keeper else "found below a process of the trial"
                        break
                    up, hops = table[up][0], hops + 1
            if not more:
                break
            found.update(more)
            roots.update(more)
        found.pop(keeper if keeper is not None else -1, None)
        found.pop(os.getpid(), None)
        return found

    def remove(self) -> None:
        """The cgroup's folder, once empty (its warden removes it in the usual case: here after a sweep)."""
        if self.cgroup is None:
            return
        for _ in range(50):
            try:
                os.rmdir(self.cgroup)
                return
            except FileNotFoundError:
                return
            except OSError:
                _write(self.cgroup + "/cgroup.kill", "1")
                time.sleep(0.01)


def state_of(pid: int, pidfd: int | None = None) -> str | None:
    """A process's state letter from /proc (R, S, D, T stopped, t traced, Z zombie...), None when it is gone (when
    `pidfd` says it exited, even a zombie is gone: its pid may be about to be someone else's)."""
    if pidfd is not None and _exited(pidfd):
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rpartition(b")")[2].split()[0].decode()
    except (OSError, IndexError):
        return None


def _exited(pidfd: int) -> bool:
    import select

    try:
        return bool(select.select([pidfd], [], [], 0)[0])
    except (OSError, ValueError):
        return True


def _alive(pid: int, pidfd: int | None) -> bool:
    return state_of(pid, pidfd) not in (None, "Z", "X")


def _kill(pid: int, pidfd: int | None = None) -> None:
    try:
        if pidfd is not None and hasattr(signal, "pidfd_send_signal"):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def processes() -> dict[int, tuple[int, int, str]]:
    """Every live process: pid -> (parent, session, state)."""
    table: dict[int, tuple[int, int, str]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rpartition(b")")[2].split()
        except OSError:
            continue
        if fields and fields[0] not in (b"Z", b"X"):
            table[int(name)] = (int(fields[1]), int(fields[3]), fields[0].decode())
    return table


def _carries(pid: int, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return marker in handle.read(1 << 20).split(b"\0")
    except OSError:
        return False


def _members(cgroup: str) -> list[int]:
    try:
        with open(cgroup + "/cgroup.procs") as handle:
            return [int(pid) for pid in handle.read().split()]
    except (OSError, ValueError):
        return []


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w") as handle:
            handle.write(text)
    except OSError:
        pass


def argv_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            text = handle.read(600).replace(b"\0", b" ")
    except OSError:
        return "?"
    return " ".join(text.decode("utf-8", "replace").split())[:300] or "?"
