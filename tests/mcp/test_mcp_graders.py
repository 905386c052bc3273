"""The graders on the server's side (`expect.mcp_called`, `mcp_not_called`, `mcp_as_asked`), each shown passing
AND failing where it must, against truth kept outside trialrun: the scripted server's own record (its answer
function's list), the files the tool's answer led the agent to write, and what the agent's MCP client really sent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

import trialrun as tr
from trialrun import expect
from trialrun.report.results import TrialResult


def _server(received: list[dict[str, Any]]) -> tr.ScriptedMCPServer:
    def search(call: Any) -> str:
        received.append(dict(call.arguments))
        return "Dentist: Tuesday 10:00" if call.arguments.get("query") == "dentist" else "No notes found"

    return (tr.ScriptedMCPServer("notes").tool("search_notes", "Search the notes", params={"query": "string"},
                                               answers=search)
            .tool("delete_notes", "Delete every note", answer="deleted"))


def _reference(steps: list[Any], received: list[dict[str, Any]], transport: str = "stdio") -> Any:
    """The reference agent with the notes server's tools and shell tools; the model scripted by `steps`."""
    async def invoke(ctx: tr.TrialContext) -> Any:
        server = ctx.mcp(_server(received), transport=transport)
        tools = [*tr.shell_tools(ctx.workdir), *await tr.amcp_tools(server)]
        return await tr.Agent(ctx.scripted(steps), tools=tools).arun("When is the dentist? Note it in when.txt")

    return invoke


def _note_answer(request: Any) -> Any:
    """The model: search, then write what the tool answered into when.txt, then reply."""
    results = request.last_tool_results
    if not results:
        return tr.tool_call("search_notes", {"query": "dentist"})
    if len(request.messages) <= 3:
        return tr.tool_call("write_file", {"path": "when.txt", "content": results[-1].content})
    return tr.reply("Noted.")


def _one(case: tr.Case) -> TrialResult:
    return tr.evaluate([case]).cases[0].trials[0]


def _verdicts(trial: TrialResult) -> dict[str, tuple[bool, str]]:
    return {v.grader: (v.passed, v.reason) for v in trial.verdicts}


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_mcp_called_agrees_with_the_servers_own_record_and_the_file_it_led_to(transport: str) -> None:
    received: list[dict[str, Any]] = []
    written: list[str] = []

    def file_written(run: tr.Run, ctx: tr.TrialContext) -> bool:
        path = ctx.workdir / "when.txt"
        written.append(path.read_text() if path.exists() else "")
        return True

    case = tr.Case(name="notes", invoke=_reference([_note_answer] * 3, received, transport),
                   expect_outcome=[file_written],
                   expect_trajectory=[expect.mcp_called("notes", "search_notes", {"query": "dentist"}),
                                      expect.mcp_not_called("notes", "delete_notes"), expect.mcp_as_asked(),
                                      expect.called("search_notes")])
    trial = _one(case)
    assert trial.passed, [(v.grader, v.reason) for v in trial.verdicts if not v.passed] + [trial.error]
    assert received == [{"query": "dentist"}]  # the server's own record: one call, these arguments
    assert written == ["Dentist: Tuesday 10:00"]  # what the tool answered is what the agent wrote
    [call] = trial.trajectory.mcp_calls
    assert call.joined and call.model_name == "search_notes" and call.content == "Dentist: Tuesday 10:00"


def test_mcp_called_fails_when_the_tool_was_never_called() -> None:
    received: list[dict[str, Any]] = []
    case = tr.Case(name="no-call", invoke=_reference([tr.reply("I do not know.")], received),
                   expect_trajectory=[expect.mcp_called("notes", "search_notes")])
    passed, reason = _verdicts(_one(case))["mcp_called('notes', 'search_notes')"]
    assert received == [] and not passed
    assert "received search_notes 0 time(s), expected at least 1" in reason and "tools listed" in reason


def test_mcp_called_fails_on_other_arguments() -> None:
    received: list[dict[str, Any]] = []
    steps = [tr.tool_call("search_notes", {"query": "dentist appointment"}), tr.reply("No idea.")]
    case = tr.Case(name="wrong-args", invoke=_reference(steps, received),
                   expect_trajectory=[expect.mcp_called("notes", "search_notes", {"query": "dentist"})])
    passed, reason = next(iter(_verdicts(_one(case)).values()))
    assert received == [{"query": "dentist appointment"}] and not passed
    assert "never with query='dentist'" in reason and "query='dentist appointment'" in reason


def test_mcp_not_called_fails_when_it_was_called() -> None:
    received: list[dict[str, Any]] = []
    steps = [tr.tool_call("delete_notes", {}), tr.reply("Done.")]
    case = tr.Case(name="deleted", invoke=_reference(steps, received),
                   expect_trajectory=[expect.mcp_not_called("notes", "delete_notes")])
    passed, reason = next(iter(_verdicts(_one(case)).values()))
    assert not passed and "received delete_notes 1 time" in reason


def test_mcp_not_called_fails_over_a_server_that_was_never_started() -> None:
    """Nothing was served under that name, so nothing could be examined: a pass would be a verdict without looking."""
    received: list[dict[str, Any]] = []
    case = tr.Case(name="undeclared", invoke=_reference([tr.reply("ok")], received),
                   expect_trajectory=[expect.mcp_not_called("github", "delete_repo")])
    passed, reason = next(iter(_verdicts(_one(case)).values()))
    assert not passed
    assert "no MCP server named 'github' was declared" in reason and "declared: 'notes'" in reason


