"""Results the runner builds itself skip pydantic's validation (`model_construct`): what they hold, how they compare
and what they save must be exactly what validation gives."""

from __future__ import annotations

import pytest

import trialrun as tr
from trialrun import expect
from trialrun.report.results import CaseResult, TrialResult


def test_an_evaluated_trial_result_saves_as_a_validated_one() -> None:
    case = tr.Case(name="c", invoke=lambda ctx: "v", expect_outcome=[expect.contains("v")])
    trial = tr.evaluate([case]).cases[0].trials[0]
    again = TrialResult.model_validate(trial.model_dump())
    assert again == trial and again.model_dump_json() == trial.model_dump_json()


@pytest.mark.parametrize("costs", [(1, None), (0.25, 0.5), (None, None)])
def test_a_case_converts_what_its_trials_hold_as_validation_does(costs) -> None:
    trials = [TrialResult.model_construct(trial=n, passed=True, cost_usd=cost) for n, cost in enumerate(costs, 1)]
    case = CaseResult.from_trials("c", trials, tags=["t"], mode="deterministic", metadata={"k": 1})
    expected = None if all(c is None for c in costs) else float(sum(c for c in costs if c is not None))
    assert case.cost_usd == expected and type(case.cost_usd) is type(expected)
    assert case.tools_used == [] and case.sub_scores is None and case.turns == 0.0


def test_a_case_s_tools_are_its_trials_tools_first_use_first_sub_agents_included() -> None:
    def trial(n: int, main: list[str], sub: list[str]) -> TrialResult:
        turn = lambda names: tr.Turn(tool_calls=[tr.ToolCall(name) for name in names])
        trajectory = tr.Trajectory(turns=[turn(main)], other_conversations=[tr.Conversation("sub", [turn(sub)])])
        return TrialResult(trial=n, passed=True, trajectory=trajectory)

    trials = [trial(1, ["b", "a"], ["b"]), trial(2, ["a"], ["c", "a"])]
    case = CaseResult.from_trials("c", trials, tags=[], mode="deterministic")
    assert case.tools_used == ["b", "a", "c"] == list(dict.fromkeys(n for t in trials for n in t.trajectory.tools_used))
