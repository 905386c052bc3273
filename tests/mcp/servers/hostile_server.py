"""A hostile MCP server, for the tests: over stdio (`hostile_server.py MODE`) or streamable HTTP
(`hostile_server.py MODE PORT`, answering the call as an event stream), it answers the handshake and lists one tool
properly, then misbehaves on the tool call as MODE says (raw JSON-RPC on purpose: no SDK would send these):

    flood      sends notifications without end
    hang       never answers the call
    malformed  answers with a message that is not JSON-RPC
    huge       answers with a result larger than any message trialrun keeps (and never ends it)
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = sys.argv[1]
TOOL = {"name": "fetch", "description": "Fetch a thing", "inputSchema": {"type": "object", "properties": {}}}


def answer(message: dict, send: Callable[[str], None], raw: Callable[[str], None]) -> None:
    """Answer `message`: `send` writes one whole message, `raw` writes text as it is (a message never ended)."""
    method, ident = message.get("method"), message.get("id")
    if method == "initialize":
        send(json.dumps({"jsonrpc": "2.0", "id": ident, "result": {
            "protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"}}}))
    elif method == "tools/list":
        send(json.dumps({"jsonrpc": "2.0", "id": ident, "result": {"tools": [TOOL]}}))
    elif method == "tools/call":
        if MODE == "flood":
            while True:
                send(json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                                 "params": {"level": "info", "data": "x" * 200}}))
        elif MODE == "hang":
            time.sleep(3600)
        elif MODE == "malformed":
            send("this is {not json-rpc")
        elif MODE == "huge":
            raw(f'{{"jsonrpc": "2.0", "id": {json.dumps(ident)}, "result": {{"content": [{{"type": "text", "text": "')
            while True:
                raw("y" * (1 << 20))
    elif ident is not None:
        send(json.dumps({"jsonrpc": "2.0", "id": ident, "result": {}}))


class Http(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        message = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if "id" not in message:  # a notification
            self.send_response(202)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("mcp-session-id", "hostile")
        self.end_headers()

        def raw(text: str) -> None:
            self.wfile.write(text.encode())
            self.wfile.flush()

        answer(message, lambda text: raw(f"event: message\ndata: {text}\n\n"), lambda text: raw(text) if text[0] == "y"
               else raw(f"event: message\ndata: {text}"))

    def do_GET(self) -> None:  # noqa: N802 - no stream of the server's own
        self.send_response(405)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


if len(sys.argv) > 2:
    Http.protocol_version = "HTTP/1.0"  # the body ends when the connection does
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Http).serve_forever()
else:
    for line in sys.stdin:
        answer(json.loads(line), lambda text: _write(text + "\n"), _write)
