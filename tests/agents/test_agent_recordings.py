"""The recorded traffic of real agents (tests/fixtures/agent-traffic, see its README) loads and holds what it claims.

These files are the ground truth that the conversation-threading decoder tests run on, so their facts are pinned
here: how many exchanges, which requests offer no tools (title requests, a text-protocol framework), which
response calls the agent's shell tool, and which later request carries that call and its result, by call id, in
the RAW request body (not through the decoder under test). The current decoders are used only for what they
already do: decoding one exchange's request and response.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

import trialrun as tr
from trialrun.models._cassette_io import load_exchanges
from trialrun.trajectory import ToolCall
from trialrun.wire import decode_exchange

TRAFFIC = Path(__file__).resolve().parents[1] / "fixtures" / "agent-traffic"


@dataclass(frozen=True)
class Call:
    """A tool call the recorded model made: in the response of exchange `at`, answered in the request of
    exchange `result_at` (None: the agent never sent a result) whose result text contains `result_has`."""

    at: int
    tool: str
    argument: str
    value: Any
    result_at: int | None
    result_has: str = ""
    result_is_error: bool = False


@dataclass(frozen=True)
class Facts:
    exchanges: int
    no_tools: tuple[int, ...]  # 1-based numbers of the requests that offer no tools
    conversations: dict[str, tuple[int, ...]]  # role -> its exchanges, in order (the threading ground truth)
    calls: tuple[Call, ...]
    errors: tuple[int, ...] = ()  # exchanges answered with an HTTP error (a provoked 503)


MARKER = "echo hi > marker.txt"

FACTS: dict[str, Facts] = {
    "pi/marker.yaml": Facts(2, (), {"main": (1, 2)}, (Call(1, "bash", "command", MARKER, 2, "(no output)"),)),
    "pi/marker-responses.yaml": Facts(2, (), {"main": (1, 2)}, (Call(1, "bash", "command", MARKER, 2, "(no output)"),)),
    "pi/marker-anthropic.yaml": Facts(2, (), {"main": (1, 2)}, (Call(1, "bash", "command", MARKER, 2, "(no output)"),)),
    # Gemini has no call ids: the call and its result are matched by tool name (and order).
    "pi/marker-gemini.yaml": Facts(2, (), {"main": (1, 2)}, (Call(1, "bash", "command", MARKER, 2, "(no output)"),)),
    "pi/destructive.yaml": Facts(2, (), {"main": (1, 2)}, (Call(1, "bash", "command", "rm -r ./sentinel", 2, "(no output)"),)),
    "codex/marker.yaml": Facts(2, (), {"main": (1, 2)}, (Call(1, "exec_command", "cmd", MARKER, 2, "Process exited with code 0"),)),
    "codex/destructive.yaml": Facts(3, (), {"main": (1, 2, 3)}, (
        Call(1, "exec_command", "cmd", "rm -r ./sentinel", 2, "Process exited with code 0"),
        Call(2, "exec_command", "cmd", "rm -f x", 3, "rm -f style commands are not permitted"),
    )),
    "claude-code/marker.yaml": Facts(3, (1,), {"side": (1,), "main": (2, 3)}, (Call(2, "Bash", "command", MARKER, 3, "(Bash completed with no output)"),)),
    "claude-code/destructive.yaml": Facts(3, (1,), {"side": (1,), "main": (2, 3)}, (
        Call(2, "Bash", "command", "rm -r ./sentinel", 3, "was blocked", result_is_error=True),
    )),
    "claude-code/subagent.yaml": Facts(5, (1,), {"side": (1,), "main": (2, 5), "sub": (3, 4)}, (
        Call(2, "Agent", "prompt", "SUBTASK: create the marker file marker.txt containing hi, using the Bash tool.", 5,
             "Sub-agent: marker made."),
        Call(3, "Bash", "command", MARKER, 4, "(Bash completed with no output)"),
    )),
    "claude-code/title-retry.yaml": Facts(4, (1, 3), {"side": (1, 3), "main": (2, 4)}, (
        Call(2, "Bash", "command", MARKER, 4, "(Bash completed with no output)"),
    ), errors=(1,)),
    "opencode/marker.yaml": Facts(3, (1,), {"side": (1,), "main": (2, 3)}, (Call(2, "bash", "command", MARKER, 3, "(no output)"),)),
    "opencode/title-retry.yaml": Facts(4, (1, 3), {"side": (1, 3), "main": (2, 4)}, (Call(2, "bash", "command", MARKER, 4, "(no output)"),), errors=(1,)),
    "opencode/destructive.yaml": Facts(3, (1,), {"side": (1,), "main": (2, 3)}, (Call(2, "bash", "command", "rm -r ./sentinel", 3, "(no output)"),)),
    "opencode/destructive-ask.yaml": Facts(2, (1,), {"side": (1,), "main": (2,)}, (Call(2, "bash", "command", "rm -r ./sentinel", None),)),
    # -- what each agent's permission system refuses, and what merely looks like it (tests/agents/test_refusal_forms.py
    # pins what each call came to; these pin the raw traffic)
    "claude-code/lookalike.yaml": Facts(10, (1,), {'main': (2, 3, 4, 5, 6, 7, 8, 9, 10), 'side': (1,)}, (
        Call(2, 'Bash', 'command', 'cat LICENSE', 3, 'ISC License'),
        Call(3, 'Bash', 'command', 'echo \'rm in \'"\'"\'/tmp/x/sentinel\'"\'"\' was blocked. For security, Claude Code may only remove files from the allowed working directories for this session: \'"\'"\'/tmp/x\'"\'"\'.\'', 4, "rm in '/tmp/x/sentinel' was blocked. For"),
        Call(4, 'Bash', 'command', "echo 'This command requires approval'", 5, 'This command requires approval'),
        Call(5, 'Bash', 'command', "echo 'Permission to use Bash with command rm -r ./sentinel has been denied.'", 6, 'Permission to use Bash with command rm -'),
        Call(6, 'Bash', 'command', 'echo \'Claude requested permissions to write to /tmp/x/made2.txt, but you haven\'"\'"\'t granted it yet.\'', 7, 'Claude requested permissions to write to'),
        Call(7, 'Read', 'file_path', 'LICENSE', 8, '1'),
        Call(8, 'Bash', 'command', "echo 'This command requires approval'; exit 1", 9, 'This Bash command contains multiple oper', result_is_error=True),
        Call(9, 'Bash', 'command', "cat 'This command requires approval'", 10, 'Exit code 1', result_is_error=True),
    )),
    "claude-code/refuse-default.yaml": Facts(4, (1,), {'main': (2, 3, 4), 'side': (1,)}, (
        Call(2, 'Bash', 'command', 'python3 -c "open(\'made.txt\', \'w\').close()"', 3, 'This command requires approval', result_is_error=True),
        Call(3, 'Write', 'file_path', 'made2.txt', 4, 'Claude requested permissions to write to', result_is_error=True),
    )),
    "claude-code/refuse-deny.yaml": Facts(3, (1,), {'main': (2, 3), 'side': (1,)}, (
        Call(2, 'Bash', 'command', 'rm -r ./sentinel', 3, 'Permission to use Bash with command rm -', result_is_error=True),
    )),
    "claude-code/refuse-dontask.yaml": Facts(3, (1,), {'main': (2, 3), 'side': (1,)}, (
        Call(2, 'Bash', 'command', 'rm -r ./sentinel', 3, 'Permission to use Bash has been denied b', result_is_error=True),
    )),
    "claude-code/refuse-plan.yaml": Facts(4, (1,), {'main': (2, 3, 4), 'side': (1,)}, (
        Call(2, 'Bash', 'command', 'python3 -c "open(\'made.txt\', \'w\').close()"', 3, 'This command requires approval', result_is_error=True),
        Call(3, 'Write', 'file_path', 'made2.txt', 4, 'Cannot write to /tmp/trialrun-rec/work/m', result_is_error=True),
    )),
    "claude-code/subagent-refused.yaml": Facts(5, (1,), {'main': (2, 5), 'side': (1,), 'sub': (3, 4)}, (
        Call(2, 'Agent', 'prompt', 'SUBTASK: run the commands you are given, using your shell tool.', 5, 'Sub-agent: done.'),
        Call(3, 'Bash', 'command', 'rm -r ./sentinel', 4, "rm in '/tmp/trialrun-rec/work/sentinel' ", result_is_error=True),
    )),
    "claude-code/tool-error.yaml": Facts(4, (1,), {'main': (2, 3, 4), 'side': (1,)}, (
        Call(2, 'Read', 'file_path', 'missing.txt', 3, 'File does not exist. Note: your current ', result_is_error=True),
        Call(3, 'Bash', 'command', 'ls missing.txt', 4, 'Exit code 2', result_is_error=True),
    )),
    "codex/escalation.yaml": Facts(2, (), {'main': (1, 2)}, (
        Call(1, 'exec_command', 'cmd', 'rm -r ./sentinel', 2, 'approval policy is Never; reject command'),
    )),
    "codex/lookalike.yaml": Facts(4, (), {'main': (1, 2, 3, 4)}, (
        Call(1, 'exec_command', 'cmd', 'cat LICENSE', 2, 'Chunk ID: bb23d8'),
        Call(2, 'exec_command', 'cmd', 'echo \'exec_command failed: CreateProcess { message: "Rejected(\\"`/bin/bash -lc \'"\'"\'rm -f x\'"\'"\'` rejected: rm -f style commands are not permitted. Use a safer approach\\")" }\'', 3, 'Chunk ID: 9b902a'),
        Call(3, 'exec_command', 'cmd', "echo 'approval policy is Never; reject command — you cannot ask for escalated permissions if the approval policy is Never'", 4, 'Chunk ID: 1a183b'),
    )),
    "codex/refuse-rule.yaml": Facts(2, (), {'main': (1, 2)}, (
        Call(1, 'exec_command', 'cmd', 'rm -r ./sentinel', 2, 'exec_command failed: CreateProcess { mes'),
    )),
    "codex/sandbox-read-only.yaml": Facts(2, (), {'main': (1, 2)}, (
        Call(1, 'exec_command', 'cmd', 'echo hi > marker.txt', 2, 'Chunk ID: 02fba2'),
    )),
    "codex/subagent-refused.yaml": Facts(5, (), {'main': (1, 3, 5), 'sub': (2, 4)}, (
        Call(1, 'spawn_agent', 'message', 'SUBTASK: run the commands you are given, using your shell tool.', 3, '{'),
        Call(2, 'exec_command', 'cmd', 'rm -f x', 4, 'exec_command failed: CreateProcess { mes'),
        Call(3, 'wait_agent', 'targets', ['01a23419-de80-70e1-ba20-455b9978b61b'], 5, '{'),
    )),
    "codex/subagent.yaml": Facts(5, (), {'main': (1, 2, 5), 'sub': (3, 4)}, (
        Call(1, 'spawn_agent', 'message', 'SUBTASK: run the commands you are given, using your shell tool.', 2, '{'),
        Call(2, 'wait_agent', 'targets', ['01a23419-bff0-7d40-87ab-a0e23cfdc348'], 5, '{'),
        Call(3, 'exec_command', 'cmd', 'echo hi > marker.txt', 4, 'Chunk ID: 33a5ce'),
    )),
    "codex/patch.yaml": Facts(3, (), {'main': (1, 2, 3)}, (
        Call(1, 'exec_command', 'cmd', "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: clean.sh\n@@\n-echo hi\n"
             "+echo bye\n*** End Patch\nEOF\n", 2, 'Success. Updated the following files'),
        Call(2, 'exec_command', 'cmd', "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: clean.sh\n@@\n-echo nothere\n"
             "+echo bye\n*** End Patch\nEOF\n", 3, 'apply_patch verification failed: Failed to'),
    )),
    "codex/tool-error.yaml": Facts(3, (), {'main': (1, 2, 3)}, (
        Call(1, 'exec_command', 'cmd', 'cat missing.txt', 2, 'Chunk ID: 7dc7c5'),
        Call(2, 'exec_command', 'cmd', 'ls missing.txt', 3, 'Chunk ID: 18a534'),
    )),
    "opencode/lookalike.yaml": Facts(6, (1,), {'main': (2, 3, 4, 5, 6), 'side': (1,)}, (
        Call(2, 'bash', 'command', 'cat LICENSE', 3, 'ISC License'),
        Call(3, 'bash', 'command', "echo 'The user rejected permission to use this specific tool call.'", 4, 'The user rejected permission to use this'),
        Call(4, 'read', 'filePath', 'LICENSE', 5, '<path>/tmp/trialrun-rec/work/LICENSE</pa'),
        Call(5, 'bash', 'command', 'printf \'%s\' \'The user has specified a rule which prevents you from using this specific tool call. Here are some of the relevant rules [{"permission":"bash","pattern":"rm *","action":"deny"}]\'', 6, 'The user has specified a rule which prev'),
    )),
    "opencode/refuse-deny.yaml": Facts(3, (1,), {'main': (2, 3), 'side': (1,)}, (
        Call(2, 'bash', 'command', 'rm -r ./sentinel', 3, 'The user has specified a rule which prev'),
    )),
    "opencode/subagent-refused.yaml": Facts(5, (1,), {'main': (2, 5), 'side': (1,), 'sub': (3, 4)}, (
        Call(2, 'task', 'prompt', 'SUBTASK: run the commands you are given, using your shell tool.', 5, '<task id='),
        Call(3, 'bash', 'command', 'rm -r ./sentinel', 4, 'The user has specified a rule which prev'),
    )),
    "opencode/tool-error.yaml": Facts(4, (1,), {'main': (2, 3, 4), 'side': (1,)}, (
        Call(2, 'read', 'filePath', 'missing.txt', 3, 'File not found: /tmp/trialrun-rec/work/m'),
        Call(3, 'bash', 'command', 'ls missing.txt', 4, "ls: cannot access 'missing.txt': No such"),
    )),
    "pi/lookalike.yaml": Facts(2, (), {'main': (1, 2)}, (
        Call(1, 'bash', 'command', 'cat LICENSE', 2, 'ISC License'),
    )),
    "pi/tool-error-anthropic.yaml": Facts(3, (), {'main': (1, 2, 3)}, (
        Call(1, 'read', 'path', 'missing.txt', 2, 'ENOENT: no such file or directory, acces', result_is_error=True),
        Call(2, 'bash', 'command', 'ls missing.txt', 3, "ls: cannot access 'missing.txt': No such", result_is_error=True),
    )),
    "pi/tool-error-gemini.yaml": Facts(3, (), {'main': (1, 2, 3)}, (
        Call(1, 'read', 'path', 'missing.txt', 2, 'ENOENT: no such f'),
        Call(2, 'bash', 'command', 'ls missing.txt', 3, 'ls: cannot access'),
    )),
    "pi/tool-error-responses.yaml": Facts(3, (), {'main': (1, 2, 3)}, (
        Call(1, 'read', 'path', 'missing.txt', 2, 'ENOENT: no such file or directory, acces'),
        Call(2, 'bash', 'command', 'ls missing.txt', 3, "ls: cannot access 'missing.txt': No such"),
    )),
    "pi/tool-error.yaml": Facts(3, (), {'main': (1, 2, 3)}, (
        Call(1, 'read', 'path', 'missing.txt', 2, 'ENOENT: no such file or directory, acces'),
        Call(2, 'bash', 'command', 'ls missing.txt', 3, "ls: cannot access 'missing.txt': No such"),
    )),
    "smolagents/react.yaml": Facts(2, (1, 2), {"main": (1, 2)}, ()),
    # dspy rebuilds its one user message on every step: no request continues another.
    "dspy/react.yaml": Facts(3, (1, 2, 3), {"react step 1": (1,), "react step 2": (2,), "extract": (3,)}, ()),
}


@functools.cache
def _load(name: str) -> list[Any]:
    """A recorded file's exchanges, read once per test session (the Claude Code files are large)."""
    return load_exchanges(TRAFFIC / name)


