"""Why a case failed, as plain text for a terminal or a CI log (the pytest plugin's failure report, the CLI).

A failing trial is shown whole enough to act on without opening a result file: which verdicts failed and why, the
error if any (type, phase, message and the user's frames of the traceback, plus the library frame that raised when
the error came from inside an SDK; never trialrun's runner), and a compact trajectory: each turn's text, tool calls
with their arguments, what the tools returned (shortened), policy denials next to the call they refused, shell
commands, and the final output. Long trajectories keep their beginning and
their end, since that is where an agent's mistake and its consequence usually are.

This module is the one source of those explanations for every renderer: the JUnit and Markdown renderers use its
`first_cause`/`first_reason` (the one-line "why"), `failing_trials`, `case_failure_text` (JUnit's failure body) and
the compact `trajectory_summary`/`output_summary` (Markdown's), with `printable` and `one_line` to make any of it
safe for a CI page; the terminal table uses `first_reason`. Each renderer adds only its own markup and escaping.
"""

from __future__ import annotations

import json
import os
import re
import sysconfig
import textwrap
from collections.abc import Mapping
from typing import Any

from .._scrub import scrub_json, scrub_text
from ..report._why import failing_trials, first_cause, first_reason, why_failed
from ..report.results import CaseResult, TrialError, TrialResult, kinds_passed
from ..trajectory import Conversation, Denial, ToolCall, Trajectory, Turn, killed_text
from ._cells import shows_pass_pow_k

__all__ = [
    "trial_text", "case_failure_text", "error_text", "failing_trials", "first_cause", "first_reason", "why_failed",
    "trajectory_summary", "output_summary", "printable", "one_line", "partly_run",
]

_INDENT = "  "
#: Lines of the user's traceback shown under an error (frames of trialrun itself are dropped).
_TRACEBACK_LINES = 8
#: Lines of a verdict's reason before it is cut (reasons are the point, so they get more room than tool results).
_REASON_LINES = 4
_OUTPUT_LINES = 4
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_STDLIB_DIRS = tuple({os.path.abspath(sysconfig.get_paths()[key]) + os.sep for key in ("stdlib", "platstdlib")})
#: Paths of installed packages and of a standard library, on any machine (`.../lib/python3.11/...`, `...\\Lib\\...`).
_LIBRARY_PATH = re.compile(r"[\\/](?:site-packages|dist-packages)[\\/]|[\\/]lib[\\/]python\d[\d.]*[\\/]|[\\/]Lib[\\/]")
#: Room for one tool call in `trajectory_summary` (its arguments share it).
_SUMMARY_CALL_WIDTH = 80

#: CSI/OSC escape sequences (colours, cursor moves, hyperlinks) and lone ESCs.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]?")
#: Characters that are not text: C0 controls other than tab and line breaks, lone surrogates, U+FFFE and U+FFFF.
#: This is exactly what XML 1.0 forbids anywhere in a document, so `printable` text is also safe in JUnit XML.
_NOT_TEXT = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def printable(text: str) -> str:
    r"""Text a CI page can show: ANSI sequences dropped (the page shows the words, not `[31m`), characters that are
    not text (NUL, BEL, lone surrogates...) replaced by U+FFFD so a reader sees that something was there.

    >>> printable("\x1b[31mred\x1b[0m bell\x07") == "red bell\ufffd"
    True
    """
    return _NOT_TEXT.sub("\ufffd", _ANSI.sub("", scrub_text(text)))


def one_line(text: str, limit: int) -> str:
    r"""`printable` text on one line (runs of whitespace, newlines included, become one space), cut to `limit`
    characters saying how much was left out: for a message attribute, a summary, a table cell.

    >>> one_line("first\n  second " + "x" * 40, 30)
    'first second xx... (+38 chars)'
    """
    return _clip(" ".join(printable(text).split()), limit)


def _scrubbed(model: Any) -> Any:
    """A result model (a trial, an error) with secrets scrubbed from all its text, BEFORE it is wrapped and cut into
    lines (which would split a key where no pattern finds it any more); the same object when there was none."""
    try:
        text = model.model_dump_json()
    except ValueError:  # text JSON cannot carry (a lone surrogate): scrub the values one by one
        data = model.model_dump()
        clean_data = scrub_json(data)
        return model if clean_data == data else type(model).model_validate(clean_data)
    clean = scrub_text(text)
    return model if clean is text else type(model).model_validate_json(clean)


