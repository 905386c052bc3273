"""A person's grades as edits of a run: output quality set by hand (one trial or every trial of a test), a
verdict's pass/fail overridden with a reason, and both carried forward onto a regraded run. Pure: a report in, a
new report out; `_hand_grade` reads and writes the file around them (under the store's lock).

Where each is kept, in the verdict it changes (so every view that shows verdicts shows it):
- a hand grade in a rubric verdict's details: `quality_by: "hand"` and `hand_grade` (who, when, via, a comment, the
  grade, the value it replaced, the judge's own grade `machine` kept through later grades, earlier grades in
  `history`); a test with no rubric (a pytest plugin case) gets a verdict of its own, `output quality (graded by
  hand)`, scored quality / 0.5 against the rubric's pass mark 0.7;
- an override in `details["override"]` (to pass or fail, the reason, who, when, what the grader itself said), its
  reason written into the verdict's reason.
After any edit the trial is judged again by the one rule (`TrialResult.judged`): an error or a teardown error still
fails it, whatever a person says about its verdicts.
"""

from __future__ import annotations

import re
from typing import Any

from ..expect._base import Verdict
from ..expect.rubric import QUALITY_MAX, combine, hand_quality, passes
from .results import CaseResult, RunReport, TrialResult

__all__ = ["set_quality", "override", "carry_forward", "rubric_verdicts", "graded_by_hand", "HAND_GRADER",
           "HAND_THRESHOLD", "judge_name", "find_verdict"]

#: The verdict a hand grade adds to a test that has no rubric, and the pass mark it is held to (the rubric's).
HAND_GRADER = "output quality (graded by hand)"
HAND_THRESHOLD = 0.7
#: Earlier grades and overrides kept in an audit's `history`, newest last.
_HISTORY = 20


def rubric_verdicts(trial: TrialResult) -> list[Verdict]:
    """The trial's verdicts that carry output quality: the rubric's (or a hand grade's own)."""
    return [v for v in trial.verdicts
            if v.kind == "score" and isinstance(v.details, dict) and isinstance(v.details.get("sub_scores"), dict)]


def graded_by_hand(verdict: Verdict) -> bool:
    return isinstance(verdict.details, dict) and verdict.details.get("quality_by") == "hand"


def judge_name(report: RunReport, verdict: Verdict) -> str:
    """Who graded a verdict's output quality before a person did: "heuristic", or the judge (the run's configured
    judge model, else the judge named in the rubric's label)."""
    details = verdict.details or {}
    if details.get("quality_by") != "judge":
        return "heuristic"
    configured = report.config_snapshot.get("judge")
    if isinstance(configured, str) and configured and configured != "heuristic":
        return configured
    named = re.search(r"judge=([\w.:-]+)", verdict.grader)
    return named.group(1) if named else "judge"


def _case(report: RunReport, name: str) -> CaseResult:
    try:
        case = report.case(name)
    except KeyError:
        raise KeyError(f"no test {name!r} in run {report.run_id} (tests: {', '.join(c.name for c in report.cases)})") from None
    if case.skipped:
        raise ValueError(f"test {name!r} was skipped in run {report.run_id}; there is nothing to grade")
    return case


def _trials(case: CaseResult, number: int | None, run_id: str | None) -> list[TrialResult]:
    if number is None:
        return list(case.trials)
    chosen = [t for t in case.trials if t.trial == number]
    if not chosen:
        raise KeyError(f"test {case.name!r} has no trial {number} in run {run_id} "
                       f"(trials: {', '.join(str(t.trial) for t in case.trials) or 'none'})")
    return chosen


def _history(old: Any) -> list[Any]:
    if not isinstance(old, dict):
        return []
    earlier = old.get("history")
    return [*(earlier if isinstance(earlier, list) else []), {k: v for k, v in old.items() if k != "history"}][-_HISTORY:]


def _overridden_reason(override: dict[str, Any]) -> str:
    said = "passed" if override.get("was") else "FAILED"
    return (f"overridden by hand to {'pass' if override.get('passed') else 'FAIL'} by {override.get('by', '?')}: "
            f"{override.get('reason', '')} (the grader said: {said}: {override.get('grader_reason', '')})")


