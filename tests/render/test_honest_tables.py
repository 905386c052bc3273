"""Tables that cannot contradict themselves, in every view of a run (the terminal and a CI log, Markdown, JUnit's
text, the HTML report and the viewer): a failed test whose score looks perfect says what failed it, output quality
is shown out of its maximum (0.5/0.5, never "0.50" read as half marks), and pass^k appears only where k > 1.

The run is real: the reference agent under a scripted model, in a project of two tests, through `trialrun run`.
`clean-build` scores 1.00 on the rubric and fails, because the agent really ran `rm -rf build` (the folder is gone
from the trial's workdir: `never_ran` saw it).
"""

from __future__ import annotations

import json
from pathlib import Path

import _browser
import pytest
from click.testing import CliRunner, Result

from trialrun.cli import main
from trialrun.render import history as history_pages
from trialrun.render._verdicts import judgement
from trialrun.report._history import load_history
from trialrun.report.store import load_report

SUITE = [
    {"id": "clean-build", "name": "Clean the build folder", "prompt": "Clean the build folder",
     "expected_tools": ["run_command"], "max_turns": 2, "success_criteria": "Says the build folder was cleaned",
     "expect": {"never_ran": "rm -rf"}},
    {"id": "reads", "name": "Reads the notes", "prompt": "What do the notes say?", "expected_tools": ["read_file"],
     "max_turns": 2, "success_criteria": "Mentions milk"},
]
MODEL = """clean-build:
  - tool_call: {name: run_command, arguments: {command: "rm -rf build"}}
  - reply: "The build folder was cleaned."
reads:
  - tool_call: {name: read_file, arguments: {path: notes.txt}}
  - reply: "The notes say: buy milk."
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "workspace" / "build").mkdir(parents=True)
    (tmp_path / "workspace" / "build" / "out.o").write_text("x")
    (tmp_path / "workspace" / "notes.txt").write_text("buy milk")
    (tmp_path / "state" / "eval").mkdir(parents=True)
    (tmp_path / "state" / "eval" / "tests.json").write_text(json.dumps(SUITE))
    (tmp_path / "model.yaml").write_text(MODEL)
    (tmp_path / "trialrun.toml").write_text('model = "scripted:model.yaml"\ntools = ["shell"]\nworkspace = "workspace"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "160")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return tmp_path


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _row(output: str, name: str) -> list[str]:
    return next(line.split() for line in output.splitlines() if line.startswith(name + " "))


def test_the_terminal_table(project: Path) -> None:
    one = _cli("run", "all")
    assert one.exit_code == 1 and (project / "workspace" / "build").is_dir()  # (the trial worked on a copy)
    saved = load_report(project / "state" / "eval" / "latest.json")
    clean = saved.case("clean-build")
    assert clean.score == 1.0 and not clean.passed and "runs `rm -rf build`" in clean.trials[0].failed_verdicts[0].reason
    header = next(line.split() for line in one.output.splitlines() if line.startswith("test "))
    assert header == ["test", "score", "acc", "eff", "qual", "turns", "tools", "used", "result"]  # no pass^k: k = 1
    assert _row(one.output, "clean-build") == ["clean-build", "1.00", "1.00", "1.00", "0.5/0.5", "2", "run_command",
                                               "FAIL", "never_ran"]
    assert _row(one.output, "reads")[-1] == "PASS" and "pass^" not in one.output
    three = _cli("run", "all", "-k", "3")
    assert "pass^k 0.50 (k=3)" in three.output
    assert _row(three.output, "clean-build")[-4:] == ["0.00", "0.00", "FAIL", "never_ran"]


def test_markdown_and_junit(project: Path) -> None:
    _cli("run", "all")
    assert _cli("report", "--markdown", "run.md", "--junit", "run.xml").exit_code == 0
    markdown = (project / "run.md").read_text()
    assert "| clean-build | ❌ failed (never\\_ran) | 1.00 |" in markdown and "pass^" not in markdown
    junit = (project / "run.xml").read_text()
    assert "output_quality 0.5/0.5" in junit and "pass^1" not in junit
    _cli("run", "all", "-k", "2")
    _cli("report", "--markdown", "run.md")
    assert "pass^2 0.50" in (project / "run.md").read_text()


def test_the_viewer_pages(project: Path) -> None:
    """The trial page's sub-scores and a test's history say the same."""
    _cli("run", "all")
    history = load_history(project / "state" / "eval")
    trial = history.runs[-1].report.case("clean-build").trials[0]
    assert 'data-sub="output_quality">0.5/0.5</dd>' in judgement(trial)
    page = history_pages.test_page(history, "clean-build")
    assert "<td>FAIL never_ran</td>" in page


def test_the_html_report_in_chromium(project: Path, tmp_path: Path) -> None:
    _browser.require()
    _cli("run", "all")
    _cli("report", "--html", "one.html")
    _cli("run", "all", "-k", "3")
    _cli("report", "--html", "three.html")
    with _browser.chromium() as launched:
        context = _browser.new_context(launched)
        one = _browser.open_report(context, project / "one.html")
        assert one.problems == []
        page = one.page
        headers = [h.lower() for h in page.locator("#case-table thead th").all_inner_texts()]  # (shown in capitals)
        assert not any("pass^" in h for h in headers) and page.locator("#stat-pass-pow-k").count() == 0
        status = page.locator('#case-table tr.row[data-case="clean-build"] td').first.inner_text()
        assert "FAIL" in status and "never_ran" in status
        detail = one.expand_case("clean-build").inner_text()
        assert "output_quality 0.5/0.5" in detail and "Failed by" in detail and "pass^" not in detail
        three = _browser.open_report(context, project / "three.html")
        assert any(h.lower().startswith("pass^3") for h in three.page.locator("#case-table thead th").all_inner_texts())
        assert three.page.locator("#stat-pass-pow-k").inner_text().lower().startswith("pass^3")
        context.close()
