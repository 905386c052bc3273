"""How many trials would tell? The power of compare's own decision, for the "cannot tell" lines and the docs' table.

A drop is told when compare's one-sided test calls it worse. `trials_needed` is the number of trials per test, in
each run, for a drop of `drop` from a pass rate of `rate` to be called worse four times in five (80% power) at the
level the decision uses: alpha/2 for the run's pooled claim (the run's share of the family; see `_verdict`), and
for one test alone alpha/2 divided among the tests. The sample size is the classic one for two proportions,
with Fleiss' continuity correction, which matches exact tests such as Fisher's (too optimistic without it at the
small counts agents are run at). Over several tests with the same drop, the stratified test pools their trials:
the total is shared among the tests. The calibration tests simulate the real decision at these counts.
"""

from __future__ import annotations

import math

from ._stats import ALPHA, normal_quantile

__all__ = ["POWER", "trials_needed", "smallest_drop", "level_for"]

#: The chance of telling a drop of the stated size that "trials needed" promises.
POWER = 0.80


def level_for(tests: int, *, pooled: bool) -> float:
    """The one-sided level a claim is first tested at: alpha/2 for the run's pooled claim, and alpha/2 shared among
    the tests for one test's own claim (Holm's first step)."""
    return ALPHA / 2 if pooled else ALPHA / 2 / max(1, tests)


def trials_needed(rate: float, drop: float, *, tests: int = 1, level: float = ALPHA / 2) -> int:
    """Trials per test, in each run, for a drop of `drop` from a pass rate of `rate` to be called worse with 80%
    power: of one test (`tests=1`), or over `tests` tests that all drop alike (the pooled claim). A rate below the
    drop is taken as the drop itself (a pass rate cannot fall below 0).

    >>> trials_needed(1.0, 0.10)   # one test that always passed, a drop to 0.9
    93
    >>> trials_needed(0.9, 0.35, tests=10)   # the issue's suite-wide drop, 0.9 -> 0.55 over 10 tests
    3
    """
    if not 0 < drop <= 1:
        raise ValueError(f"drop must be in (0, 1], got {drop}")
    if tests < 1:
        raise ValueError(f"tests must be 1 or more, got {tests}")
    p1 = min(1.0, max(rate, drop))
    p2 = p1 - drop
    z_alpha = normal_quantile(1 - level)
    z_power = normal_quantile(POWER)
    mean = (p1 + p2) / 2
    top = z_alpha * math.sqrt(2 * mean * (1 - mean)) + z_power * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))
    plain = (top / drop) ** 2
    corrected = plain / 4 * (1 + math.sqrt(1 + 4 / (plain * drop))) ** 2  # Fleiss, Tytun & Ury (1980)
    return max(1, math.ceil(corrected / tests - 1e-9))


def smallest_drop(rate: float, trials: int, *, tests: int = 1, level: float = ALPHA / 2) -> float | None:
    """The smallest drop (to 0.01) that `trials` trials per test in each run tell with 80% power; None when not
    even a drop to 0 would be told.

    >>> smallest_drop(1.0, 5)   # five trials of a test that always passed tell little but a collapse
    0.92
    """
    if trials < 1:
        return None
    biggest = 1.0
    if trials_needed(rate, biggest, tests=tests, level=level) > trials:
        return None
    low, high = 0, 100  # in hundredths: low is not told, high is
    while high - low > 1:
        mid = (low + high) // 2
        if trials_needed(rate, mid / 100, tests=tests, level=level) <= trials:
            high = mid
        else:
            low = mid
    return high / 100
