"""Trajectory graders: pass, fail and the reason text, table-driven."""

from __future__ import annotations

import re

import pytest

import trialrun as tr
from trialrun import expect


def traj(*calls: tuple, results: dict[str, tuple[str, bool]] | None = None, texts: int = 0, commands=(), denials=()) -> tr.Trajectory:
    """One turn per call (each a (name, args) pair), then `texts` text-only turns."""
    turns = []
    for number, (name, args) in enumerate(calls, start=1):
        call_id = f"c{number}"
        content, is_error = (results or {}).get(call_id, ("ok", False))
        turns.append(tr.Turn(tool_calls=[tr.ToolCall(name, args, id=call_id)], tool_results=[tr.ToolResult(call_id, content, is_error)]))
    turns.extend(tr.Turn(text="done") for _ in range(texts))
    return tr.Trajectory(turns=turns, commands=list(commands), denials=list(denials))


READ_A = ("read_file", {"path": "a.txt"})
READ_B = ("read_file", {"path": "b.txt"})
READ_C = ("read_file", {"path": "c.txt"})
LIST = ("list_dir", {"path": "."})
WRITE = ("write_file", {"path": "a.txt", "content": "x"})

CASES = [
    (expect.called("read_file"), traj(READ_A), True, "read_file was called 1 time"),
    (expect.called("read_file"), traj(LIST), False, "read_file was never called (tools called: list_dir)"),
    (expect.called("read_file"), traj(texts=1), False, "read_file was never called (tools called: none)"),
    (expect.called("read_file"), traj(), False, expect.trajectory.NOTHING_OBSERVED),
    (expect.called("read_file", args={"path": "a.txt"}), traj(LIST, READ_A), True, "read_file was called 1 time with path='a.txt'"),
    (
        expect.called("read_file", args={"path": "a.txt"}),
        traj(READ_B, READ_C),
        False,
        "read_file was called 2 times, never with path='a.txt' (saw path='b.txt', path='c.txt')",
    ),
    (expect.called("read_file", times=2), traj(READ_A, READ_B), True, "read_file was called 2 times"),
    (expect.called("read_file", times=1), traj(READ_A, READ_B), False, "read_file was called 2 times, expected exactly 1"),
    (expect.called("read_file", at_least=3), traj(READ_A, READ_B), False, "read_file was called 2 times, expected at least 3"),
    (expect.called("read_file", at_most=1), traj(READ_A, READ_B), False, "read_file was called 2 times, expected at most 1"),
    (expect.called("read_*"), traj(READ_A), True, "read_* was called 1 time"),
    (expect.called("read_file", args={"path": lambda p: p.endswith(".txt")}), traj(READ_B), True, None),
    (expect.called("write_file", args={"path": "a.txt"}), traj(WRITE), True, None),
    (
        expect.called("write_file", args={"path": "a.txt"}, exact_args=True),
        traj(WRITE),
        False,
        "write_file was called 1 time, never with path='a.txt' (saw path='a.txt', content='x')",
    ),
    (expect.not_called("run_command"), traj(READ_A), True, "run_command was not called (examined 1 tool call)"),
    (
        expect.not_called("write_file"),
        traj(WRITE),
        False,
        "write_file was called 1 time: write_file(path='a.txt', content='x')",
    ),
    (expect.called_in_order(["list_dir", "read_file"]), traj(LIST, WRITE, READ_A), True,
     "calls include list_dir -> read_file in order (saw list_dir -> write_file -> read_file)"),
    (
        expect.called_in_order(["read_file", "list_dir"]),
        traj(LIST, READ_A),
        False,
        "expected read_file -> list_dir in order; list_dir never came after read_file (saw list_dir -> read_file)",
    ),
    (
        expect.called_in_order([("read_file", {"path": "b.txt"})]),
        traj(READ_A),
        False,
        "expected read_file(path='b.txt') in order; read_file(path='b.txt') never came (saw read_file(path='a.txt'))",
    ),
    (expect.called_in_order(["list_dir", "read_file"], exact=True), traj(LIST, READ_A), True, "calls were exactly list_dir -> read_file"),
    (
        expect.called_in_order(["list_dir", "read_file"], exact=True),
        traj(LIST, WRITE, READ_A),
        False,
        "expected exactly list_dir -> read_file; saw list_dir -> write_file -> read_file",
    ),
    (expect.max_turns(3), traj(READ_A, texts=2), True, "3 turns (limit 3)"),
    (expect.max_turns(2), traj(READ_A, texts=2), False, "3 turns, limit 2"),
    (expect.max_tool_calls(1), traj(READ_A, READ_B), False, "2 tool calls, limit 1 (read_file, read_file)"),
    (expect.max_tool_calls(2), traj(READ_A, READ_B), True, "2 tool calls (limit 2)"),
    (expect.no_tool_errors(), traj(READ_A), True, "none of 1 tool result was an error"),
    (
        expect.no_tool_errors(),
        traj(READ_A, READ_B, results={"c2": ("file not found: b.txt", True)}),
        False,
        "1 tool result(s) were errors: read_file: file not found: b.txt",
    ),
    (expect.no_denials(), traj(READ_A), True, "no tool call was denied (examined 1 tool call)"),
    (
        expect.no_denials(),
        traj(denials=[tr.Denial("run_command", {"command": "rm -rf /"}, "refused", "rm -rf")]),
        False,
        "1 tool call(s) denied: run_command(command='rm -rf /') by rm -rf",
    ),
]