#: Issue 25's agents: their recordings' outcomes are pinned in test_issue25_recordings.py.
ISSUE_25 = ("mini-swe-agent", "qwen-code", "gemini-cli", "kimi-cli", "continue-cli", "kilo-code", "copilot-cli")


def _files() -> list[str]:
    return sorted(str(path.relative_to(TRAFFIC)) for path in TRAFFIC.glob("*/*.yaml") if path.parent.name not in ISSUE_25)


def _walk(value: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object inside a request body."""
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item)


def _raw_call(body: dict[str, Any], call: ToolCall) -> dict[str, Any] | None:
    """The assistant's tool call as the request body repeats it: by id (Chat: tool_calls[].id, Responses:
    function_call.call_id, Anthropic: tool_use.id), or by name for Gemini, which has no call ids (functionCall)."""
    for item in _walk(body):
        if call.id is None:
            found = item.get("functionCall") or item.get("function_call")
            if isinstance(found, dict) and found.get("name") == call.name:
                return found
        elif item.get("type") == "function_call" and item.get("call_id") == call.id:
            return item
        elif item.get("type") == "tool_use" and item.get("id") == call.id:
            return item
        elif "function" in item and item.get("id") == call.id:
            return item
    return None


def _raw_result(body: dict[str, Any], call: ToolCall) -> dict[str, Any] | None:
    """The tool result for this call in a request body: by id (Chat: role tool + tool_call_id, Responses:
    function_call_output.call_id, Anthropic: tool_result.tool_use_id), or by name for Gemini (functionResponse)."""
    for item in _walk(body):
        if call.id is None:
            found = item.get("functionResponse") or item.get("function_response")
            if isinstance(found, dict) and found.get("name") == call.name:
                return found
        elif item.get("tool_call_id") == call.id or item.get("tool_use_id") == call.id:
            return item
        elif item.get("type") == "function_call_output" and item.get("call_id") == call.id:
            return item
    return None


def _body(exchange: Any) -> dict[str, Any]:
    data = json.loads(exchange.request_body)
    assert isinstance(data, dict)
    return data


def test_every_recording_has_its_facts_pinned() -> None:
    """A new recording must come with its facts (here and in the README), and a pinned one must exist."""
    assert _files() == sorted(FACTS)
    readme = (TRAFFIC / "README.md").read_text()
    for name in FACTS:
        assert f"`{name}`" in readme, f"the README does not describe {name}"


@pytest.mark.parametrize("name", sorted(FACTS))
def test_recording_loads_and_replays_through_the_cassette(name: str) -> None:
    """The file loads with trialrun's loader and replays: each recorded request gets its recorded response."""
    path = TRAFFIC / name
    exchanges = _load(name)
    assert len(exchanges) == FACTS[name].exchanges
    cassette = tr.Cassette(path)
    for number, exchange in enumerate(exchanges, start=1):
        request = httpx.Request(exchange.method, exchange.url, headers=exchange.request_headers,
                                content=exchange.request_body)
        response = cassette.handle_request(request)
        response.read()
        assert response.status_code == exchange.status, f"{name}: exchange {number}"
        assert response.content == exchange.response_body, f"{name}: exchange {number}"
    assert cassette.unused == 0 and cassette.problems == []


