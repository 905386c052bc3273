"""trialrun.report._stats against scipy (the reference implementation), over every small table and split."""

from __future__ import annotations

import itertools

import pytest

import scipy.stats as scipy_stats  # in the test extra: the cross-check runs in CI, never skips

from trialrun.report._stats import fisher_exact, sign_test, trials_needed


@pytest.mark.parametrize("n_a, n_b", [(1, 1), (3, 3), (5, 5), (4, 7), (10, 10)])
def test_fisher_exact_matches_scipy_for_every_table(n_a: int, n_b: int) -> None:
    for passed_a, passed_b in itertools.product(range(n_a + 1), range(n_b + 1)):
        table = [[passed_a, n_a - passed_a], [passed_b, n_b - passed_b]]
        expected = scipy_stats.fisher_exact(table, alternative="two-sided").pvalue
        assert fisher_exact(passed_a, n_a - passed_a, passed_b, n_b - passed_b) == pytest.approx(expected, rel=1e-9), table


def test_fisher_exact_at_the_issue_s_anchor_counts() -> None:
    assert fisher_exact(5, 0, 4, 1) == 1.0  # 5/5 -> 4/5: not significant
    assert fisher_exact(5, 0, 0, 5) == pytest.approx(2 / 252)  # 5/5 -> 0/5: significant at 5%
    with pytest.raises(ValueError):
        fisher_exact(-1, 0, 0, 0)


@pytest.mark.parametrize("n", [1, 2, 5, 9, 14])
def test_sign_test_matches_scipy_binomtest(n: int) -> None:
    for fell in range(n + 1):
        p, rose_count, fell_count = sign_test([-0.5] * fell + [0.25] * (n - fell) + [0.0, 1e-12])
        assert (rose_count, fell_count) == (n - fell, fell)  # ties are dropped
        assert p == pytest.approx(scipy_stats.binomtest(fell, n, 0.5).pvalue, rel=1e-9)


def test_sign_test_with_no_change_is_not_evidence() -> None:
    assert sign_test([0.0, 0.0]) == (1.0, 0, 0)


def test_trials_needed_grows_as_the_change_shrinks_and_stays_exact_at_the_anchor() -> None:
    assert trials_needed(1.0, 0.10) == 74
    assert trials_needed(0.5, 0.10) > trials_needed(0.5, 0.30) > trials_needed(0.5, 0.50)
    with pytest.raises(ValueError):
        trials_needed(0.5, 0)
