"""A suite whose agent and tools are modules of the project folder (`agent = "my_agent:run"`,
`tools = ["my_tools:lookup"]`) runs on Ray as it does locally: the workers cannot import the project folder, so
those modules travel with the cases (pickled by value), found inside the suite case's invoke."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from trialrun.cli import main

TOOLS = '''
def lookup(key: str) -> str:
    """Look up a key."""
    return "value-" + key.removeprefix("key-")
'''

AGENT = '''
import trialrun as tr
from my_tools import lookup


def run(prompt, ctx):
    return tr.Agent(ctx.model, tools=[lookup], max_turns=4).run(prompt)
'''


def _project(folder: Path, *, custom_agent: bool) -> None:
    folder.mkdir()
    (folder / "my_tools.py").write_text(TOOLS)
    (folder / "my_agent.py").write_text(AGENT)
    tests = [{"id": f"lookup-{i}", "prompt": f"lookup key-{i}", "expected_tools": ["lookup"], "max_turns": 4,
              "success_criteria": f"says value-{i}"} for i in range(3)]
    (folder / "tests.json").write_text(json.dumps(tests))
    script = "".join(f"lookup-{i}:\n  - tool_call: {{name: lookup, arguments: {{key: key-{i}}}}}\n"
                     f"  - reply: \"The value is value-{i}.\"\n" for i in range(3))
    (folder / "model.yaml").write_text(script)
    config = ['suite = "tests.json"', 'model = "scripted:model.yaml"']
    config.append('agent = "my_agent:run"' if custom_agent else 'tools = ["my_tools:lookup"]')
    (folder / "trialrun.toml").write_text("\n".join(config) + "\n")


def _run(*args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(main, ["run", "--json", "--no-exchanges", *args], catch_exceptions=False)
    return result.exit_code, json.loads(result.stdout)


def _verdicts(report: dict) -> list[tuple[str, bool, list[str]]]:
    return [(c["name"], c["passed"], [t["output"] for t in c["trials"]]) for c in report["cases"]]


@pytest.mark.parametrize("custom_agent", [False, True], ids=["project-tools", "project-agent"])
def test_project_modules_travel_to_the_workers(ray_cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               custom_agent: bool) -> None:
    project = tmp_path / "project"
    _project(project, custom_agent=custom_agent)
    monkeypatch.chdir(project)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    for name in ("my_agent", "my_tools"):  # another test's project module of that name, imported in this process
        monkeypatch.delitem(sys.modules, name, raising=False)
    local_code, local = _run("--results-dir", "local")
    ray_code, remote = _run("--results-dir", "ray", "--executor", f"ray:{ray_cluster}")
    assert local_code == 0 and all(passed for _, passed, _ in _verdicts(local))
    errors = [t.get("error") for c in remote["cases"] for t in c["trials"] if t.get("error")]
    assert (ray_code, errors) == (0, [])  # not "No module named 'my_tools'" on a worker
    assert _verdicts(remote) == _verdicts(local)
    assert [t["output"] for c in remote["cases"] for t in c["trials"]] == [f"The value is value-{i}." for i in range(3)]
