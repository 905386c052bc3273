"""A real MCP server (the tests' own, written with the official SDK; tests/mcp/servers/tickets_server.py) reached
through the recording proxy, over stdio and over streamable HTTP, its traffic recorded once into an MCP cassette and
replayed with no server running: the agent gets the same answers byte for byte, and the server's side effect (a
ticket filed, a line in a file) does not happen again. A call the recording does not hold fails the trial, saying
how to re-record."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _procs import wait_for_port

import trialrun as tr
from trialrun import expect
from trialrun.models._cassette_io import load_exchanges

SERVER = Path(__file__).resolve().parent / "servers" / "tickets_server.py"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The tickets server on streamable HTTP, in a process of its own (as a user's remote server would be)."""
    tickets = tmp_path / "http-tickets.txt"
    port = _free_port()
    process = subprocess.Popen([sys.executable, str(SERVER), "http", str(port)], env={**os.environ, "TICKETS": str(tickets)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        yield f"http://127.0.0.1:{port}/mcp", tickets
    finally:
        process.kill()
        process.wait()


def _agent_case(name: str, server: Any, title: str, answers: list[str], transport: str = "stdio") -> tr.Case:
    """The reference agent files one ticket through the server and keeps the tool's answer (in `answers`)."""
    def script(request: Any) -> Any:
        results = request.last_tool_results
        if not results:
            return tr.tool_call("file_ticket", {"title": title})
        answers.append(results[-1].content)
        return tr.reply(results[-1].content)

    async def invoke(ctx: tr.TrialContext) -> Any:
        endpoint = ctx.mcp(server, name="tickets", transport=transport)
        return await tr.Agent(ctx.scripted([script, script]), tools=await tr.amcp_tools(endpoint)).arun("file it")

    return tr.Case(name=name, invoke=invoke, expect_outcome=[expect.contains("filed at")],
                   expect_trajectory=[expect.mcp_called("tickets", "file_ticket", {"title": title}),
                                      expect.mcp_as_asked()])


def _trial(case: tr.Case) -> Any:
    return tr.evaluate([case]).cases[0].trials[0]


def _calls(path: Path) -> list[bytes]:
    return [e.response_body for e in load_exchanges(path) if e.url.endswith("/tools/call")]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_recorded_once_then_replayed_offline_byte_for_byte(tmp_path: Path, transport: str,
                                                           request: pytest.FixtureRequest) -> None:
    cassette = tmp_path / "tickets.yaml"
    if transport == "http":
        url, tickets = request.getfixturevalue("http_server")
        real: dict[str, Any] = {"url": url}
    else:
        tickets = tmp_path / "tickets.txt"
        real = {"command": [sys.executable, str(SERVER)], "env": {"TICKETS": str(tickets)}}
    recorded: list[str] = []
    trial = _trial(_agent_case("record", tr.McpCassette(cassette, mode="record", real=real), "printer jam", recorded,
                               transport))
    assert trial.passed, [v.reason for v in trial.verdicts if not v.passed] + [trial.error]
    assert tickets.read_text() == "printer jam\tnormal\n"  # the real server ran: the ticket was filed
    assert recorded and recorded[0].startswith("ticket #1 (normal) filed at ")
    assert len(_calls(cassette)) == 1

    replayed: list[str] = []
    trial = _trial(_agent_case("replay", tr.McpCassette(cassette), "printer jam", replayed, transport))
    assert trial.passed, [v.reason for v in trial.verdicts if not v.passed] + [trial.error]
    assert replayed == recorded  # the same answer, though the real one carries the time it was filed
    assert tickets.read_text() == "printer jam\tnormal\n"  # no server ran: nothing filed again
    [sent] = trial.trajectory.mcp_calls
    assert sent.content == recorded[0] and sent.server == "tickets"


def test_the_replayed_bytes_are_the_recorded_bytes(tmp_path: Path) -> None:
    """The exact bytes: the replay's tools/call response on the wire equals the recording's."""
    cassette = tmp_path / "tickets.yaml"
    real = {"command": [sys.executable, str(SERVER)], "env": {"TICKETS": str(tmp_path / "t.txt")}}
    _trial(_agent_case("record", tr.McpCassette(cassette, mode="record", real=real), "fan", []))

    async def invoke(ctx: tr.TrialContext) -> Any:
        endpoint = ctx.mcp(tr.McpCassette(cassette), name="tickets")
        steps = [tr.tool_call("file_ticket", {"title": "fan"}), tr.reply("ok")]
        await tr.Agent(ctx.scripted(steps), tools=await tr.amcp_tools(endpoint)).arun("file it")
        return [e.response_body.decode() for e in ctx.exchanges() if e.url == "mcp://tickets/tools/call"]

    case = tr.Case(name="bytes", invoke=invoke, expect_outcome=[expect.satisfies(lambda out: len(out) == 1)])
    trial = _trial(case)
    assert trial.passed, trial.error
    assert trial.output[0].encode() == _calls(cassette)[0]


def test_a_call_the_recording_does_not_hold_fails_saying_how_to_re_record(tmp_path: Path) -> None:
    cassette = tmp_path / "tickets.yaml"
    real = {"command": [sys.executable, str(SERVER)], "env": {"TICKETS": str(tmp_path / "t.txt")}}
    _trial(_agent_case("record", tr.McpCassette(cassette, mode="record", real=real), "printer jam", []))
    trial = _trial(_agent_case("other", tr.McpCassette(cassette), "coffee machine", []))
    assert not trial.passed and trial.error is not None and trial.error.phase == "mcp"
    message = trial.error.message
    assert str(cassette) in message and "tools/call" in message and "matches no recording" in message
    assert "params.arguments.title: recorded 'printer jam' != sent 'coffee machine'" in message
    assert "re-record" in message and "record = " in message


def test_replaying_a_cassette_that_is_not_there_says_how_to_record_it(tmp_path: Path) -> None:
    with pytest.raises(Exception) as raised:
        tr.McpCassette(tmp_path / "missing.yaml")
    assert "record it first" in str(raised.value)


def test_a_suite_records_a_real_server_then_replays_it_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """trialrun.toml's `record = FOLDER` keeps each test's traffic; `replay = FOLDER` answers from it with no server
    (the command is gone, and the ticket file does not grow); a test without a recording is exit 2 before anything
    runs."""
    from click.testing import CliRunner

    from trialrun.cli import main

    tickets = tmp_path / "tickets.txt"
    (tmp_path / "tests.json").write_text(json.dumps([{
        "id": "file-ticket", "prompt": "File a ticket about the printer", "expected_tools": ["file_ticket"],
        "max_turns": 2, "success_criteria": "Says the ticket was filed",
        "expect": {"mcp_called": {"server": "tickets", "tool": "file_ticket", "args": {"title": "printer"}},
                   "mcp_as_asked": True}}]))
    (tmp_path / "model.yaml").write_text("file-ticket:\n  - tool_call: {name: file_ticket, arguments: {title: printer}}\n"
                                         "  - reply: The ticket was filed.\n")
    base = 'suite = "tests.json"\nmodel = "scripted:model.yaml"\ntools = []\n[mcp_servers.tickets]\n'
    record = (f'command = {json.dumps([sys.executable, str(SERVER)])}\nenv = {{TICKETS = {json.dumps(str(tickets))}}}\n'
              'record = "recordings"\n')
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    (tmp_path / "trialrun.toml").write_text(base + record)
    first = runner.invoke(main, ["run", "all"], catch_exceptions=False)
    assert first.exit_code == 0, first.output
    assert tickets.read_text() == "printer\tnormal\n" and (tmp_path / "recordings" / "file-ticket.yaml").is_file()
    (tmp_path / "trialrun.toml").write_text(base + 'replay = "recordings"\n')
    again = runner.invoke(main, ["run", "all"], catch_exceptions=False)
    assert again.exit_code == 0, again.output
    assert tickets.read_text() == "printer\tnormal\n"  # replayed: nothing filed again
    (tmp_path / "recordings" / "file-ticket.yaml").unlink()
    missing = runner.invoke(main, ["run", "all"], catch_exceptions=False)
    assert missing.exit_code == 2 and "no MCP recording for 1 test(s)" in missing.output, missing.output
    assert "file-ticket.yaml" in missing.output
