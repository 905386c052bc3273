"""The evaluation report: TrialResult, CaseResult and RunReport (versioned, JSON round-trip exact).

The seed's report (ShellPilot.EvalReport) carries SchemaVersion, TrialCount, CaseCount, PassedCaseCount,
FailedCaseCount, SkippedCaseCount, SkippedCase, PassAt1, PassPowK and the per-case results; these are those,
in snake_case, plus what a person needs to see why a trial failed.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Any, NamedTuple, get_args

from pydantic import BaseModel, ConfigDict, Field, computed_field

from .._util.workspace_diff import WorkspaceDiff
from ..expect._base import Verdict
from ..trajectory import Run, RunStatus, Trajectory, Usage
from . import metrics

__all__ = ["SCHEMA_VERSION", "TrialError", "TrialResult", "Judgement", "judge_trial", "kinds_passed", "KIND_FIELDS", "CaseResult", "SeedTest", "SkippedCase", "RunReport", "jsonable"]

#: Bumped when a field changes meaning or disappears; readers refuse a newer major version with a clear error.
#: 1.1: a trial records the kinds of model it talked to (`TrialResult.models`), a verdict whether it is a safety
#: claim (`Verdict.safety`); files of 1.0 load, their trials' `models` is None.
SCHEMA_VERSION = "1.1"


def jsonable(value: Any) -> Any:
    """A JSON-safe copy of an output, so reports serialise and round-trip exactly whatever invoke returned. NaN and
    the infinities, which JSON cannot hold, become the strings "nan", "inf" and "-inf" (as the HTML report shows
    them)."""
    kind = type(value)  # the usual values first, by exact type (none of them can be os.PathLike)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict:
        return {key if type(key) is str else str(key): jsonable(item) for key, item in value.items()}
    if kind is list:
        return [jsonable(item) for item in value]
    if isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    if isinstance(value, (set, frozenset)):
        return sorted((jsonable(item) for item in value), key=repr)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)

_RUN_STATUSES: dict[str, RunStatus] = {status: status for status in get_args(RunStatus)}


class TrialError(BaseModel):
    """An exception (or timeout, or blocked network call) that failed a trial, with where it happened."""

    model_config = ConfigDict(frozen=True)

    type: str
    message: str
    phase: str = Field(description="setup | invoke | grade | teardown | model | mcp | network")
    traceback: str | None = None

    def __str__(self) -> str:
        return f"{self.phase}: {self.type}: {self.message}"


class Judgement(NamedTuple):
    """What a trial's verdicts and errors come to: whether it passed, how each kind of grade came out (in the
    verdicts' order), and its score (the mean of the verdicts' scores; None without any)."""

    passed: bool
    kinds: dict[str, bool]
    score: float | None


def kinds_passed(verdicts: Iterable[Verdict]) -> dict[str, bool]:
    """How each kind of grade came out (a verdict without a kind is an outcome's), kinds in the verdicts' order: the
    roll-up behind `TrialResult.outcome_passed`... and every view that lists the kinds (`judge_trial`'s)."""
    return judge_trial(list(verdicts), None, None).kinds


def judge_trial(verdicts: Sequence[Verdict], error: TrialError | None, teardown_error: TrialError | None) -> Judgement:
    """THE rule for a trial (the runner, a Ray worker, a regrade, a hand grade and an override all call it): it
    passed when nothing raised, its teardown included (the error says which phase), and every verdict passed.
    One pass over the verdicts: it runs for every trial of every run."""
    by_kind: dict[str, bool] = {}
    scores = []
    every = True
    for verdict in verdicts:
        kind = verdict.kind or "outcome"
        by_kind[kind] = by_kind.get(kind, True) and verdict.passed
        if verdict.score is not None:
            scores.append(verdict.score)
        if not verdict.passed:
            every = False
    return Judgement(error is None and teardown_error is None and every, by_kind,
                     sum(scores) / len(scores) if scores else None)


#: The TrialResult field each kind of grade's roll-up is kept in.
KIND_FIELDS = {"outcome": "outcome_passed", "trajectory": "trajectory_passed", "cost": "cost_passed",
               "score": "score_passed"}


class TrialResult(BaseModel):
    """One trial of one case: what ran, how each kind of grade came out, and why."""

    model_config = ConfigDict(arbitrary_types_allowed=False)

    trial: int
    passed: bool
    outcome_passed: bool | None = Field(default=None, description="None when the case has no outcome graders or grading never ran")
    trajectory_passed: bool | None = None
    cost_passed: bool | None = None
    score_passed: bool | None = Field(default=None, description="the rubric score reached the pass threshold")
    verdicts: list[Verdict] = Field(default_factory=list)
    error: TrialError | None = None
    teardown_error: TrialError | None = None
    duration_s: float = 0.0
    cost_usd: float | None = None
    usage: Usage | None = None
    score: float | None = None
    status: str | None = Field(default=None, description="how the agent's loop ended, when the agent says (e.g. max_turns)")
    output: Any = None
    trajectory: Trajectory = Field(default_factory=Trajectory)
    killed: list[str] | None = Field(default=None, description="the agent's processes killed when the trial ended "
                                     "(\"pid N: argv\"): what it left running, or everything on a timeout; None "
                                     "when no agent process ran")
    models: list[str] | None = Field(default=None, description="the kinds of model the trial talked to (scripted, "
                                     "replay, live, other; [] for none); None in files from before trialrun "
                                     "recorded them (schema 1.0)")
    files: WorkspaceDiff | None = Field(default=None, description="the files the agent left in the trial's workdir: "
                                        "added, changed and removed, with unified diffs (bounded); None when the "
                                        "trial had no workdir")

    @property
    def failed_verdicts(self) -> list[Verdict]:
        return [v for v in self.verdicts if not v.passed]

    def judged(self, verdicts: list[Verdict] | None = None) -> TrialResult:
        """A copy whose passed, per-kind flags and score follow its verdicts (or `verdicts`), by `judge_trial`:
        what an edit of a verdict (a hand grade, an override) leaves behind."""
        verdicts = self.verdicts if verdicts is None else verdicts
        judgement = judge_trial(verdicts, self.error, self.teardown_error)
        update: dict[str, Any] = {"verdicts": verdicts, "passed": judgement.passed, "score": judgement.score}
        update.update({field: judgement.kinds.get(kind) for kind, field in KIND_FIELDS.items()})
        return self.model_copy(update=update)

    def as_run(self) -> Run:
        """The trial as a `Run` (what graders take): a status trialrun does not know (a newer version's) is left
        out, and the trial's error is its message."""
        return Run(self.output, self.trajectory, self.usage, self.cost_usd, _RUN_STATUSES.get(self.status or ""),
                   self.error.message if self.error is not None else None, killed=self.killed, files=self.files)


class SkippedCase(BaseModel):
    """A selected case that was not run (a live canary without include_live_canary), and why."""

    name: str
    reason: str


class SeedTest(BaseModel):
    """One entry of the eval skill's `tests` list (its result format), derived from a CaseResult."""

    id: str
    name: str
    passed: bool | None
    tools_used: list[str]
    turns: int | float | None = Field(
        description="model turns: an integer when every trial took the same number (always with one trial), "
                    "else the mean over the trials"
    )
    score: float | None
    sub_scores: dict[str, float] | None


class CaseResult(BaseModel):
    """All trials of one case. pass_at_1 is what one attempt is worth; pass_pow_k whether the case is reliable."""

    name: str
    title: str | None = Field(default=None, description="human-readable label (a suite test's `name`)")
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    mode: str = "deterministic"
    skipped: bool = False
    skip_reason: str | None = None
    passed: bool | None = Field(default=None, description="every trial passed; None when skipped")
    pass_at_1: float | None = None
    pass_pow_k: float | None = None
    score: float | None = Field(default=None, description="mean of the trials' scores, when graders give scores; a trial that "
                                                  "errored before it was graded scores 0 (so does a suite test whose "
                                                  "every trial errored)")
    sub_scores: dict[str, float] | None = Field(
        default=None, description="mean of the trials' sub-scores (the rubric's), over the same trials as `score`: a trial "
                          "that errored before it was graded counts 0 in each")
    tools_used: list[str] = Field(default_factory=list, description="distinct tools any trial used (a refused call is "
                                  "not a use), first use first")
    turns: float | None = Field(default=None, description="mean number of model turns per trial")
    cost_usd: float | None = None
    trials: list[TrialResult] = Field(default_factory=list)
    unfinished_trials: int = Field(default=0, description="trials an interruption stopped before they finished: the case is "
                                                           "partly run, and scored on the trials it has")
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def partial(self) -> bool:
        """Partly run: an interruption stopped some of its trials (the others are in `trials`)."""
        return self.unfinished_trials > 0

    @property
    def trial_count(self) -> int:
        return len(self.trials)

    @property
    def passed_trials(self) -> int:
        return sum(1 for t in self.trials if t.passed)

    def pass_at(self, k: int) -> float:
        """Unbiased pass@k (Chen et al. 2021): chance at least one of k trials passes."""
        return metrics.pass_at_k(self.trial_count, self.passed_trials, k)

    def pass_pow(self, k: int) -> float:
        """Unbiased pass^k (tau-bench): chance all of k trials pass."""
        return metrics.pass_pow_k(self.trial_count, self.passed_trials, k)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def pass_at_1_interval(self) -> tuple[float, float] | None:
        """95% Wilson interval for pass@1: with 5 trials, 4/5 passing is anywhere from 0.38 to 0.96."""
        if self.skipped or not self.trials:
            return None
        return metrics.wilson_interval(self.passed_trials, self.trial_count)

    @property
    def value(self) -> float | None:
        """What compare looks at: the score when graders give one, else pass@1."""
        return self.score if self.score is not None else self.pass_at_1

    def seed_view(self) -> SeedTest:
        counts = {len(t.trajectory.turns) for t in self.trials}
        return SeedTest(
            id=self.name, name=self.title or self.name, passed=self.passed, tools_used=self.tools_used,
            turns=counts.pop() if len(counts) == 1 else self.turns, score=self.score if self.score is not None else self.pass_at_1, sub_scores=self.sub_scores,
        )

    @classmethod
    def from_trials(
        cls, name: str, trials: list[TrialResult], *, tags: list[str], mode: str, description: str | None = None,
        metadata: dict[str, Any] | None = None, title: str | None = None, unfinished_trials: int = 0,
    ) -> CaseResult:
        n = len(trials)
        passed = 0
        scores: list[float] = []
        unscored_errors = 0  # trials that errored before they could be graded
        costs: list[float] = []
        turns = 0
        tools: dict[str, None] = {}  # each trial's `tools_used`, merged: first use first
        for t in trials:  # one pass over the trials for every aggregate
            if t.passed:
                passed += 1
            if t.score is not None:
                scores.append(t.score)
            elif t.error is not None:
                unscored_errors += 1
            if t.cost_usd is not None:
                costs.append(t.cost_usd)
            turns += len(t.trajectory.turns)
            tools.update(dict.fromkeys(t.trajectory.tools_used))  # not the refused calls: tried is not used
        suite = is_suite_case(metadata)
        if scores or (trials and suite):
            # Every trial of a scored case counts: one that errored before it could be graded scores 0. A suite
            # test is always scored (the rubric), so one whose every trial errored scores 0 too, in every view.
            scores += [0.0] * unscored_errors
        return cls(
            name=name,
            title=title,
            description=description,
            tags=tags,
            mode=mode,
            passed=passed == n and n > 0,
            pass_at_1=passed / n if n else None,
            pass_pow_k=(1.0 if passed == n else 0.0) if n else None,
            score=metrics.mean(scores),
            sub_scores=_mean_sub_scores(trials, rubric=suite),
            tools_used=list(tools),
            turns=turns / n if n else None,
            cost_usd=sum(costs) if costs else None,
            trials=trials,
            unfinished_trials=unfinished_trials,
            metadata=metadata or {},
        )


def _trial_sub_scores(trial: TrialResult) -> dict[str, float] | None:
    """The sub-scores a trial's scored verdicts carry in `details["sub_scores"]` (the rubric's); None without any."""
    found: dict[str, list[float]] = {}
    for verdict in trial.verdicts:
        details = verdict.details
        subs = details.get("sub_scores") if details else None
        if subs:
            for key, value in subs.items():
                found.setdefault(key, []).append(float(value))
    return {key: sum(values) / len(values) for key, values in found.items()} or None


def _mean_sub_scores(trials: list[TrialResult], *, rubric: bool = False) -> dict[str, float] | None:
    """The sub-scores' means over the same trials the score's mean covers: a trial that errored before it could be
    graded scores 0 in each sub-score, as it scores 0 in total, so the sub-scores never describe fewer trials than
    the score beside them. A suite test (`rubric`) has the rubric's sub-scores even when no trial was graded."""
    per_trial = [_trial_sub_scores(t) for t in trials]
    if not rubric and not any(per_trial):  # the common case: no trial has sub-scores, nor must it
        return None
    keys = list(dict.fromkeys(key for subs in per_trial if subs for key in subs))
    if not keys and rubric and any(t.score is None and t.error is not None for t in trials):
        keys = list(RUBRIC_SUB_SCORES)
    if not keys:
        return None
    counted = [subs or dict.fromkeys(keys, 0.0)
               for subs, trial in zip(per_trial, trials) if subs or (trial.score is None and trial.error is not None)]
    return {key: sum(subs.get(key, 0.0) for subs in counted) / len(counted) for key in keys}


#: The metadata every suite test's case carries (`_build.build_cases`); such a case is always scored by the rubric.
SUITE_METADATA_KEYS = ("expected_tools", "max_turns", "success_criteria")
RUBRIC_SUB_SCORES = ("tool_accuracy", "turn_efficiency", "output_quality")


def is_suite_case(metadata: dict[str, Any] | None) -> bool:
    """A suite test's case (scored by the rubric whatever happens), told by the metadata `build_cases` gives it."""
    return bool(metadata) and all(key in metadata for key in SUITE_METADATA_KEYS)  # type: ignore[operator]


class RunReport(BaseModel):
    """The result of one evaluation run."""

    schema_version: str = SCHEMA_VERSION
    run_id: str | None = None
    status: str = Field(default="completed", description="completed | interrupted")
    started_at: datetime
    duration_s: float = 0.0
    trial_count: int = Field(description="trials per case requested for the run")
    case_count: int = Field(description="selected cases, skipped ones included")
    passed_case_count: int = 0
    failed_case_count: int = 0
    skipped_case_count: int = 0
    skipped_cases: list[SkippedCase] = Field(default_factory=list)
    unfinished_cases: list[str] = Field(default_factory=list, description="cases an interruption stopped")
    pass_at_1: float | None = Field(default=None, description="mean pass@1 of the graded cases; None when none was graded")
    pass_pow_k: float | None = Field(default=None, description="share of graded cases whose every trial passed")
    score: float | None = Field(default=None, description="mean score of the graded cases that have one (the average every view "
                                                  "shows, compare's included); None when no case is scored")
    cost_usd: float | None = None
    config_snapshot: dict[str, Any] = Field(default_factory=dict)
    regraded_from: str | None = Field(default=None, description="the run whose stored exchanges this run regraded "
                                      "(`trialrun regrade`): no agent ran for it")
    cases: list[CaseResult] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def timestamp(self) -> str:
        """The eval skill's `timestamp` (UTC, ISO 8601 with Z)."""
        return self.started_at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def tests(self) -> list[SeedTest]:
        """The eval skill's per-test view (id, name, passed, tools_used, turns, score, sub_scores), derived."""
        return [case.seed_view() for case in self.cases]

    @property
    def graded_cases(self) -> list[CaseResult]:
        return [c for c in self.cases if not c.skipped]

    @property
    def failed_cases(self) -> list[CaseResult]:
        return [c for c in self.cases if c.passed is False]

    @property
    def passed(self) -> bool:
        """True when every graded case passed (and the run finished); never for a run that graded no case."""
        return self.failed_case_count == 0 and self.status == "completed" and bool(self.graded_cases)

    def case(self, name: str) -> CaseResult:
        for case in self.cases:
            if case.name == name:
                return case
        raise KeyError(f"no case named {name!r} in this report")

    @classmethod
    def build(
        cls,
        cases: list[CaseResult],
        *,
        trial_count: int,
        started_at: datetime,
        duration_s: float,
        status: str = "completed",
        unfinished: list[str] | None = None,
        run_id: str | None = None,
        config_snapshot: dict[str, Any] | None = None,
        regraded_from: str | None = None,
    ) -> RunReport:
        graded = [c for c in cases if not c.skipped]
        costs = [c.cost_usd for c in graded if c.cost_usd is not None]
        return cls(
            run_id=run_id,
            status=status,
            started_at=started_at,
            duration_s=duration_s,
            trial_count=trial_count,
            case_count=len(cases),
            passed_case_count=sum(1 for c in graded if c.passed),
            failed_case_count=sum(1 for c in graded if not c.passed),
            skipped_case_count=len(cases) - len(graded),
            skipped_cases=[SkippedCase(name=c.name, reason=c.skip_reason or "skipped") for c in cases if c.skipped],
            unfinished_cases=unfinished or [],
            pass_at_1=metrics.mean(c.pass_at_1 for c in graded if c.pass_at_1 is not None),
            pass_pow_k=metrics.mean(c.pass_pow_k for c in graded if c.pass_pow_k is not None),
            score=metrics.mean(c.score for c in graded if c.score is not None),
            cost_usd=sum(costs) if costs else None,
            config_snapshot=config_snapshot or {},
            regraded_from=regraded_from,
            cases=cases,
        )
