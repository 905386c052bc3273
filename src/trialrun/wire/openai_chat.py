"""OpenAI Chat Completions (`POST .../chat/completions`): requests, JSON responses and chunk streams.

Neutral reading of a request: `system`/`developer` messages become `ModelRequest.system` (joined with blank
lines); consecutive `tool` messages become ONE neutral tool message carrying all their results, so a turn's
parallel results stay together as they do in Anthropic's single user message. Tools that are not plain functions
(`custom`, or any other type) are listed with their own name, or their type when they have none. Custom tool calls
(free-form input) are read as a call whose arguments are `{"input": <text>}`.
"""

from __future__ import annotations

from typing import Any

from ..trajectory import ToolCall, ToolResult, Usage
from . import _openai_common as common
from ._codec import Outgoing, decode_call, json_response
from ._sse import SSEEvent, render_sse
from ._types import EncodedResponse, Message, ModelRequest, ModelResponse, Step, ToolSpec, WireError

__all__ = ["OpenAIChatCodec"]

_FINGERPRINT = "fp_trialrun"


class OpenAIChatCodec(common.OpenAICodec):
    """The Chat Completions wire format, JSON and `chat.completion.chunk` streams."""

    api = "openai-chat"
    title = "OpenAI Chat Completions"
    endpoint = "/chat/completions"

    # -- requests ---------------------------------------------------------------------------------------------

    def decode_request(self, body: dict[str, Any], path: str = "") -> ModelRequest:
        body = common.require_dict(body, "request body")
        raw_messages = common.require_list(body.get("messages"), "request 'messages'")
        system: list[str] = []
        messages: list[Message] = []
        for number, raw in enumerate(raw_messages, start=1):
            where = f"request message {number}"
            raw = common.require_dict(raw, where)
            role = raw.get("role")
            if role in ("system", "developer"):
                system.append(common.content_text(raw.get("content"), where))
            elif role == "user":
                messages.append(Message("user", common.content_text(raw.get("content"), where)))
            elif role == "assistant":
                messages.append(_assistant_message(raw, where))
            elif role in ("tool", "function"):
                call_id = raw.get("tool_call_id") if role == "tool" else None
                result = ToolResult(call_id, common.content_text(raw.get("content"), where))
                if messages and messages[-1].role == "tool":
                    messages[-1].tool_results.append(result)
                else:
                    messages.append(Message("tool", tool_results=[result]))
            else:
                raise WireError(f"{where} has role {role!r}; expected system, developer, user, assistant or tool")
        tools = [
            _tool_spec(tool, f"request tool {n}")
            for n, tool in enumerate(common.optional_list(body.get("tools"), "request 'tools'"), 1)
        ]
        tools += [
            _function_spec(fn, f"request function {n}")
            for n, fn in enumerate(common.optional_list(body.get("functions"), "request 'functions'"), 1)
        ]
        return self._request(body, path, messages, tools, "\n\n".join(system) if system else None)

    def _encode_request(self, out: Outgoing) -> dict[str, Any]:
        wire: list[dict[str, Any]] = [{"role": "system", "content": out.system}] if out.system else []
        for message in common.fill_call_ids(out.messages):
            if message.role == "assistant":
                entry: dict[str, Any] = {"role": "assistant", "content": message.text or None}
                if message.tool_calls:
                    entry["tool_calls"] = [_wire_call(call, call.id or "") for call in message.tool_calls]
                wire.append(entry)
            elif message.role == "tool":
                wire += [
                    {"role": "tool", "tool_call_id": r.call_id, "content": r.content} for r in message.tool_results
                ]
                if message.text:
                    wire.append({"role": "user", "content": message.text})
            else:
                wire.append({"role": message.role, "content": message.text})
        body: dict[str, Any] = {"model": out.model, "messages": wire}
        if out.tools:
            body["tools"] = [{"type": "function", "function": _function_wire(tool)} for tool in out.tools]
        if out.max_tokens is not None:
            body["max_completion_tokens"] = out.max_tokens
        return body

    # -- responses --------------------------------------------------------------------------------------------

    def _decode_body(self, data: dict[str, Any]) -> ModelResponse:
        if "error" in data and "choices" not in data:
            raise WireError(f"response body is an error, not a completion: {str(data['error'])[:200]}")
        choices = common.require_list(data.get("choices"), "response 'choices'")
        response = ModelResponse(
            usage=_usage(data.get("usage")),
            model=common.text_or_none(data.get("model")),
            id=common.text_or_none(data.get("id")),
        )
        if not choices:
            return response
        choice = common.require_dict(_first_choice(choices), "response choice")
        message = common.require_dict(choice.get("message"), "response choice 'message'")
        assistant = _assistant_message(message, "response message")
        response.text = assistant.text
        response.tool_calls = assistant.tool_calls
        response.stop_reason = common.text_or_none(choice.get("finish_reason"))
        return response

    def _decode_stream(self, events: list[SSEEvent]) -> ModelResponse:
        return _read_stream(events)

    def encode_response(self, step: Step, request: ModelRequest) -> EncodedResponse:
        reply = self._reply(step, request)
        ids, usage = reply.call_ids, reply.usage
        base = {
            "id": reply.id("chatcmpl-", length=29),
            "created": common.CREATED,
            "model": reply.model,
            "system_fingerprint": _FINGERPRINT,
        }
        finish = "tool_calls" if step.tool_calls else "stop"
        if not request.stream:
            message: dict[str, Any] = {
                "role": "assistant",
                "content": step.text if step.text or not step.tool_calls else None,
                "refusal": None,
                "annotations": [],
            }
            if step.tool_calls:
                message["tool_calls"] = [_wire_call(call, ids[i]) for i, call in enumerate(step.tool_calls)]
            return json_response(
                {
                    "id": base["id"],
                    "object": "chat.completion",
                    "created": common.CREATED,
                    "model": base["model"],
                    "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
                    "usage": _wire_usage(usage),
                    "service_tier": "default",
                    "system_fingerprint": _FINGERPRINT,
                }
            )
        options = request.body.get("stream_options")
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        chunk: dict[str, Any] = {"id": base["id"], "object": "chat.completion.chunk", **base}
        if include_usage:
            chunk["usage"] = None

        def delta(payload: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return {
                **chunk,
                "choices": [{"index": 0, "delta": payload, "logprobs": None, "finish_reason": finish_reason}],
            }

        events: list[tuple[str | None, Any]] = [
            (None, delta({"role": "assistant", "content": "" if step.text else None, "refusal": None}))
        ]
        events += [(None, delta({"content": piece})) for piece in common.text_fragments(step.text)]
        for index, call in enumerate(step.tool_calls):
            head = {
                "index": index,
                "id": ids[index],
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            events.append((None, delta({"tool_calls": [head]})))
            for piece in common.argument_fragments(common.arguments_json(call.arguments)):
                events.append((None, delta({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})))
        events.append((None, delta({}, finish)))
        if include_usage:
            events.append((None, {**chunk, "choices": [], "usage": _wire_usage(usage)}))
        events.append((None, "[DONE]"))
        return common.sse_response(render_sse(events))


# -- helpers ------------------------------------------------------------------------------------------------------


def _first_choice(choices: list[Any]) -> Any:
    """The choice with index 0 (the turn); other choices of an `n > 1` request are alternatives, not turns."""
    for choice in choices:
        if isinstance(choice, dict) and choice.get("index", 0) == 0:
            return choice
    return choices[0]


def _assistant_message(raw: dict[str, Any], where: str) -> Message:
    """An assistant message (request history or response): text plus its tool calls with parsed arguments."""
    calls: list[ToolCall] = []
    for number, call in enumerate(common.optional_list(raw.get("tool_calls"), f"{where} 'tool_calls'"), start=1):
        here = f"{where} tool call {number}"
        calls.append(_tool_call(common.require_dict(call, here), here))
    legacy = raw.get("function_call")
    if legacy is not None:
        legacy = common.require_dict(legacy, f"{where} 'function_call'")
        calls.append(decode_call(_name(legacy, f"{where} function_call"), legacy.get("arguments")))
    return Message("assistant", common.content_text(raw.get("content"), where), calls)


def _tool_call(call: dict[str, Any], where: str) -> ToolCall:
    kind = common.kind_of(call, where, "function")
    call_id = call.get("id") if isinstance(call.get("id"), str) else None
    if kind == "custom":
        custom = common.require_dict(call.get("custom"), f"{where} 'custom'")
        return ToolCall(_name(custom, where), {"input": custom.get("input", "")}, call_id)
    function = common.require_dict(call.get("function"), f"{where} 'function'")
    return decode_call(_name(function, where), function.get("arguments"), call_id)


def _name(data: dict[str, Any], where: str) -> str:
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise WireError(f"{where} has no name")
    return name


def _tool_spec(tool: Any, where: str) -> ToolSpec:
    tool = common.require_dict(tool, where)
    kind = common.kind_of(tool, where, "function")
    if kind == "function":
        return _function_spec(tool.get("function"), where)
    inner = tool.get(kind) if isinstance(tool.get(kind), dict) else tool
    name = inner.get("name") if isinstance(inner.get("name"), str) else str(kind)
    return ToolSpec(name, inner.get("description") or "", {})


def _function_spec(function: Any, where: str) -> ToolSpec:
    function = common.require_dict(function, f"{where} 'function'")
    parameters = function.get("parameters")
    return ToolSpec(
        _name(function, where), function.get("description") or "", parameters if isinstance(parameters, dict) else {}
    )


def _function_wire(tool: ToolSpec) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name}
    if tool.description:
        function["description"] = tool.description
    if tool.parameters:
        function["parameters"] = tool.parameters
    return function


def _wire_call(call: ToolCall, call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": call.name, "arguments": common.arguments_json(call.arguments)},
    }


def _usage(data: Any) -> Usage | None:
    return common.decode_usage(data, "prompt_tokens", "completion_tokens", "prompt_tokens_details")


def _wire_usage(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_input_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


class _PendingCall:
    """A tool call being assembled from stream deltas (id and name arrive first, arguments in fragments)."""

    __slots__ = ("arguments", "custom", "id", "name")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name = ""
        self.arguments: list[str] = []
        self.custom = False


_TRUNCATED = "response stream ended before a finish_reason or [DONE] (truncated?); the partial turn is kept"


def _read_stream(events: list[SSEEvent]) -> ModelResponse:
    """Assemble a chunk stream: content deltas, tool-call deltas by index, the usage chunk, `[DONE]`.

    A stream that ends with neither a finish_reason nor `[DONE]` was cut off: what arrived is kept as the turn
    (the agent may have acted on it) and a note says it is partial.
    """
    response = ModelResponse()
    text: list[str] = []
    calls: dict[int, _PendingCall] = {}
    for number, _event, chunk in common.stream_data(events):
        if "error" in chunk and not chunk.get("choices"):
            raise common.stream_error(chunk, number)
        response.id = response.id or common.text_or_none(chunk.get("id"))
        response.model = response.model or common.text_or_none(chunk.get("model"))
        if chunk.get("usage") is not None:
            response.usage = _usage(chunk["usage"])
        for choice in common.optional_list(chunk.get("choices"), f"stream chunk {number} 'choices'"):
            choice = common.require_dict(choice, f"stream chunk {number} choice")
            if choice.get("index", 0) != 0:
                continue
            response.stop_reason = common.text_or_none(choice.get("finish_reason")) or response.stop_reason
            delta = choice.get("delta")
            if delta is None:
                continue
            delta = common.require_dict(delta, f"stream chunk {number} 'delta'")
            content = delta.get("content")
            if content:
                text.append(common.content_text(content, f"stream chunk {number} delta"))
            for call in common.optional_list(delta.get("tool_calls"), f"stream chunk {number} 'tool_calls'"):
                _merge_call_delta(calls, common.require_dict(call, f"stream chunk {number} tool call delta"), number)
    if response.stop_reason is None and not common.saw_done(events):
        response.notes.append(_TRUNCATED)
    response.text = "".join(text)
    for index in sorted(calls):
        pending = calls[index]
        where = f"streamed tool call {index}"
        if not pending.name:
            raise WireError(f"{where} never received a name (stream cut or malformed)")
        raw = "".join(pending.arguments)
        if pending.custom:
            response.tool_calls.append(ToolCall(pending.name, {"input": raw}, pending.id))
        else:
            response.tool_calls.append(decode_call(pending.name, raw, pending.id))
    return response


def _merge_call_delta(calls: dict[int, _PendingCall], delta: dict[str, Any], number: int) -> None:
    index = delta.get("index")
    if not isinstance(index, int) or isinstance(index, bool):
        # Some OpenAI-compatible servers omit the index: a delta with an id starts a new call.
        index = len(calls) if delta.get("id") or not calls else max(calls)
    pending = calls.setdefault(index, _PendingCall())
    if isinstance(delta.get("id"), str) and delta["id"] and pending.id is None:
        pending.id = delta["id"]
    inner = delta.get("function")
    if delta.get("type") == "custom" or isinstance(delta.get("custom"), dict):
        pending.custom = True
        inner = delta.get("custom")
    if inner is None:
        return
    inner = common.require_dict(inner, f"stream chunk {number} tool call {index} 'function'")
    if isinstance(inner.get("name"), str) and inner["name"] and not pending.name:
        pending.name = inner["name"]
    fragment = inner.get("input" if pending.custom else "arguments")
    if fragment is not None:
        if not isinstance(fragment, str):
            raise WireError(f"stream chunk {number} tool call {index} arguments are not a string")
        pending.arguments.append(fragment)
