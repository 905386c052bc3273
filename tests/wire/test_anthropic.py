"""The Anthropic Messages codec: real recorded traffic, round trips, the official SDK, malformed input."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx2  # the anthropic SDK (2.x) refuses plain httpx clients; its own httpx2 takes the same transports
import pytest
from _wire_helpers import (
    ScriptedServer,
    assert_call_ids,
    assert_request_round_trip,
    decode_recorded,
    load,
    round_trip,
    traffic_files,
)

from trialrun.trajectory import ToolCall, ToolResult, Usage
from trialrun.wire import (
    Exchange,
    Message,
    ModelRequest,
    ProviderError,
    Step,
    ToolSpec,
    WireError,
    decode_exchange,
    decode_trajectory,
)
from trialrun.wire._codec import default_usage
from trialrun.wire._sse import parse_sse
from trialrun.wire.anthropic import AnthropicCodec

CODEC = AnthropicCodec()


# --------------------------------------------------------------------------------------- recorded traffic


@pytest.mark.parametrize("path", traffic_files("anthropic", "anthropic-stream"), ids=lambda path: path.stem)
def test_every_recorded_anthropic_exchange_decodes(path: Path) -> None:
    for _, request, response in decode_recorded(CODEC, path):
        assert request.api == "anthropic"
        assert response.id and response.usage is not None


def test_mixed_strict_tool_run_reads_two_sequential_tool_calls() -> None:
    trajectory = decode_trajectory(load("anthropic/test_anthropic__test_anthropic_mixed_strict_tool_run.yaml"))
    assert trajectory.notes == []
    assert len(trajectory.turns) == 3
    assert trajectory.tool_calls == [
        ToolCall("country_source", {}, "toolu_01Ttepb9joVoQFHP568v7UAL"),
        ToolCall("capital_lookup", {"country": "Japan"}, "toolu_011j5uC2Tg3TZJo3nmLtJ8Mm"),
    ]
    assert trajectory.tool_results == [
        ToolResult("toolu_01Ttepb9joVoQFHP568v7UAL", "Japan", False),
        ToolResult("toolu_011j5uC2Tg3TZJo3nmLtJ8Mm", "Tokyo", False),
    ]
    assert trajectory.turns[0].text == "I'll help you find the capital city using the available tools."
    assert trajectory.final_text == "Capital: Tokyo"
    assert [turn.usage for turn in trajectory.turns] == [Usage(628, 50), Usage(691, 53), Usage(757, 6)]
    assert trajectory.usage == Usage(2076, 109)
    assert {turn.model for turn in trajectory.turns} == {"claude-sonnet-4-5-20250929"}


def test_tool_output_reads_the_final_result_tool() -> None:
    exchanges = load("anthropic/test_anthropic__test_anthropic_tool_output.yaml")
    trajectory = decode_trajectory(exchanges)
    assert trajectory.tool_calls == [
        ToolCall("get_user_country", {}, "toolu_01X9wcHKKAZD9tBC711xipPa"),
        ToolCall("final_result", {"city": "Mexico City", "country": "Mexico"}, "toolu_01LZABsgreMefH2Go8D5PQbW"),
    ]
    assert trajectory.turns[0].tool_results == [ToolResult("toolu_01X9wcHKKAZD9tBC711xipPa", "Mexico", False)]
    assert trajectory.turns[1].tool_results == []  # nothing was sent after the final tool call
    assert [turn.usage for turn in trajectory.turns] == [Usage(445, 23), Usage(497, 56)]
    request, _ = decode_exchange(exchanges[0], 1)
    assert request is not None
    assert request.tool_names == ["get_user_country", "final_result"]
    assert request.tools[1].parameters["required"] == ["city", "country"]
    assert request.system is None and request.stream is False
    assert request.messages == [Message("user", "What is the largest city in the user country?")]


def test_code_execution_with_prompt_cache_counts_cached_tokens_and_skips_server_tools() -> None:
    exchanges = load(
        "anthropic/test_code_execution_files_vcr__test_anthropic_code_execution_files_cache_prefix_stable_messages-sonnet-4-6_.yaml"
    )
    trajectory = decode_trajectory(exchanges)  # the /v1/files upload and delete are not model calls
    assert len(trajectory.turns) == 2 and trajectory.notes == []
    assert trajectory.tool_calls == []  # bash_code_execution ran on Anthropic's side: not the agent's tool call
    assert trajectory.turns[0].text.endswith("The values are 30 (apple) and 70 (banana), which add up exactly to **100**.")
    assert trajectory.final_text == (
        "**Average of the `value` column: 50.0**\n\nThis is calculated by dividing the sum of the values "
        "(30 + 70 = 100) by the number of rows (2), giving exactly **50.0**."
    )
    # input = input_tokens + cache_creation_input_tokens + cache_read_input_tokens; cached = cache reads.
    assert trajectory.turns[0].usage == Usage(10 + 4513 + 4332, 211, 4332)
    assert trajectory.turns[1].usage == Usage(4 + 237 + 9134, 156, 9134)
    request, _ = decode_exchange(exchanges[2], 3)
    assert request is not None and request.tool_names == ["code_execution"]
    assert request.system is not None and request.system.startswith("You are a meticulous data analyst.")
    assert [message.role for message in request.messages] == ["user", "assistant", "user"]
    assert request.messages[1].tool_calls == []


def test_deferred_capability_tool_results_with_block_content_and_tool_references() -> None:
    exchanges = load(
        "anthropic/test_anthropic__test_anthropic_deferred_capability_without_tool_search_across_models_claude-fable-5_.yaml"
    )
    trajectory = decode_trajectory(exchanges)
    assert [(call.name, call.arguments) for call in trajectory.tool_calls] == [
        ("load_capability", {"id": "refunds"}),
        ("lookup_refund_policy", {"order_id": "order-123"}),
    ]
    assert [result.content for result in trajectory.tool_results] == ["{}", "order-123: refund allowed"]
    assert trajectory.final_text == "order-123: refund allowed"
    request, _ = decode_exchange(exchanges[1], 2)
    assert request is not None
    assert request.messages[-1] == Message(
        "tool", tool_results=[ToolResult("auto_load_0f10f8b659c3c105", "[tool_reference: lookup_refund_policy]")]
    )


def test_system_role_messages_inside_messages_do_not_hide_tool_results() -> None:
    exchanges = load("anthropic/test_anthropic__test_anthropic_lazy_advertisement_live.yaml")
    request, _ = decode_exchange(exchanges[1], 2)
    assert request is not None
    assert [message.role for message in request.messages] == ["user", "assistant", "tool", "system"]
    assert request.last_tool_results == [ToolResult("toolu_01GqcuZ6yt7Xcywhp2ru46rB", "{}", False)]
    trajectory = decode_trajectory(exchanges)
    assert trajectory.turns[1].tool_calls == [ToolCall("lookup_refund_policy", {"order_id": "A-4417"}, "toolu_019edAdThk36saBnqym8gYok")]
    assert trajectory.turns[1].tool_results == [ToolResult("toolu_019edAdThk36saBnqym8gYok", "A-4417: refund allowed")]


def test_streamed_tool_search_reads_deltas_and_cumulative_usage() -> None:
    trajectory = decode_trajectory(load("anthropic-stream/test_tool_search__test_anthropic_native_tool_search_streaming.yaml"))
    assert trajectory.notes == [] and len(trajectory.turns) == 2
    first, second = trajectory.turns
    # Two text blocks around the server-side tool search; the search itself is not the agent's tool call.
    assert first.text == (
        "Let me search for a tool that can provide current exchange rate information."
        "I found the right tool! Let me fetch the current USD to EUR exchange rate for you."
    )
    assert first.tool_calls == [
        ToolCall("get_exchange_rate", {"from_currency": "USD", "to_currency": "EUR"}, "toolu_01EFn5wTNBYA8Reni8rbmnHT")
    ]
    assert first.tool_results == [ToolResult("toolu_01EFn5wTNBYA8Reni8rbmnHT", "1 USD = 0.92 EUR", False)]
    assert first.usage == Usage(1591, 175)  # message_delta's totals overwrite message_start's 702 / 1
    assert second.text == (
        "The current exchange rate is **1 USD = 0.92 EUR**. This means that for every US Dollar, you get "
        "approximately **92 Euro cents**. Keep in mind that exchange rates fluctuate constantly, so this rate may "
        "change throughout the day."
    )
    assert second.usage == Usage(1007, 59)
    assert second.model == "claude-sonnet-4-6"


def test_tool_search_handoff_json_skips_server_tool_blocks() -> None:
    exchanges = load("anthropic-stream/test_tool_search__test_live_tool_search_handoff_anthropic_to_openai.yaml")
    request, response = decode_exchange(exchanges[0], 1)
    assert request is not None and response is not None
    assert request.system == "Always use get_exchange_rate to answer exchange-rate questions."
    assert request.tool_names == ["get_exchange_rate", "tool_search_tool_bm25"]  # the server tool, by name
    assert response.text == "Let me look up the USD/EUR exchange rate for you!"
    assert response.tool_calls == [ToolCall("get_exchange_rate", {"pair": "USD/EUR"}, "toolu_01QtTcuATkmQ8H6qANmihWBo")]
    assert response.usage == Usage(1594, 132) and response.stop_reason == "tool_use"
    request, response = decode_exchange(exchanges[1], 2)
    assert request is not None and response is not None
    assert request.last_tool_results == [ToolResult("toolu_01QtTcuATkmQ8H6qANmihWBo", "USD/EUR: 0.92", False)]
    assert request.messages[1].tool_calls == [ToolCall("get_exchange_rate", {"pair": "USD/EUR"}, "toolu_01QtTcuATkmQ8H6qANmihWBo")]
    assert response.text == (
        "The current **USD/EUR exchange rate is 0.92**, meaning that **1 US Dollar (USD) = 0.92 Euros (EUR)**. "
        "In other words, the Euro is slightly stronger than the US Dollar at this time."
    )
    assert response.usage == Usage(955, 56) and response.stop_reason == "end_turn"


def test_thinking_blocks_are_not_answer_text() -> None:
    exchanges = load("anthropic-stream/test_anthropic__test_anthropic_model_thinking_part_from_other_model.yaml")
    _, response = decode_exchange(exchanges[1], 2)
    assert response is not None
    assert response.text.startswith("Great analogy! Here's how to \"cross the river\" safely")
    assert "The user is asking for an analogous approach" not in response.text
    assert response.usage == Usage(1343, 538)
    assert response.model == "claude-sonnet-4-20250514"


# ----------------------------------------------------------------------------------------------- round trips

TOOLS = [
    ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    ToolSpec("grep", "", {"type": "object", "properties": {"pattern": {"type": "string"}}}),
]

CONVERSATIONS: dict[str, list[Message]] = {
    "text only": [Message("user", "Hi"), Message("assistant", "Hello! How can I help?")],
    "one tool call": [
        Message("user", "What do the notes say?"),
        Message("assistant", tool_calls=[ToolCall("read_file", {"path": "notes.txt"}, "toolu_1")]),
        Message("tool", tool_results=[ToolResult("toolu_1", "hello")]),
        Message("assistant", "The notes say hello."),
    ],
    "parallel tool calls": [
        Message("user", "Search both."),
        Message("assistant", tool_calls=[ToolCall("grep", {"pattern": "a"}, "toolu_a"), ToolCall("grep", {"pattern": "b"}, "toolu_b")]),
        Message("tool", tool_results=[ToolResult("toolu_a", "a.txt"), ToolResult("toolu_b", "b.txt")]),
    ],
    "text and tool calls": [
        Message("user", "Read it."),
        Message("assistant", "Reading now.", [ToolCall("read_file", {"path": "ü.txt", "opts": {"n": [1, 2]}}, "toolu_x")]),
        Message("tool", tool_results=[ToolResult("toolu_x", "contents")]),
        Message("user", "And then?"),
    ],
    "tool error": [
        Message("user", "Read the missing file."),
        Message("assistant", tool_calls=[ToolCall("read_file", {"path": "missing"}, "toolu_e")]),
        Message("tool", tool_results=[ToolResult("toolu_e", "No such file: missing", is_error=True)]),
        Message("assistant", "That file does not exist."),
    ],
}


@pytest.mark.parametrize("name", CONVERSATIONS)
def test_encode_request_round_trips(name: str) -> None:
    messages = CONVERSATIONS[name]
    body = CODEC.encode_request(model="claude-test", messages=messages, tools=TOOLS, system="Be brief.")
    path = CODEC.request_path("claude-test")
    assert_request_round_trip(CODEC, body, path, messages, TOOLS, system="Be brief.", model="claude-test")
    assert body["max_tokens"] == 1024  # Anthropic requires it; the default when the caller gives none


def test_encode_request_shapes_the_body_as_the_api_requires() -> None:
    messages = [
        Message("system", "Extra rule."),
        Message("user", "Go."),
        Message("assistant", "Two calls.", [ToolCall("grep", {"pattern": "a"}, "t1"), ToolCall("grep", {"pattern": "b"}, "t2")]),
        Message("tool", tool_results=[ToolResult("t1", "ok")]),
        Message("tool", tool_results=[ToolResult("t2", "boom", is_error=True)]),
        Message("user", "Summarise."),
    ]
    body = CODEC.encode_request(model="m", messages=messages, tools=[], system="Base.", max_tokens=50)
    assert body["max_tokens"] == 50 and body["system"] == "Base.\n\nExtra rule." and "tools" not in body
    assert body["messages"] == [
        {"role": "user", "content": "Go."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Two calls."},
                {"type": "tool_use", "id": "t1", "name": "grep", "input": {"pattern": "a"}},
                {"type": "tool_use", "id": "t2", "name": "grep", "input": {"pattern": "b"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "boom", "is_error": True},
                {"type": "text", "text": "Summarise."},
            ],
        },
    ]
    # Consecutive tool messages come back as one (the neutral form of a user message of tool_result blocks).
    decoded = CODEC.decode_request(body).messages
    assert decoded[2] == Message("tool", tool_results=[ToolResult("t1", "ok"), ToolResult("t2", "boom", True)])
    assert decoded[3] == Message("user", "Summarise.")


def test_encode_request_gives_ids_to_calls_and_results_that_lack_them() -> None:
    messages = [
        Message("user", "Go."),
        Message("assistant", tool_calls=[ToolCall("grep", {"pattern": "a"}), ToolCall("grep", {"pattern": "b"})]),
        Message("tool", tool_results=[ToolResult(None, "A"), ToolResult(None, "B")]),
    ]
    blocks = CODEC.encode_request(model="m", messages=messages, tools=[])["messages"]
    call_ids = [block["id"] for block in blocks[1]["content"]]
    assert len(set(call_ids)) == 2
    assert [block["tool_use_id"] for block in blocks[2]["content"]] == call_ids


STEPS: dict[str, Step] = {
    "text only": Step(text="The notes say hello.", usage=Usage(120, 9)),
    "one tool call": Step(tool_calls=[ToolCall("read_file", {"path": "notes.txt"})], usage=Usage(80, 12)),
    "parallel tool calls": Step(
        tool_calls=[ToolCall("grep", {"pattern": "a"}), ToolCall("grep", {"pattern": "ünïcode \"quoted\""})],
        usage=Usage(300, 40, cached_input_tokens=200),
    ),
    "text and tool calls": Step(
        text="Let me look.", tool_calls=[ToolCall("read_file", {"path": "a", "lines": [1, 2, {"x": None}]}, "toolu_given")]
    ),
    "empty": Step(),
}


def _request(stream: bool, body: dict[str, Any] | None = None) -> ModelRequest:
    body = body or {"model": "claude-test", "max_tokens": 100, "messages": [{"role": "user", "content": "Hi"}]}
    return CODEC.decode_request({**body, "stream": stream}, "/v1/messages")


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("name", STEPS)
def test_encode_response_round_trips(name: str, streamed: bool) -> None:
    step = STEPS[name]
    request = _request(streamed)
    assert request.stream is streamed
    response = round_trip(CODEC, step, request)
    assert_call_ids(response, step, "toolu_")
    assert response.usage == default_usage(step, request)
    assert response.model == "claude-test"
    assert response.stop_reason == ("tool_use" if step.tool_calls else "end_turn")
    assert response.id and response.id.startswith("msg_")


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
def test_cache_reads_and_writes_survive_a_round_trip(streamed: bool) -> None:
    usage = Usage(input_tokens=1000, output_tokens=10, cached_input_tokens=100, cache_write_input_tokens=300)
    response = round_trip(CODEC, Step(text="ok", usage=usage), _request(streamed))
    assert (response.usage.input_tokens, response.usage.cached_input_tokens, response.usage.cache_write_input_tokens,
            response.usage.output_tokens) == (1000, 100, 300, 10)


def test_streamed_response_has_the_full_event_sequence() -> None:
    step = Step(text="Checking the notes now.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"})])
    events = parse_sse(CODEC.encode_response(step, _request(True)).body)
    names = [event.event for event in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert all(event.event == event.json()["type"] for event in events)
    assert names.count("content_block_start") == names.count("content_block_stop") == 2
    deltas = [event.json()["delta"] for event in events if event.event == "content_block_delta"]
    text_pieces = [d["text"] for d in deltas if d["type"] == "text_delta"]
    json_pieces = [d["partial_json"] for d in deltas if d["type"] == "input_json_delta"]
    assert len(text_pieces) > 1 and "".join(text_pieces) == step.text
    assert len(json_pieces) > 2 and json.loads("".join(json_pieces)) == {"path": "notes.txt"}
    start = events[0].json()["message"]
    assert start["content"] == [] and start["usage"]["input_tokens"] > 0


def test_a_step_with_an_error_renders_the_error() -> None:
    encoded = CODEC.encode_response(Step(error=ProviderError(status=529)), _request(False))
    assert encoded.status == 529
    assert json.loads(encoded.body)["error"]["type"] == "overloaded_error"


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (ProviderError(status=429, retry_after=1.0), "rate_limit_error"),
        (ProviderError(status=529), "overloaded_error"),
        (ProviderError(status=500), "api_error"),
        (ProviderError(status=503), "api_error"),
        (ProviderError(status=400, message="max_tokens: field required"), "invalid_request_error"),
        (ProviderError(status=401), "authentication_error"),
        (ProviderError(status=400, type="custom_error"), "custom_error"),
    ],
)
def test_encode_error(error: ProviderError, kind: str) -> None:
    encoded = CODEC.encode_error(error)
    body = json.loads(encoded.body)
    assert encoded.status == error.status
    assert body["type"] == "error" and body["error"]["type"] == kind and body["error"]["message"]
    if error.message:
        assert body["error"]["message"] == error.message
    assert encoded.headers["request-id"].startswith("req_")
    assert encoded.headers.get("retry-after") == ("1" if error.retry_after else None)


def test_retry_after_keeps_fractions() -> None:
    assert CODEC.encode_error(ProviderError(status=429, retry_after=0.5)).headers["retry-after"] == "0.5"


@pytest.mark.parametrize(
    ("path", "handled"),
    [
        ("/v1/messages", True),
        ("/messages", True),
        ("/anthropic/v1/messages", True),
        ("/v1/messages/", True),
        ("/v1/messages/count_tokens", False),
        ("/v1/messages/batches", False),
        ("/v1/files", False),
        ("/v1/chat/completions", False),
        ("/v1/threads/thread_1/messages", False),
    ],
)
def test_handles(path: str, handled: bool) -> None:
    assert CODEC.handles(path) is handled


# ------------------------------------------------------------------------------------------- official SDK


CALL_STEP = Step(
    text="Let me read both.",
    tool_calls=[ToolCall("read_file", {"path": "notes.txt"}), ToolCall("grep", {"pattern": "héllo"})],
    usage=Usage(120, 30),
)
REPLY_STEP = Step(text="The notes say hello, twice.", usage=Usage(200, 9))
ARGS: dict[str, Any] = {
    "model": "claude-test",
    "max_tokens": 256,
    "messages": [{"role": "user", "content": "What do the notes say?"}],
    "tools": [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in TOOLS],
}


def _script(*steps: Step | ProviderError) -> ScriptedServer:
    """A mock server answering through the codec, on httpx2 transports as the anthropic SDK requires."""
    return ScriptedServer(CODEC, *steps, http=httpx2)


def _sync_client(script: ScriptedServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test", max_retries=0, http_client=script.http_client())


def _async_client(script: ScriptedServer) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(api_key="test", max_retries=0, http_client=script.async_http_client())


def _check_tool_message(message: Any) -> list[dict[str, Any]]:
    """The SDK's parsed Message shows the scripted text, tool_use blocks and usage; returns the tool results to send."""
    assert message.stop_reason == "tool_use" and message.model == "claude-test"
    assert [block.type for block in message.content] == ["text", "tool_use", "tool_use"]
    assert message.content[0].text == "Let me read both."
    assert [(block.name, block.input) for block in message.content[1:]] == [
        ("read_file", {"path": "notes.txt"}),
        ("grep", {"pattern": "héllo"}),
    ]
    assert (message.usage.input_tokens, message.usage.output_tokens) == (120, 30)
    return [{"type": "tool_result", "tool_use_id": block.id, "content": "hello"} for block in message.content[1:]]


