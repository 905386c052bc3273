"""How big could the change be? 95% intervals for the change in pass@1 and pass^k between two runs, in pure Python.

The change is the mean over the tests both runs graded of (after - before). The tests are fixed (a suite is not a
sample from some population of tests, and a bootstrap over two or three tests says nothing): the uncertainty is the
trials', so the interval is built within tests and summed, never by resampling tests.

- pass@1: each test's pass rate is estimated by its share of passed trials; the variance of the mean change is the
  sum of the tests' binomial variances, each taken at (passed + 1) / (trials + 2) (Agresti and Caffo's adjustment:
  a test that passed 5/5 is not known to be certain), plus a continuity correction of half a trial's step in each
  run (the mean moves in steps of 1/trials). Recovering the variance from each test's Wilson limits instead
  (MOVER) understates the variance of a sum of many tests near 0.5 (87% coverage at 10 tests x 5 trials).
- pass^k: each test's pass^k (all of k trials pass, k its trial count in the smaller run) is estimated without bias
  by C(passed, k) / C(trials, k) (at k = trials: whether every trial passed, as the report counts it). A value in
  [0, 1] with mean q has a variance of at most q(1 - q), and tests of different q together at most that of their
  mean: the bound, taken at the mean shrunk by one pass and one fail, plus the continuity correction, covers where
  plug-in variances of single tests do not (94% at 50 tests x 3 trials).

The calibration tests simulate both at known pass rates: coverage at least 95% (tests/core/test_compare_calibration.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ._stats import ALPHA, Table, normal_quantile

__all__ = ["change_interval", "Z"]

#: The two-sided 95% normal quantile.
Z = normal_quantile(1 - ALPHA / 2)


def _unbiased(passed: int, run: int, k: int) -> float:
    """The unbiased estimate of p ** k from `passed` of `run` trials."""
    return math.comb(passed, k) / math.comb(run, k)


def change_interval(tables: Sequence[Table], *, pass_pow_k: bool = False) -> tuple[float, float, float] | None:
    """(estimate, low, high) of the mean over the tests of after - before, for pass@1 (or pass^k): 95%, clipped to
    [-1, 1]. None when no test ran in both runs.

    >>> [round(x, 2) for x in change_interval([Table(5, 5, 4, 5)])]   # 5/5 -> 4/5: anything from -0.90 to +0.50
    [-0.2, -0.9, 0.5]
    """
    used = [t for t in tables if t.run_before and t.run_after]
    if not used:
        return None
    m = len(used)
    estimate = variance = steps = 0.0
    after_sum = before_sum = 0.0
    for t in used:
        k = min(t.run_before, t.run_after) if pass_pow_k else 1
        after, before = _unbiased(t.passed_after, t.run_after, k), _unbiased(t.passed_before, t.run_before, k)
        estimate += after - before
        after_sum += after
        before_sum += before
        steps += 1 / math.comb(t.run_after, k) + 1 / math.comb(t.run_before, k)
        if not pass_pow_k:
            for passed, run in ((t.passed_after, t.run_after), (t.passed_before, t.run_before)):
                shrunk = (passed + 1) / (run + 2)
                variance += shrunk * (1 - shrunk) / run
    if pass_pow_k:  # the bound q(1 - q) at the shrunk mean, for each run's sum of m tests
        variance = sum(m * q * (1 - q) for q in ((after_sum + 1) / (m + 2), (before_sum + 1) / (m + 2)))
    estimate /= m
    half = Z * math.sqrt(variance) / m + steps / (2 * m * m)
    return estimate, max(-1.0, estimate - half), min(1.0, estimate + half)
