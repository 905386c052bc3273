"""Comparing two runs (before/after a configuration change): per-case deltas, regressions, config diff.

A case's value is its score when graders give one (the suite rubric), else its pass@1. Changes are decided on the
values compare shows (two decimals): `0.88 -> 0.78  ▼ -0.10` is a drop of 0.10 whatever the hidden digits were. A
drop of `threshold` (0.10 by default) or more is a regression, as the eval skill says; so is a case that passed
before and fails now whatever its score does (a test can fail an `expect` grader, or end in a model error, and
keep its score), and a sub-score (the rubric's tool accuracy, turn efficiency, output quality) that dropped by the
threshold or more behind an unchanged total.

When the runs selected different tests (a `--tag` run after a full run), the summary compares the tests both ran;
the others are listed as added or removed. When either run has more than one trial per test, every change is tested
against chance (`trialrun.report._stats`): Fisher's exact test on each test's passed/failed trials, and the exact sign
test across the shared tests for the run's pass@1 and score.

A test that an interruption (Ctrl-C) stopped is "not finished", never "removed": the report lists it in
`unfinished_cases`, and the comparison says which run was interrupted and how many tests did not finish.
"""

from __future__ import annotations

import sys
import types
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, Field, model_serializer

from . import _stats, metrics
from ._why import why_failed
from .results import SCHEMA_VERSION, CaseResult, RunReport

__all__ = ["Comparison", "CaseDelta", "ConfigChange", "SubScoreMove", "Significance", "compare", "REGRESSION_THRESHOLD",
           "delta_lines", "config_diff", "flatten_config", "movement", "format_value", "warning_line", "dropped",
           "note_lines", "chance_lines", "chance_text", "regression_reason", "shown"]

REGRESSION_THRESHOLD = 0.10
_EPSILON = 1e-9  # 0.95 -> 0.85 is a drop of exactly 0.10, whatever binary floating point says

Movement = Literal["improved", "regressed", "unchanged", "added", "removed", "not_finished"]


class SubScoreMove(BaseModel):
    """One sub-score that moved (values as shown, two decimals)."""

    name: str
    before: float
    after: float
    delta: float


class Significance(BaseModel):
    """Whether a change is beyond what chance explains at the runs' trial counts, and by which test."""

    test: str = Field(description="fisher_exact (one test's trials) or sign_test (paired, across tests)")
    p_value: float
    significant: bool = Field(description=f"p_value < {_stats.ALPHA}")
    detail: str = Field(default="", description="the counts the test looked at")


class CaseDelta(BaseModel):
    name: str
    status: Movement
    before: float | None = None
    after: float | None = None
    delta: float | None = None
    regression: bool = False
    newly_failing: bool = Field(default=False, description="passed before, fails now (a regression whatever the score)")
    failure_after: str | None = Field(default=None, description="why it fails now, when it newly fails")
    passed_before: bool | None = None
    passed_after: bool | None = None
    pass_at_1_before: float | None = None
    pass_at_1_after: float | None = None
    pass_pow_k_before: float | None = None
    pass_pow_k_after: float | None = None
    unfinished_in: Literal["before", "after"] | None = Field(
        default=None, description="for status not_finished: the run an interruption stopped before this test finished")
    newly_passing: bool = Field(default=False, description="failed before, passes now (an improvement whatever the score)")
    sub_score_moves: list[SubScoreMove] = Field(default_factory=list)
    sub_score_regressions: list[str] = Field(default_factory=list, description="sub-scores that dropped by the threshold or more")
    trials_passed_before: int | None = None
    trials_run_before: int | None = None
    trials_passed_after: int | None = None
    trials_run_after: int | None = None
    pass_at_1_interval_before: tuple[float, float] | None = None
    pass_at_1_interval_after: tuple[float, float] | None = None
    significance: Significance | None = Field(
        default=None, description="for a changed test when either run has more than one trial per test")

    @property
    def significant(self) -> bool | None:
        return None if self.significance is None else self.significance.significant


