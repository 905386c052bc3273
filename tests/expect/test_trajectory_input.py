"""`expect` graders and `check` accept a Trajectory as well as a Run (a trajectory read from recorded traffic
needs no Run around it); `Run.status` is a Literal of the statuses the reference agent sets."""

from __future__ import annotations

import typing

import trialrun as tr
from trialrun import expect
from trialrun.agent import RunStatus
from trialrun.trajectory import Run, ToolCall, ToolResult, Trajectory, Turn


def _trajectory() -> Trajectory:
    return Trajectory(turns=[Turn(tool_calls=[ToolCall("read_file", {"path": "notes.txt"}, id="c1")],
                                  tool_results=[ToolResult("c1", "milk")]), Turn(text="Buy milk.")],
                      model_calls=2, offered_tools=["read_file", "run_command"])


def test_a_grader_takes_a_trajectory() -> None:
    trajectory = _trajectory()
    verdict = expect.called("read_file", args={"path": "notes.txt"})(trajectory)
    assert verdict.passed and "read_file" in verdict.reason
    assert not expect.called("run_command")(trajectory).passed  # it must be able to fail
    assert expect.max_turns(2)(trajectory).passed and not expect.max_turns(1)(trajectory).passed


def test_check_takes_a_trajectory_not_as_the_output() -> None:
    verdicts = tr.check([expect.called("read_file"), expect.not_called("run_command")], _trajectory())
    assert [v.passed for v in verdicts] == [True, True]
    as_run = tr.check([expect.called("read_file")], Run(trajectory=_trajectory()))
    assert [v.reason for v in verdicts[:1]] == [v.reason for v in as_run]


def test_run_status_is_a_literal_shared_with_the_agent() -> None:
    hints = typing.get_type_hints(Run)
    assert typing.get_args(hints["status"]) == (RunStatus, type(None))
    assert typing.get_args(RunStatus) == ("completed", "max_turns", "cost_limit", "stopped_by_policy", "error")
