"""MCP, the second seam: scripted MCP servers for the agent under test, real ones behind a recording proxy, replay
from a cassette, and their traffic recorded as the trial's exchanges (after the model's), read back into the
trajectory and joined to the model's tool calls.

    notes = tr.ScriptedMCPServer("notes").tool("search_notes", "Search the notes", params={"query": "string"},
                                               rules=[{"when": {"query": "dentist"}, "answer": "Tuesday 10:00"}])
    server = ctx.mcp(notes)                      # stdio: server.command; ctx.mcp(notes, transport="http"): server.url

The servers run on one thread of trialrun's process (`_host`), built on the official MCP SDK's server side (the
`mcp` package: `pip install 'trialrun[mcp]'`; never imported by `import trialrun`). An agent in another process
reaches a stdio server through a relay command (`_relay`), an HTTP one at a loopback URL.

May import: `_util`, `trajectory`, `wire` (the exchange shape), `_scrub`, `models` (the cassette files), `endpoint`
(its passage for a sandboxed agent's MCP traffic); never a case, the runner or a report.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["ScriptedMCPServer", "ScriptError", "McpEndpoint", "McpNotInstalled", "TrialMcp", "Answer", "ToolCallIn",
           "McpCassette", "script_json_schema"]

_EXPORTS = {
    "ScriptedMCPServer": "_script", "Answer": "_script", "ToolCallIn": "_script", "ScriptError": "_check",
    "McpEndpoint": "_trial_servers", "TrialMcp": "_trial_servers", "McpNotInstalled": "_sdk",
    "script_json_schema": "_file", "McpCassette": "cassette",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'trialrun.mcp' has no attribute {name!r}")


if TYPE_CHECKING:
    from ._check import ScriptError as ScriptError
    from ._file import script_json_schema as script_json_schema
    from ._script import Answer as Answer, ScriptedMCPServer as ScriptedMCPServer, ToolCallIn as ToolCallIn
    from ._sdk import McpNotInstalled as McpNotInstalled
    from ._trial_servers import McpEndpoint as McpEndpoint, TrialMcp as TrialMcp
    from .cassette import McpCassette as McpCassette
