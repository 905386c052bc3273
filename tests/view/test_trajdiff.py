"""The trajectory diff's alignment: steps (calls with their results, reply texts) aligned by content, so the same
call pairs with itself whatever turn it came at; each row named (same, result, arguments, text, removed,
inserted); the first divergence found; calls paired with their results by id; the verdicts that flipped."""

from __future__ import annotations

import functools
import itertools
import random

import pytest

from trialrun.expect import Verdict
from trialrun.report._trajdiff import MAX_CELLS, align, steps, verdict_flips
from trialrun.report.results import TrialResult
from trialrun.trajectory import ToolCall, ToolResult, Trajectory, Turn

_ids = itertools.count()


def _turn(name: str | None, args: dict | None = None, result: str = "ok", *, error: bool = False, text: str = "") -> Turn:
    if name is None:
        return Turn(text=text)
    call_id = f"c{next(_ids)}"
    return Turn(text=text, tool_calls=[ToolCall(name, args or {}, id=call_id)],
                tool_results=[ToolResult(call_id, result, is_error=error)])


BASE = [_turn("read_file", {"path": "a.txt"}, "hello"), _turn("shell", {"command": "ls"}, "a.txt"),
        _turn(None, text="Done.")]


def _kinds(diff) -> list[str]:  # type: ignore[no-untyped-def]
    return [row.divergence or "same" for row in diff.steps]


def test_identical_trajectories_have_no_divergence() -> None:
    diff = align(Trajectory(turns=list(BASE)), Trajectory(turns=list(BASE)))
    assert _kinds(diff) == ["same", "same", "same"] and diff.first is None
    assert diff.describe() == "The two trials did the same 2 call(s) with the same results and replies."


def test_the_same_call_at_another_turn_is_the_same_step() -> None:
    """The issue's case: one extra step early on must not make every later row differ. `python3 test_app.py` at
    turn 3 before and turn 2 after is one row, the same."""
    test = _turn("bash", {"command": "python3 test_app.py"}, "OK")
    before = [_turn("bash", {"command": "ls"}, "app.py"), _turn("bash", {"command": "cat app.py"}, "..."), test,
              _turn(None, text="All tests pass.")]
    after = [_turn("bash", {"command": "ls"}, "app.py"), test, _turn(None, text="All tests pass.")]
    diff = align(Trajectory(turns=before), Trajectory(turns=after))
    assert _kinds(diff) == ["same", "removed", "same", "same"]
    row = diff.steps[2]
    assert (row.before.turn, row.after.turn) == (3, 2) and row.after.call.arguments == {"command": "python3 test_app.py"}
    assert diff.first is diff.steps[1] and diff.first.after is None
    assert diff.describe() == ("First divergence at step 2 (before turn 2): a call only the before trial made. "
                               "Steps: 3 same, 1 removed.")


@pytest.mark.parametrize(("changed", "kinds"), [
    (_turn("run_command", {"command": "ls"}, "a.txt"), ["same", "removed", "inserted", "text"]),
    (_turn("shell", {"command": "ls -la"}, "a.txt"), ["same", "arguments", "text"]),
    (_turn("shell", {"command": "ls"}, "b.txt"), ["same", "result", "text"]),
    (_turn("shell", {"command": "ls"}, "a.txt", error=True), ["same", "result", "text"]),
])
def test_each_row_says_how_the_steps_differ(changed: Turn, kinds: list[str]) -> None:
    after = [BASE[0], changed, _turn(None, text="Something else.")]
    diff = align(Trajectory(turns=list(BASE)), Trajectory(turns=after))
    assert _kinds(diff) == kinds
    assert diff.first is diff.steps[1] and "step 2" in diff.describe()


def test_inserted_calls_are_marked_and_the_rest_still_pairs() -> None:
    extra = _turn("shell", {"command": "pip install -r requirements.txt"}, "done")
    diff = align(Trajectory(turns=list(BASE)), Trajectory(turns=[BASE[0], extra, BASE[1], BASE[2]]))
    assert _kinds(diff) == ["same", "inserted", "same", "same"]
    assert diff.steps[1].before is None and diff.steps[1].after.turn == 2 and diff.steps[2].after.turn == 3


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


def _edits(rows) -> int:  # type: ignore[no-untyped-def]
    return sum(0 if row.divergence in (None, "result") else 1 for row in rows)


def _brute_force_edits(a: list[str], b: list[str]) -> int:
    """The fewest edits by the alignment's rules (a pair of one tool with other arguments costs 1; different tools
    never pair), by plain recursion: the truth the alignment must reach."""

    @functools.cache
    def best(i: int, j: int) -> int:
        if i == len(a) or j == len(b):
            return len(a) - i + len(b) - j
        options = [1 + best(i + 1, j), 1 + best(i, j + 1)]
        if a[i][0] == b[j][0]:
            options.append((0 if a[i] == b[j] else 1) + best(i + 1, j + 1))
        return min(options)

    return best(0, 0)


def test_the_alignment_is_a_least_edit_one_on_random_trajectories() -> None:
    """Seeded random trajectories of calls from a small alphabet (tool letter + argument digit): the alignment's
    edit count equals the brute-force minimum, every step of each side appears once, in order."""
    rng = random.Random(36)
    for _ in range(200):
        a = ["".join(rng.choice(c) for c in ("xyz", "12")) for _ in range(rng.randint(0, 7))]
        b = ["".join(rng.choice(c) for c in ("xyz", "12")) for _ in range(rng.randint(0, 7))]

        def trajectory(calls: list[str]) -> Trajectory:
            return Trajectory(turns=[_turn(call[0], {"n": call[1]}) for call in calls])

        diff = align(trajectory(a), trajectory(b))
        assert _edits(diff.steps) == _brute_force_edits(a, b), (a, b)
        sides = [[row.before for row in diff.steps if row.before], [row.after for row in diff.steps if row.after]]
        assert [s.call.name + s.call.arguments["n"] for s in sides[0]] == a
        assert [s.call.name + s.call.arguments["n"] for s in sides[1]] == b


def test_long_trajectories_align_without_the_quadratic_table() -> None:
    n = int(MAX_CELLS ** 0.5) + 50
    calls = [_turn("bash", {"command": f"step {i}"}) for i in range(n)]
    diff = align(Trajectory(turns=calls), Trajectory(turns=calls[:10] + calls[11:]))
    assert _kinds(diff).count("removed") == 1 and _kinds(diff).count("same") == n - 1


def test_verdict_flips_name_the_graders_whose_verdict_changed() -> None:
    def trial(*verdicts: tuple[str, bool]) -> TrialResult:
        return TrialResult(trial=1, passed=all(p for _, p in verdicts),
                           verdicts=[Verdict(p, g, f"{g} {'ok' if p else 'failed'}") for g, p in verdicts])

    before = trial(("contains('milk')", True), ("never_ran('rm -rf')", True), ("max_turns(3)", True))
    after = trial(("contains('milk')", True), ("never_ran('rm -rf')", False), ("no_denials()", True))
    flips = verdict_flips(before, after)
    assert [(f.grader, f.before, f.after) for f in flips] == [("never_ran('rm -rf')", True, False),
                                                              ("max_turns(3)", True, None), ("no_denials()", None, True)]
    assert flips[0].reason_after == "never_ran('rm -rf') failed"
    assert verdict_flips(before, before) == []
