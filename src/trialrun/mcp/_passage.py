"""The model endpoint's passage for MCP traffic (`ModelEndpoint.pass_mcp`), for an agent in a sandbox whose one way
out is the endpoint's port: an HTTP request under `MCP_PATH` is forwarded to trialrun's MCP host and its answer
streamed back (an event stream as it comes), and a stdio relay that asks for `Upgrade: trialrun-mcp-relay` gets
`101` and its connection joined to the host's relay port, byte for byte, until either side ends. Standard library and
httpx only; nothing here is recorded: the MCP host records every message it serves.
"""

from __future__ import annotations

import functools
import select
import socket
from collections.abc import Callable
from typing import Any

import httpx

__all__ = ["pass_on", "UPGRADE", "MCP_PATH"]

#: Where an endpoint that passes MCP traffic on (`pass_mcp`) takes it: `/trialrun-mcp/<token>` and the relays'.
MCP_PATH = "/trialrun-mcp/"
UPGRADE = "trialrun-mcp-relay"
_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "te", "trailer",
        "upgrade", "host"}


@functools.cache
def _client() -> httpx.Client:
    """One client for every passage (loopback only), made at the first: the endpoint imports this module's path."""
    return httpx.Client(timeout=httpx.Timeout(30.0, read=None))


def pass_on(handler: Any, ports: Callable[[], tuple[int, int]]) -> None:
    """Carry one request (or a relay's connection) on to the MCP host (see the module)."""
    http_port, relay_port = ports()
    if handler.headers.get("upgrade", "").lower() == UPGRADE:
        _join(handler, relay_port)
        return
    token = handler.path[len("/trialrun-mcp/"):]
    length = int(handler.headers.get("content-length") or 0)
    body = handler.rfile.read(length) if length else b""
    headers = [(k, v) for k, v in handler.headers.items() if k.lower() not in _HOP]
    request = _client().build_request(handler.command, f"http://127.0.0.1:{http_port}/mcp/{token}", headers=headers,
                                    content=body)
    try:
        response = _client().send(request, stream=True)
    except httpx.HTTPError as exc:
        handler._plain(502, f"trialrun endpoint: the MCP host could not be reached ({type(exc).__name__})")
        return
    try:
        handler.send_response(response.status_code)
        for key, value in response.headers.multi_items():
            if key.lower() not in _HOP:
                handler.send_header(key, value)
        handler.send_header("transfer-encoding", "chunked")
        handler.end_headers()
        for chunk in response.iter_raw():
            if chunk:
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                handler.wfile.flush()
        handler.wfile.write(b"0\r\n\r\n")
    finally:
        response.close()


def _join(handler: Any, relay_port: int) -> None:
    """`101`, then the relay's connection and one to the host's relay port joined until either side ends."""
    try:
        upstream = socket.create_connection(("127.0.0.1", relay_port), timeout=10)
    except OSError:
        handler._plain(502, "trialrun endpoint: the MCP host could not be reached")
        return
    handler.send_response(101)
    handler.send_header("connection", "upgrade")
    handler.send_header("upgrade", UPGRADE)
    handler.end_headers()
    handler.wfile.flush()
    handler.close_connection = True
    client = handler.connection  # (the relay sends nothing more before it reads the 101: nothing is buffered)
    upstream.settimeout(None)
    client.settimeout(None)
    try:
        sockets = [client, upstream]
        while True:
            ready, _, _ = select.select(sockets, [], [])
            for source in ready:
                data = source.recv(1 << 16)
                if not data:
                    return
                (upstream if source is client else client).sendall(data)
    except OSError:
        return
    finally:
        upstream.close()
