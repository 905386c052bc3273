"""Is a change beyond chance? Exact tests for compare, in exact integer arithmetic (no scipy at run time).

- `fisher_exact`: Fisher's exact test (two-sided) on a 2x2 table, for one test's passed/failed trials in two runs.
  The tables with the observed margins are weighted by the hypergeometric distribution, C(r1, x) * C(r2, c1 - x);
  the p-value is the share of the total weight C(n, c1) held by the tables no more likely than the one observed.
  The weights are integers, so "no more likely" is decided exactly (no floating-point tolerance needed).
- `sign_test`: the exact two-sided sign test, for a paired change across tests (the run's pass@1 or score): tests
  that did not move are dropped, and the p-value is the binomial(n, 1/2) chance of a split at least as lopsided.
- `trials_needed`: how many trials per test a two-proportion comparison needs to tell a pass-rate change of a
  given size from chance (two-sided 5%, 80% power; the usual normal-approximation sample-size formula).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction

__all__ = ["fisher_exact", "sign_test", "trials_needed", "ALPHA"]

#: The significance level compare uses: a change is "beyond chance" when its p-value is below it.
ALPHA = 0.05
_Z_ALPHA = 1.959963984540054  # two-sided 5%
_Z_POWER = 0.8416212335729143  # 80% power


def fisher_exact(passed_a: int, failed_a: int, passed_b: int, failed_b: int) -> float:
    """Two-sided p-value of Fisher's exact test for the table [[passed_a, failed_a], [passed_b, failed_b]].

    >>> round(fisher_exact(5, 0, 0, 5), 4)   # 5/5 -> 0/5: 2 of the C(10, 5) = 252 tables are this extreme
    0.0079
    >>> fisher_exact(5, 0, 4, 1)              # 5/5 -> 4/5: as likely as chance makes it
    1.0
    """
    cells = (passed_a, failed_a, passed_b, failed_b)
    if any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in cells):
        raise ValueError(f"a 2x2 table of counts >= 0 is needed, got {cells}")
    row_a, row_b = passed_a + failed_a, passed_b + failed_b
    passed = passed_a + passed_b
    total = row_a + row_b
    if total == 0:
        return 1.0

    def weight(x: int) -> int:  # tables with x passes in run a and the same margins
        return math.comb(row_a, x) * math.comb(row_b, passed - x)

    observed = weight(passed_a)
    low, high = max(0, passed - row_b), min(row_a, passed)
    extreme = sum(w for w in (weight(x) for x in range(low, high + 1)) if w <= observed)
    return float(min(Fraction(extreme, math.comb(total, passed)), Fraction(1)))


def sign_test(differences: Iterable[float], tolerance: float = 1e-9) -> tuple[float, int, int]:
    """Exact two-sided sign test of paired differences: (p-value, how many rose, how many fell). Differences
    within `tolerance` of 0 are ties and dropped, as the sign test does.

    >>> sign_test([-0.2, -0.2, -1.0, -0.2, -0.2])   # 5 of 5 fell: 2 of 32 sign patterns are this lopsided
    (0.0625, 0, 5)
    """
    rose = fell = 0
    for value in differences:
        if value > tolerance:
            rose += 1
        elif value < -tolerance:
            fell += 1
    n = rose + fell
    if n == 0:
        return 1.0, 0, 0
    tail = sum(math.comb(n, i) for i in range(min(rose, fell) + 1))
    return float(min(Fraction(2 * tail, 2**n), Fraction(1))), rose, fell


def trials_needed(baseline: float, change: float) -> int:
    """Trials per test (in each run) for a change of `change` in a pass rate around `baseline` to be told from
    chance: two-sided 5%, 80% power. The other rate is `baseline - change` (or `+ change` when that would fall
    below 0).

    >>> trials_needed(1.0, 0.10)
    74
    """
    if not 0 < change <= 1:
        raise ValueError(f"change must be in (0, 1], got {change}")
    p1 = min(max(baseline, 0.0), 1.0)
    p2 = p1 - change if p1 - change >= 0 else p1 + change
    p2 = min(max(p2, 0.0), 1.0)
    mean = (p1 + p2) / 2
    top = _Z_ALPHA * math.sqrt(2 * mean * (1 - mean)) + _Z_POWER * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))
    return max(2, math.ceil((top / abs(p1 - p2)) ** 2 - 1e-9))
