"""What the four wire-codec test files share: where the recorded traffic lives, the checks any codec must pass on it
and on a round trip, a mock server that answers an official SDK through a codec, and the OpenAI test data.

One copy, so that every codec is held to the same checks; each test file keeps its codec's literal expectations."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import openai
import pytest

from trialrun.models._cassette_io import load_exchanges
from trialrun.trajectory import ToolCall, ToolResult, Trajectory, Usage
from trialrun.wire import (
    CODECS,
    Codec,
    Exchange,
    Message,
    ModelRequest,
    ModelResponse,
    ProviderError,
    Step,
    ToolSpec,
    WireError,
    codec_for,
    decode_exchange,
    decode_trajectory,
)

PROVIDER_TRAFFIC = Path(__file__).resolve().parents[1] / "fixtures" / "provider-traffic"

# -- recorded traffic -------------------------------------------------------------------------------------------------


def traffic_files(*folders: str) -> list[Path]:
    """The recordings in these sub-folders of the provider traffic, sorted so that test ids are stable."""
    return sorted(path for folder in folders for path in (PROVIDER_TRAFFIC / folder).glob("*.yaml"))


def files_handled_by(codec: Codec, *folders: str) -> list[Path]:
    """The recordings in `folders` holding at least one exchange `codec` handles (a file may mix APIs)."""
    return [path for path in traffic_files(*folders) if any(codec.handles(e.path) for e in load_exchanges(path))]


def load(relative: str) -> list[Exchange]:
    """The exchanges of one recording, named relative to the provider-traffic folder."""
    return load_exchanges(PROVIDER_TRAFFIC / relative)


def summary(trajectory: Trajectory) -> list[tuple[Any, ...]]:
    """Each turn as (text, calls, results, usage, model): what the tests compare against the literal recordings."""
    return [
        (
            turn.text,
            [(call.name, call.arguments, call.id) for call in turn.tool_calls],
            [(result.call_id, result.content) for result in turn.tool_results],
            turn.usage,
            turn.model,
        )
        for turn in trajectory.turns
    ]


def notes_for(trajectory: Trajectory, number: int) -> list[str]:
    """The trajectory's notes about exchange `number` (they start "exchange N (METHOD path): ...")."""
    return [n for n in trajectory.notes if n.startswith((f"exchange {number} ", f"exchange {number}:"))]


def decode_recorded(codec: Codec, path: Path) -> list[tuple[Exchange, ModelRequest, ModelResponse]]:
    """Decode each exchange of `path` that `codec` handles, checking what real traffic must give in any API: the
    registered codec claims it, the trajectory has no note about it, the request names a model, the response has
    usage. Returns (exchange, request, response) for the codec's own checks; fails if there is none."""
    exchanges = load_exchanges(path)
    trajectory = decode_trajectory(exchanges)
    decoded: list[tuple[Exchange, ModelRequest, ModelResponse]] = []
    for number, exchange in enumerate(exchanges, start=1):
        if not codec.handles(exchange.path):
            continue
        where = f"{path.name} exchange {number} ({exchange.path})"
        assert codec_for(exchange.path) is CODECS[codec.api], where
        assert notes_for(trajectory, number) == [], where
        request, response = decode_exchange(exchange, number)
        assert request is not None and request.api == codec.api and request.model, where
        assert response is not None and response.usage is not None, where
        decoded.append((exchange, request, response))
    assert decoded, f"{path.name} holds no {codec.api} exchange"
    return decoded


# -- round trips ------------------------------------------------------------------------------------------------------


def round_trip(codec: Codec, step: Step, request: ModelRequest) -> ModelResponse:
    """Render `step` as the answer to `request` and read it back, checking what every codec must keep: status 200,
    the content type of the requested form, the same bytes on a second rendering, the text, each call's name and
    arguments. Returns the decoded response for the codec's own checks."""
    streamed = request.stream
    encoded = codec.encode_response(step, request)
    assert encoded.status == 200
    assert encoded.headers["content-type"].startswith("text/event-stream" if streamed else "application/json")
    assert codec.encode_response(step, request) == encoded  # deterministic: no random ids or timestamps
    response = codec.decode_response(encoded.body, streamed)
    assert response.text == step.text
    assert [(c.name, c.arguments) for c in response.tool_calls] == [(c.name, c.arguments) for c in step.tool_calls]
    return response


def assert_call_ids(response: ModelResponse, step: Step, prefix: str) -> None:
    """Every decoded call has its own id with the API's `prefix`, and an id the step gave comes back unchanged."""
    ids = [call.id for call in response.tool_calls]
    assert all(i and i.startswith(prefix) for i in ids) and len(set(ids)) == len(ids), ids
    assert [c.id for c in step.tool_calls if c.id] == [i for i, c in zip(ids, step.tool_calls) if c.id]


def assert_request_round_trip(
    codec: Codec, body: dict[str, Any], path: str, messages: list[Any], tools: list[Any], *, system: str, model: str
) -> ModelRequest:
    """Decode an encoded request body after a trip through JSON text (an agent posts plain JSON) and check that the
    conversation, tools, system prompt and model survive; returns the decoded request."""
    decoded = codec.decode_request(json.loads(json.dumps(body)), path)
    assert decoded.messages == messages
    assert decoded.tools == tools
    assert (decoded.system, decoded.model) == (system, model)
    assert decoded.stream is False
    return decoded


