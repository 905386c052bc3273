"""A RunReport as JUnit XML, for the test-report views of CI systems (Jenkins, GitLab, GitHub test reporters).

The target is the strict schema CI tools validate against (Jenkins xunit-plugin's junit-10.xsd, which pytest's
`junit_family=xunit2` emits). That schema allows `<properties>` only inside `<testsuite>`, so per-case statistics
are testsuite properties named `trialrun.case.<case>.<stat>`, and are repeated as readable text in each testcase's
`<system-out>`.

One testcase per case; its outcome element follows one rule, so a viewer's counts mean the same every time:

- `<failure>` when a grader explains the failure: at least one failing trial has a failed verdict. The message is
  the first such verdict's "grader: reason"; the text is the plain-text explanation the pytest plugin prints
  (`text.case_failure_text`: every failing trial's failed verdicts, error and trajectory, errored trials included,
  identical failures folded), which CI viewers show preformatted.
- `<error>` when no grader explains it: every failing trial failed only with an error (an exception in setup,
  invoke or teardown, a timeout, a blocked network call, a model error) or the case ran no trial. The message is the
  first error ("phase: Type: message"; a teardown error, "teardown: OSError: ...", when no other error is there),
  or "the case ran no trial" (type NoTrials), or for a stored result whose failed
  trial recorded no cause "trial N failed" (type trialrun.unexplained); the text is the same explanation as a
  failure's.
- `<error type="Interrupted">` for a case an interrupted run did not finish (the report names it, has no result).
- `<skipped>` for a case that was not run (a live canary without `--include-live-canary`), with its reason.

A case an interruption stopped part-way (`unfinished_trials`, *partly run*) keeps its outcome on the trials that
finished, and says so: the property `trialrun.case.<case>.unfinished_trials`, a first line in its `<system-out>`
("partly run: 1 of 3 trials finished (interrupted; scored on those)"), and, when it failed, the same words first
in the failure's message and text. (A passing testcase has no element for a message in the schema.)

Every attribute and text goes through `_clean` (`text.printable`): characters XML 1.0 cannot carry (NUL and other
control characters, lone surrogates) are replaced, and ANSI colour codes are stripped whole so a CI page shows the
words, not `[31m`. (A string the agent returned is quoted as Python shows it, as in the pytest output, so its control
characters there read as escapes such as `\x1b`, text rather than codes.)
"""

from __future__ import annotations

import socket
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from datetime import timezone
from pathlib import PurePosixPath

from .._scrub import scrub_text
from ..expect import Verdict
from ..report.results import CaseResult, RunReport
from ..trajectory import killed_text
from ._cells import shows_pass_pow_k, sub_scores_text
from .text import case_failure_text, first_cause, first_reason, one_line, partly_run, printable

__all__ = ["junit_xml", "dotted_path"]

#: How long a `message` attribute may be: CI viewers show it on one line, the element's text has the rest.
_MESSAGE_CHARS = 500


def _clean(text: str) -> str:
    """Text XML 1.0 can carry, for every attribute and text this module writes. `printable` replaces exactly the
    characters XML 1.0 forbids anywhere (even as character references), so it is the XML guard too."""
    return printable(text)


def _seconds(value: float) -> str:
    """Seconds the schema's SUREFIRE_TIME accepts (digits, at most three decimals, never negative)."""
    return f"{max(value, 0.0):.3f}"


def _number(value: float) -> str:
    """A property value: a plain decimal without trailing zeros (0.666667, 1, 0.006766)."""
    return f"{value:.6f}".rstrip("0").rstrip(".") or "0"


