"""Did a live run get worse? The exact tests compare's verdict uses, in pure Python (no scipy or numpy at run time).

Every test here is one-sided: the question a gate asks is "is the later run worse?", never "is it different?".

- `fisher_worse`: Fisher's exact test of one test's passed/failed trials in two runs. Given the table's margins, the
  later run's passes follow the hypergeometric distribution; the p-value is the chance of as few passes or fewer.
  The weights C(n_after, x) * C(n_before, s - x) are integers, so the tail is summed exactly (and divided once).
- `stratified_worse`: the same question over every test at once, stratified by test: the exact conditional test
  of a common odds ratio of 1 (the exact Cochran-Mantel-Haenszel test; R's `mantelhaen.test(exact=TRUE)`). The
  statistic is the later run's passes summed over the tests; under "no test changed" its distribution, given each
  test's margins, is the convolution of the tests' hypergeometric distributions. Each test is compared only with
  itself, so a hard test and an easy one are never pooled into one misleading rate (Simpson's paradox), and a
  suite-wide drop too small to show in any one test adds up. Exact up to `EXACT_WORK` steps of convolution; a
  bigger suite uses the CMH statistic's normal approximation (with a continuity correction), which is accurate
  there.
- `holm`: Holm's step-down adjustment, weighted, so that the run's claim and the tests' claims form one family
  whose chance of any false "worse" stays at most alpha.
- `normal_quantile`: the inverse of the standard normal distribution function (for intervals and power).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["ALPHA", "Table", "fisher_worse", "stratified_worse", "StratifiedResult", "holm", "normal_cdf",
           "normal_quantile", "EXACT_WORK"]

#: The false-alarm rate of compare's verdict: the chance that a comparison of two runs that differ only by chance
#: calls anything "worse" is at most this.
ALPHA = 0.05
#: Convolution steps the exact stratified test may take (about a tenth of a second of pure Python); more uses the normal
#: approximation.
EXACT_WORK = 300_000


class Table(NamedTuple):
    """One test's trials: passed and run, before and after."""

    passed_before: int
    run_before: int
    passed_after: int
    run_after: int


def _checked(table: Sequence[int]) -> Table:
    if len(table) != 4 or any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in table):
        raise ValueError(f"a table of trial counts >= 0 is needed, got {tuple(table)}")
    checked = Table(*table)
    if checked.passed_before > checked.run_before or checked.passed_after > checked.run_after:
        raise ValueError(f"more trials passed than ran: {tuple(table)}")
    return checked


def _support(t: Table) -> tuple[int, int, int]:
    """(passes in both runs, lowest and highest passes the later run can have with these margins)."""
    passes = t.passed_before + t.passed_after
    return passes, max(0, passes - t.run_before), min(t.run_after, passes)


def fisher_worse(passed_before: int, run_before: int, passed_after: int, run_after: int) -> float:
    """One-sided p-value of Fisher's exact test that the later run passes less often than the earlier one.

    >>> round(fisher_worse(5, 5, 0, 5), 4)   # 5/5 -> 0/5: 1 of the C(10, 5) = 252 ways to share the passes
    0.004
    >>> fisher_worse(3, 3, 0, 3)              # 3/3 -> 0/3: 1 in 20, as likely as that by chance
    0.05
    """
    t = _checked((passed_before, run_before, passed_after, run_after))
    passes, low, high = _support(t)
    if low == high:
        return 1.0

    def weight(x: int) -> int:
        return math.comb(t.run_after, x) * math.comb(t.run_before, passes - x)

    tail = sum(weight(x) for x in range(low, t.passed_after + 1))
    return tail / math.comb(t.run_before + t.run_after, passes)  # int / int: correctly rounded


class StratifiedResult(NamedTuple):
    p_value: float
    method: str  # "exact" or "normal"
    informative: int  # tests whose margins let them move (a test every trial of which passed, or failed, cannot)


