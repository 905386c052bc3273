"""`side_requests=True`: a preset keeps its agent's title and summary requests (off by default), so a test can
check they stay out of the turn count, without subclassing a preset or emptying environment variables.

The launch each preset makes is checked here (the variable Claude Code reads, opencode's `--title`); the real
agents sending their title requests with it are in test_real_agent_forms.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import trialrun as tr
from trialrun.suite._build import config_snapshot
from trialrun.suite._build_agent import process_agent
from trialrun.suite._tests_file import read_suite
from trialrun.suite.config import load_config

ENDPOINT = SimpleNamespace(url="http://127.0.0.1:1", openai_base_url="http://127.0.0.1:1/v1",
                           anthropic_base_url="http://127.0.0.1:1")


def _launch(agent: tr.agents.Preset, tmp_path: Path) -> tr.agents.Launch:
    home = tmp_path / "home"
    home.mkdir()
    return agent.prepare("do it", None, ENDPOINT, home)  # type: ignore[arg-type]


@pytest.mark.parametrize("keep", [False, True])
def test_claude_code_keeps_its_side_requests_only_when_asked(tmp_path: Path, agent_path: Any, keep: bool) -> None:
    agent = tr.agents.claude_code(path=agent_path("claude-code"), side_requests=keep)
    launch = _launch(agent, tmp_path)
    assert ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC" in launch.env) is not keep
    assert launch.env["DISABLE_TELEMETRY"] == "1"  # quiet either way


@pytest.mark.parametrize("keep", [False, True])
def test_opencode_keeps_its_title_request_only_when_asked(tmp_path: Path, agent_path: Any, keep: bool) -> None:
    agent = tr.agents.opencode(path=agent_path("opencode"), side_requests=keep)
    argv = _launch(agent, tmp_path).argv
    assert ("--title" in argv) is not keep
    assert argv[argv.index("--format") + 1] == "json"  # its event stream, which the preset reads


@pytest.mark.parametrize("label", ["pi", "codex"])
def test_an_agent_that_sends_no_side_requests_says_so(label: str, agent_path: Any) -> None:
    with pytest.raises(ValueError, match=f"{label} sends no title or summary requests"):
        tr.agents.preset(label, path=agent_path(label), side_requests=True)


def test_side_requests_reaches_the_snapshot_and_the_settings_digest(agent_path: Any) -> None:
    on = tr.agents.opencode(path=agent_path("opencode"), side_requests=True).snapshot()
    off = tr.agents.opencode(path=agent_path("opencode")).snapshot()
    assert (on["side_requests"], off["side_requests"]) == (True, False)
    assert on["agent_settings_sha256"] != off["agent_settings_sha256"]  # `trialrun compare` shows the change


def test_side_requests_in_trialrun_toml_agent_options(tmp_path: Path, agent_path: Any) -> None:
    (tmp_path / "tests.json").write_text(json.dumps({"tests": [{"id": "t", "prompt": "p", "expected_tools": [],
                                                               "max_turns": 2, "success_criteria": "x"}]}))
    (tmp_path / "trialrun.toml").write_text(
        f'agent = "claude-code"\nsuite = "tests.json"\n[agent_options]\nside_requests = true\n'
        f'path = {json.dumps(agent_path("claude-code"))}\n')
    config = load_config(path=tmp_path / "trialrun.toml")
    agent = process_agent(config)
    assert agent.side_requests is True
    snapshot = config_snapshot(config, read_suite(tmp_path / "tests.json"))
    assert snapshot["side_requests"] is True and snapshot["agent"] == "claude-code"


def test_side_requests_must_be_true_or_false(agent_path: Any) -> None:
    with pytest.raises(ValueError, match="side_requests is true or false"):
        tr.agents.claude_code(path=agent_path("claude-code"), side_requests="yes")  # type: ignore[arg-type]
