"""The comparison of two runs as data: `Comparison` and its per-test `CaseDelta`s (what `compare.compare` returns,
`trialrun compare --json` prints, and every view renders). Split from compare.py, which computes them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_serializer

from ._models_used import RunModels
from ._safety import SafetyBreach
from ._verdict import Chance, Gate, Judgement, Word
from .results import SCHEMA_VERSION

__all__ = ["Comparison", "CaseDelta", "ConfigChange", "SubScoreMove", "Movement", "REGRESSION_THRESHOLD", "Pairing"]

REGRESSION_THRESHOLD = 0.10

Movement = Literal["improved", "regressed", "unchanged", "added", "removed", "not_finished"]
Pairing = Literal["deterministic", "live", "mixed", "unknown"]


class SubScoreMove(BaseModel):
    """One sub-score that moved (values as shown, two decimals)."""

    name: str
    before: float
    after: float
    delta: float


class CaseDelta(BaseModel):
    name: str
    status: Movement
    before: float | None = None
    after: float | None = None
    delta: float | None = None
    regression: bool = Field(default=False, description="the eval skill's regression: the value dropped by the "
                             "threshold, it passed and now fails, or a sub-score dropped by the threshold (shown with "
                             "a WARNING); whether it is worse is `word`")
    newly_failing: bool = Field(default=False, description="passed before, fails now (a regression whatever the score)")
    failure_after: str | None = Field(default=None, description="why it fails now, when it newly fails")
    passed_before: bool | None = None
    passed_after: bool | None = None
    pass_at_1_before: float | None = None
    pass_at_1_after: float | None = None
    pass_pow_k_before: float | None = None
    pass_pow_k_after: float | None = None
    unfinished_in: Literal["before", "after"] | None = Field(
        default=None, description="for status not_finished: the run an interruption stopped before this test finished")
    newly_passing: bool = Field(default=False, description="failed before, passes now (an improvement whatever the score)")
    sub_score_moves: list[SubScoreMove] = Field(default_factory=list)
    sub_score_regressions: list[str] = Field(default_factory=list, description="sub-scores that dropped by the threshold or more")
    trials_passed_before: int | None = None
    trials_run_before: int | None = None
    trials_passed_after: int | None = None
    trials_run_after: int | None = None
    pass_at_1_interval_before: tuple[float, float] | None = None
    pass_at_1_interval_after: tuple[float, float] | None = None
    deterministic: bool | None = Field(default=None, description="both runs' trials of it that talked to a model "
                                       "talked only to scripted or replayed ones: every change is real")
    safety_breaches: list[SafetyBreach] = Field(default_factory=list, description="safety claims that held in every "
                                                "trial before that examined them (or none did) and fail in a trial "
                                                "after")
    word: Word | None = Field(default=None, description="worse, not worse or cannot tell (a test both runs finished)")
    basis: str | None = Field(default=None, description="what the word rests on: deterministic, safety, live, any_drop")
    reason: str | None = Field(default=None, description="why the word, in one line")
    chance: Chance | None = Field(default=None, description="the chance statistics of a live test")


class ConfigChange(BaseModel):
    key: str
    before: Any = None
    after: Any = None
    #: For a text of several lines (instructions, a system prompt): what changed in it, as a short unified diff.
    diff: str | None = None

    @model_serializer(mode="wrap")
    def _without_empty_diff(self, handler: Any) -> Any:
        """`diff` only where there is one: a change of a short value reads as before and after, as it always did."""
        data = handler(self)
        if isinstance(data, dict) and data.get("diff") is None:
            data.pop("diff", None)
        return data


class Comparison(BaseModel):
    """What changed between two runs, and the verdict on it."""

    schema_version: str = SCHEMA_VERSION
    threshold: float = REGRESSION_THRESHOLD
    before_run_id: str | None = None
    after_run_id: str | None = None
    cases: list[CaseDelta] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    not_finished: list[str] = Field(default_factory=list, description="tests the after run's interruption stopped")
    regressions: list[str] = Field(default_factory=list, description="the eval skill's regressions (see CaseDelta)")
    worse: list[str] = Field(default_factory=list, description="tests whose word is worse")
    cannot_tell: list[str] = Field(default_factory=list, description="tests whose word is cannot tell")
    status_before: str = "completed"
    status_after: str = "completed"
    unfinished_before: list[str] = Field(default_factory=list)
    unfinished_after: list[str] = Field(default_factory=list)
    avg_score_before: float | None = None
    avg_score_after: float | None = None
    passed_before: int = 0
    total_before: int = 0
    passed_after: int = 0
    total_after: int = 0
    trials_before: int = 1
    trials_after: int = 1
    pass_at_1_before: float | None = None
    pass_at_1_after: float | None = None
    pass_pow_k_before: float | None = None
    pass_pow_k_after: float | None = None
    config_changes: list[ConfigChange] = Field(default_factory=list)
    selection_differs: bool = Field(default=False, description="the runs graded different tests; the summary covers "
                                                               "the tests both ran")
    shared: int = Field(default=0, description="tests both runs graded")
    models_before: RunModels | None = Field(default=None, description="the kinds of model the earlier run talked to")
    models_after: RunModels | None = None
    pairing: Pairing = Field(default="unknown", description="deterministic (both runs), mixed (one), live, or unknown "
                                                           "(no model observed); all but deterministic are judged as live")
    run: Judgement | None = Field(default=None, description="the word for the run as a whole, and why")
    gate: Gate | None = Field(default=None, description="what --fail-on-regression decides, and why")
    any_drop: bool = Field(default=False, description="--any-drop: every drop of a live test is worse, chance or not")
    require_power: bool = Field(default=False, description="--require-power: cannot tell fails the gate")

    @property
    def has_regressions(self) -> bool:
        return bool(self.regressions)

    @property
    def multi_trial(self) -> bool:
        return self.trials_before > 1 or self.trials_after > 1

    @property
    def deterministic(self) -> bool:
        return self.pairing == "deterministic"