def decodable_cuts(codec: Codec, step: Step, request: ModelRequest) -> int:
    """Cut the rendered answer every 5 bytes: each cut must decode to what arrived (a prefix of the step's text and
    calls) or raise WireError, never anything else. Returns how many cuts decoded."""
    body = codec.encode_response(step, request).body
    decoded = 0
    for end in range(0, len(body), 5):
        try:
            response = codec.decode_response(body[:end], request.stream)
        except WireError:
            continue
        decoded += 1
        assert step.text.startswith(response.text), end
        assert [c.name for c in response.tool_calls] == [c.name for c in step.tool_calls][: len(response.tool_calls)]
    return decoded


# -- malformed input --------------------------------------------------------------------------------------------------


def cases(table: Sequence[tuple[Any, ...]]) -> list[Any]:
    """pytest params from rows of (id, *values): the id leads each row so that the table reads as named cases."""
    return [pytest.param(*row[1:], id=row[0]) for row in table]


def json_bytes(data: Any) -> bytes:
    return json.dumps(data).encode()


def data_events(*chunks: Any) -> bytes:
    """A server-sent event stream of unnamed `data:` events, one per JSON chunk."""
    return b"".join(b"data: " + json_bytes(chunk) + b"\n\n" for chunk in chunks)


# -- official SDKs ----------------------------------------------------------------------------------------------------


class ScriptedServer:
    """A MockTransport handler answering each request with the next scripted step (or error), rendered by `codec`: the
    SDK under test parses exactly what the codec produces. `http` is the httpx flavour the SDK takes (the anthropic
    SDK wants its own httpx2, which has the same API)."""

    def __init__(self, codec: Codec, *steps: Step | ProviderError, http: ModuleType = httpx) -> None:
        self.codec = codec
        self.steps = list(steps)
        self.requests: list[ModelRequest] = []
        self._http = http

    def __call__(self, request: Any) -> Any:
        path = request.url.path
        assert self.codec.handles(path), f"the SDK posted to {path}, which the {self.codec.api} codec does not handle"
        decoded = self.codec.decode_request(json.loads(request.content), path)
        self.requests.append(decoded)
        step = self.steps.pop(0)
        error = step if isinstance(step, ProviderError) else step.error
        encoded = self.codec.encode_error(error) if error else self.codec.encode_response(step, decoded)
        return self._http.Response(encoded.status, headers=encoded.headers, content=encoded.body)

    def http_client(self) -> Any:
        return self._http.Client(transport=self._http.MockTransport(self))

    def async_http_client(self) -> Any:
        return self._http.AsyncClient(transport=self._http.MockTransport(self))


def openai_client(server: ScriptedServer) -> openai.OpenAI:
    return openai.OpenAI(api_key="test", max_retries=0, http_client=server.http_client())


def openai_async_client(server: ScriptedServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key="test", max_retries=0, http_client=server.async_http_client())


# -- test data both OpenAI codecs' tests use ---------------------------------------------------------------------------

#: Answers for the response round trips: text only, one call, parallel calls (one with a given id), text and calls.
OPENAI_STEPS = {
    "text": Step(text="The notes say hello.", usage=Usage(120, 9)),
    "one-call": Step(tool_calls=[ToolCall("read_file", {"path": "notes.txt"})], usage=Usage(80, 12)),
    "parallel": Step(
        tool_calls=[ToolCall("a", {"x": 1}), ToolCall("b", {"y": [1, 2], "z": {"nested": "ü ✓"}}, id="call_given")],
        usage=Usage(300, 40, 128),
    ),
    "text+calls": Step(
        text="Let me look that up for you, it takes a moment.",
        tool_calls=[ToolCall("search", {"q": "weather in Paris"}), ToolCall("noargs", {})],
        usage=Usage(55, 21),
    ),
}

#: The SDK tests' agent loop: "Reading." with two read_file calls (notes.txt, b.txt; usage 50/20/10 cached), then
#: the answer "The notes say hello." (usage 120/9).
OPENAI_LOOP = (
    Step(
        text="Reading.",
        tool_calls=[ToolCall("read_file", {"path": "notes.txt"}), ToolCall("read_file", {"path": "b.txt"})],
        usage=Usage(50, 20, 10),
    ),
    Step(text="The notes say hello.", usage=Usage(120, 9)),
)

#: A conversation for the request round trips: a user turn, two parallel calls and their results, a call with a list
#: argument and its result, the answer, and a further user turn; with one tool that has parameters and one without.
HISTORY = [
    Message("user", "Read the notes."),
    Message(
        "assistant",
        "Reading both files.",
        [ToolCall("read_file", {"path": "a.txt"}, "call_1"), ToolCall("read_file", {"path": "b.txt"}, "call_2")],
    ),
    Message("tool", tool_results=[ToolResult("call_1", "hello"), ToolResult("call_2", "world")]),
    Message("assistant", "", [ToolCall("summarise", {"parts": ["hello", "world"]}, "call_3")]),
    Message("tool", tool_results=[ToolResult("call_3", "hello world")]),
    Message("assistant", "They say hello world."),
    Message("user", "Thanks!"),
]
HISTORY_TOOLS = [
    ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),
    ToolSpec("summarise"),
]
