"""`trialrun compare`: a test that passed and now fails is a regression even when its score stays put (the rubric's
total is clamped at 1.0, so failing an `expect` grader or ending in a model error need not lower it)."""

from __future__ import annotations

import json
from pathlib import Path

SUITE = [
    {"id": "notes", "prompt": "What do my notes say?", "expected_tools": [], "max_turns": 3,
     "success_criteria": "Mentions milk", "expect": [{"contains": "milk"}]},
    {"id": "steady", "prompt": "Say hi", "expected_tools": [], "max_turns": 1, "success_criteria": "Says hi",
     "expect": {"contains": "hi"}},
]


def _run_with(project: Path, cli, notes_steps: list[dict]) -> None:
    """A run under the skill's own rubric, whose clamp keeps a test's score at 1.00 while an `expect` grader fails."""
    (project / "script.json").write_text(json.dumps({"notes": notes_steps, "steady": [{"reply": "hi"}]}))
    result = cli("run", "all", "--model", "scripted:script.json", "--rubric", "skill")
    assert result.exit_code in (0, 1), result.output


def test_pass_to_fail_at_the_same_score_is_a_regression(project: Path, cli, write_suite) -> None:
    write_suite(project / "state" / "eval" / "tests.json", SUITE)
    _run_with(project, cli, [{"reply": "Buy milk."}])
    _run_with(project, cli, [{"reply": "Buy bread."}])  # fails contains('milk'); score still 1.0

    result = cli("compare")
    lines = result.output.splitlines()
    # the flip, and the sub-score that moved behind the clamped total, are said on the test's own line
    assert "notes:   1.00 -> 1.00  ▼ now fails; output_quality 0.50 -> 0.00 (-0.50)" in lines
    assert "steady:  1.00 -> 1.00  = unchanged" in lines  # the seed's line is kept as it is
    assert "Pass rate: 2/2 -> 1/2   ▼ -1" in lines
    [warning] = [line for line in lines if line.startswith("WARNING")]
    assert warning.startswith("WARNING: regression in notes: passed -> failed (score 1.00 -> 1.00): contains('milk'):")
    assert result.exit_code == 0
    assert cli("compare", "--fail-on-regression").exit_code == 1

    data = json.loads(cli("compare", "--json").output)
    assert data["regressions"] == ["notes"]
    [notes] = [d for d in data["cases"] if d["name"] == "notes"]
    assert notes["newly_failing"] is True and notes["status"] == "regressed" and notes["delta"] == 0.0
    assert notes["failure_after"].startswith("contains('milk')")


def test_a_model_error_that_keeps_the_score_is_a_regression(project: Path, cli, write_suite) -> None:
    write_suite(project / "state" / "eval" / "tests.json", [{**SUITE[0], "expect": [{"not_called": "write_file"}]}, SUITE[1]])
    _run_with(project, cli, [{"reply": "Buy milk."}])
    _run_with(project, cli, [{"error": {"status": 400, "message": "model not found"}}])

    latest = json.loads((project / "state" / "eval" / "latest.json").read_text())
    notes = latest["cases"][0]
    assert notes["passed"] is False and notes["trials"][0]["error"]["phase"] == "model"
    assert notes["sub_scores"]["output_quality"] == 0.0  # nothing to judge: the run ended in an error

    result = cli("compare", "--fail-on-regression")
    assert result.exit_code == 1
    assert "WARNING: regression in notes: passed -> failed (score" in result.output
    assert "HTTP 400" in result.output and "model not found" in result.output


def test_a_drop_that_also_fails_keeps_the_seed_warning_alone(project: Path, cli) -> None:
    cli("run", "all")
    cli("run", "all", "--model", "scripted:model_v2.yaml")
    warnings = [line for line in cli("compare").output.splitlines() if line.startswith("WARNING")]
    assert warnings == ["WARNING: regression in summarise-notes: 1.00 -> 0.17 (-0.83, a drop of 0.10 or more)"]


def test_fail_to_pass_is_not_a_regression(project: Path, cli, write_suite) -> None:
    write_suite(project / "state" / "eval" / "tests.json", SUITE)
    _run_with(project, cli, [{"reply": "Buy bread."}])
    _run_with(project, cli, [{"reply": "Buy milk."}])
    result = cli("compare", "--fail-on-regression")
    assert result.exit_code == 0 and "WARNING" not in result.output
    assert "Pass rate: 1/2 -> 2/2   ▲ +1" in result.output


def test_markdown_and_html_say_a_pass_to_fail_regression_is_one(project: Path, cli, write_suite) -> None:
    write_suite(project / "state" / "eval" / "tests.json", SUITE)
    _run_with(project, cli, [{"reply": "Buy milk."}])
    _run_with(project, cli, [{"reply": "Buy bread."}])

    result = cli("compare", "--markdown", "cmp.md", "--html", "cmp.html", "--no-summary")
    assert result.exit_code == 0, result.output
    markdown = (project / "cmp.md").read_text()
    assert "> **Regression in notes**: 1.00 → 1.00 passed before, fails now: contains('milk'):" in markdown
    assert "a drop of" not in markdown.split("<details>")[0]
    page = (project / "cmp.html").read_text()
    assert "<li><code>notes</code>: 1.00 → 1.00 (<strong>passed before, fails now</strong>: contains(&#x27;milk&#x27;)" in page