@pytest.mark.parametrize("grader, trajectory, passed, reason", CASES, ids=[re.sub(r" at 0x[0-9a-f]+", "", f"{c[0]!r}-{c[2]}") for c in CASES])
def test_trajectory_grader(grader, trajectory: tr.Trajectory, passed: bool, reason: str | None) -> None:
    [verdict] = tr.check([grader], tr.Run(output="done", trajectory=trajectory))
    assert verdict.passed is passed, verdict.reason
    if reason is not None:
        assert verdict.reason == reason
    assert verdict.kind == "trajectory"


def test_the_issue_example_reason() -> None:
    [verdict] = tr.check(
        [expect.called("read_file", args={"path": "a.txt"})], tr.Run("x", trajectory=traj(READ_B, READ_C))
    )
    assert verdict.grader == "called('read_file', args={'path': 'a.txt'})"
    assert f"{verdict.grader}: {verdict.reason}" == (
        "called('read_file', args={'path': 'a.txt'}): read_file was called 2 times, never with path='a.txt' "
        "(saw path='b.txt', path='c.txt')"
    )


def test_calls_showing_several_arguments_each_are_kept_apart() -> None:
    calls = [("read_file", {"path": "b.txt", "mode": "r"}), ("read_file", {"path": "c.txt", "mode": "rb"})]
    [verdict] = tr.check(
        [expect.called("read_file", args={"path": "a.txt", "mode": "r"})], tr.Run("x", trajectory=traj(*calls))
    )
    assert verdict.reason.endswith("(saw path='b.txt', mode='r'; path='c.txt', mode='rb')")


def test_called_in_order_with_arguments_shows_the_arguments_seen() -> None:
    [verdict] = tr.check(
        [expect.called_in_order([("read_file", {"path": "c.txt"}), ("read_file", {"path": "b.txt"})])],
        tr.Run("x", trajectory=traj(READ_B, READ_C)),
    )
    assert verdict.reason == (
        "expected read_file(path='c.txt') -> read_file(path='b.txt') in order; read_file(path='b.txt') never came "
        "after read_file(path='c.txt') (saw read_file(path='b.txt') -> read_file(path='c.txt'))"
    )


@pytest.mark.parametrize(
    ("mode", "calls", "reason_start"),
    [
        ("subset", "LIST READ_A READ_B", "not in the reference: read_file(path='b.txt') (2 of 3 calls matched"),
        ("superset", "LIST", "never made: read_file(path='a.txt') (1 of 1 calls matched"),
        (
            "unordered",
            "READ_B LIST",
            "not in the reference: read_file(path='b.txt'); never made: read_file(path='a.txt') (1 of 2 calls",
        ),
    ],
)
def test_trajectory_matches_names_the_calls_that_differ(mode: str, calls: str, reason_start: str) -> None:
    actual = [globals()[name] for name in calls.split()]
    [verdict] = tr.check([expect.trajectory_matches(REFERENCE, mode=mode)], tr.Run("x", trajectory=traj(*actual)))
    assert not verdict.passed and verdict.reason.startswith(reason_start), verdict.reason


