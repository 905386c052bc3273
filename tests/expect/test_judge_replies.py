"""The LLM judge's reply is read as the first number in it, and only 0, 0.25 or 0.5 count, however written:
"0.50" is 0.5 (not 0), and "0.75" or "1" is a judge that left the scale, never silently rounded."""

from __future__ import annotations

import asyncio

import pytest

import trialrun as tr
from trialrun.suite.judge import llm_judge, parse_quality
from trialrun.trajectory import Run, Trajectory, Turn


@pytest.mark.parametrize(
    "reply, level",
    [
        ("0.50", 0.5),
        ("0.250", 0.25),
        ("0.5", 0.5),
        ("0.25", 0.25),
        ("0", 0.0),
        ("0.0", 0.0),
        ("0.00", 0.0),
        (".5", 0.5),
        ("Score: 0.50", 0.5),
        ("0.25 (partially correct: it names Sam but not the day)", 0.25),
        ("The response is fully correct.\n\n0.5", 0.5),
    ],
)
def test_each_way_of_writing_a_level_reads_as_that_level(reply: str, level: float) -> None:
    assert parse_quality(reply) == level


@pytest.mark.parametrize("reply, number", [("0.75", "0.75"), ("1", "1"), ("0.3", "0.3"), ("1.0", "1.0"), ("-0.5", "-0.5")])
def test_a_number_off_the_scale_is_an_error_naming_it(reply: str, number: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_quality(reply)
    assert str(raised.value) == f"the judge answered {number}; expected 0, 0.25 or 0.5"


def test_the_error_quotes_a_longer_reply() -> None:
    with pytest.raises(ValueError, match=r"^the judge answered 1 \(reply: 'Score: 1 out of 1'\); expected 0, 0.25 or 0.5$"):
        parse_quality("Score: 1 out of 1")


def test_a_reply_without_a_number_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"^the judge answered 'fully correct', with no number; expected 0, 0.25 or 0.5$"):
        parse_quality("fully correct")


def _judged(reply: str) -> float:
    judge = llm_judge(lambda: tr.ScriptedModel([tr.reply(reply)]))
    run = Run("Sam on Tuesday, buy milk", Trajectory(turns=[Turn(text="Sam on Tuesday, buy milk")]), status="completed")
    return asyncio.run(judge("Mentions Sam and milk", "Sam on Tuesday, buy milk", run))


def test_the_judge_over_the_wire_reads_0_50_as_half() -> None:
    assert _judged("0.50") == 0.5
    assert _judged("0.250") == 0.25


def test_the_judge_over_the_wire_refuses_0_75() -> None:
    with pytest.raises(ValueError, match="the judge answered 0.75; expected 0, 0.25 or 0.5"):
        _judged("0.75")
