"""Is an arm worse than the baseline? A sequential test that may look after every round of an A/B run and stop as
soon as it is decided (`trialrun run --arms ... --until-decided`), and still says "worse" falsely at most `alpha`
of the time.

The data: in round r every test j ran one trial in each arm, so each test gives a pair, and
`D = passed(arm) - passed(baseline)` is -1, 0 or +1. The quantity judged is the change in the run's pass@1,
`change = mean over tests of (pass@1(arm) - pass@1(baseline))` (each test weighs the same, as in the run's pass@1).

Two one-sided tests by betting (e-processes; Waudby-Smith & Ramdas, "Estimating means of bounded random variables
by betting", JRSS-B 2024), each a mixture of fixed bets `lambda` on a grid:

- **worse**, against "the change is 0 or better": `K_worse = mean_k prod_{pairs} (1 - lambda_k * D)`;
- **not worse**, against "the change is a drop of `threshold` or more":
  `K_not_worse = mean_k prod_{pairs} (1 + lambda_k * (D + threshold))`.

Why they hold while looking after every round: for a fixed bet, the pairs of one round are independent given the
rounds before (distinct trials), so the round multiplies the capital by, on average,
`prod_j (1 - lambda * change_j) <= exp(-lambda * sum_j change_j) <= 1` whenever the round's mean change is >= 0
(`1 + x <= e^x`); the same for the other side. So each capital is a nonnegative supermartingale when its
hypothesis holds, even when the pass rates drift from round to round, provided the drift hits both arms alike
(what interleaved rounds are for); a mixture of such is one too, and Ville's inequality gives
`P(the capital ever reaches 1/alpha) <= alpha`, however many looks, whenever one stops. A test is decided the first
time its capital reaches 1/alpha. Bets keep every factor positive (`lambda < 1` for worse,
`< 1/(1 - threshold)` for not worse).

Because each bet is fixed, the capital depends only on how many pairs fell, tied and rose (the order does not
matter): the state is three counts, and the interval on the change (the values of it that neither test rejects:
each end a one-sided `1 - alpha` bound that holds at any stopping time) is found by bisection, the capital being
monotone in the value tested. The interval when a test was decided is intersected with the latest one (still valid),
so it agrees with the verdict.

Why betting and not a mixture SPRT on the discordant pairs or an alpha-spending design: "not worse" is a claim about
the mean change over the tests against a margin, which a likelihood ratio of a sharp null does not test, and an
alpha-spending design fixes its looks in advance; betting tests both sides of a bounded mean, at every round, with
no model of the pass rates. Deterministic arms (scripted or replayed models) need none of this: one round decides.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from typing import Literal

from pydantic import BaseModel, Field

from ._stats import ALPHA

__all__ = ["SequentialTest", "SequentialVerdict", "BET_GRID", "Verdict", "capital", "interval"]

#: The bets mixed, as fractions of the largest bet that keeps every factor positive (equal weights).
BET_GRID = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
_EDGE = 1 - 1e-9  # the tested change stays inside (-1, 1), where every bet is finite

Verdict = Literal["worse", "not worse", "cannot tell"]


class SequentialVerdict(BaseModel):
    """Where a sequential comparison of an arm with the baseline stands."""

    verdict: Verdict = Field(description="worse: the arm's pass@1 dropped; not worse: it did not drop by the "
                                         "threshold or more; cannot tell: neither is shown yet")
    better: bool = Field(default=False, description="the interval lies above 0: the arm's pass@1 rose")
    rounds: int = Field(description="rounds (trials per test in each arm) looked at")
    pairs: int = Field(description="pairs of trials (test, round) looked at")
    fell: int = Field(description="pairs where the baseline passed and the arm failed")
    rose: int = Field(description="pairs where the baseline failed and the arm passed")
    change: float | None = Field(description="observed change in pass@1 (arm - baseline)")
    low: float = Field(description="lower bound of the change (one-sided, valid at any stopping time)")
    high: float = Field(description="upper bound of the change (one-sided, valid at any stopping time)")
    e_worse: float = Field(description="the worse test's capital now (decided at 1/alpha)")
    e_not_worse: float = Field(description="the not-worse test's capital now (decided at 1/alpha)")
    decided_at: int | None = Field(default=None, description="the round the verdict was reached")
    worse_at: int | None = Field(default=None, description="the round the worse test was decided, if it was")
    not_worse_at: int | None = Field(default=None, description="the round the not-worse test was decided, if it was")
    alpha: float
    threshold: float


class SequentialTest:
    """The running test of one arm against the baseline. Feed it each round's pairs with `add_round`; `verdict` is
    worse / not worse / cannot tell.

    >>> test = SequentialTest()
    >>> for _ in range(4):   # ten tests that always passed, each now failing every trial
    ...     test.add_round([(True, False)] * 10)
    >>> test.result().verdict, test.result().decided_at
    ('worse', 1)
    """

    def __init__(self, threshold: float = 0.10, alpha: float = ALPHA) -> None:
        if not 0 < threshold < 1:
            raise ValueError(f"threshold must be between 0 and 1, got {threshold}")
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
        self.threshold = threshold
        self.alpha = alpha
        self.counts = (0, 0, 0)  # pairs that fell (D = -1), tied (0), rose (+1)
        self.rounds = 0
        self._worse_at: int | None = None
        self._not_worse_at: int | None = None
        self._seen: list[tuple[int, int, int]] = []  # the counts when a test was decided: its interval is kept

    def add_round(self, pairs: Iterable[tuple[bool, bool]]) -> None:
        """One round: (baseline passed, arm passed) for each test that ran in both arms this round."""
        counts = list(self.counts)
        for before, after in pairs:
            counts[int(bool(after)) - int(bool(before)) + 1] += 1
        self.counts = (counts[0], counts[1], counts[2])
        self.rounds += 1
        bar = 1 / self.alpha
        if self._worse_at is None and self.e_worse() >= bar:
            self._worse_at = self.rounds
            self._seen.append(self.counts)
        if self._not_worse_at is None and self.e_not_worse() >= bar:
            self._not_worse_at = self.rounds
            self._seen.append(self.counts)

    def e_worse(self) -> float:
        """The capital against "the arm's pass@1 did not drop"."""
        return capital(self.counts, 0.0, below=True)

    def e_not_worse(self) -> float:
        """The capital against "the arm's pass@1 dropped by the threshold or more"."""
        return capital(self.counts, -self.threshold, below=False)

    @property
    def verdict(self) -> Verdict:
        """Worse once the worse test was decided (even after not worse was: both are claims at level alpha, and a
        drop smaller than the threshold is then shown); not worse once that was; else cannot tell."""
        if self._worse_at is not None:
            return "worse"
        return "not worse" if self._not_worse_at is not None else "cannot tell"

    @property
    def decided(self) -> bool:
        return self.verdict != "cannot tell"

    def interval(self) -> tuple[float, float]:
        """The changes neither one-sided test rejects (each end at level alpha, valid at any stopping time): now,
        and when each test was decided (the intersection of such intervals is one too, and agrees with the
        verdict)."""
        low, high = -1.0, 1.0
        for counts in (*self._seen, self.counts):
            a, b = interval(counts, self.alpha)
            low, high = max(low, a), min(high, b)
        return low, high

    def result(self) -> SequentialVerdict:
        pairs = sum(self.counts)
        decided_at = self._worse_at if self._worse_at is not None else self._not_worse_at
        low, high = self.interval()
        return SequentialVerdict(
            verdict=self.verdict, better=low > 0, rounds=self.rounds, pairs=pairs, fell=self.counts[0],
            rose=self.counts[2], change=(self.counts[2] - self.counts[0]) / pairs if pairs else None,
            low=low, high=high, e_worse=self.e_worse(), e_not_worse=self.e_not_worse(),
            decided_at=decided_at, worse_at=self._worse_at, not_worse_at=self._not_worse_at, alpha=self.alpha,
            threshold=self.threshold)


def interval(counts: tuple[int, int, int], alpha: float = ALPHA) -> tuple[float, float]:
    """(low, high): the mean changes that neither one-sided test rejects at level `alpha` after these counts. The
    capital against "the change is at least c" rises with c (so the values at or above `high` are rejected), the
    one against "at most c" falls with c."""
    if not sum(counts):
        return -1.0, 1.0
    bar = 1 / alpha
    high = _bisect(lambda c: capital(counts, c, below=True) >= bar, rejected_above=True)
    low = _bisect(lambda c: capital(counts, c, below=False) >= bar, rejected_above=False)
    return low, high


def capital(counts: tuple[int, int, int], value: float, *, below: bool) -> float:
    """The mixture capital after pairs that fell, tied and rose (`counts`), betting against "the mean change is at
    least `value`" (`below`: the bettor wins when the change is lower) or "at most `value`".

    >>> round(capital((3, 0, 0), 0.0, below=True), 4)   # three drops in a row, against "no drop"
    3.4233
    """
    fell, tied, rose = counts
    logs = [fell * a + tied * b + rose * c for a, b, c in _log_factors(value, below)]
    top = max(logs)
    if top > 700:  # far past any bar: no need for its exact size
        return math.inf
    return math.exp(top) * sum(math.exp(x - top) for x in logs) / len(logs)


@functools.lru_cache(maxsize=1024)
def _log_factors(value: float, below: bool) -> tuple[tuple[float, float, float], ...]:
    """For each bet of the grid, the log of the factor a pair that fell, tied or rose multiplies the capital by."""
    factors = []
    for fraction in BET_GRID:
        if below:  # factor 1 - lam * (D - value), lam < 1 / (1 - value)
            lam = fraction / (1 - value)
            terms = (1 + lam * (1 + value), 1 + lam * value, 1 - lam * (1 - value))
        else:  # factor 1 + lam * (D - value), lam < 1 / (1 + value)
            lam = fraction / (1 + value)
            terms = (1 - lam * (1 + value), 1 - lam * value, 1 + lam * (1 - value))
        factors.append((math.log(terms[0]), math.log(terms[1]), math.log(terms[2])))
    return tuple(factors)


def _bisect(rejected: Callable[[float], bool], *, rejected_above: bool, steps: int = 36) -> float:
    """The edge between the changes a test rejects and those it does not, in (-1, 1) (the end itself when it rejects
    none there)."""
    inside, outside = (-_EDGE, _EDGE) if rejected_above else (_EDGE, -_EDGE)
    if not rejected(outside):
        return 1.0 if rejected_above else -1.0
    if rejected(inside):
        return inside
    for _ in range(steps):
        middle = (inside + outside) / 2
        if rejected(middle):
            outside = middle
        else:
            inside = middle
    return inside
