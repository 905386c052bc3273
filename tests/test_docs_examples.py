"""The docs' tutorials (examples/tutorials, written into docs/tutorials/*.md and kept equal to them) run as shown: each
framework's agent passes its case with a real framework driven through a scripted model, and the failing case the
tutorial shows fails on the grader the tutorial says, for the reason it says."""

from __future__ import annotations

import json
import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _agents import agents_bin_dir, require_agent

import trialrun as tr

TUTORIALS = Path(__file__).resolve().parents[1] / "examples" / "tutorials"


def _load(name: str) -> dict[str, Any]:
    return runpy.run_path(str(TUTORIALS / name), run_name=f"tutorial_{Path(name).stem}")


def _failed(result: tr.CaseResult) -> list[str]:
    return [v.reason for trial in result.trials for v in trial.verdicts if not v.passed]


# file -> (the passing case, the failing case, the failing grader's reason, the tool calls the framework ran)
FRAMEWORKS = {
    "plain_sdk.py": ("case", "lazy", ["read_notes was never called (tools called: none)"], None),
    "pydantic_ai_agent.py": ("case", "wrong_topic",
                             ["read_notes was called 1 time, never with topic='shopping' (saw topic='work')"],
                             ["shopping", "work"]),
    "openai_agents_sdk.py": ("case", "too_long", ["4 turns, limit 2"], ["shopping"] * 4),
    "langgraph_agent.py": ("case", "wrong_answer",
                           ["output does not contain 'milk'; output was 'Nothing, your list is empty.'"],
                           ["shopping", "shopping"]),
}


#: pydantic-ai 2 needs Python 3.11: the test extra leaves it out on 3.10 (CI runs these on 3.11 and newer)
NEEDS_311 = pytest.mark.skipif(sys.version_info < (3, 11), reason="pydantic-ai 2 requires Python 3.11")


@pytest.mark.parametrize("name", [pytest.param(n, marks=NEEDS_311) if n.startswith("pydantic") else n for n in FRAMEWORKS])
def test_a_framework_tutorial_passes_its_case_and_fails_the_one_it_shows_failing(name: str) -> None:
    good, bad, reasons, tool_runs = FRAMEWORKS[name]
    module = _load(name)
    report = tr.evaluate([module[good], module[bad]])
    passing, failing = report.cases
    assert passing.passed, _failed(passing)
    assert not failing.passed and _failed(failing) == reasons
    trajectory = passing.trials[0].trajectory
    assert [call.name for call in trajectory.tool_calls] == ["read_notes"]
    assert [r.content for r in trajectory.turns[0].tool_results] == ["Buy milk on Tuesday."]
    if tool_runs is not None:  # the framework really ran its tool (both cases, run at once: in either order)
        assert sorted(module["ran"]) == sorted(tool_runs)


PAGES = Path(__file__).resolve().parents[1] / "docs" / "tutorials"


def _shown_output(page: str, file: str) -> list[str]:
    """The output block a tutorial page shows right after including `file`'s run section."""
    text = (PAGES / page).read_text(encoding="utf-8")
    found = re.search(rf'<!-- example: examples/tutorials/{re.escape(file)}:run -->\n```python\n.*?^```\n\n```\n(.*?)\n```',
                      text, re.S | re.M)
    assert found, f"{page} shows no output after {file}'s run section"
    return [line.rstrip() for line in found.group(1).splitlines() if not line.startswith("$ ")]


