"""Serve a model transport on a loopback port, for agents in another process or language.

The agent is pointed at `endpoint.openai_base_url` (OpenAI-compatible: `/v1/chat/completions`, `/v1/responses`)
or `endpoint.anthropic_base_url` (`/v1/messages`); every request goes through the transport (a ScriptedModel, a
Cassette, ...), which observes the traffic as usual, so `transport.trajectory()` is the out-of-process agent's
trajectory. Streamed responses are streamed (chunked transfer encoding).

    with tr.serve(tr.ScriptedModel([...])) as endpoint:
        subprocess.run(["node", "agent.js"], env={**os.environ, "OPENAI_BASE_URL": endpoint.openai_base_url})
"""

from __future__ import annotations

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import httpx

__all__ = ["ModelEndpoint", "serve"]

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "te", "trailer", "upgrade"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP]
        request = httpx.Request(self.command, f"http://{self.server.host_header}{self.path}", headers=headers, content=body)
        try:
            response = self.server.transport.handle_request(request)
        except Exception as exc:  # noqa: BLE001 - the agent gets a 502 saying why, the server keeps serving
            message = f"trialrun endpoint: the model transport raised {type(exc).__name__}: {exc}".encode()
            self.send_response(502)
            self.send_header("content-type", "text/plain; charset=utf-8")
            self.send_header("content-length", str(len(message)))
            self.end_headers()
            self.wfile.write(message)
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

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Quiet: the transport records every exchange already."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], transport: httpx.BaseTransport) -> None:
        super().__init__(address, _Handler)
        self.transport = transport
        self.host_header = f"{address[0]}:{self.server_address[1]}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-request (an agent cancelled, a timeout) is normal here, not a traceback."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class ModelEndpoint:
    """A model transport served over HTTP on 127.0.0.1 (a free port by default), in a background thread."""

    def __init__(self, transport: httpx.BaseTransport, *, host: str = "127.0.0.1", port: int = 0) -> None:
        if not isinstance(transport, httpx.BaseTransport):
            raise TypeError(f"ModelEndpoint serves a synchronous httpx transport, got {type(transport).__name__}")
        self.transport = transport
        self._server = _Server((host, port), transport)
        self._thread: threading.Thread | None = None

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

    def start(self) -> ModelEndpoint:
        if self._thread is None:
            self._thread = threading.Thread(target=self._server.serve_forever, name="trialrun-endpoint", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> ModelEndpoint:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"ModelEndpoint({self.url}, transport={type(self.transport).__name__})"


def serve(transport: httpx.BaseTransport, *, host: str = "127.0.0.1", port: int = 0) -> ModelEndpoint:
    """Serve `transport` on a loopback port; use as a context manager (or call `.start()` and `.stop()`)."""
    return ModelEndpoint(transport, host=host, port=port)