def _graded(verdict: Verdict, quality: float, audit: dict[str, Any], machine: Any) -> Verdict:
    """`verdict` (a rubric's or a hand grade's own) with output quality `quality` by hand: total, pass and reason
    follow; an override on it stays in force (its `was` follows the grader's new pass)."""
    details = dict(verdict.details or {})
    subs = dict(details["sub_scores"])
    previous = subs.get("output_quality")
    subs["output_quality"] = quality
    formula = str(details.get("rubric", "skill"))  # a verdict saved before rubrics had names: the skill's formula
    threshold = float(details.get("threshold", HAND_THRESHOLD))
    if formula == "hand":
        total = quality / QUALITY_MAX
    else:
        total = combine(float(subs["tool_accuracy"]), float(subs["turn_efficiency"]), quality, formula)
    own = passes(total, threshold)
    mark = ">=" if own else "<"
    if formula == "hand":
        reason = f"output quality {quality:g}/{QUALITY_MAX:g} graded by hand by {audit.get('by', '?')} (score {total:.2f} {mark} {threshold:g})"
    else:
        reason = (f"score {total:.2f} ({mark} {threshold:g}): tool_accuracy {float(subs['tool_accuracy']):.2f}, "
                  f"turn_efficiency {float(subs['turn_efficiency']):.2f}, output_quality {quality:g} "
                  f"(graded by hand by {audit.get('by', '?')})")
    old = details.get("hand_grade")
    details.update(sub_scores=subs, quality_by="hand",
                   hand_grade={**audit, "quality": quality, "previous": previous, "machine": machine,
                               **({"history": _history(old)} if isinstance(old, dict) else {})})
    passed = own
    override = details.get("override")
    if isinstance(override, dict):
        details["override"] = override = {**override, "was": own, "grader_reason": reason}
        passed, reason = bool(override.get("passed")), _overridden_reason(override)
    return Verdict(passed, verdict.grader, reason, total, verdict.kind, details)


def _hand_verdict(quality: float, audit: dict[str, Any]) -> Verdict:
    """The verdict a hand grade adds to a trial of a test without a rubric (a pytest plugin case)."""
    blank = Verdict(False, HAND_GRADER, "", None, "score",
                    {"sub_scores": {"output_quality": quality}, "threshold": HAND_THRESHOLD, "rubric": "hand"})
    return _graded(blank, quality, audit, None)


def _machine(report: RunReport, verdict: Verdict) -> Any:
    """The judge's own grade of a verdict's output quality (kept through every later hand grade), or None when a
    person added the verdict."""
    details = verdict.details or {}
    if graded_by_hand(verdict):
        old = details.get("hand_grade")
        return old.get("machine") if isinstance(old, dict) else None
    quality = details["sub_scores"].get("output_quality")
    return {"quality": quality, "by": judge_name(report, verdict)} if isinstance(quality, (int, float)) else None


def _grade_trial(report: RunReport, trial: TrialResult, quality: float, audit: dict[str, Any]) -> TrialResult:
    """One trial graded by hand: its rubric verdicts (or the hand grade's own verdict) regraded, else one added."""
    ids = {id(v) for v in rubric_verdicts(trial)}
    if ids:
        verdicts = [_graded(v, quality, audit, _machine(report, v)) if id(v) in ids else v for v in trial.verdicts]
    else:
        verdicts = [*trial.verdicts, _hand_verdict(quality, audit)]
    return trial.judged(verdicts)


