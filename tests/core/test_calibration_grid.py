"""compare's and the A/B run's claims, calibrated across a grid, not at one point: seeded simulations with a known
truth (each trial passes with a known probability) over numbers of tests (1, 2, 5, 20), trials per test (1, 2, 3, 5,
10) and pass rates (0.5, 0.9, 0.99, 1.0), each cell run through the one function that decides (`_verdict.judge`,
`_sequential.SequentialTest`):

- two runs that differ only by chance (A/A) fail the gate at most 5% of the time, in every cell;
- when the pass rate truly drops by exactly the threshold, "not worse" (the run's, and each test's) is claimed at
  most 5% of the time; the run's 95% intervals of the change in pass@1 and pass^k hold the truth;
- at compare's "trials needed" a drop of that size is told at least 80% of the time (the run's pooled claim, and one
  test's own claim inside a suite), over rates 0.5-1.0, drops 0.1-0.5 and 1-20 tests;
- one test's interval, by exact enumeration of every outcome (no simulation error): its coverage at every pair of
  trial counts and pass rates, 0 and 1 included;
- the sequential test of an A/B run, looked at after every one of 30 rounds, with 2 and 5 arms (Bonferroni): an A/A
  run says any arm worse at most 5% of the time, and a drop of exactly the threshold is called not worse at most 5%.

Each cell's count is small by default so CI stays fast (the figures are then coarse, and every cell is checked with
its own simulation error and the whole grid pooled against the bound); set TRIALRUN_SIMULATIONS (compare) and
TRIALRUN_SIM_RUNS (sequential) to 2000 for the audit's figures. Run with `-s` to see them.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Callable

import pytest
from scipy import stats

from trialrun.report._intervals import change_interval
from trialrun.report._power import level_for, trials_needed
from trialrun.report._sequential import SequentialTest
from trialrun.report._stats import ALPHA, Table
from trialrun.report._verdict import SharedTest, judge

COUNT = int(os.environ.get("TRIALRUN_SIMULATIONS", "0")) or 60
SEQUENTIAL = int(os.environ.get("TRIALRUN_SIM_RUNS", "0")) or 20
THRESHOLD = 0.10
TESTS = (1, 2, 5, 20)
TRIALS = (1, 2, 3, 5, 10)
RATES = (0.5, 0.9, 0.99, 1.0)
GRID = [(m, k, rate) for m in TESTS for k in TRIALS for rate in RATES]


def _allowance(rate: float, count: int) -> float:
    """How far above `rate` a simulated share may land by chance: 2.33 standard errors (one-sided 99%)."""
    return 2.33 * math.sqrt(rate * (1 - rate) / count)


def _say(record_property: Callable[[str, object], None], capsys: pytest.CaptureFixture[str], name: str,
         value: object) -> None:
    record_property(name, value)
    with capsys.disabled():
        print(f"\n[grid] {name}: {value}")


def _draw(rng: random.Random, rate: float, trials: int) -> int:
    return sum(rng.random() < rate for _ in range(trials))


def _tables(rng: random.Random, m: int, k: int, before: float, after: float) -> list[SharedTest]:
    return [SharedTest(f"t{i}", Table(_draw(rng, before, k), k, _draw(rng, max(0.0, after), k), k), False, False)
            for i in range(m)]


def _cell(m: int, k: int, rate: float, count: int) -> dict[str, float]:
    """One cell: A/A gate failures, and at a true drop of exactly the threshold, "not worse" claimed (the run's, any
    test's, each test's) and the run's intervals' coverage."""
    rng = random.Random(f"{m}-{k}-{rate}")
    out = dict.fromkeys(("aa_gate", "drop_run_not_worse", "drop_test_not_worse", "covered_p1", "covered_pk"), 0.0)
    for _ in range(count):
        out["aa_gate"] += judge(_tables(rng, m, k, rate, rate), threshold=THRESHOLD).gate.failed
        pairs = _tables(rng, m, k, rate, rate - THRESHOLD)
        verdicts = judge(pairs, threshold=THRESHOLD)
        out["drop_run_not_worse"] += verdicts.run.word == "not worse"
        out["drop_test_not_worse"] += sum(j.word == "not worse" for j in verdicts.tests.values()) / m
        chance = verdicts.run.chance
        assert chance is not None and chance.pass_pow_k_change is not None
        true_pk = (rate - THRESHOLD) ** k - rate ** k
        out["covered_p1"] += chance.change[1] - 1e-12 <= -THRESHOLD <= chance.change[2] + 1e-12
        out["covered_pk"] += chance.pass_pow_k_change[1] - 1e-12 <= true_pk <= chance.pass_pow_k_change[2] + 1e-12
    return {name: value / count for name, value in out.items()}


def test_the_gate_and_not_worse_are_calibrated_in_every_cell(record_property, capsys) -> None:
    cells = {(m, k, rate): _cell(m, k, rate, COUNT) for m, k, rate in GRID}
    worst = {name: max(cells.items(), key=lambda item: item[1][name]) for name in
             ("aa_gate", "drop_run_not_worse", "drop_test_not_worse")}
    least = {name: min(cells.items(), key=lambda item: item[1][name]) for name in ("covered_p1", "covered_pk")}
    for name, (where, figures) in [*worst.items(), *least.items()]:
        _say(record_property, capsys, f"{name}, {'highest' if name in worst else 'lowest'} of {len(GRID)} cells "
                                      f"x {COUNT} (tests, trials, rate)", (where, round(figures[name], 4)))
    pooled = {name: sum(c[name] for c in cells.values()) / len(cells) for name in worst}
    _say(record_property, capsys, "pooled over the grid", {k: round(v, 4) for k, v in pooled.items()})
    for where, figures in cells.items():
        for name in worst:
            assert figures[name] <= ALPHA + _allowance(ALPHA, COUNT), (name, where, figures)
        for name in least:
            assert figures[name] >= 1 - ALPHA - _allowance(ALPHA, COUNT), (name, where, figures)
    for name, value in pooled.items():  # the whole grid against the bound: small per-cell counts add up
        assert value <= ALPHA + _allowance(ALPHA, COUNT * len(GRID)), (name, value)


POWER_GRID = [(tests, rate, drop) for tests in (1, 2, 5, 10, 20) for rate in (0.5, 0.7, 0.9, 0.95, 1.0)
              for drop in (0.1, 0.2, 0.3, 0.5)]


@pytest.mark.parametrize("pooled", [True, False], ids=["the run's pooled claim", "one test's own claim"])
def test_the_trials_needed_give_the_stated_power_across_the_grid(pooled: bool, record_property, capsys) -> None:
    """At `trials_needed` (compare's "about N trials in each run would tell"), a drop of that size is called worse at
    least 80% of the time: every test dropping (the run's claim), or one test of several (its own claim, Holm's
    share of alpha). Cells needing more than a budget of trials are left to the big runs (TRIALRUN_SIMULATIONS)."""
    count = max(60, COUNT // 2)
    budget = 400 if COUNT < 1000 else 2500  # tests x trials per simulated run
    results = {}
    for tests, rate, drop in POWER_GRID:
        needed = trials_needed(rate, drop, tests=tests if pooled else 1, level=level_for(tests, pooled=pooled))
        if needed * tests > budget:
            continue
        rng = random.Random(f"{tests}-{rate}-{drop}-{pooled}")
        told = 0
        for _ in range(count):
            pairs = [SharedTest(f"t{i}", Table(_draw(rng, rate, needed), needed,
                                               _draw(rng, rate - (drop if pooled or i == 0 else 0.0), needed), needed),
                                False, False) for i in range(tests)]
            verdicts = judge(pairs, threshold=drop)
            told += (verdicts.run if pooled else verdicts.tests["t0"]).word == "worse"
        results[tests, rate, drop] = (needed, told / count)
    (where, (needed, weakest)) = min(results.items(), key=lambda item: item[1][1])
    mean = sum(power for _, power in results.values()) / len(results)
    _say(record_property, capsys, f"power at the trials needed, {'pooled' if pooled else 'one test'}: "
                                  f"{len(results)} cells x {count}, lowest (tests, rate, drop)", (where, needed, weakest))
    _say(record_property, capsys, f"mean power, {'pooled' if pooled else 'one test'}", round(mean, 4))
    assert len(results) >= 20
    for where, (needed, power) in results.items():  # ~100 cells: each allowed 3.5 standard errors, not 2.33
        assert power >= 0.80 - 1.5 * _allowance(0.80, count), (where, needed, power)
    assert mean >= 0.80


def _exact_coverage(nb: int, na: int, before: float, after: float) -> tuple[float, float]:
    """One test's interval by exact enumeration of both runs' outcomes: (two-sided coverage, the chance its low end
    lies above the true change, which is what a false "not worse" needs)."""
    pb, pa = stats.binom.pmf(range(nb + 1), nb, before), stats.binom.pmf(range(na + 1), na, after)
    covered = above = 0.0
    true = after - before
    for x in range(nb + 1):
        for y in range(na + 1):
            interval = change_interval([Table(x, nb, y, na)])
            assert interval is not None
            _, low, high = interval
            covered += pb[x] * pa[y] * (low - 1e-12 <= true <= high + 1e-12)
            above += pb[x] * pa[y] * (low > true + 1e-12)
    return float(covered), float(above)  # (plain floats: xdist sends recorded properties between processes)


EXACT_RATES = (0.0, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 1.0)


@pytest.mark.parametrize("nb, na", [(k, k) for k in (1, 2, 3, 5, 10, 20)] + [(1, 5), (3, 10), (10, 3), (2, 20)])
def test_one_test_s_interval_covers_at_every_rate_exactly(nb: int, na: int, record_property, capsys) -> None:
    figures = {(b, a): _exact_coverage(nb, na, b, a) for b in EXACT_RATES for a in EXACT_RATES}
    where, (covered, _) = min(figures.items(), key=lambda item: item[1][0])
    high_where, (_, above) = max(figures.items(), key=lambda item: item[1][1])
    _say(record_property, capsys, f"one test {nb} -> {na} trials: lowest coverage (before, after), highest chance "
                                  f"its low end is above the truth", (where, round(covered, 4), high_where, round(above, 4)))
    assert covered >= 0.95
    assert above <= ALPHA / 2 + 0.01  # one end of a 95% interval: a false "not worse" is rarer than 5%


@pytest.mark.parametrize("nb, na", [(50, 5), (20, 5), (5, 20)])
def test_five_trials_against_many_cover_93_75_percent_not_95(nb: int, na: int) -> None:
    """Where the grid found coverage below 95% (left as it is, see the audit's report): five trials of a test at 0.5
    against many of a test whose rate is pinned down (1.0 or 0.0). The five land all-pass or all-fail 2/32 of the
    time, and the interval then misses the truth (its half-width at 5/5 is ~0.43 here; Wilson's interval for 5/5,
    [0.57, 1], excludes 0.5 too): 93.75% exactly. The low end lies above the truth at most 1/32 of the time, so a
    false "not worse" stays below 5%."""
    before, after = (1.0, 0.5) if na == 5 else (0.5, 0.0)
    covered, above = _exact_coverage(nb, na, before, after)
    assert covered == pytest.approx(1 - 2 / 32, abs=1e-9)
    assert above <= 1 / 32 + 1e-9


SEQ_GRID = [(arms, m, rate) for arms in (2, 5) for m in TESTS for rate in RATES]


def test_the_sequential_test_looked_at_every_round_is_calibrated_in_every_cell(record_property, capsys) -> None:
    """Each arm against the baseline at alpha / (arms - 1), as the A/B runner does; the baseline's trials are shared
    by every arm's test (they are the same trials), and the capital is looked at after each of 30 rounds."""
    cap = 30
    cells = {}
    for arms, m, rate in SEQ_GRID:
        rng = random.Random(f"seq-{arms}-{m}-{rate}")
        others = arms - 1
        false_worse = false_not_worse = 0
        for _ in range(SEQUENTIAL):
            same = [SequentialTest(THRESHOLD, ALPHA / others) for _ in range(others)]
            dropped = [SequentialTest(THRESHOLD, ALPHA / others) for _ in range(others)]
            for _ in range(cap):
                base = [rng.random() < rate for _ in range(m)]
                for test in same:
                    test.add_round([(b, rng.random() < rate) for b in base])
                for test in dropped:
                    test.add_round([(b, rng.random() < rate - THRESHOLD) for b in base])
            false_worse += any(t.result().worse_at is not None for t in same)
            false_not_worse += any(t.result().not_worse_at is not None for t in dropped)
        cells[arms, m, rate] = (false_worse / SEQUENTIAL, false_not_worse / SEQUENTIAL)
    for index, name in enumerate(("A/A: any arm falsely worse", "drop = threshold: any arm falsely not worse")):
        where, figures = max(cells.items(), key=lambda item: item[1][index])
        pooled = sum(f[index] for f in cells.values()) / len(cells)
        _say(record_property, capsys, f"sequential, {name}: highest of {len(cells)} cells x {SEQUENTIAL} (arms, tests, "
                                      f"rate), pooled", (where, figures[index], round(pooled, 4)))
        assert pooled <= ALPHA + _allowance(ALPHA, SEQUENTIAL * len(cells))
        for where, figures in cells.items():
            assert figures[index] <= ALPHA + _allowance(ALPHA, SEQUENTIAL), (name, where, figures)
