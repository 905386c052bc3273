"""The reference agent: a real tool-calling loop, tools, a ToolPolicy, and model prices.

It speaks to any model through the seam (`models`, `wire`) like any other agent, so trialrun reads its trajectory
the same way. May import: `_util`, `_contain`, `trajectory`, `_shell`, `wire`, `_scrub`, `models`, `endpoint`,
`mcp` (an MCP server's tools as its tools).
"""

from ._mcp_tools import McpTool, amcp_tools, mcp_tools
from .loop import DEFAULT_BASE_URLS, Agent, RunStatus
from .policy import Decision, ToolPolicy
from .pricing import Price, PriceTable, cost_of_trajectory, prices
from .tools import Tool, ToolError, shell_tools, stop_commands, tool

__all__ = [
    "Agent",
    "RunStatus",
    "DEFAULT_BASE_URLS",
    "ToolPolicy",
    "Decision",
    "Tool",
    "ToolError",
    "tool",
    "shell_tools",
    "stop_commands",
    "Price",
    "PriceTable",
    "prices",
    "cost_of_trajectory",
    "McpTool",
    "mcp_tools",
    "amcp_tools",
]