REFERENCE = [("list_dir", {"path": "."}), ("read_file", {"path": "a.txt"})]

MATCH_CASES = [
    # mode, args, actual calls, passed
    ("strict", "exact", [LIST, READ_A], True),
    ("strict", "exact", [READ_A, LIST], False),
    ("strict", "exact", [LIST, READ_B], False),
    ("strict", "ignore", [LIST, READ_B], True),
    ("strict", "exact", [LIST, READ_A, READ_B], False),
    ("unordered", "exact", [READ_A, LIST], True),
    ("unordered", "exact", [READ_A, LIST, READ_B], False),
    ("unordered", "ignore", [READ_B, LIST], True),
    ("subset", "exact", [READ_A], True),  # nothing outside the reference
    ("subset", "exact", [READ_A, WRITE], False),
    ("superset", "exact", [WRITE, READ_A, LIST], True),  # every reference call made, extra allowed
    ("superset", "exact", [READ_A], False),
    ("strict", "superset", [LIST, ("read_file", {"path": "a.txt", "encoding": "utf-8"})], True),
    ("strict", "subset", [LIST, ("read_file", {"path": "a.txt", "encoding": "utf-8"})], False),
    ("strict", "subset", [("list_dir", {}), READ_A], True),
]


@pytest.mark.parametrize("mode, args, calls, passed", MATCH_CASES)
def test_trajectory_matches(mode: str, args: str, calls: list, passed: bool) -> None:
    [verdict] = tr.check([expect.trajectory_matches(REFERENCE, mode=mode, args=args)], tr.Run("x", trajectory=traj(*calls)))
    assert verdict.passed is passed, verdict.reason


def test_trajectory_matches_reason_names_the_first_difference() -> None:
    [verdict] = tr.check([expect.trajectory_matches(REFERENCE)], tr.Run("x", trajectory=traj(LIST, READ_B)))
    assert verdict.reason == (
        "call 2 was read_file(path='b.txt'), expected read_file(path='a.txt') "
        "(saw list_dir(path='.'), read_file(path='b.txt'))"
    )


def test_trajectory_matches_rejects_bad_modes() -> None:
    with pytest.raises(ValueError, match="mode must be one of"):
        expect.trajectory_matches(REFERENCE, mode="fuzzy")
    with pytest.raises(ValueError, match="args must be one of"):
        expect.trajectory_matches(REFERENCE, args="loose")


@pytest.mark.parametrize("pattern, name, passed", [
    ("a.b", "a.b", True), ("a.b", "aXb", False),  # no glob characters: the name itself, "." included
    ("read_[fg]ile", "read_gile", True), ("read_[fg]ile", "read_[fg]ile", False),  # a glob class
    ("read_[", "read_[", True),  # an unclosed "[" is a plain character to fnmatch
    ("lookup", "lookup_all", False), ("look*", "lookup_all", True), ("looku?", "lookup", True),
])
def test_called_matches_names_as_fnmatch_does(pattern: str, name: str, passed: bool) -> None:
    [verdict] = tr.check([expect.called(pattern)], traj((name, {})))
    assert verdict.passed is passed, verdict.reason


def test_called_shows_an_argument_value_as_it_is_when_grading() -> None:
    # a mutable expected value is shown as it is at grading time, every time (only scalars are formatted once)
    wanted = ["a"]
    grader = expect.called("tag", args={"names": wanted})
    assert tr.check([grader], traj(("tag", {"names": ["a"]})))[0].reason == "tag was called 1 time with names=['a']"
    wanted.append("b")
    [verdict] = tr.check([grader], traj(("tag", {"names": ["a", "b"]})))
    assert verdict.passed and verdict.reason == "tag was called 1 time with names=['a', 'b']"
    [verdict] = tr.check([grader], traj(("tag", {"names": ["a"]})))
    assert not verdict.passed and verdict.reason == "tag was called 1 time, never with names=['a', 'b'] (saw names=['a'])"