def set_quality(report: RunReport, name: str, quality: float, audit: dict[str, Any],
                trial: int | None = None) -> tuple[RunReport, list[int]]:
    """`report` with test `name`'s output quality set by hand (in trial `trial`, or in every trial that was graded)
    and the trials it changed. A test with no rubric gets the hand grade as a verdict of its own."""
    quality = hand_quality(quality)
    case = _case(report, name)
    rubric = any(rubric_verdicts(t) and not _hand_only(t) for t in case.trials)
    chosen = {t.trial for t in _trials(case, trial, report.run_id)}
    gradable = {t.trial for t in case.trials if (rubric_verdicts(t) if rubric else (t.verdicts or t.error is None))}
    if not chosen & gradable:
        errored = [t for t in case.trials if t.trial in chosen and t.error is not None]
        which = f"trial {trial}" if trial is not None else f"{len(errored)} of {len(case.trials)} trial(s)"
        raise ValueError(f"test {name!r} has nothing to grade in run {report.run_id}: {which} errored before "
                         f"{'it was' if trial is not None else 'they were'} graded ({errored[0].error if errored else 'no verdicts'})")
    trials = [_grade_trial(report, t, quality, audit) if t.trial in chosen & gradable else t for t in case.trials]
    return _rebuilt(report, case, trials), sorted(chosen & gradable)


def _hand_only(trial: TrialResult) -> bool:
    """A trial whose only output-quality verdict is a hand grade's own (a test with no rubric, graded before)."""
    return all(isinstance(v.details, dict) and v.details.get("rubric") == "hand" for v in rubric_verdicts(trial))


def find_verdict(case: CaseResult, grader: str) -> str:
    """The label of the verdict `grader` names in a test: the exact label, else the one label containing it
    (case-insensitively). KeyError listing the labels otherwise."""
    labels = list(dict.fromkeys(v.grader for t in case.trials for v in t.verdicts))
    if grader in labels:
        return grader
    near = [label for label in labels if grader.lower() in label.lower()]
    if len(near) == 1:
        return near[0]
    shown = "; ".join(labels) or "none"
    if near:
        raise KeyError(f"{grader!r} names {len(near)} verdicts of test {case.name!r}: {'; '.join(near)}; give more of the label")
    raise KeyError(f"test {case.name!r} has no verdict {grader!r} (its verdicts: {shown})")


def _overridden(verdict: Verdict, passed: bool | None, audit: dict[str, Any]) -> Verdict:
    """`verdict` with its pass/fail set by a person (None: the override taken back, the grader's own restored)."""
    details = dict(verdict.details or {})
    old = details.get("override")
    own = old.get("was") if isinstance(old, dict) else verdict.passed
    said = old.get("grader_reason") if isinstance(old, dict) else verdict.reason
    if passed is None:
        if not isinstance(old, dict):
            return verdict
        details.pop("override")
        details["override_history"] = [*(details.get("override_history") or []),
                                       {k: v for k, v in old.items() if k != "history"}, {**audit, "cleared": True}][-_HISTORY:]
        return Verdict(bool(own), verdict.grader, str(said), verdict.score, verdict.kind, details or None)
    override = {"passed": passed, **audit, "was": bool(own), "grader_reason": str(said)}
    if isinstance(old, dict):
        override["history"] = _history(old)
    details["override"] = override
    return Verdict(passed, verdict.grader, _overridden_reason(override), verdict.score, verdict.kind, details)


def override(report: RunReport, name: str, grader: str, passed: bool | None, audit: dict[str, Any],
             trial: int | None = None) -> tuple[RunReport, list[int], str]:
    """`report` with the verdict `grader` names in test `name` set to pass or fail (None: back to the grader's own)
    in trial `trial` or every trial that has it; the trials it changed and the verdict's full label."""
    if passed is not None and not str(audit.get("reason", "")).strip():
        raise ValueError("an override needs a reason (why the grader was wrong): it is kept with it")
    case = _case(report, name)
    label = find_verdict(case, grader)
    chosen = {t.trial for t in _trials(case, trial, report.run_id)}
    changed: list[int] = []
    trials = []
    for t in case.trials:
        if t.trial in chosen and any(v.grader == label for v in t.verdicts):
            t = t.judged([_overridden(v, passed, audit) if v.grader == label else v for v in t.verdicts])
            changed.append(t.trial)
        trials.append(t)
    if not changed:
        raise KeyError(f"trial {trial} of test {name!r} has no verdict {label!r} in run {report.run_id}")
    return _rebuilt(report, case, trials), changed, label


