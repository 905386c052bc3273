"""A real MCP server of the tests' own, written with the official SDK's MCPServer (nothing of trialrun): it files
tickets, a side effect (a line appended to the file named by $TICKETS) with an answer that differs every run (the
time it was filed), so a replay that gave its answers back byte for byte without running it is seen to.

    python tickets_server.py                 # stdio
    python tickets_server.py http PORT       # streamable HTTP on 127.0.0.1:PORT/mcp
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("tickets")


@server.tool()
def file_ticket(title: str, priority: str = "normal") -> str:
    """File a ticket in the tracker."""
    with open(os.environ["TICKETS"], "a", encoding="utf-8") as tickets:
        tickets.write(f"{title}\t{priority}\n")
    with open(os.environ["TICKETS"], encoding="utf-8") as tickets:
        number = sum(1 for _ in tickets)
    return f"ticket #{number} ({priority}) filed at {time.time_ns()}: {title}"


@server.tool()
def count_tickets() -> int:
    """How many tickets are open."""
    try:
        with open(os.environ["TICKETS"], encoding="utf-8") as tickets:
            return sum(1 for _ in tickets)
    except FileNotFoundError:
        return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
