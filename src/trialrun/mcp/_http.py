"""MCP over streamable HTTP, recorded: an ASGI wrapper that writes down every JSON-RPC message of each request
body and of each answer (a JSON body, or each event of a server-sent event stream) as it passes, by the session it
belongs to (the `Mcp-Session-Id` the server gave when the client initialized).

Bounded: a request body over `MAX_MESSAGE_BYTES` is refused (413) before it is read in full; an event or JSON body
over it is passed on but not recorded, and the trial gets a problem saying so.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ._record import Connection, McpLog
from ._stdio import MAX_MESSAGE_BYTES

__all__ = ["Recorded", "SESSION_HEADER"]

SESSION_HEADER = b"mcp-session-id"
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[..., Awaitable[None]]  # an ASGI app (starlette's types are not trialrun's to depend on)


class Recorded:
    """`app` (an MCP server's ASGI side) with every message it receives and sends recorded in `log` under `name`."""

    def __init__(self, app: App, log: McpLog, name: str) -> None:
        self.app = app
        self.log = log
        self.name = name
        self.sessions: dict[bytes, Connection] = {}

    def _connection(self, session: bytes | None) -> Connection:
        if session is not None and session in self.sessions:
            return self.sessions[session]
        conn = self.log.connection(self.name, "http")
        if session is not None:
            self.sessions[session] = conn
        return conn

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or [])
        session = headers.get(SESSION_HEADER)
        body = await _body(receive)
        if body is None:
            await send({"type": "http.response.start", "status": 413, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"MCP message too large"})
            self.log.problem(f"MCP server {self.name!r}: a client sent a request body over {MAX_MESSAGE_BYTES:,} "
                             "bytes (refused)")
            return
        conn = self._connection(session)
        if body.strip():
            conn.to_server(body)
        answer = _Answer(self, conn, session)
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, answer.wrap(send))
        answer.finish()


async def _body(receive: Receive) -> bytes | None:
    """The whole request body; None when it is over the limit."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_MESSAGE_BYTES:
            return None
        parts.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(parts)


class _Answer:
    """One response on its way out: its messages recorded (JSON whole, SSE event by event), the session it opened
    bound to the connection."""

    def __init__(self, recorded: Recorded, conn: Connection, session: bytes | None) -> None:
        self.recorded = recorded
        self.conn = conn
        self.session = session
        self.kind = ""
        self.buffer = b""
        self.over = False

    def wrap(self, send: Send) -> Send:
        async def sending(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers") or [])
                made = headers.get(SESSION_HEADER)
                if made is not None and self.session is None:
                    self.recorded.sessions[made] = self.conn
                kind = headers.get(b"content-type", b"").decode("latin-1").lower()
                self.kind = "sse" if "text/event-stream" in kind else "json" if "json" in kind else ""
            elif message["type"] == "http.response.body" and self.kind:
                self.feed(message.get("body", b""))
            await send(message)

        return sending

    def feed(self, chunk: bytes) -> None:
        if self.over:
            return
        self.buffer += chunk
        if len(self.buffer) > MAX_MESSAGE_BYTES:
            self.over, self.buffer = True, b""
            self.conn.log.problem(f"MCP server {self.conn.server!r} sent a message over {MAX_MESSAGE_BYTES:,} bytes "
                                  "(passed on, not recorded)")
            return
        if self.kind == "sse":
            self.buffer = self.buffer.replace(b"\r\n", b"\n")
            while b"\n\n" in self.buffer:
                event, self.buffer = self.buffer.split(b"\n\n", 1)
                data = b"\n".join(line[5:].removeprefix(b" ") for line in event.split(b"\n")
                                  if line.startswith(b"data:"))
                if data.strip():
                    self.conn.from_server(data)

    def finish(self) -> None:
        if self.kind == "json" and self.buffer.strip() and not self.over:
            self.conn.from_server(self.buffer)
        self.buffer = b""
