"""The MCP parts of the trial page (`render.exchanges`): under a model's tool call, what the MCP server received
for it and answered (with a link to that MCP exchange), and a section with every declared server (what reached it)
and every MCP message of the trial, raw, in the order they passed. Every text escaped here; the page is scrubbed
as a whole."""

from __future__ import annotations

import json
from collections.abc import Callable
from html import escape
from typing import Any

from ..trajectory import McpCall, ToolCall, Trajectory

__all__ = ["joined_calls", "mcp_note", "mcp_section", "is_mcp_record"]


def is_mcp_record(record: dict[str, Any]) -> bool:
    request = record.get("request")
    return isinstance(request, dict) and str(request.get("url", "")).startswith("mcp://")


def joined_calls(trajectory: Trajectory) -> dict[int, McpCall]:
    """The server's side of each model call it answered, by the model call's identity."""
    found: dict[int, McpCall] = {}
    calls = trajectory.all_tool_calls
    for mcp_call in trajectory.mcp_calls:
        if not mcp_call.joined:
            continue
        match = next((c for c in calls if id(c) not in found and c.name == mcp_call.model_name
                      and c.id == mcp_call.call_id), None)
        if match is not None:
            found[id(match)] = mcp_call
    return found


def mcp_note(call: ToolCall, joined: dict[int, McpCall]) -> str:
    """What the MCP server received for `call` and answered, or nothing when no server call answers it."""
    mcp_call = joined.get(id(call))
    if mcp_call is None:
        return ""
    received = json.dumps(mcp_call.arguments, ensure_ascii=False)
    rewritten = ("" if mcp_call.model_arguments == mcp_call.arguments
                 else ' <strong class="mcp-rewritten">(not what the model asked for)</strong>')
    answer = (f"a protocol error: {mcp_call.error}" if mcp_call.error is not None
              else "an error" if mcp_call.is_error else "a result" if mcp_call.answered else "nothing")
    link = (f' · <a class="mcp-exchange-link" href="#exchange-{mcp_call.exchange}">MCP exchange {mcp_call.exchange}</a>'
            if mcp_call.exchange is not None else "")
    return (f'<p class="mcp-call">MCP server <code>{escape(mcp_call.server)}</code> received '
            f"<code>{escape(mcp_call.tool)} {escape(received)}</code>{rewritten} and answered {escape(answer)}{link}</p>")


def mcp_section(trajectory: Trajectory, records: list[dict[str, Any]],
                details: Callable[..., str]) -> str:
    """Every declared server and what reached it, then every MCP message, raw (`details` renders one exchange)."""
    if not trajectory.mcp_servers and not records:
        return ""
    rows = "".join(
        f"<tr><td><code>{escape(s.name)}</code></td><td>{escape(s.kind)}</td><td>{escape(s.transport)}</td>"
        f"<td>{s.connections}</td><td>{s.messages}</td>"
        f"<td>{escape(', '.join(s.tools)) if s.listed else '<span class=muted>never listed</span>'}</td>"
        f"<td>{sum(1 for c in trajectory.mcp_calls if c.server == s.name)}</td></tr>"
        for s in trajectory.mcp_servers)
    table = ('<table class="headers mcp-servers"><tr><th>server</th><th>kind</th><th>transport</th><th>connections</th>'
             f"<th>messages</th><th>tools</th><th>tool calls</th></tr>{rows}</table>") if rows else ""
    messages = "".join(details(r, label="MCP message") for r in records)
    return ('<section class="conv" id="mcp"><h2>MCP servers</h2><p class="muted">What each MCP server of the trial '
            "received and answered, every message as it passed (the tool's side of the tool calls above).</p>"
            + table + (messages or '<p class="muted">No MCP message was kept.</p>') + "</section>")