def test_mcp_not_called_fails_over_a_server_never_reached_unless_told() -> None:
    async def invoke(ctx: tr.TrialContext) -> Any:
        ctx.mcp(_server([]))  # served, but the agent is never given it
        return await tr.Agent(ctx.scripted([tr.reply("ok")])).arun("hi")

    case = tr.Case(name="unreached", invoke=invoke,
                   expect_trajectory=[expect.mcp_not_called("notes", "delete_notes"),
                                      expect.mcp_not_called("notes", "delete_notes", reached=False)])
    verdicts = list(_one(case).verdicts)
    assert not verdicts[0].passed and "never reached (no client connected to it)" in verdicts[0].reason
    assert verdicts[1].passed and "0 connections" in verdicts[1].reason and "examined its record" in verdicts[1].reason


def test_mcp_as_asked_sees_an_agent_that_rewrites_arguments() -> None:
    """A hand-made agent: the model asks for query "Dentist", the agent sends "dentist" to the server."""
    received: list[dict[str, Any]] = []

    async def invoke(ctx: tr.TrialContext) -> Any:
        endpoint = ctx.mcp(_server(received))
        model = ctx.scripted([tr.tool_call("search_notes", {"query": "Dentist"}), tr.reply("Tuesday")])

        async def rewriting(query: str) -> str:
            async with Client(StdioServerParameters(command=endpoint.command[0], args=endpoint.args),
                              mode="legacy") as client:
                result = await client.call_tool("search_notes", {"query": query.lower()})
            return result.content[0].text

        return await tr.Agent(model, tools=[tr.tool(rewriting, name="search_notes")]).arun("When is the dentist?")

    case = tr.Case(name="rewrites", invoke=invoke,
                   expect_trajectory=[expect.mcp_as_asked(), expect.mcp_called("notes", "search_notes")])
    trial = _one(case)
    assert received == [{"query": "dentist"}]
    as_asked, called = trial.verdicts
    assert called.passed and not as_asked.passed
    assert "received search_notes(query='dentist') where the model asked search_notes(query='Dentist')" in as_asked.reason


def test_mcp_as_asked_fails_with_nothing_to_compare() -> None:
    case = tr.Case(name="nothing", invoke=_reference([tr.reply("ok")], []),
                   expect_trajectory=[expect.mcp_as_asked()])
    verdict = _one(case).verdicts[0]
    assert not verdict.passed and "no MCP tool call to compare" in verdict.reason


def test_mcp_graders_grade_a_stored_trial_again(tmp_path: Path) -> None:
    """What the server received is kept in the trial's record: a stored result is graded the same way."""
    received: list[dict[str, Any]] = []
    case = tr.Case(name="stored", invoke=_reference([_note_answer] * 3, received),
                   expect_trajectory=[expect.mcp_called("notes", "search_notes")])
    report = tr.evaluate([case])
    path = tmp_path / "r.json"
    path.write_text(report.model_dump_json())
    again = tr.RunReport.model_validate_json(path.read_text()).cases[0].trials[0]
    verdicts = tr.check([expect.mcp_called("notes", "search_notes", {"query": "dentist"}),
                         expect.mcp_called("notes", "search_notes", {"query": "cat"})], again.as_run())
    assert [v.passed for v in verdicts] == [True, False]


def test_the_trial_fails_when_a_script_had_no_answer() -> None:
    server = tr.ScriptedMCPServer("notes").tool("search_notes", params={"query": "string"}, answers=["once"])

    async def invoke(ctx: tr.TrialContext) -> Any:
        tools = await tr.amcp_tools(ctx.mcp(server))
        steps = [tr.tool_call("search_notes", {"query": "a"}), tr.tool_call("search_notes", {"query": "b"}),
                 tr.reply("done")]
        return await tr.Agent(ctx.scripted(steps), tools=tools).arun("search twice")

    trial = _one(tr.Case(name="exhausted", invoke=invoke, expect_outcome=[expect.contains("done")]))
    assert not trial.passed and trial.error is not None and trial.error.phase == "mcp"
    assert "tool search_notes call 2" in trial.error.message and "no scripted answer left" in trial.error.message


def test_graders_are_checked_when_built() -> None:
    with pytest.raises(TypeError):
        expect.mcp_called("notes", 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        expect.mcp_called("notes", "t", at_least=0)


def test_mcp_only_declared_sees_an_mcp_tool_of_a_server_nobody_declared() -> None:
    """An agent that picked up another MCP server (here: a tool offered under Claude Code's MCP naming for a server
    'github' the trial never declared) fails; the same agent with only the declared server's tools passes."""
    def create_issue(title: str) -> str:
        """File an issue."""
        return "filed"

    def make(extra: bool) -> Any:
        async def invoke(ctx: tr.TrialContext) -> Any:
            tools = [*await tr.amcp_tools(ctx.mcp(_server([]))),
                     *([tr.tool(create_issue, name="mcp__github__create_issue")] if extra else [])]
            return await tr.Agent(ctx.scripted([tr.reply("ok")]), tools=tools).arun("hi")
        return invoke

    good, bad = (_one(tr.Case(name=f"c{n}", invoke=make(extra), expect_trajectory=[expect.mcp_only_declared()]))
                 for n, extra in enumerate((False, True)))
    assert good.verdicts[0].passed and "2 offered or called tools" in good.verdicts[0].reason
    assert not bad.verdicts[0].passed
    assert "mcp__github__create_issue" in bad.verdicts[0].reason and "(declared: notes)" in bad.verdicts[0].reason
    nothing = tr.check([expect.mcp_only_declared()], tr.Trajectory())[0]
    assert not nothing.passed and "no model request was observed" in nothing.reason
