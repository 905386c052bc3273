"""Why a case failed, as plain text for a terminal or a CI log (the pytest plugin's failure report, the CLI).

A failing trial is shown whole enough to act on without opening a result file: which verdicts failed and why, the
error if any (type, phase, message and the user's frames of the traceback, never trialrun's own), and a compact
trajectory: each turn's text, tool calls with their arguments, what the tools returned (shortened), policy denials
next to the call they refused, shell commands, and the final output. Long trajectories keep their beginning and
their end, since that is where an agent's mistake and its consequence usually are.
"""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Iterable
from typing import Any

from ..results import CaseResult, TrialError, TrialResult
from ..trajectory import Denial, ToolCall, Trajectory

__all__ = ["trial_text", "case_failure_text", "error_text"]

_INDENT = "  "
#: Lines of the user's traceback shown under an error (frames of trialrun itself are dropped).
_TRACEBACK_LINES = 8
#: Lines of a verdict's reason before it is cut (reasons are the point, so they get more room than tool results).
_REASON_LINES = 4
_OUTPUT_LINES = 4
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _one_line(text: str) -> str:
    """Newlines and tabs shown as escapes, so one value stays on one line of the log."""
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


def _clip(text: str, limit: int) -> str:
    """Cut to `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    suffix = f"... (+{len(text) - limit} chars)"
    keep = max(limit - len(suffix), 8)
    return text[:keep] + suffix


def _value(value: Any, limit: int) -> str:
    """A tool argument or an output, short: strings quoted, other values as compact JSON."""
    if isinstance(value, str):
        return repr(_clip(value, limit)) if len(value) > limit else repr(value)
    try:
        text = json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
    except (TypeError, ValueError):
        text = repr(value)
    return _clip(text, limit)


def _call_text(call: ToolCall | Denial, width: int) -> str:
    name = call.name if isinstance(call, ToolCall) else call.tool
    arguments = call.arguments or {}
    per_argument = max(24, (width - len(name)) // max(len(arguments), 1))
    inner = ", ".join(f"{key}={_value(value, per_argument)}" for key, value in arguments.items())
    return f"{name}({inner})"


def _wrap(text: str, width: int, indent: str, max_lines: int, hang: str = _INDENT) -> list[str]:
    """Wrap a long message onto indented lines (continuations indented by `hang`), at most `max_lines` of them."""
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        lines.extend(textwrap.wrap(paragraph, width=max(width - len(indent), 20), subsequent_indent=hang,
                                   initial_indent=hang if lines else "", break_long_words=True,
                                   break_on_hyphens=False) or [""])
    if len(lines) > max_lines:
        lines = lines[: max_lines - 1] + [lines[max_lines - 1][: max(width - len(indent) - 4, 10)] + " ..."]
    return [indent + line for line in lines]


def _fit(line: str, width: int) -> str:
    return line if len(line) <= width else line[: max(width - 3, 10)] + "..."


def _user_frames(traceback_text: str) -> list[str]:
    """The traceback's frames outside trialrun's own package, compact: one location line and one code line each.

    When every frame is trialrun's (the error arose inside trialrun's agent or a model transport), the last frame is
    kept so the reader still sees where it happened.
    """
    frames: list[list[str]] = []
    for line in traceback_text.splitlines():
        stripped = line.strip()
        if stripped.startswith('File "'):
            frames.append([stripped])
        elif frames and stripped and len(frames[-1]) == 1 and not set(stripped) <= set("^~ "):
            frames[-1].append(_INDENT + stripped)
    if not frames:
        return []

    def ours(frame: list[str]) -> bool:
        path = frame[0][len('File "'):].split('"', 1)[0]
        return os.path.abspath(path).startswith(_PACKAGE_DIR + os.sep)

    kept = [frame for frame in frames if not ours(frame)] or frames[-1:]
    return [line for frame in kept for line in (_short_location(frame[0]), *frame[1:])]


def _short_location(location: str) -> str:
    """`File "/long/venv/lib/python3.11/site-packages/pkg/mod.py"` -> `File "pkg/mod.py"`; files under the current
    directory relative to it."""
    path = location[len('File "'):].split('"', 1)[0]
    short = path
    marker = os.sep + "site-packages" + os.sep
    if marker in path:
        short = path.split(marker, 1)[1]
    else:
        try:
            relative = os.path.relpath(path)
        except ValueError:  # another drive on Windows
            relative = path
        if not relative.startswith(".."):
            short = relative
    return location.replace(path, short, 1)


def error_text(error: TrialError, *, width: int = 100, label: str = "error") -> list[str]:
    """An error as lines: `error (invoke): ValueError: message`, then the user's frames of its traceback."""
    lines = _wrap(f"{label} ({error.phase}): {error.type}: {error.message}", width, "", _REASON_LINES + 2)
    if error.traceback:
        frames = _user_frames(error.traceback)[-_TRACEBACK_LINES:]
        if frames:
            lines.append(f"{_INDENT}traceback (most recent call last):")
            lines.extend(_fit(_INDENT * 2 + line, width) for line in frames)
    return lines


