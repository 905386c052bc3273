"""Reading MCP exchanges (the record's, `_record`) back: the tool calls each server received and what it answered,
the tools each listed, and joining those calls to the model's tool calls they answer.

The join is how the two seams meet: the model's traffic says what the model ASKED (`mcp__notes__search_notes` with
`{"query": "dentist"}`), the server's says what the tool RECEIVED and answered. A server's call is joined to the
first model call not yet joined whose name is the tool's in any agent's naming (`search_notes`,
`mcp__notes__search_notes`, `notes__search_notes`, `notes_search_notes`, `mcp_notes_search_notes`, a namespace
holding it) and whose arguments are equal; then, for the calls left, by name alone, in order: those are the calls
whose arguments the agent changed on the way (`expect.mcp_as_asked` fails on them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ..trajectory import McpCall, ToolCall, Trajectory
from ..wire._types import Exchange
from ._record import MCP_SCHEME, NO_ANSWER, is_mcp

__all__ = ["calls_of", "tools_listed", "unanswered", "join", "named_as", "declared_name", "result_text"]

_SEPARATORS = re.compile(r"[^0-9A-Za-z]+")


def _json(body: bytes) -> Any:
    try:
        return json.loads(body) if body else None
    except (ValueError, UnicodeDecodeError):
        return None


def _server_and_method(exchange: Exchange) -> tuple[str, str]:
    server, _, method = exchange.url[len(MCP_SCHEME):].partition("/")
    return server, method


def result_text(result: Any) -> str:
    """A tool result's content as a model would read it: its text blocks joined, other blocks named."""
    if not isinstance(result, dict):
        return ""
    parts = []
    for block in result.get("content") or []:
        if isinstance(block, dict):
            parts.append(str(block.get("text", "")) if block.get("type") == "text" else f"[{block.get('type')}]")
    return "\n".join(parts)


def calls_of(exchanges: Sequence[Exchange], first: int = 1) -> list[McpCall]:
    """The `tools/call` requests among `exchanges` (numbered from `first`, as the trial numbers them), each with
    what the server answered."""
    calls = []
    for number, exchange in enumerate(exchanges, start=first):
        if exchange.method != "REQUEST" or not is_mcp(exchange):
            continue
        server, method = _server_and_method(exchange)
        if method != "tools/call":
            continue
        request = _json(exchange.request_body) or {}
        params = request.get("params") if isinstance(request, dict) else None
        params = params if isinstance(params, dict) else {}
        given = params.get("arguments")
        arguments: dict[str, Any] = given if isinstance(given, dict) else {}
        answer = _json(exchange.response_body)
        answer = answer if isinstance(answer, dict) else {}
        error = answer.get("error")
        result = answer.get("result")
        calls.append(McpCall(
            server, str(params.get("name", "")), dict(arguments), result_text(result),
            bool(isinstance(result, dict) and result.get("isError")),
            (str(error.get("message", error)) if isinstance(error, dict) else str(error)) if error is not None else None,
            exchange.status != NO_ANSWER, number))
    return calls


def tools_listed(exchanges: Sequence[Exchange]) -> dict[str, list[str]]:
    """Each server that answered a `tools/list`, and the tool names it offered (first seen order)."""
    found: dict[str, dict[str, None]] = {}
    for exchange in exchanges:
        if exchange.method != "REQUEST" or not is_mcp(exchange):
            continue
        server, method = _server_and_method(exchange)
        if method != "tools/list":
            continue
        names = found.setdefault(server, {})
        answer = _json(exchange.response_body)
        result = answer.get("result") if isinstance(answer, dict) else None
        for tool in (result.get("tools") or []) if isinstance(result, dict) else []:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                names[tool["name"]] = None
    return {server: list(names) for server, names in found.items()}


