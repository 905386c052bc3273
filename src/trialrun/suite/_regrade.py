"""`trialrun regrade`: a run graded again by the current suite, from the exchanges it kept, with no agent run.

Each trial's trajectory is read again off its stored exchanges (the sidecar `results_<stamp>.exchanges.ndjson`,
decoded by `wire.decode_trajectory`, as a live trial's is) and the current suite's graders and rubric judge it
(`_build.test_graders`, the graders a run makes). What the wire cannot show is the agent's own record, kept in the
result file: its commands, the calls its policy or permissions refused, the error flags it read (`_agent_facts`).

What cannot be regraded is never passed silently:
- a trial with no stored exchanges (none kept, a line cut short or corrupt) is kept as it was, and named;
- a trial that errored before it was graded is kept as it was (a run grades no such trial either);
- a grader that reads the trial's workdir (`ctx.workdir`, `ctx.workspace`: `never_ran` judges scripts by the
  workdir's files) cannot look at it, as it was removed when the trial ended: its old verdict is kept when the run
  has one of the same grader, marked so; a grader the run did not have gets a FAILED verdict saying why;
- a test of the run that the suite no longer has is kept as it was, and named.

The files the agent left are kept in the result (`TrialResult.files`, the workspace diff): the graders of the
workspace diff (`file_unchanged`, `changed_only`) judge it again as they judged it live, the file readers
(`file_exists`, `file_contains`, `file_matches`) where the stored diff holds the answer (a removed file, the whole
text of an added one), and `verify`, which needs the workdir, keeps its verdict (named); the rubric's output quality
from a `verify` then comes from that kept verdict, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..expect._base import Grader, Verdict, grade
from ..report.exchanges import SidecarIndex, TrialExchanges, sidecar_path
from ..report.results import CaseResult, RunReport, TrialError, TrialResult
from ..trajectory import Trajectory

__all__ = ["RegradeError", "Regrade", "regrade_report", "WorkdirGone"]

#: Why a grader that reads the workdir cannot be regraded.
WORKDIR_GONE = "it reads the trial's workdir, which was removed when the trial ended"


class RegradeError(ValueError):
    """A run that cannot be regraded at all (no stored exchanges); the message names the file."""


class WorkdirGone(Exception):
    """Raised by the regrade's context when a grader asks for the trial's workdir."""


class _GradingContext:
    """What a grader receives as `ctx` in a regrade: the trial's case and number; its workdir is gone, so asking
    for it (or for the workspace model read from it) raises `WorkdirGone`, which the regrade names."""

    #: The workspace graders answer from the stored diff, never from a workdir (`expect.workspace`).
    regrading = True

    def __init__(self, case: str, trial: int, run_id: str | None, verdicts: list[Verdict] | None = None) -> None:
        self.case_name, self.trial, self.run_id = case, trial, run_id
        self._kept = {verdict.grader: verdict for verdict in verdicts or []}

    def kept_verdict(self, label: str) -> Verdict | None:
        """The run's own verdict of grader `label` (what the rubric's quality reads when a verify cannot run again)."""
        return self._kept.get(label)

    @property
    def workdir(self) -> Path:
        raise WorkdirGone(f"ctx.workdir: {WORKDIR_GONE}")

    @property
    def workspace(self) -> Any:
        raise WorkdirGone(f"ctx.workspace: {WORKDIR_GONE}")


@dataclass
class Regrade:
    """A regraded run and what the regrade did: `lines` say, trial by trial, what changed, what was kept and why."""

    report: RunReport
    #: (test, trial or None for the whole test, what happened)
    notes: list[tuple[str, int | None, str]] = field(default_factory=list)
    regraded: int = 0
    kept: int = 0
    changed: int = 0
    unregradable: int = 0

    @property
    def lines(self) -> list[str]:
        """The notes for a person: the trials of a test that came to the same thing on one line (`read-file
        trials 1-3, 5: ...`), so a run of a thousand trials is not a thousand lines of the same news."""
        grouped: dict[tuple[str, str], list[int]] = {}
        for case, trial, text in self.notes:
            grouped.setdefault((case, text), []).extend([] if trial is None else [trial])
        return [f"{case}{_trials_text(trials)}: {text}" for (case, text), trials in grouped.items()]


def _trials_text(trials: list[int]) -> str:
    """" trial 2", " trials 1-3, 5" or "" (the note is the whole test's)."""
    if not trials:
        return ""
    runs: list[list[int]] = []
    for number in sorted(set(trials)):
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    shown = ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)
    return f" trial{'s' if len(trials) > 1 else ''} {shown}"


