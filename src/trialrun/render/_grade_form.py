"""The hand-grade form of `trialrun view` (on a trial's page and a test's page) and how a hand grade is shown.

The form posts to /grade with the viewer's per-session token in a hidden field: the page is the only place the
token is written, and no other site can read the page (same-origin, the Host check), so no cross-site form can post
one. The write itself is `trialrun.report._hand_grade.grade_by_hand`, the code `trialrun grade` runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from ..report._history import RunEntry
from ..expect.rubric import QUALITY_LEVELS
from ..report.results import CaseResult
from ._chrome import rate, when, when_text

__all__ = ["grade_form", "hand_graded", "hand_grade_note", "gradable", "trial_quality"]


def _case(entry: RunEntry, name: str) -> CaseResult | None:
    return next((c for c in entry.report.cases if c.name == name), None)


def _rubric_details(case: CaseResult) -> list[dict[str, Any]]:
    return [v.details for t in case.trials for v in t.verdicts
            if v.kind == "score" and isinstance(v.details, dict) and isinstance(v.details.get("sub_scores"), dict)]


def trial_quality(trial: Any) -> Any:
    """A trial's output_quality sub-score (None when it has no rubric score)."""
    return next((v.details["sub_scores"].get("output_quality") for v in trial.verdicts
                 if v.kind == "score" and isinstance(v.details, dict) and isinstance(v.details.get("sub_scores"), dict)),
                None)


def gradable(entry: RunEntry, name: str) -> bool:
    """Whether test `name` has a rubric score in this run (what a hand grade changes)."""
    case = _case(entry, name)
    return case is not None and not case.skipped and bool(_rubric_details(case))


def hand_graded(entry: RunEntry, name: str) -> bool:
    case = _case(entry, name)
    return case is not None and any(d.get("quality_by") == "hand" for d in _rubric_details(case))


def hand_grade_note(case: CaseResult) -> str:
    """'Graded by hand: output_quality 0.25 by ana at … (was 0.50) — comment', or '' when it was not."""
    details = [d for d in _rubric_details(case) if d.get("quality_by") == "hand"]
    if not details:
        return ""
    audit = details[0].get("hand_grade")
    quality = details[0]["sub_scores"].get("output_quality")
    text = f"Graded by hand: output_quality {rate(quality) if isinstance(quality, (int, float)) else escape(str(quality))}"
    if isinstance(audit, dict):
        previous = audit.get("previous")
        text += (f" by {escape(str(audit.get('by', '?')))} at {escape(when_text(str(audit.get('at', ''))))}"
                 + (f" (was {rate(previous)})" if isinstance(previous, (int, float)) else "")
                 + (f" — {escape(str(audit['comment']))}" if audit.get("comment") else ""))
    return f'<p class="alert info hand-grade" id="hand-grade">{text}.</p>'


def grade_form(entries: Sequence[RunEntry], name: str, token: str, *, back: str, current: Any = None) -> str:
    """The form setting `name`'s output quality in one of `entries` (a trial page passes its run alone, and its
    trial's output quality as `current`, the level checked at first)."""
    usable = [e for e in entries if gradable(e, name)]
    if not usable:
        return ('<section class="panel" id="grade"><h3>Grade output quality by hand</h3><p class="muted">This test has '
                "no rubric score to grade here (it errored before it was graded, or it is not a suite test).</p></section>")
    if len(usable) == 1:
        run = f'<input type="hidden" name="run" value="{escape(usable[0].stem)}">'
    else:
        options = "".join(f'<option value="{escape(e.stem)}">{escape(when(e.report.started_at))} {escape(e.label)}</option>'
                          for e in usable)
        run = f'<label>Run <select name="run" id="grade-run">{options}</select></label>'
    if current is None:
        current = _rubric_details(_case(usable[0], name))[0]["sub_scores"].get("output_quality")  # type: ignore[arg-type]
    levels = "".join(f'<label><input type="radio" name="quality" value="{q:g}"{" checked" if current == q else ""}'
                     f' required> {q:g}</label>' for q in QUALITY_LEVELS)
    return (f'<section class="panel" id="grade"><h3>Grade output quality by hand</h3>'
            '<p class="muted">Sets output_quality for every trial of this test in the run, recomputes score and pass, '
            "and records who, when and the value it replaced in the result file (as <code>trialrun grade</code> "
            'does).</p><form class="grade" method="post" action="/grade" id="grade-form">'
            f'<input type="hidden" name="token" value="{escape(token)}"><input type="hidden" name="test" value="{escape(name)}">'
            f'<input type="hidden" name="back" value="{escape(back)}">{run}'
            f'<fieldset><legend class="sr-only">Output quality</legend>{levels}</fieldset>'
            '<textarea name="comment" id="grade-comment" maxlength="2000" placeholder="Why (kept with the grade)" '
            'aria-label="Comment"></textarea><button type="submit">Save grade</button></form></section>')
