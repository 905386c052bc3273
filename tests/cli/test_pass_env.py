"""`pass_env` in trialrun.toml: the environment variables the reference agent's `run_command` keeps besides its
allow-list (PATH, HOME, LANG, ...), with and without the bubblewrap sandbox, through the real `trialrun run`.

Without the sandbox the command writes what it saw to a file outside its workdir (run_command is not confined
there), which the test reads: the truth from the command itself. In the sandbox only the workdir is writable (the
file outside stays absent, which the test checks), so there the command's output is read from the tool result the
result file recorded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

VALUE = "gopath-like-value-4821"


def _project(root: Path, seen: Path, toml: str) -> Path:
    (root / "state" / "eval").mkdir(parents=True)
    (root / "state" / "eval" / "tests.json").write_text(json.dumps([{
        "id": "env", "prompt": "What is in the environment?", "expected_tools": ["run_command"], "max_turns": 3,
        "success_criteria": "Reports the variable"}]))
    command = f'echo "seen:$TRIALRUN_PASS_ME" > {seen} 2>/dev/null; echo "seen:$TRIALRUN_PASS_ME"'
    (root / "model.json").write_text(json.dumps({"env": [
        {"tool_call": {"name": "run_command", "arguments": {"command": command}}}, {"reply": "done"}]}))
    (root / "trialrun.toml").write_text(f'model = "scripted:model.json"\ntools = ["shell"]\n{toml}\n')
    return root


def _run(project: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    env["TRIALRUN_PASS_ME"] = VALUE
    done = subprocess.run([sys.executable, "-m", "trialrun", "run", "all"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    latest = json.loads((project / "state" / "eval" / "latest.json").read_text())
    return latest


def _tool_output(latest: dict) -> str:
    turns = latest["cases"][0]["trials"][0]["trajectory"]["turns"]
    return next(r["content"] for turn in turns for r in turn["tool_results"])


@pytest.mark.parametrize("passed", [True, False])
def test_pass_env_reaches_run_command(tmp_path: Path, passed: bool) -> None:
    seen = tmp_path / "seen.txt"
    project = _project(tmp_path / "project", seen, 'pass_env = ["TRIALRUN_PASS_ME"]' if passed else "")
    latest = _run(project)
    assert seen.read_text().strip() == (f"seen:{VALUE}" if passed else "seen:")
    assert latest["config_snapshot"].get("pass_env") == (["TRIALRUN_PASS_ME"] if passed else None)
    assert VALUE not in json.dumps(latest["config_snapshot"])  # the names only, never a value


@pytest.mark.skipif(shutil.which("bwrap") is None and not os.environ.get("CI"), reason="needs bubblewrap")
def test_pass_env_reaches_run_command_in_the_sandbox(tmp_path: Path) -> None:
    seen = tmp_path / "seen.txt"  # outside the workdir: the sandbox cannot write it
    project = _project(tmp_path / "project", seen, 'sandbox = "bwrap"\npass_env = ["TRIALRUN_PASS_ME"]')
    latest = _run(project)
    assert not seen.exists()
    assert f"seen:{VALUE}" in _tool_output(latest)
    project_without = _project(tmp_path / "without", tmp_path / "seen2.txt", 'sandbox = "bwrap"')
    assert f"seen:{VALUE}" not in _tool_output(_run(project_without))


def test_pass_env_with_a_custom_agent_is_said_to_be_ignored(tmp_path: Path) -> None:
    project = _project(tmp_path / "project", tmp_path / "seen.txt", 'pass_env = ["TRIALRUN_PASS_ME"]\n'
                       'agent = "custom_agent:run"')
    (project / "custom_agent.py").write_text("def run(prompt, ctx):\n    return 'done'\n")
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    env["PYTHONPATH"] = os.pathsep.join([str(project), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-m", "trialrun", "run", "all"], cwd=project, capture_output=True, text=True,
                          timeout=120, check=False, env=env)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert ("agent 'custom_agent:run' is a custom agent: it does not receive pass_env"
            in done.stdout + done.stderr), done.stdout + done.stderr