def regrade_report(path: Path, original: RunReport, suite: Any, config: Any) -> Regrade:
    """`original` (read from `path`) graded again by `suite` (a SuiteFile) under `config`, from the exchanges
    kept beside `path`. RegradeError when there are none."""
    from ._build import judge_setup

    sidecar = sidecar_path(path)
    if not sidecar.is_file():
        raise RegradeError(f"{sidecar}: no such file: run {original.run_id} kept no exchanges (run with exchanges "
                           "on, the default, to regrade it later); nothing was regraded or written")
    tests = {test.id: test for test in suite.tests}
    judge = judge_setup(config)
    index = SidecarIndex.scan(sidecar)  # one pass over the file, then a seek per trial
    result = Regrade(original)
    cases = []
    for case in original.cases:
        test = tests.get(case.name)
        if case.skipped or test is None:
            if test is None and not case.skipped:
                result.notes.append((case.name, None, f"not in {suite.path} (its tests: {', '.join(tests) or 'none'}): "
                                                      f"kept as it was, {len(case.trials)} trial(s) not regraded"))
                result.kept += len(case.trials)
            cases.append(case)
            continue
        cases.append(_regrade_case(case, test, suite, config, judge, index, original.run_id, result))
    snapshot = _snapshot(original, suite, config)
    result.report = RunReport.build(
        cases, trial_count=original.trial_count, started_at=datetime.now(timezone.utc),
        duration_s=original.duration_s, status=original.status, unfinished=original.unfinished_cases,
        config_snapshot=snapshot, regraded_from=original.run_id)
    return result


def _snapshot(original: RunReport, suite: Any, config: Any) -> dict[str, Any]:
    """The run's configuration with what grading took from the current one: the suite (path and hash), the rubric,
    its threshold and the judge; and which run was regraded."""
    import hashlib

    from ._build import _relative

    snapshot = dict(original.config_snapshot)
    snapshot.update({
        "suite": {"path": _relative(suite.path), "sha256": hashlib.sha256(suite.path.read_bytes()).hexdigest()},
        "rubric": config.rubric, "pass_threshold": config.pass_threshold, "judge": config.judge or "heuristic",
        "regraded_from": original.run_id,
    })
    return snapshot


def _regrade_case(case: CaseResult, test: Any, suite: Any, config: Any, judge: Any, sidecar: SidecarIndex,
                  run_id: str | None, result: Regrade) -> CaseResult:
    from ..case import distinct_labels
    from ._build import test_graders, test_metadata

    graders = list(distinct_labels(test_graders(test, suite, config, *judge)))  # labelled as the run's Case did
    trials = [_regrade_trial(case.name, trial, graders, sidecar, run_id, result) for trial in case.trials]
    return CaseResult.from_trials(case.name, trials, tags=test.tags, mode=case.mode, description=case.description,
                                  metadata=test_metadata(test, suite), title=test.name,
                                  unfinished_trials=case.unfinished_trials)


