"""A RunReport as JUnit XML, for the test-report views of CI systems (Jenkins, GitLab, GitHub test reporters).

The target is the strict schema CI tools validate against (Jenkins xunit-plugin's junit-10.xsd, which pytest's
`junit_family=xunit2` emits). That schema allows `<properties>` only inside `<testsuite>`, so per-case statistics
are testsuite properties named `trialrun.case.<case>.<stat>`, and are repeated as readable text in each testcase's
`<system-out>`.

One testcase per case; its outcome element follows one rule, so a viewer's counts mean the same every time:

- `<failure>` when a grader explains the failure: at least one failing trial has a failed verdict. The message is
  the first such verdict's "grader: reason"; the text lists every failing trial (failed verdicts, error, a compact
  trajectory), errored trials included.
- `<error>` when no grader explains it: every failing trial failed only with an error (an exception in setup or
  invoke, a timeout, a blocked network call, a model error) or the case ran no trial. The message is the first
  error ("phase: Type: message").
- `<error type="Interrupted">` for a case an interrupted run did not finish (the report names it, has no result).
- `<skipped>` for a case that was not run (a live canary without `--include-live-canary`), with its reason.

Text that XML 1.0 cannot carry (NUL and other control characters, lone surrogates) is removed; ANSI colour codes are
stripped whole so a CI page shows the words, not `[31m`.
"""

from __future__ import annotations

import re
import socket
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from datetime import timezone

from ..expect._base import Verdict, clip, output_text
from ..results import CaseResult, RunReport, TrialResult
from ..trajectory import Trajectory

__all__ = ["junit_xml"]

#: CSI/OSC escape sequences (colours, cursor moves, hyperlinks) and lone ESCs.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]?")
#: Characters XML 1.0 does not allow anywhere in a document (even as character references).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _clean(text: str) -> str:
    """Text XML 1.0 can carry: ANSI sequences dropped, forbidden characters replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", _ANSI.sub("", text))


def _seconds(value: float) -> str:
    """Seconds the schema's SUREFIRE_TIME accepts (digits, at most three decimals, never negative)."""
    return f"{max(value, 0.0):.3f}"


def _number(value: float) -> str:
    """A property value: a plain decimal without trailing zeros (0.666667, 1, 0.006766)."""
    return f"{value:.6f}".rstrip("0").rstrip(".") or "0"


# -- plain-text explanations of a failing trial (shared with the Markdown renderer) -------------------------
def _one_line(text: str, limit: int) -> str:
    return clip(" ".join(_clean(text).split()), limit)


def _call_text(name: str, arguments: dict[str, object]) -> str:
    args = ", ".join(f"{key}={clip(repr(value), 60)}" for key, value in arguments.items())
    return f"{name}({args})"


def _trajectory_lines(trajectory: Trajectory, output: object, *, limit: int = 300) -> list[str]:
    """One or two lines of what the agent did (turns, calls with arguments, denials, commands) and its output."""
    denied = {d.call_id: d for d in trajectory.denials if d.call_id}
    steps: list[str] = []
    for call in trajectory.tool_calls:
        text = _call_text(call.name, call.arguments)
        denial = denied.get(call.id) if call.id else None
        if denial is not None:
            text += f" [DENIED by {denial.rule or 'policy'}]"
        else:
            result = trajectory.result_for(call)
            if result is not None and result.is_error:
                text += " [tool error]"
        steps.append(text)
    call_ids = {call.id for call in trajectory.tool_calls if call.id}
    unmatched = [d for d in trajectory.denials if d.call_id not in call_ids]
    steps.extend(f"{_call_text(d.tool, d.arguments)} [DENIED by {d.rule or 'policy'}]" for d in unmatched)
    turns = len(trajectory.turns)
    calls = " → ".join(steps) if steps else "no tool calls"
    first = f"trajectory: {turns} turn{'s' if turns != 1 else ''}; {calls}"
    if trajectory.commands:
        first += "; commands: " + "; ".join(f"`{command}`" for command in trajectory.commands)
    lines = [_one_line(first, limit)]
    text = output_text(output)
    lines.append("output: " + (_one_line(repr(_clean(text)), 200) if text else "(none)"))
    return lines


