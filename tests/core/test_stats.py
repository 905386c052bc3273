"""trialrun.report._stats against scipy (the reference implementation): the exact one-sided tests compare's verdict
uses, over every small table; the stratified test against a brute-force sum over every combination of tables built
from scipy's hypergeometric distribution; Holm against closed testing; the normal quantile against scipy's."""

from __future__ import annotations

import itertools
import math
import random

import pytest
import scipy.stats as scipy_stats  # in the test extra: the cross-check runs in CI, never skips

from trialrun.report._stats import Table, fisher_worse, holm, normal_quantile, stratified_worse


@pytest.mark.parametrize("n_before, n_after", [(1, 1), (3, 3), (5, 5), (4, 7), (10, 10), (20, 3)])
def test_fisher_worse_matches_scipy_for_every_table(n_before: int, n_after: int) -> None:
    for passed_before, passed_after in itertools.product(range(n_before + 1), range(n_after + 1)):
        table = [[passed_before, n_before - passed_before], [passed_after, n_after - passed_after]]
        # "greater": the earlier run's odds of passing are higher, i.e. the later run is worse
        expected = scipy_stats.fisher_exact(table, alternative="greater").pvalue
        assert fisher_worse(passed_before, n_before, passed_after, n_after) == pytest.approx(expected, rel=1e-12), table


def test_fisher_worse_at_the_issue_s_anchor_counts() -> None:
    assert fisher_worse(5, 5, 4, 5) == 0.5  # 5/5 -> 4/5: the one failure was as likely in either run
    assert fisher_worse(5, 5, 0, 5) == pytest.approx(1 / 252)
    assert fisher_worse(3, 3, 0, 3) == pytest.approx(1 / 20)  # the issue's 3/3 -> 0/3: 0.05 one-sided
    assert fisher_worse(0, 5, 5, 5) == 1.0  # better is never worse
    for bad in [(-1, 0, 0, 0), (2, 1, 0, 1), (True, 1, 0, 1)]:
        with pytest.raises(ValueError):
            fisher_worse(*bad)


def _brute_force(tables: list[Table]) -> float:
    """P(the later run's passes summed over the tests <= observed | every table's margins), by enumerating every
    combination of tables, each weighted by scipy's hypergeometric probability."""
    supports = []
    for t in tables:
        passes = t.passed_before + t.passed_after
        dist = scipy_stats.hypergeom(t.run_before + t.run_after, passes, t.run_after)  # (population, successes, draws)
        supports.append([(x, dist.pmf(x)) for x in range(max(0, passes - t.run_before), min(passes, t.run_after) + 1)])
    observed = sum(t.passed_after for t in tables)
    return sum(math.prod(p for _, p in combo) for combo in itertools.product(*supports)
               if sum(x for x, _ in combo) <= observed)


def test_stratified_worse_matches_the_brute_force_sum() -> None:
    rng = random.Random(7)
    for _ in range(200):
        tables = []
        for _ in range(rng.randint(1, 4)):
            n_b, n_a = rng.randint(1, 6), rng.randint(1, 6)
            tables.append(Table(rng.randint(0, n_b), n_b, rng.randint(0, n_a), n_a))
        assert stratified_worse(tables).p_value == pytest.approx(_brute_force(tables), rel=1e-9, abs=1e-15), tables


def test_one_stratum_is_fisher_and_uninformative_tests_change_nothing() -> None:
    table = Table(9, 10, 4, 10)
    assert stratified_worse([table]).p_value == pytest.approx(fisher_worse(*table), rel=1e-12)
    # a test every trial of which passed (or failed) in both runs cannot move: it adds no evidence either way
    padded = stratified_worse([table, Table(5, 5, 5, 5), Table(0, 3, 0, 3)])
    assert padded.p_value == pytest.approx(fisher_worse(*table), rel=1e-12) and padded.informative == 1
    assert stratified_worse([Table(5, 5, 5, 5)]).p_value == 1.0


def test_a_big_suite_uses_the_normal_approximation_close_to_the_exact_value() -> None:
    rng = random.Random(3)
    tables = [Table(rng.randint(5, 10), 10, rng.randint(3, 10), 10) for _ in range(60)]
    exact = stratified_worse(tables)
    approx = stratified_worse(tables, exact_work=10)
    assert (exact.method, approx.method) == ("exact", "normal")
    assert approx.p_value == pytest.approx(exact.p_value, rel=0.15, abs=0.005)


def _closed_bonferroni(p_values: list[float], alpha: float) -> list[bool]:
    """Closed testing with Bonferroni tests of every intersection: Holm's definition, by brute force."""
    m = len(p_values)
    rejected = []
    for i in range(m):
        others = [j for j in range(m) if j != i]
        subsets = (set(s) | {i} for r in range(m) for s in itertools.combinations(others, r))
        rejected.append(all(min(p_values[j] for j in s) <= alpha / len(s) for s in subsets))
    return rejected


def test_holm_is_closed_testing_with_bonferroni() -> None:
    rng = random.Random(11)
    for _ in range(300):
        p_values = [rng.choice([rng.random(), rng.random() / 50, 0.0125, 0.025]) for _ in range(rng.randint(1, 6))]
        adjusted = holm(p_values)
        for alpha in (0.05, 0.01):
            assert [a <= alpha for a in adjusted] == _closed_bonferroni(p_values, alpha), p_values


def test_weighted_holm_tests_each_claim_at_its_share_first() -> None:
    # weights 1/2, 1/4, 1/4: the first claim is made at alpha/2 ...
    assert holm([0.02, 0.9, 0.9], [0.5, 0.25, 0.25])[0] == pytest.approx(0.04)
    # ... and once it is made, the others share all of alpha (Holm's step down)
    assert holm([0.001, 0.02, 0.9], [0.5, 0.25, 0.25])[1] == pytest.approx(0.04)
    with pytest.raises(ValueError):
        holm([0.1, 0.2], [1.0])


@pytest.mark.parametrize("p", [1e-9, 0.001, 0.025, 0.2, 0.5, 0.8, 0.975, 0.9999])
def test_normal_quantile_matches_scipy(p: float) -> None:
    assert normal_quantile(p) == pytest.approx(scipy_stats.norm.ppf(p), abs=1e-9)
