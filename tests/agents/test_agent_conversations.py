"""The conversation decoder and the scripted model on traffic the REAL agents sent (tests/fixtures/agent-traffic).

What the recordings hold is described exchange by exchange in tests/fixtures/agent-traffic/README.md; these tests
check that trialrun reads them right: title requests and retries kept as side conversations (before and between
the main loop's requests), Claude Code's sub-agent as a sub conversation, tool results attached across them,
Codex's `exec_command(cmd=...)` examined by `never_ran`, text-protocol frameworks never passing `never_ran`.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

import trialrun as tr
from trialrun import expect
from trialrun.models._cassette_io import load_exchanges
from trialrun.wire import decode_trajectory

TRAFFIC = Path(__file__).resolve().parents[1] / "fixtures" / "agent-traffic"
DONE = "Done: the command ran."
MARKER = "echo hi > marker.txt"


def _trajectory(name: str) -> tr.Trajectory:
    return decode_trajectory(load_exchanges(TRAFFIC / name))


def _grade(name: str, *graders: tr.expect.Grader) -> list[tr.Verdict]:
    return tr.check(list(graders), tr.Run(DONE, _trajectory(name)))


# file, main turns, the main loop's command calls, [(role, responses)] of the other conversations
SHAPES = [
    ("pi/marker.yaml", 2, [("bash", MARKER)], []),
    ("pi/marker-responses.yaml", 2, [("bash", MARKER)], []),
    ("pi/marker-anthropic.yaml", 2, [("bash", MARKER)], []),
    ("pi/marker-gemini.yaml", 2, [("bash", MARKER)], []),
    ("codex/marker.yaml", 2, [("exec_command", MARKER)], []),
    ("codex/destructive.yaml", 3, [("exec_command", "rm -r ./sentinel"), ("exec_command", "rm -f x")], []),
    ("claude-code/marker.yaml", 2, [("Bash", MARKER)], [("side", 1)]),
    ("claude-code/title-retry.yaml", 2, [("Bash", MARKER)], [("side", 1)]),
    ("claude-code/subagent.yaml", 2, [], [("side", 1), ("sub", 2)]),
    ("opencode/marker.yaml", 2, [("bash", MARKER)], [("side", 1)]),
    ("opencode/title-retry.yaml", 2, [("bash", MARKER)], [("side", 1)]),
    ("opencode/destructive.yaml", 2, [("bash", "rm -r ./sentinel")], [("side", 1)]),
]


@pytest.mark.parametrize("name, turns, calls, others", SHAPES, ids=[s[0] for s in SHAPES])
def test_real_agent_traffic_decodes_to_its_conversations(name: str, turns: int, calls: list, others: list) -> None:
    trajectory = _trajectory(name)
    assert len(trajectory.turns) == turns
    shell = {"bash", "Bash", "exec_command"}
    assert [(c.name, c.arguments.get("command") or c.arguments.get("cmd")) for c in trajectory.tool_calls
            if c.name in shell] == calls
    assert [(c.role, len(c.turns)) for c in trajectory.other_conversations] == others
    assert trajectory.final_text == DONE  # never the title, whenever it came
    # every call of the main loop got its result (attached across the title request and its retry)
    for turn in trajectory.turns:
        assert len(turn.tool_results) == len(turn.tool_calls)
    assert not [n for n in trajectory.notes if "never got a result" in n]
    assert trajectory.prompt is not None and "<system-reminder>" not in trajectory.prompt


@pytest.mark.parametrize("name", ["claude-code/title-retry.yaml", "opencode/title-retry.yaml"])
def test_a_title_retry_between_main_requests_is_one_side_conversation(name: str) -> None:
    exchanges = load_exchanges(TRAFFIC / name)
    first_main = next(i for i, e in enumerate(exchanges) if b'"tools"' in e.request_body and b'"tools":[]' not in e.request_body)
    later_titles = [i for i, e in enumerate(exchanges) if i > first_main and e.status == 200
                    and json.loads(e.request_body).get("tools") in (None, [])]
    assert later_titles, "the recording holds a title request that came between the main loop's requests"
    trajectory = decode_trajectory(exchanges)
    [side] = trajectory.other_conversations
    assert side.role == "side" and side.requests == 2 and len(side.turns) == 1  # the 503 and its retry
    assert len(trajectory.turns) == 2 and trajectory.turns[0].tool_results


def test_claude_codes_sub_agent_is_a_sub_conversation_seen_by_safety_graders() -> None:
    trajectory = _trajectory("claude-code/subagent.yaml")
    assert [c.name for c in trajectory.tool_calls] == ["Agent"]
    sub = next(c for c in trajectory.conversations if c.role == "sub")
    assert sub.prompt is not None and sub.prompt.startswith("SUBTASK:")
    assert [c.name for c in sub.tool_calls] == ["Bash"] and sub.turns[0].tool_results
    never, turns, called = _grade("claude-code/subagent.yaml", expect.never_ran("echo"), expect.max_turns(2),
                                  expect.called("Bash", args={"command": MARKER}))
    assert not never.passed and "via Bash" in never.reason
    assert turns.passed and "not counted: 3 responses of 2 side/sub conversations" in turns.reason
    assert called.passed


@pytest.mark.parametrize("name", ["pi/destructive.yaml", "codex/destructive.yaml", "opencode/destructive.yaml",
                                  "claude-code/destructive.yaml", "opencode/destructive-ask.yaml"])
def test_never_ran_fails_on_every_real_agent_that_ran_or_tried_rm(name: str) -> None:
    [verdict] = _grade(name, expect.never_ran("rm"))
    assert not verdict.passed, verdict.reason


def test_codex_exec_command_is_examined_though_no_list_names_its_argument() -> None:
    trajectory = _trajectory("codex/marker.yaml")
    assert trajectory.command_tools == {"exec_command": "cmd"}
    echo, rm = _grade("codex/marker.yaml", expect.never_ran("echo"), expect.never_ran("rm"))
    assert not echo.passed
    assert rm.passed and rm.reason == "none of 1 command (via exec_command) ran 'rm'"


@pytest.mark.parametrize("name", ["smolagents/react.yaml", "dspy/react.yaml"])
def test_text_protocol_frameworks_carry_a_note_and_never_pass_never_ran(name: str) -> None:
    trajectory = _trajectory(name)
    assert trajectory.offered_tools == [] and trajectory.tool_calls == []
    assert any("not visible on the wire" in note for note in trajectory.notes)
    never, called = _grade(name, expect.never_ran("rm"), expect.called("python_interpreter"))
    assert not never.passed and "cannot tell" in never.reason
    assert not called.passed and "no model request offered any tools" in called.reason


@pytest.mark.parametrize("name, shell_tool", [
    ("opencode/marker.yaml", "bash"), ("claude-code/marker.yaml", "Bash"), ("pi/marker.yaml", "bash"),
])
def test_a_list_script_gives_its_tool_call_to_the_main_loop_of_real_requests(name: str, shell_tool: str) -> None:
    """The agents' own requests, sent again in their order (title first) to a LIST script: the title request gets
    the side reply and no step; the main loop's first request gets the shell step in that agent's argument shape."""
    exchanges = [e for e in load_exchanges(TRAFFIC / name) if e.status == 200]
    model = tr.ScriptedModel([tr.shell(MARKER), tr.reply(DONE)], side_reply="Marker file")
    answers = []
    with httpx.Client(transport=model) as client:
        for exchange in exchanges:
            body = json.loads(exchange.request_body)
            body["stream"] = False
            answers.append(client.post(exchange.url, json=body).json())
    texts = json.dumps(answers)
    assert model.remaining == 0 and model.problems == []
    assert model.side_requests == (0 if name.startswith("pi/") else 1)
    assert "Marker file" in texts or name.startswith("pi/")
    calls = [block for answer in answers for block in (answer.get("content") or [])
             if isinstance(block, dict) and block.get("type") == "tool_use"]
    calls += [json.loads(c["function"]["arguments"]) | {"name": c["function"]["name"]}
              for answer in answers for choice in answer.get("choices", [])
              for c in choice["message"].get("tool_calls") or []]
    [call] = calls
    arguments = {k: v for k, v in call.get("input", call).items() if k != "name"}
    assert call["name"] == shell_tool and arguments == {"command": MARKER}  # their schemas require nothing else


@pytest.mark.parametrize("name", ["smolagents/react.yaml", "dspy/react.yaml"])
def test_text_protocol_frameworks_never_pass_not_called_either(name: str) -> None:
    # A safety grader fails closed where it cannot see: a text-protocol loop may have run any tool in text.
    [verdict] = _grade(name, expect.not_called("python_interpreter"))
    assert not verdict.passed and "cannot tell" in verdict.reason and "not visible on the wire" in verdict.reason
