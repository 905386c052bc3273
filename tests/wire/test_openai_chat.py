"""The OpenAI Chat Completions codec: real recorded traffic, round trips, the official SDK, malformed input."""

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
    data_events,
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
    WireError,
    decode_exchange,
    decode_trajectory,
)
from trialrun.wire._sse import parse_sse
from trialrun.wire.openai_chat import OpenAIChatCodec

CODEC = OpenAIChatCodec()
CHAT_FILES = files_handled_by(CODEC, "openai-chat", "openai-chat-stream", "openai-responses-stream")


# -- recorded traffic -------------------------------------------------------------------------------------------------


def test_fixture_folders_hold_chat_traffic() -> None:
    folders = {path.parent.name for path in CHAT_FILES}
    assert {"openai-chat", "openai-chat-stream"} <= folders
    assert all(path in CHAT_FILES for path in traffic_files("openai-chat", "openai-chat-stream"))


@pytest.mark.parametrize("path", CHAT_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_recorded_chat_exchange_decodes(path: Path) -> None:
    for _, request, response in decode_recorded(CODEC, path):
        assert request.api == "openai-chat" and request.messages
        assert response.usage is not None and response.usage.input_tokens > 0
        assert response.text or response.tool_calls


def test_dbos_model_retry_file() -> None:
    trajectory = decode_trajectory(load("openai-chat/test_dbos__test_dbos_agent_with_model_retry.yaml"))
    model = "gpt-4o-2024-08-06"
    assert summary(trajectory) == [
        (
            "",
            [("get_weather_in_city", {"city": "CDMX"}, "call_fFAB8MNL3tUdfNIIdsIJTo0H")],
            [("call_fFAB8MNL3tUdfNIIdsIJTo0H", "Did you mean Mexico City?\n\nFix the errors and try again.")],
            Usage(47, 17, 0),
            model,
        ),
        (
            "",
            [("get_weather_in_city", {"city": "Mexico City"}, "call_hLYHO5lK5lmiukTZv6VQzz3x")],
            [("call_hLYHO5lK5lmiukTZv6VQzz3x", "sunny")],
            Usage(87, 17, 0),
            model,
        ),
        ("The weather in Mexico City is currently sunny.", [], [], Usage(116, 10, 0), model),
    ]
    assert trajectory.final_text == "The weather in Mexico City is currently sunny."
    assert trajectory.usage == Usage(250, 44, 0)
    assert trajectory.notes == []


def test_prefect_parallel_tool_calls_file() -> None:
    trajectory = decode_trajectory(load("openai-chat/test_prefect__test_prefect_agent_with_hitl_tool.yaml"))
    model = "gpt-4o-2024-08-06"
    assert summary(trajectory) == [
        (
            "",
            [
                ("delete_file", {"path": ".env"}, "call_HMKxpFuWMpNPfuK5352En5En"),
                ("create_file", {"path": "test.txt"}, "call_CAES42XVgl0EvrUmnIoHkMSS"),
            ],
            [("call_HMKxpFuWMpNPfuK5352En5En", "true"), ("call_CAES42XVgl0EvrUmnIoHkMSS", "Success")],
            Usage(71, 46, 0),
            model,
        ),
        (
            "The file `.env` has been deleted, and `test.txt` has been successfully created.",
            [],
            [],
            Usage(133, 20, 0),
            model,
        ),
    ]


def test_system_message_and_tools_are_read_from_a_recorded_request() -> None:
    exchanges = load("openai-chat/test_openai__test_openai_instructions_with_tool_calls_keep_instructions.yaml")
    request, response = decode_exchange(exchanges[1], 2)
    assert request is not None and response is not None
    assert request.system == "You are a helpful assistant."
    assert request.model == "gpt-4.1-mini" and request.stream is False
    assert [t.name for t in request.tools] == ["get_temperature"]
    assert request.tools[0].parameters["required"] == ["city"]
    assert [m.role for m in request.messages] == ["user", "assistant", "tool"]
    assert request.messages[1].tool_calls == [
        ToolCall("get_temperature", {"city": "Tokyo"}, "call_bhZkmIKKItNGJ41whHUHB7p9")
    ]
    assert request.last_tool_results == [ToolResult("call_bhZkmIKKItNGJ41whHUHB7p9", "20.0")]
    assert response.text == "The temperature in Tokyo is currently 20.0 degrees Celsius."
    assert response.stop_reason == "stop" and response.id == "chatcmpl-BMxEx6B8JEj6oDC45MOWKp0phg8UP"


def test_user_content_parts_keep_text_and_skip_files() -> None:
    exchanges = load("openai-chat/test_openai__test_document_as_binary_content_input_with_tool.yaml")
    request, _ = decode_exchange(exchanges[0], 1)
    assert request is not None
    assert request.last_user_text == (
        "What is the main content on this document? Use the get_upper_case tool to get the upper case of the text."
    )


def test_streamed_tool_loop_file() -> None:
    exchanges = load("openai-chat-stream/test_openai__test_run_stream_sync_streams_real_model.yaml")
    assert all(e.streamed for e in exchanges)
    trajectory = decode_trajectory(exchanges)
    model = "gpt-4o-mini-2024-07-18"
    assert summary(trajectory) == [
        (
            "",
            [("get_capital", {"country": "UK"}, "call_ZR5UUuTt3pf61kjwAJIYdVMj")],
            [("call_ZR5UUuTt3pf61kjwAJIYdVMj", "London")],
            Usage(53, 15, 0),
            model,
        ),
        ("The capital of the UK is London.", [], [], Usage(78, 9, 0), model),
    ]
    _, response = decode_exchange(exchanges[0], 1)
    assert response is not None and response.stop_reason == "tool_calls"


def test_streamed_parallel_calls_file() -> None:
    trajectory = decode_trajectory(load("openai-chat-stream/test_temporal__test_complex_agent_run.yaml"))
    model = "gpt-4o-2024-08-06"
    assert summary(trajectory) == [
        (
            "",
            [
                ("get_country", {}, "call_q2UyBRP7eXNTzAoR8lEhjc9Z"),
                ("get_product_name", {}, "call_b51ijcpFkDiTQG1bQzsrmtW5"),
            ],
            [("call_q2UyBRP7eXNTzAoR8lEhjc9Z", "Mexico"), ("call_b51ijcpFkDiTQG1bQzsrmtW5", "Pydantic AI")],
            Usage(364, 40, 0),
            model,
        ),
        (
            "",
            [("get_weather", {"city": "Mexico City"}, "call_LwxJUB9KppVyogRRLQsamRJv")],
            [("call_LwxJUB9KppVyogRRLQsamRJv", "sunny")],
            Usage(423, 15, 0),
            model,
        ),
        (
            "",
            [
                (
                    "final_result",
                    {
                        "answers": [
                            {"label": "Capital", "answer": "The capital of Mexico is Mexico City."},
                            {"label": "Weather", "answer": "The weather in Mexico City is currently sunny."},
                            {"label": "Product Name", "answer": "The product name is Pydantic AI."},
                        ]
                    },
                    "call_CCGIWaMeYWmxOQ91orkmTvzn",
                )
            ],
            [],
            Usage(448, 62, 0),
            model,
        ),
    ]
    assert trajectory.tools_used == ["get_country", "get_product_name", "get_weather", "final_result"]


def test_chat_exchanges_between_mcp_traffic_file() -> None:
    trajectory = decode_trajectory(
        load("openai-chat-stream/test_temporal__test_mcptoolset_dynamic_toolset_in_workflow.yaml")
    )
    assert len(trajectory.turns) == 2
    first, last = trajectory.turns
    assert first.tool_calls == [
        ToolCall(
            "ask_question",
            {
                "repoName": "pydantic/pydantic-ai",
                "question": "Can you give a brief overview of the pydantic-ai repository?",
            },
            "call_KobEc1Uzdjjc7YGnc7pWF5dR",
        )
    ]
    assert len(first.tool_results) == 1 and first.tool_results[0].call_id == "call_KobEc1Uzdjjc7YGnc7pWF5dR"
    assert first.tool_results[0].content.startswith("Pydantic AI is a Python agent framework designed to build")
    assert first.usage == Usage(212, 38, 0)
    assert last.text.startswith("The Pydantic AI repository is a Python agent framework")
    assert last.usage == Usage(1319, 145, 0)


# -- round trips ------------------------------------------------------------------------------------------------------

STEPS = OPENAI_STEPS  # "text", "one-call", "parallel" (the second call's id given), "text+calls"


def _request(stream: bool, include_usage: bool = True) -> ModelRequest:
    body: dict[str, Any] = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    if stream and include_usage:
        body["stream_options"] = {"include_usage": True}
    return CODEC.decode_request(body, "/v1/chat/completions")


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("name", list(STEPS))
def test_response_round_trip(name: str, stream: bool) -> None:
    step = STEPS[name]
    decoded = round_trip(CODEC, step, _request(stream))
    assert_call_ids(decoded, step, "call_")
    assert decoded.usage == step.usage
    assert decoded.model == "gpt-4o"
    assert decoded.stop_reason == ("tool_calls" if step.tool_calls else "stop")
    assert decoded.id and decoded.id.startswith("chatcmpl-")


def test_encoding_is_deterministic_and_ids_differ_between_turns() -> None:
    step = STEPS["parallel"]
    first = CODEC.encode_response(step, _request(False))
    assert CODEC.encode_response(step, _request(False)).body == first.body
    later = CODEC.decode_request(
        {
            "model": "gpt-4o",
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "yo"},
                {"role": "user", "content": "again"},
            ],
        }
    )
    second = CODEC.encode_response(step, later)
    ids = [c.id for c in CODEC.decode_response(first.body, False).tool_calls]
    assert len(set(ids)) == 2
    assert ids[0] != CODEC.decode_response(second.body, False).tool_calls[0].id
    assert json.loads(first.body)["id"] != json.loads(second.body)["id"]


