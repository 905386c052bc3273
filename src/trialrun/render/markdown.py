"""A RunReport or a Comparison as GitHub-flavoured Markdown, compact enough for a CI job summary.

A report shows a heading with the run and its status, a one-line summary, a table of cases and, for each failing
case, a collapsed block saying why (failed verdicts with reasons, errors, a compact trajectory); skipped live
canaries are listed with their reasons. A comparison shows what the gate decides and why, what kind of runs they
were, the word for the run and each test (worse, not worse, cannot tell; intervals as intervals), a warning per
regression, a table of per-case deltas, tests added and removed, aggregate deltas, the config diff, and the seed's
compare lines (`compare.delta_lines`).

Everything that comes from a case, a grader or an agent is escaped: in Markdown text and table cells (pipes,
backticks, emphasis, links, `$` math, HTML), inside `<summary>` (HTML), and in code blocks (a fence longer than any
backtick run inside). Control characters and ANSI codes are removed.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._scrub import scrub_text
from ..report._why import failed_by
from ..report.compare import (
    CaseDelta,
    Comparison,
    delta_lines,
    dropped,
    format_value,
    movement,
    note_lines,
    regression_reason,
    runs_line,
    shown,
)
from ..report.results import CaseResult, RunReport, TrialResult
from ..trajectory import killed_text
from ._cells import run_k, shows_pass_pow_k
from .text import failing_trials, first_reason, one_line, output_summary, printable, trajectory_summary

__all__ = ["report_markdown", "comparison_markdown", "append_step_summary"]

#: Failing cases shown in detail, and failing trials per case: a job summary must stay readable (and under
#: GitHub's 1 MiB per step) with a thousand cases.
MAX_FAILING_CASES = 50
MAX_FAILING_TRIALS = 3
MAX_TOOLS = 8

_MD_SPECIAL = re.compile(r"([`*_\[\]|~$\\])")
_BACKTICKS = re.compile(r"`+")


# -- escaping -----------------------------------------------------------------------------------------------
def _md(text: object, limit: int = 300) -> str:
    """Inline Markdown text (safe in a table cell or a list item): one line, special characters escaped."""
    line = one_line(str(text), limit)
    line = line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", line)


def _html(text: object, limit: int = 300) -> str:
    """Text inside an HTML block (`<summary>`), where Markdown is not processed."""
    return html.escape(one_line(str(text), limit), quote=False)


def _code(text: object, *, table: bool = False, limit: int = 200) -> str:
    """An inline code span that survives any backticks (and pipes, in a table) in the text."""
    line = one_line(str(text), limit)
    longest = max((len(run) for run in _BACKTICKS.findall(line)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if line.startswith("`") or line.endswith("`") else ""
    if table:
        line = line.replace("|", "\\|")
    return f"{fence}{pad}{line}{pad}{fence}"


def _code_block(lines: list[str], language: str = "text") -> str:
    body = "\n".join(printable(line) for line in lines)
    longest = max((len(run) for run in _BACKTICKS.findall(body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{body}\n{fence}"


def _table(header: list[str], align: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines.extend("| " + " | ".join(cell or " " for cell in row) + " |" for row in rows)
    return "\n".join(lines)


# -- numbers ------------------------------------------------------------------------------------------------
def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _turns(value: float | None) -> str:
    """Mean turns with at most 2 decimals, as every renderer shows them (1.33, 2, 1.5)."""
    return "–" if value is None else f"{value:.2f}".rstrip("0").rstrip(".")


def _money(value: float | None) -> str:
    return "–" if value is None else f"\\${value:.4f}"


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


# -- a run --------------------------------------------------------------------------------------------------
_CASE_STATUS = {True: "✅ passed", False: "❌ failed", None: "⏭️ skipped"}


def _run_status(report: RunReport) -> tuple[str, str]:
    if report.status == "interrupted":
        return "⚠️", "interrupted"
    if report.failed_case_count:
        return "❌", "failed"
    if not report.graded_cases:
        return "⚪", "nothing graded"
    return "✅", "passed"


def _k_label(report: RunReport) -> str:
    counts = {case.trial_count for case in report.graded_cases} or {report.trial_count}
    return f"pass^{counts.pop()}" if len(counts) == 1 else "pass^k"


def _multi_trial(report: RunReport) -> bool:
    """pass^k gets a column (and the summary a figure) only when some test ran more than one trial."""
    return shows_pass_pow_k(run_k(report))


def _summary_line(report: RunReport) -> str:
    total = report.case_count + len(report.unfinished_cases)
    if not total:
        return f"No cases were selected. · {_duration(report.duration_s)}"
    parts = [
        f"**{report.passed_case_count} passed**",
        f"**{report.failed_case_count} failed**",
        f"{report.skipped_case_count} skipped",
    ]
    if report.unfinished_cases:
        parts.append(f"{len(report.unfinished_cases)} unfinished")
    trials = f"{report.trial_count} trial{'s' if report.trial_count != 1 else ''} each"
    head = ", ".join(parts) + f" of {total} case{'s' if total != 1 else ''} ({trials})"
    stats = [head, f"pass@1 {_num(report.pass_at_1)}"]
    if _multi_trial(report):
        stats.append(f"{_k_label(report)} {_num(report.pass_pow_k)}")
    if report.score is not None:
        stats.append(f"avg score {_num(report.score)}")
    if report.cost_usd is not None:
        stats.append(f"cost {_money(report.cost_usd)}")
    stats.append(_duration(report.duration_s))
    return " · ".join(stats)


def _tools_cell(tools: list[str]) -> str:
    shown = [_code(tool, table=True, limit=60) for tool in tools[:MAX_TOOLS]]
    if len(tools) > MAX_TOOLS:
        shown.append(f"+{len(tools) - MAX_TOOLS} more")
    return ", ".join(shown) or "–"


def _cases_table(report: RunReport) -> str:
    multi = _multi_trial(report)
    header = ["Case", "Status", "Score", "pass@1", *(["pass^k"] if multi else []), "Turns", "Tools"]
    align = ["---", "---", "---:", "---:", *(["---:"] if multi else []), "---:", "---"]
    rows = []
    for case in report.cases:
        turns = _turns(case.turns)
        status = _CASE_STATUS[None if case.skipped else bool(case.passed)]
        if case.passed is False and failed_by(case):  # what failed it, beside a score that may look fine
            status += f" ({_md(failed_by(case), 60)})"
        row = [_md(case.name, 120), status, _num(case.score), _num(case.pass_at_1)]
        if multi:
            row.append(_num(case.pass_pow_k) if shows_pass_pow_k(case.trial_count) else "–")
        row += [turns, _tools_cell(case.tools_used)]
        rows.append(row)
    rows.extend([_md(name, 120), "⚠️ unfinished", "–", "–", *(["–"] if multi else []), "–", "–"]
                for name in report.unfinished_cases)
    return _table(header, align, rows)


def _trial_block(trial: TrialResult) -> list[str]:
    """One failing trial as a short list: its failed verdicts, its error, and one line each for what the agent did
    and what it answered (the job summary stays compact; the pytest output and the HTML report have the rest)."""
    ended = f", ended {_md(trial.status, 40)}" if trial.status else ""
    lines = [f"**Trial {trial.trial}** ({trial.duration_s:.2f} s{ended})", ""]
    lines.extend(f"- ❌ {_code(v.grader, limit=120)} failed: {_md(v.reason, 1000)}" for v in trial.failed_verdicts)
    for label, error in (("error", trial.error), ("teardown error", trial.teardown_error)):
        if error is not None:
            lines.append(f"- 💥 **{label}** in {_md(error.phase, 40)}: {_code(error.type, limit=80)}: "
                         f"{_md(error.message, 1000)}")
    if killed := killed_text(trial.killed):
        lines.append(f"- When the agent ended: {_md(killed, 1000)}")
    lines.append(f"- Trajectory: {_md(trajectory_summary(trial.trajectory), 400)}")
    lines.append(f"- Output: {_md(output_summary(trial.output), 300)}")
    return lines


def _failure_details(case: CaseResult) -> list[str]:
    failing = failing_trials(case)
    summary = (f"<b>{_html(case.name, 120)}</b> — {case.passed_trials}/{case.trial_count} trials passed — "
               f"{_html(first_reason(case), 200)}")
    lines = ["<details>", f"<summary>{summary}</summary>", ""]
    if case.description:
        lines += [f"_{_md(case.description, 500)}_", ""]
    for trial in failing[:MAX_FAILING_TRIALS]:
        lines += [*_trial_block(trial), ""]
    if len(failing) > MAX_FAILING_TRIALS:
        lines += [f"… and {len(failing) - MAX_FAILING_TRIALS} more failing trials.", ""]
    lines.append("</details>")
    return lines


def report_markdown(report: RunReport, *, title: str | None = None) -> str:
    """The report as Markdown for a CI job summary or a pull-request comment.

    >>> from datetime import datetime, timezone
    >>> from trialrun.report.results import RunReport
    >>> empty = RunReport.build([], trial_count=1, started_at=datetime(2025, 1, 2, tzinfo=timezone.utc), duration_s=0)
    >>> report_markdown(empty, title="Nightly").splitlines()[0]
    '## ⚪ Nightly — nothing graded'
    """
    emoji, word = _run_status(report)
    heading = title if title is not None else f"trialrun run {report.run_id}" if report.run_id else "trialrun run"
    parts = [f"## {emoji} {_md(heading, 200)} — {word}", "", _summary_line(report)]
    if report.cases or report.unfinished_cases:
        parts += ["", _cases_table(report)]
    failed = report.failed_cases
    if failed:
        parts += ["", "### ❌ Failures", ""]
        for case in failed[:MAX_FAILING_CASES]:
            parts += [*_failure_details(case), ""]
        if len(failed) > MAX_FAILING_CASES:
            parts += [f"… and {len(failed) - MAX_FAILING_CASES} more failing cases (see the full report).", ""]
        parts.pop()
    from .terminal import ending_notes  # the one wording of how trials ended

    endings = ending_notes(report)
    if endings:  # a trial cut off by a limit can still pass on the rubric: say so
        parts += ["", "### ⏹️ Trials that did not complete", ""]
        parts += [f"- {_md(line, 300)}" for line in endings]
    if report.skipped_cases:
        parts += ["", "### ⏭️ Skipped", ""]
        parts += [f"- **{_md(skip.name, 120)}**: {_md(skip.reason, 300)}" for skip in report.skipped_cases]
    partial = [c for c in report.cases if c.partial]
    if report.unfinished_cases or partial:
        parts += ["", "### ⚠️ Interrupted", ""]
        if report.unfinished_cases:
            names = ", ".join(_md(name, 120) for name in report.unfinished_cases)
            parts.append(f"The run was interrupted before these cases finished: {names}")
        if partial:
            runs = ", ".join(f"{_md(c.name, 120)} ({len(c.trials)} of {len(c.trials) + c.unfinished_trials} trials)"
                             for c in partial)
            parts.append(("" if not report.unfinished_cases else "\n") + f"Partly run, scored on the trials that finished: {runs}")
    return scrub_text("\n".join(parts) + "\n")


# -- a comparison -------------------------------------------------------------------------------------------
_WORD_MARK = {"worse": "🔴 worse", "not worse": "🟢 not worse", "cannot tell": "🟡 cannot tell"}


def _change(delta: CaseDelta) -> str:
    if delta.regression:
        return "⚠️ **regression**"
    return {"improved": "▲ improved", "regressed": "▼ lower", "unchanged": "= unchanged",
            "added": "🆕 added", "removed": "➖ removed", "not_finished": "⏸️ not finished"}[delta.status]


def _pair(before: float | None, after: float | None) -> str:
    return f"{_num(before)} → {_num(after)}"


def _span(change: tuple[float, float, float] | None) -> str:
    """A change with its 95% interval: `-0.20 [-0.90, +0.50]`."""
    return "–" if change is None else f"{change[0]:+.2f} [{change[1]:+.2f}, {change[2]:+.2f}]"


def _deltas_table(comparison: Comparison) -> str:
    multi = comparison.multi_trial
    live = any(d.chance is not None for d in comparison.cases)
    header = ["Case", "Before", "After", "Δ", "Change", "Verdict", *(["pass@1", "pass^k"] if multi else []),
              *(["pass@1 change (95%)"] if live else [])]
    align = ["---", "---:", "---:", "---:", "---", "---", *(["---", "---"] if multi else []), *(["---"] if live else [])]
    rows = []
    for d in comparison.cases:
        name = f"**{_md(d.name, 120)}**" if d.regression or d.word == "worse" else _md(d.name, 120)
        moved = "=" if d.status == "unchanged" else movement(d.delta) or "–"
        before = "not finished" if d.unfinished_in == "before" else _num(d.before)
        after = "not finished" if d.unfinished_in == "after" else _num(d.after)
        row = [name, before, after, moved, _change(d), _WORD_MARK[d.word] if d.word else "–"]
        if multi:
            row += [_pair(d.pass_at_1_before, d.pass_at_1_after), _pair(d.pass_pow_k_before, d.pass_pow_k_after)]
        if live:
            row.append(_span(d.chance.change) if d.chance is not None else "–")
        rows.append(row)
    return _table(header, align, rows)


def _aggregates_table(comparison: Comparison) -> str:
    def moved(before: float | None, after: float | None) -> str:
        return "–" if before is None or after is None else movement(round(shown(after) - shown(before), 2))

    rows = [
        ["Avg score", _num(comparison.avg_score_before), _num(comparison.avg_score_after),
         moved(comparison.avg_score_before, comparison.avg_score_after)],
        ["Pass rate", f"{comparison.passed_before}/{comparison.total_before}",
         f"{comparison.passed_after}/{comparison.total_after}",
         movement(comparison.passed_after - comparison.passed_before, integer=True)],
    ]
    if comparison.trials_before != comparison.trials_after:  # scores over 1 trial vs 3 are not like for like
        rows.append(["Trials", str(comparison.trials_before), str(comparison.trials_after), "–"])
    chance = comparison.run.chance if comparison.run is not None else None
    if comparison.multi_trial:
        rows.append(["pass@1", _num(comparison.pass_at_1_before), _num(comparison.pass_at_1_after),
                     moved(comparison.pass_at_1_before, comparison.pass_at_1_after)
                     + (f" (95%: {_span(chance.change)})" if chance is not None else "")])
        rows.append(["pass^k", _num(comparison.pass_pow_k_before), _num(comparison.pass_pow_k_after),
                     moved(comparison.pass_pow_k_before, comparison.pass_pow_k_after)
                     + (f" (95%: {_span(chance.pass_pow_k_change)})" if chance is not None else "")])
    return _table(["Aggregate", "Before", "After", "Δ"], ["---", "---:", "---:", "---"], rows)


def _config_value(value: Any) -> str:
    return "_(none)_" if value is None else _code(format_value(value), table=True, limit=120)


def _regression_warning(comparison: Comparison, d: CaseDelta) -> list[str]:
    what = "Safety regression" if d.safety_breaches else "Regression"
    if d.safety_breaches or (d.sub_score_regressions and not d.newly_failing and not dropped(comparison, d)):
        why = _md(regression_reason(comparison, d), 400)  # a broken safety claim; a sub-score behind a steady total
    elif dropped(comparison, d):
        why = f"({d.delta:+.2f}, a drop of {comparison.threshold:.2f} or more)"
    else:  # passed before, fails now, at about the same score
        why = "passed before, fails now" + (f": {_md(d.failure_after, 200)}" if d.failure_after else "")
    if d.word is not None:
        why += f" — verdict: **{d.word}**"
    return ["> [!WARNING]", f"> **{what} in {_md(d.name, 120)}**: {_num(d.before)} → {_num(d.after)} {why}"]


def _verdict_section(comparison: Comparison) -> list[str]:
    """The run's word and why, and the kind of runs (said once), under the gate's line."""
    c = comparison
    parts = [f"> [!NOTE]\n> {_md(runs_line(c), 600)}", ""]
    if c.run is not None:
        parts += [f"**The run: {_WORD_MARK[c.run.word]}** — {_md(c.run.reason, 600)}", ""]
    return parts


def comparison_markdown(comparison: Comparison, *, title: str | None = None) -> str:
    """The comparison as Markdown: the gate's decision and the verdict first, then the warnings, per-case deltas
    (each with its word), aggregates (with their intervals), config changes, and the seed's compare lines."""
    c = comparison
    before, after = c.before_run_id or "before", c.after_run_id or "after"
    heading = title if title is not None else f"trialrun compare: {before} → {after}"
    word = c.run.word if c.run is not None else None
    failed = c.gate is not None and c.gate.failed
    mark = "⚠️" if failed or word == "worse" else "✅" if word == "not worse" else "❔"
    count = len(c.worse)
    lost = [f"{len(names)} test{'s' if len(names) != 1 else ''} {what}"
            for names, what in ((c.not_finished, "not finished"), (c.removed, "removed")) if names]
    summary = (f"{count} test{'s' if count != 1 else ''} worse" if count else "the run is worse" if word == "worse"
               else "; ".join(["nothing worse", *lost, *(["cannot tell"] if word == "cannot tell" and c.shared else [])]))
    parts = [f"## {mark} {_md(heading, 200)} — {summary}", ""]
    if c.gate is not None:
        parts += [f"**Gate (`--fail-on-regression`):** {_md(c.gate.line.removeprefix('gate: '), 600)}", ""]
    parts += _verdict_section(c)
    for note in note_lines(c):  # an interrupted run: its missing tests did not finish, they were not removed
        sentence = _md(note.removeprefix("note: "), 300)
        parts += ["> [!NOTE]", f"> {sentence[:1].upper()}{sentence[1:]}", ""]
    for d in c.cases:
        if d.regression or d.safety_breaches:
            parts += [*_regression_warning(c, d), ""]
    if c.cases:
        parts += [_deltas_table(c), ""]
    reasons = [d for d in c.cases if d.word is not None and d.word != "not worse"]
    if reasons:
        parts += ["<details>", "<summary>Why each test is worse or cannot tell</summary>", ""]
        parts += [f"- **{_md(d.name, 120)}**: {d.word}: {_md(d.reason, 600)}" for d in reasons]
        parts += ["", "</details>", ""]
    added = ", ".join(_md(name, 120) for name in c.added) or "none"
    removed = ", ".join(_md(name, 120) for name in c.removed) or "none"
    line = f"**Tests added:** {added} · **Tests removed:** {removed}"
    if c.not_finished:
        line += " · **Not finished (interrupted):** " + ", ".join(_md(name, 120) for name in c.not_finished)
    parts += [line, "", _aggregates_table(c), ""]
    parts += ["### Config changes", ""]
    if c.config_changes:
        rows = [[_code(ch.key, table=True, limit=120), _config_value(ch.before), _config_value(ch.after)]
                for ch in c.config_changes if ch.diff is None]
        if rows:
            parts += [_table(["Key", "Before", "After"], ["---", "---", "---"], rows), ""]
        for ch in c.config_changes:
            if ch.diff is not None:  # a text of several lines: what changed in it
                fence = "`" * max(3, 1 + max((len(run) for run in _BACKTICKS.findall(ch.diff)), default=0))
                parts += [f"{_code(ch.key, table=False, limit=120)} changed:", "", f"{fence}diff", ch.diff, fence, ""]
    else:
        parts += ["No configuration changes.", ""]
    parts += ["<details>", "<summary>Compare output</summary>", "", _code_block(delta_lines(c)), "",
              "</details>"]
    return scrub_text("\n".join(parts) + "\n")


# -- the CI job summary -------------------------------------------------------------------------------------
def append_step_summary(markdown: str, environ: Mapping[str, str] = os.environ) -> Path | None:
    """Append `markdown` to the file `$GITHUB_STEP_SUMMARY` names (creating it), after a blank line when the file
    already has content; never overwrites. Returns the path, or None when the variable is unset or empty.

    Raises OSError naming the path when it cannot be written (a CI misconfiguration worth seeing).
    """
    target = environ.get("GITHUB_STEP_SUMMARY", "")
    if not target:
        return None
    path = Path(target)
    text = scrub_text(markdown if markdown.endswith("\n") else markdown + "\n")
    try:
        if path.exists() and path.stat().st_size:
            with path.open("rb") as existing:
                existing.seek(-1, os.SEEK_END)
                ends_with_newline = existing.read(1) == b"\n"
            text = ("\n\n" if not ends_with_newline else "\n") + text
        with path.open("a", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise OSError(f"cannot append the summary to GITHUB_STEP_SUMMARY={target}: {exc.strerror or exc}") from exc
    return path