def _escaped(text: str) -> str:
    """Newlines and tabs shown as escapes, so one value stays on one line of the log."""
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


def _clip(text: str, limit: int) -> str:
    """Cut to `limit` characters, saying how many were left out (the count is of what the cut removed, the
    suffix's own room included)."""
    if len(text) <= limit:
        return text
    text = scrub_text(text)  # before the cut, which would leave half a secret that no pattern knows any more
    keep = max(limit - len(f"... (+{len(text)} chars)"), 8)  # the widest count the suffix can need
    return text[:keep] + f"... (+{len(text) - keep} chars)"


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
    if isinstance(call, ToolCall) and call.raw_arguments is not None:  # what the model sent could not be read
        return f"{name}(<invalid arguments: {_value(call.raw_arguments, max(24, width - len(name) - 24))}>)"
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


def _is_library(path: str) -> bool:
    """A frame of trialrun itself, of an installed package or of the standard library (also for a traceback stored
    on another machine: its site-packages and lib/pythonX.Y paths say so)."""
    if path.startswith("<frozen "):
        return True
    if _LIBRARY_PATH.search(path):
        return True
    absolute = os.path.abspath(path)
    return absolute.startswith(_PACKAGE_DIR + os.sep) or absolute.startswith(_STDLIB_DIRS)


def _user_frames(traceback_text: str) -> list[str]:
    """The frames worth reading, compact (one location line and one code line each): the user's frames, outside
    trialrun, installed packages and the standard library, and the library frame that raised, when the error came
    from inside a library (an SDK call several frames below the user's own line).

    When every frame is a library's (the error arose inside trialrun's agent or a model transport), the last frame
    is kept so the reader still sees where it happened.
    """
    frames: list[list[str]] = []
    for line in traceback_text.splitlines():
        stripped = line.strip()
        if stripped.startswith('File "'):
            frames.append([stripped])
        elif frames and stripped and len(frames[-1]) == 1 and line.startswith("    ") and not set(stripped) <= set("^~ "):
            frames[-1].append(_INDENT + stripped)
    if not frames:
        return []

    def library(frame: list[str]) -> bool:
        return _is_library(frame[0][len('File "'):].split('"', 1)[0])

    kept = [frame for frame in frames if not library(frame)]
    if library(frames[-1]):
        kept.append(frames[-1])
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
    error = _scrubbed(error)
    lines = _wrap(f"{label} ({error.phase}): {error.type}: {error.message}", width, "", _REASON_LINES + 2)
    if error.traceback:
        frames = _user_frames(error.traceback)[-_TRACEBACK_LINES:]
        if frames:
            lines.append(f"{_INDENT}traceback (most recent call last):")
            lines.extend(_fit(_INDENT * 2 + line, width) for line in frames)
    return lines


def _grades(trial: TrialResult) -> str:
    """How each kind of grade came out, e.g. `outcome passed, trajectory FAILED` (kinds in the verdicts' order)."""
    return ", ".join(f"{kind} {'passed' if passed else 'FAILED'}" for kind, passed in kinds_passed(trial.verdicts).items())


def _header(trial: TrialResult) -> str:
    """`trial 2 FAILED (outcome passed, trajectory FAILED; agent stopped: max_turns; 0.31s; $0.0005)`."""
    details = []
    if grades := _grades(trial):
        details.append(grades)
    elif trial.error is not None:
        details.append(f"{trial.error.phase} error")
    if trial.teardown_error is not None:
        details.append("teardown error")
    if trial.status and trial.status != "completed":
        details.append(f"agent stopped: {trial.status}")
    details.append(f"{trial.duration_s:.2f}s")
    if trial.cost_usd is not None:
        details.append(f"${trial.cost_usd:.4f}")
    return f"trial {trial.trial} {'passed' if trial.passed else 'FAILED'} ({'; '.join(details)})"


