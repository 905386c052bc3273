"""One run, one set of numbers: the average score, the trial count, mean turns and JUnit classnames read the same in
the terminal, the JSON, Markdown, HTML, JUnit and compare."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from trialrun.render.junit import junit_xml
from trialrun.render.markdown import comparison_markdown, report_markdown
from trialrun.render.terminal import print_report
from trialrun.report.compare import compare, delta_lines
from trialrun.report.results import CaseResult, RunReport, TrialResult
from trialrun.trajectory import Trajectory, Turn

#: Crashes on the list-dir test (its prompt asks about files); answers every other test without tools.
CRASH_ON_LIST_DIR = '''
def run(prompt, ctx):
    if "files" in prompt:
        raise RuntimeError("agent crashed")
    return "Your notes: meeting with Sam on Tuesday, buy milk."
'''


def _latest(project: Path) -> dict:
    return json.loads((project / "state" / "eval" / "latest.json").read_text())


def test_a_test_whose_every_trial_errored_counts_0_in_every_views_average(project: Path, cli) -> None:
    (project / "crash_agent.py").write_text(CRASH_ON_LIST_DIR)
    ran = cli("run", "all", "-k", "2", "--agent", "crash_agent:run")
    assert ran.exit_code == 1
    data = _latest(project)
    crashed = next(c for c in data["cases"] if c["name"] == "list-dir")
    assert all(t["error"] is not None for t in crashed["trials"])
    # The case, the seed's tests view and the run's aggregate: list-dir scores 0 and is in the average.
    assert crashed["score"] == 0.0
    assert next(t for t in data["tests"] if t["id"] == "list-dir")["score"] == 0.0
    scores = [t["score"] for t in data["tests"]]
    assert 0.0 in scores and len(scores) == 5
    average = sum(scores) / len(scores)
    assert data["score"] == pytest.approx(average) and average < 1.0
    shown = f"{average:.2f}"

    assert f"avg score {shown}" in ran.output  # run's table
    report = cli("report", "--markdown", "run.md", "--html", "run.html")
    assert f"avg score {shown}" in report.output  # report's table
    assert f"avg score {shown}" in (project / "run.md").read_text()  # Markdown
    assert re.search(rf'id="stat-score"><dt>Score</dt><dd><span class="stat-value">{shown}<',
                     (project / "run.html").read_text())  # HTML run page

    assert cli("run", "all", "-k", "2", "--agent", "crash_agent:run").exit_code == 1
    as_json = json.loads(cli("compare", "--json").output)
    assert as_json["avg_score_before"] == pytest.approx(average)
    assert as_json["avg_score_after"] == pytest.approx(average)
    assert f"Avg score: {shown} -> {shown}" in cli("compare").output


def _run(trials: int, *, turns: int = 2, run_id: str = "eval_1") -> RunReport:
    def trial(number: int) -> TrialResult:
        return TrialResult(trial=number, passed=True, score=1.0,
                           trajectory=Trajectory(turns=[Turn(text="t") for _ in range(turns + (number == 1))]))

    case = CaseResult.from_trials("read-file", [trial(n) for n in range(1, trials + 1)], tags=[], mode="deterministic")
    return RunReport.build([case], trial_count=trials, started_at=datetime(2025, 1, 2, tzinfo=timezone.utc),
                           duration_s=1, run_id=run_id)


def test_compare_text_and_markdown_show_a_change_of_trial_count() -> None:
    changed = compare(_run(1), _run(3, run_id="eval_2"))
    lines = delta_lines(changed)
    assert "Trials: 1 -> 3" in lines
    assert lines.index("Trials: 1 -> 3") == next(i for i, line in enumerate(lines) if line.startswith("Pass rate:")) + 1
    assert "| Trials | 1 | 3 | – |" in comparison_markdown(changed)

    same = compare(_run(3), _run(3, run_id="eval_2"))
    assert not any(line.startswith("Trials:") for line in delta_lines(same))  # the seed's lines, unchanged
    assert "| Trials |" not in comparison_markdown(same)


def test_compare_cli_prints_the_trial_count_change(project: Path, cli) -> None:
    cli("run", "all")
    cli("run", "all", "-k", "3")
    assert "Trials: 1 -> 3" in cli("compare").output


def test_mean_turns_have_two_decimals_in_every_renderer() -> None:
    report = _run(3)  # 3, 2 and 2 turns: a mean of 2.3333...
    assert report.cases[0].turns == pytest.approx(7 / 3)
    assert "turns: 2.33\n" in junit_xml(report)
    assert "| 2.33 |" in report_markdown(report)

    buffer = StringIO()
    print_report(report, Console(file=buffer, width=160, highlight=False))
    row = next(line for line in buffer.getvalue().splitlines() if line.startswith("read-file"))
    assert " 2.33 " in row and "2.33333" not in row

    whole = _run(1)  # a whole number stays whole: 3 turns, not 3.00
    assert "turns: 3\n" in junit_xml(whole) and "| 3 |" in report_markdown(whole)


def test_junit_classnames_agree_for_a_cli_run_and_a_pytest_saved_run(project: Path, cli) -> None:
    """`run --junit` names the suite's cases as pytest's --junitxml does (state.eval.tests.json); so does
    `report --junit` of a run the pytest plugin saved (whose cases carry their pytest node ids)."""
    cli("run", "all", "--junit", "run.xml")
    classnames = {case.get("classname") for case in ET.parse(project / "run.xml").getroot().iter("testcase")}
    assert classnames == {"state.eval.tests.json"}

    saved = _run(1)
    saved.cases[0].metadata["pytest_nodeid"] = "state/eval/tests.json::read-file"
    pytest_classnames = {case.get("classname") for case in ET.fromstring(junit_xml(saved)).iter("testcase")}
    assert pytest_classnames == classnames
