"""Scores at the edges: a judge's "0.50", trials that error (the score and its sub-scores cover the same trials;
a hand grade skips the errored ones), and a trial the hard turn limit cut off (it may pass, but it is shown)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trialrun.render.markdown import report_markdown
from trialrun.report.store import load_report

FLAKY_AGENT = '''
def run(prompt, ctx):
    """Crashes on even trials; on odd ones answers well without any tool."""
    if ctx.trial % 2 == 0:
        raise RuntimeError(f"agent crashed on trial {ctx.trial}")
    return "Your notes: the meeting with Sam on Tuesday, and buying milk."
'''


def _latest(project: Path) -> dict:
    return json.loads((project / "state" / "eval" / "latest.json").read_text())


# -- the judge ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("reply, level", [("0.50", 0.5), ("0.250", 0.25), ("0", 0.0)])
def test_a_scripted_judge_writing_trailing_zeros_is_read_right(project: Path, cli, reply: str, level: float) -> None:
    (project / "judge.yaml").write_text(f"read-file:\n  - reply: '{reply}'\n")
    cli("run", "read-file", "--judge", "scripted:judge.yaml")
    case = _latest(project)["cases"][0]
    assert case["sub_scores"]["output_quality"] == level
    assert case["trials"][0]["verdicts"][0]["details"]["quality_by"] == "judge"


def test_a_judge_answer_off_the_scale_fails_the_test_saying_so(project: Path, cli) -> None:
    (project / "judge.yaml").write_text("read-file:\n  - reply: '0.75'\n")
    result = cli("run", "read-file", "--judge", "scripted:judge.yaml")
    assert result.exit_code == 1
    assert "the judge answered 0.75; expected 0, 0.25 or 0.5" in result.output
    trial = _latest(project)["cases"][0]["trials"][0]
    assert trial["passed"] is False and "the judge answered 0.75" in trial["verdicts"][0]["reason"]


# -- errored trials -----------------------------------------------------------------------------------------
def test_sub_scores_average_the_same_trials_as_the_score(project: Path, cli) -> None:
    (project / "flaky_agent.py").write_text(FLAKY_AGENT)
    result = cli("run", "read-file", "-k", "4", "--agent", "flaky_agent:run", "--rubric", "skill")
    assert result.exit_code == 1
    case = _latest(project)["cases"][0]
    # Trials 1 and 3: tool_accuracy 0 (no read_file), turn_efficiency 0 (the test has a turn budget and the agent
    # called no model trialrun saw: no turns seen is not a budget kept), output_quality 0.5 -> total 0.5.
    # Trials 2 and 4 raised before they could be graded: 0 in the total and 0 in each sub-score.
    assert [t["error"] is not None for t in case["trials"]] == [False, True, False, True]
    assert case["score"] == pytest.approx(0.25)
    assert case["sub_scores"] == pytest.approx({"tool_accuracy": 0.0, "turn_efficiency": 0.0, "output_quality": 0.25})
    assert "0.25  0.00  0.00  0.25" in result.output  # the table says the same

    # Every trial errored: a suite test is always scored, so it scores 0 in total and in each sub-score (one rule
    # for the case, the seed's tests view and the run's average).
    (project / "crash.py").write_text("def run(prompt, ctx):\n    raise RuntimeError('down')\n")
    cli("run", "read-file", "-k", "2", "--agent", "crash:run")
    data = _latest(project)
    case = data["cases"][0]
    assert case["score"] == 0.0 and data["tests"][0]["score"] == 0.0 and data["score"] == 0.0
    assert case["sub_scores"] == {"tool_accuracy": 0.0, "turn_efficiency": 0.0, "output_quality": 0.0}


def test_grading_by_hand_skips_trials_that_errored(project: Path, cli) -> None:
    (project / "flaky_agent.py").write_text(FLAKY_AGENT)
    cli("run", "read-file", "-k", "4", "--agent", "flaky_agent:run", "--rubric", "skill")
    result = cli("grade", "latest", "read-file", "0")
    assert result.exit_code == 0, result.output
    assert "read-file: output_quality 0 in trials 1, 3; score 0.25 -> 0.00; failed" in result.output
    case = _latest(project)["cases"][0]
    assert [t["score"] for t in case["trials"]] == [0.0, None, 0.0, None]  # 0 + 0 + 0: the errored ones left alone
    assert case["sub_scores"] == pytest.approx({"tool_accuracy": 0.0, "turn_efficiency": 0.0, "output_quality": 0.0})
    graded = [t["verdicts"][0]["details"]["quality_by"] for t in case["trials"] if t["verdicts"]]
    assert graded == ["hand", "hand"]


def test_grading_a_test_whose_every_trial_errored_says_they_errored(project: Path, cli) -> None:
    (project / "crash.py").write_text("def run(prompt, ctx):\n    raise RuntimeError('down')\n")
    cli("run", "read-file", "-k", "2", "--agent", "crash:run")
    result = cli("grade", "latest", "read-file", "0.5")
    assert result.exit_code == 2
    assert "test 'read-file' has nothing to grade" in result.output
    assert "2 of 2 trial(s) errored before they were graded" in result.output
    assert "not a suite test" not in result.output


# -- the hard turn limit ------------------------------------------------------------------------------------
def test_a_trial_cut_off_by_the_turn_limit_is_listed_even_when_it_passes(project: Path, cli, write_suite) -> None:
    config = project / "trialrun.toml"
    config.write_text(config.read_text().replace("skills = [", "turn_limit = 3\nskills = ["))
    write_suite(project / "state" / "eval" / "tests.json", [
        {"id": "loop", "prompt": "List forever", "expected_tools": ["list_dir"], "max_turns": 10,
         "success_criteria": "Lists the workspace"},
        {"id": "read-file", "prompt": "What do my notes say?", "expected_tools": ["read_file"], "max_turns": 2,
         "success_criteria": "Mentions the meeting with Sam"},
    ])
    (project / "loop.yaml").write_text(
        "loop:\n" + "  - tool_call: {name: list_dir, arguments: {}}\n" * 6 + "  - reply: done\n"
        "read-file:\n  - tool_call: {name: read_file, arguments: {path: notes.txt}}\n"
        "  - reply: The meeting with Sam is on Tuesday.\n"
    )
    result = cli("run", "all", "--model", "scripted:loop.yaml", "--rubric", "skill")
    assert result.exit_code == 0, result.output  # the skill's pass rule: 1.0 + 1.0 + 0 clamps to 1.0 >= 0.7
    # the budget above the hard limit is said at load, naming the file, line, test and field
    assert ("warning: state/eval/tests.json:2: test 'loop', field 'max_turns': 10 is above turn_limit 3: the agent "
            "is stopped after 3 turns, before the budget is used up") in result.output
    assert _latest(project)["cases"][0]["trials"][0]["status"] == "max_turns"
    notes = [line for line in result.output.splitlines() if "with no final response" in line]
    assert notes == ["! loop: 1 of 1 trials stopped at turn_limit 3 with no final response"]
    assert "read-file: " not in "\n".join(line for line in result.output.splitlines() if line.startswith("!"))

    report = cli("report")
    assert "! loop: 1 of 1 trials stopped at turn_limit 3 with no final response" in report.output
    markdown = report_markdown(load_report(project / "state" / "eval" / "latest.json"))
    assert "### ⏹️ Trials that did not complete" in markdown
    assert "- loop: 1 of 1 trials stopped at turn\\_limit 3 with no final response" in markdown
