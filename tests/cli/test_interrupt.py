"""Ctrl-C as a new user meets it: a real SIGINT to a real `trialrun run` at several moments (while trialrun is
imported, while an agent's module is imported, mid-run with an agent in another process, with a Python agent, sync
and async). Each exits 130 with one line and no traceback; a run that no trial of finished is not made `latest` (its
journal stays, named as interrupted, and `recover` saves it); `compare` and the viewer's buttons pass over it.

The truth: the exit code and stderr of the process, the files left in the results folder, and what latest.json links
to."""

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

#: Agents that say they started (a file in the project folder), then wait for the signal.
AGENTS = '''
import asyncio, time
from pathlib import Path

def sync_agent(prompt, ctx):
    Path("started.txt").write_text("x")
    time.sleep(60)
    return "hi"

async def async_agent(prompt, ctx):
    Path("started.txt").write_text("x")
    await asyncio.sleep(60)
    return "hi"

def quick(prompt, ctx):
    return "hi " + prompt
'''
SLOW_IMPORT = '''
import time
from pathlib import Path
Path("started.txt").write_text("x")
time.sleep(60)
def run(prompt, ctx):
    return "hi"
'''
PROCESS_AGENT = '''#!/bin/sh
echo x > "$(dirname "$0")/started.txt"
sleep 60
echo hi
'''
#: What a traceback, asyncio's complaints and click's abort look like: none may be printed.
NOISE = ("Traceback", "never retrieved", "Aborted!", "CancelledError", "RuntimeError")


def _default_signals() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("GITHUB_STEP_SUMMARY", None)
    return env


@pytest.fixture
def folder(project: Path) -> Path:
    """The quickstart project with the agents above, and two complete runs already saved (the last is latest)."""
    (project / "interrupt_agents.py").write_text(AGENTS)
    (project / "slow_import_agent.py").write_text(SLOW_IMPORT)
    (project / "process_agent.sh").write_text(PROCESS_AGENT)
    (project / "process_agent.sh").chmod(0o755)
    hang = {"tool_call": {"name": "run_command", "arguments": {"command": f"echo x > {project}/started.txt; sleep 60"}}}
    (project / "hang.yaml").write_text(json.dumps({"read-file": [hang, {"reply": "done"}]}))  # the reference agent
    for _ in range(2):
        done = subprocess.run([sys.executable, "-m", "trialrun", "run", "all", "--agent", "interrupt_agents:quick"],
                              cwd=project, capture_output=True, text=True, env=_env(), timeout=300)
        assert done.returncode in (0, 1), done.stderr
        time.sleep(1.1)  # another second: another result file's name
    return project


def _results(project: Path) -> Path:
    return project / "state" / "eval"


def _latest(project: Path) -> str:
    return os.readlink(_results(project) / "latest.json")


def _interrupt(project: Path, argv: list[str], *, after: str | None = "started.txt") -> tuple[int, str, str]:
    """Start `argv` in the project, send SIGINT once `after` exists (or at once), and wait for the end."""
    proc = subprocess.Popen(argv, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
                            preexec_fn=_default_signals)
    deadline = time.monotonic() + 120
    while after is not None and not (project / after).exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(proc.communicate())
        time.sleep(0.05)
    time.sleep(0.2)  # (the signal lands while it waits, not as it writes)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def _run(*extra: str) -> list[str]:
    return [sys.executable, "-m", "trialrun", "run", "all", *extra]


@pytest.mark.parametrize("agent", ["command: ./process_agent.sh {prompt}", "interrupt_agents:sync_agent",
                                   "interrupt_agents:async_agent", None], ids=["process", "sync", "async", "reference"])
def test_ctrl_c_before_any_trial_finished_exits_130_and_latest_stays(folder: Path, agent: str | None) -> None:
    latest = _latest(folder)
    how = ["--agent", agent] if agent else ["--model", "scripted:hang.yaml", "--name", "read-file"]  # run_command
    code, out, err = _interrupt(folder, _run(*how, "-k", "2"))
    assert code == 130, (out, err)
    assert not any(noise in err for noise in NOISE), err
    journals = list(_results(folder).glob("results_*.jsonl"))
    assert len(journals) == 1, list(_results(folder).iterdir())
    assert f"interrupted: before any test finished: no result file was saved and latest.json was left as it was; " \
           f"the run's journal is kept as {journals[0]}" in err
    assert not journals[0].with_suffix(".json").exists()  # no result file of it
    assert _latest(folder) == latest  # and latest is the run before
    lines = [json.loads(line) for line in journals[0].read_text().splitlines()]
    assert lines[0]["event"] == "start" and lines[-1] == {"event": "end", "status": "interrupted"}
    assert not any(line["event"] == "trial" for line in lines)