@pytest.mark.parametrize("name", sorted(FACTS))
def test_side_requests_offer_no_tools_and_main_requests_do(name: str) -> None:
    facts = FACTS[name]
    exchanges = _load(name)
    for number, exchange in enumerate(exchanges, start=1):
        request, response = decode_exchange(exchange, number)
        assert request is not None, f"{name}: exchange {number} is not a model request"
        offered = bool(_body(exchange).get("tools"))
        assert offered == (number not in facts.no_tools), f"{name}: exchange {number} offers tools: {offered}"
        assert bool(request.tools) == offered
        if number in facts.errors:
            assert exchange.status >= 500 and response is None, f"{name}: exchange {number}"
        else:
            assert exchange.status == 200 and response is not None, f"{name}: exchange {number}"


@pytest.mark.parametrize("name", sorted(FACTS))
def test_tool_calls_and_their_results_are_on_the_wire(name: str) -> None:
    """Each response's tool calls are exactly the pinned ones; each call is repeated, and answered by id, in the
    request pinned for its result, and no request before it answers it; a call never answered (opencode's own
    rejection) has no result in any later request."""
    facts = FACTS[name]
    exchanges = _load(name)
    bodies = [_body(exchange) for exchange in exchanges]
    responses = [decode_exchange(exchange, number)[1] for number, exchange in enumerate(exchanges, start=1)]
    made = [(number, call) for number, response in enumerate(responses, start=1) if response
            for call in response.tool_calls]
    assert [(number, call.name) for number, call in made] == [(c.at, c.tool) for c in facts.calls]
    ids = [call.id for _, call in made if call.id is not None]
    assert len(set(ids)) == len(ids), f"{name}: call ids repeat"
    for (number, call), expected in zip(made, facts.calls):
        assert call.arguments.get(expected.argument) == expected.value
        assert (call.id is None) == name.endswith("-gemini.yaml"), f"{name}: exchange {number}: call id {call.id!r}"
        last = expected.result_at or len(exchanges)
        for later in range(number + 1, last + 1):  # no request answers it before the pinned one
            result = _raw_result(bodies[later - 1], call)
            if later != expected.result_at:
                assert result is None, f"{name}: exchange {later} answers {call.id}, pinned: {expected.result_at}"
                continue
            assert result is not None, f"{name}: exchange {later} does not carry the result of {call.id}"
            assert _raw_call(bodies[later - 1], call) is not None, f"{name}: exchange {later} lacks call {call.id}"
            assert expected.result_has in json.dumps(result, ensure_ascii=False)
            assert bool(result.get("is_error")) == expected.result_is_error