def _trajectory_lines(trajectory: Trajectory, width: int) -> list[str]:
    """One block per turn of the main conversation: its text, each tool call with what came back (or the denial
    that refused it); then each side request and sub-agent, folded under it with its own turns."""
    denials_by_call = {d.call_id: d for d in trajectory.denials if d.call_id}
    shown_denials: set[int] = set()
    lines = _turn_lines(trajectory.turns, width, denials_by_call, shown_denials)
    for number, conversation in enumerate(trajectory.other_conversations, start=1):
        lines.append(_fit(conversation_title(conversation, number), width))
        lines.extend("   " + line for line in _turn_lines(conversation.turns, width - 3, denials_by_call, shown_denials))
    for denial in trajectory.denials:
        if id(denial) not in shown_denials:
            rule = f" by {denial.rule}" if denial.rule else ""
            lines.append(_fit(f"DENIED {_call_text(denial, width)}{rule}: {_escaped(denial.reason)}", width))
    for command in trajectory.commands:
        lines.append(_fit(f"$ {_escaped(command)}", width))
    return lines


def conversation_title(conversation: Conversation, number: int) -> str:
    """`+ side request 1 (no tools; "Generate a title..."): 1 response, not counted as turns`: one line naming a
    conversation beside the main one (the HTML report and the terminal say the same)."""
    kind = "sub-agent" if conversation.role == "sub" else "side request"
    tools = f"tools: {', '.join(conversation.tools[:6])}{', ...' if len(conversation.tools) > 6 else ''}" if conversation.tools else "no tools"
    about = conversation.prompt or conversation.system or ""
    shown = f"; {_value(about, 50)}" if about else ""
    responses = len(conversation.turns)
    return (f"+ {kind} {number} ({tools}{shown}): {responses} response{'s' if responses != 1 else ''}, "
            "not counted as turns")


def _turn_lines(turns: list[Turn], width: int, denials_by_call: Mapping[str, Denial], shown_denials: set[int]) -> list[str]:
    lines: list[str] = []
    number_width = len(str(len(turns)))
    for number, turn in enumerate(turns, start=1):
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
                by = f" by {denial.rule}" if denial.rule else " by the agent" if denial.source == "agent" else ""
                entries.extend(_wrap(f"DENIED{by}: {_escaped(denial.reason)}", room, "  ", 2))
            elif result is not None:
                entries.append(f"  {'-> ERROR: ' if result.is_error else '-> '}{_escaped(result.content)}")
        for result in [*results.values(), *loose_results]:
            entries.append(f"  {'-> ERROR: ' if result.is_error else '-> '}{_escaped(result.content)}")
        if not entries:
            entries.append("(empty response)")
        for position, entry in enumerate(entries):
            lines.append(_fit((lead if position == 0 else pad) + entry, width))
    return lines


def trajectory_summary(trajectory: Trajectory) -> str:
    """What the agent did, on one line, for places with room for a line but not a block (a Markdown list item):
    the turn count, each tool call with its arguments (marked when a policy denied it or the tool failed), denials
    of calls the model never completed, and the shell commands. `trial_text` shows the same turn by turn.

    >>> from trialrun import ToolCall, Trajectory, Turn
    >>> trajectory_summary(Trajectory(turns=[Turn(tool_calls=[ToolCall("read_file", {"path": "a.md"}, id="c1")])]))
    "1 turn; read_file(path='a.md')"
    """
    denied = {d.call_id: d for d in trajectory.denials if d.call_id}
    steps: list[str] = []
    for call in trajectory.tool_calls:
        step = _call_text(call, _SUMMARY_CALL_WIDTH)
        denial = denied.get(call.id) if call.id else None
        if denial is not None:
            step += f" [DENIED by {denial.rule or 'policy'}]"
        else:
            result = trajectory.result_for(call)
            if result is not None and result.is_error:
                step += " [tool error]"
        steps.append(step)
    call_ids = {call.id for call in trajectory.tool_calls if call.id}
    steps.extend(f"{_call_text(d, _SUMMARY_CALL_WIDTH)} [DENIED by {d.rule or 'policy'}]"
                 for d in trajectory.denials if d.call_id not in call_ids)
    turns = len(trajectory.turns)
    summary = f"{turns} turn{'s' if turns != 1 else ''}; {' → '.join(steps) if steps else 'no tool calls'}"
    for kind, label in (("sub", "sub-agent"), ("side", "side request")):
        others = [c for c in trajectory.other_conversations if c.role == kind]
        if others:
            calls = [_call_text(call, _SUMMARY_CALL_WIDTH) for c in others for call in c.tool_calls]
            summary += f"; + {len(others)} {label}{'s' if len(others) != 1 else ''}" + (
                f" ({' → '.join(calls)})" if calls else "")
    if trajectory.commands:
        summary += "; commands: " + "; ".join(f"`{command}`" for command in trajectory.commands)
    return summary


