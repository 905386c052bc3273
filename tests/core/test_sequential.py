"""The sequential test of an A/B run (`report._sequential`), tested like code: its exact quantities against scipy,
and by seeded simulation with a known truth (arms whose tests pass with known probabilities):

- A/A with a look after every round: a false "worse" at most alpha of the time (over >= 2,000 simulated runs; set
  TRIALRUN_SIM_RUNS for more), while the same harness catches a fixed-design test looked at every round (its
  false alarms well above alpha), so the simulation can see a broken test;
- at a true drop of exactly the threshold, a false "not worse" at most alpha of the time;
- both ends of its interval cover the true change at any stop;
- its power and the trials it uses, against a fixed design at the same power (McNemar's exact one-sided test on the
  same pairs, at the same level; its power computed exactly with scipy's binomial distribution).

Run with `-s` to see the figures.
"""

from __future__ import annotations

import math
import os
import random
import statistics

import numpy
import pytest
from scipy import stats

from trialrun.report._sequential import BET_GRID, SequentialTest, capital, interval
from trialrun.report._stats import ALPHA

RUNS = max(2000, int(os.environ.get("TRIALRUN_SIM_RUNS", "2000")))
CAP = 30


def _sim_error(rate: float, runs: int) -> float:
    """A simulated rate's allowance above its bound: 2.33 standard errors (one-sided 99%)."""
    return 2.33 * math.sqrt(rate * (1 - rate) / runs)


def _round(rng: random.Random, before: list[float], after: list[float]) -> list[tuple[bool, bool]]:
    return [(rng.random() < p, rng.random() < q) for p, q in zip(before, after)]


# -- exact quantities ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("pairs", [1, 3, 8])
def test_the_capital_is_exactly_one_on_average_when_nothing_changed(pairs: int) -> None:
    """Under "no change" (a pair falls as often as it rises; ties as they come) each bet is a fair game: the mixed
    capital's expectation is exactly 1, summed over every outcome with scipy's multinomial probabilities; under a
    rise (the worse test's hypothesis, strictly) it is below 1; the not-worse test is fair at a drop of exactly
    its threshold."""
    def expected(probabilities: tuple[float, float, float], value: float, below: bool) -> float:
        total = 0.0
        for fell in range(pairs + 1):
            for rose in range(pairs + 1 - fell):
                counts = (fell, pairs - fell - rose, rose)
                total += stats.multinomial.pmf(counts, pairs, probabilities) * capital(counts, value, below=below)
        return total

    assert expected((0.2, 0.6, 0.2), 0.0, True) == pytest.approx(1.0, abs=1e-12)
    assert expected((0.1, 0.6, 0.3), 0.0, True) < 1.0  # the arm improved: the worse test can only lose
    assert expected((0.3, 0.5, 0.2), -0.1, False) == pytest.approx(1.0, abs=1e-12)  # a drop of exactly 0.10
    assert expected((0.4, 0.5, 0.1), -0.1, False) < 1.0  # a bigger drop: the not-worse test can only lose


def test_the_capital_is_the_mixture_of_products_over_the_pairs_in_any_order() -> None:
    rng = random.Random(3)
    for _ in range(50):
        changes = [rng.choice((-1, 0, 0, 1)) for _ in range(rng.randrange(1, 40))]
        value = rng.uniform(-0.5, 0.5)
        counts = (changes.count(-1), changes.count(0), changes.count(1))
        rng.shuffle(changes)
        below = [statistics.fmean(math.prod(1 - f / (1 - value) * (d - value) for d in changes) for f in BET_GRID)]
        above = [statistics.fmean(math.prod(1 + f / (1 + value) * (d - value) for d in changes) for f in BET_GRID)]
        assert capital(counts, value, below=True) == pytest.approx(below[0], rel=1e-9)
        assert capital(counts, value, below=False) == pytest.approx(above[0], rel=1e-9)


def test_the_interval_is_where_neither_test_rejects() -> None:
    bar = 1 / ALPHA
    for counts in [(30, 60, 10), (5, 90, 5), (0, 10, 40), (12, 0, 0)]:
        low, high = interval(counts)
        assert -1 <= low < high <= 1
        assert capital(counts, high + 1e-6, below=True) >= bar > capital(counts, high - 1e-6, below=True)
        if low > -1:
            assert capital(counts, low - 1e-6, below=False) >= bar > capital(counts, low + 1e-6, below=False)
        observed = (counts[2] - counts[0]) / sum(counts)
        assert low <= observed <= high


