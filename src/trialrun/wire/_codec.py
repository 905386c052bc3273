"""The codec contract: one subclass per API, used by the scripted model, the observers and the reference agent."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any, ClassVar, NamedTuple

from ..trajectory import ToolCall, Usage
from ._types import EncodedResponse, Message, ModelRequest, ModelResponse, ProviderError, Step, ToolSpec, WireError


class Codec(ABC):
    """Reads and writes one provider API's wire format (JSON bodies and server-sent-event streams).

    - `handles(path)`: whether a request path belongs to this API.
    - `decode_request(body, path)`: a request body (already parsed JSON) -> `ModelRequest`.
    - `decode_response(body, streamed)`: a response body (bytes; an SSE stream when streamed) -> `ModelResponse`.
      Raises `WireError` naming what is wrong; never another exception for bad input.
    - `encode_response(step, request)`: a scripted `Step` -> the response this API would send, as a JSON body or,
      when `request.stream`, as the SSE event sequence the official SDKs' stream helpers accept.
    - `encode_error(error)`: a `ProviderError` -> this API's error body and status (with retry-after header).
    - `encode_request(...)`: what an agent sends (used by the reference agent), non-streaming. A subclass writes
      only `_encode_request(out)`: the arguments arrive as one `Outgoing`, so the signature lives here once.
    """

    api: ClassVar[str]
    #: The API's name in messages ("OpenAI Chat Completions").
    title: ClassVar[str] = ""
    #: Whether a tool result on this API carries an error flag (Anthropic `is_error`, Gemini's `error` response);
    #: OpenAI Chat Completions and Responses results carry none, so nobody can tell from the wire alone.
    error_flag: ClassVar[bool] = False
    #: Whether the API has tool namespaces (a call of `spawn_agent` in namespace `multi_agent_v1`): only OpenAI
    #: Responses does; a scripted namespaced call on another API is refused, not flattened into a name.
    namespaces: ClassVar[bool] = False

    @abstractmethod
    def handles(self, path: str) -> bool: ...

    @abstractmethod
    def decode_request(self, body: dict[str, Any], path: str = "") -> ModelRequest: ...

    @abstractmethod
    def decode_response(self, body: bytes, streamed: bool) -> ModelResponse: ...

    @abstractmethod
    def encode_response(self, step: Step, request: ModelRequest) -> EncodedResponse: ...

    @abstractmethod
    def encode_error(self, error: ProviderError) -> EncodedResponse: ...

    def encode_request(
        self,
        *,
        model: str,
        messages: list[Message],
        tools: list[ToolSpec],
        system: str | None = None,
        max_tokens: int | None = None,
    ) -> dict[str, Any]:
        """The request body an agent sends: the arguments in one `Outgoing`, rendered by the API's codec."""
        return self._encode_request(Outgoing(model, messages, tools, system, max_tokens))

    @abstractmethod
    def _encode_request(self, out: Outgoing) -> dict[str, Any]:
        """What `encode_request` sends, in this API's shape: the one part of it that differs between APIs."""

    @abstractmethod
    def request_path(self, model: str) -> str:
        """The path (after the base URL) an agent posts to, e.g. "/chat/completions"."""

    def _request(
        self, body: dict[str, Any], path: str, messages: list[Message], tools: list[ToolSpec], system: str | None
    ) -> ModelRequest:
        """A decoded request with the model and the stream flag read from the body's own `model` and `stream`
        (where an API keeps them elsewhere, as Gemini does in the path, its codec sets them after)."""
        model = body.get("model")
        return ModelRequest(
            api=self.api,
            model=model if isinstance(model, str) else None,
            messages=messages,
            tools=tools,
            system=system,
            stream=bool(body.get("stream")),
            body=body,
            path=path,
        )


class Outgoing(NamedTuple):
    """What an agent sends, neutral: the arguments of `Codec.encode_request` as one value a codec renders.
    A named tuple, not a frozen dataclass: it is made for every request, and a tuple is made several times faster."""

    model: str
    messages: list[Message]
    tools: list[ToolSpec]
    system: str | None = None
    max_tokens: int | None = None


#: Compact JSON as APIs send it. Built once: `json.dumps` with options other than the defaults builds a new encoder
#: on every call, which cost more than encoding a small body.
COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def json_body(data: Any) -> bytes:
    """Compact, deterministic JSON as APIs send it."""
    return COMPACT.encode(data).encode()


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> EncodedResponse:
    return EncodedResponse(status, {"content-type": "application/json", **(headers or {})}, json_body(data))


def parse_json(body: bytes | str, what: str) -> Any:
    """Parse JSON or raise WireError saying where it broke."""
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        raise WireError(f"{what} is not valid JSON ({exc}); it starts with {text[:80]!r}") from None


def read_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments as they arrive (a JSON string from OpenAI, an object from Anthropic and Gemini) ->
    (arguments, raw_arguments).

    The arguments are the model's own writing, so anything can arrive: what is not a JSON object is a mistake of
    the model, not a broken response. It comes back as empty arguments plus the text as sent (`raw_arguments`),
    so the call survives decoding and an agent can answer it with an error the model reads.
    """
    if raw is None or raw == "":
        return {}, None
    if isinstance(raw, dict):
        return raw, None
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return {}, raw
        return (value, None) if isinstance(value, dict) else ({}, raw)
    return {}, json.dumps(raw, ensure_ascii=False, default=str)


def decode_call(name: str, raw: Any, call_id: str | None = None) -> ToolCall:
    """A tool call with its arguments read by `read_arguments` (never raises for what the arguments hold)."""
    arguments, invalid = read_arguments(raw)
    return ToolCall(name, arguments, call_id, invalid)


def arguments_problem(raw: str) -> str:
    """What is wrong with arguments `read_arguments` could not read, in words a model can act on
    (`not valid JSON (Expecting value): not json`, `a JSON array, not an object: ["a"]`)."""
    shown = raw if len(raw) <= 200 else raw[:199] + "…"
    try:
        value = json.loads(raw)
    except ValueError as exc:
        detail = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        return f"not valid JSON ({detail}): {shown}"
    kinds = {list: "a JSON array", str: "a JSON string", bool: "a JSON boolean", type(None): "JSON null"}
    return f"{kinds.get(type(value), 'a JSON number')}, not an object: {shown}"


def estimate_tokens(text: str) -> int:
    """A plausible token count (about four characters a token) for usage a script did not give."""
    return max(1, (len(text) + 3) // 4)


def default_usage(step: Step, request: ModelRequest) -> Usage:
    """Usage for a step that gives none: deterministic, roughly proportional to what was sent and produced."""
    if step.usage is not None:
        return step.usage
    if request.size:
        sent_chars = request.size
    else:
        sent_chars = len(json.dumps(request.body, separators=(",", ":"), default=str)) if request.body else 0
    produced = step.text + "".join(call.name + json.dumps(call.arguments) for call in step.tool_calls)
    return Usage(input_tokens=max(1, (sent_chars + 3) // 4), output_tokens=estimate_tokens(produced) + 5 * len(step.tool_calls))


def split_evenly(text: str, count: int) -> list[str]:
    """Split text into at most `count` consecutive pieces, as providers stream text and arguments in deltas."""
    if not text:
        return []
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)]


def retry_after_value(seconds: float) -> str:
    """A Retry-After header value: whole seconds as an integer ("2"), else as given ("0.5")."""
    return str(int(seconds)) if float(seconds).is_integer() else f"{seconds:g}"
