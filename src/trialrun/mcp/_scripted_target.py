"""A scripted server as the host serves it for one trial: the SDK's server over each relay connection (stdio), and
the SDK's streamable HTTP session manager (HTTP), both recorded in the trial's log."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from ._http import Recorded
from ._record import McpLog
from ._script import ScriptState
from ._sdk_server import build_server
from ._stdio import serve_sdk

__all__ = ["ScriptedTarget"]


class ScriptedTarget:
    """One trial's scripted server (`state`), recorded in `log` under `name`."""

    def __init__(self, name: str, state: ScriptState, log: McpLog) -> None:
        self.name = name
        self.state = state
        self.log = log
        self._manager: Any = None
        self._http: Recorded | None = None
        self._stop: asyncio.Event | None = None
        self._running: asyncio.Task[None] | None = None
        self._making = asyncio.Lock()

    async def start(self) -> None:
        """Nothing to start for stdio: each relay connection gets a server of its own (`serve_stream`)."""

    async def serve_stream(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await serve_sdk(build_server(self.state), reader, writer, self.log.connection(self.name, "stdio"))

    async def _http_app(self) -> Recorded:
        """The SDK's session manager for this server (made on the first HTTP request), recorded."""
        async with self._making:
            if self._http is None:
                await self._make_http()
        assert self._http is not None
        return self._http

    async def _make_http(self) -> None:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
        from mcp.server.transport_security import TransportSecuritySettings

        security = TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                             allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                                             allowed_origins=["http://127.0.0.1:*", "http://localhost:*"])
        manager = StreamableHTTPSessionManager(app=build_server(self.state), security_settings=security,
                                               session_idle_timeout=None)
        self._stop = asyncio.Event()
        started = asyncio.Event()

        async def run() -> None:
            async with manager.run():
                started.set()
                assert self._stop is not None
                await self._stop.wait()

        self._running = asyncio.ensure_future(run())
        await started.wait()
        self._manager = manager
        self._http = Recorded(manager.handle_request, self.log, self.name)

    async def asgi(self, scope: dict[str, Any], receive: Callable[[], Awaitable[Any]],
                   send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        app = await self._http_app()
        await app(scope, receive, send)

    async def stop(self) -> None:
        if self._stop is not None and self._running is not None:
            self._stop.set()
            try:
                await asyncio.wait_for(self._running, 5)
            except (asyncio.TimeoutError, Exception):  # noqa: BLE001 - a session that will not end is dropped
                self._running.cancel()
