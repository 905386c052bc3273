"""The OpenAI Responses codec: real recorded traffic, round trips, the official SDK, malformed input."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import openai
import pytest
from _wire_helpers import (
    HISTORY,
    HISTORY_TOOLS,
    OPENAI_LOOP,
    OPENAI_STEPS,
    ScriptedServer,
    assert_call_ids,
    assert_request_round_trip,
    cases,
    decodable_cuts,
    decode_recorded,
    files_handled_by,
    json_bytes,
    load,
    openai_async_client,
    openai_client,
    round_trip,
    summary,
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
from trialrun.wire._sse import parse_sse, render_sse
from trialrun.wire.openai_responses import OpenAIResponsesCodec

CODEC = OpenAIResponsesCodec()
RESPONSES_FILES = files_handled_by(CODEC, "openai-chat", "openai-chat-stream", "openai-responses-stream")


# -- recorded traffic -------------------------------------------------------------------------------------------------


def test_every_responses_fixture_file_is_covered() -> None:
    in_folder = [path for path in RESPONSES_FILES if path.parent.name == "openai-responses-stream"]
    assert traffic_files("openai-responses-stream") == in_folder
    assert any(path.parent.name == "openai-chat-stream" for path in RESPONSES_FILES)


@pytest.mark.parametrize("path", RESPONSES_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_recorded_responses_exchange_decodes(path: Path) -> None:
    for _, request, response in decode_recorded(CODEC, path):
        assert request.api == "openai-responses" and request.messages
        assert response.usage is not None and response.usage.input_tokens > 0
        assert response.model and response.id and response.id.startswith("resp_")


def test_function_call_file() -> None:
    exchanges = load("openai-responses-stream/test_openai_responses__test_text_output_function.yaml")
    model = "gpt-4o-2024-08-06"
    assert summary(decode_trajectory(exchanges)) == [
        (
            "",
            [("get_user_country", {}, "call_aTJhYjzmixZaVGqwl5gn2Ncr")],
            [("call_aTJhYjzmixZaVGqwl5gn2Ncr", "Mexico")],
            Usage(36, 12, 0),
            model,
        ),
        ("The largest city in Mexico is Mexico City.", [], [], Usage(59, 11, 0), model),
    ]


def test_reasoning_and_commentary_file() -> None:
    exchanges = load("openai-responses-stream/test_openai_responses__test_openai_responses_phase_live.yaml")
    model = "gpt-5.5-2026-04-23"
    assert summary(decode_trajectory(exchanges)) == [
        (
            'I\'ll check the capital lookup tool for "PotatoLand."',
            [("get_capital", {"country": "PotatoLand"}, "call_ALAJMWK9buNN7RXxxXbECcHa")],
            [("call_ALAJMWK9buNN7RXxxXbECcHa", "Potato City")],
            Usage(63, 72, 0),
            model,
        ),
        ("The capital of PotatoLand is **Potato City**.", [], [], Usage(150, 16, 0), model),
    ]
    request, _ = decode_exchange(exchanges[1], 2)
    assert request is not None
    assert request.system == "Briefly narrate what you are about to do before calling each tool."
    assert [m.role for m in request.messages] == ["user", "assistant", "tool"]
    assert request.messages[1].text == 'I\'ll check the capital lookup tool for "PotatoLand."'
    assert request.messages[1].tool_calls == [
        ToolCall("get_capital", {"country": "PotatoLand"}, "call_ALAJMWK9buNN7RXxxXbECcHa")
    ]
    assert request.tools == [ToolSpec("get_capital", "", request.tools[0].parameters)]
    assert request.tools[0].parameters["properties"] == {"country": {"type": "string"}}


def test_cached_tokens_file() -> None:
    trajectory = decode_trajectory(
        load("openai-responses-stream/test_openai_responses__test_openai_responses_thinking_with_tool_calls.yaml")
    )
    plan = (
        "Plan:\n1) Determine required first-letter acrostics for lines: "
        "odd lines -> SAMIRA; even lines -> DAWOOD (12 total lines).\n"
        "2) For each line, select a world capital whose name begins with the required first letter.\n"
        "3) Compose each line so that the first letter of every word spells that chosen capital "
        "(word-initial acrostic), while keeping imagery poetic and coherent.\n"
        "4) Double-check all acrostics (line-initial and word-initial) for accuracy.\n5) Deliver the 12-line poem."
    )
    first, second = trajectory.turns
    assert first.text == ""
    assert first.tool_calls == [ToolCall("update_plan", {"plan": plan}, "call_gL7JE6GDeGGsFubqO2XGytyO")]
    assert first.tool_results == [ToolResult("call_gL7JE6GDeGGsFubqO2XGytyO", "plan updated")]
    assert first.usage == Usage(124, 1926, 0)
    assert second.text.startswith("Softly old fountains illumine alleys\nDunes over harbor aglow\n")
    assert second.text.endswith("Dusty alleys murmur, amber spices curl under starlight")
    assert second.usage == Usage(2087, 124, 2048)


def test_streamed_tool_search_file() -> None:
    exchanges = load("openai-responses-stream/test_tool_search__test_openai_native_tool_search_streaming.yaml")
    assert all(e.streamed for e in exchanges)
    model = "gpt-5.4-2026-03-05"
    assert summary(decode_trajectory(exchanges)) == [
        (
            "",
            [("get_exchange_rate", {"from_currency": "USD", "to_currency": "EUR"}, "call_CeXueyTqEJ1rgm84BHSwNPz8")],
            [("call_CeXueyTqEJ1rgm84BHSwNPz8", "1 USD = 0.92 EUR")],
            Usage(600, 47, 0),
            model,
        ),
        ("1 USD = 0.92 EUR", [], [], Usage(496, 12, 0), model),
    ]
    request, response = decode_exchange(exchanges[0], 1)
    assert request is not None and response is not None
    assert request.tool_names == ["tool_search", "get_exchange_rate", "stock_lookup"]
    assert response.stop_reason == "completed"


def test_streamed_conversation_file_skips_conversation_endpoints() -> None:
    exchanges = load(
        "openai-responses-stream/test_openai_responses__test_openai_conversation_id_streaming_provider_details.yaml"
    )
    assert [CODEC.handles(e.path) for e in exchanges] == [False, True, False]
    trajectory = decode_trajectory(exchanges)
    assert summary(trajectory) == [("streamed", [], [], Usage(21, 3, 0), "gpt-4.1-2025-04-14")]
    request, _ = decode_exchange(exchanges[1], 2)
    assert request is not None and request.stream is True
    assert request.system == "Follow the user instructions exactly."
    assert request.last_user_text == "Reply exactly: streamed"


def test_client_side_tool_search_is_not_an_agent_tool_call() -> None:
    trajectory = decode_trajectory(
        load("openai-responses-stream/test_tool_search__test_openai_execution_client_round_trip.yaml")
    )
    assert [turn.tool_calls for turn in trajectory.turns] == [
        [],
        [
            # the tool search loaded it as a namespace of its own: the call names it beside its name
            ToolCall(
                "get_exchange_rate", {"from_currency": "USD", "to_currency": "EUR"}, "call_9E8xt6bgb3QNCE9bfIW274ih",
                namespace="get_exchange_rate",
            )
        ],
        [],
    ]
    assert trajectory.tool_results == [ToolResult("call_9E8xt6bgb3QNCE9bfIW274ih", "1 USD = 0.92 EUR")]
    assert trajectory.final_text == "1 USD = 0.92 EUR."


def test_responses_exchange_inside_a_chat_file() -> None:
    exchanges = load("openai-chat-stream/test_openai__test_openai_model_thinking_part.yaml")
    request, response = decode_exchange(exchanges[0], 1)
    assert request is not None and response is not None
    assert request.last_user_text == "How do I cross the street?"
    assert response.text.startswith("I'm happy to help. When crossing the street, safety is the top priority.")
    assert response.usage == Usage(13, 1915, 0) and response.tool_calls == []


# -- round trips ------------------------------------------------------------------------------------------------------

STEPS = OPENAI_STEPS  # "text", "one-call", "parallel" (the second call's id given), "text+calls"


def _request(stream: bool) -> ModelRequest:
    return CODEC.decode_request({"model": "gpt-4.1", "input": "hi", "stream": stream}, "/v1/responses")


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("name", list(STEPS))
def test_response_round_trip(name: str, stream: bool) -> None:
    step = STEPS[name]
    decoded = round_trip(CODEC, step, _request(stream))
    assert_call_ids(decoded, step, "call_")
    assert decoded.usage == step.usage
    assert decoded.model == "gpt-4.1" and decoded.stop_reason == "completed"
    assert decoded.id and decoded.id.startswith("resp_")


def test_stream_event_sequence() -> None:
    step = STEPS["text+calls"]
    events = parse_sse(CODEC.encode_response(step, _request(True)).body)
    data = [json.loads(e.data) for e in events]
    assert [e.event for e in events] == [d["type"] for d in data]
    assert [d["sequence_number"] for d in data] == list(range(len(data)))
    kinds = [d["type"] for d in data]
    assert kinds[:6] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
    ]
    text_done = kinds.index("response.output_text.done")
    assert kinds[text_done : text_done + 4] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
    ]
    assert kinds.count("response.function_call_arguments.done") == 2
    assert kinds[-1] == "response.completed"
    assert "".join(d["delta"] for d in data if d["type"] == "response.output_text.delta") == step.text
    assert data[0]["response"]["status"] == "in_progress" and data[0]["response"]["usage"] is None
    assert data[-1]["response"]["usage"]["input_tokens"] == 55
    search_deltas = [
        d["delta"] for d in data if d["type"] == "response.function_call_arguments.delta" and d["output_index"] == 1
    ]
    assert len(search_deltas) > 1 and json.loads("".join(search_deltas)) == {"q": "weather in Paris"}


def test_request_round_trip() -> None:
    body = CODEC.encode_request(
        model="gpt-4.1", messages=HISTORY, tools=HISTORY_TOOLS, system="Be brief.", max_tokens=100
    )
    assert body["instructions"] == "Be brief." and body["store"] is False and body["max_output_tokens"] == 100
    assert body["tools"][0] == {
        "type": "function",
        "name": "read_file",
        "description": "Read a file.",
        "parameters": HISTORY_TOOLS[0].parameters,
    }
    assert [item["type"] for item in body["input"]][:5] == [
        "message",
        "message",
        "function_call",
        "function_call",
        "function_call_output",
    ]
    assert body["input"][2]["arguments"] == '{"path":"a.txt"}'
    assert CODEC.request_path("gpt-4.1") == "/responses"
    assert_request_round_trip(CODEC, body, "/v1/responses", HISTORY, HISTORY_TOOLS, system="Be brief.", model="gpt-4.1")


def test_input_forms() -> None:
    request = CODEC.decode_request(
        {
            "model": "m",
            "instructions": "Be kind.",
            "input": [
                {
                    "type": "message",
                    "role": "developer",
                    "content": [{"type": "input_text", "text": "No tools after 5pm."}],
                },
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "Look:"},
                        {"type": "input_image", "image_url": "data:..."},
                    ],
                },
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "function_call", "call_id": "c1", "name": "see", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "a cat"}]},
                {"type": "web_search_call", "id": "ws_1", "status": "completed"},
                {"type": "item_reference", "id": "msg_1"},
            ],
            "tools": [{"type": "web_search"}, {"type": "custom", "name": "patch", "description": "Apply a patch."}],
        }
    )
    assert request.system == "Be kind.\n\nNo tools after 5pm."
    assert request.messages == [
        Message("user", "Look:"),
        Message("assistant", tool_calls=[ToolCall("see", {}, "c1")]),
        Message("tool", tool_results=[ToolResult("c1", "a cat")]),
    ]
    assert request.tool_names == ["web_search", "patch"]
    assert CODEC.decode_request({"model": "m", "input": "plain"}).messages == [Message("user", "plain")]


def test_handles_only_response_creation() -> None:
    assert CODEC.handles("/v1/responses")
    assert not CODEC.handles("/v1/responses/resp_123")
    assert not CODEC.handles("/v1/responses/resp_123/input_items")
    assert not CODEC.handles("/v1/responses/compact")
    assert not CODEC.handles("/v1/conversations")
    assert not CODEC.handles("/v1/chat/completions")


def _stream(final: dict[str, Any]) -> bytes:
    """A stream whose deltas say "draft" and whose `response.completed` carries `final`."""
    item = {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    return render_sse(
        [
            (
                "response.created",
                {
                    "type": "response.created",
                    "response": {**final, "status": "in_progress", "output": [], "usage": None},
                },
            ),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "output_index": 0,
                    "content_index": 0,
                    "item_id": "msg_1",
                    "delta": "draft",
                },
            ),
            ("response.completed", {"type": "response.completed", "response": final}),
        ]
    )


def test_final_response_wins_over_deltas() -> None:
    message = {
        "id": "msg_1",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "final"}],
    }
    final = {
        "id": "resp_1",
        "model": "m",
        "status": "completed",
        "output": [message],
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
    assert CODEC.decode_response(_stream(final), streamed=True).text == "final"
    # A final response without output items (as some proxies send) falls back to what the deltas built.
    decoded = CODEC.decode_response(_stream({**final, "output": []}), streamed=True)
    assert decoded.text == "draft" and decoded.usage == Usage(3, 1, 0)


def test_a_cut_stream_is_rebuilt_from_deltas() -> None:
    body = CODEC.encode_response(STEPS["text+calls"], _request(True)).body
    # Cut inside the second call: its arguments ("{}") have arrived, its output_item.done has not.
    cut = body[: body.index(b"event: response.function_call_arguments.done", body.index(b'"name":"noargs"'))]
    decoded = CODEC.decode_response(cut, streamed=True)
    assert decoded.text == STEPS["text+calls"].text
    assert [(c.name, c.arguments) for c in decoded.tool_calls] == [
        ("search", {"q": "weather in Paris"}),
        ("noargs", {}),
    ]
    assert decoded.usage is None and decoded.stop_reason is None and decoded.model == "gpt-4.1"


# -- the official SDK accepts what the codec renders --------------------------------------------------------------


TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "read_file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        "strict": False,
    }
]
LOOP = OPENAI_LOOP  # "Reading." + read_file notes.txt and b.txt (usage 50/20/10), then "The notes say hello." (120/9)
FIRST_INPUT: Any = [{"role": "user", "content": "Read my notes."}]


def _follow_up(output: list[Any]) -> Any:
    """What an agent sends next: the history, the model's output items, and one output per function call."""
    items = [item.model_dump(exclude_none=True) for item in output]
    results = [
        {
            "type": "function_call_output",
            "call_id": item.call_id,
            "output": f"contents of {json.loads(item.arguments)['path']}",
        }
        for item in output
        if item.type == "function_call"
    ]
    return [*FIRST_INPUT, *items, *results]


