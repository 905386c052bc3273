"""Runs are never lost: SIGTERM, SIGHUP and Ctrl-C stop a run and save every finished trial (partly run tests
too), SIGKILL leaves a journal that `report`, `compare` and `recover` read as an interrupted run. Real signals to a
real `trialrun run` process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

QUICK_TESTS = 10
TRIALS = 3
#: Finished when the hanging trial starts: every trial of the quick tests, and the hanging test's first trial.
FINISHED = QUICK_TESTS * TRIALS + 1

AGENT = '''
import time
from pathlib import Path

import httpx

def run(prompt, ctx):
    """Answers at once (after one turn of the configured model, so that its turn budget is checked against a turn
    seen), except the "hang" test from its second trial on: that one says where it is and waits."""
    with httpx.Client(transport=ctx.model) as client:
        client.post("https://api.openai.com/v1/chat/completions",
                    json={"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": prompt}]})
    if prompt == "hang" and ctx.trial >= 2:
        (ctx.workdir / "busy.txt").write_text("x")
        Path("started.txt").write_text(str(ctx.workdir))
        time.sleep(60)
    return "hi " + prompt
'''


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("GITHUB_STEP_SUMMARY", None)
    return env


def _default_signals() -> None:
    """In the child: the signals' default actions, even when this test run was started with them ignored (nohup)."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


@pytest.fixture
def slow_project(project: Path, write_suite) -> Path:
    (project / "survive_agent.py").write_text(AGENT)
    tests = [{"id": f"q{i}", "prompt": f"q{i}", "expected_tools": [], "max_turns": 1, "success_criteria": "Says hi",
              "expect": {"contains": "hi"}} for i in range(QUICK_TESTS)]
    tests.append({"id": "hang", "prompt": "hang", "expected_tools": [], "max_turns": 1, "success_criteria": "Says hi",
                  "expect": {"contains": "hi"}})
    write_suite(project / "state" / "eval" / "tests.json", tests)
    (project / "s.yaml").write_text("".join(f"{t['id']}:\n  - reply: hi\n" for t in tests))  # its one turn
    toml = project / "trialrun.toml"
    toml.write_text(toml.read_text().replace("scripted:model_v1.yaml", "scripted:s.yaml"))
    return project


def _start_run(project: Path, *extra: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "trialrun", "run", "all", "--agent", "survive_agent:run", "-k", str(TRIALS), "-j", "1", *extra],
        cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), preexec_fn=_default_signals,
    )
    deadline = time.time() + 60
    while not (project / "started.txt").exists():
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            raise AssertionError(proc.communicate())
        time.sleep(0.05)
    return proc


def _results(project: Path) -> Path:
    return project / "state" / "eval"


def _trials(data: dict) -> int:
    return sum(len(case["trials"]) for case in data["cases"])


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)],
                         ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_stop_signal_saves_every_finished_trial_as_interrupted(slow_project: Path, signum: int, code: int) -> None:
    proc = _start_run(slow_project)
    workdir = Path((slow_project / "started.txt").read_text())
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, (out, err)
    assert "Traceback" not in err
    assert f"interrupted: saved the {QUICK_TESTS} finished test(s) and 1 partly run test(s) to " in err
    data = json.loads((_results(slow_project) / "latest.json").read_text())
    assert data["status"] == "interrupted"
    assert _trials(data) == FINISHED  # every finished trial, the partly run test's included
    hang = next(case for case in data["cases"] if case["name"] == "hang")
    assert [t["trial"] for t in hang["trials"]] == [1] and hang["unfinished_trials"] == TRIALS - 1
    assert hang["pass_at_1"] == 1.0  # scored on the trial it has
    assert "partly run hang: 1 of 3 trials finished (interrupted; scored on those)" in out
    assert not workdir.exists()  # the stopped trial's teardown ran: its workspace is gone
    assert not list(_results(slow_project).glob("*.jsonl"))  # saved: the journal is gone


def test_sigkill_leaves_a_journal_that_report_compare_and_recover_read_as_an_interrupted_run(
        slow_project: Path, cli) -> None:
    assert cli("run", "all", "--agent", "survive_agent:run", "--name", "q0").exit_code == 0  # an earlier, complete run
    proc = _start_run(slow_project)
    journal = next(_results(slow_project).glob("*.jsonl"))
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    lines = journal.read_text().splitlines()
    assert json.loads(lines[0])["event"] == "start" and len(lines) == 1 + FINISHED  # every finished trial, one a line

    shown = cli("report", "--json")
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.stdout)
    assert data["status"] == "interrupted" and _trials(data) == FINISHED
    assert f"note: {journal} is the journal of a run that did not finish" in shown.stderr

    compared = cli("compare", "--json")
    assert json.loads(compared.stdout)["status_after"] == "interrupted"
    by_path = cli("report", str(journal), "--json")
    assert json.loads(by_path.stdout)["status"] == "interrupted" and f"note: {journal} is the journal" in by_path.stderr

    later = cli("run", "all", "--agent", "survive_agent:run", "--name", "q1")  # a later run: it never takes that name
    assert later.exit_code == 0
    assert "1 run(s) did not finish (killed?)" in later.stderr and journal.name in later.stderr
    assert journal.exists()
    before_after = json.loads(cli("compare", "--json").stdout)
    assert before_after["status_before"] == "interrupted"  # never mistaken for a complete run

    recovered = cli("recover")
    assert recovered.exit_code == 0
    assert f"{FINISHED} finished trial(s) of {QUICK_TESTS + 1} test(s)" in recovered.stdout
    saved = journal.with_suffix(".json")
    assert not journal.exists() and json.loads(saved.read_text())["status"] == "interrupted"
    assert json.loads(saved.read_text())["run_id"] == "eval_" + saved.stem.removeprefix("results_")
    assert cli("recover").stdout.startswith("nothing to recover")


def test_a_journal_cut_short_in_its_last_line_loses_only_that_line(slow_project: Path, cli) -> None:
    proc = _start_run(slow_project)
    journal = next(_results(slow_project).glob("*.jsonl"))
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    text = journal.read_bytes()
    journal.write_bytes(text[:-40])  # the kill landed while the last trial was being written
    data = json.loads(cli("report", "--json").stdout)
    assert data["status"] == "interrupted" and _trials(data) == FINISHED - 1
    journal.write_bytes(b'{"event": "start"\n' + text)
    bad = cli("report")
    assert bad.exit_code == 2 and f"{journal.name}: line 1: not valid JSON" in bad.output


def test_a_live_run_is_not_read_as_a_dead_one(slow_project: Path, cli) -> None:
    proc = _start_run(slow_project)
    try:
        assert cli("recover").stdout.startswith("nothing to recover")  # the running run's journal is locked
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert proc.returncode == 143