def test_stream_event_sequence() -> None:
    step = STEPS["text+calls"]
    events = parse_sse(CODEC.encode_response(step, _request(True)).body)
    assert events[-1].data == "[DONE]"
    chunks = [json.loads(e.data) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert all("role" not in c["choices"][0]["delta"] for c in chunks[1:] if c["choices"])
    content = [
        c["choices"][0]["delta"]["content"]
        for c in chunks[1:]
        if c["choices"] and "content" in c["choices"][0]["delta"]
    ]
    assert len(content) > 1 and "".join(content) == step.text
    calls = [
        c["choices"][0]["delta"]["tool_calls"][0]
        for c in chunks
        if c["choices"] and "tool_calls" in c["choices"][0]["delta"]
    ]
    heads = [c for c in calls if "id" in c]
    assert [h["function"]["name"] for h in heads] == ["search", "noargs"] and all(
        h["function"]["arguments"] == "" for h in heads
    )
    assert len([c for c in calls if c["index"] == 0]) > 2, "arguments arrive in several fragments"
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["prompt_tokens"] == 55


def test_stream_without_include_usage_has_no_usage_chunk() -> None:
    body = CODEC.encode_response(STEPS["text"], _request(True, include_usage=False)).body
    chunks = [json.loads(e.data) for e in parse_sse(body) if e.data != "[DONE]"]
    assert all(c["choices"] for c in chunks) and all("usage" not in c for c in chunks)
    assert CODEC.decode_response(body, streamed=True).usage is None


def test_default_usage_when_step_gives_none() -> None:
    decoded = CODEC.decode_response(CODEC.encode_response(Step(text="hello"), _request(False)).body, False)
    assert decoded.usage is not None and decoded.usage.input_tokens > 0 and decoded.usage.output_tokens > 0


def test_request_round_trip() -> None:
    body = CODEC.encode_request(
        model="gpt-4o", messages=HISTORY, tools=HISTORY_TOOLS, system="Be brief.", max_tokens=100
    )
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert body["messages"][2]["tool_calls"][0]["function"]["arguments"] == '{"path":"a.txt"}'
    assert body["max_completion_tokens"] == 100 and "stream" not in body
    assert CODEC.request_path("gpt-4o") == "/chat/completions"
    assert_request_round_trip(
        CODEC, body, "/v1/chat/completions", HISTORY, HISTORY_TOOLS, system="Be brief.", model="gpt-4o"
    )


def test_request_round_trip_fills_missing_call_ids() -> None:
    messages = [
        Message("user", "go"),
        Message("assistant", tool_calls=[ToolCall("f", {})]),
        Message("tool", tool_results=[ToolResult(None, "done")]),
    ]
    decoded = CODEC.decode_request(CODEC.encode_request(model="m", messages=messages, tools=[]))
    call_id = decoded.messages[1].tool_calls[0].id
    assert call_id and decoded.messages[2].tool_results == [ToolResult(call_id, "done")]


def test_handles_only_chat_completions_paths() -> None:
    assert CODEC.handles("/v1/chat/completions")
    assert CODEC.handles("/openai/deployments/gpt/chat/completions")
    assert not CODEC.handles("/v1/completions")
    assert not CODEC.handles("/v1/responses")
    assert not CODEC.handles("/v1/messages")


def test_other_tool_types_and_legacy_functions_are_listed() -> None:
    request = CODEC.decode_request(
        {
            "model": "m",
            "messages": [
                {"role": "developer", "content": [{"type": "text", "text": "Rules."}]},
                {"role": "user", "content": "x"},
            ],
            "tools": [{"type": "custom", "custom": {"name": "apply_patch", "description": "Patch."}}],
            "functions": [{"name": "legacy", "parameters": {"type": "object"}}],
        }
    )
    assert request.tool_names == ["apply_patch", "legacy"]
    assert request.system == "Rules."


# -- the official SDK accepts what the codec renders --------------------------------------------------------------


TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {"name": "read_file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}},
    }
]
LOOP = OPENAI_LOOP  # "Reading." + read_file notes.txt and b.txt (usage 50/20/10), then "The notes say hello." (120/9)


