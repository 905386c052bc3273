"""Reliability metrics: pass@1, pass^k, the unbiased pass@k and pass^k estimators, and a Wilson interval.

pass@k asks "does at least one of k attempts succeed?" (Chen et al. 2021); pass^k asks "do ALL k attempts
succeed?" (tau-bench). With n trials of which c passed, both have unbiased estimators over the n trials.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["pass_at_k", "pass_pow_k", "wilson_interval", "mean"]


def _check(n: int, c: int, k: int) -> None:
    if n < 0 or c < 0 or c > n:
        raise ValueError(f"need 0 <= passed ({c}) <= trials ({n})")
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and the number of trials ({n}), got {k}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k trials drawn from the n run passes: 1 - C(n-c, k) / C(n, k)."""
    _check(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_pow_k(n: int, c: int, k: int) -> float:
    """Probability that all k trials drawn from the n run pass: C(c, k) / C(n, k)."""
    _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def wilson_interval(c: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """95% (by default) Wilson score interval for a pass rate of c out of n; honest with few trials."""
    if n == 0:
        return (0.0, 1.0)
    p = c / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def mean(values: Iterable[float]) -> float | None:
    """Arithmetic mean, or None for no values (an empty run has no pass rate, not a zero one)."""
    items = list(values)
    return sum(items) / len(items) if items else None
