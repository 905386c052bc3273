"""What the plugin shows and aggregates: text for the terminal, JUnit XML and `-ra` (scrubbed, then cleaned), a
failing case's report as pytest carries it, the session's RunReport, and the pass@1 / pass^k summary table. Kept
apart from the session's state so that each reads on its own; nothing here holds state.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from _pytest._code.code import ExceptionChainRepr, ReprEntryNative, ReprFileLocation, ReprTraceback

from .._util.display import clean

if TYPE_CHECKING:
    from ..report.results import CaseResult, RunReport

__all__ = ["FailureRepr", "shown", "crash_message", "build_session_report", "summary_table"]

_SUMMARY_ROWS = 30


class FailureRepr(ExceptionChainRepr):
    """The failure report of a case: trialrun's text, not a Python traceback through the runner.

    It is a real pytest exception repr (one native-style traceback entry holding the text, and the one-line crash
    location) because pytest-xdist carries only those whole from a worker to the controller; anything else arrives
    as one string, and JUnit's failure message and `-ra` then show the whole report instead of its one line.
    """

    def __init__(self, text: str, crash: ReprFileLocation) -> None:
        lines = [line + "\n" for line in text.splitlines()]
        super().__init__([(ReprTraceback([ReprEntryNative(lines)], None, "native"), crash, None)])
        self.text = text

    def toterminal(self, tw: Any) -> None:
        """The text with its failure lines marked (under xdist the controller prints the same text, plain)."""
        for line in self.text.splitlines():
            stripped = line.lstrip()
            tw.line(line, red=stripped.startswith(("x ", "error (")), bold=stripped.startswith("trial "))
        for name, content, sep in self.sections:
            tw.sep(sep, name)
            tw.line(content)



def shown(text: str, *, lines: bool = True) -> str:
    """Text for the terminal, JUnit XML and `-ra`: scrubbed (`_scrub`: it may quote an output, an exception, a
    path), then `clean` (control characters written as escapes)."""
    from .._scrub import scrub_text

    return clean(scrub_text(text), lines=lines)


def crash_message(result: CaseResult) -> str:
    """`0/1 trials passed; <why>`, where why is the one line every trialrun report names first (`first_reason`:
    a failed verdict, else an error, else a teardown error)."""
    from ..render.text import first_reason

    counts = f"{result.passed_trials}/{result.trial_count} trials passed"
    reason = first_reason(result)
    return f"{counts}; {reason}" if reason else counts



def build_session_report(reported: dict[str, tuple[int, dict[str, Any]]], local_results: dict[str, CaseResult],
                         *, trials: int, started_at: datetime, interrupted: bool) -> RunReport:
    """One RunReport of every case the session ran (names made unique with their module when two modules share
    one), in test order: `reported` holds each item's position and result as JSON data (from any xdist worker),
    `local_results` this process's own results (used as they are, with no JSON round trip)."""
    from ..report.results import CaseResult, RunReport

    entries = sorted(reported.items(), key=lambda entry: (entry[1][0], entry[0]))
    counts: dict[str, int] = {}
    for _, (_, data) in entries:
        counts[data["name"]] = counts.get(data["name"], 0) + 1
    cases = []
    for nodeid, (_, data) in entries:
        local = local_results.get(nodeid)
        result = local.model_copy() if local is not None else CaseResult.model_validate(data)
        if counts[result.name] > 1:
            result.name = nodeid
        result.metadata = {**result.metadata, "pytest_nodeid": nodeid}
        cases.append(result)
    finished = datetime.now(timezone.utc)
    return RunReport.build(
        cases, trial_count=trials, started_at=started_at,
        duration_s=(finished - started_at).total_seconds(),
        status="interrupted" if interrupted else "completed",
    )


def summary_table(tr: Any, report: RunReport) -> None:
    """pass@1 and pass^k per case and for the session, when some case ran more than one trial."""
    from ..render._cells import shows_pass_pow_k

    graded = report.graded_cases
    if not graded or max(case.trial_count for case in graded) <= 1:
        return
    rows = graded
    hidden = 0
    if len(rows) > _SUMMARY_ROWS:  # a big suite: every case that was not perfect, and a count of the rest
        rows = [case for case in graded if not case.passed]
        hidden = len(graded) - len(rows)
    session = f"session ({len(graded)} case{'s' if len(graded) != 1 else ''})"
    names = {id(case): shown(case.name, lines=False) for case in rows}  # an id may hold a token's value
    name_width = min(max([len(name) for name in names.values()] + [len(session), 10]), 60)
    counts = {case.trial_count for case in graded}
    k = f"k={counts.pop()}" if len(counts) == 1 else "k per case"
    tr.write_sep("=", f"trialrun: pass@1 and pass^k ({k})")
    tr.write_line(f"{'case':<{name_width}}  {'passed':>7}  {'pass@1':>6}  {'pass^k':>6}")
    for case in rows:
        name = names[id(case)]
        name = name if len(name) <= name_width else name[: name_width - 3] + "..."
        pow_k = f"{case.pass_pow_k:>6.2f}" if shows_pass_pow_k(case.trial_count) else f"{'–':>6}"  # pass@1 again
        line = f"{name:<{name_width}}  {f'{case.passed_trials}/{case.trial_count}':>7}  {case.pass_at_1:>6.2f}  {pow_k}"
        tr.write_line(line, red=not case.passed, green=bool(case.passed))
    if hidden:
        tr.write_line(f"... and {hidden} more case(s) that passed every trial")
    trials = sum(case.trial_count for case in graded)
    passed = sum(case.passed_trials for case in graded)
    tr.write_line(f"{session:<{name_width}}  {f'{passed}/{trials}':>7}  {report.pass_at_1:>6.2f}  {report.pass_pow_k:>6.2f}", bold=True)
    if report.skipped_case_count:
        tr.write_line(f"{report.skipped_case_count} case(s) skipped (live canaries)")