def _follow_up(first: Any, results: list[dict[str, Any]]) -> dict[str, Any]:
    messages = [*ARGS["messages"], {"role": "assistant", "content": first.content}, {"role": "user", "content": results}]
    return {**ARGS, "messages": messages}


def _check_reply(message: Any, script: ScriptedServer, first: Any) -> None:
    assert message.stop_reason == "end_turn"
    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].text == "The notes say hello, twice."
    assert (message.usage.input_tokens, message.usage.output_tokens) == (200, 9)
    # The SDK's own follow-up request decodes into the tool results for the scripted calls.
    assert script.requests[1].last_tool_results == [ToolResult(block.id, "hello") for block in first.content[1:]]


def _collect_stream(events: list[Any]) -> tuple[str, list[tuple[str, Any]], Any]:
    """Fold raw stream events the way a hand-written agent would: text, tool inputs, final usage."""
    types = [event.type for event in events]
    assert types[0] == "message_start" and types[-1] == "message_stop"
    text = "".join(e.delta.text for e in events if e.type == "content_block_delta" and e.delta.type == "text_delta")
    tools: dict[int, list[Any]] = {}
    for event in events:
        if event.type == "content_block_start" and event.content_block.type == "tool_use":
            tools[event.index] = [event.content_block.name, ""]
        elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
            tools[event.index][1] += event.delta.partial_json
    delta = next(event for event in events if event.type == "message_delta")
    return text, [(name, json.loads(raw)) for name, raw in tools.values()], delta


