"""Real CLI coding agents given a scripted MCP server (stdio and streamable HTTP), each preset writing the server
into its agent's own configuration, the model scripted to call the MCP tool under whatever name the agent offers it
(`mcp__notes__search_notes`, `mcp_notes_search_notes`, `notes_search_notes`, a Responses namespace) and then to make
a marker file named by the tool's answer with the agent's own shell tool.

The truth is kept outside trialrun: the server's own record (its answer function's list), the marker file in the
workdir, and what the scripted model itself was shown. `mcp_called` must agree with all three, the MCP call must be
joined to the model's call, and a grader that must fail (another argument, a tool never called) does.
All trials run in ONE evaluate, concurrently.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import _agent_scope
import pytest

import trialrun as tr
from trialrun.wire import ModelRequest

AGENTS = ("claude-code", "codex", "gemini-cli", "opencode", "qwen-code", "kilo-code", "copilot-cli", "continue-cli",
          "kimi-cli")
TRANSPORTS = ("stdio", "http")


class _Truth:
    """What the server received and what the model was shown, recorded by the test itself."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.shown: list[str] = []
        self.offered: list[tuple[str, str | None]] = []


def _server(truth: _Truth, token: str) -> tr.ScriptedMCPServer:
    def search(call: Any) -> str:
        truth.received.append(dict(call.arguments))
        return f"Dentist on Tuesday. Reference: {token}"

    return tr.ScriptedMCPServer("notes").tool("search_notes", "Search the user's notes", params={"query": "string"},
                                              answers=search)


def _script(agent: tr.agents.Preset, truth: _Truth) -> Callable[[ModelRequest], Any]:
    tool, argument = agent.shell_tool or ("bash", "command")

    def script(request: ModelRequest) -> Any:
        if not request.tools:  # a side request (a title)
            return tr.reply("Trial run")
        mcp = next((t for t in request.tools if t.name.endswith("search_notes")), None)
        truth.offered = [(t.name, t.namespace) for t in request.tools if mcp is not None and t is mcp]
        results = request.last_tool_results
        if not results:
            if mcp is None:
                return tr.reply(f"no MCP tool offered: {request.tool_names}")
            return tr.tool_call(mcp.name, {"query": "dentist"}, namespace=mcp.namespace)
        last = results[-1].content
        if "Reference: " in last and not truth.shown:
            truth.shown.append(last)
            token = re.search(r"Reference: (ZEBRA\d+)", last).group(1)  # whatever the agent wrapped it in
            arguments = {argument: f"touch {token}.marker"}
            if agent.label in ("claude-code", "opencode"):
                arguments["description"] = "trialrun test step"
            return tr.tool_call(tool, arguments)
        return tr.reply("done: " + last[:200])

    return script


def _cases(agent_program: Callable[[str], str]) -> tuple[list[tr.Case], dict[str, tuple[_Truth, str]]]:
    cases, truths = [], {}
    for label in _agent_scope.in_scope(AGENTS):  # the gate scope's agents only (tests/_agent_scope.py)
        for transport in TRANSPORTS:
            name, token = f"{label}-{transport}", f"ZEBRA{len(cases) + 1}"
            truth = _Truth()
            truths[name] = (truth, token)
            options = tr.agents.preset(label, path=agent_program(label)).contract.permissions
            agent = tr.agents.preset(label, path=agent_program(label), **(options.runs_all if options else {}))

            def invoke(ctx: tr.TrialContext, agent: Any = agent, truth: _Truth = truth, token: str = token,
                       transport: str = transport) -> Any:
                ctx.mcp(_server(truth, token), transport=transport)
                return agent("When is my dentist appointment?", ctx, model=ctx.scripted(_script(agent, truth)))

            def marker(run: tr.Run, ctx: tr.TrialContext, token: str = token) -> tr.Verdict:
                made = (ctx.workdir / f"{token}.marker").exists()
                return tr.Verdict(made, "marker", f"{token}.marker {'made' if made else 'missing'}")

            cases.append(tr.Case(name=name, invoke=invoke, timeout_s=240, expect_outcome=[marker],
                                 expect_trajectory=[tr.expect.mcp_called("notes", "search_notes", {"query": "dentist"}),
                                                    tr.expect.mcp_as_asked(),
                                                    tr.expect.mcp_called("notes", "search_notes", {"query": "cat"}),
                                                    tr.expect.mcp_not_called("notes", "search_notes"),
                                                    tr.expect.mcp_only_declared()]))
    return cases, truths


@pytest.fixture(scope="module")
def results(agent_path: Any) -> dict[str, tuple[tr.TrialResult, _Truth, str]]:
    cases, truths = _cases(agent_path)
    report = tr.evaluate(cases, concurrency=6)
    return {case.name: (case.trials[0], *truths[case.name]) for case in report.cases}


