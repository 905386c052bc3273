"""The exact tests behind compare's verdict, checked where test_stats.py does not reach:

- the stratified test against the same sum in exact rational arithmetic (fractions), over tables with ties, tests
  that passed (or failed) every trial in both runs, a run with no trials of a test, and unequal trial counts: it is
  exact (to the last bits of a float), not approximately so;
- its normal approximation, used only past EXACT_WORK steps (about 100 tests x 10 trials at a pass rate of 0.5),
  rejects no more often than the exact test there, nor in skewed suites (rates 0.9-0.995) forced onto it;
- weighted Holm (the run's claim at half of alpha, the tests sharing the rest) against closed testing with weighted
  Bonferroni tests of every intersection, by brute force.
"""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import pytest

from trialrun.report._stats import EXACT_WORK, Table, holm, stratified_worse


def _rational(tables: list[Table]) -> Fraction:
    """P(the later run's passes summed over the tests <= observed | each test's margins), in fractions."""
    dist = {0: Fraction(1)}
    for t in tables:
        passes = t.passed_before + t.passed_after
        total = math.comb(t.run_before + t.run_after, passes)
        pmf = {x: Fraction(math.comb(t.run_after, x) * math.comb(t.run_before, passes - x), total)
               for x in range(max(0, passes - t.run_before), min(t.run_after, passes) + 1)}
        out: dict[int, Fraction] = {}
        for a, pa in dist.items():
            for b, pb in pmf.items():
                out[a + b] = out.get(a + b, Fraction(0)) + pa * pb
        dist = out
    observed = sum(t.passed_after for t in tables)
    return sum((p for value, p in dist.items() if value <= observed), Fraction(0))


def test_the_stratified_test_is_exact_in_rational_arithmetic() -> None:
    rng = random.Random(20260807)
    kinds = 0
    for _ in range(400):
        tables = []
        for _ in range(rng.randint(1, 8)):
            n_before, n_after = rng.choice([0, 1, 3, 5, 12]), rng.choice([0, 1, 2, 5, 10])
            shape = rng.random()
            if shape < 0.2:  # passed every trial in both runs (or failed every one): no evidence either way
                both = rng.random() < 0.5
                tables.append(Table(n_before * both, n_before, n_after * both, n_after))
            else:
                tables.append(Table(rng.randint(0, n_before), n_before, rng.randint(0, n_after), n_after))
        exact = _rational(tables)
        got = stratified_worse(tables)
        assert got.method == "exact"
        assert got.p_value == pytest.approx(float(exact), rel=1e-12, abs=1e-300), tables
        kinds += got.informative < len(tables)
    assert kinds > 50  # the uninformative tables were really exercised


def _draw(rng: random.Random, rate: float, trials: int) -> int:
    return sum(rng.random() < rate for _ in range(trials))


@pytest.mark.parametrize("tests, trials, rate", [(100, 10, 0.5), (200, 10, 0.99), (60, 20, 0.995), (300, 3, 0.97)])
def test_the_normal_approximation_rejects_no_more_than_the_exact_test(tests: int, trials: int, rate: float) -> None:
    rng = random.Random(f"{tests}-{trials}-{rate}")
    disagreements = []
    for _ in range(60):
        tables = [Table(_draw(rng, rate, trials), trials, _draw(rng, rate, trials), trials) for _ in range(tests)]
        normal = stratified_worse(tables, exact_work=0)
        exact = stratified_worse(tables, exact_work=10**9)
        assert normal.method == "normal" and exact.method == "exact"
        if normal.p_value <= 0.025 < exact.p_value:  # the approximation called worse where the exact test did not
            disagreements.append((normal.p_value, exact.p_value))
        if exact.p_value < 0.2:  # in the tail that decides, the two agree closely
            assert normal.p_value == pytest.approx(exact.p_value, rel=0.25, abs=0.004)
    assert not disagreements
    used = stratified_worse([Table(5, 10, 5, 10)] * 100)
    assert used.method == "normal" and EXACT_WORK == 300_000  # where compare uses it by default


def _closed_weighted(p_values: list[float], weights: list[float], alpha: float) -> list[bool]:
    """Closed testing, each intersection tested by weighted Bonferroni (its claims at their share of alpha)."""
    m = len(p_values)
    rejected = []
    for i in range(m):
        others = [j for j in range(m) if j != i]
        subsets = (set(s) | {i} for r in range(m) for s in itertools.combinations(others, r))
        rejected.append(all(any(p_values[j] <= alpha * weights[j] / sum(weights[h] for h in s) for j in s)
                            for s in subsets))
    return rejected


def test_weighted_holm_is_closed_testing_with_weighted_bonferroni() -> None:
    rng = random.Random(5)
    for _ in range(300):
        m = rng.randint(1, 6)
        weights = [0.5, *[0.5 / (m - 1)] * (m - 1)] if m > 1 else [1.0]  # compare's: the run half, the tests the rest
        p_values = [rng.choice([rng.random(), rng.random() / 40, 0.025, 0.0125, 0.05 / m]) for _ in range(m)]
        adjusted = holm(p_values, weights)
        for alpha in (0.05, 0.01):
            assert [a <= alpha + 1e-12 for a in adjusted] == _closed_weighted(p_values, weights, alpha), (p_values, alpha)
