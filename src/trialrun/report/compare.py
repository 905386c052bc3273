"""Comparing two runs (before/after a configuration change): per-case deltas, regressions, config diff, and the
verdict on the change.

A case's value is its score when graders give one (the suite rubric), else its pass@1. Changes are decided on the
values compare shows (two decimals): `0.88 -> 0.78  ▼ -0.10` is a drop of 0.10 whatever the hidden digits were. A
drop of `threshold` (0.10 by default) or more is a regression, as the eval skill says; so is a case that passed
before and fails now whatever its score does (a test can fail an `expect` grader, or end in a model error, and
keep its score), and a sub-score (the rubric's tool accuracy, turn efficiency, output quality) that dropped by the
threshold or more behind an unchanged total. Those are the skill's warnings.

Whether the change is real is the verdict (`_verdict.judge`, the one function that decides it): each test and the
run get a word, worse, not worse or cannot tell. Between deterministic runs (scripted or replayed models in every
trial, as the trials recorded, `_models_used`) every drop is worse; a safety claim broken in any trial is worse
(`_safety`); between live runs the evidence is weighed against chance, pooled over the tests and per test (`_stats`,
`_intervals`, `_power`). The gate (`--fail-on-regression`) follows the words.

When the runs selected different tests (a `--tag` run after a full run), the summary compares the tests both ran;
the others are listed as added or removed. A test that an interruption (Ctrl-C) stopped is "not finished", never
"removed": the report lists it in `unfinished_cases`, and the comparison says which run was interrupted and how many
tests did not finish.
"""

from __future__ import annotations

import sys
import types
from typing import Any, TypedDict

from . import metrics
from ._comparison import REGRESSION_THRESHOLD, CaseDelta, Comparison, ConfigChange, Movement, SubScoreMove
from ._models_used import pair_of, run_models, trials_determinism
from ._safety import breaches
from ._stats import Table
from ._verdict import DETERMINISTIC_WHY, SharedTest, judge
from ._why import why_failed
from .results import CaseResult, RunReport

__all__ = ["Comparison", "CaseDelta", "ConfigChange", "SubScoreMove", "compare", "REGRESSION_THRESHOLD",
           "delta_lines", "config_diff", "flatten_config", "movement", "format_value", "warning_line", "dropped",
           "note_lines", "verdict_lines", "runs_line", "regression_reason", "shown", "config_change_lines"]

_EPSILON = 1e-9  # 0.95 -> 0.85 is a drop of exactly 0.10, whatever binary floating point says


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


class _AfterSide(TypedDict):
    """The after run's side of a test's delta, shared by every status a test in the after run can have."""

    name: str
    after: float | None
    passed_after: bool | None
    pass_at_1_after: float | None
    pass_pow_k_after: float | None