def _follow_up(message: Any) -> list[Any]:
    """The messages an agent sends after a tool-calling turn: its calls and one result per call."""
    calls = [
        {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
        for c in message.tool_calls
    ]
    results = [
        {"role": "tool", "tool_call_id": c.id, "content": f"contents of {json.loads(c.function.arguments)['path']}"}
        for c in message.tool_calls
    ]
    return [
        {"role": "user", "content": "Read my notes."},
        {"role": "assistant", "content": message.content, "tool_calls": calls},
        *results,
    ]


def _check_loop(server: ScriptedServer, first: Any, second: Any, first_usage: Any, second_usage: Any) -> None:
    """First turn: text + two calls; second: the answer. The server saw the tool results the SDK sent back."""
    assert first.content == "Reading."
    assert [(c.function.name, json.loads(c.function.arguments)) for c in first.tool_calls] == [
        ("read_file", {"path": "notes.txt"}),
        ("read_file", {"path": "b.txt"}),
    ]
    assert (
        first_usage.prompt_tokens,
        first_usage.completion_tokens,
        first_usage.prompt_tokens_details.cached_tokens,
    ) == (50, 20, 10)
    assert second.content == "The notes say hello." and not second.tool_calls
    assert (second_usage.prompt_tokens, second_usage.completion_tokens) == (120, 9)
    results = server.requests[1].last_tool_results
    assert [r.call_id for r in results] == [c.id for c in first.tool_calls]
    assert [r.content for r in results] == ["contents of notes.txt", "contents of b.txt"]


def _collect_chunks(chunks: list[Any]) -> tuple[Any, Any]:
    """Fold raw `stream=True` chunks into (message-like object, usage), as an agent consuming the stream does."""
    text, calls, usage = "", {}, None
    for chunk in chunks:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for delta in choice.delta.tool_calls or []:
                call = calls.setdefault(delta.index, {"id": delta.id, "name": "", "arguments": ""})
                call["name"] += (delta.function.name or "") if delta.function else ""
                call["arguments"] += (delta.function.arguments or "") if delta.function else ""
    function = lambda c: type("F", (), {"name": c["name"], "arguments": c["arguments"]})  # noqa: E731
    tool_calls = [type("C", (), {"id": c["id"], "function": function(c)}) for _, c in sorted(calls.items())]
    return type("M", (), {"content": text, "tool_calls": tool_calls}), usage


def test_sdk_create_sync() -> None:
    server = ScriptedServer(CODEC, *LOOP)
    client = openai_client(server)
    first = client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "Read my notes."}], tools=TOOLS
    )
    assert first.choices[0].finish_reason == "tool_calls" and first.model == "gpt-4o"
    second = client.chat.completions.create(model="gpt-4o", messages=_follow_up(first.choices[0].message), tools=TOOLS)
    _check_loop(server, first.choices[0].message, second.choices[0].message, first.usage, second.usage)


