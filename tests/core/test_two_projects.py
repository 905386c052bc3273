"""Two projects loaded in one process (a script evaluating both, or tests driving the CLI in-process), each with
modules of the same names (`same_name_agent.py`, a `helper_pkg` package): each suite runs its OWN agent and tools,
never the first project's (which it silently did: a verdict about the wrong agent)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import trialrun as tr
from trialrun.suite._build import load_suite
from trialrun.suite.config import ConfigError, load_config

TOOL = '''
def lookup(key: str) -> str:
    """Look up a key."""
    return "{project}-value"
'''

AGENT = '''
import trialrun as tr
from helper_pkg.tools import lookup


def run(prompt, ctx):
    return tr.Agent(ctx.model, tools=[lookup], max_turns=3).run(prompt + " for {project}")
'''

_NAMES = ("same_name_agent", "helper_pkg", "agent_of_alpha", "agent_of_beta")


def _project(folder: Path, project: str, target: str = "same_name_agent:run") -> Path:
    folder.mkdir()
    (folder / f"{target.partition(':')[0]}.py").write_text(AGENT.format(project=project))
    (folder / "helper_pkg").mkdir()
    (folder / "helper_pkg" / "__init__.py").write_text("")
    (folder / "helper_pkg" / "tools.py").write_text(TOOL.format(project=project))
    (folder / "tests.json").write_text(json.dumps([{"id": "look", "prompt": "look it up", "expected_tools": ["lookup"],
                                                    "max_turns": 3, "success_criteria": "says the value"}]))
    (folder / "model.yaml").write_text('look:\n  - tool_call: {name: lookup, arguments: {key: k}}\n'
                                       '  - reply: "done"\n')
    (folder / "trialrun.toml").write_text(f'suite = "tests.json"\nmodel = "scripted:model.yaml"\nagent = "{target}"\n')
    return folder


@pytest.fixture
def clean_modules(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in [n for n in sys.modules if n.split(".")[0] in _NAMES]:
        monkeypatch.delitem(sys.modules, name)
    yield
    for name in [n for n in sys.modules if n.split(".")[0] in _NAMES]:
        del sys.modules[name]


def _seen(folder: Path) -> tuple[str, str]:
    """(the prompt the agent sent, what its tool returned) in the one trial of the project's suite."""
    [case] = tr.evaluate(load_suite(folder / "tests.json", load_config(folder))).cases
    trajectory = case.trials[0].trajectory
    [result] = [result for turn in trajectory.turns for result in turn.tool_results]
    return str(trajectory.prompt), result.content


def test_each_project_runs_its_own_agent_and_tools(tmp_path: Path, clean_modules: None) -> None:
    first, second = _project(tmp_path / "a", "alpha"), _project(tmp_path / "b", "beta")
    assert _seen(first) == ("look it up for alpha", "alpha-value")
    assert _seen(second) == ("look it up for beta", "beta-value")  # before: alpha's agent and alpha's tool
    assert _seen(first) == ("look it up for alpha", "alpha-value")  # and back again


def test_a_helper_package_of_the_same_name_is_each_projects_own(tmp_path: Path, clean_modules: None) -> None:
    """The agents' modules differ in name; the package both import (`helper_pkg`) does not."""
    first = _project(tmp_path / "a", "alpha", target="agent_of_alpha:run")
    second = _project(tmp_path / "b", "beta", target="agent_of_beta:run")
    assert _seen(first) == ("look it up for alpha", "alpha-value")
    assert _seen(second) == ("look it up for beta", "beta-value")


def test_a_module_no_project_brought_in_is_never_replaced(tmp_path: Path, clean_modules: None) -> None:
    """A project file named like a module already loaded from elsewhere (here the standard library's `json`) does
    not replace it in the process: the target is looked up in the module already loaded, as before."""
    folder = _project(tmp_path / "a", "alpha")
    (folder / "json.py").write_text("def run(prompt, ctx):\n    return 'shadowed'\n")
    (folder / "trialrun.toml").write_text('suite = "tests.json"\nmodel = "scripted:model.yaml"\nagent = "json:run"\n')
    loaded = sys.modules["json"]
    with pytest.raises(ConfigError, match="agent 'json:run': json has no attribute 'run'"):
        load_suite(folder / "tests.json", load_config(folder))
    assert sys.modules["json"] is loaded
    assert _seen(_project(tmp_path / "b", "beta")) == ("look it up for beta", "beta-value")  # and json still works
