"""MCP cassettes: a real MCP server's traffic recorded once (through the recording proxy), then replayed with no
server running, offline, answer for answer.

The file is a trialrun cassette (`models._cassette_io`) holding the server's MCP exchanges (the record's layout,
`_record`), scrubbed as every cassette is. Replay answers each request with the first unused recording of the same
method and parameters (`_meta` and, for `initialize`, everything but the method left out: a client's name and
capabilities are not the point), byte for byte as recorded (only a different JSON-RPC id is put in its place). A
request that matches no recording is answered with a JSON-RPC error AND fails the trial with a problem naming the
file, the request and the first difference, and saying how to re-record, as the model's cassettes do.

    ctx.mcp(McpCassette("mcp-cassettes/everything.yaml", mode="record", real={"command": "npx ..."}), name="everything")
    ctx.mcp(McpCassette("mcp-cassettes/everything.yaml"), name="everything")          # replay, offline
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from ..models._cassette_io import CassetteFileError, load_exchanges, save_exchanges
from ..models.cassette import _first_difference, scrub_exchange
from ..wire._types import Exchange
from ._http import Recorded
from ._record import MCP_SCHEME, McpLog
from ._stdio import read_message

__all__ = ["McpCassette", "cassette_file"]

_MODES = ("replay", "record")


def cassette_file(folder: str | os.PathLike[str], test_id: str) -> Path:
    """A suite test's MCP cassette in a folder of them (`[mcp_servers.NAME] record/replay = FOLDER`)."""
    return Path(folder) / ("".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in test_id) + ".yaml")


class McpCassette:
    """A server's MCP traffic in a file: `mode="record"` runs `real` (`{"command": ...}` or `{"url": ...}`) through
    the recording proxy and writes what passed when the trial ends; `mode="replay"` answers from the file."""

    def __init__(self, path: str | os.PathLike[str], test_id: str | None = None, *, mode: str = "replay",
                 real: Mapping[str, Any] | None = None) -> None:
        if mode not in _MODES:
            raise ValueError(f"McpCassette({str(path)!r}): mode must be replay or record, got {mode!r}")
        self.path = cassette_file(path, test_id) if test_id is not None else Path(path)
        self.mode = mode
        self.real = dict(real) if real is not None else None
        if mode == "record" and not self.real:
            raise ValueError(f"McpCassette({str(self.path)!r}): record needs the real server, real={{'command': ...}} "
                             "or {'url': ...}")
        self.recordings: list[Exchange] = []
        if mode == "replay":
            try:
                self.recordings = [e for e in load_exchanges(self.path) if e.method == "REQUEST"]
            except CassetteFileError as exc:
                how = "" if self.path.exists() else "; record it first: McpCassette(..., mode=\"record\", real=...) or [mcp_servers.NAME] record = \"...\""
                raise CassetteFileError(f"{exc}{how}") from None

    def __repr__(self) -> str:
        return f"McpCassette({str(self.path)!r}, mode={self.mode!r})"

    def replay_target(self, label: str, log: McpLog) -> Any:
        """What the host serves for this cassette in one trial (see `TrialMcp.add`)."""
        if self.mode == "record":
            from ._proxy import proxy_target

            assert self.real is not None
            return _Recording(proxy_target(self.real, label, log), self.path, log)
        return _Replay(label, self, log)


