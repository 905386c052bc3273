"""A hostile MCP server over stdio, for the tests: it answers the handshake and lists one tool properly, then
misbehaves on the tool call as `sys.argv[1]` says (raw JSON-RPC on purpose: no SDK would send these):

    flood      sends notifications without end
    hang       never answers the call
    malformed  answers with a line that is not JSON-RPC
    huge       answers with a result larger than any message trialrun keeps (and never ends the line)
"""

from __future__ import annotations

import json
import sys
import time

MODE = sys.argv[1]
TOOL = {"name": "fetch", "description": "Fetch a thing", "inputSchema": {"type": "object", "properties": {}}}


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": ident, "result": {"protocolVersion": message["params"]["protocolVersion"],
                                                        "capabilities": {"tools": {}},
                                                        "serverInfo": {"name": "hostile", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": [TOOL]}})
    elif method == "tools/call":
        if MODE == "flood":
            while True:
                send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x" * 200}})
        elif MODE == "hang":
            time.sleep(3600)
        elif MODE == "malformed":
            sys.stdout.write("this is {not json-rpc\n")
            sys.stdout.flush()
        elif MODE == "huge":
            sys.stdout.write(f'{{"jsonrpc": "2.0", "id": {json.dumps(ident)}, "result": {{"content": [{{"type": "text", "text": "')
            chunk = "y" * (1 << 20)
            while True:
                sys.stdout.write(chunk)
                sys.stdout.flush()
    elif ident is not None:
        send({"jsonrpc": "2.0", "id": ident, "result": {}})