def _regrade_trial(case: str, trial: TrialResult, graders: list[Grader], sidecar: SidecarIndex, run_id: str | None,
                   result: Regrade) -> TrialResult:
    """One trial graded again, or kept as it was (with a note saying why)."""
    def note(text: str) -> None:
        result.notes.append((case, trial.trial, text))

    if not trial.verdicts and trial.error is not None:
        result.kept += 1
        note(f"kept as it was: it errored before it was graded ({trial.error})")
        return trial
    trajectory, why_not = _trajectory(case, trial, sidecar)
    if trajectory is None:
        result.kept += 1
        note(f"kept as it was: {why_not}")
        return trial
    if why_not:
        note(why_not)
    run = trial.as_run()
    run.trajectory = trajectory
    ctx = _GradingContext(case, trial.trial, run_id, trial.verdicts)
    verdicts, grade_error, unregradable = _grade(graders, run, ctx, trial, run_id)
    result.unregradable += len(unregradable)
    for line in unregradable:
        note(line)
    error = _trial_error(trial, grade_error, run, graders)
    from ..run._trial import _trial_result

    regraded = _trial_result(trial.trial, run, verdicts, error, trial.teardown_error, trial.duration_s, trial.killed,
                             trial.models, trial.files)
    result.regraded += 1
    changes = _changes(trial, regraded)
    if changes:
        result.changed += 1
        note(f"{_state(trial)} -> {_state(regraded)}: {'; '.join(changes)}")
    return regraded


def _trajectory(case: str, trial: TrialResult, sidecar: SidecarIndex) -> tuple[Trajectory | None, str | None]:
    """The trial's trajectory read again off its stored exchanges, with the agent's own record added; or None and
    why it cannot be (the second value is also a note when a trajectory comes back)."""
    from ..models._cassette_io import exchange_from_dict
    from ..wire import decode_trajectory

    kept: TrialExchanges = sidecar.read(case, trial.trial)
    if kept.problem is not None and (not kept.found or not kept.exchanges):
        return None, f"no stored exchanges: {kept.problem}"
    if kept.notes:
        return None, f"its stored exchanges are incomplete: {'; '.join(kept.notes)}"
    if any("cut" in record for record in kept.exchanges):
        return trial.trajectory, (f"its exchanges were cut when stored ({sidecar.path.name}: bodies over the cap): "
                                  "graded on the trajectory the result file kept, read whole during the run")
    exchanges = []
    for record in kept.exchanges:
        try:
            exchanges.append(exchange_from_dict(record))
        except (ValueError, TypeError, KeyError) as exc:
            return None, f"{sidecar.path.name}: exchange {record.get('n')} of {case!r} trial {trial.trial}: {exc}"
    decoded = decode_trajectory(exchanges)
    note = _shape_note(decoded, trial.trajectory)
    _agent_facts(decoded, trial.trajectory)
    return decoded, note


def _shape_note(decoded: Trajectory, stored: Trajectory) -> str | None:
    """Say so when the exchanges decode to other turns than the result file holds (a newer decoder, or an agent
    that reported its own trajectory): the regrade grades what the exchanges show."""
    mine, theirs = len(decoded.all_turns), len(stored.all_turns)
    if mine == theirs:
        return None
    return f"its exchanges decode to {mine} turn(s), the result file had {theirs}: graded on the decoded ones"


def _agent_facts(decoded: Trajectory, stored: Trajectory) -> None:
    """Put on `decoded` what the agent recorded and the wire cannot show, from the trajectory the run kept: the
    commands its shell ran, the calls refused (by the policy, the agent's permissions, a sandbox) and each tool
    result's error flag where the agent (or a preset reading its result format) knew it. Results are matched by
    call id, or in order where the calls have none."""
    decoded.commands = list(stored.commands)
    for name, argument in stored.command_tools.items():  # (a preset's own, from its contract)
        decoded.command_tools.setdefault(name, argument)
    decoded.quiet_tools = list(stored.quiet_tools)
    decoded.denials = list(stored.denials)
    known = {r.call_id: r for r in stored.all_tool_results if r.call_id}
    ordered = list(stored.all_tool_results)
    mine = list(decoded.all_tool_results)
    for index, item in enumerate(mine):
        before = known.get(item.call_id) if item.call_id else (
            ordered[index] if len(ordered) == len(mine) and ordered[index].call_id is None else None)
        if before is None:
            continue
        item.is_error = before.is_error
        key = item.call_id or ""
        if key in decoded.error_flags_unknown:
            if key in stored.error_flags_unknown:
                decoded.error_flags_unknown[key] = stored.error_flags_unknown[key]
            else:
                del decoded.error_flags_unknown[key]
    decoded.notes.extend(note for note in stored.notes if note not in decoded.notes)


