"""The files a trial left, seen in headless Chromium (issue 34): on the viewer's trial page (each changed file with
its unified diff, added and removed lines marked), on the trajectory diff page ("Files left", the two trials side
by side: the same fix reached by two paths is the same files, a wrong fix is not), and in the static HTML report's
trial. The runs are real runs of the coding-agent example by the reference agent; what the pages must show is read
from the files the scripted model wrote, not from trialrun's results."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _browser
import pytest
from _history_runs import served
from click.testing import CliRunner

from trialrun.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "coding-agent"
FIXED = "    return a + b"
#: each run's one step on fix-add (the reference agent's tools): two ways to the same fix, and a wrong one
RUNS = {"write": {"tool_call": {"name": "write_file", "arguments": {
            "path": "app.py", "content": (EXAMPLE / "tasks/fix-add/app.py").read_text().replace("a - b", "a + b")}}},
        "sed": {"tool_call": {"name": "run_command", "arguments": {"command": "sed -i 's/a - b/a + b/' app.py"}}},
        "wrong": {"tool_call": {"name": "run_command", "arguments": {"command": "sed -i 's/a - b/a * b/' app.py"}}}}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """Three runs of fix-add (by write, by sed, a wrong fix): the results folder and each run's stem."""
    project = tmp_path_factory.mktemp("files") / "coding-agent"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("results"))
    stems: dict[str, str] = {}
    cwd = os.getcwd()
    os.chdir(project)
    try:
        for name, step in RUNS.items():
            (project / "agents" / "reference.yaml").write_text(json.dumps({"fix-add": [step, {"reply": "done"}]}))
            result = CliRunner().invoke(main, ["run", "fix-add", "--config", "agents/reference.toml"])
            assert result.exit_code in (0, 1), result.output
            stems[name] = json.loads((project / "results" / "latest.json").read_text())["run_id"]
            time.sleep(1.05)  # a result file's name is its second
    finally:
        os.chdir(cwd)
    found = {p.stem: p for p in (project / "results").glob("results_*.json")}
    named = {name: next(stem for stem, path in found.items() if json.loads(path.read_text())["run_id"] == run)
             for name, run in stems.items()}
    return project / "results", named


@pytest.fixture(scope="module")
def base(runs: tuple[Path, dict[str, str]]) -> Iterator[str]:
    with served(runs[0]) as url:
        yield url


def _open(context: Any, url: str) -> Any:
    opened = _browser.open_url(context, url)
    assert opened.problems == []
    return opened.page


def test_the_trial_page_shows_the_files_the_trial_left(context: Any, base: str, runs: Any) -> None:
    _, stems = runs
    page = _open(context, f"{base}/trial/{stems['sed']}?test=fix-add&trial=1")
    section = page.locator("#files-left")
    assert section.locator("h2").inner_text() == "Files left"
    assert section.locator(".files-summary").inner_text() == "1 changed of 2 files examined"
    assert ".git" in section.locator("details.not-examined").text_content()  # its setup made a repository
    app = section.locator('details.file-left[data-path="app.py"]')
    assert app.get_attribute("data-change") == "changed" and app.is_visible()
    assert app.locator("pre.diff span.add").all_inner_texts() == ["+" + FIXED]
    assert app.locator("pre.diff span.del").all_inner_texts() == ["-    return a - b"]
    # the verifier's own output, folded under the verdicts
    output = page.locator("details.verify-output")
    assert "Output of python3 test_app.py (exit 0)" in output.locator("summary").inner_text()


def test_the_diff_page_puts_the_files_left_side_by_side(context: Any, base: str, runs: Any) -> None:
    _, stems = runs
    same = _open(context, f"{base}/diff?test=fix-add&a={stems['write']}&ta=1&b={stems['sed']}&tb=1")
    # two paths (write_file, a sed through run_command): the trajectories differ, the files left do not
    assert same.locator("#diff-summary").inner_text().startswith("First divergence at step 1")
    assert same.locator("#files-summary").inner_text() == "Both trials left the same files: 1 file(s) changed alike."
    row = same.locator('#files-diff tr.file-row[data-path="app.py"]')
    assert row.get_attribute("class") == "file-row same"
    assert row.locator("td pre.diff span.add").all_inner_texts() == ["+" + FIXED] * 2
    other = _open(context, f"{base}/diff?test=fix-add&a={stems['sed']}&ta=1&b={stems['wrong']}&tb=1")
    assert other.locator("#files-summary").inner_text() == ("The trials left different files: 1 of 1 changed file(s) "
                                                            "differ.")
    cells = other.locator('#files-diff tr.file-row[data-path="app.py"] td')
    assert cells.nth(0).locator("span.add").inner_text() == "+" + FIXED
    assert cells.nth(1).locator("span.add").inner_text() == "+    return a * b"


def test_the_html_report_shows_the_files_left_in_a_trial(context: Any, runs: Any, tmp_path: Path) -> None:
    results, stems = runs
    html = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", str(results / f"{stems['wrong']}.json"), "--html", str(html)])
    assert result.exit_code in (0, 1), result.output
    opened = _browser.open_report(context, html)
    trial = opened.expand_trial(opened.expand_case("fix-add"), 1)
    files = trial.locator(".files-left")
    assert files.locator("h5").text_content() == "Files left"
    assert files.locator('details.file-left[data-path="app.py"] pre.diff span.add').inner_text() == "+    return a * b"
    assert opened.problems == []


def test_a_trial_without_a_workdir_shows_no_files_section() -> None:
    import trialrun as tr
    from trialrun.render._files import files_html, files_side_by_side

    trial = tr.evaluate([tr.Case("c", lambda ctx: "hi", expect_outcome=[tr.expect.contains("hi")])]).cases[0].trials[0]
    assert trial.files is None and files_html(trial) == "" and files_side_by_side(trial, trial, ("a", "b")) == ""