def _grades(trial: TrialResult) -> str:
    """How each kind of grade came out, e.g. `outcome passed, trajectory FAILED` (kinds in the verdicts' order)."""
    by_kind: dict[str, bool] = {}
    for verdict in trial.verdicts:
        kind = verdict.kind or "outcome"
        by_kind[kind] = by_kind.get(kind, True) and verdict.passed
    return ", ".join(f"{kind} {'passed' if passed else 'FAILED'}" for kind, passed in by_kind.items())


def _header(trial: TrialResult) -> str:
    """`trial 2 FAILED (outcome passed, trajectory FAILED; agent stopped: max_turns; 0.31s; $0.0005)`."""
    details = []
    if grades := _grades(trial):
        details.append(grades)
    elif trial.error is not None:
        details.append(f"{trial.error.phase} error")
    if trial.status and trial.status != "completed":
        details.append(f"agent stopped: {trial.status}")
    details.append(f"{trial.duration_s:.2f}s")
    if trial.cost_usd is not None:
        details.append(f"${trial.cost_usd:.4f}")
    return f"trial {trial.trial} {'passed' if trial.passed else 'FAILED'} ({'; '.join(details)})"


def _trajectory_lines(trajectory: Trajectory, width: int) -> list[str]:
    """One block per turn: its text, each tool call with what came back (or the denial that refused it)."""
    denials_by_call = {d.call_id: d for d in trajectory.denials if d.call_id}
    shown_denials: set[int] = set()
    lines: list[str] = []
    number_width = len(str(len(trajectory.turns)))
    for number, turn in enumerate(trajectory.turns, start=1):
        lead = f"{number:>{number_width}}. "
        pad = " " * len(lead)
        room = width - len(lead)
        entries: list[str] = []
        if turn.text:
            entries.append(f"says {_value(turn.text, room - 8)}")
        results = {r.call_id: r for r in turn.tool_results if r.call_id}
        loose_results = [r for r in turn.tool_results if not r.call_id]
        for call in turn.tool_calls:
            entries.append(_call_text(call, room))
            denial = denials_by_call.get(call.id) if call.id else None
            result = results.pop(call.id, None) if call.id else None
            if denial is not None:
                shown_denials.add(id(denial))
                rule = f" by {denial.rule}" if denial.rule else ""
                entries.extend(_wrap(f"DENIED{rule}: {_one_line(denial.reason)}", room, "  ", 2))
            elif result is not None:
                entries.append(f"  {'-> ERROR: ' if result.is_error else '-> '}{_one_line(result.content)}")
        for result in [*results.values(), *loose_results]:
            entries.append(f"  {'-> ERROR: ' if result.is_error else '-> '}{_one_line(result.content)}")
        if not entries:
            entries.append("(empty response)")
        for position, entry in enumerate(entries):
            lines.append(_fit((lead if position == 0 else pad) + entry, width))
    for denial in trajectory.denials:
        if id(denial) not in shown_denials:
            rule = f" by {denial.rule}" if denial.rule else ""
            lines.append(_fit(f"DENIED {_call_text(denial, width)}{rule}: {_one_line(denial.reason)}", width))
    for command in trajectory.commands:
        lines.append(_fit(f"$ {_one_line(command)}", width))
    return lines


def _elide(lines: list[str], budget: int) -> list[str]:
    """Keep the first and last lines within `budget`, saying how many were left out in between."""
    if len(lines) <= budget:
        return lines
    budget = max(budget, 3)
    head = (budget - 1) // 2
    tail = budget - 1 - head
    return [*lines[:head], f"... {len(lines) - head - tail} trajectory lines omitted ...", *lines[len(lines) - tail:]]


def _output_lines(output: Any, width: int) -> list[str]:
    if output is None:
        return ["output: None"]
    if not isinstance(output, str):
        return [_fit(f"output: {_value(output, width * 2)}", width)]
    if "\n" not in output.strip():
        return [_fit(f"output: {output!r}", width)] if len(output) + 10 <= width else _wrap(f"output: {output!r}", width, "", _OUTPUT_LINES)
    text_lines = output.strip("\n").splitlines()
    shown = [_fit(_INDENT + line, width) for line in text_lines[:_OUTPUT_LINES]]
    if len(text_lines) > _OUTPUT_LINES:
        shown.append(f"{_INDENT}... (+{len(text_lines) - _OUTPUT_LINES} lines)")
    return ["output:", *shown]