def _by_label(trial: tr.TrialResult) -> dict[str, tr.Verdict]:
    return {v.grader: v for v in trial.verdicts}


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("label", AGENTS)
def test_mcp_called_agrees_with_the_server_the_model_and_the_marker(results: dict, label: str,
                                                                    transport: str) -> None:
    trial, truth, token = results[f"{label}-{transport}"]
    verdicts = _by_label(trial)
    called = verdicts["mcp_called('notes', 'search_notes', args={'query': 'dentist'})"]
    assert trial.error is None, trial.error
    assert truth.received == [{"query": "dentist"}], (truth.received, trial.output)  # the server's own record
    assert called.passed, called.reason
    assert verdicts["marker"].passed, (verdicts["marker"].reason, trial.output)  # the answer led to the file
    assert truth.shown and token in truth.shown[0]  # what the model was shown is what the server answered
    [call] = trial.trajectory.mcp_calls
    assert call.joined and call.content.endswith(token) and call.model_arguments == {"query": "dentist"}
    assert call.model_name in {name for name, _ in truth.offered}  # joined across the agent's own naming
    assert verdicts["mcp_as_asked()"].passed, verdicts["mcp_as_asked()"].reason
    assert verdicts["mcp_only_declared()"].passed, verdicts["mcp_only_declared()"].reason
    # the graders that must fail here do
    assert not verdicts["mcp_called('notes', 'search_notes', args={'query': 'cat'})"].passed
    assert not verdicts["mcp_not_called('notes', 'search_notes')"].passed
    server = trial.trajectory.mcp_servers[0]
    assert (server.name, server.transport, server.connections >= 1, server.listed) == ("notes", transport, True, True)


def test_each_agent_names_the_mcp_tool_its_own_way(results: dict) -> None:
    expected = {"claude-code": [("mcp__notes__search_notes", None)], "codex": [("search_notes", "mcp__notes")],
                "gemini-cli": [("mcp_notes_search_notes", None)], "opencode": [("notes_search_notes", None)],
                "qwen-code": [("mcp__notes__search_notes", None)], "kilo-code": [("notes_search_notes", None)],
                "copilot-cli": [("notes-search_notes", None)], "continue-cli": [("search_notes", None)],
                "kimi-cli": [("search_notes", None)]}
    labels = _agent_scope.in_scope(AGENTS)  # every agent in the full scope (tests/_agent_scope.py)
    names = {label: results[f"{label}-stdio"][1].offered for label in labels}
    assert names == {label: expected[label] for label in labels}, json.dumps(names)


def test_agents_that_cannot_take_mcp_servers_say_so(agent_path: Any) -> None:
    for label in ("pi", "mini-swe-agent"):
        agent = tr.agents.preset(label, path=agent_path(label))
        assert agent.mcp_support is None
        with pytest.raises(ValueError, match=f"{label} cannot be given MCP servers"):
            from trialrun.agents._mcp import check_mcp

            check_mcp(agent)



def test_a_real_server_recorded_then_replayed_to_claude_code_offline(agent_path: Any, tmp_path: Any) -> None:
    """The tests' own SDK server recorded once through Claude Code, then replayed to Claude Code in the bubblewrap
    sandbox (no network at all, the server not run): the model is shown the same answer, byte for byte."""
    import sys
    from pathlib import Path

    server = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "tickets_server.py"
    tickets = tmp_path / "tickets.txt"
    cassette = tmp_path / "tickets.yaml"
    shown: dict[str, str] = {}

    def script(label: str) -> Callable[[ModelRequest], Any]:
        def answer(request: ModelRequest) -> Any:
            if not request.tools:
                return tr.reply("Trial run")
            results = request.last_tool_results
            if results:
                shown[label] = results[-1].content
                return tr.reply("filed")
            return tr.tool_call("mcp__tickets__file_ticket", {"title": "printer jam"})
        return answer

    def case(label: str, mcp: Any, sandbox: str) -> tr.Case:
        agent = tr.agents.claude_code(path=agent_path("claude-code"), sandbox=sandbox)

        def invoke(ctx: tr.TrialContext) -> Any:
            ctx.mcp(mcp, name="tickets")
            return agent("File a ticket about the printer", ctx, model=ctx.scripted(script(label)))

        return tr.Case(name=label, invoke=invoke, timeout_s=240,
                       expect_trajectory=[tr.expect.mcp_called("tickets", "file_ticket", {"title": "printer jam"})])

    real = {"command": [sys.executable, str(server)], "env": {"TICKETS": str(tickets)}}
    recorded = tr.evaluate([case("record", tr.McpCassette(cassette, mode="record", real=real), "none")])
    assert recorded.cases[0].passed, recorded.cases[0].trials[0].error
    replayed = tr.evaluate([case("replay", tr.McpCassette(cassette), "bwrap")])
    assert replayed.cases[0].passed, replayed.cases[0].trials[0].error
    assert "filed at" in shown["record"] and shown["replay"] == shown["record"]
    assert tickets.read_text() == "printer jam\tnormal\n"  # filed once: the replay ran no server
