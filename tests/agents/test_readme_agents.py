"""The agents tables of docs/coding-agents.md (moved there from the README) are the contracts' (written by
`trialrun.agents._table`, never by hand), and its recipe
for an agent without a preset (`agent = "command: ..."` for one that reads the usual base-URL variables) runs as
written: its trialrun.toml and its agent program, against a scripted model, through `trialrun run`."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import trialrun as tr
from trialrun.agents._table import TABLES
from trialrun.cli import main

#: where the README's agents section went: its tables and its recipe
PAGE = Path(__file__).resolve().parents[2] / "docs" / "coding-agents.md"


def _between(text: str, marker: str) -> str:
    found = re.search(rf"<!-- {marker}:[^\n]*-->\n\n(.*?)\n\n<!-- /{marker} -->", text, re.S)
    assert found, f"{PAGE.name} has no <!-- {marker}: ... --> ... <!-- /{marker} --> section"
    return found.group(1)


@pytest.mark.parametrize("marker", sorted(TABLES))
def test_the_readme_table_is_the_contracts(marker: str) -> None:
    """To update it: `python -m trialrun.agents._table` and paste (each table between its markers)."""
    assert _between(PAGE.read_text(encoding="utf-8"), marker) == TABLES[marker](tr.agents.CONTRACTS)


def test_a_changed_contract_changes_the_table() -> None:
    """The table is written from the contract's fields (a changed version or tool is a changed page)."""
    import dataclasses

    pi = tr.agents.CONTRACTS["pi"]
    other = dataclasses.replace(pi, pin=dataclasses.replace(pi.pin, version="0.99.0"))
    table = TABLES["agents-table"]({"pi": other})
    assert "(0.99.0, npm)" in table and "`bash(command)`" in table and "0.73.1" not in table


def _recipe(text: str) -> tuple[str, str]:
    """The recipe's trialrun.toml and agent program: the first toml and python blocks after its heading."""
    start = text.index("**A recipe: any agent that reads the usual base-URL variables**")
    toml = re.search(r"```toml\n(.*?)```", text[start:], re.S)
    python = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert toml and python
    return toml.group(1), python.group(1)


def test_the_command_recipe_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The recipe's agent reaches the scripted model through OPENAI_BASE_URL with the recipe's model name, and its
    answer is the trial's output."""
    toml, program = _recipe(PAGE.read_text(encoding="utf-8"))
    (tmp_path / "trialrun.toml").write_text(toml)
    (tmp_path / "agent.py").write_text(program)
    (tmp_path / "model.yaml").write_text('hello:\n  - reply: "Hello from the scripted model."\n')
    suite = tmp_path / "state" / "eval" / "tests.json"
    suite.parent.mkdir(parents=True)
    suite.write_text(json.dumps([{"id": "hello", "name": "Says hello", "prompt": "Say hello", "expected_tools": [],
                                  "max_turns": 1, "success_criteria": "Says hello"}]))
    bin_dir = tmp_path / "bin"  # `python` is the one running the tests (it has the openai SDK)
    bin_dir.mkdir()
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "python").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["run", "all"], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    latest = json.loads((suite.parent / "latest.json").read_text())
    trial = latest["cases"][0]["trials"][0]
    assert trial["error"] is None, trial["error"]
    assert trial["output"].strip() == "Hello from the scripted model."
    assert [turn["model"] for turn in trial["trajectory"]["turns"]] == ["my-model"]  # what it asked the endpoint for


def _listed_agents(text: str, start: str) -> list[str]:
    """The agent names of the sentence "Ready-made agents: `a`, `b` ... and `z`" after `start`."""
    sentence = text[text.index(start):]
    sentence = sentence[sentence.index("Ready-made agents:"):]
    sentence = sentence[: sentence.index(".")]
    return re.findall(r"`([a-z-]+)`", sentence)


def test_the_readme_and_the_coding_agent_tutorial_list_every_pinned_agent() -> None:
    """Both pages name every ready-made agent, in the pinned list's order: a new agent is never missing from the
    page a new user reads first."""
    root = PAGE.parents[1]
    pinned = list(tr.agents.CONTRACTS)
    assert _listed_agents((root / "README.md").read_text(encoding="utf-8"), "## Coding agents under test") == pinned
    assert _listed_agents((root / "docs" / "tutorials" / "coding-agent.md").read_text(encoding="utf-8"),
                          "# Tutorial") == pinned
