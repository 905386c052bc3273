"""A case's sub-scores are means over the same trials as its score: a trial that errored before it was graded
counts 0 in the score and 0 in each sub-score."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from trialrun.expect._base import Verdict
from trialrun.report.compare import compare
from trialrun.report.results import CaseResult, RunReport, TrialError, TrialResult


def _graded(trial: int, accuracy: float, efficiency: float, quality: float) -> TrialResult:
    total = min(accuracy + efficiency + quality, 1.0)
    verdict = Verdict(total >= 0.7, "rubric", "score", score=total, kind="score",
                      details={"sub_scores": {"tool_accuracy": accuracy, "turn_efficiency": efficiency, "output_quality": quality}})
    return TrialResult(trial=trial, passed=verdict.passed, verdicts=[verdict], score=total)


def _errored(trial: int) -> TrialResult:
    return TrialResult(trial=trial, passed=False, error=TrialError(type="RuntimeError", message="boom", phase="invoke"))


def _case(trials: list[TrialResult]) -> CaseResult:
    return CaseResult.from_trials("read-file", trials, tags=[], mode="deterministic")


def test_an_errored_trial_scores_zero_in_every_sub_score() -> None:
    case = _case([_graded(1, 0.0, 1.0, 0.5), _errored(2), _graded(3, 0.5, 0.5, 0.25), _errored(4)])
    assert case.score == pytest.approx((1.0 + 0 + 1.0 + 0) / 4)
    assert case.sub_scores == pytest.approx({"tool_accuracy": 0.5 / 4, "turn_efficiency": 1.5 / 4, "output_quality": 0.75 / 4})


def test_without_errors_the_sub_scores_are_plain_means() -> None:
    case = _case([_graded(1, 1.0, 1.0, 0.5), _graded(2, 0.0, 0.5, 0.0)])
    assert case.score == pytest.approx(0.75)
    assert case.sub_scores == pytest.approx({"tool_accuracy": 0.5, "turn_efficiency": 0.75, "output_quality": 0.25})


def test_a_plain_case_no_trial_of_which_was_graded_has_neither() -> None:
    """A case without a score grader (no rubric) has no score to make up when every trial errored."""
    case = _case([_errored(1), _errored(2)])
    assert case.score is None and case.sub_scores is None


SUITE_METADATA = {"prompt": "What do my notes say?", "expected_tools": ["read_file"], "max_turns": 2,
                  "success_criteria": "mentions the notes"}


def test_a_suite_test_whose_every_trial_errored_scores_zero() -> None:
    """A suite test is always scored by the rubric: all trials errored is 0, in the case, the seed's tests view and
    the run's average, so no view leaves it out of the average while another counts it."""
    crashed = CaseResult.from_trials("list-dir", [_errored(1), _errored(2)], tags=[], mode="deterministic",
                                     metadata=SUITE_METADATA)
    assert crashed.score == 0.0
    assert crashed.sub_scores == {"tool_accuracy": 0.0, "turn_efficiency": 0.0, "output_quality": 0.0}
    good = CaseResult.from_trials("read-file", [_graded(1, 1.0, 1.0, 0.5)], tags=[], mode="deterministic",
                                  metadata=SUITE_METADATA)
    report = RunReport.build([good, crashed], trial_count=2, started_at=datetime(2025, 1, 2, tzinfo=timezone.utc),
                             duration_s=1)
    assert report.score == pytest.approx(0.5)
    assert [test.score for test in report.tests] == [1.0, 0.0]
    assert compare(report, report).avg_score_after == pytest.approx(report.score)
