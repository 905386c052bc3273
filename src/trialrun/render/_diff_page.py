"""The trajectory diff page of `trialrun view`: one test's trajectory in any trial of one run beside any trial of
another (or the same) run, aligned step by step by content (`_trajdiff.align`: the same call pairs with itself
whatever turn it came at), inserted and removed calls marked, the first divergence marked, and the verdicts that
flipped between the two trials (`_trajdiff.verdict_flips`); below it the files each trial left, side by side
(`_files`): two trials that took other paths may still have left the same code.

Each side names its own trial, so a flaky failure (trial 2 of 5 failing) can be put beside a passing trial; which
two are shown first is `_history.diff_pair`'s choice, and the page has the pickers to choose others.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any
from urllib.parse import urlencode

from ..report._history import RunEntry
from ..report._trajdiff import AlignedStep, Step, TrajectoryDiff, align, verdict_flips
from ..report.results import TrialResult
from ._chrome import crumb_case, crumb_run, q, site_nav, when
from ._files import files_side_by_side
from ._html_parts import breakable

__all__ = ["diff_page", "diff_href", "trial_href"]


def trial_href(stem: str, name: str, trial: int) -> str:
    """The trial page's URL (unescaped: escape it where it goes in an attribute)."""
    return f"/trial/{q(stem)}?{urlencode({'test': name, 'trial': trial})}"


def diff_href(name: str, a: str, ta: int, b: str, tb: int) -> str:
    return f"/diff?{urlencode({'test': name, 'a': a, 'ta': ta, 'b': b, 'tb': tb})}"


#: What each row's kind is called on the page (its data-divergence is the kind itself).
_KIND_WORDS = {"result": "other result", "arguments": "other arguments", "text": "other text", "removed": "removed",
               "inserted": "inserted"}


def _step_cell(step: Step | None, row: AlignedStep, side: str) -> str:
    """One side of a row: the call (tool, arguments, result) or the reply text, with the turn it came at; an empty
    cell saying which side lacks the step."""
    if step is None:
        other = "after" if side == "before" else "before"
        return f'<td class="absent" data-side="{side}"><span class="muted">(only the {other} trial)</span></td>'
    turn = f'<span class="turn-no">turn {step.turn}</span> '
    if step.call is None:
        return f'<td data-side="{side}">{turn}<pre class="reply">{escape(step.text[:2000])}</pre></td>'
    changed = row.divergence in ("arguments", "result", "removed", "inserted")
    args = step.call.raw_arguments if not step.call.arguments and step.call.raw_arguments else step.call.arguments
    result = ("" if step.result is None else
              f'<pre class="{"error" if step.result.is_error else ""}">→ {escape(step.result.content[:2000])}</pre>')
    return (f'<td data-side="{side}">{turn}<div class="call-line{" changed" if changed else ""}" data-side="{side}">'
            f'<strong class="tool-name">{escape(step.call.name)}</strong> <code>{escape(_short(args))}</code>'
            f"{result}</div></td>")


def _flips(before: TrialResult, after: TrialResult) -> str:
    """The verdicts that differ between the two trials: what the change in behaviour did to the grades."""
    flips = verdict_flips(before, after)
    if not flips:
        return ('<section class="panel" id="verdict-flips"><h2>Verdicts</h2><p class="muted">No verdict flipped: '
                f"each of the {len(after.verdicts)} graders judged both trials alike.</p></section>")

    def state(passed: bool | None) -> str:
        if passed is None:
            return '<span class="muted">(not graded)</span>'
        return '<span class="badge pass">✓ pass</span>' if passed else '<span class="badge fail">✗ fail</span>'

    rows = "".join(f'<tr data-grader="{escape(f.grader)}"><th scope="row"><code>{breakable(f.grader)}</code></th>'
                   f'<td>{state(f.before)} <span class="reason">{breakable(f.reason_before)}</span></td>'
                   f'<td>{state(f.after)} <span class="reason">{breakable(f.reason_after)}</span></td></tr>' for f in flips)
    return (f'<section class="panel" id="verdict-flips"><h2>Verdicts that flipped ({len(flips)})</h2>'
            '<div class="table-wrap"><div class="scroll"><table class="kv flips"><thead><tr><th>Grader</th><th>Before</th>'
            f"<th>After</th></tr></thead><tbody>{rows}</tbody></table></div></div></section>")


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 600 else text[:600] + "…"


def _trial(entry: RunEntry, name: str, number: int) -> TrialResult | None:
    case = next((c for c in entry.report.cases if c.name == name), None)
    return None if case is None else next((t for t in case.trials if t.trial == number), None)


def _side_head(label: str, entry: RunEntry, name: str, trial: TrialResult | None, number: int) -> str:
    state = "" if trial is None else (' <span class="badge pass">PASS</span>' if trial.passed
                                      else ' <span class="badge fail">FAIL</span>')
    return (f'{escape(label)}: <code>{escape(entry.stem)}</code> · <a class="side-trial" data-side="{escape(label.lower())}" '
            f'href="{escape(trial_href(entry.stem, name, number))}">trial {number}</a>{state}')