def test_sdk_create_stream_sync() -> None:
    server = ScriptedServer(CODEC, *LOOP)
    client = openai_client(server)
    options: Any = {"include_usage": True}
    messages: Any = [{"role": "user", "content": "Read my notes."}]
    first, first_usage = _collect_chunks(
        list(
            client.chat.completions.create(
                model="gpt-4o", messages=messages, tools=TOOLS, stream=True, stream_options=options
            )
        )
    )
    chunks = list(
        client.chat.completions.create(
            model="gpt-4o", messages=_follow_up(first), tools=TOOLS, stream=True, stream_options=options
        )
    )
    second, second_usage = _collect_chunks(chunks)
    _check_loop(server, first, second, first_usage, second_usage)


def test_sdk_stream_helper_sync() -> None:
    server = ScriptedServer(CODEC, *LOOP)
    client = openai_client(server)
    options: Any = {"include_usage": True}
    with client.chat.completions.stream(
        model="gpt-4o", messages=[{"role": "user", "content": "Read my notes."}], tools=TOOLS, stream_options=options
    ) as stream:
        kinds = {event.type for event in stream}
        first = stream.get_final_completion()
    assert {
        "content.delta",
        "content.done",
        "tool_calls.function.arguments.delta",
        "tool_calls.function.arguments.done",
    } <= kinds
    with client.chat.completions.stream(
        model="gpt-4o", messages=_follow_up(first.choices[0].message), tools=TOOLS, stream_options=options
    ) as stream:
        second = stream.get_final_completion()
    _check_loop(server, first.choices[0].message, second.choices[0].message, first.usage, second.usage)


