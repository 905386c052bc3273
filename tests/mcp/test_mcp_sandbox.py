"""An agent in the bubblewrap sandbox reaches the trial's scripted MCP servers (stdio and HTTP) through its model
endpoint, the sandbox's one way out, and nothing else: the MCP host's own ports, and any other loopback service, stay
unreachable from inside. The agent here is a small script of the test's own (a plain command agent, given the servers
in TRIALRUN_MCP_CONFIG), so what it could and could not reach is what it writes down, not what trialrun says."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

import trialrun as tr
from trialrun import expect
from trialrun._contain.sandbox import bwrap_problem
from trialrun.mcp._host import host

AGENT = r'''
import json, os, socket, subprocess, sys, urllib.request
servers = json.load(open(os.environ["TRIALRUN_MCP_CONFIG"]))["mcpServers"]
seen = {}
init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search_notes", "arguments": {"query": "dentist"}}}
notes = servers["notes"]
relay = subprocess.Popen([notes["command"], *notes["args"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
for message in (init, {"jsonrpc": "2.0", "method": "notifications/initialized"}, call):
    relay.stdin.write((json.dumps(message) + "\n").encode()); relay.stdin.flush()
    if "id" in message:
        seen.setdefault("stdio", []).append(json.loads(relay.stdout.readline()))
relay.stdin.close(); relay.wait()
request = urllib.request.Request(servers["calendar"]["url"], data=json.dumps(init).encode(), method="POST",
    headers={"content-type": "application/json", "accept": "application/json, text/event-stream"})
with urllib.request.urlopen(request, timeout=10) as response:
    text = response.read().decode()
seen["http"] = json.loads(next(line[5:] for line in text.splitlines() if line.startswith("data:")) if "data:" in text else text)
seen["direct"] = {}
for port in json.loads(sys.argv[1]):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        seen["direct"][str(port)] = "connected"
    except OSError as exc:
        seen["direct"][str(port)] = type(exc).__name__
print(json.dumps(seen))
'''


@pytest.fixture
def listening() -> Any:
    """Another loopback service of the host (a database, say): it must stay out of the sandbox's reach."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    yield server.getsockname()[1]
    server.close()


def test_the_sandbox_reaches_the_declared_servers_and_nothing_else(tmp_path: Path, listening: int) -> None:
    problem = bwrap_problem()
    if problem is not None:
        pytest.fail(f"bubblewrap is needed here: {problem}")
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    notes = tr.ScriptedMCPServer("notes").tool("search_notes", params={"query": "string"}, answer="Tuesday 10:00")
    calendar = tr.ScriptedMCPServer("calendar").tool("free_slots", answer="none")
    served = host()

    async def invoke(ctx: tr.TrialContext) -> Any:
        ctx.mcp(notes)
        ctx.mcp(calendar, transport="http")
        ports = json.dumps([served.relay_port, served.http_port, listening])
        agent = tr.ProcessAgent([sys.executable, str(script), ports], sandbox="bwrap")
        return await agent.arun("go", ctx, model=ctx.scripted([tr.reply("unused")]))

    case = tr.Case(name="sandboxed", invoke=invoke, expect_outcome=[expect.contains("stdio")],
                   expect_trajectory=[expect.mcp_called("notes", "search_notes", {"query": "dentist"}),
                                      expect.mcp_not_called("calendar", reached=True)])
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert trial.error is None, (trial.error, trial.output)
    seen = json.loads(trial.output)
    assert seen["stdio"][1]["result"]["content"][0]["text"] == "Tuesday 10:00"  # reached, through the endpoint
    assert seen["http"]["result"]["serverInfo"]["name"] == "calendar"
    assert seen["direct"] == {str(p): "ConnectionRefusedError" for p in (served.relay_port, served.http_port,
                                                                          listening)}, seen["direct"]
    assert all(v.passed for v in trial.verdicts), [v.reason for v in trial.verdicts]
    servers = {s.name: s.connections for s in trial.trajectory.mcp_servers}
    assert servers == {"notes": 1, "calendar": 1}  # what reached them, recorded as without a sandbox