def _printed(file: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    runpy.run_path(str(TUTORIALS / file), run_name="__main__")
    return [line.rstrip() for line in capsys.readouterr().out.splitlines()]


@pytest.mark.parametrize(("page", "file"), [("plain-sdk.md", "plain_sdk.py"),
                                            pytest.param("pydantic-ai.md", "pydantic_ai_agent.py", marks=NEEDS_311),
                                            ("openai-agents.md", "openai_agents_sdk.py"),
                                            ("langgraph.md", "langgraph_agent.py")])
def test_a_tutorial_page_shows_what_its_code_prints(page: str, file: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _printed(file, capsys) == _shown_output(page, file)


@pytest.fixture
def pi_on_path(monkeypatch: pytest.MonkeyPatch) -> str:
    program = require_agent("pi")  # CI installs it (.ci/install-agents): a missing agent fails there
    monkeypatch.setenv("PATH", f"{Path(program).parent}{os.pathsep}{agents_bin_dir()}{os.pathsep}{os.environ['PATH']}")
    return program


def test_the_coding_agent_tutorial_runs_the_real_pi(pi_on_path: str) -> None:
    module = _load("coding_agent.py")
    report = tr.evaluate([module["marker"], module["cleanup"]])
    marker, cleanup = report.cases
    assert marker.passed, _failed(marker)
    assert _failed(cleanup) == ["runs `rm -rf junk` via bash"]  # pi runs what the model asks; never_ran saw it


def test_the_coding_agent_page_shows_what_its_python_prints(pi_on_path: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert _printed("coding_agent.py", capsys) == _shown_output("coding-agent.md", "coding_agent.py")


def test_the_coding_agent_project_runs_from_the_command_line(pi_on_path: str, tmp_path: Path) -> None:
    project = tmp_path / "coding-agent"
    shutil.copytree(TUTORIALS / "coding-agent", project, ignore=shutil.ignore_patterns("results"))
    done = subprocess.run([sys.executable, "-m", "trialrun", "run", "all"], cwd=project, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr  # cleanup fails: the tutorial's point
    assert "✗ cleanup: never_ran('rm -rf'): runs `rm -rf junk` via bash" in done.stdout
    saved = json.loads((project / "results" / "latest.json").read_text())
    verdicts = {test["id"]: test["passed"] for test in saved["tests"]}
    assert verdicts == {"marker": True, "cleanup": False}
    assert saved["config_snapshot"]["agent"] == "pi"


# -- a custom agent: how `agent = "module:function"` reaches the configured model (docs/cli.md) ---------------------

CUSTOM = Path(__file__).resolve().parents[1] / "examples" / "custom-agent"


def _custom_project(tmp_path: Path) -> Path:
    project = tmp_path / "custom-agent"
    shutil.copytree(CUSTOM, project, ignore=shutil.ignore_patterns("results_*", "latest.json", "__pycache__"))
    return project


def test_the_custom_agent_example_runs_under_its_scripted_model(tmp_path: Path) -> None:
    """The agent reaches the scripted model through ctx.model (the trajectory is read off its traffic) and reads
    the file from the trial's copy of the workspace (what the tool returned is the file's text)."""
    project = _custom_project(tmp_path)
    done = subprocess.run([sys.executable, "-m", "trialrun", "run", "all"], cwd=project, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    saved = json.loads((project / "state" / "eval" / "latest.json").read_text())
    (trial,) = saved["cases"][0]["trials"]
    turns = trial["trajectory"]["turns"]
    assert [call["name"] for call in turns[0]["tool_calls"]] == ["read_file"]
    assert turns[0]["tool_results"][0]["content"] == (CUSTOM / "workspace" / "notes.txt").read_text()
    assert saved["config_snapshot"]["model_name"] == "gpt-4.1-mini" and saved["config_snapshot"]["agent"] == "my_agent:run"


def test_the_custom_agent_example_sends_the_configured_model_name_over_http(tmp_path: Path) -> None:
    """`--model openai-compatible:URL#NAME` (a live kind of model; here a scripted one served on loopback): the
    same agent, unchanged, sends NAME (ctx.model_name) to that server, which is what answered."""
    project = _custom_project(tmp_path)
    seen: list[str | None] = []

    def answer(request: Any) -> Any:
        seen.append(request.model)
        return tr.reply("Your notes say: buying milk.") if request.last_tool_results else tr.tool_call(
            "read_file", path="notes.txt")

    with tr.serve(tr.ScriptedModel(answer)) as endpoint:
        done = subprocess.run([sys.executable, "-m", "trialrun", "run", "all", "--model",
                               f"openai-compatible:{endpoint.openai_base_url}#served-model"], cwd=project,
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "OPENAI_API_KEY": "sk-test-not-a-real-key-0123456789"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert seen == ["served-model", "served-model"]
    saved = json.loads((project / "state" / "eval" / "latest.json").read_text())
    assert saved["config_snapshot"]["model_name"] == "served-model" and saved["cases"][0]["passed"]
