"""Anthropic Messages API (`POST /v1/messages`): JSON bodies and server-sent-event streams, both directions.

Neutral conventions this codec keeps (so a trajectory reads the same whatever the provider):

- A user message's `tool_result` blocks become ONE `Message(role="tool", tool_results=[...])`; any text blocks in
  the same user message follow it as a `Message(role="user")`. `encode_request` does the reverse: consecutive tool
  messages (and a user text right after them) go into one user message, tool results first, as the API requires.
- Text of several blocks is joined with "" for assistant messages and responses (what the SDK's `get_final_text`
  does; citations split one sentence into several blocks) and with "\\n" for user, system and tool-result content.
- Not the agent's tool calls, so skipped: `thinking`, `redacted_thinking`, server tools' `server_tool_use` and
  `*_tool_result` blocks (web search, code execution, tool search), images, documents and other attachments.
- Server tools offered in `tools` (entries with a `type` such as `web_search_20250305`) appear in
  `ModelRequest.tools` by name with no parameters, so `tool_names` shows everything the model was offered.
- Usage: `input_tokens` counts every prompt token (Anthropic's `input_tokens` + `cache_creation_input_tokens` +
  `cache_read_input_tokens`) and `cached_input_tokens` is the cache-read part of it, the way OpenAI and Gemini
  count, so cost and token graders compare providers like for like.
- System messages inside `messages` (a beta) decode to `Message(role="system")`; `encode_request` moves system
  messages into the top-level `system` field, where the public API wants them.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..trajectory import ToolCall, ToolResult, Usage
from ._codec import (
    Codec,
    Outgoing,
    decode_call,
    default_usage,
    json_body,
    parse_json,
    read_arguments,
    retry_after_value,
    split_evenly,
)
from ._sse import parse_sse, render_sse
from ._types import EncodedResponse, Message, ModelRequest, ModelResponse, ProviderError, Step, ToolSpec, WireError
from ._user_turns import Gathered, TurnWriter, read_messages, tool_list, tool_spec

__all__ = ["AnthropicCodec"]

DEFAULT_MAX_TOKENS = 1024
"""Anthropic requires `max_tokens`; what `encode_request` sends when the caller gives none."""

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}

_ERROR_MESSAGES = {
    "rate_limit_error": "Number of requests has exceeded your rate limit. Please try again later.",
    "overloaded_error": "Overloaded",
    "api_error": "Internal server error",
}

class AnthropicCodec(Codec):
    """Reads and writes Anthropic Messages traffic; see the module docstring for the neutral conventions."""

    api = "anthropic"
    title = "Anthropic Messages"
    error_flag = True

    def handles(self, path: str) -> bool:
        # "/v1/messages" (or a base URL that already ends in /v1); not count_tokens, batches or OpenAI threads.
        path = path.rstrip("/")
        return path.endswith("/messages") and "/threads/" not in path

    def request_path(self, model: str) -> str:
        return "/v1/messages"

    # ----------------------------------------------------------------------------------------------- requests

    def decode_request(self, body: dict[str, Any], path: str = "") -> ModelRequest:
        messages = read_messages(body, "messages", _decode_message)
        tools, system = _decode_tools(body.get("tools")), _decode_system(body.get("system"))
        return self._request(body, path, messages, tools, system)

    def _encode_request(self, out: Outgoing) -> dict[str, Any]:
        system, messages = _Writer().write(out.messages, out.system)
        body: dict[str, Any] = {"model": out.model, "max_tokens": out.max_tokens or DEFAULT_MAX_TOKENS}
        if system:
            body["system"] = system
        body["messages"] = messages
        if out.tools:
            body["tools"] = [_tool_spec_json(tool) for tool in out.tools]
        return body

    # ---------------------------------------------------------------------------------------------- responses

    def decode_response(self, body: bytes, streamed: bool) -> ModelResponse:
        # Trust the bytes over the flag: a stream request can still be answered with a JSON body, and vice versa.
        head = body.lstrip()[:1]
        if head == b"{" or (not streamed and not _looks_like_sse(body)):
            return _decode_message_json(body)
        return _decode_stream(body)

    def encode_response(self, step: Step, request: ModelRequest) -> EncodedResponse:
        if step.error is not None:
            return self.encode_error(step.error)
        usage = default_usage(step, request)
        model = step.model or request.model or "claude-scripted"
        # Position in the conversation + what is answered: unique within a run, identical across reruns, and cheap.
        calls = [(call.name, call.arguments, call.id) for call in step.tool_calls]
        digest = _digest(len(request.messages), step.text, calls, model)
        message_id = f"msg_01{digest[:22]}"
        headers = {"request-id": f"req_01{digest[22:44]}"}
        content: list[dict[str, Any]] = []
        if step.text or not step.tool_calls:
            content.append({"type": "text", "text": step.text})
        for number, call in enumerate(step.tool_calls):
            call_id = call.id or f"toolu_01{_digest(message_id, number)[:22]}"
            content.append({"type": "tool_use", "id": call_id, "name": call.name, "input": call.arguments})
        stop_reason = "tool_use" if step.tool_calls else "end_turn"
        if request.stream:
            stream = render_sse(_stream_events(message_id, model, content, stop_reason, usage))
            stream_headers = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}
            return EncodedResponse(200, {**stream_headers, **headers}, stream)
        message = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": _usage_json(usage),
        }
        return EncodedResponse(200, {"content-type": "application/json", **headers}, json_body(message))

    def encode_error(self, error: ProviderError) -> EncodedResponse:
        kind = error.type or _ERROR_TYPES.get(error.status) or (
            "api_error" if error.status >= 500 else "invalid_request_error"
        )
        message = error.message or _ERROR_MESSAGES.get(kind, kind.replace("_", " "))
        request_id = f"req_01{_digest(error.status, kind, message)[:22]}"
        headers = {"content-type": "application/json", "request-id": request_id}
        if error.retry_after is not None:
            headers["retry-after"] = retry_after_value(error.retry_after)
        body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}
        return EncodedResponse(error.status, headers, json_body(body))


# ------------------------------------------------------------------------------------------ request decoding


def _decode_message(raw: Any, where: str) -> list[Message]:
    """One API message -> one or two neutral messages (tool results split from the user's text)."""
    if not isinstance(raw, dict):
        raise WireError(f"{where} is a {type(raw).__name__}, expected an object with 'role' and 'content'")
    role = raw.get("role")
    content = raw.get("content")
    if role not in ("user", "assistant", "system"):
        raise WireError(f"{where}.role is {role!r}, expected 'user' or 'assistant'")
    if isinstance(content, str):
        return [Message(role=role, text=content)]
    if not isinstance(content, list):
        raise WireError(f"{where}.content is a {type(content).__name__}, expected a string or a list of blocks")
    return _read_blocks(content, f"{where}.content", role).messages(role)


def _read_blocks(content: list[Any], where: str, role: str) -> Gathered:
    """The text blocks, an assistant's tool_use blocks and a user's tool_result blocks of one content list.

    Everything else (thinking, server tools and their results, images, files) is not the agent's doing: skipped.
    """
    gathered = Gathered()
    for number, block in enumerate(content):
        here = f"{where}[{number}]"
        kind = _block_type(block, here)
        if kind == "text":
            gathered.texts.append(_text_of(block, here))
        elif kind == "tool_use" and role == "assistant":
            gathered.calls.append(_tool_call(block, here))
        elif kind == "tool_result" and role == "user":
            gathered.results.append(_tool_result(block, here))
    return gathered


def _block_type(block: Any, where: str) -> str:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        raise WireError(f"{where} is not a content block (an object with a string 'type')")
    kind: str = block["type"]
    return kind


def _text_of(block: dict[str, Any], where: str) -> str:
    text = block.get("text", "")
    if not isinstance(text, str):
        raise WireError(f"{where}: text block's 'text' is a {type(text).__name__}, expected a string")
    return text


def _tool_call(block: dict[str, Any], where: str) -> ToolCall:
    name = block.get("name")
    if not isinstance(name, str) or not name:
        raise WireError(f"{where}: tool_use block has no 'name'")
    call_id = block.get("id")
    if call_id is not None and not isinstance(call_id, str):
        raise WireError(f"{where}: tool_use block's 'id' is a {type(call_id).__name__}, expected a string")
    return decode_call(name, block.get("input"), call_id)


def _tool_result(block: dict[str, Any], where: str) -> ToolResult:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str):
        raise WireError(f"{where}: tool_result block has no string 'tool_use_id'")
    content = _result_text(block.get("content"), where)
    return ToolResult(call_id=call_id, content=content, is_error=bool(block.get("is_error")))