class _Recording:
    """The proxy of a real server, its traffic written to the cassette when the trial ends."""

    def __init__(self, inner: Any, path: Path, log: McpLog) -> None:
        self.inner = inner
        self.name = inner.name
        self.path = path
        self.log = log

    async def start(self) -> None:
        await self.inner.start()

    async def stop(self) -> None:
        await self.inner.stop()
        prefix = f"{MCP_SCHEME}{self.name}/"
        mine = [scrub_exchange(e) for e in self.log.exchanges() if e.url.startswith(prefix)]
        await asyncio.to_thread(save_exchanges, self.path, mine)

    async def serve_stream(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await self.inner.serve_stream(reader, writer)

    async def asgi(self, scope: dict[str, Any], receive: Callable[[], Awaitable[Any]],
                   send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        await self.inner.asgi(scope, receive, send)


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None


def _key(message: dict[str, Any]) -> tuple[str, Any]:
    method = str(message.get("method"))
    if method == "initialize":
        return method, None
    params = message.get("params")
    if isinstance(params, dict):
        params = {k: v for k, v in params.items() if k != "_meta"}
    return method, params


class _Replay:
    """Answers from a cassette, over stdio and over streamable HTTP (JSON responses: no event stream needed)."""

    def __init__(self, name: str, cassette: McpCassette, log: McpLog) -> None:
        self.name = name
        self.cassette = cassette
        self.log = log
        self.used: set[int] = set()
        self.seen = 0
        self.parsed = [_json(e.request_body) for e in cassette.recordings]
        self._http = Recorded(self._http_app, log, name)

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    def answer(self, raw: bytes) -> bytes | None:
        """The recorded answer to a client's message (None for a notification or a response)."""
        message = _json(raw)
        if not isinstance(message, dict) or "id" not in message or not isinstance(message.get("method"), str):
            return None
        self.seen += 1
        key = _key(message)
        for index, recorded in enumerate(self.parsed):
            if index in self.used or not isinstance(recorded, dict) or _key(recorded) != key:
                continue
            self.used.add(index)
            body = self.cassette.recordings[index].response_body
            answer = _json(body)
            if isinstance(answer, dict) and answer.get("id") != message["id"]:
                answer["id"] = message["id"]
                return json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode()
            return body
        return self._miss(message, key)

    def _miss(self, message: dict[str, Any], key: tuple[str, Any]) -> bytes:
        unused = [p for i, p in enumerate(self.parsed) if i not in self.used and isinstance(p, dict)]
        same = [p for p in unused if p.get("method") == key[0]]
        if not self.parsed:
            detail = "the cassette holds no recordings"
        elif same:
            detail = "nearest unused recording: " + (_first_difference(_key(same[0])[1], key[1], "params")
                                                      or "params differ")
        elif unused:
            detail = f"the next unused recording is {unused[0].get('method')}, not {key[0]}"
        else:
            detail = f"all {len(self.parsed)} recordings were already replayed"
        text = (f"MCP cassette {self.cassette.path}: request {self.seen} ({key[0]}) of server {self.name!r} matches no "
                f"recording: {detail}. If the agent's calls changed on purpose, re-record: [mcp_servers.{self.name}] "
                "record = \"...\" with its command or url (or McpCassette(..., mode=\"record\", real=...))")
        self.log.problem(text)
        return json.dumps({"jsonrpc": "2.0", "id": message["id"],
                           "error": {"code": -32603, "message": text}}).encode()

    async def serve_stream(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = self.log.connection(self.name, "stdio")
        while (line := await read_message(reader, conn, "client")) is not None:
            conn.to_server(line)
            answer = self.answer(line)
            if answer is not None:
                conn.from_server(answer)
                writer.write(answer + b"\n")
                await writer.drain()

    async def asgi(self, scope: dict[str, Any], receive: Callable[[], Awaitable[Any]],
                   send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        await self._http(scope, receive, send)

    async def _http_app(self, scope: dict[str, Any], receive: Callable[[], Awaitable[Any]],
                        send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        method = scope["method"]
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if method != "POST":  # no event stream to offer (the spec lets a server say so with 405); a DELETE ends nothing
            await send({"type": "http.response.start", "status": 405 if method == "GET" else 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        answer = self.answer(body)
        if answer is None:
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        headers = [(b"content-type", b"application/json")]
        if (_json(body) or {}).get("method") == "initialize":
            headers.append((b"mcp-session-id", uuid.uuid4().hex.encode()))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": answer})