def _rebuilt(report: RunReport, case: CaseResult, trials: list[TrialResult]) -> RunReport:
    """The run with one test's trials replaced: the test's aggregates and the run's totals follow."""
    rebuilt = CaseResult.from_trials(case.name, trials, tags=case.tags, mode=case.mode, description=case.description,
                                     metadata=case.metadata, title=case.title, unfinished_trials=case.unfinished_trials)
    return RunReport.build(
        [rebuilt if c.name == case.name else c for c in report.cases], trial_count=report.trial_count,
        started_at=report.started_at, duration_s=report.duration_s, status=report.status,
        unfinished=report.unfinished_cases, run_id=report.run_id, config_snapshot=report.config_snapshot,
        regraded_from=report.regraded_from,
    )


def carry_forward(old: RunReport, new: RunReport) -> tuple[RunReport, list[str]]:
    """`new` (a regrade of `old`) with every hand grade and override of `old` put back on the same test, trial and
    grader, and a line for each saying what was carried (and what could not be: a test or grader the suite no
    longer has). A hand grade's `machine` becomes the new judge's grade, so the new judge is measured too."""
    notes: list[str] = []
    report = new
    for case in old.cases:
        target = next((c for c in report.cases if c.name == case.name and not c.skipped), None)
        for trial in case.trials:
            report = _carry_trial(old, report, case, target, trial, notes)
            target = next((c for c in report.cases if c.name == case.name and not c.skipped), None)
    return report, notes


def _carry_trial(old: RunReport, report: RunReport, case: CaseResult, target: CaseResult | None,
                 trial: TrialResult, notes: list[str]) -> RunReport:
    hand = next((v for v in rubric_verdicts(trial) if graded_by_hand(v)), None)
    overrides = [v for v in trial.verdicts if isinstance(v.details, dict) and isinstance(v.details.get("override"), dict)]
    if hand is None and not overrides:
        return report
    where = f"{case.name} trial {trial.trial}"
    now = next((t for t in target.trials if t.trial == trial.trial), None) if target is not None else None
    if now is None:
        notes.append(f"{where}: its hand grade and overrides were NOT carried: the regraded run has no such trial")
        return report
    if now is trial or now.verdicts == trial.verdicts:  # kept as it was by the regrade: they are in it already
        return report
    if hand is not None:
        audit = {k: v for k, v in (hand.details or {})["hand_grade"].items()
                 if k not in ("quality", "previous", "machine", "history")}
        audit.setdefault("origin", old.run_id)
        quality = float(hand.details["sub_scores"]["output_quality"])  # type: ignore[index]
        fresh = next(iter(rubric_verdicts(now)), None)
        try:
            report, _ = set_quality(report, case.name, quality, audit, trial=trial.trial)
        except (KeyError, ValueError) as exc:
            notes.append(f"{where}: output quality {quality:g} by hand was NOT carried: {exc.args[0] if exc.args else exc}")
            return report
        said = f" ({_said(report, fresh)})" if fresh is not None and not graded_by_hand(fresh) else ""
        notes.append(f"{where}: output quality {quality:g} by hand ({audit.get('by', '?')}) carried forward{said}")
    for verdict in overrides:
        audit = {k: v for k, v in verdict.details["override"].items()  # type: ignore[index]
                 if k not in ("passed", "was", "grader_reason", "history")}
        audit.setdefault("origin", old.run_id)
        wanted = verdict.details["override"]["passed"]  # type: ignore[index]
        case_now = report.case(case.name)
        trial_now = next(t for t in case_now.trials if t.trial == trial.trial)
        if not any(v.grader == verdict.grader for v in trial_now.verdicts):
            notes.append(f"{where}: the override of {verdict.grader} was NOT carried: the suite has no such grader now")
            continue
        report, _, _ = override(report, case.name, verdict.grader, bool(wanted), audit, trial=trial.trial)
        notes.append(f"{where}: override of {verdict.grader} to {'pass' if wanted else 'fail'} ({audit.get('by', '?')}) carried forward")
    return report


def _said(report: RunReport, fresh: Verdict) -> str:
    quality = (fresh.details or {}).get("sub_scores", {}).get("output_quality")
    return f"the {judge_name(report, fresh)} now says {quality:g}" if isinstance(quality, (int, float)) else "regraded"

