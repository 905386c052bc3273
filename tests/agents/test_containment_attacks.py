"""An agent that fights its containment: it starts a daemon that left its session (`setsid`), forked twice and
ignores SIGTERM and SIGHUP, then kills or stops its keeper (and, harder, the keeper server too, with the daemon's
environment emptied). Nothing may outlive the trial, the run may not wait out its timeout for a stopped keeper, and
the trial lists what was killed and how it was found.

The truth is read from /proc after the run, outside trialrun: each daemon is `sleep 300.<unique digits>` (or a
symlink to sleep named after the test), found by its argv. Without a sandbox and in bwrap (where the agent cannot see
its keeper: the sandbox's PID namespace holds), through a small shell agent, through the reference agent's
`run_command` (the issue's one-liner) and through real agents' own shell tools (pi's, Claude Code's and
opencode's bash)."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _procs import holding

import trialrun as tr
from trialrun._contain import scope as _scope
from trialrun.wire import ModelRequest

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="the truth is read from /proc (Linux)")

LIMIT_S = 60.0  # the agent's timeout: a run that waited it out would take a minute
QUICK_S = 20.0  # what the run may take at most (the attacks end in about a second, plus a loaded machine's start)

#: The keeper is the first ancestor whose command line is the keeper server's (`python -I -S -c CODE serve`: a keeper
#: is its fork), as an attacker would find it; in bwrap it is not to be found (the PID namespace ends at the sandbox's
#: init), and the script kills no one.
FIND_KEEPER = textwrap.dedent("""\
    p=$$
    while [ "$p" -gt 1 ]; do
      p=$(awk '{print $4}' /proc/$p/stat)
      tr '\\0\\n' '  ' < /proc/$p/cmdline 2>/dev/null | grep -q -- '-I -S -c .* serve $' && break
    done
    [ "$p" -gt 1 ] || p=
    S=
    [ -n "$p" ] && S=$(awk '{print $4}' /proc/$p/stat)
