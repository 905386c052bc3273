"""How an agent in another process is given the trial's MCP servers (`TrialContext.mcp`): the part every agent
shares. A preset writes the servers into its own agent's configuration (`with_mcp` in its module); a plain command
gets a JSON file in the common `{"mcpServers": {...}}` form, named by TRIALRUN_MCP_CONFIG, for it to read."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..mcp import McpEndpoint

__all__ = ["COMMAND_SUPPORT", "refusal", "check_mcp", "servers_file", "given_mcp"]

#: What a plain command agent gets (ProcessAgent.mcp_support).
COMMAND_SUPPORT = "TRIALRUN_MCP_CONFIG names a JSON file of {\"mcpServers\": {...}} for the command to read"


def refusal(agent: Any, raising: bool = False) -> str | None:
    """Why `agent` cannot be given MCP servers (said at configuration time), or None when it can; `raising`: as a
    ValueError instead."""
    if agent.mcp_support is not None:
        return None
    why = (f"{agent.label} cannot be given MCP servers (its preset knows no way to configure them); remove "
           "[mcp_servers], or use an agent that takes them")
    if raising:
        raise ValueError(why)
    return why


def check_mcp(agent: Any) -> None:
    """ValueError when `agent` cannot be given MCP servers."""
    refusal(agent, True)


def servers_file(servers: Sequence[McpEndpoint], home: Path) -> Path:
    """The servers in the common `mcpServers` form, written under the trial's private `home`."""
    path = home / "trialrun-mcp.json"
    path.write_text(json.dumps({"mcpServers": {s.name: s.config() for s in servers}}, indent=2))
    return path


def given_mcp(agent: Any, launch: Any, ctx: Any, endpoint: Any, home: Path) -> Any:
    """`launch` given the trial's MCP servers in the agent's own configuration (ValueError for an agent that takes
    none); an agent in a sandbox reaches them through its model endpoint, its one way out (`McpEndpoint.through`)."""
    servers = ctx.mcp_servers
    if not servers:
        return launch
    check_mcp(agent)
    if agent.sandbox.active:
        servers = [server.through(endpoint) for server in servers]
    return agent.with_mcp(launch, servers, home)
