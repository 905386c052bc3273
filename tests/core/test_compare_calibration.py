"""compare's verdict is calibrated, not just computed: simulated runs of a live-like model whose pass rates are known
(each trial passes with a known probability, from a seeded stream) show that

- two runs of the same model (A/A) make the gate fail at most 5% of the time (within simulation error);
- a suite-wide drop from 0.9 to 0.55 over 10 tests x 5 trials fails the gate in at least 95% of simulated pairs;
- at the "trials needed" compare states, a drop of the stated size is told about 80% of the time (its power);
- the 95% intervals of the change in pass@1 and pass^k hold the true change at least 95% of the time.

Each simulation runs the one function that decides the words and the gate (`_verdict.judge`), on the trial counts
compare gives it; `test_the_simulation_runs_what_compare_runs` shows compare() on real reports decides the same.
The number of simulated comparisons is TRIALRUN_SIMULATIONS (default 2,000: a few seconds each); the figures are
printed and recorded (`record_property`) so CI logs keep them. The end-to-end run through the CLI against a live
model on loopback is in tests/cli/test_compare_live.py.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Callable
from datetime import datetime, timezone

import pytest

from trialrun.report._power import level_for, smallest_drop, trials_needed
from trialrun.report._stats import Table
from trialrun.report._verdict import SharedTest, Verdicts, judge
from trialrun.report.compare import compare
from trialrun.report.results import CaseResult, RunReport, TrialResult

COUNT = int(os.environ.get("TRIALRUN_SIMULATIONS", "2000"))
THRESHOLD = 0.10


def _draw(rng: random.Random, rate: float, trials: int) -> int:
    return sum(rng.random() < rate for _ in range(trials))


def _pairs(rng: random.Random, before: list[float], after: list[float], trials: int) -> list[SharedTest]:
    """One simulated comparison: each test's trials before and after, drawn at its known pass rates."""
    return [SharedTest(f"t{i}", Table(_draw(rng, b, trials), trials, _draw(rng, a, trials), trials), False, False)
            for i, (b, a) in enumerate(zip(before, after))]


def _simulate(before: list[float], after: list[float], trials: int, seed: int, count: int = COUNT,
              each: Callable[[list[SharedTest], Verdicts], None] | None = None) -> float:
    """The share of `count` simulated comparisons whose gate failed."""
    rng = random.Random(seed)
    failed = 0
    for _ in range(count):
        pairs = _pairs(rng, before, after, trials)
        verdicts = judge(pairs, threshold=THRESHOLD)
        failed += verdicts.gate.failed
        if each is not None:
            each(pairs, verdicts)
    return failed / count


def _error(rate: float, count: int = COUNT) -> float:
    """Two binomial standard errors of a simulated rate: the simulation's own error."""
    return 2 * math.sqrt(rate * (1 - rate) / count)


def _say(record_property: Callable[[str, object], None], capsys: pytest.CaptureFixture[str], name: str,
         value: object) -> None:
    record_property(name, value)
    with capsys.disabled():
        print(f"\n[calibration] {name}: {value}")


FLAKY = [0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0, 1.0, 0.3, 0.99]  # a suite of tests that pass at different rates


@pytest.mark.parametrize("rates, trials", [([0.9] * 10, 5), (FLAKY, 5), ([0.5] * 10, 3), ([0.8] * 2, 10)],
                         ids=["10x5 at 0.9", "10x5 mixed", "10x3 at 0.5", "2x10 at 0.8"])
def test_a_a_comparisons_raise_at_most_five_percent_false_alarms(rates: list[float], trials: int, record_property,
                                                                 capsys) -> None:
    rate = _simulate(rates, rates, trials, seed=101)
    _say(record_property, capsys, f"A/A false alarms ({len(rates)} tests x {trials} trials, {COUNT} pairs)", rate)
    assert rate <= 0.05 + _error(0.05)


def test_a_suite_wide_drop_from_0_9_to_0_55_fails_the_gate(record_property, capsys) -> None:
    rate = _simulate([0.9] * 10, [0.55] * 10, 5, seed=202)
    _say(record_property, capsys, f"gate fails on 0.9 -> 0.55 (10 tests x 5 trials, {COUNT} pairs)", rate)
    assert rate >= 0.95


@pytest.mark.parametrize("rate, drop, tests", [(0.9, 0.3, 1), (1.0, 0.1, 1), (0.9, 0.35, 10), (0.7, 0.2, 5),
                                               (0.95, 0.1, 20)])