def trial_text(trial: TrialResult, *, width: int = 100, max_lines: int = 40) -> str:
    """One trial, compact: header, failed verdicts with reasons, the error, the trajectory and the output.

    The verdicts and the error are always shown in full (within a few lines each): they are why the trial failed.
    The trajectory gets what is left of `max_lines`, keeping its first and last turns.

    >>> from trialrun import TrialResult, Verdict
    >>> print(trial_text(TrialResult(trial=2, passed=False, duration_s=0.5, output="no",
    ...                              verdicts=[Verdict(False, "equals('yes')", "output was 'no'", kind="outcome")])))
    trial 2 FAILED (outcome FAILED; 0.50s)
      failed verdicts:
        x equals('yes') [outcome]: output was 'no'
      output: 'no'
    """
    width = max(width, 40)
    lines = [_header(trial)]
    failed = trial.failed_verdicts
    if failed:
        lines.append(f"{_INDENT}failed verdicts:")
        for verdict in failed:
            kind = f" [{verdict.kind}]" if verdict.kind else ""
            lines.extend(_wrap(f"x {verdict.grader}{kind}: {verdict.reason}", width, _INDENT * 2, _REASON_LINES))
    if trial.error is not None:
        lines.extend(_INDENT + line for line in error_text(trial.error, width=width - len(_INDENT)))
    if trial.teardown_error is not None:
        lines.extend(_INDENT + line for line in error_text(trial.teardown_error, width=width - len(_INDENT), label="teardown error"))
    trajectory = trial.trajectory
    body = _trajectory_lines(trajectory, width - 2 * len(_INDENT))
    tail = [_INDENT + line for line in _output_lines(trial.output, width - len(_INDENT))] if (trial.output is not None or trajectory.turns) else []
    if body:
        calls = len(trajectory.tool_calls)
        summary = f"{len(trajectory.turns)} turn{'s' if len(trajectory.turns) != 1 else ''}, {calls} tool call{'s' if calls != 1 else ''}"
        if trajectory.denials:
            summary += f", {len(trajectory.denials)} denied"
        budget = max_lines - len(lines) - len(tail) - 1
        lines.append(f"{_INDENT}trajectory ({summary}):")
        lines.extend(_INDENT * 2 + line for line in _elide(body, max(budget, 6)))
    elif any(v.kind == "trajectory" for v in failed):
        lines.append(f"{_INDENT}trajectory: empty (no model traffic was observed through the trial's transports)")
    lines.extend(tail)
    return "\n".join(lines)


def _case_header(case: CaseResult) -> str:
    if case.skipped:
        return f"case {case.name!r} skipped: {case.skip_reason or 'skipped'}"
    n, passed = case.trial_count, case.passed_trials
    status = "passed" if case.passed else "failed"
    stats = f"{passed} of {n} trial{'s' if n != 1 else ''} passed"
    if n:
        stats += f"; pass@1 {case.pass_at_1:.2f}, pass^k {case.pass_pow_k:.0f}"
    return f"case {case.name!r} {status}: {stats}"


def _without_header(text: str) -> str:
    return text.split("\n", 1)[1] if "\n" in text else ""


def case_failure_text(case: CaseResult, *, width: int = 100, max_lines: int = 40) -> str:
    """Why a case failed: its pass counts, then every failing trial (`trial_text`).

    A failing trial that failed exactly like an earlier one (same verdicts, error and trajectory) is listed as
    "same as trial N" instead of being repeated: ten identical trajectories hide the one that differs.
    """
    lines = [_case_header(case)]
    if case.description:
        lines.extend(_wrap(case.description, width, _INDENT, 3))
    seen: dict[str, int] = {}
    for trial in _failing(case.trials):
        text = trial_text(trial, width=width - len(_INDENT), max_lines=max_lines)
        body = _without_header(text)
        lines.append("")
        if body and body in seen:
            lines.append(f"{_INDENT}{text.splitlines()[0]}: same failure as trial {seen[body]}")
            continue
        seen.setdefault(body, trial.trial)
        lines.extend(_INDENT + line if line else line for line in text.splitlines())
    return "\n".join(lines)


def _failing(trials: Iterable[TrialResult]) -> list[TrialResult]:
    return [trial for trial in trials if not trial.passed]