def _verdict_text(verdict: Verdict) -> str:
    return f"{verdict.grader}: {verdict.reason}"


def _failing_trials(case: CaseResult) -> list[TrialResult]:
    return [trial for trial in case.trials if not trial.passed]


def _failing_trial_lines(trial: TrialResult) -> list[str]:
    """Why one trial failed: each failed verdict with its reason, its error, and a compact trajectory."""
    ended = f", ended {trial.status}" if trial.status else ""
    lines = [f"trial {trial.trial} failed ({trial.duration_s:.2f}s{ended})"]
    lines.extend(f"  FAILED {_one_line(_verdict_text(v), 2000)}" for v in trial.failed_verdicts)
    if trial.error is not None:
        lines.append(f"  ERROR {_one_line(str(trial.error), 2000)}")
    lines.extend(f"  {line}" for line in _trajectory_lines(trial.trajectory, trial.output))
    return lines


def _case_statistics(case: CaseResult) -> list[tuple[str, float | int]]:
    """The per-case numbers CI shows as properties, in a fixed order; absent numbers are left out."""
    stats: list[tuple[str, float | int]] = [("trials", case.trial_count), ("passed_trials", case.passed_trials)]
    for key, value in (("pass_at_1", case.pass_at_1), ("pass_pow_k", case.pass_pow_k), ("score", case.score),
                       ("cost_usd", case.cost_usd), ("turns", case.turns)):
        if value is not None:
            stats.append((key, value))
    return stats


def _statistics_text(case: CaseResult) -> str:
    """The same statistics as lines a person reads in a CI page's "standard output" pane."""
    k = case.trial_count
    lines = [f"{case.name}: {case.passed_trials}/{k} trial{'s' if k != 1 else ''} passed"]
    if case.pass_at_1 is not None:
        lines.append(f"pass@1: {case.pass_at_1:.2f}")
    if case.pass_pow_k is not None:
        lines.append(f"pass^{k}: {case.pass_pow_k:.2f}")
    if case.score is not None:
        lines.append(f"score: {case.score:.2f}")
    if case.sub_scores:
        lines.append("sub-scores: " + ", ".join(f"{key} {value:.2f}" for key, value in case.sub_scores.items()))
    if case.cost_usd is not None:
        lines.append(f"cost: ${case.cost_usd:.6f}")
    if case.turns is not None:
        lines.append(f"turns: {case.turns:g}")
    lines.append("tools used: " + (", ".join(case.tools_used) or "none"))
    if case.tags:
        lines.append("tags: " + ", ".join(case.tags))
    if case.description:
        lines.append(f"description: {case.description}")
    return "\n".join(lines) + "\n"


# -- the XML ------------------------------------------------------------------------------------------------
def _element(
    parent: ET.Element, tag: str, attributes: dict[str, str] | None = None, text: str | None = None
) -> ET.Element:
    element = ET.SubElement(parent, tag, {key: _clean(value) for key, value in (attributes or {}).items()})
    if text:
        element.text = _clean(text)
    return element


def _properties(parent: ET.Element, items: Iterable[tuple[str, str]]) -> None:
    properties = _element(parent, "properties")
    for name, value in items:
        _element(properties, "property", {"name": name, "value": value})


def _run_properties(report: RunReport) -> list[tuple[str, str]]:
    items: list[tuple[str, str]] = [("trialrun.schema_version", report.schema_version)]
    if report.run_id is not None:
        items.append(("trialrun.run_id", report.run_id))
    items += [("trialrun.status", report.status), ("trialrun.trials", str(report.trial_count))]
    for key, value in (("pass_at_1", report.pass_at_1), ("pass_pow_k", report.pass_pow_k), ("score", report.score),
                       ("cost_usd", report.cost_usd)):
        if value is not None:
            items.append((f"trialrun.{key}", _number(value)))
    for case in report.cases:
        if not case.skipped:
            items += [(f"trialrun.case.{case.name}.{key}", _number(value)) for key, value in _case_statistics(case)]
    return items


