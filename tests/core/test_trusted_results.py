"""Results the runner builds itself skip pydantic's validation (`results._trusted`): what they hold, how they compare
and what they save must be exactly what `model_construct` (and, for a case, validation) gives."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, PrivateAttr

import trialrun as tr
from trialrun import expect
from trialrun._util.workspace_diff import FileChange, WorkspaceDiff
from trialrun.expect._base import Verdict
from trialrun.report.results import CaseResult, TrialError, TrialResult, _trusted


def _values() -> dict:
    trajectory = tr.Trajectory(turns=[tr.Turn(tool_calls=[tr.ToolCall("lookup", {"key": "k"}, id="c1")],
                                              tool_results=[tr.ToolResult("c1", "v")]), tr.Turn(text="v")], model_calls=2)
    return {"trial": 2, "passed": False, "outcome_passed": True, "trajectory_passed": False, "cost_passed": None,
            "score_passed": None, "verdicts": [Verdict(True, "contains('v')", "output contains 'v'", kind="outcome")],
            "error": TrialError(type="RuntimeError", message="boom", phase="teardown"), "teardown_error": None,
            "duration_s": 0.25, "cost_usd": 0.5, "usage": tr.Usage(3, 4), "score": None, "status": "completed",
            "output": {"answer": "v"}, "trajectory": trajectory, "killed": ["pid 7: sleep 9"], "models": ["scripted"],
            "files": WorkspaceDiff([FileChange("a.py", "changed", diff="--- a/a.py\n+++ b/a.py\n")], ["b.py"], 2)}


def test_a_trusted_trial_result_is_what_model_construct_builds() -> None:
    fields = set(TrialResult.model_fields)
    built, constructed = _trusted(TrialResult, fields, _values()), TrialResult.model_construct(fields, **_values())
    assert built == constructed
    assert list(built.__dict__) == list(constructed.__dict__) == list(TrialResult.model_fields)
    assert built.model_fields_set == constructed.model_fields_set
    assert built.__pydantic_extra__ == constructed.__pydantic_extra__
    assert built.__pydantic_private__ == constructed.__pydantic_private__
    assert built.model_dump_json() == constructed.model_dump_json()
    assert TrialResult.model_validate_json(built.model_dump_json()) == TrialResult.model_validate_json(constructed.model_dump_json())
    assert repr(built) == repr(constructed)


def test_a_model_with_private_state_is_built_by_model_construct() -> None:
    class Private(BaseModel):
        name: str
        _seen: int = PrivateAttr(default=7)

    built = _trusted(Private, {"name"}, {"name": "x"})
    assert built.name == "x" and built._seen == 7  # model_construct set the private default up


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
