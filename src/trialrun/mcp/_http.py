"""MCP over streamable HTTP, recorded: an ASGI wrapper that writes down every JSON-RPC message of each request
body and of each answer (a JSON body, or each event of a server-sent event stream) as it passes, by the session it
belongs to (the `Mcp-Session-Id` the server gave when the client initialized).

Bounded: a request body over `MAX_MESSAGE_BYTES` is refused (413) before it is read in full. An answer is passed on
a whole message at a time (an event, a JSON body), so what is held never exceeds the limit; one over it is the rule
stdio keeps (`too_long`): the trial gets a problem saying so, the answer ends there and whatever was sending it (a
proxy's read of a real server) is stopped. A client never sees part of a message (the SDK's own client gives up on an
event over 1 MiB, before trialrun could have said what the server did).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from ._record import Connection, McpLog
from ._stdio import MAX_MESSAGE_BYTES, too_long

__all__ = ["Recorded", "SESSION_HEADER"]

SESSION_HEADER = b"mcp-session-id"
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[..., Awaitable[None]]  # an ASGI app (starlette's types are not trialrun's to depend on)
_EVENT_END = re.compile(rb"\r?\n\r?\n")  # the blank line that ends a server-sent event


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

        try:
            await self.app(scope, replay, answer.wrap(send))
        except Exception:
            if not answer.cut:  # (once cut, what the app raises is the cut, `_Cut`, as it came back through it)
                raise


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


class _Cut(Exception):
    """Raised into the app sending an answer that was cut off (a message over the limit): it stops there."""


class _Answer:
    """One response on its way out, a whole message at a time: each recorded (JSON whole, SSE event by event), the
    session it opened bound to the connection; cut off at a message over the limit."""

    def __init__(self, recorded: Recorded, conn: Connection, session: bytes | None) -> None:
        self.recorded = recorded
        self.conn = conn
        self.session = session
        self.kind = ""
        self.held = bytearray()  # the message being received (never more than the limit and a chunk)
        self.scanned = 0  # how much of `held` is known to hold no event's end
        self.cut = False

    def wrap(self, send: Send) -> Send:
        async def sending(message: dict[str, Any]) -> None:
            if self.cut:
                raise _Cut
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers") or [])
                made = headers.get(SESSION_HEADER)
                if made is not None and self.session is None:
                    self.recorded.sessions[made] = self.conn
                kind = headers.get(b"content-type", b"").decode("latin-1").lower()
                self.kind = "sse" if "text/event-stream" in kind else "json" if "json" in kind else ""
            elif message["type"] == "http.response.body" and self.kind:
                more = bool(message.get("more_body", False))
                whole = self.feed(message.get("body", b""), more)
                if len(self.held) > MAX_MESSAGE_BYTES:
                    self.cut, self.held = True, bytearray()
                    too_long(self.conn, "server")
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                    raise _Cut
                if not whole and more:
                    return
                message = {**message, "body": whole}
            await send(message)

        return sending

    def feed(self, chunk: bytes, more: bool) -> bytes:
        """Take `chunk`; what can be passed on (whole messages, recorded; at the end, all that is left)."""
        self.held += chunk
        if self.kind == "sse":
            start = 0
            for match in _EVENT_END.finditer(self.held, max(0, self.scanned - 3)):
                event = bytes(self.held[start:match.start()]).replace(b"\r\n", b"\n")
                data = b"\n".join(line[5:].removeprefix(b" ") for line in event.split(b"\n")
                                  if line.startswith(b"data:"))
                if data.strip():
                    self.conn.from_server(data)
                start = match.end()
            whole = bytes(self.held[:start])
            del self.held[:start]
            self.scanned = len(self.held)
            if more:
                return whole
        elif more:
            return b""
        else:
            whole = b""
            if self.held.strip():
                self.conn.from_server(bytes(self.held))
        whole += bytes(self.held)  # the answer's end: an event never ended goes as it is (a client drops it)
        self.held.clear()
        return whole
