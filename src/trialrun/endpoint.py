"""Serve a model transport on a loopback port, for agents in another process or language.

The agent is pointed at `endpoint.openai_base_url` (OpenAI-compatible: `/v1/chat/completions`, `/v1/responses`)
or `endpoint.anthropic_base_url` (`/v1/messages`); every request goes through the transport (a ScriptedModel, a
Cassette, ...), which observes the traffic as usual, so `transport.trajectory()` is the out-of-process agent's
trajectory. Streamed responses are streamed (chunked transfer encoding).

    with tr.serve(tr.ScriptedModel([...])) as endpoint:
        subprocess.run(["node", "agent.js"], env={**os.environ, "OPENAI_BASE_URL": endpoint.openai_base_url})

One thread accepts for every endpoint of the process, waiting on their listening sockets and a wake-up socket
together: `start()` and `stop()` only queue a job for it, so a stop takes effect at once (no polling interval to
wait out), and `astop()` does the same without blocking an event loop. A request body
over `max_body` bytes (Content-Length or chunked) is refused with 413 before it is read: memory stays bounded
whatever an agent sends, and the refusal is a note on the trajectory.
"""

from __future__ import annotations

import selectors
import socket
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import httpx

from ._util.per_process import PerProcess
from .mcp._passage import MCP_PATH

__all__ = ["ModelEndpoint", "serve", "DEFAULT_MAX_BODY", "MCP_PATH"]

#: The largest request body the endpoint reads (32 MiB: a coding agent's largest requests are a few MiB).
DEFAULT_MAX_BODY = 32 << 20

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "te", "trailer", "upgrade"}
_DRAIN_S = 2.0  # how long a refused body is read and dropped, so the client sees the 413 instead of a reset
_LINE = 65537   # the longest chunk-size or trailer line read