def unanswered(exchanges: Sequence[Exchange]) -> list[str]:
    """The tool calls a server never answered (it hung, or died on them), one line each: each fails its trial. A call
    the client cancelled is one too (a client gives up on a server that does not answer): the line says so."""
    cancelled: dict[tuple[str, str], str] = {}
    for exchange in exchanges:
        if exchange.method == "NOTIFY" and exchange.url.endswith("/notifications/cancelled"):
            message = _json(exchange.request_body)
            params = message.get("params") if isinstance(message, dict) else None
            if isinstance(params, dict):
                at = exchange.request_headers.get("x-trialrun-mcp-at", "?")
                cancelled[(_server_and_method(exchange)[0], json.dumps(params.get("requestId")))] = at
    lines = []
    for exchange in exchanges:
        if exchange.method != "REQUEST" or not is_mcp(exchange) or exchange.status != NO_ANSWER:
            continue
        server, method = _server_and_method(exchange)
        message = _json(exchange.request_body)
        key = json.dumps(message.get("id")) if isinstance(message, dict) else "null"
        if method == "tools/call":
            at = exchange.request_headers.get("x-trialrun-mcp-at", "?")
            gave_up = cancelled.get((server, key))
            lines.append(f"MCP server {server!r} never answered tools/call id {key} (sent {at}s into the trial"
                         + (f"; the client gave up and cancelled it at {gave_up}s)" if gave_up else ")"))
    return lines


def _norm(name: str) -> str:
    return _SEPARATORS.sub("_", name).strip("_")


def named_as(call: ToolCall, server: str, tool: str) -> bool:
    """Whether the model's `call` names `server`'s `tool` in some agent's naming (see the module)."""
    tool_n, server_n = _norm(tool), _norm(server)
    for name in (call.name, f"{call.namespace}__{call.name}" if call.namespace else None):
        if name is None:
            continue
        norm = _norm(name)
        if norm == tool_n:
            return call.namespace is None or _prefix_is(_norm(call.namespace), server_n)
        if norm.endswith("_" + tool_n) and _prefix_is(norm[: -len(tool_n)], server_n):
            return True
    return False


def declared_name(name: str, server: str, tools: Sequence[str]) -> bool:
    """Whether a tool offered as `name` is `server`'s: one of its listed `tools` in some agent's naming, or, when
    it listed none, an MCP name that starts with the server's (`mcp__notes__...`, `mcp_notes_...`)."""
    if tools:
        return any(named_as(ToolCall(name), server, tool) for tool in tools)
    norm = _norm(name)
    return norm.startswith(f"mcp_{_norm(server)}_")


def _prefix_is(prefix: str, server: str) -> bool:
    prefix = prefix.strip("_")
    if prefix.startswith("mcp") and prefix[3:4] in ("", "_"):
        prefix = prefix[3:].strip("_")
    return prefix == server or prefix == ""


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def join(trajectory: Trajectory) -> None:
    """Join each of `trajectory.mcp_calls` to the model's call it answers (see the module), in place; where the
    model's result of a joined call has no error flag the wire could give, the server's answer gives it."""
    model_calls = trajectory.all_tool_calls
    taken: set[int] = set()
    for exact in (True, False):
        for mcp_call in trajectory.mcp_calls:
            if mcp_call.joined:
                continue
            for index, call in enumerate(model_calls):
                if index in taken or not named_as(call, mcp_call.server, mcp_call.tool):
                    continue
                if exact and not _same(call.arguments, mcp_call.arguments):
                    continue
                taken.add(index)
                mcp_call.joined, mcp_call.model_name, mcp_call.call_id = True, call.name, call.id
                mcp_call.model_arguments = dict(call.arguments)
                _flag(trajectory, call, mcp_call)
                break


def _flag(trajectory: Trajectory, call: ToolCall, mcp_call: McpCall) -> None:
    """The server's isError (or protocol error) as the flag of the model's result, where the wire had none."""
    if call.id is None or call.id not in trajectory.error_flags_unknown or not mcp_call.answered:
        return
    result = trajectory.result_for(call)
    if result is None:
        return
    result.is_error = mcp_call.is_error or mcp_call.error is not None
    del trajectory.error_flags_unknown[call.id]