def test_sdk_async() -> None:
    async def run() -> None:
        options: Any = {"include_usage": True}
        messages: Any = [{"role": "user", "content": "Read my notes."}]
        server = ScriptedServer(CODEC, *LOOP)
        client = openai_async_client(server)
        first = await client.chat.completions.create(model="gpt-4o", messages=messages, tools=TOOLS)
        second = await client.chat.completions.create(
            model="gpt-4o", messages=_follow_up(first.choices[0].message), tools=TOOLS
        )
        _check_loop(server, first.choices[0].message, second.choices[0].message, first.usage, second.usage)

        server = ScriptedServer(CODEC, *LOOP)
        client = openai_async_client(server)
        stream = await client.chat.completions.create(
            model="gpt-4o", messages=messages, tools=TOOLS, stream=True, stream_options=options
        )
        raw_first, raw_first_usage = _collect_chunks([chunk async for chunk in stream])
        stream = await client.chat.completions.create(
            model="gpt-4o", messages=_follow_up(raw_first), tools=TOOLS, stream=True, stream_options=options
        )
        raw_second, raw_second_usage = _collect_chunks([chunk async for chunk in stream])
        _check_loop(server, raw_first, raw_second, raw_first_usage, raw_second_usage)

        server = ScriptedServer(CODEC, *LOOP)
        client = openai_async_client(server)
        async with client.chat.completions.stream(
            model="gpt-4o", messages=messages, tools=TOOLS, stream_options=options
        ) as helper:
            helped_first = await helper.get_final_completion()
        async with client.chat.completions.stream(
            model="gpt-4o", messages=_follow_up(helped_first.choices[0].message), tools=TOOLS, stream_options=options
        ) as helper:
            helped_second = await helper.get_final_completion()
        _check_loop(
            server,
            helped_first.choices[0].message,
            helped_second.choices[0].message,
            helped_first.usage,
            helped_second.usage,
        )

    asyncio.run(run())