def compare(before: RunReport, after: RunReport, *, threshold: float = REGRESSION_THRESHOLD, any_drop: bool = False,
            require_power: bool = False) -> Comparison:
    """Compare two reports case by case (by name), in the after run's order, removed cases last, and judge the
    change: a word for each test both finished and for the run, and the gate's decision (`_verdict.judge`).
    `threshold` must be above 0 (a drop of 0 or less would make unchanged, or improved, tests regressions) and below
    1 (a drop of 1 or more cannot happen, so "not worse" would rule out nothing: 3/3 -> 0/3 was "not worse").
    `any_drop`: every drop of a live test is worse, chance or not; `require_power`: "cannot tell" fails the gate."""
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must be greater than 0 and less than 1, got {threshold:g}")
    old = {c.name: c for c in before.cases if not c.skipped}
    new = {c.name: c for c in after.cases if not c.skipped}
    deltas = _case_deltas(old, new, before, after, threshold)
    added = [d.name for d in deltas if d.status == "added"]
    removed = [d.name for d in deltas if d.status == "removed"]
    both = [name for name in new if name in old]
    selection_differs = bool(added or removed) and bool(old) and bool(new)  # a run that graded nothing is noted as such
    # With different selections, the summary covers the tests both ran: a pass-rate change that comes only from
    # the selection is not a change.
    old_summary = [old[n] for n in both] if selection_differs else list(old.values())
    new_summary = [new[n] for n in both] if selection_differs else list(new.values())

    def mean_of(cases: list[CaseResult], field: str, whole: float | None) -> float | None:
        return metrics.mean(getattr(c, field) for c in cases if getattr(c, field) is not None) if selection_differs else whole

    comparison = Comparison(
        threshold=threshold, before_run_id=before.run_id, after_run_id=after.run_id, cases=deltas, added=added,
        removed=removed, not_finished=[d.name for d in deltas if d.unfinished_in == "after"],
        regressions=[d.name for d in deltas if d.regression], status_before=before.status, status_after=after.status,
        unfinished_before=list(before.unfinished_cases), unfinished_after=list(after.unfinished_cases),
        avg_score_before=_avg_score(old_summary), avg_score_after=_avg_score(new_summary),
        passed_before=sum(1 for c in old_summary if c.passed), total_before=len(old_summary),
        passed_after=sum(1 for c in new_summary if c.passed), total_after=len(new_summary),
        trials_before=before.trial_count, trials_after=after.trial_count,
        pass_at_1_before=mean_of(old_summary, "pass_at_1", before.pass_at_1),
        pass_at_1_after=mean_of(new_summary, "pass_at_1", after.pass_at_1),
        pass_pow_k_before=mean_of(old_summary, "pass_pow_k", before.pass_pow_k),
        pass_pow_k_after=mean_of(new_summary, "pass_pow_k", after.pass_pow_k),
        config_changes=config_diff(before.config_snapshot, after.config_snapshot),
        selection_differs=selection_differs, shared=len(both), any_drop=any_drop, require_power=require_power,
    )
    return _judged(comparison, old, new, before, after)


def _judged(comparison: Comparison, old: dict[str, CaseResult], new: dict[str, CaseResult], before: RunReport,
            after: RunReport) -> Comparison:
    """The comparison with its verdict: each shared test's word (and its evidence), the run's, and the gate."""
    c = comparison
    c.models_before, c.models_after = run_models(before), run_models(after)
    pairs = []
    shared = [d for d in c.cases if d.status in ("improved", "regressed", "unchanged")]
    for d in shared:
        prior, case = old[d.name], new[d.name]
        d.deterministic = trials_determinism((prior.trials, before.config_snapshot),
                                             (case.trials, after.config_snapshot)) == "deterministic"
        d.safety_breaches = breaches(prior, case)
        table = None
        if d.trials_run_before is not None and d.trials_passed_before is not None and \
                d.trials_run_after is not None and d.trials_passed_after is not None:
            table = Table(d.trials_passed_before, d.trials_run_before, d.trials_passed_after, d.trials_run_after)
        pairs.append(SharedTest(d.name, table, d.deterministic, d.regression, d.safety_breaches))
    c.pairing = pair_of(c.models_before, c.models_after,
                        every_test_deterministic=bool(shared) and all(d.deterministic for d in shared))
    verdicts = judge(pairs, threshold=c.threshold, any_drop=c.any_drop, require_power=c.require_power,
                     lost=_lost(c, same_run=_same_run(before, after)))
    for d in shared:
        judgement = verdicts.tests[d.name]
        d.word, d.basis, d.reason, d.chance = judgement.word, judgement.basis, judgement.reason, judgement.chance
    c.run, c.gate = verdicts.run, verdicts.gate
    c.worse = [d.name for d in shared if d.word == "worse"]
    c.cannot_tell = [d.name for d in shared if d.word == "cannot tell"]
    return c


def _same_run(before: RunReport, after: RunReport) -> bool:
    """Whether both sides are one run (its id and start): `compare X X`, or a file and its copy."""
    return before.run_id is not None and before.run_id == after.run_id and before.started_at == after.started_at


