"""Pieces both OpenAI codecs share: content flattening, usage, deterministic ids, argument fragments, errors.

Chat Completions and Responses differ in shape but agree on these details (the error body, how token counts are
nested, how text parts look), so each fact lives here once. `OpenAICodec` is the codec body both build on: path
matching, telling a JSON body from a stream, the error body and the ids of a scripted reply; the codecs read it
as `common.<name>`, so what is shared is visible where it is used.
"""

from __future__ import annotations

import hashlib
import json
import re
from abc import abstractmethod
from collections.abc import Iterator
from typing import Any, ClassVar, NamedTuple

from ..trajectory import ToolCall, ToolResult, Usage
from ._codec import COMPACT, Codec, default_usage, json_body, retry_after_value, split_evenly
from ._sse import SSEEvent, parse_sse
from ._types import EncodedResponse, Message, ModelRequest, ModelResponse, ProviderError, Step, WireError

#: `created` / `created_at` of scripted responses: fixed, so rendered bodies are byte-for-byte reproducible.
CREATED = 1_735_689_600
#: Model name when neither the step nor the request names one.
DEFAULT_MODEL = "trialrun-scripted"

# Built once: `json.dumps` with non-default options constructs a new encoder on every call.
_CANONICAL = json.JSONEncoder(separators=(",", ":"), sort_keys=True, default=str)
_TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})
_WORD = re.compile(r"\s*\S+\s*|\s+")