def _outcome(testcase: ET.Element, case: CaseResult) -> str | None:
    """Add the case's failure or error element; return which one ("failure", "error") or None when it passed."""
    if case.passed:
        return None
    failing = _failing_trials(case)
    text = "\n".join(line for trial in failing for line in _failing_trial_lines(trial)) + "\n" if failing else None
    explained = [(trial, trial.failed_verdicts[0]) for trial in failing if trial.failed_verdicts]
    if explained:
        _, verdict = explained[0]
        _element(testcase, "failure", {"message": _one_line(_verdict_text(verdict), 500),
                                       "type": f"trialrun.{verdict.kind or 'outcome'}"}, text)
        return "failure"
    errors = [trial.error for trial in failing if trial.error is not None]
    if errors:
        _element(testcase, "error", {"message": _one_line(str(errors[0]), 500), "type": errors[0].type}, text)
    else:
        _element(testcase, "error", {"message": "the case ran no trial", "type": "NoTrials"}, text)
    return "error"


def _teardown_text(case: CaseResult) -> str | None:
    lines = [f"trial {t.trial} {t.teardown_error}" for t in case.trials if t.teardown_error is not None]
    return "\n".join(lines) + "\n" if lines else None


def junit_xml(report: RunReport, *, suite_name: str = "trialrun") -> str:
    """The report as a JUnit XML document (UTF-8 text with its XML declaration).

    >>> from datetime import datetime, timezone
    >>> from trialrun.results import RunReport
    >>> empty = RunReport.build([], trial_count=1, started_at=datetime(2025, 1, 2, tzinfo=timezone.utc), duration_s=0)
    >>> '<testsuite name="trialrun" tests="0" failures="0" errors="0" skipped="0"' in junit_xml(empty)
    True
    """
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    testcases: list[ET.Element] = []
    for case in report.cases:
        classname = str(case.metadata.get("module") or suite_name)
        testcase = ET.Element("testcase", {"classname": _clean(classname), "name": _clean(case.name),
                                           "time": _seconds(sum(t.duration_s for t in case.trials))})
        if case.skipped:
            _element(testcase, "skipped", {"type": "trialrun.skip", "message": case.skip_reason or "skipped"})
            counts["skipped"] += 1
        else:
            outcome = _outcome(testcase, case)
            if outcome == "failure":
                counts["failures"] += 1
            elif outcome == "error":
                counts["errors"] += 1
            _element(testcase, "system-out", text=_statistics_text(case))
            teardown = _teardown_text(case)
            if teardown:
                _element(testcase, "system-err", text=teardown)
        testcases.append(testcase)
    for name in report.unfinished_cases:
        testcase = ET.Element("testcase", {"classname": _clean(suite_name), "name": _clean(name), "time": _seconds(0)})
        _element(testcase, "error",
                 {"message": "the run was interrupted before this case finished", "type": "Interrupted"})
        counts["errors"] += 1
        testcases.append(testcase)
    counts["tests"] = len(testcases)

    totals = {key: str(counts[key]) for key in ("tests", "failures", "errors")}
    root = ET.Element("testsuites", {"name": _clean(suite_name), **totals, "time": _seconds(report.duration_s)})
    suite = _element(root, "testsuite", {
        "name": suite_name, **totals, "skipped": str(counts["skipped"]), "time": _seconds(report.duration_s),
        # The schema's timestamp has no zone designator: the run's start in UTC.
        "timestamp": report.started_at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S"),
        "hostname": str(report.config_snapshot.get("hostname") or socket.gethostname() or "localhost"),
    })
    _properties(suite, _run_properties(report))
    suite.extend(testcases)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