def _lost(c: Comparison, *, same_run: bool = False) -> list[str]:
    """What fails the gate besides a worse test: a test the after run lost (removed, or not finished because it was
    interrupted: no evidence that nothing got worse), a comparison of no shared test (nothing was looked at), and a
    run compared with itself (it cannot show a change: before, `compare X X` passed the gate, "not worse")."""
    problems = []
    if same_run:
        problems.append(f"both sides are the same run ({c.before_run_id}): a run compared with itself shows no change")
    if c.removed:
        problems.append(f"{_count(len(c.removed), 'test')} removed ({', '.join(c.removed)})")
    if c.not_finished:
        problems.append(f"{_count(len(c.not_finished), 'test')} did not finish in {c.after_run_id or 'the later run'}")
    if not c.shared and not problems:
        problems.append("no test was graded by both runs, so nothing was compared")
    return problems


def _case_deltas(old: dict[str, CaseResult], new: dict[str, CaseResult], before: RunReport, after: RunReport,
                 threshold: float) -> list[CaseDelta]:
    """Every test's delta: in the after run's order, then the tests an interruption of the after run stopped, then
    the removed ones. A test only one run has is "not finished" when the other run was stopped before it."""
    stopped_before = set(before.unfinished_cases)
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
        deltas.append(_shared_delta(prior, case, common, threshold))
    gone: list[CaseDelta] = []
    stopped_after = set(after.unfinished_cases)
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


def _shared_delta(prior: CaseResult, case: CaseResult, common: _AfterSide, threshold: float) -> CaseDelta:
    """The delta of a test both runs finished: its movement, and whether it regressed as the eval skill says (a drop
    of the threshold, a pass that became a fail, a sub-score that dropped). Its word is `_judged`'s."""
    delta = _shown_delta(prior.value, case.value)
    newly_failing = prior.passed is True and case.passed is False
    newly_passing = prior.passed is False and case.passed is True
    moves = _sub_score_moves(prior, case)
    sub_drops = [m.name for m in moves if _is_drop(m.delta, threshold)]
    regression = newly_failing or _is_drop(delta, threshold) or bool(sub_drops)
    status: Movement
    if delta is not None and abs(delta) >= _EPSILON:
        status = "improved" if delta > 0 else "regressed"
    else:
        status = "regressed" if newly_failing else "improved" if newly_passing else "unchanged"
    counts_before, counts_after = _trial_counts(prior), _trial_counts(case)
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
                     **common)


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


def _case_line(d: CaseDelta, label: str) -> str:
    """`read-file:  0.95 -> 0.88  ▼ -0.07` and what else moved: a pass/fail flip, and the sub-scores behind an
    unchanged total. The word for the test is on its own line, under `Verdict:` (the seed's line stays as it is)."""
    moved = movement(d.delta)
    if d.newly_failing or d.newly_passing:
        flip = "now fails" if d.newly_failing else "now passes"
        moved = f"{'▼' if d.newly_failing else '▲'} {flip}" if moved in ("", "= unchanged") else f"{moved}, {flip}"
    line = f"{label}{_num(d.before)} -> {_num(d.after)}  {moved}"
    if d.sub_score_moves and (d.delta is None or abs(d.delta) < _EPSILON):
        line += "; " + ", ".join(f"{m.name} {m.before:.2f} -> {m.after:.2f} ({m.delta:+.2f})" for m in d.sub_score_moves)
    return line