def test_compare_and_report_pass_over_a_run_with_nothing_finished_and_recover_still_saves_it(folder: Path) -> None:
    before = sorted(p.name for p in _results(folder).glob("results_*.json"))
    code, _, err = _interrupt(folder, _run("--agent", "interrupt_agents:sync_agent"))
    assert code == 130, err
    compare = subprocess.run([sys.executable, "-m", "trialrun", "compare", "--json"], cwd=folder, capture_output=True,
                             text=True, env=_env(), timeout=120)
    assert compare.returncode == 0, compare.stderr
    data = json.loads(compare.stdout)
    assert [data["before_run_id"], data["after_run_id"]] == [f"eval_{n[8:-5]}" for n in before], data
    assert "interrupted before any test finished" in compare.stderr  # said, not silent
    report = subprocess.run([sys.executable, "-m", "trialrun", "report"], cwd=folder, capture_output=True, text=True,
                            env=_env(), timeout=120)
    assert f"eval_{before[-1][8:-5]}" in report.stdout, report.stdout
    journal = next(_results(folder).glob("results_*.jsonl"))
    later = subprocess.run(_run("--agent", "interrupt_agents:quick"), cwd=folder, capture_output=True, text=True,
                           env=_env(), timeout=300)
    assert f"1 run(s) were interrupted before any test finished: {journal.name}" in later.stderr
    latest = _latest(folder)
    recover = subprocess.run([sys.executable, "-m", "trialrun", "recover"], cwd=folder, capture_output=True, text=True,
                             env=_env(), timeout=120)
    assert recover.returncode == 0, recover.stderr
    saved = journal.with_suffix(".json")
    assert saved.exists() and json.loads(saved.read_text())["status"] == "interrupted"
    assert _latest(folder) == latest  # recovered, but nothing of it finished: not latest
    again = subprocess.run([sys.executable, "-m", "trialrun", "compare", "--json"], cwd=folder, capture_output=True,
                           text=True, env=_env(), timeout=120)
    assert again.returncode == 0, again.stderr  # saved now, between the two runs, it is still passed over
    pair = json.loads(again.stdout)
    assert [pair["before_run_id"], pair["after_run_id"]] == [f"eval_{before[-1][8:-5]}", f"eval_{latest[8:-5]}"], pair


def test_ctrl_c_while_an_agent_module_is_imported_is_an_interrupt_not_a_configuration_error(folder: Path) -> None:
    latest = _latest(folder)
    names = sorted(p.name for p in _results(folder).iterdir())
    code, out, err = _interrupt(folder, _run("--agent", "slow_import_agent:run"))
    assert code == 130, (out, err)
    assert not any(noise in err for noise in NOISE), err
    assert "interrupted before the run started: nothing was run or saved" in err
    assert "configuration" not in err and "error" not in err
    assert sorted(p.name for p in _results(folder).iterdir()) == names  # nothing new, no journal
    assert _latest(folder) == latest


def test_an_agent_module_that_raises_keyboardinterrupt_itself_is_still_a_configuration_error(folder: Path) -> None:
    (folder / "raising_agent.py").write_text("raise KeyboardInterrupt\n")
    done = subprocess.run(_run("--agent", "raising_agent:run"), cwd=folder, capture_output=True, text=True,
                          env=_env(), timeout=120)
    assert done.returncode == 2, done.stderr
    assert "it raised KeyboardInterrupt() while being imported" in done.stderr


#: The `trialrun` command's own entry (`_trialrun_cli`), with trialrun's import made slow: it says when it is there.
SLOW_TRIALRUN_IMPORT = '''
import sys, time
from pathlib import Path

class Slow:
    def find_spec(self, name, path=None, target=None):
        if name == "trialrun.cli":
            Path("started.txt").write_text("x")
            time.sleep(60)
        return None

sys.meta_path.insert(0, Slow())
sys.argv = ["trialrun", "--version"]
import _trialrun_cli
_trialrun_cli.main()
'''


def test_ctrl_c_while_trialrun_itself_is_imported_exits_130_in_one_line(folder: Path) -> None:
    code, out, err = _interrupt(folder, [sys.executable, "-c", SLOW_TRIALRUN_IMPORT])
    assert (code, err) == (130, "interrupted\n"), (code, out, err)


def test_the_viewer_diffs_and_compares_the_last_two_runs_with_something_finished(folder: Path) -> None:
    from trialrun.render.history import runs_page
    from trialrun.report._history import load_history

    finished = sorted(p.name.removesuffix(".json") for p in _results(folder).glob("results_*.json"))
    code, _, err = _interrupt(folder, _run("--agent", "interrupt_agents:sync_agent"))
    assert code == 130, err
    history = load_history(_results(folder))
    assert len(history.runs) == 3  # the interrupted run is listed (read from its journal) ...
    page = runs_page(history, state="")
    assert f'name="a" value="{finished[0]}"' in page and f'name="b" value="{finished[1]}"' in page  # ... not picked
    assert f'<option value="{finished[1]}" selected' in page and f'<option value="{finished[0]}" selected' in page
