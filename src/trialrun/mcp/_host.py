"""Where trialrun's MCP servers run: one thread per process with an event loop of its own, serving every trial's
servers at once (an agent's stdio relays on one loopback port, streamable HTTP on another, each server behind a
secret path or token of its own), so an agent in any process, and an in-process framework, reach them the same way.

The thread starts with the first server (the HTTP port with the first HTTP server) and serves until the process
ends; a trial registers its servers (`register`) and removes them when it ends (`unregister`), which also closes
every connection still open to them.
"""

from __future__ import annotations

import asyncio
import secrets
import socket
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol, TypeVar

from .._util.per_process import PerProcess

__all__ = ["McpHost", "Target", "host", "TOKEN_BYTES"]

_T = TypeVar("_T")
TOKEN_BYTES = 16
_HELLO_LIMIT = 256    # the relay's first line: its token
_HELLO_S = 10.0       # how long a relay may take to say who it is
_CALL_S = 30.0        # how long registering with the host thread may take


class Target(Protocol):
    """A server the host serves: its stdio side (a relay's connection) and its HTTP side (an ASGI app)."""

    name: str

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def serve_stream(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None: ...

    async def asgi(self, scope: dict[str, Any], receive: Callable[[], Awaitable[Any]],
                   send: Callable[[dict[str, Any]], Awaitable[None]]) -> None: ...


class McpHost:
    """The process's MCP thread (see the module)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.targets: dict[str, Target] = {}
        self._tasks: dict[str, set[asyncio.Task[Any]]] = {}
        self.relay_port = 0
        self.http_port = 0
        self._http: Any = None
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), name="trialrun-mcp", daemon=True)
        self.thread.start()
        ready.wait()
        self.call(self._listen())

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(ready.set)
        self.loop.run_forever()

    def call(self, coroutine: Coroutine[Any, Any, _T], timeout: float = _CALL_S) -> _T:
        """Run `coroutine` on the host's loop and wait for its result (from any other thread)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    async def _listen(self) -> None:
        server = await asyncio.start_server(self._relay, "127.0.0.1", 0, limit=1 << 16)
        self.relay_port = server.sockets[0].getsockname()[1]

    @property
    def relay_address(self) -> str:
        return f"127.0.0.1:{self.relay_port}"

    def http_url(self, token: str) -> str:
        """The streamable HTTP URL of the target registered under `token` (the HTTP side starts on first use)."""
        if not self.http_port:
            self.call(self._start_http())
        return f"http://127.0.0.1:{self.http_port}/mcp/{token}"

    async def _start_http(self) -> None:
        if self.http_port:
            return
        import uvicorn

        made = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        made.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        made.bind(("127.0.0.1", 0))
        made.listen(128)
        made.setblocking(False)
        config = uvicorn.Config(self._asgi, interface="asgi3", lifespan="off", log_level="warning", access_log=False, log_config=None,
                                timeout_graceful_shutdown=1)
        self._http = uvicorn.Server(config)
        asyncio.ensure_future(self._http.serve(sockets=[made]))
        for _ in range(500):  # started within a few ms
            if self._http.started:
                break
            await asyncio.sleep(0.002)
        self.http_port = made.getsockname()[1]

    def register(self, target: Target) -> str:
        """Serve `target`; its token (the relay's first line, the HTTP path's last part)."""
        token = secrets.token_hex(TOKEN_BYTES)
        self.call(self._register(token, target))
        return token

    async def _register(self, token: str, target: Target) -> None:
        await target.start()
        self.targets[token] = target
        self._tasks[token] = set()

    def unregister(self, token: str) -> None:
        """Stop serving the target of `token`: its open connections are closed, then it stops."""
        self.call(self._unregister(token))

    async def _unregister(self, token: str) -> None:
        target = self.targets.pop(token, None)
        tasks = self._tasks.pop(token, set())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5)
        if target is not None:
            await target.stop()

    def _track(self, token: str) -> None:
        task = asyncio.current_task()
        tasks = self._tasks.get(token)
        if task is not None and tasks is not None:
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """A relay (the command an agent starts for a stdio server) connected: its first line names the target."""
        try:
            line = await asyncio.wait_for(reader.readline(), _HELLO_S)
            token = line[:_HELLO_LIMIT].strip().decode("ascii", "replace")
            target = self.targets.get(token)
            if target is None:  # an old trial's relay, or not a relay at all
                return
            self._track(token)
            await target.serve_stream(reader, writer)
        except (asyncio.TimeoutError, ConnectionError, ValueError):
            pass
        except asyncio.CancelledError:  # its trial ended (`unregister`): the connection ends here, quietly
            pass
        finally:
            writer.close()

    async def _asgi(self, scope: dict[str, Any], receive: Callable[[], Awaitable[Any]],
                    send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            return
        parts = scope["path"].strip("/").split("/")
        target = self.targets.get(parts[1]) if len(parts) == 2 and parts[0] == "mcp" else None
        if target is None:
            await send({"type": "http.response.start", "status": 404,
                        "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"no such MCP server (has its trial ended?)"})
            return
        await target.asgi(scope, receive, send)


_HOST: PerProcess[McpHost] = PerProcess(McpHost)


def host() -> McpHost:
    """The process's MCP host, started on first use."""
    return _HOST.get()
