"""The recording proxy: a user's real MCP server, reached through trialrun so every message is recorded like a
scripted server's. `{"command": "npx -y @modelcontextprotocol/server-everything"}` is started for each connection
(an agent's relay), in the trial's workdir unless `cwd` says otherwise, and killed, with everything it started, when the
connection or the trial ends; `{"url": "http://..."}` is forwarded to, request by request (streamed both ways).

Hostile servers are bounded: a line over the message limit, or more traffic than the record keeps, ends the
connection (the server is killed) and fails the trial with a problem saying which; a server that cannot be started
or dies says so with the tail of its stderr. A server that never answers holds nothing but its connection, which
ends with the trial, and the unanswered call fails it (`read.unanswered`).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ._check import ScriptError, check_keys, need
from ._http import Recorded
from ._record import McpLog
from ._stdio import MAX_MESSAGE_BYTES, pump

__all__ = ["proxy_target", "command_of"]

_STDERR_TAIL = 2000
_KILL_AFTER_S = 2.0


def command_of(spec: Mapping[str, Any], where: str) -> list[str]:
    """The command line of a `{"command": ..., "args": [...]}` server (a string is split as a shell would)."""
    command = spec["command"]
    argv = shlex.split(command) if isinstance(command, str) else list(need(command, list, f"{where}.command",
                                                                           "a command line (text or list)"))
    argv += [str(a) for a in need(spec.get("args", []), list, f"{where}.args", "a list of arguments")]
    if not argv or not all(isinstance(a, str) and a for a in argv):
        raise ScriptError(f"{where}.command: an empty command")
    return argv


def proxy_target(spec: Mapping[str, Any], label: str, log: McpLog) -> Any:
    """The proxy for a real server `spec` (`command` or `url`), recorded in `log` under `label`."""
    where = f"MCP server {label!r}"
    check_keys(spec, ("command", "args", "env", "cwd", "url", "headers"), where)
    if ("command" in spec) == ("url" in spec):
        raise ScriptError(f"{where}: a real server is given by command (stdio) or url (streamable HTTP), one of them")
    if "command" in spec:
        env = need(spec.get("env", {}), Mapping, f"{where}.env", "a mapping of variables")
        cwd = spec.get("cwd")
        return StdioProxy(label, command_of(spec, where), {str(k): str(v) for k, v in env.items()}, log,
                          None if cwd is None else str(cwd))
    headers = need(spec.get("headers", {}), Mapping, f"{where}.headers", "a mapping of headers")
    url = need(spec["url"], str, f"{where}.url", "the server's streamable HTTP URL")
    if not url.startswith(("http://", "https://")):
        raise ScriptError(f"{where}.url: an http(s) URL, got {url!r}")
    return HttpProxy(label, url, {str(k): str(v) for k, v in headers.items()}, log)


class StdioProxy:
    """A real stdio server, one process per connection, its lines recorded both ways."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log: McpLog, cwd: str | None) -> None:
        self.name = name
        self.argv = argv
        self.env = env
        self.log = log
        self.cwd = cwd

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    async def serve_stream(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = self.log.connection(self.name, "stdio")
        try:
            process = await asyncio.create_subprocess_exec(
                *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env={**os.environ, **self.env}, cwd=self.cwd, start_new_session=True,
                limit=MAX_MESSAGE_BYTES)
        except OSError as exc:
            self.log.problem(f"MCP server {self.name!r}: cannot run {self.argv[0]!r}: {exc.strerror or exc}")
            return
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        stdin, stdout, stderr = process.stdin, process.stdout, process.stderr
        tail = bytearray()

        async def to_server(line: bytes) -> None:
            stdin.write(line)
            await stdin.drain()

        async def to_client(line: bytes) -> None:
            writer.write(line)
            await writer.drain()

        async def drain_stderr() -> None:
            while chunk := await stderr.read(65536):
                tail.extend(chunk)
                del tail[:-_STDERR_TAIL]

        tasks = [asyncio.ensure_future(pump(reader, to_server, conn, conn.to_server, "client")),
                 asyncio.ensure_future(pump(stdout, to_client, conn, conn.from_server, "server")),
                 asyncio.ensure_future(drain_stderr())]
        try:
            await asyncio.wait(tasks[:2], return_when=asyncio.FIRST_COMPLETED)
            if tasks[1].done() and not tasks[0].done():  # the server ended first (or was cut off): say why
                status = await _exit_status(process)
                if status not in (None, 0) and not self.log.problems:
                    said = tail.decode("utf-8", "replace").strip()[-500:]
                    self.log.problem(f"MCP server {self.name!r} ({shlex.join(self.argv)}) exited with status {status}"
                                     + (f": {said}" if said else ""))
        finally:
            for task in tasks:
                task.cancel()
            _kill(process)
            await asyncio.gather(*tasks, return_exceptions=True)
            if process.returncode is None:
                try:
                    await asyncio.wait_for(process.wait(), _KILL_AFTER_S)
                except asyncio.TimeoutError:
                    pass

    async def asgi(self, scope: dict[str, Any], receive: Callable[[], Awaitable[Any]],
                   send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        await send({"type": "http.response.start", "status": 501, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"a command server is served over stdio"})


async def _exit_status(process: asyncio.subprocess.Process) -> int | None:
    try:
        return await asyncio.wait_for(process.wait(), 0.5)
    except asyncio.TimeoutError:
        return None


def _kill(process: asyncio.subprocess.Process) -> None:
    """Kill the server and everything it started (its own session)."""
    if process.returncode is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            process.kill()
        except ProcessLookupError:
            pass


_HOP = {b"host", b"content-length", b"transfer-encoding", b"connection", b"keep-alive", b"accept-encoding"}


class HttpProxy:
    """A real streamable HTTP server, forwarded to request by request, its messages recorded both ways."""

    def __init__(self, name: str, url: str, headers: dict[str, str], log: McpLog) -> None:
        self.name = name
        self.url = url
        self.headers = headers
        self.log = log
        self._client: Any = None
        self._stopping = False
        self._recorded = Recorded(self._forward, log, name)

    async def start(self) -> None:
        import httpx

        self._client = httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None))

    async def stop(self) -> None:
        self._stopping = True  # (an answer still streaming breaks off: its trial has ended, nothing to say)
        if self._client is not None:
            await self._client.aclose()

    async def serve_stream(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.log.problem(f"MCP server {self.name!r} is a URL (streamable HTTP): give it transport = \"http\"")

    async def asgi(self, scope: dict[str, Any], receive: Callable[[], Awaitable[Any]],
                   send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        await self._recorded(scope, receive, send)

    async def _forward(self, scope: dict[str, Any], receive: Callable[[], Awaitable[Any]],
                       send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        import httpx

        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope.get("headers", []) if k not in _HOP]
        headers += list(self.headers.items())
        request = self._client.build_request(scope["method"], self.url, headers=headers, content=body)
        try:
            response = await self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            self.log.problem(f"MCP server {self.name!r} ({self.url}) could not be reached: {type(exc).__name__}: {exc}")
            await send({"type": "http.response.start", "status": 502, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"the MCP server could not be reached"})
            return
        try:
            out = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers.items()
                   if k.encode("latin-1").lower() not in _HOP and k.lower() != "content-encoding"]
            await send({"type": "http.response.start", "status": response.status_code, "headers": out})
            try:
                async for chunk in response.aiter_bytes():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            except httpx.HTTPError as exc:  # the answer broke off: said here, once, never a web server's traceback
                if not self._stopping:
                    self.log.problem(f"MCP server {self.name!r} ({self.url}): its answer broke off: "
                                     f"{type(exc).__name__}: {exc}".rstrip(": "))
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await response.aclose()