def _pmf(t: Table) -> tuple[int, list[float]]:
    """The later run's passes' hypergeometric distribution under "no change": (lowest value, probabilities)."""
    passes, low, high = _support(t)
    weights = [math.comb(t.run_after, x) * math.comb(t.run_before, passes - x) for x in range(low, high + 1)]
    total = math.comb(t.run_before + t.run_after, passes)
    return low, [w / total for w in weights]


def stratified_worse(tables: Sequence[Sequence[int]], *, exact_work: int = EXACT_WORK) -> StratifiedResult:
    """One-sided p-value that the later run passes less often, stratified by test (the exact CMH test).

    >>> stratified_worse([(5, 5, 0, 5)]).p_value == fisher_worse(5, 5, 0, 5)   # one test: Fisher's test
    True
    >>> stratified_worse([(5, 5, 4, 5)] * 10).p_value   # one failure in each of 10 tests: each alone says nothing
    0.0009765625
    """
    informative = [t for t in map(_checked, tables) if _support(t)[1] < _support(t)[2]]
    if not informative:
        return StratifiedResult(1.0, "exact", 0)
    observed = sum(t.passed_after for t in informative)
    sizes = [_support(t)[2] - _support(t)[1] + 1 for t in informative]
    work, span = 0, 1
    for size in sizes:
        work += span * size
        span += size - 1
    if work > exact_work:
        return StratifiedResult(_cmh_normal(informative, observed), "normal", len(informative))
    offset, dist = 0, [1.0]
    for t in informative:
        low, pmf = _pmf(t)
        offset += low
        out = [0.0] * (len(dist) + len(pmf) - 1)
        for i, a in enumerate(dist):
            if a:
                for j, b in enumerate(pmf):
                    out[i + j] += a * b
        dist = out
    p = math.fsum(dist[: observed - offset + 1])
    return StratifiedResult(min(max(p, 0.0), 1.0), "exact", len(informative))


def _cmh_normal(tables: list[Table], observed: int) -> float:
    """The CMH statistic's lower tail by the normal approximation, with a continuity correction of 1/2."""
    mean = var = 0.0
    for t in tables:
        n = t.run_before + t.run_after
        passes = t.passed_before + t.passed_after
        mean += t.run_after * passes / n
        var += t.run_after * t.run_before * passes * (n - passes) / (n * n * (n - 1))
    return normal_cdf((observed - mean + 0.5) / math.sqrt(var))


def holm(p_values: Sequence[float], weights: Sequence[float] | None = None) -> list[float]:
    """Holm-adjusted p-values (weighted Holm, 1979): a claim is made when its adjusted value is at most alpha, and
    the chance of any false claim in the family is then at most alpha, however the p-values depend on each other.
    With weights (summing to 1) a claim is tested at its share of alpha at each step; equal weights are Holm's.

    >>> holm([0.01, 0.04, 0.03])
    [0.03, 0.06, 0.06]
    """
    m = len(p_values)
    shares = [1.0] * m if weights is None else [float(w) for w in weights]
    if len(shares) != m or any(not w > 0 for w in shares):
        raise ValueError("one positive weight per p-value is needed")
    order = sorted(range(m), key=lambda i: (p_values[i] / shares[i], i))
    left = math.fsum(shares)
    adjusted = [1.0] * m
    running = 0.0
    for i in order:  # the l-th smallest p/w is tested at alpha * w / (the weights not yet claimed)
        running = max(running, min(1.0, p_values[i] * left / shares[i]))
        adjusted[i] = running
        left -= shares[i]
    return adjusted


def normal_cdf(z: float) -> float:
    """The standard normal distribution function."""
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


@functools.lru_cache(maxsize=256)
def normal_quantile(p: float) -> float:
    """The z with normal_cdf(z) == p, by bisection (exact to about 1e-12; only a handful of levels are ever asked
    for, so each is computed once).

    >>> round(normal_quantile(0.975), 6)
    1.959964
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"a probability strictly between 0 and 1 is needed, got {p}")
    low, high = -40.0, 40.0
    for _ in range(200):
        mid = (low + high) / 2
        if normal_cdf(mid) < p:
            low = mid
        else:
            high = mid
        if high - low < 1e-13:
            break
    return (low + high) / 2