def _check_loop(server: ScriptedServer, first: Any, second: Any) -> None:
    """First response: text + two calls; second: the answer. The server saw the tool results the SDK sent back."""
    assert first.output_text == "Reading."
    calls = [item for item in first.output if item.type == "function_call"]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("read_file", {"path": "notes.txt"}),
        ("read_file", {"path": "b.txt"}),
    ]
    assert (first.usage.input_tokens, first.usage.output_tokens, first.usage.input_tokens_details.cached_tokens) == (
        50,
        20,
        10,
    )
    assert second.output_text == "The notes say hello."
    assert [item.type for item in second.output] == ["message"]
    assert (second.usage.input_tokens, second.usage.output_tokens) == (120, 9)
    results = server.requests[1].last_tool_results
    assert [r.call_id for r in results] == [c.call_id for c in calls]
    assert [r.content for r in results] == ["contents of notes.txt", "contents of b.txt"]


def _final_from_events(events: list[Any]) -> Any:
    kinds = [event.type for event in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds
    return events[-1].response


def test_sdk_create_sync() -> None:
    server = ScriptedServer(CODEC, *LOOP)
    client = openai_client(server)
    first = client.responses.create(model="gpt-4.1", input=FIRST_INPUT, tools=TOOLS)
    second = client.responses.create(model="gpt-4.1", input=_follow_up(first.output), tools=TOOLS)
    _check_loop(server, first, second)
    assert first.status == "completed" and first.model == "gpt-4.1"


def test_sdk_create_stream_sync() -> None:
    server = ScriptedServer(CODEC, *LOOP)
    client = openai_client(server)
    first_events = list(client.responses.create(model="gpt-4.1", input=FIRST_INPUT, tools=TOOLS, stream=True))
    first = _final_from_events(first_events)
    assert "".join(e.delta for e in first_events if e.type == "response.output_text.delta") == "Reading."
    second = _final_from_events(
        list(client.responses.create(model="gpt-4.1", input=_follow_up(first.output), tools=TOOLS, stream=True))
    )
    _check_loop(server, first, second)


def test_sdk_stream_helper_sync() -> None:
    server = ScriptedServer(CODEC, *LOOP)
    client = openai_client(server)
    with client.responses.stream(model="gpt-4.1", input=FIRST_INPUT, tools=TOOLS) as stream:
        kinds = {event.type for event in stream}
        first = stream.get_final_response()
    assert {"response.output_text.delta", "response.function_call_arguments.delta", "response.completed"} <= kinds
    with client.responses.stream(model="gpt-4.1", input=_follow_up(first.output), tools=TOOLS) as stream:
        second = stream.get_final_response()
    _check_loop(server, first, second)


def test_sdk_async() -> None:
    async def run() -> None:
        server = ScriptedServer(CODEC, *LOOP)
        client = openai_async_client(server)
        first = await client.responses.create(model="gpt-4.1", input=FIRST_INPUT, tools=TOOLS)
        second = await client.responses.create(model="gpt-4.1", input=_follow_up(first.output), tools=TOOLS)
        _check_loop(server, first, second)

        server = ScriptedServer(CODEC, *LOOP)
        client = openai_async_client(server)
        stream = await client.responses.create(model="gpt-4.1", input=FIRST_INPUT, tools=TOOLS, stream=True)
        raw_first = _final_from_events([event async for event in stream])
        stream = await client.responses.create(
            model="gpt-4.1", input=_follow_up(raw_first.output), tools=TOOLS, stream=True
        )
        raw_second = _final_from_events([event async for event in stream])
        _check_loop(server, raw_first, raw_second)

        server = ScriptedServer(CODEC, *LOOP)
        client = openai_async_client(server)
        async with client.responses.stream(model="gpt-4.1", input=FIRST_INPUT, tools=TOOLS) as helper:
            helped_first = await helper.get_final_response()
        async with client.responses.stream(
            model="gpt-4.1", input=_follow_up(helped_first.output), tools=TOOLS
        ) as helper:
            helped_second = await helper.get_final_response()
        _check_loop(server, helped_first, helped_second)

    asyncio.run(run())


def test_sdk_raises_rate_limit_error() -> None:
    server = ScriptedServer(CODEC, Step(error=ProviderError(status=429, message="Slow down.", retry_after=3)))
    with pytest.raises(openai.RateLimitError) as caught:
        openai_client(server).responses.create(model="gpt-4.1", input="hi")
    assert caught.value.status_code == 429 and caught.value.code == "rate_limit_exceeded"
    assert caught.value.response.headers["retry-after"] == "3"
    assert "Slow down." in caught.value.message


def test_sdk_async_raises_server_error() -> None:
    async def run() -> None:
        server = ScriptedServer(CODEC, Step(error=ProviderError(status=500)))
        with pytest.raises(openai.InternalServerError):
            await openai_async_client(server).responses.create(model="gpt-4.1", input="hi")

    asyncio.run(run())


# -- malformed input --------------------------------------------------------------------------------------------------


def _events(*events: dict[str, Any]) -> bytes:
    return render_sse([(event.get("type"), event) for event in events])


def _added(kind: str) -> dict[str, Any]:
    item = {"id": "fc_1", "type": kind, "call_id": "call_1", "name": "f", "arguments": "", "content": []}
    return {"type": "response.output_item.added", "output_index": 0, "item": item}


_CREATED = {"type": "response.created", "response": {"id": "resp_1", "output": []}}
_FAILED = {
    "type": "response.failed",
    "response": {"id": "r", "status": "failed", "error": {"message": "model crashed"}},
}

MALFORMED_RESPONSES = [
    ("not-json", b"upstream connect error", False, "not valid JSON"),
    ("array", b"[]", False, "response body is an array"),
    ("no-output", b'{"id": "resp_1", "status": "completed"}', False, "'output' is null/missing"),
    ("output-not-list", b'{"output": "hello"}', False, "'output' is a string"),
    ("item-not-object", b'{"output": [7]}', False, "output item 1 is a number"),
    ("item-type-not-string", b'{"output": [{"type": {"a": 1}}]}', False, "'type' is an object"),
    ("error-body", b'{"error": {"message": "bad key"}}', False, "bad key"),
    ("call-without-name", json_bytes({"output": [{"type": "function_call", "arguments": "{}"}]}), False, "has no name"),
    (
        "usage-not-number",
        b'{"output":[],"usage":{"input_tokens":null,"output_tokens":[1]}}',
        False,
        "usage.output_tokens",
    ),
    ("stream-empty", b"\n\n", True, "stream has no events"),
    ("stream-event-not-json", b"event: response.created\ndata: {oops\n\n", True, "not valid JSON"),
    ("stream-event-not-object", b'data: "text"\n\n', True, "expected a JSON object"),
    (
        "stream-error-event",
        _events({"type": "error", "message": "The server had an error"}),
        True,
        "The server had an error",
    ),
    ("stream-failed", _events(_CREATED, _FAILED), True, "model crashed"),
    (
        "stream-delta-without-text",
        _events(_CREATED, _added("message"), {"type": "response.output_text.delta", "output_index": 0}),
        True,
        "no 'delta' string",
    ),
    (
        "stream-delta-without-index",
        _events({"type": "response.output_text.delta", "item_id": "msg_x", "delta": "hi"}),
        True,
        "has no output_index",
    ),
]


@pytest.mark.parametrize(("body", "streamed", "message"), cases(MALFORMED_RESPONSES))
def test_malformed_responses_raise_wire_error(body: bytes, streamed: bool, message: str) -> None:
    with pytest.raises(WireError, match=re.escape(message)):
        CODEC.decode_response(body, streamed)


MALFORMED_REQUESTS = [
    ("input-not-list", {"model": "m", "input": 42}, "'input' is a number"),
    ("item-not-object", {"model": "m", "input": ["hi"]}, "request input item 1 is a string"),
    ("unknown-role", {"model": "m", "input": [{"role": "robot", "content": "x"}]}, "role 'robot'"),
    ("tools-not-list", {"input": "x", "tools": "all"}, "'tools' is a string"),
    (
        "function-without-name",
        {"input": "x", "tools": [{"type": "function", "parameters": {}}]},
        "function without a name",
    ),
]


@pytest.mark.parametrize(("body", "message"), cases(MALFORMED_REQUESTS))
def test_malformed_requests_raise_wire_error(body: dict[str, Any], message: str) -> None:
    with pytest.raises(WireError, match=re.escape(message)):
        CODEC.decode_request(body, "/v1/responses")


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_any_truncation_decodes_or_raises_wire_error(stream: bool) -> None:
    """A body cut anywhere gives either what arrived (text is a prefix of the real text) or a WireError."""
    decoded = decodable_cuts(CODEC, STEPS["text+calls"], _request(stream))
    # Every proper prefix of a JSON body is invalid JSON; most prefixes of a stream hold whole events.
    assert decoded > 5 if stream else decoded == 0


# -- a stream cut off before response.completed: the partial turn is kept, with a note -------------------------------

_TRUNCATED = "response stream ended before response.completed (truncated?); the partial turn is kept"


def test_a_stream_cut_before_response_completed_is_a_partial_turn_with_a_note() -> None:
    body = CODEC.encode_response(STEPS["text+calls"], _request(True)).body
    cut = body[: body.index(b"event: response.completed")]
    request = json_bytes({"model": "gpt-4.1", "input": "hi", "stream": True})
    exchanges = [
        Exchange("POST", "https://api.openai.com/v1/responses", {}, request, 200, {"content-type": "text/event-stream"},
                 response)
        for response in (cut, body)
    ]
    trajectory = decode_trajectory(exchanges[:1])
    assert [turn.text for turn in trajectory.turns] == [STEPS["text+calls"].text]
    assert [(c.name, c.arguments) for c in trajectory.tool_calls] == [
        (c.name, c.arguments) for c in STEPS["text+calls"].tool_calls
    ]
    # (the request offers no tools and the calls get no results: the other notes say so)
    assert [n for n in trajectory.notes if "truncated" in n] == [f"exchange 1 (POST /v1/responses): {_TRUNCATED}"]
    assert not [n for n in decode_trajectory(exchanges[1:]).notes if "truncated" in n]  # the whole stream: no note


def test_a_stream_of_text_deltas_only_is_kept_and_noted() -> None:
    item = {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    cut = render_sse([
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
        ("response.output_text.delta", {"type": "response.output_text.delta", "output_index": 0, "content_index": 0,
                                        "delta": "Hal"}),
        ("response.output_text.delta", {"type": "response.output_text.delta", "output_index": 0, "content_index": 0,
                                        "delta": "f an answ"}),
    ])
    decoded = CODEC.decode_response(cut, streamed=True)
    assert decoded.text == "Half an answ" and decoded.notes == [_TRUNCATED]