def test_sdk_raises_rate_limit_error() -> None:
    server = ScriptedServer(CODEC, Step(error=ProviderError(status=429, retry_after=1.0)))
    with pytest.raises(openai.RateLimitError) as caught:
        openai_client(server).chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    error = caught.value
    assert error.status_code == 429 and error.code == "rate_limit_exceeded"
    assert error.response.headers["retry-after"] == "1"
    assert error.request_id and error.request_id.startswith("req_")
    assert "Rate limit" in error.message


def test_encoded_errors() -> None:
    overloaded = CODEC.encode_error(ProviderError(status=503, message="Busy.", type="overloaded", retry_after=2.5))
    assert overloaded.status == 503 and overloaded.headers["retry-after"] == "2.5"
    assert json.loads(overloaded.body) == {
        "error": {"message": "Busy.", "type": "overloaded", "param": None, "code": None}
    }
    bad = CODEC.encode_error(ProviderError(status=400))
    assert "retry-after" not in bad.headers and json.loads(bad.body)["error"]["type"] == "invalid_request_error"
    assert bad.headers["x-request-id"] != overloaded.headers["x-request-id"]


# -- malformed input --------------------------------------------------------------------------------------------------


def _message(*calls: Any) -> bytes:
    """A completion whose message holds `calls` (raw tool-call objects)."""
    return json_bytes({"choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": list(calls)}}]})


def _call_delta(**fields: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, **fields}]}}]}


_HEAD = _call_delta(id="call_1", type="function", function={"name": "f", "arguments": ""})

MALFORMED_RESPONSES = [
    ("not-json", b"Internal Server Error", False, "not valid JSON"),
    ("empty", b"", False, "empty"),
    ("array", b"[1, 2]", False, "response body is an array"),
    ("no-choices", b'{"id": "x"}', False, "'choices'"),
    ("choices-not-list", b'{"choices": {"index": 0}}', False, "'choices' is an object"),
    ("message-missing", b'{"choices": [{"index": 0}]}', False, "'message'"),
    ("error-body", b'{"error": {"message": "quota"}}', False, "quota"),
    ("call-without-name", _message({"id": "c", "function": {"arguments": "{}"}}), False, "has no name"),
    ("call-type-not-string", _message({"id": "c", "type": ["function"]}), False, "'type' is an array"),
    ("usage-not-number", b'{"choices":[],"usage":{"prompt_tokens":"many"}}', False, "usage.prompt_tokens"),
    ("stream-empty", b"", True, "stream has no events"),
    ("stream-garbage", b"<html>502 Bad Gateway</html>", True, "not an event stream"),
    ("stream-chunk-not-json", b"data: {oops\n\n", True, "not valid JSON"),
    ("stream-chunk-not-object", b"data: [1, 2]\n\n", True, "expected a JSON object"),
    ("stream-error-chunk", data_events({"error": {"message": "server overloaded"}}), True, "server overloaded"),
    ("stream-call-without-name", data_events(_call_delta(function={"arguments": "{}"})), True, "never received a name"),
]


@pytest.mark.parametrize(("body", "streamed", "message"), cases(MALFORMED_RESPONSES))
def test_malformed_responses_raise_wire_error(body: bytes, streamed: bool, message: str) -> None:
    with pytest.raises(WireError, match=re.escape(message)):
        CODEC.decode_response(body, streamed)


MALFORMED_REQUESTS = [
    ("no-messages", {"model": "m"}, "'messages'"),
    ("message-not-object", {"messages": ["hi"]}, "request message 1 is a string"),
    ("unknown-role", {"messages": [{"role": "robot", "content": "x"}]}, "role 'robot'"),
    ("tools-not-list", {"messages": [], "tools": {"name": "f"}}, "'tools' is an object"),
    ("content-part-not-object", {"messages": [{"role": "user", "content": [3]}]}, "content part 1"),
]


@pytest.mark.parametrize(("body", "message"), cases(MALFORMED_REQUESTS))
def test_malformed_requests_raise_wire_error(body: dict[str, Any], message: str) -> None:
    with pytest.raises(WireError, match=message):
        CODEC.decode_request(body, "/v1/chat/completions")


