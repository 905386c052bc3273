"""Cohen's kappa and the judges' agreement with hand grades (`report._agreement`), tested like code: against
worked examples computed by hand (no sklearn, no statsmodels), and by a seeded simulation whose kappa is known."""

from __future__ import annotations

import random
from datetime import datetime, timezone

import pytest

from trialrun.expect._base import Verdict
from trialrun.report._agreement import agreement, cohen_kappa, hand_pairs
from trialrun.report._grading import carry_forward, set_quality
from trialrun.report.results import CaseResult, RunReport, TrialResult


def _table(cells: list[list[int]], labels: list[str]) -> tuple[list[str], list[str]]:
    """Two raters' labels from a contingency table (rows: the first rater, columns: the second)."""
    first, second = [], []
    for row, counts in zip(labels, cells):
        for column, count in zip(labels, counts):
            first += [row] * count
            second += [column] * count
    return first, second


@pytest.mark.parametrize(("cells", "kappa"), [
    # the 2x2 examples of Wikipedia's "Cohen's kappa" article, each worked there by hand:
    ([[20, 5], [10, 15]], 0.4),                # p_o .70, p_e .50
    ([[45, 15], [25, 15]], 0.06 / 0.46),       # p_o .60, p_e .54: 0.1304
    ([[25, 35], [5, 35]], 0.14 / 0.54),        # p_o .60, p_e .46: 0.2593 (same agreement, other marginals)
])
def test_kappa_matches_the_textbook_two_by_two_examples(cells: list[list[int]], kappa: float) -> None:
    assert cohen_kappa(*_table(cells, ["yes", "no"])) == pytest.approx(kappa, abs=1e-12)


def test_kappa_of_a_three_level_table_worked_by_hand() -> None:
    # rows and columns 0 / 0.25 / 0.5; n 100, p_o (75 + 4 + 10) / 100 = .89;
    # marginals first .80 .10 .10, second .80 .05 .15: p_e .64 + .005 + .015 = .66; kappa .23 / .34
    cells = [[75, 1, 4], [5, 4, 1], [0, 0, 10]]
    assert cohen_kappa(*_table(cells, ["0", "0.25", "0.5"])) == pytest.approx(0.23 / 0.34, abs=1e-12)


def test_kappa_edges() -> None:
    assert cohen_kappa(["a", "b", "a"], ["a", "b", "a"]) == 1.0
    assert cohen_kappa(["a", "b"], ["b", "a"]) == -1.0  # always disagreeing, where chance would agree half the time
    assert cohen_kappa(["a", "a"], ["a", "a"]) is None  # both gave one level only: chance explains it all
    assert cohen_kappa([], []) is None
    with pytest.raises(ValueError, match="same items"):
        cohen_kappa(["a"], ["a", "b"])


@pytest.mark.parametrize("p", [0.0, 0.35, 0.8])
def test_kappa_recovers_a_known_agreement_beyond_chance_in_simulation(p: float) -> None:
    """A second rater who copies the first with probability p, else picks one of the 3 levels at random (the first
    picks uniformly too): p_o = p + (1 - p) / 3, p_e = 1/3, so kappa = p exactly in expectation."""
    rng = random.Random(20260731)
    levels = [0.0, 0.25, 0.5]
    first = [rng.choice(levels) for _ in range(20_000)]
    second = [a if rng.random() < p else rng.choice(levels) for a in first]
    kappa = cohen_kappa(first, second)
    assert kappa is not None and kappa == pytest.approx(p, abs=0.02)  # the SE here is about 0.006


def _report(qualities: list[float], by: str = "heuristic", run_id: str = "eval_1") -> RunReport:
    trials = [TrialResult(trial=n, passed=True, score=1.0, verdicts=[Verdict(
        True, "rubric(...)", "score", 1.0, "score",
        {"sub_scores": {"tool_accuracy": 1.0, "turn_efficiency": 1.0, "output_quality": q}, "threshold": 0.7,
         "rubric": "balanced", "quality_by": by})]) for n, q in enumerate(qualities, start=1)]
    case = CaseResult.from_trials("t", trials, tags=[], mode="deterministic")
    return RunReport.build([case], trial_count=len(trials), started_at=datetime.now(timezone.utc), duration_s=0,
                           run_id=run_id, config_snapshot={"judge": "openai:gpt-4.1-mini" if by == "judge" else "heuristic"})


def test_the_judges_agreement_with_the_hand_grades_of_a_run() -> None:
    report = _report([0.5, 0.25, 0.0, 0.5])
    audit = {"by": "ana", "at": "2026-07-31T14:00:00+00:00", "via": "test"}
    for trial, human in ((1, 0.45), (2, 0.5), (3, 0.1), (4, 0.15)):  # nearest levels: 0.5, 0.5, 0, 0.25
        report, _ = set_quality(report, "t", human, audit, trial=trial)
    assert [(p.judge, p.machine, p.human) for p in hand_pairs(report)] == [
        ("heuristic", 0.5, 0.45), ("heuristic", 0.25, 0.5), ("heuristic", 0.0, 0.1), ("heuristic", 0.5, 0.15)]
    (found,) = agreement([report])
    assert found.judge == "heuristic" and found.n == 4 and found.agreed == 2
    # by hand: judge 0.5 0.25 0 0.5, person 0.5 0.5 0 0.25; p_o 2/4; p_e (0.5: 2*2, 0.25: 1*1, 0: 1*1)/16 = 6/16
    assert found.kappa == pytest.approx((0.5 - 6 / 16) / (1 - 6 / 16)) == pytest.approx(0.2)
    assert found.mean_difference == pytest.approx((0.05 + 0.25 + 0.1 + 0.35) / 4)
    # the same grades carried onto a regrade by the same judge are the same pairs, counted once; another judge's
    # regrade adds its own
    regraded, carried = carry_forward(report, _report([0.5, 0.25, 0.0, 0.5], run_id="eval_2"))
    assert len(carried) == 4 and [p.human for p in hand_pairs(regraded)] == [0.45, 0.5, 0.1, 0.15]
    (again,) = agreement([report, regraded])
    assert again.n == 4, again
    judged = _report([0.5, 0.5, 0.0, 0.25], by="judge", run_id="eval_3")
    for trial, human in ((1, 0.45), (2, 0.5), (3, 0.1), (4, 0.15)):
        judged, _ = set_quality(judged, "t", human, {**audit, "origin": "eval_1"}, trial=trial)
    both = agreement([report, judged])
    assert [(j.judge, j.n, j.agreed) for j in both] == [("heuristic", 4, 2), ("openai:gpt-4.1-mini", 4, 4)]
    assert both[1].kappa == 1.0