def _turns(value: float) -> str:
    """Mean turns with at most 2 decimals, as every renderer shows them (1.33, 2, 1.5)."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _case_statistics(case: CaseResult) -> list[tuple[str, float | int]]:
    """The per-case numbers CI shows as properties, in a fixed order; absent numbers are left out."""
    stats: list[tuple[str, float | int]] = [("trials", case.trial_count), ("passed_trials", case.passed_trials)]
    if case.partial:  # trials an interruption stopped: the case is scored on the others
        stats.append(("unfinished_trials", case.unfinished_trials))
    for key, value in (("pass_at_1", case.pass_at_1), ("pass_pow_k", case.pass_pow_k), ("score", case.score),
                       ("cost_usd", case.cost_usd), ("turns", case.turns)):
        if value is not None:
            stats.append((key, value))
    return stats


def _statistics_text(case: CaseResult) -> str:
    """The same statistics as lines a person reads in a CI page's "standard output" pane."""
    k = case.trial_count
    lines = [f"{case.name}: {case.passed_trials}/{k} trial{'s' if k != 1 else ''} passed"]
    if case.partial:
        lines.insert(0, f"{case.name}: partly run: {partly_run(case)}")
    if case.pass_at_1 is not None:
        lines.append(f"pass@1: {case.pass_at_1:.2f}")
    if case.pass_pow_k is not None and shows_pass_pow_k(k):
        lines.append(f"pass^{k}: {case.pass_pow_k:.2f}")
    if case.score is not None:
        lines.append(f"score: {case.score:.2f}")
    if case.sub_scores:
        lines.append("sub-scores: " + ", ".join(f"{key} {value}" for key, value in sub_scores_text(case.sub_scores)))
    if case.cost_usd is not None:
        lines.append(f"cost: ${case.cost_usd:.6f}")
    if case.turns is not None:
        lines.append(f"turns: {_turns(case.turns)}")
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
    cause = first_cause(case)
    partial = f"partly run, {partly_run(case)}: " if case.partial else ""
    attributes = {"message": one_line(partial + first_reason(case), _MESSAGE_CHARS)}
    text = partial.removesuffix(": ") + ("\n" if partial else "") + case_failure_text(case) + "\n"
    if isinstance(cause, Verdict):
        _element(testcase, "failure", {**attributes, "type": f"trialrun.{cause.kind or 'outcome'}"}, text)
        return "failure"
    # No grader explains it: an error, or (from a stored result) a case with no trial or a trial with no cause.
    kind = cause.type if cause is not None else "NoTrials" if not case.trials else "trialrun.unexplained"
    _element(testcase, "error", {**attributes, "type": kind}, text)
    return "error"


def dotted_path(path: str) -> str:
    """A file path as pytest's JUnit XML names it in a classname: folders joined with dots, `.py` dropped, any other
    extension kept (`tests/test_agent.py` -> `tests.test_agent`, `state/eval/tests.json` -> `state.eval.tests.json`)."""
    parts = [part for part in PurePosixPath(path.replace("\\", "/")).parts if part not in (".", "..", "/")]
    if parts and parts[-1].endswith(".py") and len(parts[-1]) > 3:
        parts[-1] = parts[-1][:-3]
    return ".".join(parts)


def _classname(case: CaseResult, suite_name: str) -> str:
    """How CI viewers group the testcase, the same for a case whichever way it ran: for a case pytest ran, the file
    of its node id as pytest's own JUnit XML names it (`tests/test_agent.py::x` -> `tests.test_agent`,
    `state/eval/tests.json::read-file` -> `state.eval.tests.json`), so a module's decorated cases, listed cases and
    skipped canaries share one; else the Python module a `@tr.case` came from; else `suite_name` (which
    `trialrun run/report --junit` set to the suite file's dotted path, `state.eval.tests.json`, as pytest would)."""
    nodeid = case.metadata.get("pytest_nodeid")
    if isinstance(nodeid, str):
        dotted = dotted_path(nodeid.split("::", 1)[0])
        if dotted:
            return dotted
    return str(case.metadata.get("module") or suite_name)


def _teardown_text(case: CaseResult) -> str | None:
    """Teardown errors, and what was killed when each trial's agent ended (system-err: no failure of its own)."""
    lines = [f"trial {t.trial} {t.teardown_error}" for t in case.trials if t.teardown_error is not None]
    lines += [f"trial {t.trial}: when the agent ended: {text}" for t in case.trials if (text := killed_text(t.killed))]
    return "\n".join(lines) + "\n" if lines else None


def junit_xml(report: RunReport, *, suite_name: str = "trialrun") -> str:
    """The report as a JUnit XML document (UTF-8 text with its XML declaration).

    >>> from datetime import datetime, timezone
    >>> from trialrun.report.results import RunReport
    >>> empty = RunReport.build([], trial_count=1, started_at=datetime(2025, 1, 2, tzinfo=timezone.utc), duration_s=0)
    >>> '<testsuite name="trialrun" tests="0" failures="0" errors="0" skipped="0"' in junit_xml(empty)
    True
    """
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    testcases: list[ET.Element] = []
    for case in report.cases:
        classname = _classname(case, suite_name)
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
    return scrub_text('<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n")
