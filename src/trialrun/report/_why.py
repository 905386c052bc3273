"""Why a case failed, in words: the ONE wording that reports, compare's warnings and every renderer use.

Here, beside the results model, so that `compare` (in this package) and the renderers (which import this package)
share it without compare importing a renderer.
"""

from __future__ import annotations

from .._scrub import scrub_text
from ..expect import Verdict
from .results import CaseResult, TrialError, TrialResult

__all__ = ["failing_trials", "first_cause", "first_reason", "why_failed", "failed_by"]


def failing_trials(case: CaseResult) -> list[TrialResult]:
    """The case's trials that failed, in trial order: what every explanation of a failing case is about."""
    return [trial for trial in case.trials if not trial.passed]


def first_cause(case: CaseResult) -> Verdict | TrialError | None:
    """What a report names first as why the case failed: the first failed verdict of any failing trial (a grader's
    explanation beats an exception, so one errored trial does not hide why the others failed), else the first
    failing trial's error, else the first failing trial's teardown error (a trial whose invoke and grades passed
    fails when its teardown raises), else None (the case ran no trial, or passed).
    """
    failing = failing_trials(case)
    for trial in failing:
        if trial.failed_verdicts:
            return trial.failed_verdicts[0]
    errors = [trial.error for trial in failing] + [trial.teardown_error for trial in failing]
    return next((error for error in errors if error is not None), None)


def first_reason(case: CaseResult) -> str:
    """`first_cause` as text: "grader: reason" for a verdict, "phase: Type: message" for an error (a teardown error
    reads "teardown: OSError: ..."); for a failed case with neither, "the case ran no trial" (or "trial N failed"
    when a stored trial recorded no cause); "" for a case that did not fail.

    >>> from trialrun import TrialResult, Verdict
    >>> trials = [TrialResult(trial=1, passed=False, verdicts=[Verdict(False, "equals('yes')", "output was 'no'")])]
    >>> first_reason(CaseResult.from_trials("greets", trials, tags=[], mode="deterministic"))
    "equals('yes'): output was 'no'"
    """
    cause = first_cause(case)
    text = ""
    if isinstance(cause, Verdict):
        # the rubric's reason starts "score 0.50 (< 0.7)": its long label would only repeat the test's fields
        rubric_score = cause.kind == "score" and "sub_scores" in (cause.details or {})
        text = cause.reason if rubric_score else f"{cause.grader}: {cause.reason}"
    elif cause is not None:
        text = str(cause)
    if text:
        return text
    failing = failing_trials(case)
    if failing:
        return f"trial {failing[0].trial} failed"
    if case.passed is False and not case.trials and case.score is not None:  # e.g. an eval skill result file
        return f"score {case.score:.2f} (the result file records no trials)"
    return "" if case.passed or case.skipped else "the case ran no trial"


def _of_trials(case: CaseResult, cause: Verdict | TrialError | None) -> str:
    """`trial 2 of 3: ` for the trial `cause` came from, when the case ran more than one; "" otherwise."""
    if case.trial_count < 2:
        return ""
    for trial in failing_trials(case):
        if any(v is cause for v in trial.verdicts) or cause is trial.error or cause is trial.teardown_error:
            return f"trial {trial.trial} of {case.trial_count}: "
    return ""


def why_failed(case: CaseResult, limit: int = 90) -> str:
    """One line saying why a case failed (`first_reason`), whitespace collapsed and cut to `limit` characters (a
    table row, a compare warning), naming the trial when the case ran several (`trial 2 of 3: score 0.50 (< 0.7)
    ...`); "" for a case that did not fail."""
    reason = scrub_text(first_reason(case))
    text = " ".join(((_of_trials(case, first_cause(case)) if reason else "") + reason).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def failed_by(case: CaseResult) -> str:
    """What failed a case, in a word or two for a table cell beside its score (a test can score 1.00 and fail on a
    grader outside the score): the grader's name (`never_ran`), `score` when the rubric's total failed it,
    `invoke error` for an error; "" for a case that did not fail.

    >>> from trialrun import TrialResult, Verdict
    >>> trials = [TrialResult(trial=1, passed=False, verdicts=[Verdict(False, "never_ran('rm -rf')", "runs `rm -rf x`")])]
    >>> failed_by(CaseResult.from_trials("cleanup", trials, tags=[], mode="deterministic"))
    'never_ran'
    """
    if case.passed or case.skipped:
        return ""
    cause = first_cause(case)
    if isinstance(cause, Verdict):
        if cause.kind == "score" and "sub_scores" in (cause.details or {}):
            return "score"
        return cause.grader.split("(", 1)[0].strip() or "a grader"
    if isinstance(cause, TrialError):
        return f"{cause.phase} error" if cause.phase else "error"
    return "failed"
