"""Containment with small programs as the agent (fast; the real agents are in test_containment_real.py): every
process an agent starts is gone when its trial ends (timeout, normal end, case timeout, trialrun itself killed),
however it got away, and the trial says what was killed. The truth comes from /proc: each process carries a
unique marker in its argv (a symlink to `sleep` named after the test)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from _procs import holding

import trialrun as tr
from trialrun.render.html import report_html, report_payload
from trialrun.render.junit import junit_xml
from trialrun.render.markdown import report_markdown
from trialrun.render.text import trial_text

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="the truth is read from /proc (Linux)")

#: Started by the agent itself: a new session, a double fork ignoring SIGTERM, nohup, and a new session with an
#: emptied environment; then the agent blocks (or ends, when told "end").
AGENT = textwrap.dedent("""\
    M="$1"
    ln -sf {sleep} "./$M"
    setsid "./$M" 1001 </dev/null >/dev/null 2>&1 &
    ( trap '' TERM; "./$M" 1002 </dev/null >/dev/null 2>&1 & )
    nohup "./$M" 1003 </dev/null >/dev/null 2>&1 &
    env -i setsid "./$M" 1005 </dev/null >/dev/null 2>&1 &
    echo started
    [ "$2" = end ] && sleep 1 && exit 0  # (after the background jobs started their programs)
    exec "./$M" 1004