""")


def daemon(number: str, *, empty_env: bool = False) -> str:
    """A daemon that left the session, forked twice and ignores SIGTERM and SIGHUP: `sleep 300.NUMBER` (two of them:
    one the session's leader, one its double-forked grandchild)."""
    env = "env -i " if empty_env else ""
    return (f"setsid {env}sh -c 'trap \"\" TERM HUP; ( trap \"\" TERM HUP; sleep 300.{number}1 </dev/null >/dev/null "
            f"2>&1 & ); exec sleep 300.{number}2' </dev/null >/dev/null 2>&1 &\n")


def attack(number: str, signal_name: str, *, server_too: bool = False, empty_env: bool = False) -> str:
    """The agent's script: the daemon, then SIGKILL or SIGSTOP to its keeper (and the keeper server), then it goes on
    a moment and ends."""
    victims = '$p $S' if server_too else '$p'
    return (daemon(number, empty_env=empty_env) + "sleep 0.3\n" + FIND_KEEPER
            + f'[ -n "$p" ] && kill -{signal_name} {victims}\n' + "sleep 1\necho started\n")


def alive(number: str, within: float = 3.0) -> list[str]:
    """The daemons (`sleep 300.NUMBER...`) alive after `within` seconds (a kill takes a moment to land)."""
    deadline = time.monotonic() + within
    while (found := holding(f"300.{number}")) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


@pytest.fixture
def number() -> Iterator[str]:
    made = str(secrets.randbelow(10**9)).zfill(9)
    yield made
    for line in holding(f"300.{made}"):  # a failing test leaves nothing behind either
        try:
            os.kill(int(line.split(":")[0]), signal.SIGKILL)
        except OSError:
            pass


@pytest.fixture(params=["with cgroup", "without cgroup"])
def cgroups(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways: with a trial cgroup where this machine lets trialrun make one, and as on a machine that does not."""
    if request.param == "without cgroup":
        monkeypatch.setattr(_scope, "_problem", ["turned off by the test"])
    return str(request.param)


def _trial(tmp_path: Path, text: str, sandbox: str) -> tuple[tr.TrialResult, float]:
    script = tmp_path / "agent.sh"
    script.write_text(text)
    agent = tr.ProcessAgent(["sh", str(script)], timeout_s=LIMIT_S, sandbox=sandbox)
    case = tr.Case(name="c", invoke=lambda ctx: agent("p", ctx, model=tr.ScriptedModel([tr.reply("x")])),
                   expect_outcome=[tr.expect.contains("started")])
    began = time.monotonic()
    trial = tr.evaluate([case]).cases[0].trials[0]
    return trial, time.monotonic() - began


def _daemons_listed(trial: tr.TrialResult, number: str) -> list[str]:
    """The note's entries of the daemons themselves (not of a shell whose command line names them)."""
    return [k for k in trial.killed or [] if f": sleep 300.{number}" in k]


@pytest.mark.parametrize("signal_name", ["KILL", "STOP"])
@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_a_daemon_dies_when_the_agent_kills_or_stops_its_keeper(tmp_path: Path, number: str, signal_name: str,
                                                                sandbox: str, cgroups: str) -> None:
    trial, took = _trial(tmp_path, attack(number, signal_name), sandbox)
    assert alive(number) == []
    assert took < QUICK_S, (took, trial.error)
    if sandbox == "none":  # the keeper was found and hit: the trial failed, and names each daemon and how it was found
        word = {"KILL": "killed by SIGKILL", "STOP": "stopped by SIGSTOP"}[signal_name]
        assert trial.error is not None and f"its keeper was {word} before the agent ended" in trial.error.message
        listed = _daemons_listed(trial, number)
        assert len(listed) == 2 and all(entry.endswith("(found by the keeper server)") for entry in listed), \
            trial.killed
    else:  # in bwrap its keeper is out of sight: nothing hit it, and the sandbox's PID namespace ended the daemons
        assert trial.passed, (trial.error, trial.verdicts)


@pytest.mark.parametrize("signal_name", ["KILL", "STOP"])
@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_a_daemon_with_an_empty_environment_dies_when_the_agent_also_kills_or_stops_the_keeper_server(
        tmp_path: Path, number: str, signal_name: str, sandbox: str, cgroups: str) -> None:
    """Both lines the agent can reach are down (killed at once, or stopped): trialrun takes over, by the trial's
    cgroup, by the keeper's session and tree, and by what descends from the trial's processes."""
    trial, took = _trial(tmp_path, attack(number, signal_name, server_too=True, empty_env=True), sandbox)
    assert alive(number) == []
    assert took < QUICK_S, (took, trial.error)
    if sandbox == "none":
        assert trial.error is not None and "its keeper was " in trial.error.message
        listed = _daemons_listed(trial, number)
        assert len(listed) == 2, trial.killed
        assert all(entry.endswith(")") and "(found " in entry for entry in listed), trial.killed
        if cgroups == "without cgroup":
            assert not any("cgroup" in entry for entry in trial.killed or []), trial.killed


def test_a_keeper_server_that_was_stopped_is_replaced(tmp_path: Path, number: str) -> None:
    from trialrun._contain.keeper import _Server

    _trial(tmp_path, "echo started\n", "none")  # the server to stop: this process's current one
    assert _Server.current is not None
    attacked = _Server.current.process.pid
    # stopped from here, not by an agent that must find it (the tests above do that, and whether an agent's walk up
    # /proc reaches this process's server under xdist's load is not what this test is about)
    os.kill(attacked, signal.SIGSTOP)
    deadline = time.monotonic() + 5
    while _scope.state_of(attacked) not in ("T", "t") and time.monotonic() < deadline:  # a signal lands a moment later
        time.sleep(0.01)
    assert _scope.state_of(attacked) in ("T", "t")
    trial, _ = _trial(tmp_path, daemon(number) + "sleep 0.3\necho started\n", "none")
    assert trial.passed, trial.error
    assert alive(number) == []  # the new server's keeper ended the trial's daemon
    assert _Server.current is not None and _Server.current.process.pid != attacked
    assert _scope.state_of(attacked) in (None, "Z")
    assert _scope.state_of(_Server.current.process.pid) not in (None, "T", "Z")


# -- the reference agent's run_command -----------------------------------------------------------------------------
#: The issue's one-liner: a daemon, then SIGKILL (or SIGSTOP) to the command's parent, its keeper.
ONE_LINER = "setsid -f sh -c 'trap \"\" TERM HUP; sleep 300.{number}'; sleep 0.3; kill -{signal} $PPID"


@pytest.mark.parametrize("signal_name", ["KILL", "STOP"])
@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_the_one_liner_through_run_command_leaves_nothing(number: str, signal_name: str, sandbox: str) -> None:
    command = ONE_LINER.format(number=number, signal=signal_name)
    model = tr.ScriptedModel([tr.tool_call("run_command", command=command), tr.reply("done")])

    def invoke(ctx: tr.TrialContext) -> tr.Run:
        agent = tr.Agent(model=model, tools=tr.shell_tools(ctx.workdir, sandbox=sandbox, timeout_s=LIMIT_S))
        return agent.run("go")

    began = time.monotonic()
    trial = tr.evaluate([tr.Case(name="c", invoke=invoke, expect_outcome=[tr.expect.contains("done")])]).cases[0].trials[0]
    took = time.monotonic() - began
    assert alive(number) == []
    assert took < QUICK_S, (took, trial.error)
    shown = [r.content for request in model.requests[1:2] for r in request.last_tool_results]  # as the model saw it
    if sandbox == "none":
        word = {"KILL": "killed by SIGKILL", "STOP": "stopped by SIGSTOP"}[signal_name]
        assert len(shown) == 1 and shown[0].startswith(f"command stopped: its keeper was {word}"), shown
        assert f"sleep 300.{number}" in shown[0]
        listed = _daemons_listed(trial, number)
        assert listed and all(k.endswith("(found by the keeper server)") for k in listed), trial.killed
    else:  # the sandbox's own namespace: the command's parent is its init, which a signal from inside cannot kill
        assert len(shown) == 1 and shown[0].startswith("exit code: "), shown


# -- a real agent's own shell tool ---------------------------------------------------------------------------------
def _script(agent: tr.agents.Preset, command: str) -> Callable[[ModelRequest], Any]:
    tool, argument = agent.shell_tool or ("bash", "command")

    def step(request: ModelRequest) -> Any:
        if not request.tools:  # a side request (a title)
            return tr.reply("Trial run")
        if request.last_tool_results:
            return tr.reply("done")
        return tr.tool_call(tool, {argument: command})

    return step


@pytest.mark.real_agent
@pytest.mark.parametrize("signal_name", ["KILL", "STOP"])
@pytest.mark.parametrize("preset, sandbox", [("pi", "none"), ("pi", "bwrap"), ("claude-code", "none"),
                                             ("opencode", "none")])  # (bwrap's PID namespace is the agent's own)
def test_a_real_agents_shell_tool_that_kills_or_stops_its_keeper_leaves_nothing(
        tmp_path: Path, number: str, signal_name: str, preset: str, sandbox: str,
        agent_path: Callable[[str], str]) -> None:
    permissions = tr.agents.CONTRACTS[preset].permissions
    options = dict(permissions.runs_all) if permissions else {}  # Claude Code runs the command only when allowed
    agent = tr.agents.preset(preset, path=agent_path(preset), sandbox=sandbox, timeout_s=90, **options)
    command = daemon(number) + "sleep 0.3\n" + FIND_KEEPER + f'[ -n "$p" ] && kill -{signal_name} $p\necho sent\n'
    began = time.monotonic()
    case = tr.Case(name="c", invoke=lambda ctx: agent("start the helpers", ctx, model=ctx.scripted(_script(agent, command))),
                   expect_outcome=[tr.expect.contains("done")])
    trial = tr.evaluate([case]).cases[0].trials[0]
    took = time.monotonic() - began
    assert alive(number) == []
    assert took < 60, (took, trial.error)
    if sandbox == "none":
        assert trial.error is not None and "its keeper was " in trial.error.message, (trial.error, trial.verdicts)
        listed = _daemons_listed(trial, number)
        assert len(listed) == 2 and all("(found by the keeper server)" in k for k in listed), trial.killed
    else:
        assert trial.passed, (trial.error, trial.verdicts)


# -- the lines themselves -------------------------------------------------------------------------------------------
def test_where_this_machine_allows_it_the_agent_runs_in_a_cgroup_of_its_own(tmp_path: Path) -> None:
    """The cgroup line is real where it is claimed (the agent's /proc/self/cgroup names a trial cgroup, gone after
    the trial), and where it is not, the reason is said and the agent stays in trialrun's cgroup."""
    code = "print(open('/proc/self/cgroup').read().strip().splitlines()[-1]); print('started')"
    trial = tr.evaluate([tr.Case(name="c", invoke=lambda ctx: tr.ProcessAgent([sys.executable, "-c", code])(
        "p", ctx, model=tr.ScriptedModel([tr.reply("x")])), expect_outcome=[tr.expect.contains("started")])]).cases[0].trials[0]
    assert trial.passed, trial.error
    line = str(trial.output).splitlines()[0]
    own = Path("/proc/self/cgroup").read_text().strip().splitlines()[-1]
    base = _scope.cgroup_base()
    if base is None:
        assert _scope.cgroup_problem(), "no cgroup, and no reason said"
        assert line == own
    else:
        assert line.startswith(own.rstrip("/") + "/trialrun-"), (line, own, base, _scope.cgroup_problem())
        folder = base / line.rpartition("/")[2]
        deadline = time.monotonic() + 5
        while folder.exists() and time.monotonic() < deadline:  # the warden removes it once it reaped the keeper
            time.sleep(0.05)
        assert not folder.exists()


def test_without_a_keeper_server_trialrun_itself_sweeps_after_a_killed_keeper(tmp_path: Path, number: str,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no keeper server can run, each agent's keeper is an interpreter of its own, a child of trialrun, and
    no warden stands behind it: its report stream ends without its last words, and trialrun takes over."""
    from trialrun._contain.keeper import _Server

    monkeypatch.setattr(_Server, "send", classmethod(lambda cls, fds, body: False))
    trial, took = _trial(tmp_path, attack(number, "KILL").replace(" serve $", " agent "), "none")
    assert alive(number) == []
    assert took < QUICK_S, (took, trial.error)
    assert trial.error is not None and "its keeper was gone without a word" in trial.error.message, trial.error
    listed = _daemons_listed(trial, number)
    assert len(listed) == 2 and all("(found " in entry for entry in listed), trial.killed
    base = _scope.cgroup_base()
    if base is not None:  # its cgroup is removed by trialrun (no warden to do it); a server's spare keeper's may be
        assert not [p for p in base.glob(f"trialrun-{os.getpid()}-*") if p.name.rpartition("-")[2].isdigit()]


UNPRIVILEGED = '''
import json, sys
import trialrun as tr
from trialrun._contain import keeper, scope
agent = tr.ProcessAgent(["sh", sys.argv[1]], timeout_s=60)
case = tr.Case(name="c", invoke=lambda ctx: agent("p", ctx, model=tr.ScriptedModel([tr.reply("x")])),
               expect_outcome=[tr.expect.contains("started")])
trial = tr.evaluate([case]).cases[0].trials[0]
print(json.dumps({"killed": trial.killed, "error": trial.error.message if trial.error else None,
                  "cgroup": str(scope.cgroup_base()), "why": scope.cgroup_problem(),
                  "keepers": keeper.keeper_argv(["true"]) is not None}))
'''


def _python_for_nobody() -> list[str] | None:
    """A Python `nobody` can run that imports this trialrun and its dependencies: the system's, when it is this
    Python's version (this one may live under a folder only root may enter, as pyenv's does under /root)."""
    system = Path("/usr/bin/python3")
    if not system.exists():
        return None
    version = subprocess.run([str(system), "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
                             text=True).stdout.strip()
    return [str(system)] if version == str(sys.version_info[:2]) else None


def _nobody_can_import(python: list[str], folder: Path, paths: list[str]) -> None:
    """`nobody` must be able to read this checkout and its venv; where a parent folder is closed to other users (a
    clone under /root), the test cannot run: it fails in CI (whose checkout is readable), else skips saying why."""
    from _agents import in_ci

    probe = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *python, "-c",
                            "import trialrun, httpx, pydantic"], capture_output=True, text=True, timeout=60,
                           cwd=folder, env={**os.environ, "HOME": str(folder), "PYTHONPATH": os.pathsep.join(paths)})
    if probe.returncode == 0:
        return
    message = (f"`nobody` cannot import trialrun from {paths[0]} (a parent folder is closed to other users: clone under "
               f"a folder they may enter, as CI's is): {probe.stderr.strip().splitlines()[-1:]}")
    if in_ci():
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.mark.parametrize("server_too", [False, True], ids=["keeper", "keeper and server"])
def test_as_an_unprivileged_user_without_a_cgroup_the_attacks_are_contained_too(tmp_path: Path, number: str,
                                                                                server_too: bool) -> None:
    """As `nobody` (no cgroup it may write: the machine delegates none to it), the keeper server and the sweep by
    session, tree and marker hold; the cgroup is refused cleanly, and why is said."""
    python = _python_for_nobody()
    if os.getuid() != 0 or shutil.which("setpriv") is None or python is None:
        pytest.skip("needs root (to become nobody), setpriv and a system python3 of this version")
    import trialrun

    folder = Path(tempfile.mkdtemp(prefix="trialrun-nobody-"))
    try:
        os.chmod(folder, 0o777)
        script = folder / "agent.sh"
        script.write_text(attack(number, "KILL", server_too=server_too, empty_env=server_too))
        os.chmod(script, 0o755)
        paths = [str(Path(trialrun.__file__).resolve().parents[1]), *(p for p in sys.path if p.endswith("-packages"))]
        _nobody_can_import(python, folder, paths)
        done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *python, "-c",
                               UNPRIVILEGED, str(script)], capture_output=True, text=True, timeout=120, cwd=folder,
                              env={**os.environ, "HOME": str(folder), "TMPDIR": str(folder),
                                   "PYTHONPATH": os.pathsep.join(paths)})
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert alive(number) == [], (seen, done.stderr[-2000:])
    assert seen["keepers"] and seen["cgroup"] == "None" and "is not this user's to write" in (seen["why"] or ""), seen
    listed = [k for k in seen["killed"] or [] if f": sleep 300.{number}" in k]
    assert len(listed) == 2 and not any("cgroup" in k for k in listed), seen
    assert "its keeper was " in seen["error"], seen


def test_where_no_keeper_can_run_what_left_the_session_is_found_by_its_marker(tmp_path: Path, number: str,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """An embedded interpreter (no Python to start a keeper): the agent runs in a session of its own, and what it
    left, in a session of its own too, forked twice, is found by the marker in its environment."""
    from trialrun._contain import keeper as _keeper

    monkeypatch.setattr(_keeper, "_python", lambda: None)
    trial, took = _trial(tmp_path, daemon(number) + "sleep 0.3\necho started\n", "none")
    assert alive(number) == []
    assert trial.passed, (trial.error, trial.verdicts)
    listed = _daemons_listed(trial, number)
    assert len(listed) == 2 and all(entry.endswith("(found by the trial's marker)") for entry in listed), trial.killed


def test_the_process_running_trials_is_left_as_it_was_no_subreaper_and_its_children_its_own(tmp_path: Path) -> None:
    """trialrun runs inside its caller's process (this pytest session): it never makes that process a child
    subreaper (which would adopt the orphans of the user's own tests) nor waits on a child it did not start (which
    would take a Popen's exit status from it). After process-agent trials, and a sweep: a user's double-forked
    child goes past this process as before, and a user's child exits with its own status."""
    import ctypes

    assert _trial(tmp_path, "echo started\n", "none")[0].passed
    assert _trial(tmp_path, attack("000000001", "STOP", server_too=True), "none")[0].error is not None  # a sweep ran
    libc = ctypes.CDLL(None, use_errno=True)
    flag = ctypes.c_int(-1)
    assert libc.prctl(37, ctypes.byref(flag), 0, 0, 0) == 0  # PR_GET_CHILD_SUBREAPER
    assert flag.value == 0
    mine = subprocess.Popen(["sh", "-c", "exit 7"])
    orphan = subprocess.run(["sh", "-c", "sleep 5 & echo $!"], capture_output=True, text=True).stdout.strip()
    try:
        time.sleep(0.3)
        parent = int(Path(f"/proc/{orphan}/stat").read_text().rpartition(")")[2].split()[1])
        assert parent != os.getpid()  # not adopted by this process
        assert _trial(tmp_path, "echo started\n", "none")[0].passed
        assert mine.wait(10) == 7  # its status, not taken by anyone in trialrun
    finally:
        os.kill(int(orphan), signal.SIGKILL)


def test_the_keeper_is_a_subreaper_through_public_ctypes_and_uses_no_private_module() -> None:
    """On this Python (CI runs every supported one): the keeper says it became a child subreaper, which it can only
    through `ctypes` (the public module); its code imports none of CPython's private modules."""
    import ast

    from trialrun._contain.keeper import KEEPER, SyncKeeper

    imported = {alias.name for node in ast.walk(ast.parse(KEEPER)) if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in node.names} | {node.module for node in ast.walk(ast.parse(KEEPER))
                                            if isinstance(node, ast.ImportFrom) and node.module}
    assert imported and not any(name.startswith("_") for name in imported), imported
    keeper = SyncKeeper()
    assert keeper.launch(["true"], env=dict(os.environ), cwd="/") is not None
    keeper.started()
    keeper.finish()
    assert keeper.reports.way == "subreaper", keeper.reports.way
    assert keeper.reports.cgroup is None  # a command (run_command's) gets none: see SyncKeeper
