"""MCP over stdio, as the host sees it: newline-delimited JSON-RPC on a relay's connection (the relay is the command
the agent starts; it passes its stdin and stdout through), each line recorded as it passes. Either the SDK's server
answers the lines (`serve_sdk`: a scripted server), or a real server's own process does (`pump`: the recording
proxy). Lines are bounded (`MAX_MESSAGE_BYTES`): a longer one ends the connection with a problem, never a buffer
that grows with what a peer sends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from ._record import Connection

__all__ = ["MAX_MESSAGE_BYTES", "too_long", "read_message", "serve_sdk", "pump"]

#: The longest message (one line) read from either side; a stream's buffer never holds more.
MAX_MESSAGE_BYTES = 8 << 20


def too_long(conn: Connection, who: str) -> None:
    """Say that `who` (the client, the server) sent a message over the limit: the one rule for stdio and HTTP alike,
    whose caller closes the connection (an HTTP answer is cut off there)."""
    conn.log.problem(f"MCP server {conn.server!r}: the {who} sent a message longer than {MAX_MESSAGE_BYTES:,} bytes; "
                     "the connection was closed")


async def read_message(reader: asyncio.StreamReader, conn: Connection, who: str) -> bytes | None:
    """The next non-empty line, without its newline; None at the end of the stream, or after a line longer than
    the limit (a problem says so)."""
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            line = exc.partial  # the last line, without a newline
            if not line.strip():
                return None
        except asyncio.LimitOverrunError:
            too_long(conn, who)
            return None
        if line.strip():
            return line.rstrip(b"\r\n")


async def serve_sdk(server: Any, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: Connection) -> None:
    """The SDK's server answering one connection's lines (until the client's side ends)."""
    import anyio

    from ._sdk import sdk

    _, types = sdk()
    from mcp.shared.message import SessionMessage

    read_send, read_recv = anyio.create_memory_object_stream[Any](16)
    write_send, write_recv = anyio.create_memory_object_stream[Any](16)

    async def inbound() -> None:
        async with read_send:
            while (line := await read_message(reader, conn, "client")) is not None:
                conn.to_server(line)
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except Exception as exc:  # noqa: BLE001 - the SDK answers a malformed message with an error
                    await read_send.send(exc)
                    continue
                await read_send.send(SessionMessage(message))

    async def outbound() -> None:
        async with write_recv:
            async for item in write_recv:
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True).encode()
                conn.from_server(data)
                writer.write(data + b"\n")
                await writer.drain()

    async def run() -> None:
        try:
            await server.run(read_recv, write_send, server.create_initialization_options())
        finally:
            await write_send.aclose()

    async with anyio.create_task_group() as group:
        group.start_soon(outbound)
        group.start_soon(run)
        await inbound()


async def pump(source: asyncio.StreamReader, sink: Callable[[bytes], Awaitable[None]], conn: Connection,
               record: Callable[[bytes], Any], who: str) -> None:
    """Pass `source`'s lines to `sink`, recording each (`record`), until `source` ends, or until the record is full
    (a flood: the connection ends, and the trial has a problem saying so)."""
    while (line := await read_message(source, conn, who)) is not None:
        record(line)
        if conn.log.dropped or conn.cut:
            return
        await sink(line + b"\n")