def test_a_verdict_is_kept_and_agrees_with_the_interval() -> None:
    test = SequentialTest()
    test.add_round([(True, False)] * 10)
    assert test.verdict == "worse"
    for _ in range(20):  # the arm recovers afterwards: the verdict stays (Ville: the first crossing decides)
        test.add_round([(True, True)] * 10)
    result = test.result()
    assert result.verdict == "worse" and result.decided_at == 1 and result.high < 0


# -- simulation: false alarms under continuous monitoring --------------------------------------------------------
#: The fewest falls among d discordant pairs at which McNemar's exact one-sided test rejects (scipy's binomial).
_CRITICAL = [0] + [int(stats.binom.ppf(1 - ALPHA, d, 0.5)) + 1 for d in range(1, 10 * CAP + 1)]


def _aa_false_worse(rng: random.Random, rates: list[float]) -> tuple[bool, bool]:
    """One A/A run looked at after each of CAP rounds, its pass rates drifting round by round alike in both arms:
    (the sequential test ever said worse, a fixed-design test repeated every round ever did)."""
    test = SequentialTest()
    fell = rose = 0
    naive = False
    for number in range(CAP):
        drift = 0.15 * math.sin(number / 4)  # the provider's drift: it hits both arms alike
        today = [min(0.99, max(0.01, p + drift)) for p in rates]
        pairs = _round(rng, today, today)
        test.add_round(pairs)
        fell += sum(1 for a, b in pairs if a and not b)
        rose += sum(1 for a, b in pairs if b and not a)
        if fell + rose and fell >= _CRITICAL[fell + rose]:  # McNemar's exact test, one-sided, at every look
            naive = True
    return test.verdict == "worse", naive


def test_a_and_a_looked_at_every_round_says_worse_at_most_alpha_of_the_time() -> None:
    rng = random.Random(20260807)
    rates = [0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.9, 0.95, 0.97]
    outcomes = [_aa_false_worse(rng, rates) for _ in range(RUNS)]
    sequential = sum(s for s, _ in outcomes) / RUNS
    naive = sum(n for _, n in outcomes) / RUNS
    print(f"\nA/A, 10 tests, {CAP} looks, {RUNS} runs: sequential false 'worse' {sequential:.4f}; "
          f"a fixed-design test looked at every round {naive:.4f} (alpha {ALPHA})")
    assert sequential <= ALPHA + _sim_error(ALPHA, RUNS)
    assert naive > ALPHA + 2 * _sim_error(ALPHA, RUNS)  # the harness sees a test that monitoring breaks


def test_at_a_drop_of_exactly_the_threshold_not_worse_is_claimed_at_most_alpha_of_the_time() -> None:
    rng = random.Random(11)
    before = [0.9] * 10
    after = [0.8] * 10  # a drop of exactly 0.10
    claimed = 0
    for _ in range(RUNS):
        test = SequentialTest(threshold=0.10)
        for _ in range(CAP):
            test.add_round(_round(rng, before, after))
        claimed += test.result().not_worse_at is not None  # ever claimed, looking every round
    rate = claimed / RUNS
    print(f"\ntrue drop 0.10 = the threshold, {CAP} looks, {RUNS} runs: false 'not worse' {rate:.4f}")
    assert rate <= ALPHA + _sim_error(ALPHA, RUNS)


def test_each_end_of_the_interval_covers_the_true_change_at_the_stop() -> None:
    rng = random.Random(5)
    before = [0.9, 0.8, 0.7, 0.6, 0.95]
    after = [0.7, 0.8, 0.65, 0.4, 0.9]
    true = statistics.fmean(b - a for a, b in zip(before, after))
    above = below = 0
    runs = RUNS // 2
    for _ in range(runs):
        test = SequentialTest()
        for _ in range(CAP):
            test.add_round(_round(rng, before, after))
            if test.decided:
                break
        low, high = test.interval()
        above += true > high
        below += true < low
    print(f"\ntrue change {true:+.2f}: above the interval {above / runs:.4f}, below it {below / runs:.4f}")
    assert above / runs <= ALPHA + _sim_error(ALPHA, runs)
    assert below / runs <= ALPHA + _sim_error(ALPHA, runs)