class _BadRequest(Exception):
    """The request's framing cannot be read (the message says why)."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def _serve(self) -> None:
        if self.server.mcp_ports is not None and self.path.startswith(MCP_PATH):
            from .mcp._passage import pass_on

            pass_on(self, self.server.mcp_ports)  # a sandboxed agent's MCP traffic: to trialrun's MCP host
            return
        try:
            body = self._body(self.server.max_body)
        except _BadRequest as exc:
            self._plain(400, f"trialrun endpoint: {exc}")
            self.close_connection = True
            return
        if body is None:
            return
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP]
        request = httpx.Request(self.command, f"http://{self.server.host_header}{self.path}", headers=headers, content=body)
        try:
            response = self.server.transport.handle_request(request)
        except Exception as exc:  # noqa: BLE001 - the agent gets a 502 saying why, the server keeps serving
            self._plain(502, f"trialrun endpoint: the model transport raised {type(exc).__name__}: {exc}")
            return
        self.send_response(response.status_code)
        for key, value in response.headers.multi_items():
            if key.lower() not in _HOP_BY_HOP:
                self.send_header(key, value)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            for chunk in response.iter_bytes():  # decoded: content-encoding is not passed on
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        finally:
            response.close()

    do_POST = do_GET = do_PUT = do_DELETE = do_PATCH = _serve

    def _body(self, limit: int) -> bytes | None:
        """The request body, read only up to `limit` bytes; None when it was over that and has been refused."""
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            return self._chunked(limit)
        text = (self.headers.get("content-length") or "0").strip()
        if not text.isdigit():
            raise _BadRequest(f"Content-Length {text[:40]!r} is not a number of bytes")
        length = int(text)
        if length > limit:
            self._refuse(f"a request body of {length} bytes", limit)
            return None
        return self.rfile.read(length) if length else b""

    def _chunked(self, limit: int) -> bytes | None:
        parts: list[bytes] = []
        total = 0
        while True:
            line = self.rfile.readline(_LINE)
            size_text = line.split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise _BadRequest(f"chunk size {size_text[:40]!r} is not hexadecimal") from None
            if size < 0:
                raise _BadRequest("negative chunk size")
            if size == 0:
                while self.rfile.readline(_LINE) not in (b"\r\n", b"\n", b""):  # trailers
                    pass
                return b"".join(parts)
            if total + size > limit:
                self._refuse(f"a chunked request body of more than {limit} bytes", limit)
                return None
            chunk = self.rfile.read(size)
            if len(chunk) < size:
                raise _BadRequest("the body ended inside a chunk")
            parts.append(chunk)
            total += size
            self.rfile.readline(_LINE)  # the CRLF after the chunk

    def handle_expect_100(self) -> bool:
        """`Expect: 100-continue` (curl's, for large bodies): a body over the limit is refused before it is sent."""
        text = (self.headers.get("content-length") or "").strip()
        if text.isdigit() and int(text) > self.server.max_body:
            self._refuse(f"a request body of {text} bytes", self.server.max_body, drain=False)
            return False
        return super().handle_expect_100()

    def _refuse(self, what: str, limit: int, *, drain: bool = True) -> None:
        """413, a note on the trajectory, then the rest of the body read and dropped for a moment (a client that
        is still sending sees the answer instead of a reset), in blocks: nothing of it is kept."""
        message = (f"trialrun endpoint: refused {what} to {self.command} {self.path.partition('?')[0]}: over the "
                   f"limit of {limit} bytes (answered 413; tr.serve(..., max_body=N) and ctx.serve(..., max_body=N) "
                   "set it)")
        self.server.note(message)
        self.close_connection = True
        self._plain(413, message, close=True)
        if not drain:
            return
        deadline = time.monotonic() + _DRAIN_S
        try:
            while (left := deadline - time.monotonic()) > 0:
                self.connection.settimeout(left)
                if not self.rfile.read1(1 << 16):
                    break
        except OSError:  # a timeout or a reset: done either way
            pass

    def _plain(self, status: int, message: str, *, close: bool = False) -> None:
        data = message.encode()
        self.send_response(status)
        self.send_header("content-type", "text/plain; charset=utf-8")
        self.send_header("content-length", str(len(data)))
        if close:
            self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Quiet: the transport records every exchange already."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], transport: httpx.BaseTransport, max_body: int) -> None:
        super().__init__(address, _Handler)
        self.transport = transport
        self.max_body = max_body
        self.host_header = f"{address[0]}:{self.server_address[1]}"
        self.notes: list[str] = []
        self.mcp_ports: Callable[[], tuple[int, int]] | None = None  # (HTTP, relay) of the MCP host, when passed on

    def note(self, message: str) -> None:
        """Kept on the endpoint, and on the transport's trajectory when it keeps notes (every trialrun model)."""
        self.notes.append(message)
        noting = getattr(self.transport, "note", None)
        if callable(noting):
            noting(message)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-request (an agent cancelled, a timeout) is normal here, not a traceback."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Acceptor:
    """The one thread that accepts for every endpoint of the process: a selector over their listening sockets and
    a queue of what endpoints ask (start serving a socket, stop). Starting or stopping an endpoint only queues a
    job: no thread is started or joined per endpoint, and an event loop never waits on one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: list[tuple[str, ModelEndpoint, socket.socket | None]] = []
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._serving: dict[ModelEndpoint, list[socket.socket]] = {}
        self.thread = threading.Thread(target=self._run, name="trialrun-endpoint", daemon=True)
        self.thread.start()

    def ask(self, what: str, endpoint: ModelEndpoint, listener: socket.socket | None = None) -> None:
        with self._lock:
            self._jobs.append((what, endpoint, listener))
        self._wake_w.send(b"x")

    def _run(self) -> None:
        while True:
            for key, _ in self._selector.select():
                if key.fileobj is self._wake_r:
                    self._jobs_now()
                    continue
                endpoint = key.data
                listener = key.fileobj
                assert isinstance(listener, socket.socket)
                try:
                    connection, address = listener.accept()
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:  # a handed-in socket that broke: stop watching it
                    self._selector.unregister(listener)
                    continue
                connection.setblocking(True)
                endpoint._server.process_request(connection, address)  # a thread per connection (daemon)

    def _jobs_now(self) -> None:
        try:
            self._wake_r.recv(4096)
        except BlockingIOError:
            pass
        with self._lock:
            jobs, self._jobs = self._jobs, []
        for what, endpoint, listener in jobs:
            if what == "serve" and listener is not None:
                if endpoint._stopping:
                    listener.close()
                    continue
                listener.setblocking(False)
                self._selector.register(listener, selectors.EVENT_READ, endpoint)
                self._serving.setdefault(endpoint, []).append(listener)
            elif what == "stop":
                for served in self._serving.pop(endpoint, []):
                    self._selector.unregister(served)
                endpoint._close()


_ACCEPTOR: PerProcess[_Acceptor] = PerProcess(_Acceptor)  # one accepting thread for every endpoint


class ModelEndpoint:
    """A model transport served over HTTP on 127.0.0.1 (a free port by default), in a background thread.

    `max_body` is the largest request body read (bytes; larger ones are answered 413 and noted)."""

    def __init__(self, transport: httpx.BaseTransport, *, host: str = "127.0.0.1", port: int = 0,
                 max_body: int = DEFAULT_MAX_BODY) -> None:
        if not isinstance(transport, httpx.BaseTransport):
            raise TypeError(f"ModelEndpoint serves a synchronous httpx transport, got {type(transport).__name__}")
        if isinstance(max_body, bool) or not isinstance(max_body, int) or max_body < 0:
            raise ValueError(f"ModelEndpoint: max_body must be a number of bytes (0 or more), got {max_body!r}")
        self.transport = transport
        self._server = _Server((host, port), transport, max_body)
        self._lock = threading.Lock()
        self._listeners: list[socket.socket] = []  # every socket it serves on (closed on stop)
        self._started = False
        self._stopping = False
        self._closed = threading.Event()
        self._on_close: list[Callable[[], None]] = []

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]  # an AF_INET server's: (host text, port)
        return f"http://{host!s}:{port}"

    @property
    def openai_base_url(self) -> str:
        """For OpenAI-compatible clients (OPENAI_BASE_URL)."""
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """For Anthropic clients (ANTHROPIC_BASE_URL)."""
        return self.url

    @property
    def max_body(self) -> int:
        return self._server.max_body

    @property
    def notes(self) -> list[str]:
        """What the endpoint refused (a body over `max_body`), as noted on the trajectory."""
        return list(self._server.notes)

    def start(self) -> ModelEndpoint:
        with self._lock:
            if self._started or self._stopping:
                return self
            self._started = True
            self._listeners.append(self._server.socket)
        _ACCEPTOR.get().ask("serve", self, self._server.socket)
        return self

    def pass_mcp(self, ports: Callable[[], tuple[int, int]]) -> None:
        """Also carry the trial's MCP traffic, under `MCP_PATH` (its one way out for an agent in a sandbox): HTTP
        requests to trialrun's MCP host (`ports()`: its HTTP and relay ports on the real loopback), and relays that
        ask to be upgraded, joined to its relay port. Never recorded as model exchanges: the MCP host records them."""
        self._server.mcp_ports = ports

    def add_listener(self, listener: socket.socket) -> None:
        """Also serve the connections made to `listener`, a listening socket made elsewhere (in a sandbox's own
        network namespace, where the agent's 127.0.0.1 is not ours); it is closed when the endpoint stops."""
        with self._lock:
            if self._stopping:
                listener.close()
                return
            self._listeners.append(listener)
        _ACCEPTOR.get().ask("serve", self, listener)

    def _close(self) -> None:
        """(in the accepting thread, once it no longer watches them) Close every socket, then say so."""
        with self._lock:
            listeners, self._listeners = self._listeners, []
            callbacks, self._on_close = self._on_close, []
        self._server.server_close()
        for listener in listeners:
            listener.close()
        self._closed.set()
        for callback in callbacks:
            callback()

    def _stop(self, callback: Callable[[], None] | None = None) -> bool:
        """Ask for the stop; False when there is nothing to wait for (never started, or closed already)."""
        with self._lock:
            first = not self._stopping
            self._stopping = True
            started = self._started
            if callback is not None and started and not self._closed.is_set():
                self._on_close.append(callback)
        if not started:
            if first:
                self._close()
            return False
        if first:
            _ACCEPTOR.get().ask("stop", self)
        return not self._closed.is_set()

    def stop(self) -> None:
        """Stop serving and close the port, at once (the accepting thread is woken, not polled)."""
        acceptor = _ACCEPTOR.current
        if self._stop() and (acceptor is None or threading.current_thread() is not acceptor.thread):
            self._closed.wait(timeout=5)

    async def astop(self) -> None:
        """`stop()` for a coroutine: the loop awaits the port's closing, never blocked on it."""
        import asyncio

        loop = asyncio.get_running_loop()
        closed: asyncio.Future[None] = loop.create_future()

        def settle() -> None:
            if not closed.done():
                closed.set_result(None)

        def from_thread() -> None:
            try:
                loop.call_soon_threadsafe(settle)
            except RuntimeError:  # the loop has closed meanwhile: nobody waits
                pass

        if self._stop(from_thread) and not self._closed.is_set():
            await closed

    def __enter__(self) -> ModelEndpoint:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"ModelEndpoint({self.url}, transport={type(self.transport).__name__})"


def serve(transport: httpx.BaseTransport, *, host: str = "127.0.0.1", port: int = 0,
          max_body: int = DEFAULT_MAX_BODY) -> ModelEndpoint:
    """Serve `transport` on a loopback port; use as a context manager (or call `.start()` and `.stop()`).
    `max_body`: the largest request body read, in bytes (larger: 413, and a note on the trajectory)."""
    return ModelEndpoint(transport, host=host, port=port, max_body=max_body)