def _result_text(content: Any, where: str) -> str:
    """A tool_result's content: a string, or blocks (text kept, other blocks named so nothing vanishes)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise WireError(f"{where}: tool_result content is a {type(content).__name__}, expected a string or a list")
    parts: list[str] = []
    for number, block in enumerate(content):
        here = f"{where}.content[{number}]"
        kind = _block_type(block, here)
        if kind == "text":
            parts.append(_text_of(block, here))
        elif kind == "tool_reference":
            parts.append(f"[tool_reference: {block.get('tool_name', '?')}]")
        else:
            parts.append(f"[{kind}]")
    return "\n".join(parts)


def _decode_system(system: Any) -> str | None:
    if system is None or isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n\n".join(_read_blocks(system, "system", "system").texts)
    raise WireError(f"'system' is a {type(system).__name__}, expected a string or a list of text blocks")


def _decode_tools(tools: Any) -> list[ToolSpec]:
    specs: list[ToolSpec] = []
    for number, tool in enumerate(tool_list(tools)):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise WireError(f"tools[{number}] has no string 'name'")
        schema = tool.get("input_schema")
        if schema is not None and not isinstance(schema, dict):
            raise WireError(f"tools[{number}] ({tool['name']}): 'input_schema' is not an object")
        specs.append(tool_spec(tool["name"], tool.get("description"), schema))
    return specs


# ----------------------------------------------------------------------------------------- response decoding


def _looks_like_sse(body: bytes) -> bool:
    head = body.lstrip()[:6]
    return head.startswith((b"event:", b"data:", b":"))


def _decode_message_json(body: bytes) -> ModelResponse:
    data = parse_json(body, "response body")
    if not isinstance(data, dict):
        raise WireError(f"response body is a JSON {type(data).__name__}, expected a message object")
    if data.get("type") == "error":
        raise WireError(f"response is an error: {_error_text(data.get('error'))}")
    content = data.get("content")
    if not isinstance(content, list):
        raise WireError("response has no 'content' list (not a Messages API message)")
    return _read_blocks(content, "response content", "assistant").response(
        usage=_usage(data.get("usage"), "response usage"),
        model=_str_or_none(data.get("model")),
        stop_reason=_str_or_none(data.get("stop_reason")),
        id=_str_or_none(data.get("id")),
    )


def _decode_stream(body: bytes) -> ModelResponse:
    """Replay the event sequence the way the SDK's stream accumulator does, keeping only what a turn needs."""
    events = parse_sse(body)
    if not events:
        raise WireError("response stream has no events (empty or truncated)")
    stream = _Stream()
    for number, event in enumerate(events, start=1):
        where = f"stream event {number}"
        data = event.json(where) if event.data else {}
        if not isinstance(data, dict):
            raise WireError(f"{where}: data is a JSON {type(data).__name__}, expected an object")
        kind = data.get("type") or event.event
        where = f"{where} ({kind})"
        if kind == "error":
            raise WireError(f"stream reported an error: {_error_text(data.get('error'))}")
        if kind == "ping":
            continue
        if kind != "message_start" and not stream.started and kind in _STREAM_EVENTS:
            raise WireError(f"{where} arrived before message_start")
        stream.apply(kind, data, where)
        # Unknown event types are skipped: the API documents that new ones may appear.
    if not stream.started:
        raise WireError("response stream has no message_start event")
    if not stream.stopped:
        raise WireError("response stream ended before message_stop (truncated?)")
    return stream.response()


