"""The Gemini generateContent codec: real recorded traffic, round trips, malformed input.

No official Gemini SDK is installed, so the rendered output is checked against the shapes of the recorded traffic.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _wire_helpers import assert_request_round_trip, data_events, decode_recorded, load, round_trip, traffic_files

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
from trialrun.wire.gemini import GeminiCodec

CODEC = GeminiCodec()
PATH = "/v1beta/models/gemini-test:generateContent"
STREAM_PATH = "/v1beta/models/gemini-test:streamGenerateContent"


# --------------------------------------------------------------------------------------- recorded traffic


@pytest.mark.parametrize("path", traffic_files("gemini", "gemini-stream"), ids=lambda path: path.stem)
def test_every_recorded_gemini_exchange_decodes(path: Path) -> None:
    for exchange, request, response in decode_recorded(CODEC, path):
        assert request.api == "gemini"
        assert request.stream is ("streamGenerateContent" in exchange.path)
        assert response.id and response.usage is not None


def test_model_retry_reads_an_error_result_and_the_retry() -> None:
    exchanges = load("gemini/test_google__test_google_model_retry.yaml")
    trajectory = decode_trajectory(exchanges)
    assert trajectory.notes == [] and len(trajectory.turns) == 3
    assert trajectory.tool_calls == [
        ToolCall("get_capital", {"country": "France"}, None),
        ToolCall("get_capital", {"country": "La France"}, None),
    ]
    assert trajectory.tool_results == [
        ToolResult(
            "pyd_ai_1f2bdea4ea804905a3f05dfe5b96a7fb",
            'The country is not supported. Use "La France" instead.\n\nFix the errors and try again.',
            is_error=True,
        ),
        ToolResult("pyd_ai_9f63eafb0eac47419f4f6c19975e924b", "Paris", is_error=False),
    ]
    assert trajectory.final_text == "Paris"
    # output = candidatesTokenCount + thoughtsTokenCount
    assert [turn.usage for turn in trajectory.turns] == [Usage(57, 15 + 124), Usage(109, 215), Usage(142, 1 + 97)]
    assert {turn.model for turn in trajectory.turns} == {"gemini-2.5-pro"}
    request, _ = decode_exchange(exchanges[0], 1)
    assert request is not None
    assert (request.model, request.system, request.tool_names) == ("gemini-2.5-pro", "You are a helpful chatbot.", ["get_capital"])
    assert request.tools[0].parameters["required"] == ["country"]
    assert request.messages == [Message("user", "What is the capital of France?")]


def test_tool_choice_auto_reads_a_call_its_result_and_the_answer() -> None:
    trajectory = decode_trajectory(load("gemini/test_tool_choice_matrix__test_tool_choice_matrix_auto-google_.yaml"))
    assert trajectory.tool_calls == [ToolCall("get_weather", {"city": "Paris"}, None)]
    assert trajectory.tool_results == [ToolResult("pyd_ai_631cce761e7a447c931ccc129fe40f08", "Sunny, 22C in Paris")]
    assert trajectory.final_text == "The weather in Paris is sunny with a temperature of 22C."
    assert [turn.usage for turn in trajectory.turns] == [Usage(49, 63), Usage(88, 15)]
    assert trajectory.usage == Usage(137, 78)


def test_parallel_calls_without_ids_get_their_results_in_order() -> None:
    trajectory = decode_trajectory(load("gemini/test_google__test_google_instructions_only_with_tool_calls.yaml"))
    assert len(trajectory.turns) == 5
    assert trajectory.turns[0].tool_calls == [ToolCall("generate_topic", {}, None)] * 3
    assert [(r.call_id, r.content) for r in trajectory.turns[0].tool_results] == [
        ("pyd_ai_df5891897e434a16add992cc09f10172", "cars"),
        ("pyd_ai_102eb2f935364e77bac26307e3428e2b", "penguins"),
        ("pyd_ai_cc6e16722f9a428db81532521a689ea7", "cars"),
    ]
    assert trajectory.turns[-1].tool_calls == [
        ToolCall(
            "final_result",
            {
                "response": [
                    "What kind of car does a sheep drive? A Lamborghini!",
                    "Why don't you see penguins in Great Britain? Because they're afraid of Wales!",
                    "What happened when the wheel was invented? It caused a revolution!",
                ]
            },
            None,
        )
    ]
    assert trajectory.turns[0].usage == Usage(83, 30 + 190)
    assert trajectory.final_text == ""


def test_function_response_objects_that_are_not_wrappers_stay_json() -> None:
    trajectory = decode_trajectory(load("gemini/test_tool_search__test_tool_search_eval_google_.yaml"))
    assert trajectory.turns[0].tool_calls == [ToolCall("search_tools", {"queries": ["exchange rate", "currency conversion"]}, "yot5i3fn")]
    assert json.loads(trajectory.turns[0].tool_results[0].content)["discovered_tools"][0]["name"] == "get_exchange_rate"
    assert trajectory.turns[1].tool_results == [ToolResult("qebf65or", "1 USD = 0.92 EUR")]


def test_streamed_iter_stream_reads_calls_and_concatenated_text() -> None:
    trajectory = decode_trajectory(load("gemini-stream/test_google__test_google_model_iter_stream.yaml"))
    assert trajectory.notes == [] and len(trajectory.turns) == 3
    assert trajectory.tool_calls == [
        ToolCall("get_capital", {"country": "France"}, None),
        ToolCall("get_temperature", {"city": "Paris"}, None),
    ]
    assert trajectory.tool_results == [
        ToolResult("pyd_ai_0e1a07b3c2b64d2ab3ad2efbe18e1b97", "Paris"),
        ToolResult("pyd_ai_98b25d994c5648df82f683188629229d", "30°C"),
    ]
    assert trajectory.final_text == "The temperature in Paris is 30°C.\n"
    # The last chunk's usageMetadata wins (the first chunk of the last stream said 169 prompt tokens).
    assert [turn.usage for turn in trajectory.turns] == [Usage(52, 5), Usage(64, 5), Usage(79, 12)]


def test_streamed_thought_signature_call() -> None:
    exchanges = load("gemini-stream/test_google__test_google_streaming_tool_call_thought_signature.yaml")
    trajectory = decode_trajectory(exchanges)
    assert trajectory.tool_calls == [ToolCall("get_country", {}, None)]
    assert trajectory.tool_results == [ToolResult("pyd_ai_29bf73b69e02448588e15893d47a3e7e", "Mexico")]
    assert trajectory.final_text == "The capital of Mexico is Mexico City."
    assert [turn.usage for turn in trajectory.turns] == [Usage(29, 10 + 202), Usage(257, 8)]
    request, response = decode_exchange(exchanges[1], 2)
    assert request is not None and response is not None
    assert (request.model, request.stream, request.system) == ("gemini-3-pro-preview", True, None)
    assert (response.stop_reason, response.id) == ("STOP", "REVVabaiCdq4qtsPnZu96Qo")


def test_cross_provider_file_reads_gemini_call_ids() -> None:
    exchanges = load(
        "gemini-stream/test_tool_search__test_cross_provider_capability_replay_openai-responses-gpt-5.4-google-gemini-3-flash-preview_.yaml"
    )
    request, response = decode_exchange(exchanges[3], 4)
    assert request is not None and response is not None
    assert request.last_user_text == "And what about order-456?"
    # History written by another provider: two model messages in a row, then both results in one user content.
    assert [m.role for m in request.messages] == ["user", "assistant", "assistant", "tool", "assistant", "tool", "assistant", "user"]
    assert request.messages[3].tool_results[0] == ToolResult(
        "call_30QT8TKHJVZ7ktawZDPtvzjf", '{"instructions":"Use the refund policy tool before answering refund questions."}'
    )
    assert response.tool_calls == [ToolCall("lookup_refund_policy", {"order_id": "order-456"}, "lx8q24je")]
    assert response.usage == Usage(335, 24 + 60)
    request, response = decode_exchange(exchanges[4], 5)
    assert request is not None and response is not None
    assert request.last_tool_results == [ToolResult("lx8q24je", "order-456: refund allowed for 30 days")]
    assert response.text == "Order-456 is also eligible for a refund within 30 days."
    assert response.usage == Usage(449, 17)


# ----------------------------------------------------------------------------------------------- round trips

TOOLS = [
    ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    ToolSpec("grep", "", {"type": "object", "properties": {"pattern": {"type": "string"}}}),
]

CONVERSATIONS: dict[str, list[Message]] = {
    "text only": [Message("user", "Hi"), Message("assistant", "Hello! How can I help?")],
    "one tool call": [
        Message("user", "What do the notes say?"),
        Message("assistant", tool_calls=[ToolCall("read_file", {"path": "notes.txt"}, "call_1")]),
        Message("tool", tool_results=[ToolResult("call_1", "hello")]),
        Message("assistant", "The notes say hello."),
    ],
    "parallel tool calls without ids": [
        Message("user", "Search both."),
        Message("assistant", tool_calls=[ToolCall("grep", {"pattern": "a"}), ToolCall("read_file", {"path": "b"})]),
        Message("tool", tool_results=[ToolResult(None, "a.txt"), ToolResult(None, '{"json": "stays a string"}')]),
    ],
    "text and tool calls": [
        Message("user", "Read it."),
        Message("assistant", "Reading now.", [ToolCall("read_file", {"path": "ü.txt", "opts": {"n": [1, 2]}}, "c9")]),
        Message("tool", tool_results=[ToolResult("c9", "contents")]),
        Message("user", "And then?"),
    ],
    "tool error": [
        Message("user", "Read the missing file."),
        Message("assistant", tool_calls=[ToolCall("read_file", {"path": "missing"}, "e1")]),
        Message("tool", tool_results=[ToolResult("e1", "No such file: missing", is_error=True)]),
        Message("assistant", "That file does not exist."),
    ],
}


@pytest.mark.parametrize("name", CONVERSATIONS)
def test_encode_request_round_trips(name: str) -> None:
    messages = CONVERSATIONS[name]
    body = CODEC.encode_request(model="gemini-test", messages=messages, tools=TOOLS, system="Be brief.", max_tokens=64)
    path = CODEC.request_path("gemini-test")
    assert path == PATH
    assert_request_round_trip(CODEC, body, path, messages, TOOLS, system="Be brief.", model="gemini-test")
    assert body["generationConfig"] == {"maxOutputTokens": 64}


def test_encode_request_shapes_the_body_as_the_api_requires() -> None:
    messages = [
        Message("system", "Extra rule."),
        Message("user", "Go."),
        Message("assistant", "Two calls.", [ToolCall("grep", {"pattern": "a"}), ToolCall("read_file", {"path": "x"}, "r1")]),
        Message("tool", tool_results=[ToolResult(None, "ok")]),
        Message("tool", tool_results=[ToolResult("r1", "boom", is_error=True)]),
        Message("user", "Summarise."),
    ]
    body = CODEC.encode_request(model="m", messages=messages, tools=[], system="Base.")
    assert body["systemInstruction"] == {"parts": [{"text": "Base.\n\nExtra rule."}]}
    assert "tools" not in body and "generationConfig" not in body
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "Go."}]},
        {
            "role": "model",
            "parts": [
                {"text": "Two calls."},
                {"functionCall": {"name": "grep", "args": {"pattern": "a"}}},
                {"functionCall": {"name": "read_file", "args": {"path": "x"}, "id": "r1"}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "grep", "response": {"output": "ok"}}},
                {"functionResponse": {"name": "read_file", "id": "r1", "response": {"error": "boom"}}},
                {"text": "Summarise."},
            ],
        },
    ]
    body = CODEC.encode_request(model="m", messages=[], tools=TOOLS)
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {"name": "read_file", "description": "Read a file.", "parametersJsonSchema": TOOLS[0].parameters},
                {"name": "grep", "description": "", "parametersJsonSchema": TOOLS[1].parameters},
            ]
        }
    ]


def test_encode_request_rejects_a_result_that_answers_no_call() -> None:
    with pytest.raises(ValueError, match="answers no tool call"):
        CODEC.encode_request(model="m", messages=[Message("tool", tool_results=[ToolResult(None, "x")])], tools=[])


STEPS: dict[str, Step] = {
    "text only": Step(text="The notes say hello, and the weather is fine today.", usage=Usage(120, 9)),
    "one tool call": Step(tool_calls=[ToolCall("read_file", {"path": "notes.txt"})], usage=Usage(80, 12)),
    "parallel tool calls": Step(
        tool_calls=[ToolCall("grep", {"pattern": "a"}, "g1"), ToolCall("grep", {"pattern": "ünïcode"}, "g2")],
        usage=Usage(300, 40, cached_input_tokens=200),
    ),
    "text and tool calls": Step(text="Let me look.", tool_calls=[ToolCall("read_file", {"path": "a", "n": [1, None]})]),
    "empty": Step(),
}


def _request(stream: bool) -> ModelRequest:
    body = {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}
    return CODEC.decode_request(body, STREAM_PATH if stream else PATH)


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("name", STEPS)
def test_encode_response_round_trips(name: str, streamed: bool) -> None:
    step = STEPS[name]
    request = _request(streamed)
    assert request.stream is streamed
    response = round_trip(CODEC, step, request)
    assert response.tool_calls == step.tool_calls  # ids too: present when the step gave them, else None
    assert response.usage == default_usage(step, request)
    assert (response.model, response.stop_reason) == ("gemini-test", "STOP")
    assert response.id


def test_streamed_response_is_several_data_chunks() -> None:
    step = Step(text="The weather in Paris is sunny.", tool_calls=[ToolCall("get_weather", {"city": "Paris"})], usage=Usage(40, 12))
    events = parse_sse(CODEC.encode_response(step, _request(True)).body)
    assert len(events) == 3 and all(event.event is None for event in events)
    chunks = [event.json() for event in events]
    texts = [part.get("text", "") for chunk in chunks for part in chunk["candidates"][0]["content"]["parts"]]
    assert "".join(texts) == step.text and all(texts[:2])
    assert "finishReason" not in chunks[0]["candidates"][0]
    last = chunks[-1]
    assert last["candidates"][0]["finishReason"] == "STOP"
    assert last["candidates"][0]["content"]["parts"][-1] == {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}
    assert last["usageMetadata"] == {"promptTokenCount": 40, "candidatesTokenCount": 12, "totalTokenCount": 52}
    assert {chunk["responseId"] for chunk in chunks} == {chunks[0]["responseId"]}


def test_a_json_array_stream_decodes_too() -> None:
    # streamGenerateContent without ?alt=sse answers a JSON array of chunks.
    chunks = [event.json() for event in parse_sse(CODEC.encode_response(Step(text="abcdefghi", usage=Usage(3, 2)), _request(True)).body)]
    response = CODEC.decode_response(json.dumps(chunks).encode(), True)
    assert (response.text, response.usage) == ("abcdefghi", Usage(3, 2))


def test_usage_reads_cached_and_tool_prompt_tokens() -> None:
    body = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "thinking...", "thought": True}, {"text": "ok"}]}}],
        "usageMetadata": {
            "promptTokenCount": 100,
            "cachedContentTokenCount": 60,
            "toolUsePromptTokenCount": 7,
            "candidatesTokenCount": 5,
            "thoughtsTokenCount": 11,
        },
    }
    response = CODEC.decode_response(json.dumps(body).encode(), False)
    assert response.text == "ok"  # thought parts are not the answer
    assert response.usage == Usage(107, 16, 60)


def test_a_blocked_prompt_is_an_empty_turn_with_its_reason() -> None:
    body = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 9}}
    response = CODEC.decode_response(json.dumps(body).encode(), False)
    assert (response.text, response.tool_calls, response.stop_reason, response.usage) == ("", [], "SAFETY", Usage(9, 0))


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (ProviderError(status=429, retry_after=2.0), "RESOURCE_EXHAUSTED"),
        (ProviderError(status=503), "UNAVAILABLE"),
        (ProviderError(status=500), "INTERNAL"),
        (ProviderError(status=400, message="bad schema"), "INVALID_ARGUMENT"),
        (ProviderError(status=529), "INTERNAL"),
        (ProviderError(status=429, type="QUOTA"), "QUOTA"),
    ],
)
def test_encode_error(error: ProviderError, status: str) -> None:
    encoded = CODEC.encode_error(error)
    payload = json.loads(encoded.body)["error"]
    assert encoded.status == error.status
    assert (payload["code"], payload["status"]) == (error.status, status) and payload["message"]
    if error.message:
        assert payload["message"] == error.message
    if error.retry_after:
        assert encoded.headers["retry-after"] == "2"
        assert payload["details"][0]["retryDelay"] == "2s"
    else:
        assert "retry-after" not in encoded.headers


def test_a_step_with_an_error_renders_the_error() -> None:
    encoded = CODEC.encode_response(Step(error=ProviderError(status=429)), _request(True))
    assert encoded.status == 429 and json.loads(encoded.body)["error"]["status"] == "RESOURCE_EXHAUSTED"


@pytest.mark.parametrize(
    ("path", "handled"),
    [
        ("/v1beta/models/gemini-2.0-flash:generateContent", True),
        ("/v1beta/models/gemini-2.0-flash:streamGenerateContent", True),
        ("/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.0-flash:generateContent", True),
        ("/v1beta/models/gemini-2.0-flash:countTokens", False),
        ("/v1beta/models", False),
        ("/v1beta/openai/chat/completions", False),
        ("/v1/messages", False),
    ],
)
def test_handles(path: str, handled: bool) -> None:
    assert CODEC.handles(path) is handled


def test_model_and_stream_come_from_the_path() -> None:
    request = CODEC.decode_request({"contents": []}, "/v1beta/models/gemini-2.5-flash:streamGenerateContent")
    assert (request.model, request.stream) == ("gemini-2.5-flash", True)
    request = CODEC.decode_request({"contents": []}, "/v1beta/models/gemini-2.5-flash:generateContent")
    assert (request.model, request.stream) == ("gemini-2.5-flash", False)


# ------------------------------------------------------------------------------------------- malformed input


GOOD_CHUNK = {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}}]}


@pytest.mark.parametrize(
    ("body", "streamed", "message"),
    [
        (b"not json", False, "response body is not valid JSON"),
        (b'"a string"', False, "expected a GenerateContentResponse object"),
        (b'{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}', False, "RESOURCE_EXHAUSTED Quota exceeded"),
        (b'{"foo":1}', False, "no 'candidates'"),
        (b'{"candidates":{}}', False, "'candidates' is not a list"),
        (b'{"candidates":[1]}', False, r"candidates\[0\] is not an object"),
        (b'{"candidates":[{"content":{"parts":{}}}]}', False, "parts is not a list"),
        (b'{"candidates":[{"content":{"parts":[{"functionCall":{"args":{}}}]}}]}', False, "functionCall has no 'name'"),
        (b'{"candidates":[],"usageMetadata":{"promptTokenCount":"9"}}', False, "promptTokenCount is '9'"),
        (b"", True, "no events"),
        (b"data: {oops\n\n", True, "not valid JSON"),
        (b"data: [1]\n\n", True, "stream chunk 1 is a JSON list"),
        (b"[]", True, "no chunks"),
        (data_events(GOOD_CHUNK, {"error": {"status": "INTERNAL", "message": "boom"}}), True, "stream chunk 2 is an error: INTERNAL boom"),
    ],
)
def test_malformed_responses_raise_wire_error(body: bytes, streamed: bool, message: str) -> None:
    with pytest.raises(WireError, match=message):
        CODEC.decode_response(body, streamed)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "no 'contents' list"),
        ({"contents": ["hi"]}, r"contents\[0\] is a str"),
        ({"contents": [{"role": "system", "parts": []}]}, r"contents\[0\]\.role is 'system'"),
        ({"contents": [{"role": "user", "parts": "hi"}]}, r"contents\[0\]\.parts is not a list"),
        ({"contents": [{"role": "user", "parts": [{"text": 3}]}]}, "'text' is a int"),
        ({"contents": [{"role": "user", "parts": [{"functionResponse": {"name": "f", "response": "x"}}]}]}, "'response' is a str"),
        ({"contents": [{"role": "model", "parts": [{"functionCall": {"name": "f", "id": 3}}]}]}, "'id' is a int"),
        ({"contents": [], "tools": {}}, "'tools' is a dict"),
        ({"contents": [], "tools": [{"functionDeclarations": [{"description": "x"}]}]}, r"functionDeclarations\[0\] has no string 'name'"),
        ({"contents": [], "tools": [{"functionDeclarations": [{"name": "f", "parameters": []}]}]}, "parameters are not an object"),
        ({"contents": [], "systemInstruction": 3}, "'systemInstruction' is a int"),
    ],
)
def test_malformed_requests_raise_wire_error(body: dict[str, Any], message: str) -> None:
    with pytest.raises(WireError, match=message):
        CODEC.decode_request(body, PATH)


def test_a_malformed_exchange_becomes_a_note_naming_it() -> None:
    request_body = json.dumps({"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}).encode()
    url = "https://generativelanguage.googleapis.com/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
    headers = {"content-type": "text/event-stream"}
    exchanges = [Exchange("POST", url, request_body=request_body, status=200, response_headers=headers, response_body=b"")]
    trajectory = decode_trajectory(exchanges)
    assert trajectory.turns == []
    assert trajectory.notes == [
        "exchange 1 (POST /v1beta/models/gemini-test:streamGenerateContent): response stream has no events (empty or truncated)"
    ]
