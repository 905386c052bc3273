"""The trajectory diff's alignment: turns paired by position, the first divergence found and named (tool,
arguments, result, text, missing), calls paired with their results by id."""

from __future__ import annotations

import pytest

from trialrun.report._trajdiff import align, steps
from trialrun.trajectory import ToolCall, ToolResult, Trajectory, Turn


def _turn(name: str | None, args: dict | None = None, result: str = "ok", *, error: bool = False, text: str = "",
          call_id: str = "c1") -> Turn:
    if name is None:
        return Turn(text=text)
    return Turn(text=text, tool_calls=[ToolCall(name, args or {}, id=call_id)],
                tool_results=[ToolResult(call_id, result, is_error=error)])


BASE = [_turn("read_file", {"path": "a.txt"}, "hello"), _turn("shell", {"command": "ls"}, "a.txt"),
        _turn(None, text="Done.")]


def test_identical_trajectories_have_no_divergence() -> None:
    diff = align(Trajectory(turns=list(BASE)), Trajectory(turns=list(BASE)))
    assert [t.same for t in diff.turns] == [True, True, True]
    assert diff.first is None
    assert diff.describe().startswith("The two runs made the same 3 turn(s)")


@pytest.mark.parametrize(("changed", "kind"), [
    (_turn("run_command", {"command": "ls"}, "a.txt"), "tool"),
    (_turn("shell", {"command": "ls -la"}, "a.txt"), "arguments"),
    (_turn("shell", {"command": "ls"}, "b.txt"), "result"),
    (_turn("shell", {"command": "ls"}, "a.txt", error=True), "result"),
    (_turn("shell", {"command": "ls"}, "a.txt", text="Listing."), "text"),
])
def test_the_first_divergence_is_found_in_turn_two_with_its_kind(changed: Turn, kind: str) -> None:
    after = [BASE[0], changed, _turn(None, text="Something else.")]
    diff = align(Trajectory(turns=list(BASE)), Trajectory(turns=after))
    first = diff.first
    assert first is not None and first.index == 1 and first.divergence == kind
    # the later difference (turn 3's text) is a divergence too, but not the first
    assert diff.turns[2].divergence == "text" and diff.turns[0].same
    assert f"turn 2" in diff.describe()


def test_a_missing_call_is_a_tool_divergence_and_a_missing_turn_is_missing() -> None:
    two_calls = Turn(tool_calls=[ToolCall("read_file", {"path": "a.txt"}, id="c1"), ToolCall("shell", {"command": "ls"}, id="c2")],
                     tool_results=[ToolResult("c1", "hello"), ToolResult("c2", "a.txt")])
    diff = align(Trajectory(turns=[two_calls]), Trajectory(turns=[BASE[0], BASE[2]]))
    assert (diff.first.index, diff.first.divergence, diff.first.call_index) == (0, "tool", 1)
    assert diff.turns[1].divergence == "missing" and diff.turns[1].before is None
    assert "turn 1, call 2: a different tool" in diff.describe()


def test_results_pair_with_their_calls_by_id_whatever_their_order() -> None:
    turn = Turn(tool_calls=[ToolCall("a", id="1"), ToolCall("b", id="2")],
                tool_results=[ToolResult("2", "from b"), ToolResult("1", "from a")])
    assert [(s.call.name, s.result.content if s.result else None) for s in steps(turn)] == [("a", "from a"), ("b", "from b")]
    reordered = Turn(tool_calls=turn.tool_calls, tool_results=list(reversed(turn.tool_results)))
    assert align(Trajectory(turns=[turn]), Trajectory(turns=[reordered])).first is None


def test_a_call_without_its_result_differs_from_one_with_it() -> None:
    unanswered = Turn(tool_calls=[ToolCall("shell", {"command": "ls"}, id="c1")])
    diff = align(Trajectory(turns=[BASE[1]]), Trajectory(turns=[unanswered]))
    assert diff.first is not None and diff.first.divergence == "result"
