"""Was a run deterministic? Decided from what its trials did, never guessed from a name.

Each trial records the kinds of model it talked to (`TrialResult.models`: scripted, replay, live, other; the
transports know what they are, `models.kind_of`). A test is deterministic when every trial of it that talked to a
model talked only to scripted or replayed ones (and no live judge scored it); live when any talked to a live model or
to one trialrun cannot name; unknown when no trial talked to a model trialrun observed (treated as live, and said).
Over two runs (compare's pair) or the arms of an A/B run, one test is judged on all their trials together: a trial
that recorded talking to no model (`models == []`: an agent that crashed before its first request) flipped no
model's coin, so a test scripted before and crashing at startup after is deterministic, and its drop real (judged as
live, 1/1 -> 0/1 "could not tell", and the gate passed an agent that no longer starts). A trial whose models are not
known at all (an eval-skill file has no trials; a 1.0 file whose configured model names no kind) keeps it unknown.
A file from before trials recorded their models (schema 1.0) is read by its config snapshot: the configured
model's spec (`scripted:`, `replay:` against `openai:`, `record:`, ...), said to come from there.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..models._base import DETERMINISTIC_KINDS
from .results import CaseResult, RunReport, TrialResult

__all__ = ["Determinism", "RunModels", "case_determinism", "trials_determinism", "run_models", "pair_of", "SPEC_KINDS",
           "Side"]

Determinism = Literal["deterministic", "live", "unknown"]
#: One run's trials of a test, with that run's config snapshot (what a 1.0 file's trials are read by).
Side = tuple[Iterable[TrialResult], dict[str, Any]]

#: What a model spec's prefix (config snapshot `model`, `judge`) says the model is; kept in step with
#: `suite.config.MODEL_KINDS` by a test (the report cannot import the suite: data flows one way).
SPEC_KINDS: dict[str, str] = {"scripted": "scripted", "replay": "replay", "record": "live", "openai": "live",
                              "anthropic": "live", "openai-compatible": "live"}


class RunModels(BaseModel):
    """What kinds of model a run's trials talked to, and whether that makes it deterministic."""

    kind: Determinism
    trials: dict[str, int] = Field(default_factory=dict, description="trials that talked to each kind of model")
    basis: str = Field(description="what the kind was decided from, in words")


def _spec_kind(value: Any) -> str | None:
    prefix, sep, rest = value.partition(":") if isinstance(value, str) else ("", "", "")
    return SPEC_KINDS.get(prefix) if sep and rest else None


def _snapshot_kinds(snapshot: dict[str, Any]) -> list[str] | None:
    """The kinds of model the config snapshot names, for trials that did not record theirs; None if it names none."""
    kind = _spec_kind(snapshot.get("model"))
    return [kind] if kind else None


def _live_judge(snapshot: dict[str, Any]) -> bool:
    return _spec_kind(snapshot.get("judge")) == "live"


def _kinds(trials: Iterable[TrialResult], snapshot: dict[str, Any]) -> tuple[Counter[str], int, int]:
    """(trials per kind, trials that said nothing and were read from the snapshot, trials with no model at all)."""
    fallback = _snapshot_kinds(snapshot)
    counts: Counter[str] = Counter()
    from_snapshot = silent = 0
    for trial in trials:
        kinds = trial.models
        if kinds is None:
            kinds = fallback
            from_snapshot += kinds is not None
        if not kinds:
            silent += 1
        counts.update(kinds or ())
    return counts, from_snapshot, silent


def case_determinism(case: CaseResult, snapshot: dict[str, Any]) -> Determinism:
    """deterministic, live or unknown, for one test's trials in a run with this config snapshot."""
    return trials_determinism((case.trials, snapshot))


def trials_determinism(*sides: Side) -> Determinism:
    """deterministic, live or unknown, for one test's trials in one run or several (compare's two runs, an A/B run's
    arms), each side with its run's config snapshot: the one rule `case_determinism`, compare's pair and the A/B
    runner's "one round decides" all use. Trials that recorded no model count for nothing; a side with no trials,
    or with trials whose models cannot be known, leaves the test unknown (see the module's docstring)."""
    counts: Counter[str] = Counter()
    live_judge = unknowable = False
    for trials, snapshot in sides:
        listed = list(trials)
        counts.update(_kinds(listed, snapshot)[0])
        live_judge = live_judge or _live_judge(snapshot)
        # no trials (an eval-skill file), or trials that did not record their models and a snapshot naming no kind
        unknowable = (unknowable or not listed
                      or _snapshot_kinds(snapshot) is None and any(t.models is None for t in listed))
    if not counts:
        return "unknown"
    if live_judge or not set(counts) <= DETERMINISTIC_KINDS:
        return "live"
    return "unknown" if unknowable else "deterministic"


def run_models(report: RunReport) -> RunModels:
    """The run's kind: deterministic when every graded test is, unknown when none talked to a model, else live."""
    snapshot = report.config_snapshot
    total: Counter[str] = Counter()
    from_snapshot = silent = trials = 0
    kinds: set[str] = set()
    for case in report.graded_cases:
        counts, read, none = _kinds(case.trials, snapshot)
        total.update(counts)
        from_snapshot += read
        silent += none
        trials += case.trial_count
        kinds.add(case_determinism(case, snapshot))
    kind: Determinism = ("deterministic" if kinds == {"deterministic"} else "unknown" if kinds <= {"unknown"}
                         else "live")
    return RunModels(kind=kind, trials=dict(sorted(total.items())), basis=_basis(kind, total, trials, from_snapshot,
                                                                                  silent, snapshot))


def _basis(kind: Determinism, total: Counter[str], trials: int, from_snapshot: int, silent: int,
           snapshot: dict[str, Any]) -> str:
    """`scripted model in 6 of 6 trials`, `... (read from the config snapshot's model ...)`, `no trial talked ...`."""
    if kind == "unknown":
        return f"no trial talked to a model trialrun observed ({trials} trial{'s' if trials != 1 else ''})"
    seen = ", ".join(f"{name} model in {count} of {trials} trials" for name, count in sorted(total.items()))
    if from_snapshot:
        seen += (f" (read from the config snapshot's model {snapshot.get('model')}: {from_snapshot} trial"
                 f"{'s' if from_snapshot != 1 else ''} did not record their model)")
    if silent:
        seen += f"; {silent} trial{'s' if silent != 1 else ''} talked to no model"
    if _live_judge(snapshot):
        seen += f"; a live judge ({snapshot.get('judge')}) scored them"
    return seen


def pair_of(before: RunModels, after: RunModels, *, every_test_deterministic: bool = False
            ) -> Literal["deterministic", "live", "mixed", "unknown"]:
    """What two runs are together: deterministic (both; or neither is live and every test both graded is, by
    `trials_determinism` over both runs' trials: a run whose trials talked to no model against a deterministic one),
    mixed (one deterministic, one not), unknown (neither observed a model, or one did not and the other is live),
    else live. Mixed and unknown are judged as live (a test deterministic over both runs' trials is not)."""
    kinds = {before.kind, after.kind}
    if kinds == {"deterministic"} or every_test_deterministic and "live" not in kinds:
        return "deterministic"
    if "deterministic" in kinds:
        return "mixed"
    return "unknown" if "unknown" in kinds else "live"
