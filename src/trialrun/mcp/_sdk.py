"""The official MCP Python SDK, imported on first use (never by `import trialrun`), with one clear message when it
is not installed."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["sdk", "McpNotInstalled", "INSTALL"]

INSTALL = "pip install 'trialrun[mcp]'"


class McpNotInstalled(ImportError):
    """The `mcp` SDK is missing: the message says how to install it."""


def sdk() -> tuple[Any, Any]:
    """(the `mcp` package, `mcp_types`); McpNotInstalled when the SDK is absent or too old (trialrun serves MCP
    with its 2.x low-level server)."""
    try:
        mcp = importlib.import_module("mcp")
        types = importlib.import_module("mcp_types")
        importlib.import_module("mcp.server.lowlevel")
    except ImportError as exc:
        raise McpNotInstalled(f"serving or reaching MCP servers needs the official MCP SDK (mcp >= 2): {INSTALL} "
                              f"({exc})") from None
    return mcp, types
