"""A hostile MCP server (tests/mcp/servers/hostile_server.py: it floods, hangs, answers what is not JSON-RPC, or
sends a result bigger than anything kept) behind the recording proxy, called by the reference agent: each is a clear
trial error (phase "mcp", saying what the server did), bounded in time (the trial ends well within its limit, the
server's process is gone) and in memory (the record keeps at most its caps), never a hang of the run."""

from __future__ import annotations

import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from _procs import wait_for_port

import trialrun as tr
from trialrun import expect
from trialrun.mcp._record import DEFAULT_MAX_BYTES, DEFAULT_MAX_MESSAGES
from trialrun.mcp._stdio import MAX_MESSAGE_BYTES

SERVER = Path(__file__).resolve().parent / "servers" / "hostile_server.py"


def _alive(pattern: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if pattern in argv and "pytest" not in argv:
                found.append(argv)
    return found


def _case(mode: str, url: str | None = None) -> tr.Case:
    async def invoke(ctx: tr.TrialContext) -> Any:
        if url is None:
            endpoint = ctx.mcp({"command": [sys.executable, str(SERVER), mode]}, name="hostile")
        else:
            endpoint = ctx.mcp({"url": url}, name="hostile", transport="http")
        agent = tr.Agent(ctx.scripted([tr.tool_call("fetch", {}), tr.reply("done")]),
                         tools=await tr.amcp_tools(endpoint, timeout_s=5), tool_timeout_s=5)
        return await agent.arun("fetch it")

    return tr.Case(name=f"hostile-{mode}", invoke=invoke, timeout_s=60, expect_outcome=[expect.contains("done")],
                   expect_trajectory=[expect.mcp_called("hostile", "fetch")])


@pytest.mark.parametrize("mode, said", [
    ("flood", "flooded its connection: more than 2,000 notifications; the connection was closed"),
    ("hang", "never answered tools/call"),
    ("malformed", "sent a message that is not JSON-RPC 2.0: 'this is {not json-rpc'"),
    ("huge", f"the server sent a message longer than {MAX_MESSAGE_BYTES:,} bytes; the connection was closed"),
])
def test_a_hostile_server_is_a_clear_bounded_trial_error(mode: str, said: str) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    trial = tr.evaluate([_case(mode)]).cases[0].trials[0]
    took = time.monotonic() - started
    grew_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert not trial.passed and trial.error is not None, trial
    assert (trial.error.type, trial.error.phase) == ("McpError", "mcp")
    assert said in trial.error.message and "MCP server 'hostile'" in trial.error.message, trial.error.message
    assert took < 40, took  # the tool call's 5 s limit, the server killed: never the trial's 60 s, never a hang
    assert grew_mib < 3 * (DEFAULT_MAX_BYTES >> 20), grew_mib  # what a peer sends never grows past the caps
    assert len(trial.trajectory.mcp_calls) <= 1 and len(trial.trajectory.notes) < 50
    deadline = time.monotonic() + 5
    while _alive(f"hostile_server.py {mode}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(f"hostile_server.py {mode}")  # the server's process ended with its connection


def test_a_flood_keeps_at_most_the_records_cap() -> None:
    seen: list[int] = []

    async def invoke(ctx: tr.TrialContext) -> Any:
        endpoint = ctx.mcp({"command": [sys.executable, str(SERVER), "flood"]}, name="hostile")
        agent = tr.Agent(ctx.scripted([tr.tool_call("fetch", {}), tr.reply("done")]),
                         tools=await tr.amcp_tools(endpoint), tool_timeout_s=5)
        result = await agent.arun("fetch it")
        seen.append(sum(1 for e in ctx.exchanges() if e.url.startswith("mcp://")))
        return result

    trial = tr.evaluate([tr.Case(name="flood", invoke=invoke, expect_outcome=[expect.contains("done")])]).cases[0].trials[0]
    assert trial.error is not None and trial.error.phase == "mcp"
    assert seen and seen[0] <= DEFAULT_MAX_MESSAGES
    assert os.environ.get("TRIALRUN_MCP_LEAK") is None


@pytest.fixture
def hostile_http(request: pytest.FixtureRequest) -> Any:
    """The hostile server on streamable HTTP in a process of its own (a user's remote server): its URL."""
    import socket
    import subprocess

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, str(SERVER), request.param, str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    wait_for_port(port)
    yield request.param, f"http://127.0.0.1:{port}/mcp"
    process.kill()
    process.wait()


@pytest.mark.parametrize(("hostile_http", "said"), [
    ("flood", "flooded its connection: more than 2,000 notifications; the connection was closed"),
    ("hang", "never answered tools/call"),
    ("malformed", "sent a message that is not JSON-RPC 2.0: 'this is {not json-rpc'"),
    ("huge", f"the server sent a message longer than {MAX_MESSAGE_BYTES:,} bytes; the connection was closed"),
], indirect=["hostile_http"])
def test_a_hostile_server_over_http_is_a_clear_bounded_trial_error(hostile_http: tuple[str, str], said: str,
                                                                  capfd: pytest.CaptureFixture[str],
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    """The same through the proxy to a URL: the trial's error says what the server did, within the call's limit, and
    only there (no traceback of the proxy's web server or of the SDK's client on stderr)."""
    mode, url = hostile_http
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    trial = tr.evaluate([_case(mode, url)]).cases[0].trials[0]
    took = time.monotonic() - started
    assert not trial.passed and trial.error is not None and (trial.error.type, trial.error.phase) == ("McpError", "mcp")
    assert said in trial.error.message and "MCP server 'hostile'" in trial.error.message, trial.error.message
    assert took < 40, took
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024 < 3 * (DEFAULT_MAX_BYTES >> 20)
    out, err = capfd.readouterr()  # (a traceback logged goes to stderr, Python's last resort; pytest captures it)
    assert "Traceback" not in err + out + caplog.text, (err + caplog.text)[-3000:]
