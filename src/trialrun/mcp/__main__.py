"""`python -m trialrun.mcp serve SCRIPT [--record FILE]`: a scripted MCP server on this process's stdin and stdout,
for an agent run outside trialrun (its MCP configuration names this command). Every message both ways is recorded
and, with --record, written (scrubbed) to FILE as an MCP cassette when the client ends the session.

Exit status: 0 when the session ended, 2 when the script cannot be read (the message names the file and field), 1
when the script had no answer for a call (each such call named on stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

__all__ = ["main"]


async def _serve(server: object, record: Path | None, name: str) -> list[str]:
    from ..models._cassette_io import save_exchanges
    from ..models.cassette import scrub_exchange
    from ._record import McpLog
    from ._script import ScriptState
    from ._sdk_server import build_server
    from ._stdio import MAX_MESSAGE_BYTES, serve_sdk

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_MESSAGE_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(os.dup(0), "rb", 0))
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, os.fdopen(os.dup(1), "wb", 0))
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    log = McpLog()
    state = ScriptState(server, name)  # type: ignore[arg-type]
    await serve_sdk(build_server(state), reader, writer, log.connection(name, "stdio"))
    if record is not None:
        save_exchanges(record, [scrub_exchange(e) for e in log.exchanges()])
    return [*log.problems, *state.problems]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trialrun.mcp", description="Serve a scripted MCP server on stdio.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve SCRIPT (a scripted MCP server's YAML or JSON file) on stdio")
    serve.add_argument("script", type=Path)
    serve.add_argument("--record", type=Path, help="write every message, scrubbed, to this MCP cassette at the end")
    serve.add_argument("--name", help="the server's name (default: the file's)")
    options = parser.parse_args(argv)
    from ._check import ScriptError
    from ._script import ScriptedMCPServer

    try:
        server = ScriptedMCPServer.load(options.script, name=options.name)
    except ScriptError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    problems = asyncio.run(_serve(server, options.record, server.name))
    for problem in problems:
        print(f"trialrun.mcp: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