class ConfigChange(BaseModel):
    key: str
    before: Any = None
    after: Any = None
    #: For a text of several lines (instructions, a system prompt): what changed in it, as a short unified diff.
    diff: str | None = None

    @model_serializer(mode="wrap")
    def _without_empty_diff(self, handler: Any) -> Any:
        """`diff` only where there is one: a change of a short value reads as before and after, as it always did."""
        data = handler(self)
        if isinstance(data, dict) and data.get("diff") is None:
            data.pop("diff", None)
        return data


class Comparison(BaseModel):
    """What changed between two runs."""

    schema_version: str = SCHEMA_VERSION
    threshold: float = REGRESSION_THRESHOLD
    before_run_id: str | None = None
    after_run_id: str | None = None
    cases: list[CaseDelta] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    not_finished: list[str] = Field(default_factory=list, description="tests the after run's interruption stopped")
    regressions: list[str] = Field(default_factory=list)
    status_before: str = "completed"
    status_after: str = "completed"
    unfinished_before: list[str] = Field(default_factory=list)
    unfinished_after: list[str] = Field(default_factory=list)
    avg_score_before: float | None = None
    avg_score_after: float | None = None
    passed_before: int = 0
    total_before: int = 0
    passed_after: int = 0
    total_after: int = 0
    trials_before: int = 1
    trials_after: int = 1
    pass_at_1_before: float | None = None
    pass_at_1_after: float | None = None
    pass_pow_k_before: float | None = None
    pass_pow_k_after: float | None = None
    config_changes: list[ConfigChange] = Field(default_factory=list)
    selection_differs: bool = Field(default=False, description="the runs graded different tests; the summary covers "
                                                               "the tests both ran")
    shared: int = Field(default=0, description="tests both runs graded")
    pass_at_1_significance: Significance | None = None
    score_significance: Significance | None = None
    trials_needed: int | None = Field(default=None, description="trials per test needed to tell a pass-rate change of "
                                                                "the threshold's size from chance (5%, 80% power)")

    @property
    def has_regressions(self) -> bool:
        return bool(self.regressions)

    def counted_regressions(self, *, any_drop: bool = False) -> list[str]:
        """The regressions `--fail-on-regression` counts: every one with one trial per test (or `any_drop`), else
        only those beyond chance (a regression that no test of chance can judge counts)."""
        if any_drop or not self.multi_trial:
            return list(self.regressions)
        by_name = {d.name: d for d in self.cases}
        return [name for name in self.regressions if by_name[name].significant is not False]

    def gate_problems(self, *, any_drop: bool = False) -> list[str]:
        """Why `--fail-on-regression` fails: regressions (with several trials per test, only those beyond chance,
        unless `any_drop`), tests the after run lost (removed, or not finished because it was interrupted), and a
        comparison of no shared test at all (nothing was compared). An empty list passes."""
        problems = []
        counted = self.counted_regressions(any_drop=any_drop)
        if counted:
            problems.append(_count(len(counted), "regression") + ("" if any_drop or not self.multi_trial else " beyond chance"))
        if self.removed:
            problems.append(f"{_count(len(self.removed), 'test')} removed ({', '.join(self.removed)})")
        if self.not_finished:
            problems.append(f"{_count(len(self.not_finished), 'test')} did not finish in {self.after_run_id or 'the later run'}")
        if not self.shared and not problems:  # no verdict without looking: "no regression" over no shared test
            problems.append("no test was graded by both runs, so nothing was compared")
        return problems

    @property
    def multi_trial(self) -> bool:
        return self.trials_before > 1 or self.trials_after > 1