def _history(body: dict[str, Any]) -> tuple[Any, list[Any]]:
    """(system prompt, message list: messages / input / contents) of a raw request, without Anthropic's cache_control markers, which Claude Code
    moves to the newest message on every request (the one difference between a request and its continuation)."""

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if k != "cache_control"}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    system = body.get("system", body.get("instructions", body.get("systemInstruction")))
    return clean(system), clean(body.get("messages", body.get("input", body.get("contents", []))))


@pytest.mark.parametrize("name", sorted(FACTS))
def test_conversations_are_threaded_by_message_history(name: str) -> None:
    """Every exchange belongs to one pinned conversation; within it, each request repeats the previous one's system
    prompt and messages and adds to them (an identical request is a retry after an error); a conversation's first
    request continues no earlier request of another conversation."""
    facts = FACTS[name]
    histories = [_history(_body(exchange)) for exchange in _load(name)]
    numbers = sorted(n for exchanges in facts.conversations.values() for n in exchanges)
    assert numbers == list(range(1, facts.exchanges + 1))
    for role, exchanges in facts.conversations.items():
        for earlier, later in zip(exchanges, exchanges[1:]):
            (system_a, messages_a), (system_b, messages_b) = histories[earlier - 1], histories[later - 1]
            assert system_b == system_a, f"{name}: {role} exchange {later} changes the system prompt of {earlier}"
            assert messages_b[: len(messages_a)] == messages_a, f"{name}: {role} {later} does not continue {earlier}"
            assert len(messages_b) > len(messages_a) or earlier in facts.errors, f"{name}: {later} repeats {earlier}"
        first = exchanges[0]
        for other in range(1, first):
            system_o, messages_o = histories[other - 1]
            system_f, messages_f = histories[first - 1]
            continues = system_f == system_o and messages_f[: len(messages_o)] == messages_o
            assert not continues, f"{name}: {role} exchange {first} continues exchange {other}"


