"""How to make sure nothing an agent starts outlives its trial: the candidate mechanisms, measured side by side.

    python bench/containment.py [--rounds 30] [--unprivileged]

For each mechanism: its cost per trial (start `true` under it, notice its exit, contain; the median of `--rounds`
interleaved rounds, against plain `true`), and its robustness: a command that starts a child in a new session
(`setsid`), a double-forked grandchild ignoring SIGTERM, a `nohup` job and a `setsid` child with an emptied
environment, then either exits (a normal end) or is stopped after 0.5 s (a timeout); survivors are counted in
/proc by a marker in their argv. `--unprivileged` also tries each mechanism as user `nobody` (through `setpriv`,
when run as root) and prints whether it works there.

Mechanisms: `session` (what trialrun did before: a session of its own, then a /proc scan killing that session),
`keeper` (trialrun's choice: a child subreaper, `trialrun._contain.keeper`, forked by the keeper server),
`keeper1` (the same keeper as a new interpreter of its own, as in the bwrap sandbox), `unshare` (a PID namespace:
`unshare --pid --fork --kill-child`, with `--user --map-current-user` when not root), `cgroup` (a cgroup v2 of its
own, then `cgroup.kill`), `bwrap` (bubblewrap's PID namespace only).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from trialrun._contain.keeper import SyncKeeper, keeper_argv, session_members  # noqa: E402


def kill_session(sid: int, rounds: int = 20) -> None:
    """What trialrun did before keepers: SIGKILL every process of the session until none is left."""
    for _ in range(rounds):
        members = session_members(sid)
        if not members:
            return
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)

ESCAPES = """M="$1"
ln -sf {sleep} "$2/$M"
setsid "$2/$M" 1001 </dev/null >/dev/null 2>&1 &
( trap '' TERM; "$2/$M" 1002 </dev/null >/dev/null 2>&1 & )
nohup "$2/$M" 1003 </dev/null >/dev/null 2>&1 &
env -i setsid "$2/$M" 1005 </dev/null >/dev/null 2>&1 &
sleep 0.2
[ "$3" = end ] || exec "$2/$M" 1004
"""


def _cgroup_root() -> Path | None:
    for base in (Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup")):
        if (base / "cgroup.procs").exists() and (base / "cgroup.subtree_control").exists():
            return base
    return None


class Mechanism:
    """Start argv under the mechanism; `end(kill)` waits for the command to exit (or kills it first) and contains
    what is left."""

    name = ""

    def start(self, argv: list[str]) -> None:
        raise NotImplementedError

    def end(self, kill: bool) -> None:
        raise NotImplementedError


class Session(Mechanism):
    name = "session"

    def start(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True)

    def end(self, kill: bool) -> None:
        if not kill:
            self.proc.wait()
        kill_session(self.proc.pid)
        self.proc.wait()


class Keeper(Mechanism):
    """A keeper of its own: a new interpreter a trial (what trialrun runs inside the bwrap sandbox)."""

    name = "keeper1"

    def start(self, argv: list[str]) -> None:
        self.keeper = SyncKeeper()
        kept = keeper_argv(argv)
        assert kept is not None
        self.proc = subprocess.Popen(kept, stdin=self.keeper.theirs.fileno(), start_new_session=True)
        self.keeper.started()

    def end(self, kill: bool) -> None:
        if not kill:
            import select

            while not self.keeper.reports.exited:
                select.select([self.keeper.ours], [], [])
                if not self.keeper.read():
                    break
        self.keeper.finish()
        self.proc.wait()


class Served(Mechanism):
    """trialrun's choice: a keeper forked by the keeper server (started once, before the rounds)."""

    name = "keeper"

    def start(self, argv: list[str]) -> None:
        self.keeper = SyncKeeper()
        pipes = self.keeper.launch(argv, env=dict(os.environ), cwd=os.getcwd())
        assert pipes is not None
        self.pipes = pipes
        self.keeper.started()

    def end(self, kill: bool) -> None:
        if not kill:
            import select

            while not self.keeper.reports.exited:
                select.select([self.keeper.ours], [], [])
                if not self.keeper.read():
                    break
        self.keeper.finish()
        for fd in self.pipes:
            os.close(fd)
        self.proc = subprocess.CompletedProcess([], 0 if self.keeper.reports.status == 0 else 1)


class Unshare(Mechanism):
    name = "unshare"

    def start(self, argv: list[str]) -> None:
        user = [] if os.geteuid() == 0 else ["--user", "--map-current-user"]
        self.proc = subprocess.Popen(["unshare", *user, "--pid", "--fork", "--kill-child", *argv],
                                     stdin=subprocess.DEVNULL, start_new_session=True, stderr=subprocess.PIPE)

    def end(self, kill: bool) -> None:
        if kill:
            self.proc.kill()
        self.proc.wait()
        self.problem = self.proc.stderr.read().decode().strip() if self.proc.stderr else ""
        if self.proc.stderr:
            self.proc.stderr.close()


class Cgroup(Mechanism):
    name = "cgroup"

    def start(self, argv: list[str]) -> None:
        root = _cgroup_root()
        if root is None:
            raise OSError("no cgroup v2 hierarchy")
        self.group = root / f"trialrun-bench-{uuid.uuid4().hex[:8]}"
        self.group.mkdir()
        procs = self.group / "cgroup.procs"
        self.proc = subprocess.Popen(["sh", "-c", f'echo $$ > {procs} && exec "$@"', "sh", *argv],
                                     stdin=subprocess.DEVNULL, start_new_session=True)

    def end(self, kill: bool) -> None:
        if not kill:
            self.proc.wait()
        (self.group / "cgroup.kill").write_text("1")
        self.proc.wait()
        while (self.group / "cgroup.procs").read_text().strip():
            time.sleep(0.001)
        self.group.rmdir()