def flatten_config(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested config keys joined with dots ({"policy": {"default": "allow"}} -> {"policy.default": "allow"})."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict) and value:
            out.update(flatten_config(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def config_diff(before: dict[str, Any], after: dict[str, Any]) -> list[ConfigChange]:
    """Changed, added and removed keys of two config snapshots (nested keys joined with dots)."""
    from ._text_diff import text_diff

    a, b = flatten_config(before), flatten_config(after)
    return [ConfigChange(key=k, before=a.get(k), after=b.get(k), diff=text_diff(a.get(k), b.get(k)))
            for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def _why(case: CaseResult) -> str:
    return why_failed(case, limit=160)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _avg_score(cases: list[CaseResult]) -> float | None:
    """A run's average as every view shows it (RunReport.score): the mean over the cases that have a score. Only a
    run where no case is scored averages the cases' pass@1 instead (their compare value)."""
    scored = [c.score for c in cases if c.score is not None]
    return _mean(scored) if scored else _mean([c.value for c in cases if c.value is not None])


def shown(value: float) -> float:
    """A value as compare prints it (two decimals): what its changes are decided on."""
    return round(value, 2)


def _shown_delta(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else round(shown(after) - shown(before), 2)


def _is_drop(delta: float | None, threshold: float) -> bool:
    return delta is not None and delta < -_EPSILON and delta <= -threshold + _EPSILON


def _sub_score_moves(prior: CaseResult, case: CaseResult) -> list[SubScoreMove]:
    old, new = prior.sub_scores or {}, case.sub_scores or {}
    moves = []
    for key in (k for k in new if k in old):
        delta = _shown_delta(old[key], new[key])
        if delta is not None and abs(delta) > _EPSILON:
            moves.append(SubScoreMove(name=key, before=shown(old[key]), after=shown(new[key]), delta=delta))
    return moves


def _trial_counts(case: CaseResult) -> tuple[int, int] | None:
    """(passed, run) trials of a case; a result without trials (the eval skill's format) is one trial."""
    if case.trials:
        return case.passed_trials, case.trial_count
    return None if case.passed is None else (int(case.passed), 1)


def _case_significance(before: tuple[int, int], after: tuple[int, int]) -> Significance:
    (pa, na), (pb, nb) = before, after
    p = _stats.fisher_exact(pa, na - pa, pb, nb - pb)
    return Significance(test="fisher_exact", p_value=p, significant=p < _stats.ALPHA,
                        detail=f"{pa}/{na} -> {pb}/{nb} trials passed")


class _AfterSide(TypedDict):
    """The after run's side of a test's delta, shared by every status a test in the after run can have."""

    name: str
    after: float | None
    passed_after: bool | None
    pass_at_1_after: float | None
    pass_pow_k_after: float | None


def _both(pairs: list[tuple[float | None, float | None]]) -> list[tuple[float, float]]:
    """The pairs where both runs have a value."""
    return [(before, after) for before, after in pairs if before is not None and after is not None]


def _paired(pairs: list[tuple[float, float]]) -> Significance | None:
    if not pairs:
        return None
    p, rose, fell = _stats.sign_test([after - before for before, after in pairs])
    return Significance(test="sign_test", p_value=p, significant=p < _stats.ALPHA,
                        detail=f"{_count(len(pairs), 'test')}: {rose} up, {fell} down")


def compare(before: RunReport, after: RunReport, *, threshold: float = REGRESSION_THRESHOLD) -> Comparison:
    """Compare two reports case by case (by name), in the after run's order, removed cases last. `threshold` must be
    above 0: a drop of 0 or less would make unchanged (or improved) tests regressions."""
    if not threshold > 0:
        raise ValueError(f"threshold must be greater than 0, got {threshold:g}")
    old = {c.name: c for c in before.cases if not c.skipped}
    new = {c.name: c for c in after.cases if not c.skipped}
    multi = before.trial_count > 1 or after.trial_count > 1
    deltas = _case_deltas(old, new, before, after, threshold, multi)
    added = [d.name for d in deltas if d.status == "added"]
    removed = [d.name for d in deltas if d.status == "removed"]
    both = [name for name in new if name in old]
    selection_differs = bool(added or removed) and bool(old) and bool(new)  # a run that graded nothing is noted as such
    # With different selections, the summary covers the tests both ran: a pass-rate change that comes only from
    # the selection is not a change.
    old_summary = [old[n] for n in both] if selection_differs else list(old.values())
    new_summary = [new[n] for n in both] if selection_differs else list(new.values())
    pairs_p1 = _both([(old[n].pass_at_1, new[n].pass_at_1) for n in both])
    pairs_value = _both([(old[n].value, new[n].value) for n in both])
    p1_before = metrics.mean(c.pass_at_1 for c in old_summary if c.pass_at_1 is not None)
    needed = None
    if multi and p1_before is not None:
        needed = _stats.trials_needed(p1_before, min(threshold, 1.0))
    return Comparison(
        threshold=threshold,
        before_run_id=before.run_id,
        after_run_id=after.run_id,
        cases=deltas,
        added=added,
        removed=removed,
        not_finished=[d.name for d in deltas if d.unfinished_in == "after"],
        regressions=[d.name for d in deltas if d.regression],
        status_before=before.status,
        status_after=after.status,
        unfinished_before=list(before.unfinished_cases),
        unfinished_after=list(after.unfinished_cases),
        avg_score_before=_avg_score(old_summary),
        avg_score_after=_avg_score(new_summary),
        passed_before=sum(1 for c in old_summary if c.passed),
        total_before=len(old_summary),
        passed_after=sum(1 for c in new_summary if c.passed),
        total_after=len(new_summary),
        trials_before=before.trial_count,
        trials_after=after.trial_count,
        pass_at_1_before=p1_before if selection_differs else before.pass_at_1,
        pass_at_1_after=(metrics.mean(c.pass_at_1 for c in new_summary if c.pass_at_1 is not None)
                         if selection_differs else after.pass_at_1),
        pass_pow_k_before=(metrics.mean(c.pass_pow_k for c in old_summary if c.pass_pow_k is not None)
                           if selection_differs else before.pass_pow_k),
        pass_pow_k_after=(metrics.mean(c.pass_pow_k for c in new_summary if c.pass_pow_k is not None)
                          if selection_differs else after.pass_pow_k),
        config_changes=config_diff(before.config_snapshot, after.config_snapshot),
        selection_differs=selection_differs,
        shared=len(both),
        pass_at_1_significance=_paired(pairs_p1) if multi else None,
        score_significance=_paired(pairs_value) if multi else None,
        trials_needed=needed,
    )


def _case_deltas(old: dict[str, CaseResult], new: dict[str, CaseResult], before: RunReport, after: RunReport,
                 threshold: float, multi: bool) -> list[CaseDelta]:
    """Every test's delta: in the after run's order, then the tests an interruption of the after run stopped, then
    the removed ones. A test only one run has is "not finished" when the other run was stopped before it."""
    stopped_before, stopped_after = set(before.unfinished_cases), set(after.unfinished_cases)
    deltas: list[CaseDelta] = []
    for name, case in new.items():
        prior = old.get(name)
        common = _AfterSide(
            name=name, after=case.value, passed_after=case.passed, pass_at_1_after=case.pass_at_1,
            pass_pow_k_after=case.pass_pow_k,
        )
        if prior is None:
            if name in stopped_before:  # not new: the earlier run was interrupted before it finished
                deltas.append(CaseDelta(status="not_finished", unfinished_in="before", **common))
            else:
                deltas.append(CaseDelta(status="added", **common))
            continue
        deltas.append(_shared_delta(prior, case, common, threshold, multi))
    gone: list[CaseDelta] = []
    for name, prior in old.items():
        if name not in new:
            unfinished = name in stopped_after
            (deltas if unfinished else gone).append(CaseDelta(
                name=name, status="not_finished" if unfinished else "removed", before=prior.value,
                passed_before=prior.passed, pass_at_1_before=prior.pass_at_1, pass_pow_k_before=prior.pass_pow_k,
                unfinished_in="after" if unfinished else None))
    for name in after.unfinished_cases:  # stopped in the later run, and not finished (or skipped) in the earlier
        if name not in old and name not in new:
            deltas.append(CaseDelta(name=name, status="not_finished", unfinished_in="after"))
    return deltas + gone


def _shared_delta(prior: CaseResult, case: CaseResult, common: _AfterSide, threshold: float, multi: bool) -> CaseDelta:
    """The delta of a test both runs finished: its movement, whether it regressed (a drop of the threshold, a pass
    that became a fail, a sub-score that dropped), and with several trials whether the change is beyond chance."""
    delta = _shown_delta(prior.value, case.value)
    newly_failing = prior.passed is True and case.passed is False
    newly_passing = prior.passed is False and case.passed is True
    moves = _sub_score_moves(prior, case)
    sub_drops = [m.name for m in moves if _is_drop(m.delta, threshold)]
    regression = newly_failing or _is_drop(delta, threshold) or bool(sub_drops)
    if delta is not None and abs(delta) >= _EPSILON:
        status: Movement = "improved" if delta > 0 else "regressed"
    else:
        status = "regressed" if newly_failing else "improved" if newly_passing else "unchanged"
    counts_before, counts_after = _trial_counts(prior), _trial_counts(case)
    significance = None
    changed = status != "unchanged" or bool(moves) or _shown_delta(prior.pass_at_1, case.pass_at_1) not in (None, 0.0)
    if multi and changed and counts_before and counts_after:
        significance = _case_significance(counts_before, counts_after)
    return CaseDelta(status=status, before=prior.value, delta=delta, regression=regression, newly_failing=newly_failing,
                     failure_after=_why(case) if newly_failing else None, passed_before=prior.passed,
                     pass_at_1_before=prior.pass_at_1, pass_pow_k_before=prior.pass_pow_k, newly_passing=newly_passing,
                     sub_score_moves=moves, sub_score_regressions=sub_drops,
                     trials_passed_before=counts_before[0] if counts_before else None,
                     trials_run_before=counts_before[1] if counts_before else None,
                     trials_passed_after=counts_after[0] if counts_after else None,
                     trials_run_after=counts_after[1] if counts_after else None,
                     pass_at_1_interval_before=metrics.wilson_interval(*counts_before) if counts_before else None,
                     pass_at_1_interval_after=metrics.wilson_interval(*counts_after) if counts_after else None,
                     significance=significance, **common)


# -- the text the eval skill shows ---------------------------------------------------------------------------
def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def movement(delta: float | None, *, integer: bool = False) -> str:
    """"▲ +0.20", "▼ -0.07" or "= unchanged", as the eval skill writes a change."""
    if delta is None:
        return ""
    if abs(delta) < _EPSILON:
        return "= unchanged"
    text = f"{delta:+d}" if integer else f"{delta:+.2f}"
    return f"{'▲' if delta > 0 else '▼'} {text}"


def _interval(interval: tuple[float, float] | None) -> str:
    return "" if interval is None else f" [{interval[0]:.2f}, {interval[1]:.2f}]"


def chance_text(significance: Significance) -> str:
    """`beyond chance (Fisher p=0.008)` or `not significant (sign test over 5 tests: 0 up, 1 down; p=1.00)`."""
    p = significance.p_value
    shown_p = f"{p:.3f}" if p < 0.01 else f"{p:.2f}"
    test = "Fisher" if significance.test == "fisher_exact" else f"sign test over {significance.detail};"
    return f"{'beyond chance' if significance.significant else 'not significant'} ({test} p={shown_p})"


def _case_line(comparison: Comparison, d: CaseDelta, label: str) -> str:
    """`read-file:  0.95 -> 0.88  ▼ -0.07` and what else moved: a pass/fail flip, the sub-scores behind an unchanged
    total, and (several trials per test) whether the change is beyond chance."""
    moved = movement(d.delta)
    if d.newly_failing or d.newly_passing:
        flip = "now fails" if d.newly_failing else "now passes"
        moved = f"{'▼' if d.newly_failing else '▲'} {flip}" if moved in ("", "= unchanged") else f"{moved}, {flip}"
    line = f"{label}{_num(d.before)} -> {_num(d.after)}  {moved}"
    if d.sub_score_moves and (d.delta is None or abs(d.delta) < _EPSILON):
        line += "; " + ", ".join(f"{m.name} {m.before:.2f} -> {m.after:.2f} ({m.delta:+.2f})" for m in d.sub_score_moves)
    if d.significance is not None:
        line += (f"  [{d.significance.detail}: {chance_text(d.significance)}; pass@1 {_num(d.pass_at_1_before)}"
                 f"{_interval(d.pass_at_1_interval_before)} -> {_num(d.pass_at_1_after)}{_interval(d.pass_at_1_interval_after)}]")
    return line


def delta_lines(comparison: Comparison) -> list[str]:
    """The seed's lines, exactly:

        read-file:    0.95 -> 0.88  ▼ -0.07
        web-search:   0.75 -> 0.75  = unchanged
        Avg score: 0.83 -> 0.88  ▲ +0.05
        Pass rate: 3/5 -> 4/5   ▲ +1

    and what the seed does not cover: `Trials: 1 -> 3` when the runs' trials per test differ, a line above the table
    when the runs selected different tests, pass/fail flips and sub-score moves on a test's line, and with several
    trials per test whether each change is beyond chance, and how many trials would tell one apart.
    """
    lines: list[str] = []
    if comparison.selection_differs:
        lines.append(f"note: the runs graded different tests; comparing the {_count(comparison.shared, 'test')} both ran "
                     f"({len(comparison.removed)} only in {comparison.before_run_id or 'the earlier run'}: removed; "
                     f"{len(comparison.added)} only in {comparison.after_run_id or 'the later run'}: added)")
    width = max((len(d.name) + 1 for d in comparison.cases), default=0) + 2
    for d in comparison.cases:
        label = f"{d.name}:".ljust(width)
        if d.status == "added":
            lines.append(f"{label}  new -> {_num(d.after)}  + added")
        elif d.status == "removed":
            lines.append(f"{label}{_num(d.before)} -> gone  - removed")
        elif d.status == "not_finished":
            shown_before = "not finished" if d.unfinished_in == "before" else _num(d.before)
            shown_after = "not finished" if d.unfinished_in == "after" else _num(d.after)
            lines.append(f"{label}{shown_before} -> {shown_after}  (interrupted)")
        else:
            lines.append(_case_line(comparison, d, label))
    lines.append("")
    avg_after = _num(comparison.avg_score_after)
    rate_after = f"{comparison.passed_after}/{comparison.total_after}"
    column = max(len(avg_after), len(rate_after))
    avg_delta = _shown_delta(comparison.avg_score_before, comparison.avg_score_after)
    lines.append(f"Avg score: {_num(comparison.avg_score_before)} -> {avg_after.ljust(column)}  {movement(avg_delta)}".rstrip())
    lines.append(
        f"Pass rate: {comparison.passed_before}/{comparison.total_before} -> {rate_after.ljust(column)}  "
        f"{movement(comparison.passed_after - comparison.passed_before, integer=True)}"
    )
    if comparison.trials_before != comparison.trials_after:  # K=1 vs K=3 scores are not a like-for-like change
        lines.append(f"Trials: {comparison.trials_before} -> {comparison.trials_after}")
    if comparison.multi_trial:
        for label, before, after in (
            ("pass@1", comparison.pass_at_1_before, comparison.pass_at_1_after),
            ("pass^k", comparison.pass_pow_k_before, comparison.pass_pow_k_after),
        ):
            lines.append(f"{label}:    {_num(before)} -> {_num(after).ljust(column)}  {movement(_shown_delta(before, after))}".rstrip())
        lines.extend(chance_lines(comparison))
    lines.extend(note_lines(comparison))
    for name in comparison.regressions:
        lines.append(warning_line(comparison, next(c for c in comparison.cases if c.name == name)))
    if comparison.config_changes:
        lines.append("Config changes:")
        lines.extend(line for c in comparison.config_changes for line in config_change_lines(c))
    return lines


def chance_lines(comparison: Comparison) -> list[str]:
    """With several trials per test: whether the run's change is beyond chance (paired across the tests both ran),
    and how many trials per test would tell a change of the threshold's size apart.

        Beyond chance: pass@1 not significant (sign test p=1.00; 5 tests: 0 up, 1 down); score ...
        Trials needed: about 74 per test to tell a pass-rate change of 0.10 from chance (this compare has 5; ...)
    """
    parts = [f"{label} {chance_text(sig)}" for label, sig in
             (("pass@1", comparison.pass_at_1_significance), ("score", comparison.score_significance)) if sig is not None]
    lines = [f"Beyond chance: {'; '.join(parts)}"] if parts else []
    if comparison.trials_needed is not None:
        k = (str(comparison.trials_before) if comparison.trials_before == comparison.trials_after
             else f"{comparison.trials_before} and {comparison.trials_after}")
        lines.append(f"Trials needed: about {comparison.trials_needed} per test to tell a pass-rate change of "
                     f"{comparison.threshold:.2f} from chance (these runs have {k}; two-sided 5%, 80% power, "
                     f"from pass@1 {_num(comparison.pass_at_1_before)})")
    return lines


def note_lines(comparison: Comparison) -> list[str]:
    """A line for each run that was interrupted, or graded no test: its numbers are not a like-for-like change.

        note: run eval_20260731_140000 was interrupted; 5 tests did not finish
    """
    lines = []
    for run_id, status, unfinished, total in (
        (comparison.before_run_id or "before", comparison.status_before, comparison.unfinished_before, comparison.total_before),
        (comparison.after_run_id or "after", comparison.status_after, comparison.unfinished_after, comparison.total_after),
    ):
        if status == "interrupted" or unfinished:
            lines.append(f"note: run {run_id} was interrupted; {_count(len(unfinished), 'test')} did not finish")
        elif total == 0 and not comparison.selection_differs:
            lines.append(f"note: run {run_id} graded no tests")
    return lines


def dropped(comparison: Comparison, d: CaseDelta) -> bool:
    """The case's value, as shown, fell by the threshold or more (the seed's regression)."""
    return _is_drop(d.delta, comparison.threshold)


def regression_reason(comparison: Comparison, d: CaseDelta) -> str:
    """Why a case is a regression, in words every renderer shows: the score drop, the sub-score drop behind the
    total, or that it passed before and fails now (and why), plus whether that is beyond chance."""
    moves = ", ".join(f"{m.name} {m.before:.2f} -> {m.after:.2f} ({m.delta:+.2f})"
                      for m in d.sub_score_moves if m.name in d.sub_score_regressions)
    if dropped(comparison, d):
        why = f"{_num(d.before)} -> {_num(d.after)} ({d.delta:+.2f}, a drop of {comparison.threshold:.2f} or more)"
    elif d.newly_failing:
        why = f"passed -> failed (score {_num(d.before)} -> {_num(d.after)})" + (f": {d.failure_after}" if d.failure_after else "")
        why += f"; sub-score drop: {moves}" if moves else ""
    else:
        why = f"{moves}, a drop of {comparison.threshold:.2f} or more behind a score of {_num(d.before)} -> {_num(d.after)}"
    if d.significance is not None:
        why += f"; {chance_text(d.significance)}"
    return why


def warning_line(comparison: Comparison, d: CaseDelta) -> str:
    """The warning for one regression: the seed's score-drop line, or the sub-score drop, or, for a case that
    passed before and fails now without such a drop, a line that says so and why."""
    return f"WARNING: regression in {d.name}: {regression_reason(comparison, d)}"


def config_change_lines(change: ConfigChange) -> list[str]:
    """A config change as compare prints it: `  key: before -> after`, or for a text of several lines the key and
    its unified diff, indented."""
    if change.diff is None:
        return [f"  {change.key}: {format_value(change.before)} -> {format_value(change.after)}"]
    return [f"  {change.key}: changed:", *(f"    {line}" for line in change.diff.splitlines())]


def format_value(value: Any) -> str:
    """A config value for people: lists joined with commas, None as "(none)"."""
    if value is None:
        return "(none)"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "[]"
    return str(value)


class _CallableModule(types.ModuleType):
    """`trialrun.compare(before, after)` as DESIGN names it, while `trialrun.compare` stays this module (a package's
    submodule attribute would otherwise replace a function of the same name as soon as the module is imported)."""

    def __call__(self, before: RunReport, after: RunReport, **options: Any) -> Comparison:
        return compare(before, after, **options)


sys.modules[__name__].__class__ = _CallableModule