class _Stream:
    """What a stream has said so far: the message's ids, its content blocks by index, usage and stop reason."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, Any] | None = None
        self.model: str | None = None
        self.message_id: str | None = None
        self.stop_reason: str | None = None
        self.started = self.stopped = False

    def apply(self, kind: Any, data: dict[str, Any], where: str) -> None:
        """Take one event in (events of kinds this does not know change nothing)."""
        if kind == "message_start":
            self._start(data, where)
        elif kind == "content_block_start":
            index, block = _index(data, where), data.get("content_block")
            if not isinstance(block, dict):
                raise WireError(f"{where} has no 'content_block' object")
            _block_type(block, f"{where} content_block")
            self.blocks[index] = {**block, "_json": []}
        elif kind == "content_block_delta":
            self._delta(data, where)
        elif kind == "content_block_stop":
            _finish_block(_started_block(self.blocks, data, where), where)
        elif kind == "message_delta":
            delta = data.get("delta")
            if isinstance(delta, dict) and "stop_reason" in delta:
                self.stop_reason = _str_or_none(delta["stop_reason"])
            if isinstance(data.get("usage"), dict):
                # Cumulative totals: they overwrite what message_start said; absent fields keep their value.
                self.usage = {**(self.usage or {}), **{k: v for k, v in data["usage"].items() if v is not None}}
        elif kind == "message_stop":
            self.stopped = True

    def _start(self, data: dict[str, Any], where: str) -> None:
        message = data.get("message")
        if not isinstance(message, dict):
            raise WireError(f"{where} has no 'message' object")
        self.started = True
        self.model, self.message_id = _str_or_none(message.get("model")), _str_or_none(message.get("id"))
        if isinstance(message.get("usage"), dict):
            self.usage = dict(message["usage"])

    def _delta(self, data: dict[str, Any], where: str) -> None:
        block = _started_block(self.blocks, data, where)
        delta = data.get("delta")
        if not isinstance(delta, dict):
            raise WireError(f"{where} has no 'delta' object")
        if delta.get("type") == "text_delta" and block["type"] == "text":
            block["text"] = block.get("text", "") + _delta_str(delta, "text", where)
        elif delta.get("type") == "input_json_delta" and block["type"] == "tool_use":
            block["_json"].append(_delta_str(delta, "partial_json", where))
        # thinking_delta, signature_delta, citations_delta and server-tool input are not part of the turn.

    def response(self) -> ModelResponse:
        """The turn the blocks make, in index order."""
        gathered = Gathered()
        for index in sorted(self.blocks):
            block = self.blocks[index]
            if block["type"] == "text":
                gathered.texts.append(block.get("text", ""))
            elif block["type"] == "tool_use":
                if "_input" not in block:
                    _finish_block(block, f"stream content block {index}")
                name, call_id = block["name"], _str_or_none(block.get("id"))
                gathered.calls.append(ToolCall(name, block["_input"], call_id, block["_raw"]))
        usage = _usage(self.usage, "stream usage")
        return gathered.response(usage=usage, model=self.model, stop_reason=self.stop_reason, id=self.message_id)


_STREAM_EVENTS = {"content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}


def _index(data: dict[str, Any], where: str) -> int:
    index = data.get("index")
    if not isinstance(index, int) or isinstance(index, bool):
        raise WireError(f"{where} has no integer 'index'")
    return index


def _started_block(blocks: dict[int, dict[str, Any]], data: dict[str, Any], where: str) -> dict[str, Any]:
    index = _index(data, where)
    if index not in blocks:
        raise WireError(f"{where} refers to content block {index}, which no content_block_start opened")
    return blocks[index]


def _delta_str(delta: dict[str, Any], key: str, where: str) -> str:
    value = delta.get(key, "")
    if not isinstance(value, str):
        raise WireError(f"{where}: delta '{key}' is a {type(value).__name__}, expected a string")
    return value


def _finish_block(block: dict[str, Any], where: str) -> None:
    """A tool_use block's input is the join of its input_json_delta fragments (or its start input if none came)."""
    if block["type"] != "tool_use":
        return
    name = block.get("name")
    if not isinstance(name, str) or not name:
        raise WireError(f"{where}: tool_use block has no 'name'")
    joined = "".join(block["_json"])
    raw = joined if joined else block.get("input")
    block["_input"], block["_raw"] = read_arguments(raw)


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return f"{error.get('type', 'error')}: {error.get('message', '')}".rstrip(": ")
    return str(error)


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _usage(raw: Any, where: str) -> Usage | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise WireError(f"{where} is a {type(raw).__name__}, expected an object")

    def count(key: str) -> int:
        value = raw.get(key) or 0
        if not isinstance(value, int) or isinstance(value, bool):
            raise WireError(f"{where}.{key} is {value!r}, expected an integer")
        return value

    cache_read = count("cache_read_input_tokens")
    cache_write = count("cache_creation_input_tokens")  # priced apart: a cache write costs more than input
    return Usage(
        input_tokens=count("input_tokens") + cache_write + cache_read,
        output_tokens=count("output_tokens"),
        cached_input_tokens=cache_read,
        cache_write_input_tokens=cache_write,
    )


