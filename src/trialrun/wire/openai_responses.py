"""OpenAI Responses (`POST .../responses`): requests, JSON responses and typed event streams.

Neutral reading of a request: `instructions` plus `system`/`developer` input items become `ModelRequest.system`;
a `function_call` item joins the assistant message just before it (or starts one), consecutive
`function_call_output` items form ONE neutral tool message. Built-in tools (`web_search`, `tool_search`,
`file_search`, `mcp`, ...) are listed under their name, or their type when they have none. A `namespace` tool
(`{"type": "namespace", "name": "multi_agent_v1", "tools": [functions]}`, as Codex offers its sub-agent tools) is
read as its member functions, each with `ToolSpec.namespace` set; a call of one carries `"namespace"` beside its
`name` (kept on `ToolCall.namespace`), and scripted calls with a namespace are rendered that way. Only `function_call`
and `custom_tool_call` items are tool calls of the agent: reasoning, refusals, compaction and server-side tool
items (web search, tool search, file search, ...) are skipped, as they are not executed by the agent.
Only `POST .../responses` is a model call; `/responses/{id}` sub-resources and `/conversations` are not.
"""

from __future__ import annotations

from typing import Any

from ..trajectory import ToolCall, ToolResult, Usage
from . import _openai_common as common
from ._codec import Outgoing, decode_call, json_response
from ._sse import SSEEvent, render_sse
from ._types import EncodedResponse, Message, ModelRequest, ModelResponse, Step, ToolSpec, WireError

__all__ = ["OpenAIResponsesCodec"]

_CALL_TYPES = {"function_call": "arguments", "custom_tool_call": "input"}
_OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")
#: Events whose `response` is the final state of the response (the stream ends there).
_FINAL_EVENTS = ("response.completed", "response.incomplete")


class OpenAIResponsesCodec(common.OpenAICodec):
    """The Responses wire format, JSON and `response.*` event streams."""

    api = "openai-responses"
    title = "OpenAI Responses"
    namespaces = True
    endpoint = "/responses"

    # -- requests ---------------------------------------------------------------------------------------------

    def decode_request(self, body: dict[str, Any], path: str = "") -> ModelRequest:
        body = common.require_dict(body, "request body")
        system: list[str] = []
        instructions = body.get("instructions")
        if isinstance(instructions, str) and instructions:
            system.append(instructions)
        messages: list[Message] = []
        raw_input = body.get("input")
        if isinstance(raw_input, str):
            messages.append(Message("user", raw_input))
        elif raw_input is not None:
            system += _decode_input(common.require_list(raw_input, "request 'input'"), messages, "request input")
        tools = [
            spec
            for n, tool in enumerate(common.optional_list(body.get("tools"), "request 'tools'"), 1)
            for spec in _tool_specs(tool, f"request tool {n}")
        ]
        return self._request(body, path, messages, tools, "\n\n".join(system) if system else None)

    def _encode_request(self, out: Outgoing) -> dict[str, Any]:
        items: list[dict[str, Any]] = []
        for message in common.fill_call_ids(out.messages):
            if message.role == "tool":
                items += [
                    {"type": "function_call_output", "call_id": r.call_id, "output": r.content}
                    for r in message.tool_results
                ]
                if message.text:
                    items.append({"type": "message", "role": "user", "content": message.text})
                continue
            if message.text or not message.tool_calls:
                items.append({"type": "message", "role": message.role, "content": message.text})
            items += [
                {
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    **({"namespace": call.namespace} if call.namespace else {}),
                    "arguments": common.arguments_json(call.arguments),
                }
                for call in message.tool_calls
            ]
        body: dict[str, Any] = {"model": out.model, "input": items, "store": False}
        if out.system:
            body["instructions"] = out.system
        if out.tools:
            body["tools"] = _tools_wire(out.tools)
        if out.max_tokens is not None:
            body["max_output_tokens"] = out.max_tokens
        return body

    # -- responses --------------------------------------------------------------------------------------------

    def _decode_body(self, data: dict[str, Any]) -> ModelResponse:
        if "output" not in data and isinstance(data.get("error"), dict):
            raise WireError(f"response body is an error, not a response: {str(data['error'])[:200]}")
        return _decode_response_object(data, "response")

    def _decode_stream(self, events: list[SSEEvent]) -> ModelResponse:
        return _read_stream(events)

    def encode_response(self, step: Step, request: ModelRequest) -> EncodedResponse:
        reply = self._reply(step, request)
        response_id = reply.id("resp_", length=48)
        message_id = reply.id("msg_", 0, length=48)
        output: list[dict[str, Any]] = []
        if step.text or not step.tool_calls:
            output.append(_message_item(message_id, step.text, "completed"))
        for index, call in enumerate(step.tool_calls):
            output.append(_call_item(reply.id("fc_", index + 1, length=48), reply.call_ids[index], call, "completed"))
        final = _response_object(response_id, reply.model, request, "completed", output, reply.usage)
        if not request.stream:
            return json_response(final)
        events: list[dict[str, Any]] = []
        started = _response_object(response_id, final["model"], request, "in_progress", [], None)
        events.append({"type": "response.created", "response": started})
        events.append({"type": "response.in_progress", "response": started})
        for output_index, item in enumerate(output):
            if item["type"] == "message":
                events += _message_events(item, output_index)
            else:
                events += _call_events(item, output_index)
        events.append({"type": "response.completed", "response": final})
        for number, event in enumerate(events):
            event["sequence_number"] = number
        return common.sse_response(render_sse([(event["type"], event) for event in events]))


