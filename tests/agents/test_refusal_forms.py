"""Each preset reads what its agent's calls came to by their FORM, from the raw recordings of the real agents.

For every recorded file of a real agent (tests/fixtures/agent-traffic, see its README), the trajectory read off the
wire goes through the agent's preset (`interpret`, with the agent's own stdout where the preset reads it: opencode's
`--format json` events) and every tool call's outcome is compared with what really happened, decided outside
trialrun when it was recorded (the files left in the work folder, the agent's own record): ran, ran and FAILED,
REFUSED by the agent's own permission system, or ran with an error flag nobody can tell (`unknown`).

The look-alikes are the point: a command that RAN and printed a refusal sentence word for word (an ISC licence's
"Permission to use, copy, ..."; `echo` or `printf` of each agent's own refusal text; a failed command that prints
one) must be a command that ran, and every refusal (Claude Code's default, plan and dontAsk modes and its deny
rules, opencode's deny rule and its rejected ask, Codex's `rm -f` rejection, its exec-policy rule and its
escalation refusal, a sub-agent's refused call) must be a refusal.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

import trialrun as tr
from trialrun.models._cassette_io import load_exchanges
from trialrun.trajectory import Run, ToolCall, ToolResult, Trajectory
from trialrun.wire import decode_trajectory

TRAFFIC = Path(__file__).resolve().parents[1] / "fixtures" / "agent-traffic"
LICENSE = "cat LICENSE"
RM = "rm -r ./sentinel"
MARKER = "echo hi > marker.txt"
PYTHON_WRITE = "python3 -c \"open('made.txt', 'w').close()\""

#: file -> (tool, its main argument, outcome) for every call, in the order the calls were made (all conversations).
#: ran: it ran and did not fail; failed: it ran (or its tool worked on it) and failed; refused: the agent's own
#: permission system refused it; unknown: it ran, and nothing can tell whether it failed.
OUTCOMES: dict[str, list[tuple[str, str, str]]] = {
    "pi/marker.yaml": [("bash", MARKER, "ran")],
    "pi/marker-responses.yaml": [("bash", MARKER, "ran")],
    "pi/marker-anthropic.yaml": [("bash", MARKER, "ran")],
    "pi/marker-gemini.yaml": [("bash", MARKER, "ran")],
    "pi/destructive.yaml": [("bash", RM, "ran")],
    "pi/lookalike.yaml": [("bash", LICENSE, "ran")],
    **{f"pi/tool-error{api}.yaml": [("read", "missing.txt", "failed"), ("bash", "ls missing.txt", "failed")]
       for api in ("", "-responses", "-anthropic", "-gemini")},
    "codex/marker.yaml": [("exec_command", MARKER, "ran")],
    "codex/destructive.yaml": [("exec_command", RM, "ran"), ("exec_command", "rm -f x", "refused")],
    "codex/refuse-rule.yaml": [("exec_command", RM, "refused")],  # an exec-policy prefix_rule forbids rm
    "codex/escalation.yaml": [("exec_command", RM, "refused")],  # sandbox_permissions require_escalated, never
    "codex/sandbox-read-only.yaml": [("exec_command", MARKER, "failed")],  # ran; the sandbox failed its write
    "codex/subagent.yaml": [("spawn_agent", "SUBTASK: run the commands you are given, using your shell tool.", "ran"),
                            ("wait_agent", "", "ran"), ("exec_command", MARKER, "ran")],
    "codex/subagent-refused.yaml": [
        ("spawn_agent", "SUBTASK: run the commands you are given, using your shell tool.", "ran"),
        ("wait_agent", "", "ran"), ("exec_command", "rm -f x", "refused")],
    "codex/lookalike.yaml": [("exec_command", LICENSE, "ran"), ("exec_command", "echo 'exec_command failed:", "ran"),
                             ("exec_command", "echo 'approval policy is Never;", "ran")],
    # apply_patch as the whole command: Codex applies it itself and answers with a header of its own
    "codex/patch.yaml": [("exec_command", "apply_patch <<'EOF'", "ran"), ("exec_command", "apply_patch <<'EOF'", "failed")],
    "codex/tool-error.yaml": [("exec_command", "cat missing.txt", "failed"), ("exec_command", "ls missing.txt", "failed")],
    "claude-code/marker.yaml": [("Bash", MARKER, "ran")],
    "claude-code/title-retry.yaml": [("Bash", MARKER, "ran")],
    "claude-code/destructive.yaml": [("Bash", RM, "refused")],  # default mode: its working-folder check
    "claude-code/subagent.yaml": [("Agent", "SUBTASK: create the marker file", "ran"), ("Bash", MARKER, "ran")],
    "claude-code/refuse-default.yaml": [("Bash", PYTHON_WRITE, "refused"), ("Write", "made2.txt", "refused")],
    "claude-code/refuse-plan.yaml": [("Bash", PYTHON_WRITE, "refused"), ("Write", "made2.txt", "refused")],
    "claude-code/refuse-dontask.yaml": [("Bash", RM, "refused")],
    "claude-code/refuse-deny.yaml": [("Bash", RM, "refused")],  # permissions.deny Bash(rm:*)
    "claude-code/subagent-refused.yaml": [("Agent", "SUBTASK: run the commands", "ran"), ("Bash", RM, "refused")],
    "claude-code/lookalike.yaml": [
        ("Bash", LICENSE, "ran"), ("Bash", "echo 'rm in ", "ran"), ("Bash", "echo 'This command requires approval'", "ran"),
        ("Bash", "echo 'Permission to use Bash", "ran"), ("Bash", "echo 'Claude requested permissions", "ran"),
        ("Read", "LICENSE", "ran"),
        ("Bash", "echo 'This command requires approval'; exit 1", "refused"),  # a compound command, refused itself
        ("Bash", "cat 'This command requires approval'", "failed")],  # failed, printing a refusal sentence
    "claude-code/tool-error.yaml": [("Read", "missing.txt", "failed"), ("Bash", "ls missing.txt", "failed")],
    # recorded before the preset read opencode's event stream: whether its bash commands failed is unknown
    "opencode/marker.yaml": [("bash", MARKER, "unknown")],
    "opencode/title-retry.yaml": [("bash", MARKER, "unknown")],
    "opencode/destructive.yaml": [("bash", RM, "unknown")],
    "opencode/destructive-ask.yaml": [("bash", RM, "refused")],  # an ask, auto-rejected: no result on the wire
    "opencode/refuse-deny.yaml": [("bash", RM, "refused")],  # a deny rule
    "opencode/subagent-refused.yaml": [("task", "SUBTASK: run the commands", "ran"), ("bash", RM, "refused")],
    "opencode/lookalike.yaml": [("bash", LICENSE, "ran"), ("bash", "echo 'The user rejected permission", "ran"),
                                ("read", "LICENSE", "ran"), ("bash", "printf '%s' 'The user has specified a rule", "ran")],
    "opencode/tool-error.yaml": [("read", "missing.txt", "failed"), ("bash", "ls missing.txt", "failed")],
}

_MAIN_ARGUMENTS = ("cmd", "command", "file_path", "filePath", "path", "prompt", "message")


def _agent_files() -> list[str]:
    return sorted(str(p.relative_to(TRAFFIC)) for p in TRAFFIC.glob("*/*.yaml")
                  if p.parent.name in ("pi", "codex", "claude-code", "opencode"))


def test_every_recording_of_a_real_agent_has_its_outcomes_pinned() -> None:
    assert sorted(OUTCOMES) == _agent_files()


@functools.cache
def _trajectory(name: str) -> Trajectory:
    return decode_trajectory(load_exchanges(TRAFFIC / name))


def _stdout(name: str) -> str:
    path = (TRAFFIC / name).with_suffix(".stdout")
    return path.read_text() if path.exists() else ""


def _read(name: str, agent_path: Any) -> Run:
    """The recording read as its preset reads a run of its agent (the trajectory decoded afresh: interpret adds)."""
    label = name.split("/")[0]
    trajectory = decode_trajectory(load_exchanges(TRAFFIC / name))
    run = Run(output=None, trajectory=trajectory)
    tr.agents.preset(label, path=agent_path(label)).interpret(run, _stdout(name))
    return run


def _paired(trajectory: Trajectory) -> list[tuple[ToolCall, ToolResult | None]]:
    """Every call with its result: by call id, or (Gemini has no ids) in order within its turn."""
    pairs = []
    for turn in trajectory.all_turns:
        loose = [r for r in turn.tool_results if r.call_id is None]
        for call in turn.tool_calls:
            if call.id is not None:
                pairs.append((call, trajectory.result_for(call)))
            else:
                pairs.append((call, loose.pop(0) if loose else None))
    return pairs


def _outcome(trajectory: Trajectory, call: ToolCall, result: ToolResult | None) -> str:
    if any(d.source == "agent" and d.call_id == call.id and (call.id or d.tool == call.name) for d in trajectory.denials):
        return "refused"
    if result is None:
        return "unanswered"
    if result.call_id is not None and result.call_id in trajectory.error_flags_unknown:
        return "unknown"
    return "failed" if result.is_error else "ran"


def _main(call: ToolCall) -> str:
    value = next((call.arguments[k] for k in _MAIN_ARGUMENTS if isinstance(call.arguments.get(k), str)), "")
    return str(value)


@pytest.mark.parametrize("name", sorted(OUTCOMES))
def test_every_call_of_a_real_agent_is_read_as_what_it_came_to(name: str, agent_path: Any) -> None:
    run = _read(name, agent_path)
    trajectory = run.trajectory
    got = [(call.name, _main(call), _outcome(trajectory, call, result)) for call, result in _paired(trajectory)]
    expected = OUTCOMES[name]
    assert [(tool, outcome) for tool, _, outcome in got] == [(tool, outcome) for tool, _, outcome in expected], got
    for (_, value, _), (_, start, _) in zip(got, expected):
        assert value.startswith(start), (value, start)
    # a command recorded as run is exactly one that was not refused
    shell = {"pi": "bash", "codex": "exec_command", "claude-code": "Bash", "opencode": "bash"}[name.split("/")[0]]
    assert trajectory.commands == [value for tool, value, outcome in got if tool == shell and outcome != "refused"]
    for denial in trajectory.denials:
        assert denial.source == "agent" and denial.rule and denial.rule.startswith(name.split("/")[0] + ": ")


@pytest.mark.parametrize("name", sorted(OUTCOMES))
def test_no_tool_errors_and_no_denials_give_the_verdicts_the_outcomes_call_for(name: str, agent_path: Any) -> None:
    run = _read(name, agent_path)
    outcomes = [outcome for _, _, outcome in OUTCOMES[name]]
    [errors, denials] = tr.check([tr.expect.no_tool_errors(), tr.expect.no_denials()], run)
    assert denials.passed == ("refused" not in outcomes), denials.reason
    if "failed" in outcomes or "refused" in outcomes and any(r.call_id for r in run.trajectory.all_tool_results):
        assert not errors.passed and "were errors" in errors.reason, errors.reason
    elif "unknown" in outcomes:
        assert not errors.passed and errors.reason.startswith("cannot tell whether"), errors.reason
        assert "has no error flag" in errors.reason and "opencode" in errors.reason
    else:
        assert errors.passed, errors.reason


def test_the_raw_recordings_hold_what_the_outcomes_say() -> None:
    """The truth, from the raw request bodies, not trialrun's decoder: each look-alike's result really is the
    output of a command that ran (Codex's header, no error flag) and holds the refusal words; each refusal's is
    the agent's own text in the place of one."""
    def results(name: str) -> dict[str, Any]:
        last = json.loads(load_exchanges(TRAFFIC / name)[-1].request_body)
        found: dict[str, Any] = {}
        for item in last.get("input") or last.get("messages") or []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                found[item["call_id"]] = item["output"]
            if isinstance(item, dict) and item.get("role") == "tool":
                found[item["tool_call_id"]] = item["content"]
            for block in item.get("content") or [] if isinstance(item, dict) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    found[block["tool_use_id"]] = (block.get("is_error"), block.get("content"))
        return found

    codex = list(results("codex/lookalike.yaml").values())
    assert all(text.startswith("Chunk ID: ") and "Process exited with code 0" in text for text in codex)
    assert "rm -f style commands are not permitted" in codex[1] and "reject command" in codex[2]
    [refused] = results("codex/escalation.yaml").values()
    assert refused.startswith("approval policy is Never; reject command")
    claude = list(results("claude-code/lookalike.yaml").values())
    assert [bool(flag) for flag, _ in claude] == [False, False, False, False, False, False, True, True]
    assert "Permission to use, copy" in claude[0][1] and claude[2][1] == "This command requires approval"
    opencode = list(results("opencode/lookalike.yaml").values())
    assert opencode[3].startswith("The user has specified a rule which prevents you")
    [denied] = results("opencode/refuse-deny.yaml").values()
    assert denied.startswith("The user has specified a rule which prevents you")  # the same text: only the
    events = [json.loads(line) for line in _stdout("opencode/lookalike.yaml").splitlines()]  # events tell them apart
    assert [e["part"]["state"]["status"] for e in events if e["type"] == "tool_use"] == ["completed"] * 4
    events = [json.loads(line) for line in _stdout("opencode/refuse-deny.yaml").splitlines()]
    assert [e["part"]["state"]["status"] for e in events if e["type"] == "tool_use"] == ["error"]
