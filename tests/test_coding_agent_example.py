"""The coding-agent example (`examples/coding-agent/`) and its page (docs/tutorials/coding-agent.md, "Graded by the
files"): each agent's scripted model and configuration are what its contract makes (`tests/_coding_example.py`),
the page shows the example's files exactly as they are (written into the page, read as plain Markdown: no snippet
includes), and the example passes every task with every agent it has files for (the real agents)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from _agents import require_agent
from _coding_example import EXAMPLE, PRESETS, TASKS, changed_text, files
from click.testing import CliRunner

from trialrun.cli import main
from trialrun.report.store import load_report

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "tutorials" / "coding-agent.md"
SECTION = "## Graded by the files"


def test_each_agent_s_files_are_what_its_contract_makes() -> None:
    stale = [str(path.relative_to(ROOT)) for path, text in files().items()
             if not path.is_file() or path.read_text() != text]
    assert not stale, f"run `python tests/_coding_example.py` to write them again: {stale}"
    written = {p.name for p in (EXAMPLE / "agents").iterdir()}
    assert written == {path.name for path in files()}  # nothing left over from an agent that is gone


def test_the_correct_change_passes_each_task_s_own_test(tmp_path: Path) -> None:
    """What the scripts make of each task (the file changed as they change it) passes the task's test; the unchanged
    bug fix and addition fail it (the test sees what is missing), and the refactor's test passes before and after
    (the suite's file_matches sees the constant)."""
    import subprocess
    import sys

    for test, (file, _, command, _) in TASKS.items():
        folder = tmp_path / test
        shutil.copytree(EXAMPLE / "tasks" / test, folder)
        before = subprocess.run(command.replace("python3", sys.executable), shell=True, cwd=folder, capture_output=True)
        assert (before.returncode == 0) == (test == "tax-constant"), test
        (folder / file).write_text(changed_text(test))
        done = subprocess.run(command.replace("python3", sys.executable), shell=True, cwd=folder, capture_output=True)
        assert done.returncode == 0, (test, done.stderr)


def _shown_files(page: str) -> list[tuple[str, str]]:
    """Each (path, code) the page shows under an `<!-- example: PATH -->` marker."""
    found = re.findall(r"<!-- example: (\S+) -->\n```[a-z]*\n(.*?)```\n", page, re.DOTALL)
    return [(path, code) for path, code in found]


def test_the_tutorial_shows_the_example_files_as_they_are() -> None:
    page = PAGE.read_text()
    section = page[page.index(SECTION):]
    assert "--8<--" not in section  # written into the page: it reads as Markdown anywhere
    shown = _shown_files(section)
    assert {path for path, _ in shown} >= {"examples/coding-agent/tests.json", "examples/coding-agent/trialrun.toml",
                                           "examples/coding-agent/agents/pi.yaml",
                                           "examples/coding-agent/tasks/fix-add/app.py"}
    for path, code in shown:
        assert (ROOT / path).read_text() == code, f"{path}: the page shows another text than the file holds"


@pytest.mark.parametrize("preset", PRESETS)
def test_the_example_passes_every_task_with_each_agent(preset: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "coding-agent"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("results"))
    if preset != "reference":
        program = require_agent(preset)
        monkeypatch.setenv("PATH", f"{Path(program).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(project)
    before = {p: p.read_bytes() for p in (project / "tasks").rglob("*") if p.is_file()}
    result = CliRunner().invoke(main, ["run", "all", "--config", f"agents/{preset}.toml"])
    report: Any = load_report(project / "results" / "latest.json")
    failed = {c.name: [v.reason for t in c.trials for v in t.verdicts if not v.passed] or [str(t.error) for t in c.trials]
              for c in report.cases if not c.passed}
    assert result.exit_code == 0 and not failed, (result.output, failed)
    assert {p: p.read_bytes() for p in (project / "tasks").rglob("*") if p.is_file()} == before
    for case in report.cases:
        [trial] = case.trials
        assert [(f.path, f.change) for f in trial.files.files] == [(TASKS[case.name][0], "changed")]