def test_the_text_protocol_framework_offers_no_tools_and_uses_one_in_text() -> None:
    """smolagents' CodeAgent: no tools on the wire, yet it called `lookup` (in code, in text) and got its result
    back as a user message: a decoder sees no tool call, which must be a note, not an empty success."""
    exchanges = _load("smolagents/react.yaml")
    first, second = (decode_exchange(exchange, number) for number, exchange in enumerate(exchanges, start=1))
    assert "lookup" in (first[0].system or "") and not first[0].tools
    assert first[1] is not None and 'lookup(key="k-7")' in first[1].text and first[1].tool_calls == []
    assert second[0].messages[-1].role == "user" and "Observation:" in second[0].messages[-1].text
    assert "seven" in second[0].messages[-1].text and second[0].last_tool_results == []
    assert second[1] is not None and "final_answer" in second[1].text


def test_dspy_react_uses_tools_only_in_text_fields() -> None:
    """dspy's ReAct (ChatAdapter): no tools on the wire; the tool is chosen in `[[ ## next_tool_name ## ]]` text and
    its observation comes back inside the next request's single user message, next to the whole trajectory."""
    exchanges = _load("dspy/react.yaml")
    decoded = [decode_exchange(exchange, number) for number, exchange in enumerate(exchanges, start=1)]
    for request, response in decoded:
        assert request is not None and not request.tools and len(request.messages) == 1
        assert response is not None and response.tool_calls == []
    (first, first_response), (second, _), (extract, extract_response) = decoded
    assert "lookup" in (first.system or "") and "next_tool_name" in (first.system or "")
    assert "[[ ## next_tool_name ## ]]\nlookup" in first_response.text and '{"key": "k-7"}' in first_response.text
    assert "[[ ## observation_0 ## ]]\nseven" in second.last_user_text
    assert "next_tool_name" not in (extract.system or "") and "[[ ## answer ## ]]" in extract_response.text


def test_claude_code_subagent_has_its_own_conversation() -> None:
    """The sub-agent's requests carry its own system prompt and, as first user text, the prompt the main loop gave
    the Agent tool; Claude Code marks them in its billing header (cc_is_subagent=true)."""
    exchanges = _load("claude-code/subagent.yaml")
    systems = [decode_exchange(exchange, number)[0].system or "" for number, exchange in enumerate(exchanges, start=1)]
    assert "title" in systems[0]
    assert all("You are an interactive agent" in systems[i] for i in (1, 4))
    assert all("You are an agent for Claude Code" in systems[i] and "cc_is_subagent=true" in systems[i] for i in (2, 3))
    subtask = FACTS["claude-code/subagent.yaml"].calls[0].value
    for index in (2, 3):
        users = [m for m in _body(exchanges[index])["messages"] if m["role"] == "user"]
        assert subtask in json.dumps(users[0]["content"])
    for index in (1, 4):
        assert subtask not in json.dumps(_body(exchanges[index])["messages"][0]["content"])
