"""Done-when 3: replaying the real provider traffic through the official SDKs returns the recorded responses.

Every file of tests/fixtures/provider-traffic is replayed request by request: model calls through the openai and
anthropic SDKs (`create(**recorded_body)`, streams iterated), other traffic (Gemini, file uploads, MCP) through raw
httpx. What the SDK parsed is compared with the recorded body, and the trajectory the cassette observed equals
the one read from the file directly.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from trialrun.models import Cassette, read_trajectory
from trialrun.models._cassette_io import load_exchanges
from trialrun.trajectory import Trajectory
from trialrun.wire import Exchange
from trialrun.wire._sse import parse_sse

TRAFFIC = Path(__file__).resolve().parents[1] / "fixtures" / "provider-traffic"
ALL_FILES = sorted(TRAFFIC.glob("*/*.yaml"))

# The recorded bodies name models the SDKs now flag as deprecated.
pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")


class Clients:
    """The clients an agent would use, all on one cassette (the SDKs' own httpx2 for anthropic)."""

    def __init__(self, cassette: Cassette) -> None:
        self.openai = openai.OpenAI(api_key="sk-test", http_client=httpx.Client(transport=cassette), max_retries=0)
        self.anthropic = anthropic.Anthropic(
            api_key="test", http_client=httpx2.Client(transport=cassette), max_retries=0
        )
        self.raw = httpx.Client(transport=cassette)


def _recorded_json(exchange: Exchange) -> Any:
    return json.loads(exchange.response_body)


def _recorded_events(exchange: Exchange) -> list[Any]:
    return [json.loads(e.data) for e in parse_sse(exchange.response_body) if e.data and e.data != "[DONE]"]


def _replay(exchange: Exchange, clients: Clients) -> tuple[Any, Any]:
    """Send the recorded request the way an agent would; return (what came back, what was recorded), comparable."""
    try:
        body = json.loads(exchange.request_body)
    except ValueError:  # a multipart upload, an empty DELETE
        body = None
    path = exchange.path
    if path.endswith("/chat/completions"):
        if body.get("stream"):
            chunks = list(clients.openai.chat.completions.create(**body))
            got = [(c.id, [(ch.delta.content, [t.function.arguments for t in ch.delta.tool_calls or []])
                           for ch in c.choices]) for c in chunks]
            want = [(e["id"], [(ch["delta"].get("content"), [t["function"].get("arguments")
                                                             for t in ch["delta"].get("tool_calls") or []])
                               for ch in e["choices"]]) for e in _recorded_events(exchange)]
            return got, want
        completion = clients.openai.chat.completions.create(**body)
        recorded = _recorded_json(exchange)
        got = (completion.id, completion.choices[0].message.content,
               [(t.function.name, t.function.arguments) for t in completion.choices[0].message.tool_calls or []],
               completion.usage.prompt_tokens, completion.usage.completion_tokens)
        message = recorded["choices"][0]["message"]
        want = (recorded["id"], message.get("content"),
                [(t["function"]["name"], t["function"]["arguments"]) for t in message.get("tool_calls") or []],
                recorded["usage"]["prompt_tokens"], recorded["usage"]["completion_tokens"])
        return got, want
    if path.endswith("/responses") and exchange.method == "POST":
        if body.get("stream"):
            events = list(clients.openai.responses.create(**body))
            return [(e.type, e.sequence_number) for e in events], [
                (e["type"], e["sequence_number"]) for e in _recorded_events(exchange)
            ]
        response = clients.openai.responses.create(**body)
        recorded = _recorded_json(exchange)
        got = (response.id, [o.type for o in response.output], response.usage.input_tokens, response.usage.output_tokens)
        want = (recorded["id"], [o["type"] for o in recorded["output"]], recorded["usage"]["input_tokens"],
                recorded["usage"]["output_tokens"])
        return got, want
    if path.endswith("/v1/messages"):
        if body.get("stream"):
            events = list(clients.anthropic.messages.create(**body))
            # The SDK swallows keep-alive pings; every other event must come through.
            return [e.type for e in events], [e["type"] for e in _recorded_events(exchange) if e["type"] != "ping"]
        message = clients.anthropic.messages.create(**body)
        recorded = _recorded_json(exchange)
        got = (message.id, [b.type for b in message.content], message.usage.input_tokens, message.usage.output_tokens)
        want = (recorded["id"], [b["type"] for b in recorded["content"]], recorded["usage"]["input_tokens"],
                recorded["usage"]["output_tokens"])
        return got, want
    # Gemini, file uploads, conversations, MCP: raw httpx, byte for byte.
    with clients.raw.stream(exchange.method, exchange.url, content=exchange.request_body,
                            headers={"content-type": exchange.request_headers.get("content-type", "application/json")}) as response:
        got_body = response.read()
        return (response.status_code, got_body), (exchange.status, exchange.response_body)


def _turns(trajectory: Trajectory) -> list[tuple[Any, ...]]:
    return [
        (turn.text, [(c.name, c.arguments, c.id) for c in turn.tool_calls],
         [(r.call_id, r.content, r.is_error) for r in turn.tool_results], turn.usage, turn.model)
        for turn in trajectory.turns
    ]


@pytest.mark.parametrize("path", ALL_FILES, ids=[f"{p.parent.name}/{p.stem[:60]}" for p in ALL_FILES])
def test_every_fixture_replays_through_the_official_sdks(path: Path) -> None:
    recorded = load_exchanges(path)
    cassette = Cassette(path)
    clients = Clients(cassette)
    for number, exchange in enumerate(recorded, start=1):
        got, want = _replay(exchange, clients)
        assert got == want, f"exchange {number} ({exchange.method} {exchange.path})"
    assert cassette.problems == []
    assert cassette.unused == 0
    assert len(cassette.exchanges) == len(recorded)
    assert _turns(cassette.trajectory()) == _turns(read_trajectory(path))


def test_folders_are_all_covered() -> None:
    assert {p.parent.name for p in ALL_FILES} >= {
        "openai-chat", "openai-chat-stream", "openai-responses-stream", "anthropic", "anthropic-stream", "gemini",
        "gemini-stream",
    }


# -- concrete values, one file per folder ---------------------------------------------------------------------------

def test_openai_chat_replay_concrete_values() -> None:
    path = TRAFFIC / "openai-chat" / "test_openai__test_openai_instructions_with_tool_calls_keep_instructions.yaml"
    first, second = (json.loads(e.request_body) for e in load_exchanges(path))
    client = Clients(Cassette(path)).openai
    completion = client.chat.completions.create(**first)
    call = completion.choices[0].message.tool_calls[0]
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == (
        "call_bhZkmIKKItNGJ41whHUHB7p9", "get_temperature", {"city": "Tokyo"})
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (50, 15)
    final = client.chat.completions.create(**second)
    assert final.choices[0].message.content == "The temperature in Tokyo is currently 20.0 degrees Celsius."


def test_openai_chat_stream_replay_concrete_values_async() -> None:
    path = TRAFFIC / "openai-chat-stream" / "test_openai__test_run_stream_sync_streams_real_model.yaml"
    first, second = (json.loads(e.request_body) for e in load_exchanges(path))
    cassette = Cassette(path)
    client = openai.AsyncOpenAI(api_key="test", http_client=httpx.AsyncClient(transport=cassette), max_retries=0)

    async def main() -> tuple[str, str, str]:
        arguments, name = "", ""
        async for chunk in await client.chat.completions.create(**first):
            for choice in chunk.choices:
                for delta in choice.delta.tool_calls or []:
                    name += delta.function.name or ""
                    arguments += delta.function.arguments or ""
        text = ""
        async for chunk in await client.chat.completions.create(**second):
            text += "".join(choice.delta.content or "" for choice in chunk.choices)
        return name, arguments, text

    name, arguments, text = asyncio.run(main())
    assert (name, json.loads(arguments)) == ("get_capital", {"country": "UK"})
    assert text == "The capital of the UK is London."
    assert cassette.exchanges[0].streamed and cassette.problems == []


def test_openai_responses_stream_replay_concrete_values() -> None:
    path = TRAFFIC / "openai-responses-stream" / "test_tool_search__test_openai_native_tool_search_streaming.yaml"
    first, second = (json.loads(e.request_body) for e in load_exchanges(path))
    client = Clients(Cassette(path)).openai
    completed = [e for e in client.responses.create(**first) if e.type == "response.completed"][0].response
    calls = [(o.name, json.loads(o.arguments)) for o in completed.output if o.type == "function_call"]
    assert calls == [("get_exchange_rate", {"from_currency": "USD", "to_currency": "EUR"})]
    deltas = "".join(e.delta for e in client.responses.create(**second) if e.type == "response.output_text.delta")
    assert "1 USD = 0.92 EUR" in deltas


def test_anthropic_replay_concrete_values() -> None:
    path = TRAFFIC / "anthropic" / "test_anthropic__test_anthropic_tool_output.yaml"
    first, second = (json.loads(e.request_body) for e in load_exchanges(path))
    client = Clients(Cassette(path)).anthropic
    message = client.messages.create(**first)
    assert [(b.type, b.name, b.input) for b in message.content] == [("tool_use", "get_user_country", {})]
    assert (message.usage.input_tokens, message.usage.output_tokens) == (445, 23)
    final = client.messages.create(**second)
    assert final.content[-1].input == {"city": "Mexico City", "country": "Mexico"}


def test_anthropic_stream_replay_concrete_values_with_stream_helper() -> None:
    path = TRAFFIC / "anthropic-stream" / "test_tool_search__test_anthropic_native_tool_search_streaming.yaml"
    first, second = (json.loads(e.request_body) for e in load_exchanges(path))
    client = Clients(Cassette(path)).anthropic
    first.pop("stream")
    with client.messages.stream(**first) as stream:
        message = stream.get_final_message()
    tool_uses = [(b.name, b.input) for b in message.content if b.type == "tool_use"]
    assert tool_uses == [("get_exchange_rate", {"from_currency": "USD", "to_currency": "EUR"})]
    second.pop("stream")
    with client.messages.stream(**second) as stream:
        assert stream.get_final_text().startswith("The current exchange rate is **1 USD = 0.92 EUR**")


@pytest.mark.parametrize("folder, name, expected", [
    ("gemini", "test_google__test_google_tool_config_any_with_tool_without_args.yaml", ("bar", {})),
    ("gemini-stream", "test_google__test_google_streaming_tool_call_thought_signature.yaml", ("get_country", {})),
])
def test_gemini_replay_concrete_values_through_raw_httpx(folder: str, name: str, expected: tuple) -> None:
    path = TRAFFIC / folder / name
    exchange = load_exchanges(path)[0]
    with httpx.Client(transport=Cassette(path)) as client:
        response = client.post(exchange.url, content=exchange.request_body)
    if exchange.streamed:
        parts = [p for e in parse_sse(response.content) for c in json.loads(e.data)["candidates"]
                 for p in c["content"].get("parts", [])]
    else:
        parts = response.json()["candidates"][0]["content"]["parts"]
    calls = [(p["functionCall"]["name"], p["functionCall"].get("args", {})) for p in parts if "functionCall" in p]
    assert calls == [expected]