def test_sdk_messages_create() -> None:
    script = _script(CALL_STEP, REPLY_STEP)
    client = _sync_client(script)
    first = client.messages.create(**ARGS)
    results = _check_tool_message(first)
    _check_reply(client.messages.create(**_follow_up(first, results)), script, first)
    assert [request.stream for request in script.requests] == [False, False]


def test_sdk_messages_create_stream() -> None:
    script = _script(CALL_STEP, REPLY_STEP)
    client = _sync_client(script)
    text, tools, delta = _collect_stream(list(client.messages.create(stream=True, **ARGS)))
    assert text == "Let me read both."
    assert tools == [("read_file", {"path": "notes.txt"}), ("grep", {"pattern": "héllo"})]
    assert delta.delta.stop_reason == "tool_use" and delta.usage.output_tokens == 30
    assert script.requests[0].stream is True
    text, tools, delta = _collect_stream(list(client.messages.create(stream=True, **ARGS)))
    assert (text, tools, delta.delta.stop_reason) == ("The notes say hello, twice.", [], "end_turn")


def test_sdk_messages_stream_helper() -> None:
    script = _script(CALL_STEP, REPLY_STEP)
    client = _sync_client(script)
    with client.messages.stream(**ARGS) as stream:
        assert "".join(stream.text_stream) == "Let me read both."
        first = stream.get_final_message()
    results = _check_tool_message(first)
    with client.messages.stream(**_follow_up(first, results)) as stream:
        pieces = list(stream.text_stream)
        reply = stream.get_final_message()
    assert len(pieces) > 1 and "".join(pieces) == "The notes say hello, twice."
    _check_reply(reply, script, first)