# -- requests -------------------------------------------------------------------------------------------------------


def _decode_input(items: list[Any], messages: list[Message], where: str) -> list[str]:
    """Append the neutral messages of `items` to `messages`; return the system/developer texts found."""
    system: list[str] = []
    for number, item in enumerate(items, start=1):
        item_where = f"{where} item {number}"
        item = common.require_dict(item, item_where)
        kind = common.kind_of(item, item_where, "message")
        if kind == "message":
            role = item.get("role")
            text = common.content_text(item.get("content"), item_where)
            if role in ("system", "developer"):
                system.append(text)
            elif role in ("user", "assistant"):
                messages.append(Message(role, text))
            else:
                raise WireError(f"{item_where} has role {role!r}; expected user, assistant, system or developer")
        elif kind in _CALL_TYPES:
            call = _tool_call(item, item_where)
            if messages and messages[-1].role == "assistant":
                messages[-1].tool_calls.append(call)
            else:
                messages.append(Message("assistant", tool_calls=[call]))
        elif kind in _OUTPUT_TYPES:
            result = ToolResult(item.get("call_id"), common.content_text(item.get("output"), item_where))
            if messages and messages[-1].role == "tool":
                messages[-1].tool_results.append(result)
            else:
                messages.append(Message("tool", tool_results=[result]))
        # Anything else (reasoning, item_reference, compaction, server-side tool calls and their outputs) is
        # context the provider keeps, not conversation the agent wrote.
    return system


def _tool_specs(tool: Any, where: str) -> list[ToolSpec]:
    """The tools one entry of `tools` offers: itself, or a namespace's member functions."""
    tool = common.require_dict(tool, where)
    kind = common.kind_of(tool, where, "function")
    name = tool.get("name")
    if kind == "namespace":
        if not (isinstance(name, str) and name):
            raise WireError(f"{where} is a namespace without a name")
        members = common.optional_list(tool.get("tools"), f"{where} (namespace {name!r}) 'tools'")
        specs = [_tool_spec(member, f"{where} (namespace {name!r}) tool {n}") for n, member in enumerate(members, 1)]
        for spec in specs:
            spec.namespace = name
        return specs
    return [_tool_spec(tool, where)]


def _tool_spec(tool: Any, where: str) -> ToolSpec:
    tool = common.require_dict(tool, where)
    kind = common.kind_of(tool, where, "function")
    name = tool.get("name")
    if kind == "function" and not (isinstance(name, str) and name):
        raise WireError(f"{where} is a function without a name")
    parameters = tool.get("parameters")
    return ToolSpec(
        name if isinstance(name, str) and name else str(kind),
        tool.get("description") or "",
        parameters if isinstance(parameters, dict) and kind == "function" else {},
    )


