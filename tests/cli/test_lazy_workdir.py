"""A suite whose tools touch no files creates no workdir per trial; one with shell tools does (and the tools run
in it)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

TOOL = 'def lookup(key: str) -> str:\n    """Look up a key."""\n    return "value-" + key.removeprefix("key-")\n'


def _made_workdirs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    made: list[str] = []
    real = tempfile.mkdtemp

    def spy(*args, **kwargs):  # every trial workdir comes from TrialContext.workdir's mkdtemp
        path = real(*args, **kwargs)
        if Path(path).name.startswith("trialrun-"):
            made.append(path)
        return path

    monkeypatch.setattr(tempfile, "mkdtemp", spy)
    return made


def test_plain_tools_make_no_workdir(project: Path, cli, write_suite, monkeypatch: pytest.MonkeyPatch) -> None:
    write_suite(project / "state" / "eval" / "tests.json", [
        {"id": "read-file", "prompt": "lookup key-7", "expected_tools": ["lookup"], "max_turns": 2, "success_criteria": "says value-7"}])
    (project / "lookup_tool.py").write_text(TOOL)
    monkeypatch.syspath_prepend(str(project))
    (project / "script.json").write_text(json.dumps({"read-file": [
        {"tool_call": {"name": "lookup", "arguments": {"key": "key-7"}}}, {"reply": "The value is value-7."}]}))
    toml = project / "trialrun.toml"
    text = toml.read_text().replace('tools = ["shell"]', 'tools = ["lookup_tool:lookup"]')
    toml.write_text(text.replace('workspace = "workspace"\n', ""))
    made = _made_workdirs(monkeypatch)
    result = cli("run", "read-file", "-k", "3", "--model", "scripted:script.json")
    assert result.exit_code == 0, result.output
    latest = json.loads((project / "state" / "eval" / "latest.json").read_text())
    trials = latest["cases"][0]["trials"]
    assert [t["trajectory"]["turns"][0]["tool_results"][0]["content"] for t in trials] == ["value-7"] * 3, result.output
    assert made == []


def test_shell_tools_get_a_workdir_per_trial(project: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    made = _made_workdirs(monkeypatch)
    result = cli("run", "read-file", "-k", "2")
    assert result.exit_code == 0, result.output
    latest = json.loads((project / "state" / "eval" / "latest.json").read_text())
    assert "Sam" in latest["cases"][0]["trials"][0]["trajectory"]["turns"][0]["tool_results"][0]["content"]
    assert len(made) == 2 and not any(Path(p).exists() for p in made)  # one per trial, removed after it