# -- simulation: power and the trials it takes, against the fixed design --------------------------------------
def _fixed_power(tests: int, trials: int, p_before: float, p_after: float, alpha: float = ALPHA) -> float:
    """The exact power of McNemar's exact one-sided test on tests x trials pairs: the chance that enough of the
    discordant pairs fell, over every count of discordant pairs (scipy's binomial distribution)."""
    fell = p_before * (1 - p_after)
    rose = (1 - p_before) * p_after
    discordant = numpy.arange(1, tests * trials + 1)
    critical = stats.binom.ppf(1 - alpha, discordant, 0.5) + 1  # the fewest falls the test rejects at
    return float(numpy.sum(stats.binom.pmf(discordant, tests * trials, fell + rose)
                           * stats.binom.sf(critical - 1, discordant, fell / (fell + rose))))


def test_the_fixed_designs_test_is_mcnemars_exact_test_as_scipy_computes_it() -> None:
    for fell, rose in [(9, 1), (7, 3), (5, 0), (12, 4)]:
        mine = stats.binom.sf(fell - 1, fell + rose, 0.5)
        theirs = stats.binomtest(fell, fell + rose, 0.5, alternative="greater").pvalue
        assert mine == pytest.approx(theirs, rel=1e-12)
        critical = stats.binom.ppf(1 - ALPHA, fell + rose, 0.5) + 1  # what _fixed_power rejects at
        assert (fell >= critical) == (theirs <= ALPHA)


def _sequential(rng: random.Random, tests: int, p_before: float, p_after: float, cap: int) -> tuple[str, int]:
    test = SequentialTest()
    for _ in range(cap):
        test.add_round(_round(rng, [p_before] * tests, [p_after] * tests))
        if test.decided:
            break
    return test.verdict, test.rounds


@pytest.mark.parametrize(("p_before", "p_after", "tests"), [(0.9, 0.55, 10), (0.9, 0.3, 4), (0.9, 0.75, 10)])
def test_power_and_trials_used_against_the_fixed_design(p_before: float, p_after: float, tests: int) -> None:
    """How often the sequential test says worse (within the default cap) and the trials it takes, against the
    trials a fixed design needs for the same power."""
    rng = random.Random(int(p_after * 1000) + tests)
    runs = RUNS // 2
    outcomes = [_sequential(rng, tests, p_before, p_after, CAP) for _ in range(runs)]
    power = sum(v == "worse" for v, _ in outcomes) / runs
    used = [n for _, n in outcomes]
    needed = next((n for n in range(1, 200) if _fixed_power(tests, n, p_before, p_after) >= min(power, 0.999)), None)
    at_80 = next(n for n in range(1, 200) if _fixed_power(tests, n, p_before, p_after) >= 0.8)
    print(f"\n{tests} tests {p_before} -> {p_after}: sequential says worse in {power:.3f} of {runs} runs, after "
          f"{statistics.fmean(used):.2f} trials per test per arm on average (median {statistics.median(used):g}, "
          f"at most {max(used)}); a fixed design needs {needed} for that power ({at_80} for 80%)")
    assert power >= 0.8
    assert needed is not None and statistics.fmean(used) <= needed


@pytest.mark.parametrize("rate", [0.9, 0.7])
def test_an_unchanged_arm_is_called_not_worse_and_what_that_takes(rate: float) -> None:
    """Showing "not worse" (a drop of the threshold or more ruled out) takes more trials than showing a big drop:
    the figures the docs quote, and a false "worse" no more often than alpha."""
    rng = random.Random(int(rate * 100))
    runs = RUNS // 2
    outcomes = [_sequential(rng, 10, rate, rate, CAP) for _ in range(runs)]
    not_worse = [n for v, n in outcomes if v == "not worse"]
    worse = sum(v == "worse" for v, _ in outcomes) / runs
    print(f"\n10 tests {rate} -> {rate} (no change): not worse in {len(not_worse) / runs:.3f} of {runs} runs within "
          f"{CAP} trials, after {statistics.fmean(not_worse):.1f} on average (median {statistics.median(not_worse):g}); "
          f"worse in {worse:.4f}")
    assert worse <= ALPHA + _sim_error(ALPHA, runs)
    assert len(not_worse) / runs >= (0.85 if rate == 0.9 else 0.45)
