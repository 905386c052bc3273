"""Gemini's proto-style field names (issue 9, item 5): `function_call`, `function_response`, `inline_data`, ...

The REST API accepts both JSON spellings of its proto fields; llm-gemini (and LiteLLM) send the proto names. The
files in tests/fixtures/provider-traffic/gemini-proto are llm-gemini's own recordings (see SOURCES.md): requests in
the proto spelling, responses gzip. The values asserted here were read in those files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from _wire_helpers import PROVIDER_TRAFFIC, decode_recorded, traffic_files

from trialrun.models import Cassette, read_trajectory
from trialrun.trajectory import ToolCall, ToolResult, Usage
from trialrun.wire import Message, decode_trajectory
from trialrun.wire._sse import parse_sse
from trialrun.wire.gemini import GeminiCodec

CODEC = GeminiCodec()
PATH = "/v1beta/models/gemini-test:generateContent"
PROTO = PROVIDER_TRAFFIC / "gemini-proto"


@pytest.mark.parametrize("path", traffic_files("gemini-proto", "gemini-gzip"), ids=lambda path: path.stem)
def test_every_proto_style_and_gzip_gemini_exchange_decodes(path: Path) -> None:
    for _exchange, request, response in decode_recorded(CODEC, path):
        assert request.api == "gemini" and response.usage is not None


def test_llm_gemini_tool_loop_keeps_both_calls_their_results_and_the_answer() -> None:
    trajectory = read_trajectory(PROTO / "test_gemini__test_tools.yaml")
    assert trajectory.notes == []
    assert [[(c.name, c.arguments) for c in turn.tool_calls] for turn in trajectory.turns] == [
        [("pelican_name_generator", {})], [("pelican_name_generator", {})], []]
    assert [turn.tool_results for turn in trajectory.turns] == [
        [ToolResult("call_27db36357f594e73b557ec8f70da9e87", "Charles")],
        [ToolResult("call_97666b91d4c14f44b94ab69dded4ab10", "Sammy")],
        [],
    ]
    assert trajectory.turns[-1].text == "How about Charles and Sammy?"
    assert trajectory.turns[-1].usage == Usage(137, 6)


@pytest.mark.parametrize("name, call, result, final", [
    ("test_gemini__test_tools_with_gemini_3_thought_signatures.yaml", ToolCall("multiply", {"x": 5, "y": 3}),
     ToolResult(None, "15"), "5 times 3 is 15."),
    ("test_gemini__test_tools_with_nested_pydantic_models.yaml",
     ToolCall("add_person", {"name": "Alice", "age": 30,
                             "address": {"street": "123 Main St", "city": "San Francisco", "zipcode": "94102"}},
              "whZntcQw"),
     ToolResult("whZntcQw", "Added Alice (age 30) living at 123 Main St, San Francisco"), "Alice (age 30) living at"),
])
def test_proto_style_results_are_not_lost(name: str, call: ToolCall, result: ToolResult, final: str) -> None:
    trajectory = read_trajectory(PROTO / name)
    assert trajectory.notes == []
    assert trajectory.tool_calls == [call]
    assert trajectory.tool_results == [result]
    assert trajectory.turns[-1].text.startswith(final)


def test_the_proto_style_request_reads_the_same_as_the_camel_case_one() -> None:
    def body(call: str, response: str, data: str) -> dict[str, Any]:
        return {"contents": [
            {"role": "user", "parts": [{"text": "look"}, {data: {"mime_type": "image/png", "data": "iVBORw0K"}}]},
            {"role": "model", "parts": [{call: {"name": "read_file", "args": {"path": "a.txt"}, "id": "c1"}}]},
            {"role": "user", "parts": [{response: {"name": "read_file", "id": "c1", "response": {"output": "hi"}}}]},
        ]}

    proto = CODEC.decode_request(body("function_call", "function_response", "inline_data"), PATH)
    camel = CODEC.decode_request(body("functionCall", "functionResponse", "inlineData"), PATH)
    assert proto.messages == camel.messages == [
        Message("user", "look"),
        Message("assistant", "", [ToolCall("read_file", {"path": "a.txt"}, "c1")]),
        Message("tool", tool_results=[ToolResult("c1", "hi")]),
    ]


def test_a_proto_style_response_reads_calls_usage_model_and_stop_reason() -> None:
    snake = {
        "candidates": [{"content": {"role": "model", "parts": [{"function_call": {"name": "bash", "args": {"command": "ls"}}}]},
                        "finish_reason": "STOP"}],
        "usage_metadata": {"prompt_token_count": 12, "candidates_token_count": 4, "thoughts_token_count": 2,
                           "cached_content_token_count": 5},
        "model_version": "gemini-2.5-flash", "response_id": "r-1",
    }
    response = CODEC.decode_response(json.dumps(snake).encode(), streamed=False)
    assert response.tool_calls == [ToolCall("bash", {"command": "ls"})]
    assert (response.usage, response.model, response.id, response.stop_reason) == (
        Usage(12, 6, 5), "gemini-2.5-flash", "r-1", "STOP")
    blocked = CODEC.decode_response(b'{"prompt_feedback": {"block_reason": "SAFETY"}}', streamed=False)
    assert (blocked.tool_calls, blocked.stop_reason) == ([], "SAFETY")


def test_the_proto_style_cassette_replays_as_llm_gemini_sends_it() -> None:
    """llm-gemini posts its own JSON with httpx: the replay gives it the recorded stream, decoded."""
    path = PROTO / "test_gemini__test_tools.yaml"
    cassette = Cassette(path)
    from trialrun.models._cassette_io import load_exchanges

    calls = []
    with httpx.Client(transport=cassette) as client:
        for exchange in load_exchanges(path):
            response = client.post(exchange.url, content=exchange.request_body,
                                   headers={"content-type": "application/json"})
            assert "content-encoding" not in response.headers
            chunks = response.json() if response.content.lstrip().startswith(b"[") else [
                json.loads(e.data) for e in parse_sse(response.content)]
            calls += [p["functionCall"]["name"] for c in chunks for cand in c.get("candidates", [])
                      for p in cand["content"].get("parts", []) if "functionCall" in p]
    assert calls == ["pelican_name_generator", "pelican_name_generator"]
    assert (cassette.problems, cassette.unused) == ([], 0)
    assert [t.tool_results for t in cassette.trajectory().turns] == [t.tool_results for t in decode_trajectory(
        load_exchanges(path)).turns]
