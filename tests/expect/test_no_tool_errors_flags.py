"""no_tool_errors passes only on error flags that mean something: it fails closed where nothing can tell.

OpenAI Chat Completions and Responses tool results carry no error flag: a trajectory read off those wires cannot say
whether a tool failed unless something read the agent's own result format (a preset does for its agent; see
tests/agents/test_refusal_forms.py). Anthropic's `is_error` and Gemini's `error` response are flags; the reference
agent knows its own. The recordings are real agents' traffic (tests/fixtures/agent-traffic).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import trialrun as tr
from trialrun import expect
from trialrun.models._cassette_io import load_exchanges
from trialrun.wire import decode_trajectory

TRAFFIC = Path(__file__).resolve().parents[1] / "fixtures" / "agent-traffic"


def _verdict(grader: tr.expect.Grader, name: str) -> tr.Verdict:  # type: ignore[name-defined]
    [verdict] = tr.check([grader], tr.Run(trajectory=decode_trajectory(load_exchanges(TRAFFIC / name))))
    return verdict


@pytest.mark.parametrize(("name", "wire"), [("pi/tool-error.yaml", "OpenAI Chat Completions"),
                                            ("pi/tool-error-responses.yaml", "OpenAI Responses"),
                                            ("pi/marker.yaml", "OpenAI Chat Completions"),
                                            ("codex/tool-error.yaml", "OpenAI Responses")])
def test_over_a_wire_without_an_error_flag_it_fails_closed_saying_why(name: str, wire: str) -> None:
    # pi's read of a missing file failed, and so did `ls`: read off the wire alone, nothing says so
    verdict = _verdict(expect.no_tool_errors(), name)
    assert not verdict.passed
    assert verdict.reason.startswith("cannot tell whether ")
    assert f"the wire ({wire}) has no error flag" in verdict.reason and "pass is_error=" in verdict.reason


@pytest.mark.parametrize("name", ["pi/tool-error-anthropic.yaml", "pi/tool-error-gemini.yaml"])
def test_over_a_wire_with_an_error_flag_the_flag_decides(name: str) -> None:
    verdict = _verdict(expect.no_tool_errors(), name)
    assert not verdict.passed and verdict.reason.startswith("2 tool result(s) were errors: read: ENOENT")


def test_anthropic_results_without_the_flag_pass_naming_what_was_examined() -> None:
    verdict = _verdict(expect.no_tool_errors(), "pi/marker-anthropic.yaml")
    assert verdict.passed and verdict.reason == "none of 1 tool result was an error"


def test_is_error_says_how_to_read_what_the_wire_cannot() -> None:
    failed = lambda call, result: "Command exited with code" in result.content or result.content.startswith("ENOENT")  # noqa: E731
    verdict = _verdict(expect.no_tool_errors(is_error=failed), "pi/tool-error.yaml")
    assert not verdict.passed and "2 tool result(s) were errors: read: ENOENT" in verdict.reason
    verdict = _verdict(expect.no_tool_errors(is_error=failed), "pi/marker.yaml")
    assert verdict.passed and verdict.reason == "none of 1 tool result was an error (1 result read by is_error)"
    assert verdict.grader == "no_tool_errors(is_error=...)"


def test_a_trajectory_built_in_code_keeps_the_flags_it_was_given() -> None:
    turn = tr.Turn(tool_calls=[tr.ToolCall("read_file", {"path": "a"}, "c1")],
                   tool_results=[tr.ToolResult("c1", "text")])
    [verdict] = tr.check([expect.no_tool_errors()], tr.Run(trajectory=tr.Trajectory([turn])))
    assert verdict.passed


@pytest.mark.parametrize("fails", [False, True])
def test_the_reference_agent_over_openai_chat_keeps_its_own_flag(fails: bool) -> None:
    def read_notes(topic: str) -> str:
        """Read the notes on a topic."""
        if fails:
            raise tr.ToolError("no notes on " + topic)
        return "Buy milk."

    model = tr.ScriptedModel([tr.tool_call("read_notes", topic="shopping"), tr.reply("done")])
    run = tr.Agent(model, api="openai-chat", tools=[tr.tool(read_notes)]).run("what is on my list?")
    [verdict] = tr.check([expect.no_tool_errors()], run)
    assert verdict.passed is not fails, verdict.reason
    # what the model was shown: the agent's own result (the wire has no flag to carry it)
    shown = model.requests[-1].messages[-1].tool_results[0].content
    assert ("no notes on shopping" in shown) is fails