def _tools_wire(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """Plain tools as functions; tools with a namespace grouped into one `namespace` tool each, where the first
    of them stood."""
    wire: list[dict[str, Any]] = []
    spaces: dict[str, dict[str, Any]] = {}
    for tool in tools:
        if tool.namespace is None:
            wire.append(_function_wire(tool))
            continue
        if tool.namespace not in spaces:
            spaces[tool.namespace] = {"type": "namespace", "name": tool.namespace, "tools": []}
            wire.append(spaces[tool.namespace])
        spaces[tool.namespace]["tools"].append(_function_wire(tool))
    return wire


def _function_wire(tool: ToolSpec) -> dict[str, Any]:
    wire: dict[str, Any] = {"type": "function", "name": tool.name}
    if tool.description:
        wire["description"] = tool.description
    if tool.parameters:
        wire["parameters"] = tool.parameters
    return wire


# -- responses ------------------------------------------------------------------------------------------------------


def _tool_call(item: dict[str, Any], where: str) -> ToolCall:
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise WireError(f"{where} ({item.get('type')}) has no name")
    call_id = item.get("call_id") if isinstance(item.get("call_id"), str) else None
    namespace = item.get("namespace") if isinstance(item.get("namespace"), str) and item.get("namespace") else None
    if item.get("type") == "custom_tool_call":
        return ToolCall(name, {"input": item.get("input") or ""}, call_id, namespace=namespace)
    call = decode_call(name, item.get("arguments"), call_id)
    call.namespace = namespace
    return call


def _decode_output(items: list[Any], response: ModelResponse, where: str) -> None:
    texts: list[str] = []
    for number, item in enumerate(items, start=1):
        item_where = f"{where} output item {number}"
        item = common.require_dict(item, item_where)
        kind = common.kind_of(item, item_where)
        if kind == "message":
            texts.append(common.content_text(item.get("content"), item_where))
        elif kind in _CALL_TYPES:
            response.tool_calls.append(_tool_call(item, item_where))
    # The SDK's `output_text` joins the message texts without a separator; read them the way users see them.
    response.text = "".join(texts)


def _decode_response_object(data: dict[str, Any], where: str) -> ModelResponse:
    response = ModelResponse(
        usage=common.decode_usage(data.get("usage"), "input_tokens", "output_tokens", "input_tokens_details"),
        model=common.text_or_none(data.get("model")),
        id=common.text_or_none(data.get("id")),
        stop_reason=_stop_reason(data),
    )
    _decode_output(common.require_list(data.get("output"), f"{where} 'output'"), response, where)
    return response


def _stop_reason(data: dict[str, Any]) -> str | None:
    details = data.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    if isinstance(reason, str):
        return reason
    return common.text_or_none(data.get("status"))


class _StreamState:
    """Output items rebuilt from stream events, for a stream cut before its final `response.completed`."""

    def __init__(self) -> None:
        self.items: dict[int, dict[str, Any]] = {}
        self.done: set[int] = set()
        self.texts: dict[int, dict[int, list[str]]] = {}
        self.arguments: dict[int, list[str]] = {}

    def index_of(self, data: dict[str, Any], number: int) -> int:
        index = data.get("output_index")
        if isinstance(index, int) and not isinstance(index, bool):
            return index
        item_id = data.get("item_id")
        for position, item in self.items.items():
            if item_id is not None and item.get("id") == item_id:
                return position
        raise WireError(f"stream event {number} ({data.get('type')}) has no output_index")

    def apply(self, kind: str, data: dict[str, Any], number: int) -> None:
        if kind in ("response.output_item.added", "response.output_item.done"):
            if data.get("item") is None:
                return
            item = common.require_dict(data.get("item"), f"stream event {number} ({kind}) 'item'")
            common.kind_of(item, f"stream event {number} ({kind}) 'item'")
            index = self.index_of(data, number)
            self.items[index] = item
            if kind.endswith(".done"):
                self.done.add(index)
        elif kind == "response.output_text.delta":
            index = self.index_of(data, number)
            part = data.get("content_index", 0)
            delta = data.get("delta")
            if not isinstance(delta, str):
                raise WireError(f"stream event {number} ({kind}) has no 'delta' string")
            self.texts.setdefault(index, {}).setdefault(part if isinstance(part, int) else 0, []).append(delta)
        elif kind == "response.output_text.done" and isinstance(data.get("text"), str):
            index = self.index_of(data, number)
            part = data.get("content_index", 0)
            self.texts.setdefault(index, {})[part if isinstance(part, int) else 0] = [data["text"]]
        elif kind in ("response.function_call_arguments.delta", "response.custom_tool_call_input.delta"):
            delta = data.get("delta")
            if not isinstance(delta, str):
                raise WireError(f"stream event {number} ({kind}) has no 'delta' string")
            self.arguments.setdefault(self.index_of(data, number), []).append(delta)
        elif kind == "response.function_call_arguments.done" and isinstance(data.get("arguments"), str):
            self.arguments[self.index_of(data, number)] = [data["arguments"]]

    def output(self) -> list[dict[str, Any]]:
        """Items in output order; unfinished ones completed from their deltas."""
        output: list[dict[str, Any]] = []
        for index in sorted(self.items):
            item = dict(self.items[index])
            if index not in self.done:
                if item.get("type") == "message" and index in self.texts:
                    parts = self.texts[index]
                    item["content"] = [{"type": "output_text", "text": "".join(parts[k])} for k in sorted(parts)]
                elif item.get("type") in _CALL_TYPES and index in self.arguments:
                    item[_CALL_TYPES[item["type"]]] = "".join(self.arguments[index])
            output.append(item)
        return output


_TRUNCATED = "response stream ended before response.completed (truncated?); the partial turn is kept"


def _read_stream(events: list[SSEEvent]) -> ModelResponse:
    """Prefer the full response of `response.completed`; rebuild from deltas when the stream was cut short, keeping
    the partial turn (the agent may have acted on it) with a note that says so."""
    state = _StreamState()
    latest: dict[str, Any] | None = None
    final: dict[str, Any] | None = None
    for number, event, data in common.stream_data(events):
        declared = data.get("type")
        kind: str = declared if isinstance(declared, str) else event.event or ""
        if kind in ("error", "response.failed"):
            failed = data.get("response")
            error = failed.get("error") if isinstance(failed, dict) else None
            raise common.stream_error(error if isinstance(error, dict) else data, number)
        if isinstance(data.get("response"), dict):
            latest = data["response"]
            if kind in _FINAL_EVENTS:
                final = latest
        state.apply(kind, data, number)
    rebuilt = state.output()
    if final is not None:
        output = final.get("output")
        if not output and rebuilt:
            final = {**final, "output": rebuilt}
        elif output is None:
            final = {**final, "output": []}
        return _decode_response_object(final, "stream's final response")
    response = _decode_response_object(
        {**(latest or {}), "output": rebuilt, "usage": None}, "stream (cut before its end)"
    )
    response.stop_reason = None
    response.notes.append(_TRUNCATED)
    return response


# -- rendering ------------------------------------------------------------------------------------------------------


def _message_item(item_id: str, text: str, status: str) -> dict[str, Any]:
    content = (
        [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}] if status == "completed" else []
    )
    return {"id": item_id, "type": "message", "status": status, "role": "assistant", "content": content}