""")
ESCAPED = ("1001", "1002", "1003", "1005")


def marked(marker: str) -> list[str]:
    """The live processes started as `./MARKER ...` (not the test's own, whose argv names the marker too)."""
    return holding(f"./{marker}")


def still_alive(marker: str, within: float = 3.0) -> list[str]:
    deadline = time.monotonic() + within
    while (alive := marked(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


@pytest.fixture
def marker() -> object:
    made = f"trc{uuid.uuid4().hex[:12]}"
    yield made
    for line in marked(made):  # a failing test leaves nothing behind either
        os.kill(int(line.split(":")[0]), signal.SIGKILL)


def _agent(tmp_path: Path, marker: str, *, end: bool = False, **options: object) -> tr.ProcessAgent:
    script = tmp_path / "agent.sh"
    script.write_text(AGENT.format(sleep=shutil.which("sleep")))
    return tr.ProcessAgent(["sh", str(script), marker, "end" if end else "block"], **options)  # type: ignore[arg-type]


def _trial(agent: tr.ProcessAgent, **case: object) -> tr.TrialResult:
    invoke = lambda ctx: agent("p", ctx, model=tr.ScriptedModel([tr.reply("x")]))  # noqa: E731
    made = tr.Case(name="c", invoke=invoke, expect_outcome=[tr.expect.contains("started")], **case)  # type: ignore[arg-type]
    return tr.evaluate([made]).cases[0].trials[0]


def _listed(killed: list[str] | None, marker: str, numbers: tuple[str, ...]) -> list[str]:
    """The numbers of `numbers` the note does not list."""
    return [n for n in numbers if not any(k.endswith(f"{marker} {n}") for k in killed or [])]


@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_a_timeout_kills_what_left_the_session_forked_twice_or_ignores_sigterm(tmp_path: Path, marker: str,
                                                                               sandbox: str) -> None:
    trial = _trial(_agent(tmp_path, marker, timeout_s=3, sandbox=sandbox))
    assert still_alive(marker) == []
    assert trial.error is not None and trial.error.type == "AgentError"
    assert "timed out after 3s; it and every process it started were killed (" in trial.error.message
    assert _listed(trial.killed, marker, (*ESCAPED, "1004")) == []  # 1004: the agent itself (it exec'd sleep)


@pytest.mark.parametrize("sandbox", ["none", "bwrap", "bwrap-relay"])
def test_what_a_finished_agent_left_running_is_killed_and_listed(tmp_path: Path, marker: str, sandbox: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """In bwrap the sandbox's PID namespace ends what was left, and the shell inside names it: on the usual way in
    and on the fallback's (a forwarder inside that execs the agent)."""
    if sandbox == "bwrap-relay":
        from trialrun._contain import handoff as _handoff

        monkeypatch.setattr(_handoff, "helper_problem", "forced by the test")
        monkeypatch.setattr(_handoff, "used", type(_handoff.used)())
    started = time.monotonic()
    trial = _trial(_agent(tmp_path, marker, end=True, sandbox=sandbox.partition("-")[0]))
    if sandbox == "bwrap-relay":
        assert _handoff.used == {"relay": 1}, (_handoff.used, _handoff.last_fallback)
    assert still_alive(marker) == []
    assert trial.passed, (trial.error, trial.verdicts)
    assert _listed(trial.killed, marker, ESCAPED) == []
    assert len(trial.killed or []) == len(ESCAPED)  # the agent itself ended on its own: not in the note
    assert time.monotonic() - started < 15


#: An agent whose children die with it (PR_SET_PDEATHSIG, as bwrap's --die-with-parent and Codex's own sandbox do):
#: each `./MARKER N` is a python that asks the kernel for SIGKILL when its parent dies, under a parent that is itself
#: one of those; killed in pid order, the children would be gone before their turn to be named.
DIES_WITH_PARENT = textwrap.dedent("""\
    import ctypes, os, sys, time
    marker, depth = sys.argv[1], int(sys.argv[2])
    python = sys.argv[3] if len(sys.argv) > 3 else sys.executable  # (not found from an argv[0] of ./MARKER)
    if depth < 0:  # the agent names itself ./MARKER too
        os.execv(python, [f"./{marker}", __file__, marker, "0", python])
    if depth:
        ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    if depth < 3:
        if os.fork() == 0:
            os.execv(python, [f"./{marker}", __file__, marker, str(depth + 1), python])
    if depth == 0:
        print("started", flush=True)
    time.sleep(600)
""")


def test_what_dies_with_its_parent_is_named_too(tmp_path: Path, marker: str) -> None:
    script = tmp_path / "tree.py"
    script.write_text(DIES_WITH_PARENT)
    agent = tr.ProcessAgent([sys.executable, str(script), marker, "-1", sys.executable, "{prompt}"], timeout_s=3)
    trial = _trial(agent)
    assert still_alive(marker) == []
    named = [k for k in trial.killed or [] if f"./{marker}" in k]
    assert len(named) == 4, trial.killed  # the agent and its three generations, each by its argv


def test_a_case_timeout_kills_everything_and_the_trial_lists_it(tmp_path: Path, marker: str) -> None:
    trial = _trial(_agent(tmp_path, marker, timeout_s=None), timeout_s=2)
    assert still_alive(marker) == []
    assert trial.error is not None and trial.error.type == "TimeoutError"
    assert _listed(trial.killed, marker, (*ESCAPED, "1004")) == []


def test_an_agent_that_leaves_nothing_has_an_empty_note(tmp_path: Path) -> None:
    trial = _trial(tr.ProcessAgent([sys.executable, "-c", "print('started')"]))
    assert trial.passed and trial.killed == []
    plain = tr.evaluate([tr.Case(name="c", invoke=lambda ctx: "started", expect_outcome=[tr.expect.contains("s")])])
    assert plain.cases[0].trials[0].killed is None  # no agent process ran


def test_trialrun_killed_by_sigkill_leaves_nothing_either(tmp_path: Path, marker: str) -> None:
    """The keeper takes the end of its socket (trialrun gone) as the order to kill: nothing waits for atexit."""
    agent = _agent(tmp_path, marker)
    code = textwrap.dedent(f"""
        import trialrun as tr
        agent = tr.ProcessAgent({agent.argv!r}, timeout_s=None)
        case = tr.Case(name="c", invoke=lambda ctx: agent("p", ctx, model=tr.ScriptedModel([tr.reply("x")])),
                       expect_outcome=[tr.expect.contains("started")])
        tr.evaluate([case])
    """)
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 60
        while len(marked(marker)) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(marked(marker)) == 5, marked(marker)
    finally:
        proc.kill()
        proc.wait()
    assert still_alive(marker, within=5) == []


def test_the_note_is_shown_where_trial_errors_are_shown(tmp_path: Path, marker: str) -> None:
    trial = _trial(_agent(tmp_path, marker, timeout_s=2))
    text = trial_text(trial, width=200)
    assert "when the agent ended: 5 processes killed: pid " in text and f"{marker} 1001" in text
    report = tr.evaluate([tr.Case(name="c", invoke=lambda ctx: _agent(tmp_path, marker, timeout_s=2)(
        "p", ctx, model=tr.ScriptedModel([tr.reply("x")])), expect_outcome=[tr.expect.contains("started")])])
    assert "When the agent ended: 5 processes killed" in report_markdown(report)
    assert "trial 1: when the agent ended: 5 processes killed" in junit_xml(report)
    payload = report_payload(report)
    [trial_data] = payload["runs"][0]["cases"][0]["trials"]
    assert sum(f"{marker} 100" in payload["S"][i] for i in trial_data["kl"]) == 5  # the HTML report's list
    assert "Processes killed when the agent ended" in report_html(report)
    assert still_alive(marker) == []


def test_result_files_keep_the_note_and_older_ones_still_load(tmp_path: Path) -> None:
    report = tr.evaluate([tr.Case(name="c", invoke=lambda ctx: tr.Run("ok", killed=["pid 7: sleep 9"]),
                                  expect_outcome=[tr.expect.contains("ok")])])
    data = json.loads(report.model_dump_json())
    assert data["cases"][0]["trials"][0]["killed"] == ["pid 7: sleep 9"]
    assert tr.RunReport.model_validate(data).cases[0].trials[0].killed == ["pid 7: sleep 9"]
    del data["cases"][0]["trials"][0]["killed"]  # a result file from before the note
    assert tr.RunReport.model_validate(data).cases[0].trials[0].killed is None


def test_the_keeper_reports_its_way_and_what_it_killed_line_by_line() -> None:
    from trialrun._contain import keeper as _containment

    reports = _containment.Reports()
    for chunk in (b"way 42 41 subreap", b"er\nexit 0 1\nk 43 sleep", b" 9\ndone 0\n"):
        reports.feed(chunk)
    assert (reports.leader, reports.keeper, reports.way, reports.status, reports.held, reports.done) == \
        (42, 41, "subreaper", 0, True, True)
    assert reports.note() == ["pid 43: sleep 9"]


# a fork of a process with threads, on purpose (3.12+ warns of it)
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded, use of fork:DeprecationWarning")
def test_a_forked_process_gets_a_keeper_server_of_its_own(tmp_path: Path, marker: str) -> None:
    """multiprocessing's fork start method, or any os.fork: the child never shares its parent's server."""
    import multiprocessing

    from trialrun._contain.keeper import _Server

    assert _trial(tr.ProcessAgent([sys.executable, "-c", "print('started')"])).passed
    parent = _Server.current
    assert parent is not None
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        passed, server = pool.apply(_trial_in_child, (str(tmp_path), marker))
    assert passed and server not in (None, parent.process.pid)
    assert still_alive(marker) == []


def _trial_in_child(folder: str, marker: str) -> tuple[bool, int | None]:
    from trialrun._contain.keeper import _Server

    trial = _trial(_agent(Path(folder), marker, end=True))
    return trial.passed and not _listed(trial.killed, marker, ESCAPED), \
        _Server.current.process.pid if _Server.current else None


@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_the_agent_inherits_stdin_from_dev_null_its_two_pipes_and_nothing_of_its_keeper(sandbox: str) -> None:
    code = textwrap.dedent("""
        import os
        for fd in sorted(os.listdir("/proc/self/fd"), key=int):
            try:
                print(f"{fd}={os.readlink('/proc/self/fd/' + fd)}")
            except FileNotFoundError:  # the listing's own descriptor, closed by now
                pass
        print("started")
    """)
    trial = _trial(tr.ProcessAgent([sys.executable, "-I", "-S", "-c", code], sandbox=sandbox))
    assert trial.passed, trial.error
    fds = dict(line.split("=", 1) for line in trial.output.splitlines() if "=" in line)
    assert fds.pop("0") == "/dev/null"
    assert fds.pop("1").startswith("pipe:") and fds.pop("2").startswith("pipe:")
    assert fds == {}  # not the keeper's socket, nor a pipe's other end