def _picker(name: str, runs: Sequence[RunEntry], before: RunEntry, ta: int, after: RunEntry, tb: int) -> str:
    """GET form choosing each side's run and trial (the trials of the runs shown now; a trial a newly picked run
    lacks falls back to the default choice)."""
    having = [r for r in runs if any(c.name == name for c in r.report.cases)]

    def run_select(field: str, chosen: RunEntry) -> str:
        options = "".join(f'<option value="{escape(r.stem)}"{" selected" if r.stem == chosen.stem else ""}>'
                          f"{escape(when(r.report.started_at))} {escape(r.label)}</option>" for r in reversed(having))
        return f'<select name="{field}" id="pick-{field}">{options}</select>'

    def trial_select(field: str, entry: RunEntry, chosen: int) -> str:
        case = next((c for c in entry.report.cases if c.name == name), None)
        options = "".join(f'<option value="{t.trial}"{" selected" if t.trial == chosen else ""}>{t.trial} '
                          f'{"✓ pass" if t.passed else "✗ fail"}</option>' for t in (case.trials if case else []))
        return f'<select name="{field}" id="pick-{field}">{options}</select>'

    return (f'<form class="pick panel" method="get" action="/diff" id="trial-picker">'
            f'<input type="hidden" name="test" value="{escape(name)}">'
            f'<label>Before {run_select("a", before)}</label><label>trial {trial_select("ta", before, ta)}</label>'
            f'<label>After {run_select("b", after)}</label><label>trial {trial_select("tb", after, tb)}</label>'
            '<button type="submit">Show these trials</button></form>')


def diff_page(name: str, before: RunEntry, ta: int, after: RunEntry, tb: int, *, runs: Sequence[RunEntry] = ()) -> str:
    """Test `name`'s trajectory in trial `ta` of `before` and trial `tb` of `after`, aligned turn by turn."""
    from ._chrome import _head, _page

    one, two = _trial(before, name, ta), _trial(after, name, tb)
    nav = site_nav(str(after.path.parent), [crumb_run(after.stem, when(after.report.started_at)),
                                            crumb_case(after.stem, name), ("diff", None)])
    meta = f"{_side_head('Before', before, name, one, ta)} → {_side_head('After', after, name, two, tb)}"
    links = (f'<p class="page-links"><a href="/test/{q(name)}" id="history-link">History of {escape(name)}</a>'
             f'<a href="{escape(diff_href(name, after.stem, tb, before.stem, ta))}">Swap sides</a></p>')
    picker = _picker(name, runs or [before, after], before, ta, after, tb)
    if one is None or two is None:
        missing, number = (before, ta) if one is None else (after, tb)
        body = (_head("trialrun · trajectory diff", name, meta)
                + f'<main class="wrap" id="main">{links}<p class="alert warn" id="diff-summary">Run '
                  f"{escape(missing.stem)} has no trial {number} of {escape(name)}.</p>{picker}</main>")
        return _page(f"trialrun · diff {name}", body, served=True, nav=nav)
    diff: TrajectoryDiff = align(one.trajectory, two.trajectory)
    first = diff.first
    rows = []
    for t in diff.steps:
        cls = " ".join(c for c in (t.divergence or "", "diverged" if not t.same else "",
                                   "first-divergence" if t is first else "") if c)
        kind = f'<div class="diff-kind">{escape(_KIND_WORDS[t.divergence])}</div>' if t.divergence else ""
        rows.append(f'<tr class="{cls}" data-step="{t.index + 1}" data-divergence="{escape(t.divergence or "")}">'
                    f'<th class="turn" scope="row">{t.index + 1}{kind}</th>{_step_cell(t.before, t, "before")}'
                    f'{_step_cell(t.after, t, "after")}</tr>')
    table = ('<div class="table-wrap"><table class="tdiff" id="trajectory-diff"><thead><tr><th class="turn">Step</th>'
             f'<th>Before ({breakable(before.stem)}, trial {ta})</th><th>After ({breakable(after.stem)}, trial {tb})</th>'
             f'</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')
    tone = "good" if first is None else "bad"
    body = (_head("trialrun · trajectory diff", name, meta, "passed" if first is None else "failed")
            + f'<main class="wrap" id="main">{links}<p class="alert {tone}" id="diff-summary">{escape(diff.describe())}</p>'
              f"{picker}{_flips(one, two)}{table}"
              + files_side_by_side(one, two, (f"Before (trial {ta})", f"After (trial {tb})"))
            + '<details class="panel" id="raw-exchanges"><summary>Raw requests and responses</summary>'
              '<p>Each turn\'s raw request and response (scrubbed) is on the trial\'s page: '
              f'<a class="trial-link" href="{escape(trial_href(before.stem, name, ta))}">before</a> · '
              f'<a class="trial-link" href="{escape(trial_href(after.stem, name, tb))}">after</a>.</p></details></main>')
    return _page(f"trialrun · diff {name}", body, served=True, nav=nav)
