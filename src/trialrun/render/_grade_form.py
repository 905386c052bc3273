"""The hand-grade forms of `trialrun view` (output quality on a trial's page and a test's page, a verdict override on
a trial's page) and how a hand grade is shown.

The forms post to /grade and /override with the viewer's per-session token in a hidden field: the page is the only
place the token is written, and no other site can read the page (same-origin, the Host check), so no cross-site
form can post one. The writes themselves are `trialrun.report._hand_grade`, the code `trialrun grade` runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from ..expect.rubric import HAND_STEP, QUALITY_MAX
from ..report._grading import rubric_verdicts
from ..report._history import RunEntry
from ..report.results import CaseResult, TrialResult
from ._chrome import rate, when, when_text

__all__ = ["grade_form", "override_form", "hand_graded", "hand_grade_note", "gradable", "trial_quality"]


def _case(entry: RunEntry, name: str) -> CaseResult | None:
    return next((c for c in entry.report.cases if c.name == name), None)


def _hand_details(trials: Sequence[TrialResult]) -> list[tuple[int, dict[str, Any]]]:
    return [(t.trial, v.details) for t in trials for v in rubric_verdicts(t)
            if isinstance(v.details, dict) and v.details.get("quality_by") == "hand"]


def trial_quality(trial: Any) -> Any:
    """A trial's output_quality sub-score (None when it has none)."""
    return next((v.details["sub_scores"].get("output_quality") for v in rubric_verdicts(trial)), None)  # type: ignore[index]


def gradable(entry: RunEntry, name: str) -> bool:
    """Whether test `name` can be graded by hand in this run: a trial of it was graded (a suite test's rubric, or any
    verdict of a pytest plugin case, which then gets a hand grade of its own)."""
    case = _case(entry, name)
    return case is not None and not case.skipped and any(t.verdicts or t.error is None for t in case.trials)


def hand_graded(entry: RunEntry, name: str) -> bool:
    case = _case(entry, name)
    return case is not None and bool(_hand_details(case.trials))


def _audit_text(details: dict[str, Any]) -> str:
    """`0.4 by ana at … (was 0.25; the heuristic said 0.25) — comment`, escaped."""
    audit = details.get("hand_grade") if isinstance(details.get("hand_grade"), dict) else {}
    quality = details["sub_scores"].get("output_quality")
    text = f"{rate(quality) if isinstance(quality, (int, float)) else escape(str(quality))}/{QUALITY_MAX:g}"
    if audit:
        previous, machine = audit.get("previous"), audit.get("machine")
        said = []
        if isinstance(previous, (int, float)):
            said.append(f"was {rate(previous)}")
        if isinstance(machine, dict) and isinstance(machine.get("quality"), (int, float)):
            said.append(f"the {escape(str(machine.get('by', 'judge')))} said {rate(machine['quality'])}")
        text += (f" by {escape(str(audit.get('by', '?')))} at {escape(when_text(str(audit.get('at', ''))))}"
                 + (f" ({'; '.join(said)})" if said else "")
                 + (f" — {escape(str(audit['comment']))}" if audit.get("comment") else ""))
    return text


def hand_grade_note(graded: CaseResult | TrialResult) -> str:
    """'Graded by hand: output quality 0.40/0.5 by ana at … (was 0.25; the heuristic said 0.25) — comment' for a
    trial, or per trial for a test; '' when nothing was graded by hand."""
    trials = [graded] if isinstance(graded, TrialResult) else graded.trials
    found = _hand_details(trials)
    if not found:
        return ""
    seen: dict[int, str] = {}
    for number, details in found:
        seen.setdefault(number, _audit_text(details))
    if isinstance(graded, TrialResult):
        body = next(iter(seen.values()))
    else:
        body = "; ".join(f"trial {number}: {text}" for number, text in seen.items())
    return f'<p class="alert info hand-grade" id="hand-grade">Graded by hand: output quality {body}.</p>'