def test_sdk_async_create_stream_and_helper() -> None:
    async def run() -> None:
        script = _script(CALL_STEP, REPLY_STEP, CALL_STEP, REPLY_STEP, CALL_STEP)
        client = _async_client(script)
        first = await client.messages.create(**ARGS)
        results = _check_tool_message(first)
        _check_reply(await client.messages.create(**_follow_up(first, results)), script, first)

        async with client.messages.stream(**ARGS) as stream:
            assert "".join([piece async for piece in stream.text_stream]) == "Let me read both."
            streamed_first = await stream.get_final_message()
        results = _check_tool_message(streamed_first)
        async with client.messages.stream(**_follow_up(streamed_first, results)) as stream:
            reply = await stream.get_final_message()
        assert reply.content[0].text == "The notes say hello, twice." and reply.usage.output_tokens == 9

        events = [event async for event in await client.messages.create(stream=True, **ARGS)]
        text, tools, delta = _collect_stream(events)
        assert text == "Let me read both." and [name for name, _ in tools] == ["read_file", "grep"]
        assert delta.usage.output_tokens == 30

    asyncio.run(run())


def test_sdk_raises_rate_limit_error_for_an_encoded_429() -> None:
    script = _script(ProviderError(status=429, message="Slow down.", retry_after=2.0))
    with pytest.raises(anthropic.RateLimitError) as caught:
        _sync_client(script).messages.create(**ARGS)
    assert caught.value.status_code == 429
    assert caught.value.response.headers["retry-after"] == "2"
    assert caught.value.body["error"] == {"type": "rate_limit_error", "message": "Slow down."}