# ------------------------------------------------------------------------------------------------- encoding


def _digest(*parts: Any) -> str:
    """A stable hex digest: ids derived from what was asked and answered, never random, so runs are reproducible."""
    raw = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(raw.encode()).hexdigest()


def _usage_json(usage: Usage) -> dict[str, int]:
    """The inverse of `_usage`: Anthropic counts plain input, cache writes and cache reads apart."""
    cached = min(usage.cached_input_tokens, usage.input_tokens)
    written = min(usage.cache_write_input_tokens, usage.input_tokens - cached)
    return {
        "input_tokens": usage.input_tokens - cached - written,
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": cached,
        "output_tokens": usage.output_tokens,
    }


def _stream_events(
    message_id: str, model: str, content: list[dict[str, Any]], stop_reason: str, usage: Usage
) -> list[tuple[str | None, Any]]:
    """The event sequence the API sends: message_start, per block start/deltas/stop, message_delta, message_stop."""
    start_usage = {**_usage_json(usage), "output_tokens": 1}
    message: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    events: list[tuple[str | None, Any]] = [("message_start", {"type": "message_start", "message": message})]
    for index, block in enumerate(content):
        if block["type"] == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in split_evenly(block["text"], 4)]
        else:
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            arguments = json.dumps(block["input"], ensure_ascii=False)
            deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in ["", *split_evenly(arguments, 3)]]
        start = {"type": "content_block_start", "index": index, "content_block": opening}
        events.append(("content_block_start", start))
        if index == 0:
            events.append(("ping", {"type": "ping"}))
        for delta in deltas:
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": usage.output_tokens},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


