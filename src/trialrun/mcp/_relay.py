"""The stdio relay: the command an agent starts for a trialrun MCP server. A few lines of standard-library Python
(`python -I -S -c ...`: no site-packages, no trialrun import, so it starts in milliseconds with any interpreter and
inside a sandbox) that connect to the host's relay port, say which server they want (a secret token), and pass
stdin to it and its answers to stdout until either side ends. In a sandbox, where the model endpoint's port is the
one way out, the relay connects there and asks to be upgraded to a passage to the host (`_passage`) first. The server itself, and its record, stay in the trial's
process.
"""

from __future__ import annotations

import sys

__all__ = ["RELAY", "relay_command"]

RELAY = """import os, socket, sys, threading
host, _, port = sys.argv[1].rpartition(":")
s = socket.create_connection((host, int(port)))
if len(sys.argv) > 3:
    s.sendall(("GET " + sys.argv[3] + " HTTP/1.1\\r\\nHost: " + sys.argv[1] + "\\r\\nConnection: upgrade\\r\\n"
               "Upgrade: trialrun-mcp-relay\\r\\n\\r\\n").encode())
    head = b""
    while b"\\r\\n\\r\\n" not in head:
        more = s.recv(1)
        if not more:
            sys.exit("trialrun relay: the endpoint closed the connection")
        head += more
    if b" 101 " not in head.split(b"\\r\\n")[0]:
        sys.exit("trialrun relay: no passage to the MCP host: " + head.split(b"\\r\\n")[0].decode("latin-1"))
s.sendall(sys.argv[2].encode() + b"\\n")
def up():
    try:
        while True:
            data = os.read(0, 65536)
            if not data:
                break
            s.sendall(data)
    except OSError:
        pass
    try:
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
threading.Thread(target=up, daemon=True).start()
out = sys.stdout.buffer
while True:
    try:
        data = s.recv(65536)
    except OSError:
        break
    if not data:
        break
    out.write(data)
    out.flush()
"""


def relay_command(address: str, token: str, passage: str | None = None) -> list[str]:
    """The relay's command line for the server registered under `token` at the host's relay `address`; or, with
    `passage` (a path of the model endpoint at `address`), through that endpoint (an agent in a sandbox)."""
    return [sys.executable, "-I", "-S", "-c", RELAY, address, token, *([passage] if passage else [])]