def grade_form(entries: Sequence[RunEntry], name: str, token: str, *, back: str, current: Any = None,
               trial: int | None = None) -> str:
    """The form setting `name`'s output quality in one of `entries` (a trial page passes its run alone, its trial
    and that trial's output quality as `current`): this trial or every trial of the test."""
    usable = [e for e in entries if gradable(e, name)]
    if not usable:
        return ('<section class="panel" id="grade"><h3>Grade output quality by hand</h3><p class="muted">This test has '
                "nothing to grade here (every trial errored before it was graded).</p></section>")
    if len(usable) == 1:
        run = f'<input type="hidden" name="run" value="{escape(usable[0].stem)}">'
    else:
        options = "".join(f'<option value="{escape(e.stem)}">{escape(when(e.report.started_at))} {escape(e.label)}</option>'
                          for e in usable)
        run = f'<label>Run <select name="run" id="grade-run">{options}</select></label>'
    case = _case(usable[0], name)
    if current is None and case is not None:
        current = next((q for t in case.trials if (q := trial_quality(t)) is not None), None)
    which = ('<option value="all">every trial of this test</option>' if trial is None else
             f'<option value="{trial}" selected>trial {trial} only</option><option value="all">every trial of this test</option>')
    value = f' value="{current:g}"' if isinstance(current, (int, float)) else ""
    rubric = case is not None and any(rubric_verdicts(t) for t in case.trials)
    note = ("sets output_quality, recomputes score and pass" if rubric else
            "this test has no rubric: the grade is added as a verdict of its own (score quality/0.5, passes at 0.7)")
    return (f'<section class="panel" id="grade"><h3>Grade output quality by hand</h3>'
            f'<p class="muted">0 irrelevant or hallucinated, 0.25 partly right, 0.5 fully right, in steps of '
            f"{HAND_STEP:g}: {note}, and records who, when and the value it replaced in the result file (as "
            '<code>trialrun grade</code> does).</p><form class="grade" method="post" action="/grade" id="grade-form">'
            f'<input type="hidden" name="token" value="{escape(token)}"><input type="hidden" name="test" value="{escape(name)}">'
            f'<input type="hidden" name="back" value="{escape(back)}">{run}'
            f'<label>Trials <select name="trial" id="grade-trial">{which}</select></label>'
            f'<label>Output quality <input type="number" name="quality" id="grade-quality" min="0" max="{QUALITY_MAX:g}" '
            f'step="{HAND_STEP:g}" required{value}> / {QUALITY_MAX:g}</label>'
            '<textarea name="comment" id="grade-comment" maxlength="2000" placeholder="Why (kept with the grade)" '
            'aria-label="Comment"></textarea><button type="submit">Save grade</button></form></section>')


def override_form(entry: RunEntry, name: str, trial: TrialResult, token: str, *, back: str) -> str:
    """The form setting one of the trial's verdicts to pass or fail by hand, with a reason (or taking it back)."""
    if not trial.verdicts:
        return ""
    options = "".join(f'<option value="{escape(v.grader)}">{"✓" if v.passed else "✗"} {escape(v.grader)}'
                      f'{" (overridden)" if isinstance(v.details, dict) and "override" in v.details else ""}</option>'
                      for v in trial.verdicts)
    choices = "".join(f'<label><input type="radio" name="verdict" value="{value}" required> {label}</label>'
                      for value, label in (("pass", "pass"), ("fail", "fail"), ("clear", "the grader's own again")))
    return (f'<section class="panel" id="override"><h3>Override a verdict</h3><p class="muted">When a grader was wrong:'
            " set its verdict for this trial by hand, with the reason; the trial's pass follows (an error still fails "
            "it), and who, when, why and what the grader said are kept in the result file.</p>"
            '<form class="grade" method="post" action="/override" id="override-form">'
            f'<input type="hidden" name="token" value="{escape(token)}"><input type="hidden" name="test" value="{escape(name)}">'
            f'<input type="hidden" name="run" value="{escape(entry.stem)}"><input type="hidden" name="trial" value="{trial.trial}">'
            f'<input type="hidden" name="back" value="{escape(back)}">'
            f'<label>Verdict <select name="grader" id="override-grader">{options}</select></label>'
            f'<fieldset><legend class="sr-only">Set to</legend>{choices}</fieldset>'
            '<textarea name="reason" id="override-reason" maxlength="2000" placeholder="Why the grader was wrong (kept '
            'with the override)" aria-label="Reason"></textarea><button type="submit">Save override</button></form></section>')