def _call_item(item_id: str, call_id: str, call: ToolCall, status: str) -> dict[str, Any]:
    arguments = common.arguments_json(call.arguments) if status == "completed" else ""
    item = {"id": item_id, "type": "function_call", "status": status, "call_id": call_id, "name": call.name}
    if call.namespace:
        item["namespace"] = call.namespace
    item["arguments"] = arguments
    return item


def _wire_usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_input_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def _response_object(
    response_id: str,
    model: str,
    request: ModelRequest,
    status: str,
    output: list[dict[str, Any]],
    usage: Usage | None,
) -> dict[str, Any]:
    """The `response` object as the API returns it (echoing the request's settings, as the API does)."""
    body = request.body
    instructions = body.get("instructions")
    return {
        "id": response_id,
        "object": "response",
        "created_at": common.CREATED,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": instructions if isinstance(instructions, (str, list)) else None,
        "max_output_tokens": body.get("max_output_tokens"),
        "metadata": body.get("metadata") or {},
        "model": model,
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "store": body.get("store", True),
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") if isinstance(body.get("tools"), list) else [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": _wire_usage(usage) if usage is not None else None,
        "user": None,
    }


def _message_events(item: dict[str, Any], output_index: int) -> list[dict[str, Any]]:
    text = item["content"][0]["text"]
    part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    where = {"item_id": item["id"], "output_index": output_index, "content_index": 0}
    events: list[dict[str, Any]] = [
        {
            "type": "response.output_item.added",
            "output_index": output_index,
            "item": _message_item(item["id"], "", "in_progress"),
        },
        {"type": "response.content_part.added", **where, "part": part},
    ]
    events += [
        {"type": "response.output_text.delta", **where, "delta": piece, "logprobs": []}
        for piece in common.text_fragments(text)
    ]
    events += [
        {"type": "response.output_text.done", **where, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **where, "part": {**part, "text": text}},
        {"type": "response.output_item.done", "output_index": output_index, "item": item},
    ]
    return events


def _call_events(item: dict[str, Any], output_index: int) -> list[dict[str, Any]]:
    where = {"item_id": item["id"], "output_index": output_index}
    added = {**item, "status": "in_progress", "arguments": ""}
    events: list[dict[str, Any]] = [{"type": "response.output_item.added", "output_index": output_index, "item": added}]
    events += [
        {"type": "response.function_call_arguments.delta", **where, "delta": piece}
        for piece in common.argument_fragments(item["arguments"])
    ]
    events += [
        {
            "type": "response.function_call_arguments.done",
            **where,
            "name": item["name"],
            "arguments": item["arguments"],
        },
        {"type": "response.output_item.done", "output_index": output_index, "item": item},
    ]
    return events