def test_sdk_raises_overloaded_error_for_an_encoded_529_async() -> None:
    async def run() -> None:
        with pytest.raises(anthropic.OverloadedError):
            await _async_client(_script(ProviderError(status=529))).messages.create(**ARGS)

    asyncio.run(run())


# ------------------------------------------------------------------------------------------- malformed input

START = 'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","model":"m","usage":{"input_tokens":3,"output_tokens":1}}}\n\n'
TOOL_START = 'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"read_file","input":{}}}\n\n'
STOP = 'event: message_stop\ndata: {"type":"message_stop"}\n\n'


def _delta(partial: str) -> str:
    data = {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": partial}}
    return f"event: content_block_delta\ndata: {json.dumps(data)}\n\n"


@pytest.mark.parametrize(
    ("body", "streamed", "message"),
    [
        (b"not json at all", False, "response body is not valid JSON"),
        (b"[1, 2]", False, "expected a message object"),
        (b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', False, "overloaded_error: Overloaded"),
        (b'{"id":"msg_1","type":"message"}', False, "no 'content' list"),
        (b'{"content":[1]}', False, r"content\[0\] is not a content block"),
        (b'{"content":[{"type":"tool_use","id":"t","input":{}}]}', False, "tool_use block has no 'name'"),
        (b'{"content":[{"type":"text","text":5}]}', False, "expected a string"),
        (b'{"content":[],"usage":{"input_tokens":"many"}}', False, "usage.input_tokens is 'many'"),
        (b"", True, "no events"),
        (b"event: ping\ndata: {\"type\": \"ping\"}\n\n", True, "no message_start"),
        ((START + TOOL_START + _delta('{"path": "a"}')).encode(), True, "ended before message_stop"),
        (b"event: message_start\ndata: {oops\n\n", True, "not valid JSON"),
        (b'event: message_start\ndata: [1]\n\n', True, "expected an object"),
        ((TOOL_START + START + STOP).encode(), True, "before message_start"),
        ((START + _delta("{}") + STOP).encode(), True, "which no content_block_start opened"),
        (
            (START + 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n').encode(),
            True,
            "stream reported an error: overloaded_error: Overloaded",
        ),
    ],
)
def test_malformed_responses_raise_wire_error(body: bytes, streamed: bool, message: str) -> None:
    with pytest.raises(WireError, match=message):
        CODEC.decode_response(body, streamed)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "no 'messages' list"),
        ({"messages": "hi"}, "no 'messages' list"),
        ({"messages": ["hi"]}, r"messages\[0\] is a str"),
        ({"messages": [{"role": "robot", "content": "x"}]}, r"messages\[0\]\.role is 'robot'"),
        ({"messages": [{"role": "user", "content": 5}]}, r"messages\[0\]\.content is a int"),
        ({"messages": [{"role": "user", "content": [{"text": "no type"}]}]}, r"messages\[0\]\.content\[0\] is not a content block"),
        ({"messages": [{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}]}, "tool_use_id"),
        ({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": 7}]}]}, "tool_result content is a int"),
        ({"messages": [], "tools": {"name": "x"}}, "'tools' is a dict"),
        ({"messages": [], "tools": [{"description": "no name"}]}, r"tools\[0\] has no string 'name'"),
        ({"messages": [], "system": 3}, "'system' is a int"),
    ],
)
def test_malformed_requests_raise_wire_error(body: dict[str, Any], message: str) -> None:
    with pytest.raises(WireError, match=message):
        CODEC.decode_request(body, "/v1/messages")


def test_a_malformed_exchange_becomes_a_note_naming_it() -> None:
    good = CODEC.encode_response(Step(text="ok", usage=Usage(1, 1)), _request(False))
    request_body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}]}).encode()
    exchanges = [
        Exchange("POST", "https://api.anthropic.com/v1/messages", request_body=request_body, status=200, response_body=b"{truncated"),
        Exchange("POST", "https://api.anthropic.com/v1/messages", request_body=request_body, status=200, response_body=good.body),
    ]
    trajectory = decode_trajectory(exchanges)
    assert [turn.text for turn in trajectory.turns] == ["ok"]
    assert len(trajectory.notes) == 1
    assert trajectory.notes[0].startswith("exchange 1 (POST /v1/messages): response body is not valid JSON")


def test_scripted_sse_and_json_decode_whatever_the_streamed_flag_says() -> None:
    step = Step(text="hi", usage=Usage(5, 1))
    sse = CODEC.encode_response(step, _request(True)).body
    plain = CODEC.encode_response(step, _request(False)).body
    assert CODEC.decode_response(sse, False).text == CODEC.decode_response(plain, True).text == "hi"


def test_decoding_never_raises_anything_but_wire_error_on_garbage() -> None:
    samples: list[Callable[[], object]] = [
        lambda: CODEC.decode_response(b"\xff\xfe\x00", False),
        lambda: CODEC.decode_response(b"\xff\xfe\x00", True),
        lambda: CODEC.decode_response(b"data: \n\n", True),
        lambda: CODEC.decode_response(b'{"content":[{"type":"tool_use","name":"x","id":5}]}', False),
        lambda: CODEC.decode_request({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [3]}]}]}),
    ]
    for sample in samples:
        with pytest.raises(WireError):
            sample()
