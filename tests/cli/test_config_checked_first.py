"""The agent table of trialrun.toml is checked before anything runs (issue 22), through the real `trialrun run` in a
process of its own: a ready-made agent's name with a typo says which one was meant; a `command:` program that does
not exist, is a folder or cannot be executed, a NUL byte in the command or in an environment value, an environment
name with `=`, a value that is not text, a `timeout_s` that is not a positive number (`true` was a 1 s limit), an
`env` that is not a table: each stops with exit 2 and a message naming the file and the key, and nothing runs.

The truth is taken outside trialrun: the agent, were it started, writes a marker file; no marker, no result file
and no journal may be left. Before issue 22 each command case ran the suite and failed every trial (exit 1, a
result file saved), `timeout_s = true` ran with a 1 s limit, and the typos said "must be 'module:attribute'".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

MARKER_AGENT = "import pathlib, sys\npathlib.Path(sys.argv[1]).write_text('ran')\nprint('hello from the agent')\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "state" / "eval").mkdir(parents=True)
    (root / "state" / "eval" / "tests.json").write_text(json.dumps([{
        "id": "hello", "prompt": "say hello", "expected_tools": [], "max_turns": 2, "success_criteria": "says hello"}]))
    (root / "model.yaml").write_text("hello:\n  - reply: hello from the model\n")
    (root / "agent.py").write_text(MARKER_AGENT)
    (root / "afolder").mkdir()
    (root / "not_executable.sh").write_text("#!/bin/sh\necho hi\n")
    return root


def _run(project: Path, toml: str, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    marker = project / "marker.txt"
    (project / "trialrun.toml").write_text('model = "scripted:model.yaml"\n'
                                           + toml.replace("{python}", json.dumps(sys.executable)[1:-1])
                                           .replace("{marker}", json.dumps(str(marker))[1:-1]) + "\n")
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "trialrun", "run", "all", *args], cwd=project, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    return done, time.perf_counter() - started


def _refused(project: Path, toml: str, *needles: str, args: tuple[str, ...] = (), where: str = "trialrun.toml: ") -> str:
    done, elapsed = _run(project, toml, *args)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "Traceback" not in output and where in output, output
    for needle in needles:
        assert needle in output, output
    assert not (project / "marker.txt").exists(), "the agent ran"
    assert not list((project / "state" / "eval").glob("results_*")), "a run was started or saved"
    assert elapsed < 60, elapsed
    return output


COMMAND = 'agent = "command: {python} agent.py {marker}"'


@pytest.mark.parametrize(("toml", "needles"), [
    ('agent = "claude"', ("agent: 'claude' is not a ready-made agent", "did you mean 'claude-code'?")),
    ('agent = "claude_code"', ("did you mean 'claude-code'?",)),
    ('agent = "Pi"', ("did you mean 'pi'?",)),
    ('agent = "open-code"', ("did you mean 'opencode'?",)),
    ('agent = "command: /nonexistent/agent-program {prompt}"', ("the program '/nonexistent/agent-program' does not exist",)),
    ('agent = "command: ./afolder {prompt}"', ("the program './afolder' is a folder",)),
    ('agent = "command: no-such-agent-program-22 {prompt}"', ("'no-such-agent-program-22' is not on PATH",)),
    ('agent = "command: ./not_executable.sh {prompt}"', ("not_executable.sh' is not executable",)),
    ('agent = "command: {python} agent.py\\u0000x {marker}"', ("agent:", "holds a NUL character")),
    (COMMAND + '\n[agent_options]\nenv = {X = "a\\u0000b"}', ("agent_options: env.X holds a NUL character",)),
    (COMMAND + '\n[agent_options]\nenv = {"X=Y" = "1"}', ("agent_options: env: the name 'X=Y' holds =",)),
    (COMMAND + '\n[agent_options]\nenv = {X = 1}', ("agent_options: env.X must be text (a quoted string), got 1",)),
    (COMMAND + '\n[agent_options]\nenv = "X=1"', ("agent_options: env must be a table of text values",)),
    (COMMAND + '\n[agent_options]\ntimeout_s = true',
     ("agent_options: timeout_s must be a positive number of seconds, got true (a boolean)",)),
    (COMMAND + '\n[agent_options]\ntimeout_s = 0', ("timeout_s must be a positive number of seconds, got 0",)),
    (COMMAND + '\n[agent_options]\ntimeout_s = "30"', ("timeout_s must be a positive number of seconds, got '30' (text)",)),
    (COMMAND + '\n[agent_options]\nmax_body = true', ("agent_options: max_body must be a positive number of bytes, got true",)),
    (COMMAND + '\n[agent_options]\nmax_body = 0', ("max_body must be a positive number of bytes, got 0",)),
    (COMMAND + '\n[agent_options]\nallow = ["ls"]', ("unknown key(s) allow for agent 'command:",)),
    ('agent = "pi"\n[agent_options]\nallow = "ls"', ("agent_options: allow must be a list of text",)),
    ('agent = "claude-code"\n[agent_options]\nargs = ["--verbose", 2]\npermision_mode = "plan"',
     ("unknown key(s) permision_mode", "did you mean 'permission_mode' for 'permision_mode'?",
      "args[2] must be text")),
    ('agent = "codex"\n[agent_options]\npermission_mode = 3', ("permission_mode must be text",)),
    ('pass_env = ["A=B"]', ("pass_env: the name 'A=B' holds =",)),
    ('pass_env = "GOPATH"', ("pass_env: expected a list",)),
], ids=lambda value: value if isinstance(value, str) else "")
def test_a_wrong_agent_table_stops_before_anything_runs(project: Path, toml: str, needles: tuple[str, ...]) -> None:
    _refused(project, toml, *needles)


def test_a_typo_on_the_command_line_says_which_agent_was_meant(project: Path) -> None:
    _refused(project, "", "did you mean 'claude-code'?", args=("--agent", "claude"), where="command line: agent: ")


def test_a_right_command_agent_still_runs(project: Path) -> None:
    """The checks refuse nothing that works: the same agent, well configured, runs and leaves its marker."""
    done, _ = _run(project, COMMAND + '\n[agent_options]\ntimeout_s = 60\nenv = {GREETING = "hi"}')
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert (project / "marker.txt").read_text() == "ran"
    latest = json.loads((project / "state" / "eval" / "latest.json").read_text())
    assert latest["cases"][0]["trials"][0]["output"].strip() == "hello from the agent"
