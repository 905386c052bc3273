"""The verdict on a change: one word for each test and for the run, and what the gate decides. The ONE place that
decides them; compare stores what it returns, and every view shows that.

The words: **worse**, **not worse** (the 95% interval of the change in pass@1 excludes a drop bigger than the
threshold), **cannot tell** (neither; with the trials that would tell, and the smallest drop these runs could see).

- A safety claim that held in every trial before (or that no trial before examined) and fails in any trial after
  (`_safety`): worse, at any count.
- A test deterministic over both runs (scripted or replayed models only, `_models_used`): every change is real, so a
  drop (the seed's: the value fell by the threshold, a pass became a fail, a sub-score fell; or fewer trials
  passed) is worse and anything else is not worse. No chance statistics are computed for it.
- Live tests (any other): one family of one-sided claims, so that two runs that differ only by chance call
  anything worse at most `ALPHA` (5%) of the time. The run's claim pools every live test's trials, stratified by
  test (the exact CMH test, `_stats.stratified_worse`), and holds half of the family's weight; each test's own claim
  (Fisher's exact test) shares the other half: weighted Holm. So a suite-wide drop too small to show in any test
  is still seen, and a test that collapsed is named.
- `any_drop`: live tests are judged as deterministic ones are (every drop is worse, chance or not).

The gate (`--fail-on-regression`) fails on anything worse, on a test the later run lost, on a comparison of no
shared test, and with `require_power` on anything that cannot tell.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

from ._intervals import change_interval
from ._power import level_for, smallest_drop, trials_needed
from ._safety import SafetyBreach
from ._stats import ALPHA, Table, fisher_worse, holm, stratified_worse

__all__ = ["Word", "Chance", "Judgement", "Gate", "SharedTest", "Verdicts", "judge", "p_text", "DETERMINISTIC_WHY"]

Word = Literal["worse", "not worse", "cannot tell"]
Basis = Literal["deterministic", "safety", "live", "any_drop"]
#: Said once above a comparison of two deterministic runs.
DETERMINISTIC_WHY = "deterministic runs: every change is real"
#: The run's share of the family's false-alarm rate (the tests share the rest).
RUN_WEIGHT = 0.5


class Chance(BaseModel):
    """The chance statistics behind a live word (never computed for a deterministic test)."""

    test: str = Field(description="fisher (one test), stratified exact or stratified normal (the run, by test)")
    p_value: float = Field(description="one-sided: the chance of a drop at least this big if nothing changed")
    p_holm: float = Field(description=f"adjusted for the family of claims (weighted Holm); worse when <= {ALPHA}")
    change: tuple[float, float, float] = Field(description="pass@1 after - before: estimate, 95% low, high")
    pass_pow_k_change: tuple[float, float, float] | None = Field(default=None, description="pass^k, the run only")
    trials: int = Field(description="trials per test in the smaller run (the run: their mean over its tests)")
    smallest_drop: float | None = Field(default=None, description="cannot tell: the smallest drop these trials "
                                        "tell with 80% power (None: not even a drop to 0, or the claim could tell)")
    trials_to_tell: int | None = Field(default=None, description="cannot tell: trials per test in each run that "
                                       "would tell a drop of the threshold with 80% power")
    tests: int = Field(default=1, description="live tests pooled (the run)")


class Judgement(BaseModel):
    """The word for one test or for the run, on what basis, and why in one line."""

    word: Word
    basis: Basis
    reason: str
    chance: Chance | None = None


class Gate(BaseModel):
    """What `--fail-on-regression` decides, and why in one line."""

    failed: bool
    reasons: list[str] = Field(default_factory=list)
    line: str


@dataclass
class SharedTest:
    """What the verdict needs of one test both runs graded."""

    name: str
    table: Table | None  # trials passed/run before and after; None without trial counts
    deterministic: bool
    seen_drop: bool  # the seed's regression: the value fell by the threshold, pass became fail, a sub-score fell
    breaches: list[SafetyBreach] = field(default_factory=list)

    @property
    def rate_fell(self) -> bool:
        t = self.table
        return t is not None and t.passed_after * t.run_before < t.passed_before * t.run_after


@dataclass
class Verdicts:
    tests: dict[str, Judgement]
    run: Judgement
    gate: Gate


def p_text(p: float) -> str:
    """A p-value as compare prints it: `p<0.001`, `p=0.004`, `p=0.50`."""
    return "p<0.001" if p < 0.001 else f"p={p:.3f}" if p < 0.01 else f"p={p:.2f}"


def _counts(t: Table | None) -> str:
    return "no trial counts" if t is None else f"{t.passed_before}/{t.run_before} -> {t.passed_after}/{t.run_after} trials passed"


def _span(change: tuple[float, float, float]) -> str:
    return f"{change[0]:+.2f} [{change[1]:+.2f}, {change[2]:+.2f}]"


def _usable(t: Table | None) -> bool:
    return t is not None and t.run_before > 0 and t.run_after > 0


def judge(pairs: list[SharedTest], *, threshold: float, any_drop: bool = False, require_power: bool = False,
          lost: list[str] | None = None) -> Verdicts:
    """Every test's word, the run's word and the gate's decision (see the module's docstring)."""
    live = [p for p in pairs if not p.deterministic and _usable(p.table)]
    chances = _live_chances(live, threshold)
    tests = {p.name: _test_word(p, chances.get(p.name), threshold, any_drop) for p in pairs}
    run = _run_word(pairs, tests, chances.get(None), threshold)
    return Verdicts(tests, run, _gate(tests, run, require_power, lost or []))


def _live_chances(live: list[SharedTest], threshold: float) -> dict[str | None, Chance]:
    """The chance statistics of each live test (by name) and of the run (None): one weighted-Holm family."""
    if not live:
        return {}
    tables = [p.table for p in live if p.table is not None]
    m = len(tables)
    pooled = stratified_worse(tables)
    own = [fisher_worse(*t) for t in tables]
    adjusted = holm([pooled.p_value, *own], [RUN_WEIGHT, *[(1 - RUN_WEIGHT) / m] * m])
    out: dict[str | None, Chance] = {}
    for pair, t, p, p_adj in zip(live, tables, own, adjusted[1:]):
        change = change_interval([t])
        assert change is not None
        chance = Chance(test="fisher", p_value=p, p_holm=p_adj, change=change, trials=min(t.run_before, t.run_after))
        out[pair.name] = _with_power(chance, t.passed_before / t.run_before, threshold, m, pooled=False)
    change, pow_k = change_interval(tables), change_interval(tables, pass_pow_k=True)
    assert change is not None
    trials = max(1, round(sum(min(t.run_before, t.run_after) for t in tables) / m))
    rate = sum(t.passed_before for t in tables) / sum(t.run_before for t in tables)
    run = Chance(test=f"stratified {pooled.method}", p_value=pooled.p_value, p_holm=adjusted[0], change=change,
                 pass_pow_k_change=pow_k, trials=trials, tests=m)
    out[None] = _with_power(run, rate, threshold, m, pooled=True)
    return out


def _with_power(chance: Chance, rate: float, threshold: float, tests: int, *, pooled: bool) -> Chance:
    """For a claim that cannot tell: the smallest drop its trials tell, and the trials that would tell the threshold
    (80% power, at the level the claim is first tested at; pooled: over `tests` tests alike)."""
    if _live_word(chance, threshold) != "cannot tell":
        return chance
    level, over = level_for(tests, pooled=pooled), tests if pooled else 1
    chance.smallest_drop = smallest_drop(rate, chance.trials, tests=over, level=level)
    chance.trials_to_tell = trials_needed(rate, min(threshold, 1.0), tests=over, level=level)
    return chance


def _test_word(pair: SharedTest, chance: Chance | None, threshold: float, any_drop: bool) -> Judgement:
    counts = _counts(pair.table)
    if pair.breaches:
        return Judgement(word="worse", basis="safety", chance=chance,
                         reason="safety: " + "; ".join(b.text() for b in pair.breaches))
    dropped = pair.seen_drop or pair.rate_fell
    if pair.deterministic:
        return Judgement(word="worse" if dropped else "not worse", basis="deterministic", reason=counts)
    if any_drop and dropped:
        return Judgement(word="worse", basis="any_drop", reason=f"{counts}; --any-drop: every drop counts",
                         chance=chance)
    if chance is None:
        return Judgement(word="cannot tell", basis="live", reason=f"{counts}: nothing to weigh against chance")
    return Judgement(word=_live_word(chance, threshold), basis="live", chance=chance,
                     reason=f"{counts}; {_chance_text(chance, threshold, pooled=False)}")


def _live_word(chance: Chance, threshold: float) -> Word:
    if chance.p_holm <= ALPHA:
        return "worse"
    return "not worse" if chance.change[1] >= -threshold - 1e-9 else "cannot tell"


def _chance_text(chance: Chance, threshold: float, *, pooled: bool) -> str:
    """`one-sided Fisher p=0.50 (Holm 1.00); pass@1 change -0.20 [-0.62, +0.24]; ...what would tell`."""
    test = "exact test stratified by test (CMH)" if chance.test == "stratified exact" else (
        "CMH test stratified by test (normal approximation)" if pooled else "one-sided Fisher")
    text = f"{test} {p_text(chance.p_value)} (Holm-adjusted {p_text(chance.p_holm)}); pass@1 change {_span(chance.change)}"
    if chance.pass_pow_k_change is not None:
        text += f", pass^k change {_span(chance.pass_pow_k_change)}"
    word = _live_word(chance, threshold)
    if word == "not worse":
        return text + f": excludes a drop bigger than {threshold:.2f}"
    if word == "cannot tell":
        per = " per test" if pooled else ""
        seen = (f"{chance.trials} trials{per} see a drop of {chance.smallest_drop:.2f} or more" if chance.smallest_drop
                else f"{chance.trials} trials{per} see no drop at all")
        text += (f"; {seen} (80% power); about {chance.trials_to_tell} trials{per} in each run would tell "
                 f"{threshold:.2f}")
    return text


def _run_word(pairs: list[SharedTest], tests: dict[str, Judgement], chance: Chance | None,
              threshold: float) -> Judgement:
    """The run's word: worse when any test is, or the pooled evidence says so; not worse when no test is worse and
    (if any test is live) the pooled interval excludes a drop bigger than the threshold; else cannot tell."""
    if not tests:  # no verdict without looking
        return Judgement(word="cannot tell", basis="deterministic", reason="no test was graded by both runs")
    worse = [name for name, j in tests.items() if j.word == "worse"]
    live_word = _live_word(chance, threshold) if chance is not None else None
    basis: Basis = "live" if chance is not None else "deterministic"
    parts = []
    if worse:
        parts.append(f"{len(worse)} of {len(tests)} test{'s' if len(tests) != 1 else ''} worse")
    if chance is not None:
        pooled = [p.table for p in pairs if not p.deterministic and p.table is not None and _usable(p.table)]
        totals = [sum(t[i] for t in pooled) for i in range(4)]
        parts.append(f"{_counts(Table(*totals))} over {chance.tests} live test{'s' if chance.tests != 1 else ''}; "
                     f"{_chance_text(chance, threshold, pooled=True)}")
    # A test that cannot tell and is outside the pooled evidence (no trial counts to weigh) was not looked at: the
    # run is not "not worse" over it (before, skill files without `passed` made the run "not worse").
    blind = [name for name, j in tests.items() if j.word == "cannot tell" and j.chance is None]
    if blind and not worse:
        parts.append(f"{len(blind)} of {len(tests)} test{'s' if len(tests) != 1 else ''} had nothing to weigh "
                     f"({_names(blind)})")
    elif not worse and chance is None:
        parts.append(f"no test is worse ({len(tests)} compared)")
    word: Word = ("worse" if worse or live_word == "worse" else
                  "not worse" if live_word in (None, "not worse") and not blind else "cannot tell")
    return Judgement(word=word, basis=basis, reason="; ".join(parts), chance=chance)


def _names(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


def _gate(tests: dict[str, Judgement], run: Judgement, require_power: bool, lost: list[str]) -> Gate:
    reasons = []
    worse = [name for name, j in tests.items() if j.word == "worse"]
    unsure = [name for name, j in tests.items() if j.word == "cannot tell"]
    if worse:
        reasons.append(f"{len(worse)} test{'s' if len(worse) != 1 else ''} worse ({_names(worse)})")
    elif run.word == "worse":
        reasons.append("the run is worse (the evidence pooled over its tests)")
    reasons.extend(lost)
    if lost and not tests:  # "cannot tell" over no shared test is said by the lost tests already
        unsure_run = False
    else:
        unsure_run = run.word == "cannot tell"
    if require_power and (unsure or unsure_run):
        what = [*unsure, *(["the run"] if unsure_run else [])]
        reasons.append(f"cannot tell: {_names(what)} (--require-power)")
    if reasons:
        return Gate(failed=True, reasons=reasons, line="gate: fails: " + "; ".join(reasons))
    line = "gate: passes: nothing is worse"
    if unsure or unsure_run:
        what = [*unsure, *(["the run"] if unsure_run else [])]
        line += f"; cannot tell: {_names(what)} (--require-power fails on that)"
    return Gate(failed=False, line=line)
