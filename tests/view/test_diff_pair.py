"""Which two trials a diff shows first (`_history.diff_pair`): a failing trial of the later run beside a passing
trial of the earlier one; when the earlier run passed none but the later passed some (a flaky test), the later
run's own passing trial; and the runs list's config-changes cell, whole when short and expandable when long."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from trialrun.render.history import _changes_cell
from trialrun.report._history import RunEntry, diff_pair
from trialrun.report.results import CaseResult, RunReport, TrialResult

NAME = "flaky"


def _entry(stem: str, passed: list[bool]) -> RunEntry:
    trials = [TrialResult(trial=i, passed=p) for i, p in enumerate(passed, start=1)]
    case = CaseResult.from_trials(NAME, trials, tags=[], mode="deterministic")
    report = RunReport.build([case], trial_count=len(passed), started_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
                             duration_s=1.0)
    return RunEntry(stem, Path(f"/results/{stem}.json"), report)


def test_a_failing_trial_of_the_later_run_beside_a_passing_trial_of_the_earlier() -> None:
    pair = diff_pair(NAME, _entry("before", [False, True, True]), _entry("after", [True, True, False, False]))
    assert (pair.before, pair.after) == (("before", 2), ("after", 3))


def test_a_flaky_test_whose_earlier_run_passed_nothing_is_diffed_within_the_later_run() -> None:
    pair = diff_pair(NAME, _entry("before", [False, False]), _entry("after", [False, True, False]))
    assert (pair.before, pair.after) == (("after", 2), ("after", 1))


def test_with_nothing_passing_anywhere_the_first_trials_are_shown() -> None:
    pair = diff_pair(NAME, _entry("before", [False]), _entry("after", [False]))
    assert (pair.before, pair.after) == (("before", 1), ("after", 1))


def test_a_long_config_change_is_cut_with_the_rest_a_click_away() -> None:
    assert _changes_cell("model: a -> b") == "model:<wbr> a -&gt; b"  # (it may break after the key, not in a word)
    long = "; ".join(f"key{i}: {'x' * 20} -> {'y' * 20}" for i in range(10))
    cell = _changes_cell(long + "<b>")
    assert cell.startswith('<details class="changes-more"><summary>') and "&lt;b&gt;" in cell and "<b>" not in cell
    assert cell.count("key9") == 1  # the whole text, behind the summary