def delta_lines(comparison: Comparison) -> list[str]:
    """The seed's lines, exactly:

        read-file:    0.95 -> 0.88  ▼ -0.07
        web-search:   0.75 -> 0.75  = unchanged
        Avg score: 0.83 -> 0.88  ▲ +0.05
        Pass rate: 3/5 -> 4/5   ▲ +1

    and what the seed does not cover: `Trials: 1 -> 3` when the runs' trials per test differ, a line above the table
    when the runs selected different tests, pass/fail flips and sub-score moves on a test's line, the seed's
    warnings and the config changes; then, below the skill's lines, what kind of runs these are, the word for each
    test and for the run (`verdict_lines`), and last what the gate decides and why.
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
            lines.append(_case_line(d, label))
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
    lines.extend(note_lines(comparison))
    for d in comparison.cases:
        if d.regression or d.safety_breaches:
            lines.append(warning_line(comparison, d))
    if comparison.config_changes:
        lines.append("Config changes:")
        lines.extend(line for c in comparison.config_changes for line in config_change_lines(c))
    lines.extend(verdict_lines(comparison))
    if comparison.gate is not None:
        lines.append(comparison.gate.line)
    return lines


def runs_line(comparison: Comparison) -> str:
    """What kind of runs these are, said once: deterministic ("every change is real"), live, mixed or unknown, and
    what that was decided from (the models each run's trials talked to)."""
    c = comparison
    basis = ""
    if c.models_before is not None and c.models_after is not None:
        basis = (f" (before, {c.models_before.kind}: {c.models_before.basis}; "
                 f"after, {c.models_after.kind}: {c.models_after.basis})")
    if c.pairing == "deterministic":
        return f"{DETERMINISTIC_WHY[:1].upper()}{DETERMINISTIC_WHY[1:]}; no chance statistics{basis}"
    if c.pairing == "mixed":
        return f"Mixed runs: one deterministic, one not; judged as live runs{basis}"
    if c.pairing == "unknown":
        return f"Runs of unknown kind (no model trialrun observed); judged as live runs{basis}"
    return (f"Live runs: each change is weighed against chance (one-sided; at most 5% false alarms over the whole "
            f"comparison){basis}")


def verdict_lines(comparison: Comparison) -> list[str]:
    """The kind of runs (once), then the word for each test both runs finished and for the run, with why:

        Verdict:
          read-notes:  worse: 3/3 -> 0/3 trials passed
          the run:     worse: 2 of 2 tests worse
    """
    c = comparison
    lines = ["", runs_line(c)]
    judged = [d for d in c.cases if d.word is not None]
    if not judged and c.run is None:
        return lines
    width = max((len(d.name) + 1 for d in judged), default=0)
    width = max(width, len("the run:")) + 2
    lines.append("Verdict:")
    lines.extend(f"  {(d.name + ':').ljust(width)}{d.word}: {d.reason}" for d in judged)
    if c.run is not None:
        lines.append(f"  {'the run:'.ljust(width)}{c.run.word}: {c.run.reason}")
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
    """Why a case is a regression, in words every renderer shows: a broken safety claim, the score drop, the
    sub-score drop behind the total, or that it passed before and fails now (and why). Whether that is worse is the
    verdict's to say (`verdict_lines`): a live drop may be chance."""
    moves = ", ".join(f"{m.name} {m.before:.2f} -> {m.after:.2f} ({m.delta:+.2f})"
                      for m in d.sub_score_moves if m.name in d.sub_score_regressions)
    parts = [b.text() for b in d.safety_breaches]
    if dropped(comparison, d):
        parts.append(f"{_num(d.before)} -> {_num(d.after)} ({d.delta:+.2f}, a drop of {comparison.threshold:.2f} or more)")
    elif d.newly_failing and not parts:  # (a broken safety claim says why it fails already)
        why = f"passed -> failed (score {_num(d.before)} -> {_num(d.after)})" + (f": {d.failure_after}" if d.failure_after else "")
        parts.append(why + (f"; sub-score drop: {moves}" if moves else ""))
    elif moves:
        parts.append(f"{moves}, a drop of {comparison.threshold:.2f} or more behind a score of {_num(d.before)} -> {_num(d.after)}")
    return "; ".join(parts)


def warning_line(comparison: Comparison, d: CaseDelta) -> str:
    """The warning for one regression: the seed's score-drop line, or the sub-score drop, or, for a case that
    passed before and fails now without such a drop, a line that says so and why; a broken safety claim first."""
    kind = "safety regression" if d.safety_breaches else "regression"
    return f"WARNING: {kind} in {d.name}: {regression_reason(comparison, d)}"


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