def output_summary(output: Any, limit: int = 200) -> str:
    r"""A trial's final output on one line: a string quoted (`printable`, so a CI page shows it), another value as
    compact JSON, cut to about `limit` characters; `(none)` when there is none.

    >>> output_summary("Done.\n"), output_summary({"files": 2}), output_summary(None)
    ("'Done.\\n'", '{"files":2}', '(none)')
    """
    if output is None or (isinstance(output, str) and not output):
        return "(none)"
    return _value(printable(output) if isinstance(output, str) else output, limit)


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
    trial = _scrubbed(trial)
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
    if killed := killed_text(trial.killed):  # what the agent left running (or everything, on a timeout)
        lines.extend(_wrap(f"when the agent ended: {killed}", width, _INDENT, _REASON_LINES))
    trajectory = trial.trajectory
    body = _trajectory_lines(trajectory, width - 2 * len(_INDENT))
    tail = [_INDENT + line for line in _output_lines(trial.output, width - len(_INDENT))] if (trial.output is not None or trajectory.turns) else []
    if body:
        calls = len(trajectory.tool_calls)
        summary = f"{len(trajectory.turns)} turn{'s' if len(trajectory.turns) != 1 else ''}, {calls} tool call{'s' if calls != 1 else ''}"
        if trajectory.denials:
            summary += f", {len(trajectory.denials)} denied"
        if trajectory.other_conversations:
            others = len(trajectory.other_conversations)
            summary += f", {others} side/sub conversation{'s' if others != 1 else ''}"
        budget = max_lines - len(lines) - len(tail) - 1
        lines.append(f"{_INDENT}trajectory ({summary}):")
        lines.extend(_INDENT * 2 + line for line in _elide(body, max(budget, 6)))
    elif any(v.kind == "trajectory" for v in failed):
        lines.append(f"{_INDENT}trajectory: empty (no model traffic was observed through the trial's transports)")
    lines.extend(tail)
    return "\n".join(lines)


def partly_run(case: CaseResult) -> str | None:
    """How much of a partly run case ran ("1 of 3 trials finished (interrupted; scored on those)"), the words every
    view marks it with; None for a case whose trials all finished."""
    if not case.partial:
        return None
    return (f"{len(case.trials)} of {len(case.trials) + case.unfinished_trials} trials finished "
            "(interrupted; scored on those)")


def _case_header(case: CaseResult) -> str:
    if case.skipped:
        return f"case {case.name!r} skipped: {case.skip_reason or 'skipped'}"
    n, passed = case.trial_count, case.passed_trials
    status = "passed" if case.passed else "failed"
    stats = f"{passed} of {n} trial{'s' if n != 1 else ''} passed"
    if n and case.pass_at_1 is not None:  # a hand-built result may lack it
        stats += f"; pass@1 {case.pass_at_1:.2f}"
        if case.pass_pow_k is not None and shows_pass_pow_k(n):  # with one trial pass^k is pass@1 again
            stats += f", pass^k {case.pass_pow_k:.2f}"
    return f"case {case.name!r} {status}: {stats}"


def _without_header(text: str) -> str:
    return text.split("\n", 1)[1] if "\n" in text else ""


def case_failure_text(case: CaseResult, *, width: int = 100, max_lines: int = 40) -> str:
    """Why a case failed: its pass counts, then every failing trial (`trial_text`).

    A failing trial that failed exactly like an earlier one (same verdicts, error and trajectory) is listed as
    "same as trial N" instead of being repeated: ten identical trajectories hide the one that differs.
    """
    lines = [scrub_text(_case_header(case))]
    if case.description:
        lines.extend(_wrap(scrub_text(case.description), width, _INDENT, 3))
    seen: dict[str, int] = {}
    for trial in failing_trials(case):
        text = trial_text(trial, width=width - len(_INDENT), max_lines=max_lines)
        body = _without_header(text)
        lines.append("")
        if body and body in seen:
            lines.append(f"{_INDENT}{text.splitlines()[0]}: same failure as trial {seen[body]}")
            continue
        seen.setdefault(body, trial.trial)
        lines.extend(_INDENT + line if line else line for line in text.splitlines())
    return "\n".join(lines)
