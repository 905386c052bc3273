"""Outcome graders: pass, fail and the reason text, table-driven."""

from __future__ import annotations

import re

import pytest

import trialrun as tr
from trialrun import expect

CASES = [
    # grader, output, passed, reason
    (expect.equals(42), 42, True, "output equals 42"),
    (expect.equals(42), 41, False, "output was 41, expected 42"),
    (expect.equals({"a": 1}), {"a": 1}, True, "output equals {'a': 1}"),
    (expect.contains("hello"), "well hello there", True, "output contains 'hello'"),
    (expect.contains("hello"), "goodbye", False, "output does not contain 'hello'; output was 'goodbye'"),
    (expect.contains("Hello", case_sensitive=False), "hello", True, "output contains 'Hello'"),
    (expect.contains("x"), None, False, "output does not contain 'x'; output was ''"),
    (expect.contains("value"), {"key": "value"}, True, "output contains 'value'"),
    (expect.not_contains("sk-"), "all clear", True, "output does not contain 'sk-'"),
    (expect.not_contains("sk-"), "key is sk-123", False, "output contains 'sk-' at character 7: ...key is sk-123..."),
    (expect.matches(r"\d+ files"), "found 12 files", True, "output matches /\\d+ files/ at '12 files'"),
    (expect.matches(r"^done$"), "not done", False, "output does not match /^done$/; output was 'not done'"),
    (expect.matches(re.compile("DONE", re.I)), "done", True, "output matches /DONE/ at 'done'"),
    (expect.satisfies(lambda o: len(o) < 5, "is short"), "tiny", True, "output satisfies: is short"),
    (expect.satisfies(lambda o: len(o) < 5, "is short"), "too long", False, "output does not satisfy: is short; output was 'too long'"),
]

ENDED = [
    (expect.ended(), tr.Run("x"), True, "the run ended with status 'completed'"),
    (expect.ended("completed"), tr.Run("x", status="max_turns", error="stopped after 4 turns"), False,
     "the run ended with status 'max_turns': stopped after 4 turns; expected 'completed'"),
    (expect.ended("max_turns", "cost_limit"), tr.Run("x", status="cost_limit"), True, "the run ended with status 'cost_limit'"),
]


@pytest.mark.parametrize("grader, run, passed, reason", ENDED)
def test_ended(grader, run: tr.Run, passed: bool, reason: str) -> None:
    [verdict] = tr.check([grader], run)
    assert (verdict.passed, verdict.reason, verdict.kind) == (passed, reason, "outcome")


@pytest.mark.parametrize("grader, output, passed, reason", CASES, ids=[f"{c[0]!r}-{c[2]}" for c in CASES])
def test_outcome_grader(grader, output, passed: bool, reason: str) -> None:
    [verdict] = tr.check([grader], tr.Run(output=output))
    assert (verdict.passed, verdict.reason) == (passed, reason)
    assert verdict.grader == repr(grader) and verdict.kind == "outcome"


def test_long_outputs_are_clipped_in_reasons() -> None:
    [verdict] = tr.check([expect.contains("needle")], "x" * 1000)
    assert len(verdict.reason) < 200 and "more" not in verdict.reason and "(+" in verdict.reason


def test_check_takes_a_plain_output_or_a_run() -> None:
    verdicts = tr.check([expect.contains("x"), expect.max_turns(3)], tr.Run("x", tr.Trajectory([tr.Turn(text="x")])))
    assert [v.passed for v in verdicts] == [True, True]
    # a plain output has no trajectory: a trajectory grader refuses to pass on what nobody observed
    outcome, turns = tr.check([expect.contains("x"), expect.max_turns(3)], "x")
    assert outcome.passed and not turns.passed and "no model traffic was observed" in turns.reason
    assert tr.check([expect.equals("x")], "x")[0].passed


def test_check_runs_an_async_grader_from_inside_a_running_loop() -> None:
    import asyncio

    import trialrun as tr

    async def judged(run: tr.Run, ctx: object) -> bool:
        await asyncio.sleep(0)
        return run.output == "hello"

    async def main() -> list[tr.Verdict]:
        return tr.check([judged], "hello")  # the synchronous API, called from async code

    [verdict] = asyncio.run(main())
    assert verdict.passed and verdict.reason == "returned True"