class Bwrap(Mechanism):
    name = "bwrap"

    def start(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(["bwrap", "--unshare-pid", "--die-with-parent", "--dev-bind", "/", "/", "--",
                                      *argv], stdin=subprocess.DEVNULL, start_new_session=True, stderr=subprocess.PIPE)

    def end(self, kill: bool) -> None:
        if kill:
            self.proc.kill()
        self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()


MECHANISMS: list[Callable[[], Mechanism]] = [Session, Served, Keeper, Unshare, Cgroup, Bwrap]


def _plain() -> None:
    subprocess.run(["true"], stdin=subprocess.DEVNULL, check=True)


def _cpu() -> float:
    """CPU seconds used so far by this process, its reaped children and the keeper server (with the keepers it
    forked and reaped: they are not our children)."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    total = me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime
    from trialrun._contain.keeper import _Server

    if _Server.current is not None:
        try:
            fields = Path(f"/proc/{_Server.current.process.pid}/stat").read_text().rpartition(")")[2].split()
            total += sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
        except OSError:
            pass
    return total


def cost(rounds: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Milliseconds per `true` under each mechanism (and bare), interleaved round by round: wall and CPU."""
    times: dict[str, list[float]] = {"bare": []}
    cpu: dict[str, list[float]] = {"bare": []}
    usable = []
    for make in MECHANISMS:
        try:
            m = make()
            m.start(["true"])
            m.end(False)
            usable.append(make)
            times[m.name], cpu[m.name] = [], []
        except OSError as exc:
            print(f"{make.name}: not usable here: {exc}")
    for _ in range(rounds):
        started, used = time.perf_counter(), _cpu()
        _plain()
        times["bare"].append((time.perf_counter() - started) * 1000)
        cpu["bare"].append((_cpu() - used) * 1000)
        for make in usable:
            m = make()
            started, used = time.perf_counter(), _cpu()
            m.start(["true"])
            m.end(False)
            times[m.name].append((time.perf_counter() - started) * 1000)
            cpu[m.name].append((_cpu() - used) * 1000)
    return times, cpu


def _survivors(marker: str) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv0 = Path("/proc", entry, "cmdline").read_bytes().split(b"\0")[0]
                state = Path("/proc", entry, "stat").read_text().rpartition(")")[2].split()[0]
            except OSError:
                continue
            if argv0.endswith(marker.encode()) and state != "Z":
                count += 1
                os.kill(int(entry), signal.SIGKILL)
    return count


def robustness(folder: Path) -> dict[str, dict[str, int]]:
    """Survivors (of 4 on a normal end, 5 on a kill) per mechanism."""
    script = folder / "escapes.sh"
    script.write_text(ESCAPES.format(sleep=shutil.which("sleep")))
    found: dict[str, dict[str, int]] = {}
    for make in MECHANISMS:
        name = make.name  # type: ignore[attr-defined]
        found[name] = {}
        for ending in ("end", "kill"):
            marker = f"trcb{uuid.uuid4().hex[:10]}"
            m = make()
            try:
                m.start(["sh", str(script), marker, str(folder), ending])
            except OSError:
                found[name][ending] = -1
                continue
            time.sleep(0.5)
            m.end(ending == "kill")
            time.sleep(0.3)
            found[name][ending] = _survivors(marker)
    return found


def unprivileged() -> None:
    """Each mechanism tried on `true` as user nobody (run as root: through setpriv)."""
    if os.geteuid() != 0:
        probe()
        return
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable  # one nobody may run
    done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python,
                           str(Path(__file__).resolve()), "--probe"], capture_output=True, text=True, cwd="/tmp")
    print(done.stdout + done.stderr)


def probe() -> None:
    for make in MECHANISMS:
        m = make()
        try:
            m.start(["true"])
            m.end(False)
            code = m.proc.returncode
            problem = getattr(m, "problem", "")
            print(f"  as uid {os.geteuid()}: {m.name:8} {'works' if code == 0 else f'FAILS ({code}) {problem}'}")
        except Exception as exc:  # noqa: BLE001
            print(f"  as uid {os.geteuid()}: {m.name:8} FAILS: {exc}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--unprivileged", action="store_true")
    parser.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        probe()
        return
    load = os.getloadavg()[0]
    print(f"cost per trial of `true` (ms, median of {args.rounds} interleaved rounds; load {load:.1f}):")
    times, cpu = cost(args.rounds)
    bare, bare_cpu = statistics.median(times["bare"]), statistics.mean(cpu["bare"])
    for name, values in times.items():
        median, used = statistics.median(values), statistics.mean(cpu[name])
        print(f"  {name:8} wall {median:6.1f} ms (+{median - bare:5.1f} over bare; p10 {sorted(values)[len(values) // 10]:.1f},"
              f" p90 {sorted(values)[len(values) * 9 // 10]:.1f})   CPU {used:5.1f} ms (+{used - bare_cpu:4.1f})")
    with tempfile.TemporaryDirectory() as folder:
        print("survivors (normal end: of 4; killed after 0.5 s: of 5):")
        for name, result in robustness(Path(folder)).items():
            print(f"  {name:8} end {result['end']}, kill {result['kill']}")
    if args.unprivileged:
        print("as an unprivileged user:")
        unprivileged()


if __name__ == "__main__":
    main()
