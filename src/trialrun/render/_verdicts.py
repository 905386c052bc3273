"""What a trial's page says about how the trial was judged: every verdict (outcome, trajectory, cost, score) with
its reason, the score's sub-scores and the rubric that made the total, how output quality was graded (heuristic,
judge, by hand: who, when, what it replaced), the error, the denials and the observer notes.

The same facts the run report's trial body shows (render/_html/report.js), server-rendered: the trial page reads
without JavaScript. Everything is escaped.
"""

from __future__ import annotations

from html import escape
from typing import Any

from ..expect.rubric import RUBRICS
from ..report.results import TrialResult
from ..trajectory import Trajectory
from ._cells import quality
from ._chrome import rate, when_text

__all__ = ["judgement"]

_BY = {"hand": "graded by hand", "judge": "graded by a judge model", "heuristic": "graded by the heuristic",
       "verify": "from the test's verify command"}


def _flags(trial: TrialResult) -> str:
    chips = []
    for label, value in (("outcome", trial.outcome_passed), ("trajectory", trial.trajectory_passed),
                         ("cost", trial.cost_passed), ("score", trial.score_passed)):
        if value is not None:
            chips.append(f'<span class="badge {"pass" if value else "fail"}" data-flag="{label}">'
                         f'{"✓" if value else "✗"} {label}</span>')
    return " ".join(chips)


def _override_note(details: dict[str, Any] | None) -> str:
    """A verdict's override, audited: `overridden by ana at … to pass (the grader said FAILED)`."""
    override = details.get("override") if isinstance(details, dict) else None
    if not isinstance(override, dict):
        return ""
    return (f' <span class="badge skip overridden" title="{escape(str(override.get("reason", "")))}">overridden by '
            f'{escape(str(override.get("by", "?")))} at {escape(when_text(str(override.get("at", ""))))}: grader said '
            f'{"pass" if override.get("was") else "fail"}</span>')


def _verdict_rows(trial: TrialResult) -> str:
    rows = []
    for v in trial.verdicts:
        rows.append(f'<tr class="{"ok" if v.passed else "bad"}" data-kind="{escape(v.kind or "outcome")}" '
                    f'data-grader="{escape(v.grader)}">'
                    f'<td><span class="badge {"pass" if v.passed else "fail"}">{"✓ pass" if v.passed else "✗ fail"}</span>'
                    f'{_override_note(v.details)}</td>'
                    f'<td>{escape(v.kind or "outcome")}</td><td><code>{escape(v.grader)}</code></td>'
                    f'<td class="reason">{escape(v.reason)}</td><td class="num">{"" if v.score is None else rate(v.score)}</td></tr>')
    if not rows:
        return '<p class="muted" id="verdicts">No grader judged this trial.</p>'
    return ('<table class="verdicts" id="verdicts"><thead><tr><th>Result</th><th>Kind</th><th>Grader</th><th>Reason</th>'
            f'<th class="num">Score</th></tr></thead><tbody>{"".join(rows)}</tbody></table>')


def _score(details: dict[str, Any], score: float | None) -> str:
    """The sub-scores and how the total was made of them."""
    subs = details.get("sub_scores")
    if not isinstance(subs, dict):
        return ""
    items = "".join(f'<div><dt>{escape(str(k))}</dt><dd class="sub-score" data-sub="{escape(str(k))}">'
                    f'{_sub(str(k), v)}</dd></div>' for k, v in subs.items())
    rubric = str(details.get("rubric", "skill"))
    formula = RUBRICS.get(rubric, "")
    threshold = details.get("threshold")
    by = _BY.get(str(details.get("quality_by", "")), "")
    made = (f'<p class="score-made" id="score-made">Score {rate(score)} = rubric <code>{escape(rubric)}</code>'
            + (f": <code>{escape(formula)}</code>" if formula else "")
            + (f"; passes at {rate(threshold)}" if isinstance(threshold, (int, float)) else "")
            + (f"; output quality {escape(by)}" if by else "") + ".</p>")
    return f'<dl class="facts-list" id="sub-scores">{items}</dl>{made}'


def _sub(name: str, value: Any) -> str:
    """A sub-score as every table shows it (output quality out of its maximum: 0.5/0.5)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return escape(str(value))
    return escape(quality(value)) if name == "output_quality" else rate(value)


def _denials(trajectory: Trajectory) -> str:
    if not trajectory.denials:
        return ""
    items = "".join(f'<li><code>{escape(d.tool)}</code> refused by {escape(d.source)}'
                    + (f" (rule <code>{escape(d.rule)}</code>)" if d.rule else "")
                    + (f": {escape(d.reason)}" if d.reason else "") + "</li>" for d in trajectory.denials)
    return f'<h3>Denials ({len(trajectory.denials)})</h3><ul id="denials">{items}</ul>'


def _outputs(trial: TrialResult) -> str:
    """What each verify command printed (kept bounded and scrubbed in its verdict's details), folded."""
    blocks = []
    for v in trial.verdicts:
        details = v.details if isinstance(v.details, dict) else {}
        if "command" not in details or "output" not in details:
            continue
        code = details.get("exit_code")
        blocks.append(f'<details class="verify-output" data-grader="{escape(v.grader)}"><summary>Output of '
                      f'<code>{escape(str(details["command"]))}</code>' + (f" (exit {escape(str(code))})" if code is not None
                                                                          else "")
                      + f'</summary><pre>{escape(str(details["output"])) or "(nothing)"}</pre></details>')
    return "".join(blocks)


def judgement(trial: TrialResult) -> str:
    """The trial's verdicts section: flags, every verdict with its reason, the score's make-up, error, denials,
    notes."""
    parts = [f'<section class="panel" id="judgement"><h2>Verdicts</h2><p>{_flags(trial)}</p>{_verdict_rows(trial)}']
    for v in trial.verdicts:
        if v.kind == "score" and isinstance(v.details, dict):
            parts.append(_score(v.details, v.score))
            audit = v.details.get("hand_grade")
            if isinstance(audit, dict):
                previous, machine = audit.get("previous"), audit.get("machine")
                said = (f"; the {escape(str(machine.get('by', 'judge')))} said {rate(machine['quality'])}"
                        if isinstance(machine, dict) and isinstance(machine.get("quality"), (int, float)) else "")
                parts.append(f'<p class="hand-grade">Graded by hand by {escape(str(audit.get("by", "?")))} at '
                             f'{escape(when_text(str(audit.get("at", ""))))}'
                             + (f" (output quality was {rate(previous)}{said})" if isinstance(previous, (int, float)) else "")
                             + (f": {escape(str(audit['comment']))}" if audit.get("comment") else "") + ".</p>")
            break
    for label, error in (("Error", trial.error), ("Teardown error", trial.teardown_error)):
        if error is not None:
            parts.append(f'<div class="alert bad"><p><strong>{label}</strong> <code>{escape(error.type)}</code>: '
                         f"{escape(error.message)}</p></div>")
    parts.append(_outputs(trial))
    parts.append(_denials(trial.trajectory))
    if trial.trajectory.notes:
        parts.append('<h3>Observer notes</h3><ul id="observer-notes">'
                     + "".join(f"<li>{escape(n)}</li>" for n in trial.trajectory.notes) + "</ul>")
    parts.append("</section>")
    return "".join(parts)