def test_the_trials_needed_tell_the_drop_four_times_in_five(rate: float, drop: float, tests: int, record_property,
                                                            capsys) -> None:
    """Power matches the stated "trials needed": at that many trials the run's claim calls the drop worse about 80%
    of the time (not much less: the figure is not optimistic; not near 100%: it is not padded), and at 60% of the
    trials clearly less often."""
    needed = trials_needed(rate, drop, tests=tests, level=level_for(tests, pooled=True))
    count = max(400, COUNT // 4)  # the bigger runs cost more per comparison

    def power(trials: int, seed: int) -> float:
        rng = random.Random(seed)
        told = sum(judge(_pairs(rng, [rate] * tests, [rate - drop] * tests, trials), threshold=drop).run.word == "worse"
                   for _ in range(count))
        return told / count

    at_needed, at_fewer = power(needed, 303), power(max(1, round(needed * 0.6)), 304)
    _say(record_property, capsys, f"power at {rate} -> {rate - drop:.2f}, {tests} test(s), {needed} trials "
                                  f"(and at 60% of them)", (at_needed, at_fewer))
    assert 0.80 - _error(0.8, count) <= at_needed <= 0.97
    assert at_fewer < at_needed - 0.1


@pytest.mark.parametrize("before, after, trials", [([0.9] * 10, [0.9] * 10, 5), ([0.9] * 10, [0.55] * 10, 5),
                                                   (FLAKY, [max(0.0, r - 0.2) for r in FLAKY], 5),
                                                   ([0.5] * 10, [0.5] * 10, 5), ([0.8] * 50, [0.8] * 50, 3),
                                                   ([0.7], [0.7], 20)],
                         ids=["A/A 0.9", "0.9 -> 0.55", "mixed, -0.2", "A/A 0.5", "50x3 at 0.8", "one test x 20"])
def test_the_intervals_hold_the_true_change(before: list[float], after: list[float], trials: int, record_property,
                                            capsys) -> None:
    m = len(before)
    true_p1 = sum(a - b for a, b in zip(after, before)) / m
    true_pk = sum(a ** trials - b ** trials for a, b in zip(after, before)) / m
    held = {"pass@1": 0, "pass^k": 0}
    count = COUNT if m <= 10 else max(400, COUNT // 4)

    def check(pairs: list[SharedTest], verdicts: Verdicts) -> None:
        chance = verdicts.run.chance
        assert chance is not None and chance.pass_pow_k_change is not None
        held["pass@1"] += chance.change[1] - 1e-12 <= true_p1 <= chance.change[2] + 1e-12
        held["pass^k"] += chance.pass_pow_k_change[1] - 1e-12 <= true_pk <= chance.pass_pow_k_change[2] + 1e-12

    _simulate(before, after, trials, seed=404, count=count, each=check)
    coverage = {name: n / count for name, n in held.items()}
    _say(record_property, capsys, f"interval coverage ({m} tests x {trials} trials, {count} pairs)", coverage)
    for value in coverage.values():
        assert value >= 0.95 - _error(0.95, count)


STARTED = datetime(2026, 7, 1, tzinfo=timezone.utc)


def _report(run_id: str, counts: list[tuple[int, int]]) -> RunReport:
    """A run of a live model: each test's trials, `passed` of `run` passing, each recorded as talking to it."""
    cases = [CaseResult.from_trials(f"t{i}", [TrialResult(trial=n + 1, passed=n < passed, models=["live"])
                                              for n in range(run)], tags=[], mode="deterministic")
             for i, (passed, run) in enumerate(counts)]
    return RunReport.build(cases, trial_count=max(run for _, run in counts), started_at=STARTED, duration_s=0,
                           run_id=run_id)


def test_the_simulation_runs_what_compare_runs() -> None:
    """compare() on real reports of simulated runs decides the same words and gate as the simulation's calls."""
    rng = random.Random(505)
    for _ in range(60):
        pairs = _pairs(rng, [0.9] * 6, [rng.choice([0.9, 0.6, 0.3])] * 6, 5)
        expected = judge(pairs, threshold=THRESHOLD)
        tables = [p.table for p in pairs if p.table is not None]
        comparison = compare(_report("a", [(t.passed_before, t.run_before) for t in tables]),
                             _report("b", [(t.passed_after, t.run_after) for t in tables]))
        assert comparison.pairing == "live"
        assert {d.name: d.word for d in comparison.cases} == {n: j.word for n, j in expected.tests.items()}
        assert comparison.run is not None and comparison.run.word == expected.run.word
        assert comparison.gate is not None and comparison.gate.failed == expected.gate.failed


@pytest.mark.parametrize("pooled", [True, False], ids=["the run", "one test"])
def test_the_smallest_drop_cannot_tell_states_is_where_the_trials_needed_are_met(pooled: bool) -> None:
    """"Cannot tell" says the smallest drop its trials would have seen (80% power): every drop from it up (in
    hundredths) needs at most the trials run and every smaller one needs more, so the power the tests above show for
    the trials needed holds for it; None exactly when not even a drop to 0 would be told."""
    for rate in (0.3, 0.5, 0.8, 0.9, 1.0):
        for trials in (1, 3, 5, 8, 20, 100):
            for tests in (1, 3, 10, 50):
                level, over = level_for(tests, pooled=pooled), tests if pooled else 1
                said = smallest_drop(rate, trials, tests=over, level=level)
                told = [d for d in range(1, 101) if trials_needed(rate, d / 100, tests=over, level=level) <= trials]
                if told:  # the drops told are the ones from the smallest up: no gap a bisection could skip
                    assert told == list(range(told[0], 101)), (rate, trials, tests, told)
                assert said == (told[0] / 100 if told else None), (rate, trials, tests, said, told[:3])