class _Writer(TurnWriter):
    """Messages as `encode_request` sends them. The API needs every tool_use to have an id and every result to
    name one: calls without an id get a deterministic one; a result without a call id answers the earliest call of
    the preceding assistant message that no result has answered yet."""

    key = "content"
    model_role = "assistant"

    def __init__(self) -> None:
        self._count = 0
        self._open: list[str] = []

    def assistant(self, message: Message) -> list[dict[str, Any]] | str:
        if not message.tool_calls:
            return message.text
        self._open = []
        blocks: list[dict[str, Any]] = [self.text(message.text)] if message.text else []
        for call in message.tool_calls:
            blocks.append({"type": "tool_use", "id": self._call_id(call), "name": call.name, "input": call.arguments})
        return blocks

    def result(self, result: ToolResult) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": self._answered(result), "content": result.content}
        if result.is_error:
            block["is_error"] = True
        return block

    def is_result(self, block: dict[str, Any]) -> bool:
        return block.get("type") == "tool_result"

    def text(self, text: str) -> dict[str, Any]:
        return {"type": "text", "text": text}

    def user(self, text: str) -> str:
        return text

    def _call_id(self, call: ToolCall) -> str:
        self._count += 1
        call_id = call.id or f"toolu_{self._count:04d}"
        self._open.append(call_id)
        return call_id

    def _answered(self, result: ToolResult) -> str:
        if result.call_id is not None:
            if result.call_id in self._open:
                self._open.remove(result.call_id)
            return result.call_id
        if not self._open:
            raise ValueError("a tool result without call_id follows no unanswered tool call")
        return self._open.pop(0)


def _tool_spec_json(tool: ToolSpec) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": tool.name}
    if tool.description:
        spec["description"] = tool.description
    spec["input_schema"] = tool.parameters or {"type": "object", "properties": {}}
    return spec