def require_dict(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise WireError(f"{what} is {_kind(value)}, expected a JSON object")
    return value


def require_list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise WireError(f"{what} is {_kind(value)}, expected a JSON array")
    return value


def optional_list(value: Any, what: str) -> list[Any]:
    """A list field that may be absent or null (e.g. `tools`, `tool_calls`)."""
    return [] if value is None else require_list(value, what)


def kind_of(data: dict[str, Any], where: str, default: str | None = None) -> str | None:
    """The `type` discriminator of an item, part or tool: a string, or WireError."""
    kind = data.get("type", default)
    if kind is None or isinstance(kind, str):
        return kind
    raise WireError(f"{where} 'type' is {_kind(kind)}, expected a string")


def _kind(value: Any) -> str:
    if value is None:
        return "null/missing"
    return {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
    }.get(type(value), f"a {type(value).__name__}")


def content_text(content: Any, where: str) -> str:
    """Text of a `content` field: a string, null, or a list of parts of which only text parts count.

    Images, files, audio and refusals carry no text the trajectory needs; they are skipped, not errors.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for number, part in enumerate(require_list(content, f"{where} content"), start=1):
        if isinstance(part, str):
            texts.append(part)
            continue
        part = require_dict(part, f"{where} content part {number}")
        kind = kind_of(part, f"{where} content part {number}")
        if kind in _TEXT_PART_TYPES or (kind is None and "text" in part):
            text = part.get("text")
            if not isinstance(text, str):
                raise WireError(f"{where} content part {number} has no text string")
            texts.append(text)
    return "\n".join(texts)


def text_or_none(value: Any) -> str | None:
    """A string field (id, model, finish reason) or None when absent or of another type."""
    return value if isinstance(value, str) else None


def as_int(value: Any, what: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise WireError(f"{what} is {_kind(value)}, expected a number")
    return int(value)


def decode_usage(data: Any, input_key: str, output_key: str, details_key: str) -> Usage | None:
    """OpenAI usage -> Usage. `input_tokens` is the whole prompt (cached tokens included, as OpenAI counts it)."""
    if data is None:
        return None
    data = require_dict(data, "usage")
    details = data.get(details_key) or {}
    cached = (
        as_int(details.get("cached_tokens"), f"usage.{details_key}.cached_tokens") if isinstance(details, dict) else 0
    )
    return Usage(
        input_tokens=as_int(data.get(input_key), f"usage.{input_key}"),
        output_tokens=as_int(data.get(output_key), f"usage.{output_key}"),
        cached_input_tokens=cached,
    )


def arguments_json(arguments: dict[str, Any]) -> str:
    """Tool-call arguments as the JSON string OpenAI puts on the wire (compact, as the API emits it)."""
    return COMPACT.encode(arguments)


def text_fragments(text: str, pieces: int = 12) -> list[str]:
    """Split text into word-sized stream deltas, at most `pieces` of them (long texts get longer deltas)."""
    words = _WORD.findall(text)
    if len(words) <= pieces:
        return words
    size = -(-len(words) // pieces)
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]


def argument_fragments(arguments: str, pieces: int = 3) -> list[str]:
    """Split an argument JSON string into a few fragments, as the API streams them (never an empty list)."""
    return split_evenly(arguments, pieces) or [""]


def response_seed(api: str, step: Step, request: ModelRequest) -> str:
    """A digest that differs between the responses of one conversation, so ids are deterministic yet distinct.

    Built from what changes turn by turn (conversation length, the last message, the step itself) instead of the
    whole request body, which would cost a full JSON dump per call.
    """
    last = request.messages[-1] if request.messages else None
    parts = [
        api,
        str(len(request.messages)),
        str(request.body.get("previous_response_id", "")),
        last.role if last else "",
        last.text[:200] if last else "",
        ",".join(str(result.call_id) for result in last.tool_results) if last else "",
        step.text,
        _CANONICAL.encode([[call.name, call.arguments, call.id] for call in step.tool_calls]) if step.tool_calls else "[]",
        str(request.stream),
    ]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def make_id(prefix: str, seed: str, index: int | None = None, length: int = 24) -> str:
    """`prefix` + a deterministic token (e.g. `chatcmpl-...`, `call_...`); `index` distinguishes siblings."""
    digest = seed if index is None else hashlib.sha256(f"{prefix}{seed}:{index}".encode()).hexdigest()
    return prefix + digest[:length]


def call_ids(step: Step, seed: str) -> list[str]:
    """The id of each of the step's tool calls: the scripted id when given, else a derived `call_...`."""
    return [call.id or make_id("call_", seed, index) for index, call in enumerate(step.tool_calls)]


def model_name(step: Step, request: ModelRequest) -> str:
    return step.model or request.model or DEFAULT_MODEL


def fill_call_ids(messages: list[Message]) -> list[Message]:
    """Give id-less tool calls an id (and their results, in order, the same id): OpenAI requires them.

    Conversations decoded from an API without call ids (Gemini) can then be re-sent through an OpenAI API.
    """
    if all(call.id for m in messages for call in m.tool_calls) and all(
        result.call_id for m in messages for result in m.tool_results
    ):
        return messages
    filled: list[Message] = []
    unanswered: list[str] = []
    counter = 0
    for message in messages:
        calls = []
        for call in message.tool_calls:
            if call.id is None:
                counter += 1
                call = ToolCall(call.name, call.arguments, f"call_{counter}", call.raw_arguments, call.namespace)
            calls.append(call)
            unanswered.append(call.id or "")
        results = []
        for result in message.tool_results:
            if result.call_id is None and unanswered:
                result = ToolResult(unanswered[0], result.content, result.is_error)
            if result.call_id in unanswered:
                unanswered.remove(result.call_id)
            results.append(result)
        filled.append(Message(message.role, message.text, calls, results))
    return filled


def split_body(body: bytes, streamed: bool) -> tuple[Any, list[SSEEvent] | None]:
    """Parse a response body as JSON or as an event stream, trusting what the body looks like over the flag.

    A recorder may mislabel a stream (no content-type) or a server may answer a `stream: true` request with plain
    JSON; both are read correctly rather than reported as garbage.
    """
    if isinstance(body, str):
        body = body.encode()
    head = body.lstrip()[:6]
    looks_like_sse = head.startswith((b"data:", b"event:", b":", b"id:"))
    if (streamed and not head.startswith((b"{", b"["))) or looks_like_sse:
        events = parse_sse(body)
        if not events:
            what = "empty" if not body.strip() else f"not an event stream (starts with {body[:60]!r})"
            raise WireError(f"stream has no events: the body is {what}")
        return None, events
    if not body.strip():
        raise WireError("response body is empty")
    try:
        return json.loads(body), None
    except (ValueError, UnicodeDecodeError) as exc:
        text = body.decode("utf-8", "replace")
        raise WireError(f"response body is not valid JSON ({exc}); it starts with {text[:80]!r}") from None


def stream_data(events: list[SSEEvent]) -> Iterator[tuple[int, SSEEvent, dict[str, Any]]]:
    """(number from 1, event, its JSON object) for each event up to the `[DONE]` sentinel; events without data
    (keep-alives) are passed over. An event whose data is not a JSON object raises WireError naming it, when the
    reader reaches it (so an error the provider sent earlier in the stream is reported first)."""
    for number, event in enumerate(events, start=1):
        text = event.data.strip()
        if text == "[DONE]":
            return
        if not text:
            continue
        data = event.json(f"stream event {number}" + (f" ({event.event})" if event.event else ""))
        yield number, event, require_dict(data, f"stream event {number} data")


def saw_done(events: list[SSEEvent]) -> bool:
    """Whether the stream holds the `[DONE]` sentinel (Chat Completions sends it last; a cut stream lacks it)."""
    return any(event.data.strip() == "[DONE]" for event in events)


def stream_error(data: dict[str, Any], number: int) -> WireError:
    """A provider error delivered inside a 200 stream."""
    nested = data.get("error")
    error: dict[str, Any] = nested if isinstance(nested, dict) else data
    message = error.get("message") or error.get("code") or json.dumps(error)[:200]
    return WireError(f"stream event {number} is an error from the provider: {message}")


_ERROR_DEFAULTS: dict[int, tuple[str, str, str | None]] = {
    400: ("invalid_request_error", "Invalid request.", None),
    401: ("invalid_request_error", "Incorrect API key provided.", "invalid_api_key"),
    403: ("permission_error", "You are not allowed to perform this request.", None),
    404: ("invalid_request_error", "The model does not exist or you do not have access to it.", "model_not_found"),
    429: ("requests", "Rate limit reached for requests. Please try again later.", "rate_limit_exceeded"),
    500: ("server_error", "The server had an error while processing your request. Sorry about that!", None),
    503: ("server_error", "The engine is currently overloaded, please try again later.", None),
}


class OpenAICodec(Codec):
    """The part of the codec contract both OpenAI APIs answer alike: the error body is one and the same, and a
    response is a JSON body or an event stream whatever the request asked for; a subclass reads each."""

    #: The path an agent posts to, after the base URL (which may end in /v1 or a deployment's prefix).
    endpoint: ClassVar[str]

    def handles(self, path: str) -> bool:
        return path.rstrip("/").endswith(self.endpoint)

    def request_path(self, model: str) -> str:
        return self.endpoint

    def decode_response(self, body: bytes, streamed: bool) -> ModelResponse:
        data, events = split_body(body, streamed)
        if events is not None:
            return self._decode_stream(events)
        return self._decode_body(require_dict(data, "response body"))

    @abstractmethod
    def _decode_stream(self, events: list[SSEEvent]) -> ModelResponse:
        """A response that came as an event stream."""

    @abstractmethod
    def _decode_body(self, data: dict[str, Any]) -> ModelResponse:
        """A response that came as a JSON body (an object)."""

    def _reply(self, step: Step, request: ModelRequest) -> Reply:
        """What the rendering of a scripted step starts from (its ids deterministic, as `response_seed` says)."""
        seed = response_seed(self.api, step, request)
        return Reply(seed, call_ids(step, seed), default_usage(step, request), model_name(step, request))

    def encode_error(self, error: ProviderError) -> EncodedResponse:
        """OpenAI's error body (`{"error": {message, type, param, code}}`) with `x-request-id` and `retry-after`."""
        default_type, default_message, code = _ERROR_DEFAULTS.get(
            error.status,
            ("server_error" if error.status >= 500 else "invalid_request_error", f"HTTP {error.status}", None),
        )
        body = {
            "error": {
                "message": error.message or default_message,
                "type": error.type or default_type,
                "param": None,
                "code": code,
            }
        }
        encoded = json_body(body)
        headers = {
            "content-type": "application/json",
            "x-request-id": "req_" + hashlib.sha256(encoded + str(error.status).encode()).hexdigest()[:32],
        }
        if error.retry_after is not None:
            headers["retry-after"] = retry_after_value(error.retry_after)
        return EncodedResponse(error.status, headers, encoded)


class Reply(NamedTuple):
    """A scripted step about to be rendered: the seed of its ids, its calls' ids, its usage and its model (a named
    tuple: one is made for every response, and a tuple is made several times faster than a frozen dataclass)."""

    seed: str
    call_ids: list[str]
    usage: Usage
    model: str

    def id(self, prefix: str, index: int | None = None, length: int = 24) -> str:
        """An id of this reply (`make_id` from its seed): the response's own, or a sibling's with `index`."""
        return make_id(prefix, self.seed, index, length)


def sse_response(body: bytes) -> EncodedResponse:
    return EncodedResponse(200, {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}, body)