def _grade(graders: list[Grader], run: Any, ctx: _GradingContext, trial: TrialResult,
           run_id: str | None) -> tuple[list[Verdict], TrialError | None, list[str]]:
    """Every grader's verdict; the first grader exception as the trial's error; and a line for each grader that
    could not look (it asked for the workdir): kept from the run, or failed when the run has no such verdict."""
    from ..run._trial import _error

    old = {verdict.grader: verdict for verdict in trial.verdicts}
    verdicts: list[Verdict] = []
    first: Exception | None = None
    lines: list[str] = []
    for grader in graders:
        raised: list[Exception] = []
        verdict = grade(grader, run, ctx, raised=raised)
        if raised and isinstance(raised[0], WorkdirGone):
            verdict, line = _not_regraded(grader, old.get(grader.label), run_id)
            lines.append(line)
        elif raised and first is None:
            first = raised[0]
        verdicts.append(verdict)
    return verdicts, _error("grade", first) if first is not None else None, lines


def _not_regraded(grader: Grader, before: Verdict | None, run_id: str | None) -> tuple[Verdict, str]:
    """The verdict of a grader that cannot be regraded: the run's own (marked kept), or a failure saying why."""
    if before is not None:
        kept = Verdict(before.passed, before.grader, f"kept from {run_id} (not regraded: {WORKDIR_GONE}): "
                       f"{before.reason}", before.score, before.kind,
                       {**(before.details or {}), "regrade": "kept"})
        return kept, f"{grader.label}: kept its verdict from {run_id} ({'passed' if before.passed else 'failed'}): " \
                     f"not regraded, {WORKDIR_GONE}"
    failed = Verdict(False, grader.label, f"not regraded: {WORKDIR_GONE}, and {run_id} has no verdict of this "
                     "grader to keep; run the test again to grade it", None, grader.kind, {"regrade": "unregradable"})
    return failed, f"{grader.label}: FAILED, unregradable: {WORKDIR_GONE}, and {run_id} has no verdict of it"


def _trial_error(trial: TrialResult, grade_error: TrialError | None, run: Any, graders: list[Grader]) -> TrialError | None:
    """The regraded trial's error: what happened while it ran stays (a model error, a blocked call, a teardown);
    a grader's exception is the new graders'; an agent run that ended in error fails the trial unless a grader now
    grades the ending (`expect.ended`), as in a run."""
    from ..run._trial import _run_error, grades_status

    before = trial.error
    if before is not None and before.phase == "grade":
        before = None
    if before is not None and run.status == "error" and before.type in ("AgentError", "ModelError") \
            and before.message == run.error and grades_status(graders):
        before = None  # the run's error ending, now a grader's to judge
    return before or grade_error or _run_error(run, graders)


def _state(trial: TrialResult) -> str:
    score = f" {trial.score:.2f}" if trial.score is not None else ""
    return f"{'passed' if trial.passed else 'failed'}{score}"


def _changes(before: TrialResult, after: TrialResult) -> list[str]:
    """What the regrade changed in a trial's verdicts, grader by grader (label): flipped, new, gone."""
    old = {v.grader: v for v in before.verdicts}
    new = {v.grader: v for v in after.verdicts}
    changes = []
    for label, verdict in new.items():
        was = old.get(label)
        if was is None:
            changes.append(f"{label} new, {'passes' if verdict.passed else 'fails'}: {verdict.reason}")
        elif was.passed != verdict.passed:
            changes.append(f"{label} now {'passes' if verdict.passed else 'fails'}: {verdict.reason}")
        elif was.score is not None and verdict.score is not None and round(was.score, 2) != round(verdict.score, 2):
            changes.append(f"{label} scores {was.score:.2f} -> {verdict.score:.2f}")
    changes += [f"{label} gone (no longer in the suite)" for label in old if label not in new]
    if not changes and before.passed != after.passed:
        changes.append(str(after.error) if after.error else "the trial's error is gone")
    return changes
