"""trialrun.toml for process agents: `agent = "command: ..."`, presets by name, [agent_options], clear errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from trialrun.cli import main

AGENT = """\
import json, os, sys, urllib.request
body = {"model": os.environ["TRIALRUN_MODEL"], "messages": [{"role": "user", "content": sys.argv[1]}]}
request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", json.dumps(body).encode(),
                                 {"content-type": "application/json", "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
print(json.load(urllib.request.urlopen(request))["choices"][0]["message"]["content"])
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "state" / "eval").mkdir(parents=True)
    (tmp_path / "state" / "eval" / "tests.json").write_text(json.dumps({"tests": [
        {"id": "hello", "prompt": "say hello", "expected_tools": [], "max_turns": 2, "success_criteria": "says hello",
         "expect": [{"contains": "hello from the model"}]}]}))
    (tmp_path / "model.yaml").write_text("hello:\n  - reply: hello from the model\n")
    (tmp_path / "agent.py").write_text(AGENT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return tmp_path


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, ["run", "all", *args], catch_exceptions=False)


def test_a_command_agent_in_trialrun_toml(project: Path) -> None:
    (project / "trialrun.toml").write_text(f'agent = "command: {sys.executable} agent.py {{prompt}}"\n'
                                           'model_name = "my-model"\n[agent_options]\ntimeout_s = 60\n')
    result = _run()
    assert result.exit_code == 0, result.output
    saved = json.loads((project / "state" / "eval" / "latest.json").read_text())
    snapshot = saved["config_snapshot"]
    assert snapshot["agent"] == "command" and snapshot["agent_command"][-2:] == [str(project / "agent.py"), "{prompt}"]
    assert (snapshot["model_name"], snapshot["sandbox"]) == ("my-model", "none")
    assert saved["cases"][0]["trials"][0]["output"] == "hello from the model"


def test_settings_a_process_agent_does_not_receive_are_a_warning(project: Path) -> None:
    (project / "trialrun.toml").write_text(f'agent = "command: {sys.executable} agent.py {{prompt}}"\n'
                                           'system = "be brief"\nskills = ["eval"]\n[policy]\ndeny_commands = ["rm"]\n')
    result = _run()
    assert result.exit_code == 0
    assert "is a command agent: it does not receive policy, system, skills" in result.output


@pytest.mark.parametrize(("toml", "message"), [
    ('agent = "pi"\n[agent_options]\npath = "/nonexistent/pi"\n', "agent 'pi': pi: '/nonexistent/pi' is not an executable"),
    ('agent = "claude-code"\n[agent_options]\npermision_mode = "plan"\n', "agent_options: unknown key(s) permision_mode"),
    ('agent = "command: x {prompt}"\n[agent_options]\nallow = ["ls"]\n', "unknown key(s) allow for agent 'command: x {prompt}'"),
    ('agent = "command: x"\n[agent_options]\noutput = "stderr"\n', "output must be 'stdout', 'file:PATH' or a function"),
])
def test_configuration_mistakes_are_errors_naming_the_file(project: Path, toml: str, message: str) -> None:
    (project / "trialrun.toml").write_text(toml)
    result = _run()
    assert result.exit_code == 2
    assert "trialrun.toml" in result.output and message in result.output, result.output


def test_a_preset_missing_from_path_names_its_npm_package(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(project))
    monkeypatch.setenv("TRIALRUN_AGENTS_DIR", str(project / "no-agents"))  # an empty agent cache too
    (project / "trialrun.toml").write_text('agent = "opencode"\n')
    result = _run()
    assert result.exit_code == 2
    assert "npm install -g opencode-ai" in result.output and "nothing was run" in result.output
    assert "`trialrun agents install opencode`" in result.output and str(project / "no-agents") in result.output


FORKS_AND_WAITS = """\
import os, subprocess, sys, time
child = subprocess.Popen(["sleep", "300"], preexec_fn=lambda: os.setpgid(0, 0))  # a process group of its own
open(os.path.join(os.environ["MARKS"], "pids"), "w").write(f"{os.getpid()} {child.pid}")
time.sleep(300)
"""


def test_ctrl_c_in_trialrun_run_kills_every_process_the_agent_started(project: Path) -> None:
    import os
    import signal
    import subprocess
    import time

    marks = project / "marks"
    marks.mkdir()
    (project / "waits.py").write_text(FORKS_AND_WAITS)
    (project / "trialrun.toml").write_text(f'agent = "command: {sys.executable} waits.py"\n'
                                           f'[agent_options]\nenv = {{MARKS = {json.dumps(str(marks))}}}\n')
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    proc = subprocess.Popen([sys.executable, "-m", "trialrun", "run", "all"], cwd=project, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 30
    while not (marks / "pids").exists():
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.05)
    time.sleep(0.2)
    pids = [int(p) for p in (marks / "pids").read_text().split()]
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, (out, err)
    time.sleep(0.2)
    alive = [pid for pid in pids if Path(f"/proc/{pid}").exists()
             and Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"]
    assert not alive, f"still running after Ctrl-C: {alive}"
