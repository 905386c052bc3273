"""run_command never outlives whoever waits for it, and reads any amount of output with bounded memory.

Each test starts a command that writes the pid of a background child and sleeps; the child must be gone once the
call is given up on (a tool time limit, a cancelled task, Ctrl-C, the workspace removed, interpreter exit). A
test that fails still kills its child by pid, so nothing is left behind.
"""

from __future__ import annotations

import _thread
import asyncio
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import trialrun as tr
from trialrun.agent import _commands
from trialrun.agent.tools import stop_commands

SLEEPER = "sleep 60 & echo $! > {pidfile}; wait"


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return "State:\tZ" in Path(f"/proc/{pid}/status").read_text()  # a zombie no one reaped has stopped running
    except OSError:
        return True


class Sleeper:
    """The pid file a sleeper command writes, and checks on that pid (killed by pid at the end, whatever happens)."""

    def __init__(self, folder: Path) -> None:
        self.pidfile = folder / "sleeper.pid"
        self.command = SLEEPER.format(pidfile=self.pidfile)
        self.pids: list[int] = []

    def pid(self, timeout: float = 10.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                text = self.pidfile.read_text().strip()
            except FileNotFoundError:
                text = ""
            if text:
                self.pids.append(int(text))
                return int(text)
            time.sleep(0.01)
        raise AssertionError(f"the command never wrote {self.pidfile}")

    def assert_gone(self, within: float = 15.0) -> None:  # returns as soon as it is gone; generous for a loaded box
        pid = self.pid()
        deadline = time.monotonic() + within
        while not _gone(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _gone(pid), f"the command's background child {pid} outlived the call"

    def cleanup(self) -> None:
        for pid in self.pids:
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def sleeper(tmp_path: Path) -> Iterator[Sleeper]:
    made = Sleeper(tmp_path)
    yield made
    made.cleanup()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def _run_command(root: Path, **options) -> tr.Tool:
    return {t.name: t for t in tr.shell_tools(root, **options)}["run_command"]


# -- the call is given up on: the whole process group goes -------------------------------------------------------


def test_a_tool_time_limit_kills_the_command_async(workspace: Path, sleeper: Sleeper) -> None:
    run_command = _run_command(workspace, timeout_s=60)  # the command's own timeout is far away
    started = time.monotonic()
    with pytest.raises(tr.ToolError, match=r"^run_command timed out after 0.3s$"):
        asyncio.run(run_command.run({"command": sleeper.command}, timeout_s=0.3))
    assert time.monotonic() - started < 2
    sleeper.assert_gone()


def test_a_tool_time_limit_kills_the_command_sync(workspace: Path, sleeper: Sleeper) -> None:
    run_command = _run_command(workspace, timeout_s=60)
    with pytest.raises(tr.ToolError, match=r"^run_command timed out after 0.3s$"):
        run_command.run_sync({"command": sleeper.command}, timeout_s=0.3)
    sleeper.assert_gone()


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_the_agents_tool_timeout_kills_the_command(workspace: Path, sleeper: Sleeper, driver: str) -> None:
    script = [tr.tool_call("run_command", command=sleeper.command), tr.reply("done")]
    agent = tr.Agent(tr.ScriptedModel(script), tools=tr.shell_tools(workspace, timeout_s=60), tool_timeout_s=0.3)
    run = agent.run("go") if driver == "run" else asyncio.run(agent.arun("go"))
    [result] = run.trajectory.tool_results
    assert (result.content, result.is_error) == ("run_command timed out after 0.3s", True)
    sleeper.assert_gone()


def test_a_cancelled_async_run_kills_the_command(workspace: Path, sleeper: Sleeper) -> None:
    """What a case's timeout or Ctrl-C in the runner does to an async agent: cancel its task."""
    script = [tr.tool_call("run_command", command=sleeper.command), tr.reply("done")]
    agent = tr.Agent(tr.ScriptedModel(script), tools=tr.shell_tools(workspace, timeout_s=60), tool_timeout_s=None)

    async def main() -> None:
        task = asyncio.create_task(agent.arun("go"))
        await asyncio.to_thread(sleeper.pid)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    started = time.monotonic()
    asyncio.run(main())  # closing the loop waits for the tool's thread: it ends once its command is killed
    assert time.monotonic() - started < 5
    sleeper.assert_gone()


def test_a_trial_timeout_kills_the_command_of_an_async_agent(workspace: Path, sleeper: Sleeper) -> None:
    async def invoke(ctx: tr.TrialContext) -> tr.Run:
        script = [tr.tool_call("run_command", command=sleeper.command), tr.reply("done")]
        agent = tr.Agent(tr.ScriptedModel(script), tools=tr.shell_tools(ctx.workdir, timeout_s=60), tool_timeout_s=None)
        return await agent.arun("go")

    case = tr.Case(name="slow", invoke=invoke, expect_outcome=[tr.expect.contains("done")], timeout_s=1.0)
    report = tr.evaluate([case])
    assert "timed out after 1s" in report.cases[0].trials[0].error.message
    sleeper.assert_gone()


def test_ctrl_c_kills_the_command(workspace: Path, sleeper: Sleeper) -> None:
    run_command = _run_command(workspace, timeout_s=120)  # far beyond any wait below: never what ends the call
    problems: list[BaseException] = []

    def interrupt() -> None:
        try:
            sleeper.pid(timeout=100)  # the command has started its child (slow on a loaded machine)
        except BaseException as exc:  # noqa: BLE001 - said below, rather than lost with this thread
            problems.append(exc)
        _thread.interrupt_main()

    # Ctrl-C on, even when this test run was started with SIGINT ignored (`nohup ... &`); restored afterwards
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=interrupt, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            run_command.run_sync({"command": sleeper.command})
    finally:
        signal.signal(signal.SIGINT, previous)
    assert problems == []
    sleeper.assert_gone()


def test_ctrl_c_before_the_start_returns_still_kills_the_command(workspace: Path, sleeper: Sleeper,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The interrupt lands after the keeper started the shell but before trialrun heard back (a loaded machine is
    slow to hand the caller its result): there is no handle on the command yet, and the keeper, whose socket is
    closed on the way out, kills it."""
    real = _commands.SyncKeeper.launch

    def interrupted(self, *args, **kwargs):
        real(self, *args, **kwargs)
        sleeper.pid()  # the shell runs, and its child
        raise KeyboardInterrupt

    monkeypatch.setattr(_commands.SyncKeeper, "launch", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _run_command(workspace, timeout_s=120).run_sync({"command": sleeper.command})
    sleeper.assert_gone()


def test_removing_the_workspace_stops_a_command_nobody_can_cancel(workspace: Path, sleeper: Sleeper) -> None:
    """A synchronous agent abandoned by a trial timeout runs on in its thread; its trial's workspace goes."""
    run_command = _run_command(workspace, timeout_s=60)
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            run_command.run_sync({"command": sleeper.command})
        except BaseException as exc:  # noqa: BLE001
            outcome.append(exc)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    sleeper.pid()
    shutil.rmtree(workspace)
    thread.join(5)
    assert not thread.is_alive()
    assert [str(e) for e in outcome] == [f"command stopped: its workspace {workspace.resolve()} was removed"]
    sleeper.assert_gone()


def test_background_children_of_a_finished_command_are_stopped_on_request(workspace: Path, sleeper: Sleeper) -> None:
    run_command = _run_command(workspace)
    out = run_command.run_sync({"command": f"sleep 30 >/dev/null 2>&1 & echo $! > {sleeper.pidfile}"})
    assert out == "exit code: 0\n"
    assert not _gone(sleeper.pid())  # a server started in the background may be used by the next command
    assert stop_commands(workspace.parent / "elsewhere") == 0
    assert stop_commands(workspace) == 1
    sleeper.assert_gone()


def test_interpreter_exit_kills_commands_still_running(workspace: Path, sleeper: Sleeper) -> None:
    code = (
        "import threading, time, trialrun as tr\n"
        f"run_command = tr.shell_tools({str(workspace)!r}, timeout_s=60)[0]\n"
        f"threading.Thread(target=run_command.run_sync, args=({{'command': {sleeper.command!r}}},), daemon=True).start()\n"
        "from pathlib import Path\n"
        f"while not Path({str(sleeper.pidfile)!r}).exists(): time.sleep(0.01)\n"
        "from trialrun.agent import _commands\n"
        "while not _commands._KEEPERS: time.sleep(0.01)  # the thread registers the group just after starting it\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    sleeper.assert_gone()


def test_finished_commands_leave_nothing_registered(workspace: Path) -> None:
    run_command = _run_command(workspace)
    for _ in range(3):
        assert run_command.run_sync({"command": "true"}) == "exit code: 0\n"
    assert not any(root == workspace.resolve() for root in _commands._KEEPERS.values())


# -- output: read as it arrives, head and tail kept -------------------------------------------------------------


def test_huge_output_is_capped_as_it_arrives() -> None:
    run_command = _run_command(Path.cwd(), max_output=1000)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    out = run_command.run_sync({"command": "yes | head -c 50000000"})
    assert time.monotonic() - started < 5
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 20_000, f"memory grew by {grown_kib} KiB for 50 MB of output"  # 50 MB would be buffered
    assert out.startswith("exit code: 0\ny\ny\n")
    assert "\n[... 49999000 characters cut; output was 50000000 characters ...]\n" in out
    assert len(out) < 1200 and out.endswith("y\n")


def test_a_timeout_on_endless_output_is_prompt_and_keeps_its_ends() -> None:
    run_command = _run_command(Path.cwd(), timeout_s=0.5, max_output=100)
    started = time.monotonic()
    with pytest.raises(tr.ToolError) as caught:
        run_command.run_sync({"command": "yes"})
    assert time.monotonic() - started < 2.5
    message = str(caught.value)
    assert message.startswith("command timed out after 0.5s; it was stopped; partial output:\ny\ny\n")
    assert "characters cut; output was" in message and len(message) < 300


def test_stdout_and_stderr_are_capped_together() -> None:
    run_command = _run_command(Path.cwd(), max_output=100)
    out = run_command.run_sync({"command": "printf 'a%.0s' $(seq 200); printf 'b%.0s' $(seq 200) >&2"})
    # stdout, then stderr on a line of its own: 401 characters, the first 75 and the last 25 kept.
    assert out == "exit code: 0\n" + "a" * 75 + "\n[... 301 characters cut; output was 401 characters ...]\n" + "b" * 25


def _reference(out: str, err: str, limit: int) -> str:
    """What capping the whole output at once gives (the old, buffering way), for comparison."""
    text = out + ("\n" if err and out and not out.endswith("\n") else "") + err
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    tail = limit - head
    return text[:head] + _commands.cut_note(len(text) - head - tail, len(text)) + (text[-tail:] if tail else "")


def test_capping_as_it_arrives_equals_capping_all_at_once() -> None:
    rng = random.Random(7)
    alphabet = "ab\né€😀"
    for _ in range(300):
        limit = rng.randint(1, 40)
        out = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        err = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        sinks = []
        for text in (out, err):
            sink = _commands._Capped(limit)
            data = text.encode()
            cuts = sorted(rng.sample(range(len(data) + 1), min(len(data) + 1, 4)))
            for a, b in zip([0, *cuts], [*cuts, len(data)]):  # pieces that split characters in two
                sink.feed(data[a:b])
            sink.feed(b"", final=True)
            sinks.append(sink)
        assert _commands._render(sinks[0], sinks[1], limit) == _reference(out, err, limit), (out, err, limit)


def test_shell_tool_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="timeout_s must be a positive number of seconds, or None"):
        tr.shell_tools(Path.cwd(), timeout_s=0)
    with pytest.raises(ValueError, match="max_output must be a positive number"):
        tr.shell_tools(Path.cwd(), max_output=0)


def test_the_end_of_a_trial_stops_what_its_commands_left_running(sleeper: Sleeper) -> None:
    def invoke(ctx: tr.TrialContext) -> str:
        run_command = _run_command(ctx.workdir)
        return run_command.run_sync({"command": f"sleep 30 >/dev/null 2>&1 & echo $! > {sleeper.pidfile}"})

    case = tr.Case(name="leaves a server running", invoke=invoke, expect_outcome=[tr.expect.contains("exit code: 0")])
    report = tr.evaluate([case])
    assert report.passed_case_count == 1
    sleeper.assert_gone()
    pid = int(sleeper.pidfile.read_text())  # what the command itself said it left
    assert report.cases[0].trials[0].killed == [f"pid {pid}: sleep 30"]  # and the trial says it was killed


def test_a_trial_whose_commands_left_nothing_notes_no_kill() -> None:
    def invoke(ctx: tr.TrialContext) -> str:
        return _run_command(ctx.workdir).run_sync({"command": "echo hi"})

    case = tr.Case(name="leaves nothing", invoke=invoke, expect_outcome=[tr.expect.contains("hi")])
    assert tr.evaluate([case]).cases[0].trials[0].killed is None


# -- children that get away: a new session with an emptied environment, a double fork ignoring SIGTERM ----------
ESCAPING = ("ln -sf {sleep} ./{marker}; env -i setsid ./{marker} 301 </dev/null >/dev/null 2>&1 & "
            "( trap '' TERM; ./{marker} 302 </dev/null >/dev/null 2>&1 & ); echo $$ > started")


def _marked(marker: str) -> list[int]:
    """Live processes running ./MARKER (from /proc; not the shells whose command line names it)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv0 = Path("/proc", entry, "cmdline").read_bytes().split(b"\0")[0]
                if argv0 == f"./{marker}".encode() and not _gone(int(entry)):
                    found.append(int(entry))
            except OSError:
                pass
    return found


def _none_left(marker: str, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while _marked(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = _marked(marker)
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    return not alive


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="the truth is read from /proc (Linux)")
@pytest.mark.parametrize("ending", ["timeout", "finished"])
def test_a_child_that_left_the_session_and_cleared_its_environment_dies_with_its_command(workspace: Path,
                                                                                          ending: str) -> None:
    marker = f"trc{os.getpid()}x{time.monotonic_ns()}"
    command = ESCAPING.format(sleep=shutil.which("sleep"), marker=marker)
    run_command = _run_command(workspace, timeout_s=2)
    if ending == "timeout":
        with pytest.raises(tr.ToolError, match="timed out"):
            run_command.run_sync({"command": command + "; sleep 300"})
    else:
        assert run_command.run_sync({"command": command}) == "exit code: 0\n"
        deadline = time.monotonic() + 5  # (started in the background: they may still be on their way to exec)
        while len(_marked(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(_marked(marker)) == 2  # both outlive their command (a server for the next one) ...
        assert stop_commands(workspace) == 1  # ... until the trial ends
    assert (workspace / "started").exists()
    assert _none_left(marker)