def test_a_cut_stream_keeps_what_arrived() -> None:
    body = CODEC.encode_response(STEPS["text+calls"], _request(True)).body
    cut = body[: body.index(b'"finish_reason":"tool_calls"')].rsplit(b"\n\n", 1)[0] + b"\n\n"
    decoded = CODEC.decode_response(cut, streamed=True)
    assert decoded.text == STEPS["text+calls"].text
    assert [c.name for c in decoded.tool_calls] == ["search", "noargs"]
    assert decoded.usage is None and decoded.stop_reason is None


def test_stream_mislabelled_as_json_is_still_read() -> None:
    body = CODEC.encode_response(STEPS["one-call"], _request(True)).body
    assert CODEC.decode_response(body, streamed=False).tool_calls[0].arguments == {"path": "notes.txt"}
    json_body = CODEC.encode_response(STEPS["one-call"], _request(False)).body
    assert CODEC.decode_response(json_body, streamed=True).tool_calls[0].arguments == {"path": "notes.txt"}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_any_truncation_decodes_or_raises_wire_error(stream: bool) -> None:
    """A body cut anywhere gives either what arrived (text is a prefix of the real text) or a WireError."""
    decoded = decodable_cuts(CODEC, STEPS["text+calls"], _request(stream))
    # Every proper prefix of a JSON body is invalid JSON; most prefixes of a stream hold whole events.
    assert decoded > 5 if stream else decoded == 0


# -- a stream cut off before its end: the partial turn is kept, with a note ------------------------------------------

_CHAT_PATH = "/v1/chat/completions"
_TRUNCATED_NOTE = (
    f"exchange 1 (POST {_CHAT_PATH}): response stream ended before a finish_reason or [DONE] (truncated?); "
    "the partial turn is kept"
)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _exchange(stream: bytes) -> Exchange:
    body = json_bytes({"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}], "stream": True})
    return Exchange("POST", f"https://api.openai.com{_CHAT_PATH}", {"content-type": "application/json"}, body, 200,
                    {"content-type": "text/event-stream"}, stream)


def test_a_stream_cut_before_finish_reason_and_done_is_a_partial_turn_with_a_note() -> None:
    cut = data_events(_chunk({"role": "assistant", "content": "Hel"}), _chunk({"content": "lo, I am"}))
    trajectory = decode_trajectory([_exchange(cut)])
    assert [turn.text for turn in trajectory.turns] == ["Hello, I am"]
    assert trajectory.notes == [_TRUNCATED_NOTE]
    # A cut tool call whose arguments did arrive whole is kept too.
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path"'}}
    more = {"index": 0, "function": {"arguments": ': "a.txt"}'}}
    trajectory = decode_trajectory([_exchange(data_events(_chunk({"tool_calls": [call]}), _chunk({"tool_calls": [more]})))])
    assert [(c.name, c.arguments) for c in trajectory.tool_calls] == [("read_file", {"path": "a.txt"})]
    assert _TRUNCATED_NOTE in trajectory.notes  # beside: the request offered no tools, the call got no result
    assert any("offered no tools" in n for n in trajectory.notes) and any("never got a result" in n for n in trajectory.notes)


@pytest.mark.parametrize(
    "ending",
    [
        pytest.param(data_events(_chunk({}, "stop")) + b"data: [DONE]\n\n", id="finish-and-done"),
        pytest.param(data_events(_chunk({}, "stop")), id="finish-without-done"),
        pytest.param(b"data: [DONE]\n\n", id="done-without-finish"),
    ],
)
def test_a_stream_that_ends_properly_has_no_note(ending: bytes) -> None:
    trajectory = decode_trajectory([_exchange(data_events(_chunk({"content": "Hello"})) + ending)])
    assert [turn.text for turn in trajectory.turns] == ["Hello"] and trajectory.notes == []


def test_a_cut_rendered_stream_says_it_is_partial() -> None:
    body = CODEC.encode_response(STEPS["text+calls"], _request(True)).body
    cut = body[: body.index(b'"finish_reason":"tool_calls"')].rsplit(b"\n\n", 1)[0] + b"\n\n"
    assert CODEC.decode_response(cut, streamed=True).notes == [_TRUNCATED_NOTE.split(": ", 1)[1]]
    assert CODEC.decode_response(body, streamed=True).notes == []
