"""compare decides on the values it shows, says pass/fail flips and sub-score moves on the test's line, and counts
a sub-score drop of the threshold or more as a regression."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from trialrun.report.compare import compare, delta_lines
from trialrun.report.results import CaseResult, RunReport

STARTED = datetime(2026, 7, 31, 14, 0, tzinfo=timezone.utc)


def _report(run_id: str, cases: dict[str, tuple[float, bool, dict[str, float] | None]]) -> RunReport:
    built = [CaseResult(name=name, passed=passed, pass_at_1=float(passed), pass_pow_k=float(passed), score=score,
                        sub_scores=subs) for name, (score, passed, subs) in cases.items()]
    return RunReport.build(built, trial_count=1, started_at=STARTED, duration_s=0.0, run_id=run_id)


def test_a_drop_shown_as_ten_points_is_a_regression() -> None:
    # hidden digits: 0.875 -> 0.778 is 0.097, but the line prints 0.88 -> 0.78, -0.10
    comparison = compare(_report("a", {"read-file": (0.875, True, None)}), _report("b", {"read-file": (0.778, True, None)}))
    [d] = comparison.cases
    assert d.delta == pytest.approx(-0.10) and d.regression and comparison.regressions == ["read-file"]
    lines = delta_lines(comparison)
    assert "read-file:  0.88 -> 0.78  ▼ -0.10" in lines
    assert "WARNING: regression in read-file: 0.88 -> 0.78 (-0.10, a drop of 0.10 or more)" in lines


def test_a_drop_shown_as_less_than_ten_points_is_not() -> None:
    comparison = compare(_report("a", {"t": (0.874, True, None)}), _report("b", {"t": (0.785, True, None)}))
    assert comparison.regressions == [] and "t:  0.87 -> 0.79  ▼ -0.08" in delta_lines(comparison)


def test_fail_to_pass_at_an_equal_score_is_an_improvement() -> None:
    comparison = compare(_report("a", {"t": (1.0, False, None)}), _report("b", {"t": (1.0, True, None)}))
    [d] = comparison.cases
    assert d.status == "improved" and d.newly_passing and not d.regression
    assert "t:  1.00 -> 1.00  ▲ now passes" in delta_lines(comparison)


def test_a_sub_score_that_moved_behind_a_clamped_total_is_said_and_a_big_drop_is_a_regression() -> None:
    full = {"tool_accuracy": 1.0, "turn_efficiency": 1.0, "output_quality": 0.5}
    lazy = {"tool_accuracy": 0.0, "turn_efficiency": 1.0, "output_quality": 0.5}
    small = {"tool_accuracy": 1.0, "turn_efficiency": 0.95, "output_quality": 0.5}
    comparison = compare(_report("a", {"t": (1.0, True, full), "u": (1.0, True, full)}),
                         _report("b", {"t": (1.0, True, lazy), "u": (1.0, True, small)}))
    lines = delta_lines(comparison)
    assert "t:  1.00 -> 1.00  = unchanged; tool_accuracy 1.00 -> 0.00 (-1.00)" in lines
    assert "u:  1.00 -> 1.00  = unchanged; turn_efficiency 1.00 -> 0.95 (-0.05)" in lines
    assert comparison.regressions == ["t"]
    assert comparison.cases[0].sub_score_regressions == ["tool_accuracy"]
    assert ("WARNING: regression in t: tool_accuracy 1.00 -> 0.00 (-1.00), a drop of 0.10 or more behind a score of "
            "1.00 -> 1.00") in lines
