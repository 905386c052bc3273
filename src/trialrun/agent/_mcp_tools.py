"""An MCP server's tools as the reference agent's tools: `await amcp_tools(server)` lists what the server offers
(through the official MCP SDK's client) and gives one `Tool` per tool, offered to the model under the server's own
tool name, with the server's input schema; a call opens a session, calls the tool and gives back its text (an
isError result, or a JSON-RPC error, as the tool's error result the model reads).

`server` is what `ctx.mcp(...)` returned (a stdio or HTTP server of the trial), a streamable HTTP URL, or
`{"command": ..., "args": [...]}` for a server the agent starts itself.

While it talks to a server, the SDK client's logged tracebacks are held back (`_quiet`): a message it cannot read
(a hostile server's) is one each on stderr, yet the SDK answers the call with the same error, which the model
reads, and the trial's own MCP record says what the server did.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

from .tools import Tool, ToolError

__all__ = ["McpTool", "amcp_tools", "mcp_tools"]


def _client(server: Any) -> Any:
    """An SDK client for `server` (the handshake every agent uses: `initialize`)."""
    from ..mcp._sdk import sdk

    mcp, _ = sdk()
    if isinstance(server, str):
        return mcp.Client(server, mode="legacy")
    url = getattr(server, "url", None)
    if getattr(server, "transport", None) == "http" and isinstance(url, str):
        return mcp.Client(url, mode="legacy")
    command = getattr(server, "command", None)
    if isinstance(server, Mapping):
        command = [server["command"], *server.get("args", [])] if "command" in server else None
        if command is None and isinstance(server.get("url"), str):
            return mcp.Client(server["url"], mode="legacy")
    if not command:
        raise ValueError(f"an MCP server is ctx.mcp(...)'s endpoint, a URL, or {{'command': ..., 'args': [...]}}; "
                         f"got {server!r}")
    params = mcp.StdioServerParameters(command=command[0], args=list(command[1:]))
    return mcp.Client(mcp.stdio_client(params, errlog=_stderr()), mode="legacy")


_QUIET: contextvars.ContextVar[bool] = contextvars.ContextVar("trialrun_mcp_quiet", default=False)
_SDK_LOGGERS = ("mcp.client.streamable_http", "mcp.client.stdio", "mcp.client.sse")


class _NoTraceback(logging.Filter):
    """Drops the SDK client's records that carry a traceback, in the reference agent's calls only (`_QUIET`: the
    SDK's reading tasks inherit it); the SDK's other users in the process keep theirs."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and _QUIET.get())


@functools.cache
def _filtered() -> None:
    for name in _SDK_LOGGERS:
        logging.getLogger(name).addFilter(_NoTraceback())


@contextlib.asynccontextmanager
async def _connected(server: Any) -> AsyncIterator[Any]:
    """`_client(server)`, entered, with the SDK's tracebacks held back (see the module)."""
    _filtered()
    token = _QUIET.set(True)
    try:
        async with _client(server) as client:
            yield client
    finally:
        _QUIET.reset(token)


def _stderr() -> Any:
    """Where a stdio server's stderr goes: the process's own stderr, or nowhere when that is not a file (a test
    runner's capture): the SDK hands it to the server's process, which needs a file descriptor."""
    import os
    import sys

    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (OSError, ValueError, AttributeError):
            continue
    return open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process (one, made once per call here)


class McpTool(Tool):
    """One tool of an MCP server, called through the SDK's client; the server checks its arguments."""

    def __init__(self, server: Any, name: str, description: str, schema: dict[str, Any], *,
                 timeout_s: float | None = None) -> None:
        async def call(**arguments: Any) -> str:
            return await self._call(arguments)

        self.server = server
        self.fn = call
        self.name = name
        self.description = description
        self.timeout_s = timeout_s
        self.is_async = True
        self._quick = True
        self.parameters = schema

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The arguments as the model gave them: the MCP server validates them against its own schema."""
        return dict(arguments)

    async def _call(self, arguments: dict[str, Any]) -> str:
        from mcp import MCPError

        try:
            async with _connected(self.server) as client:
                result = await client.call_tool(self.name, arguments)
        except MCPError as exc:
            raise ToolError(f"{self.name}: the MCP server answered with an error: {exc}") from None
        texts = [getattr(block, "text", None) or f"[{getattr(block, 'type', 'content')}]" for block in result.content]
        text = "\n".join(texts)
        if result.is_error:
            raise ToolError(text or f"{self.name} failed")
        return text

    def __repr__(self) -> str:
        return f"McpTool({self.name!r})"


async def amcp_tools(server: Any, *, timeout_s: float | None = None) -> list[McpTool]:
    """The tools `server` offers (see the module), as the reference agent's tools."""
    async with _connected(server) as client:
        listed = await client.list_tools()
    return [McpTool(server, tool.name, tool.description or "", dict(tool.input_schema), timeout_s=timeout_s)
            for tool in listed.tools]


def mcp_tools(server: Any, *, timeout_s: float | None = None) -> list[McpTool]:
    """`amcp_tools` for code without an event loop."""
    return asyncio.run(amcp_tools(server, timeout_s=timeout_s))
