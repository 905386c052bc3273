"""Tool-call arguments a model got wrong: every codec keeps the call, with the raw text marked invalid.

A model writes its tool-call arguments itself, so they can be anything: not JSON, JSON cut off, `null`, an
array. That is the model's mistake, not a broken response: decoding keeps the call (name, id) with empty
`arguments` and the text as sent in `raw_arguments`, so an agent can answer it with an error and an observer
can record it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from _wire_helpers import data_events, json_bytes

from trialrun.trajectory import ToolCall
from trialrun.wire._codec import arguments_problem, decode_call, read_arguments
from trialrun.wire._sse import render_sse
from trialrun.wire.anthropic import AnthropicCodec
from trialrun.wire.gemini import GeminiCodec
from trialrun.wire.openai_chat import OpenAIChatCodec
from trialrun.wire.openai_responses import OpenAIResponsesCodec

BAD_TEXTS = ["not json", '{"command": "rm -rf /"', "null", '["a"]', "{bad", "[1]", "7", '"a string"', "{"]
GOOD = '{"command": "ls"}'


def _expect_kept(calls: list[ToolCall], raw: str, name: str = "run_command", call_id: str | None = "c1") -> None:
    assert [(c.name, c.id, c.arguments, c.raw_arguments) for c in calls] == [(name, call_id, {}, raw)]


# -- OpenAI Chat Completions ----------------------------------------------------------------------------------------


def _chat_body(arguments: str) -> bytes:
    call = {"id": "c1", "type": "function", "function": {"name": "run_command", "arguments": arguments}}
    return json_bytes({"choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": [call]},
                                    "finish_reason": "tool_calls"}]})


def _chat_stream(arguments: str) -> bytes:
    head = {"index": 0, "id": "c1", "type": "function", "function": {"name": "run_command", "arguments": ""}}
    pieces = [arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]]
    chunks = [{"choices": [{"index": 0, "delta": {"tool_calls": [head]}}]}]
    chunks += [{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": p}}]}}]}
               for p in pieces]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return data_events(*chunks) + b"data: [DONE]\n\n"


@pytest.mark.parametrize("raw", BAD_TEXTS)
def test_openai_chat_keeps_a_call_with_bad_arguments(raw: str) -> None:
    codec = OpenAIChatCodec()
    _expect_kept(codec.decode_response(_chat_body(raw), False).tool_calls, raw)
    _expect_kept(codec.decode_response(_chat_stream(raw), True).tool_calls, raw)
    history = {"messages": [{"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "run_command", "arguments": raw}}]}]}
    _expect_kept(codec.decode_request(history, "/v1/chat/completions").messages[0].tool_calls, raw)


def test_openai_chat_legacy_function_call_with_bad_arguments() -> None:
    body = json_bytes({"choices": [{"index": 0, "message": {
        "role": "assistant", "function_call": {"name": "run_command", "arguments": "not json"}}}]})
    _expect_kept(OpenAIChatCodec().decode_response(body, False).tool_calls, "not json", call_id=None)


# -- OpenAI Responses -------------------------------------------------------------------------------------------------


def _responses_item(arguments: str) -> dict[str, Any]:
    return {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "run_command", "arguments": arguments,
            "status": "completed"}


def _responses_stream(arguments: str) -> bytes:
    added = {**_responses_item(""), "status": "in_progress"}
    events = [
        {"type": "response.created", "response": {"id": "resp_1", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": added},
        {"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "fc_1", "delta": arguments},
        {"type": "response.function_call_arguments.done", "output_index": 0, "item_id": "fc_1", "arguments": arguments},
        {"type": "response.output_item.done", "output_index": 0, "item": _responses_item(arguments)},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
                                                    "output": [_responses_item(arguments)]}},
    ]
    return render_sse([(event["type"], event) for event in events])


@pytest.mark.parametrize("raw", BAD_TEXTS)
def test_openai_responses_keeps_a_call_with_bad_arguments(raw: str) -> None:
    codec = OpenAIResponsesCodec()
    body = json_bytes({"id": "resp_1", "status": "completed", "output": [_responses_item(raw)]})
    _expect_kept(codec.decode_response(body, False).tool_calls, raw)
    _expect_kept(codec.decode_response(_responses_stream(raw), True).tool_calls, raw)
    history = {"model": "m", "input": [{"type": "function_call", "call_id": "c1", "name": "run_command", "arguments": raw}]}
    _expect_kept(codec.decode_request(history, "/v1/responses").messages[0].tool_calls, raw)


# -- Anthropic Messages ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [[1], "rm -rf /", "{bad", 7, True])
def test_anthropic_keeps_a_tool_use_whose_input_is_not_an_object(value: Any) -> None:
    block = {"type": "tool_use", "id": "c1", "name": "run_command", "input": value}
    body = json_bytes({"type": "message", "role": "assistant", "content": [block], "stop_reason": "tool_use"})
    expected = value if isinstance(value, str) else json.dumps(value)  # a string is taken as JSON text
    _expect_kept(AnthropicCodec().decode_response(body, False).tool_calls, expected)
    history = {"messages": [{"role": "assistant", "content": [block]}]}
    _expect_kept(AnthropicCodec().decode_request(history, "/v1/messages").messages[0].tool_calls, expected)


@pytest.mark.parametrize("raw", ['{"path": ', "[1]", "not json"])
def test_anthropic_stream_keeps_a_tool_use_whose_input_json_is_bad(raw: str) -> None:
    start = {"type": "message_start", "message": {"id": "msg_1", "model": "m", "usage": {"input_tokens": 3}}}
    block = {"type": "content_block_start", "index": 0,
             "content_block": {"type": "tool_use", "id": "c1", "name": "run_command", "input": {}}}
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": raw}}
    events = [start, block, delta, {"type": "content_block_stop", "index": 0}, {"type": "message_stop"}]
    body = render_sse([(event["type"], event) for event in events])
    _expect_kept(AnthropicCodec().decode_response(body, True).tool_calls, raw)


# -- Gemini ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["{bad", [1]])
def test_gemini_keeps_a_function_call_whose_args_are_not_an_object(value: Any) -> None:
    part = {"functionCall": {"name": "run_command", "args": value}}
    body = json_bytes({"candidates": [{"content": {"role": "model", "parts": [part]}}]})
    expected = value if isinstance(value, str) else json.dumps(value)
    _expect_kept(GeminiCodec().decode_response(body, False).tool_calls, expected, call_id=None)


# -- the shared reader ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "arguments", "invalid"),
    [
        (GOOD, {"command": "ls"}, None),
        ({"command": "ls"}, {"command": "ls"}, None),
        ("", {}, None),  # no arguments at all is a valid call of a tool without parameters
        (None, {}, None),
        ("not json", {}, "not json"),
        ("null", {}, "null"),
        ('["a"]', {}, '["a"]'),
        (["a"], {}, '["a"]'),
        (3, {}, "3"),
    ],
)
def test_read_arguments(raw: Any, arguments: dict[str, Any], invalid: str | None) -> None:
    assert read_arguments(raw) == (arguments, invalid)
    call = decode_call("f", raw, "c9")
    assert (call.name, call.id, call.arguments, call.raw_arguments) == ("f", "c9", arguments, invalid)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("not json", "not valid JSON (Expecting value): not json"),
        ('{"command": "rm -rf /"', "not valid JSON (Expecting ',' delimiter): {\"command\": \"rm -rf /\""),
        ("null", "JSON null, not an object: null"),
        ('["a"]', 'a JSON array, not an object: ["a"]'),
        ("7", "a JSON number, not an object: 7"),
        ('"x"', 'a JSON string, not an object: "x"'),
    ],
)
def test_arguments_problem_says_what_is_wrong(raw: str, message: str) -> None:
    assert arguments_problem(raw) == message


def test_arguments_problem_shortens_a_long_text() -> None:
    message = arguments_problem("x" * 5000)
    assert len(message) < 300 and message.endswith("…")


def test_good_arguments_have_no_raw_text() -> None:
    response = OpenAIChatCodec().decode_response(_chat_body(GOOD), False)
    assert [(c.arguments, c.raw_arguments) for c in response.tool_calls] == [({"command": "ls"}, None)]
