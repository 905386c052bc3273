"""The record of a trial's MCP traffic: every JSON-RPC message both ways, as the wire carried it, paired into MCP
exchanges (a request and its response, or a lone notification) and kept as `wire.Exchange`s after the model's.

So MCP traffic goes wherever a trial's exchanges go, by the same code: scrubbed and capped into the exchanges
sidecar, shown in `trialrun view`'s raw view, exported, kept by a cassette. One MCP exchange:

    method   REQUEST (client to server) | NOTIFY | SERVER-REQUEST (server to client) | SERVER-NOTIFY | UNREADABLE
    url      mcp://<server>/<JSON-RPC method>      (`mcp://notes/tools/call`)
    request  headers x-trialrun-mcp-{transport, connection, at (seconds into the trial), direction}; body: the
             message as it was sent
    response status 200 (a result), 500 (a JSON-RPC error), 204 (a message that is not answered: a notification),
             504 (a request that had no answer when the record was read); body: the answer as it was sent

Bounded: at most `max_messages` messages and `max_bytes` of them are kept; past that, each further message is
counted, not kept, and the trial gets a problem that says so; a server that sends more than `MAX_NOTIFICATIONS`
notifications on one connection is flooding it: the connection is marked `cut` (the proxy ends it) and the trial
fails saying so.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..wire._types import Exchange

__all__ = ["McpLog", "Connection", "MCP_SCHEME", "KINDS", "is_mcp", "DEFAULT_MAX_MESSAGES", "DEFAULT_MAX_BYTES",
           "NO_ANSWER", "NOT_ANSWERED", "MAX_NOTIFICATIONS"]

MCP_SCHEME = "mcp://"
KINDS = ("REQUEST", "NOTIFY", "SERVER-REQUEST", "SERVER-NOTIFY", "RESPONSE", "UNREADABLE")
#: The status of a request that had no answer, and of a message nobody answers (a notification).
NO_ANSWER, NOT_ANSWERED = 504, 204
DEFAULT_MAX_MESSAGES = 20_000
#: Notifications a server may send on one connection: more is a flood (the connection is cut, the trial fails).
MAX_NOTIFICATIONS = 2_000
DEFAULT_MAX_BYTES = 64 << 20


def is_mcp(exchange: Exchange) -> bool:
    """Whether an exchange is an MCP one (the record's), not the model's."""
    return exchange.url.startswith(MCP_SCHEME)


@dataclass
class _Entry:
    server: str
    transport: str
    connection: int
    at: float
    kind: str
    method: str
    body: bytes
    answer: bytes = b""
    status: int = 0
    direction: str = "client-to-server"
    key: Any = None

    def exchange(self) -> Exchange:
        headers = {"x-trialrun-mcp-transport": self.transport, "x-trialrun-mcp-connection": str(self.connection),
                   "x-trialrun-mcp-at": f"{self.at:.3f}", "x-trialrun-mcp-direction": self.direction}
        answered = {"content-type": "application/json"} if self.status else {}
        status = self.status or (NO_ANSWER if self.kind.endswith("REQUEST") else NOT_ANSWERED)
        return Exchange(self.kind, f"{MCP_SCHEME}{self.server}/{self.method}", headers, self.body, status,
                        answered, self.answer)


@dataclass
class McpLog:
    """One trial's MCP messages, from every server and connection, in the order they passed (thread-safe: the
    servers run on trialrun's MCP thread, proxies on theirs)."""

    max_messages: int = DEFAULT_MAX_MESSAGES
    max_bytes: int = DEFAULT_MAX_BYTES
    started: float = field(default_factory=time.monotonic)
    entries: list[_Entry] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    messages: dict[str, int] = field(default_factory=dict)
    connections: dict[str, int] = field(default_factory=dict)
    dropped: int = 0
    kept_bytes: int = 0
    _count: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def connection(self, server: str, transport: str) -> Connection:
        """A new connection (a session a client opened) to `server`; numbered from 1 across the trial."""
        with self._lock:
            self._count += 1
            self.connections[server] = self.connections.get(server, 0) + 1
            return Connection(self, server, transport, self._count)

    def problem(self, text: str) -> None:
        with self._lock:
            if text not in self.problems and len(self.problems) < 50:
                self.problems.append(text)

    def exchanges(self) -> list[Exchange]:
        with self._lock:
            return [entry.exchange() for entry in self.entries]

    def _keep(self, server: str, size: int) -> bool:
        """Count a message of `size` bytes; whether there is room to keep it (called under the lock)."""
        self.messages[server] = self.messages.get(server, 0) + 1
        if len(self.entries) >= self.max_messages or self.kept_bytes + size > self.max_bytes:
            self.dropped += 1
            if self.dropped == 1:
                self.problems.append(
                    f"MCP server {server!r}: more traffic than the record keeps ({self.max_messages:,} messages or "
                    f"{self.max_bytes:,} bytes per trial); the rest was counted, not kept (a server that floods?)")
            return False
        self.kept_bytes += size
        return True


class Connection:
    """One connection's messages, each direction in order; requests paired with their responses by id."""

    def __init__(self, log: McpLog, server: str, transport: str, number: int) -> None:
        self.log = log
        self.server = server
        self.transport = transport
        self.number = number
        self._pending: dict[tuple[str, Any], _Entry] = {}
        self.notifications = 0
        #: The connection must end (the server flooded it): the proxy that carries it stops.
        self.cut = False

    def to_server(self, raw: bytes) -> Any:
        """A message the client sent (as sent); returns it parsed (None when it was not JSON)."""
        return self._message(raw, "client-to-server")

    def from_server(self, raw: bytes) -> Any:
        """A message the server sent (as sent); returns it parsed (None when it was not JSON)."""
        return self._message(raw, "server-to-client")

    def _message(self, raw: bytes, direction: str) -> Any:
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            data = None
        items = data if isinstance(data, list) and data else [data]  # a JSON-RPC batch: each message on its own
        log = self.log
        at = time.monotonic() - log.started
        with log._lock:
            if not log._keep(self.server, len(raw)):
                return data
            for item in items:
                body = raw if len(items) == 1 else json.dumps(item, ensure_ascii=False).encode()
                self._place(item, body, direction, at)
        return data

    def _place(self, item: Any, body: bytes, direction: str, at: float) -> None:
        log = self.log
        from_server = direction == "server-to-client"
        if not isinstance(item, dict) or item.get("jsonrpc") != "2.0":
            log.entries.append(_Entry(self.server, self.transport, self.number, at, "UNREADABLE", "unreadable", body,
                                      direction=direction))
            if from_server:
                text = body[:80].decode("utf-8", "replace")
                log.problems.append(f"MCP server {self.server!r} sent a message that is not JSON-RPC 2.0: {text!r}")
            return
        method, has_id = item.get("method"), "id" in item
        if isinstance(method, str):
            kind = ("SERVER-" if from_server else "") + ("REQUEST" if has_id else "NOTIFY")
            if kind == "SERVER-NOTIFY":
                self.notifications += 1
                if self.notifications > MAX_NOTIFICATIONS and not self.cut:
                    self.cut = True
                    log.problems.append(f"MCP server {self.server!r} flooded its connection: more than "
                                        f"{MAX_NOTIFICATIONS:,} notifications; the connection was closed")
            entry = _Entry(self.server, self.transport, self.number, at, kind, method, body, direction=direction)
            log.entries.append(entry)
            if has_id:
                self._pending[(direction, _key(item["id"]))] = entry
            return
        other = "client-to-server" if from_server else "server-to-client"
        request = self._pending.pop((other, _key(item.get("id"))), None)
        status = 500 if "error" in item else 200
        if request is not None:
            request.answer, request.status = body, status
            return
        log.entries.append(_Entry(self.server, self.transport, self.number, at, "RESPONSE", "response", body, status=0,
                                  direction=direction))
        if from_server:
            log.problems.append(f"MCP server {self.server!r} answered a request that was never sent (id "
                                f"{json.dumps(item.get('id'))})")


def _key(value: Any) -> Any:
    """A JSON-RPC id as a dict key (a string id and a number id are different ids)."""
    return (type(value).__name__, value) if isinstance(value, (str, int, float)) else ("other", repr(value))
