"""Comparing two runs (before/after a configuration change): per-case deltas, regressions, config diff.

A case's value is its score when graders give one (the suite rubric), else its pass@1. A drop of
`threshold` (0.10 by default) or more is a regression, as the eval skill says; so is a case that passed before
and fails now whatever its score does (the rubric's total is clamped at 1.0, so a test can fail an `expect`
grader, or end in a model error, and keep its score).

A test that an interruption (Ctrl-C) stopped is "not finished", never "removed": the report lists it in
`unfinished_cases`, and the comparison says which run was interrupted and how many tests did not finish.
"""

from __future__ import annotations

import sys
import types
from typing import Any, Literal

from pydantic import BaseModel, Field

from .results import SCHEMA_VERSION, CaseResult, RunReport

__all__ = ["Comparison", "CaseDelta", "ConfigChange", "compare", "REGRESSION_THRESHOLD", "delta_lines", "config_diff",
           "flatten_config", "movement", "format_value", "warning_line", "dropped", "note_lines"]

REGRESSION_THRESHOLD = 0.10
_EPSILON = 1e-9  # 0.95 -> 0.85 is a drop of exactly 0.10, whatever binary floating point says

Movement = Literal["improved", "regressed", "unchanged", "added", "removed", "not_finished"]


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


class ConfigChange(BaseModel):
    key: str
    before: Any = None
    after: Any = None


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

    @property
    def has_regressions(self) -> bool:
        return bool(self.regressions)

    def gate_problems(self) -> list[str]:
        """Why `--fail-on-regression` fails: regressions, and tests the after run lost (removed, or not finished
        because it was interrupted). An empty list passes."""
        problems = []
        if self.regressions:
            problems.append(_count(len(self.regressions), "regression"))
        if self.removed:
            problems.append(f"{_count(len(self.removed), 'test')} removed ({', '.join(self.removed)})")
        if self.not_finished:
            problems.append(f"{_count(len(self.not_finished), 'test')} did not finish in {self.after_run_id or 'the later run'}")
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
    a, b = flatten_config(before), flatten_config(after)
    return [ConfigChange(key=k, before=a.get(k), after=b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def _why(case: CaseResult) -> str:
    from .render.text import why_failed  # the one wording of "why a case failed"

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


def compare(before: RunReport, after: RunReport, *, threshold: float = REGRESSION_THRESHOLD) -> Comparison:
    """Compare two reports case by case (by name), in the after run's order, removed cases last. `threshold` must be
    above 0: a drop of 0 or less would make unchanged (or improved) tests regressions."""
    if not threshold > 0:
        raise ValueError(f"threshold must be greater than 0, got {threshold:g}")
    old = {c.name: c for c in before.cases if not c.skipped}
    new = {c.name: c for c in after.cases if not c.skipped}
    stopped_before, stopped_after = set(before.unfinished_cases), set(after.unfinished_cases)
    deltas: list[CaseDelta] = []
    for name, case in new.items():
        prior = old.get(name)
        common = dict(
            name=name, after=case.value, passed_after=case.passed, pass_at_1_after=case.pass_at_1,
            pass_pow_k_after=case.pass_pow_k,
        )
        if prior is None:
            if name in stopped_before:  # not new: the earlier run was interrupted before it finished
                deltas.append(CaseDelta(status="not_finished", unfinished_in="before", **common))
            else:
                deltas.append(CaseDelta(status="added", **common))
            continue
        delta = None if case.value is None or prior.value is None else case.value - prior.value
        newly_failing = prior.passed is True and case.passed is False
        regression = newly_failing or (delta is not None and delta < -_EPSILON and delta <= -threshold + _EPSILON)
        status: Movement = "unchanged" if delta is None or abs(delta) < _EPSILON else ("improved" if delta > 0 else "regressed")
        deltas.append(
            CaseDelta(status=status, before=prior.value, delta=delta, regression=regression, newly_failing=newly_failing,
                      failure_after=_why(case) if newly_failing else None, passed_before=prior.passed,
                      pass_at_1_before=prior.pass_at_1, pass_pow_k_before=prior.pass_pow_k, **common)
        )
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
    deltas += gone
    return Comparison(
        threshold=threshold,
        before_run_id=before.run_id,
        after_run_id=after.run_id,
        cases=deltas,
        added=[d.name for d in deltas if d.status == "added"],
        removed=[d.name for d in deltas if d.status == "removed"],
        not_finished=[d.name for d in deltas if d.unfinished_in == "after"],
        regressions=[d.name for d in deltas if d.regression],
        status_before=before.status,
        status_after=after.status,
        unfinished_before=list(before.unfinished_cases),
        unfinished_after=list(after.unfinished_cases),
        avg_score_before=_avg_score(list(old.values())),
        avg_score_after=_avg_score(list(new.values())),
        passed_before=sum(1 for c in old.values() if c.passed),
        total_before=len(old),
        passed_after=sum(1 for c in new.values() if c.passed),
        total_after=len(new),
        trials_before=before.trial_count,
        trials_after=after.trial_count,
        pass_at_1_before=before.pass_at_1,
        pass_at_1_after=after.pass_at_1,
        pass_pow_k_before=before.pass_pow_k,
        pass_pow_k_after=after.pass_pow_k,
        config_changes=config_diff(before.config_snapshot, after.config_snapshot),
    )


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


def delta_lines(comparison: Comparison) -> list[str]:
    """The seed's lines, exactly:

        read-file:    0.95 -> 0.88  ▼ -0.07
        web-search:   0.75 -> 0.75  = unchanged
        Avg score: 0.83 -> 0.88  ▲ +0.05
        Pass rate: 3/5 -> 4/5   ▲ +1

    and, only when the runs' trials per test differ, `Trials: 1 -> 3`.
    """
    lines: list[str] = []
    width = max((len(d.name) + 1 for d in comparison.cases), default=0) + 2
    for d in comparison.cases:
        label = f"{d.name}:".ljust(width)
        if d.status == "added":
            lines.append(f"{label}  new -> {_num(d.after)}  + added")
        elif d.status == "removed":
            lines.append(f"{label}{_num(d.before)} -> gone  - removed")
        elif d.status == "not_finished":
            before = "not finished" if d.unfinished_in == "before" else _num(d.before)
            after = "not finished" if d.unfinished_in == "after" else _num(d.after)
            lines.append(f"{label}{before} -> {after}  (interrupted)")
        else:
            lines.append(f"{label}{_num(d.before)} -> {_num(d.after)}  {movement(d.delta)}")
    lines.append("")
    avg_after = _num(comparison.avg_score_after)
    rate_after = f"{comparison.passed_after}/{comparison.total_after}"
    column = max(len(avg_after), len(rate_after))
    avg_delta = (
        None if comparison.avg_score_before is None or comparison.avg_score_after is None
        else comparison.avg_score_after - comparison.avg_score_before
    )
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
            delta = None if before is None or after is None else after - before
            lines.append(f"{label}:    {_num(before)} -> {_num(after).ljust(column)}  {movement(delta)}".rstrip())
    lines.extend(note_lines(comparison))
    for name in comparison.regressions:
        lines.append(warning_line(comparison, next(c for c in comparison.cases if c.name == name)))
    if comparison.config_changes:
        lines.append("Config changes:")
        lines.extend(f"  {c.key}: {format_value(c.before)} -> {format_value(c.after)}" for c in comparison.config_changes)
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
        elif total == 0:
            lines.append(f"note: run {run_id} graded no tests")
    return lines


def dropped(comparison: Comparison, d: CaseDelta) -> bool:
    """The case's value fell by the threshold or more (the seed's regression)."""
    return d.delta is not None and d.delta < -_EPSILON and d.delta <= -comparison.threshold + _EPSILON


def warning_line(comparison: Comparison, d: CaseDelta) -> str:
    """The warning for one regression: the seed's score-drop line, or, for a case that passed before and fails now
    without such a drop, a line that says so and why."""
    if dropped(comparison, d):
        return (f"WARNING: regression in {d.name}: {_num(d.before)} -> {_num(d.after)} "
                f"({d.delta:+.2f}, a drop of {comparison.threshold:.2f} or more)")
    why = f": {d.failure_after}" if d.failure_after else ""
    return f"WARNING: regression in {d.name}: passed -> failed (score {_num(d.before)} -> {_num(d.after)}){why}"


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
