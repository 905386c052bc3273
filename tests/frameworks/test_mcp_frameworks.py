"""Three real agent frameworks (nobody here wrote them) given a scripted MCP server through their own MCP clients,
over stdio and streamable HTTP: pydantic-ai's MCPToolset (fastmcp), the OpenAI Agents SDK's MCPServerStdio /
MCPServerStreamableHttp, LangGraph over the MCP SDK's client. The examples are docs/mcp.md's, run as shown; the
server's own record (kept by the example, outside trialrun) says each call arrived once, as the model asked."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

import trialrun as tr

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "mcp"
NEEDS_311 = pytest.mark.skipif(sys.version_info < (3, 11), reason="pydantic-ai 2 requires Python 3.11")


@pytest.mark.parametrize("name", [pytest.param("pydantic_ai_mcp.py", marks=NEEDS_311), "openai_agents_mcp.py",
                                  "langgraph_mcp.py"])
def test_a_framework_reaches_the_scripted_server_over_both_transports(name: str) -> None:
    example = runpy.run_path(str(EXAMPLES / name), run_name=f"example_{Path(name).stem}")
    report = tr.evaluate(example["cases"])
    for result in report.cases:
        trial = result.trials[0]
        assert trial.passed, (result.name, trial.error, [v.reason for v in trial.verdicts if not v.passed])
        [call] = trial.trajectory.mcp_calls
        assert call.joined and call.model_name == "search_notes" and call.content == "Dentist: Tuesday 10:00"
        assert [s.transport for s in trial.trajectory.mcp_servers] == [result.name.rsplit(" ", 1)[1]]
    assert example["received"] == [{"query": "dentist"}] * 2  # the server's own record: one call per trial


@pytest.mark.parametrize("failing", [False, True])
def test_the_servers_answer_gives_the_error_flag_the_wire_lacks(failing: bool) -> None:
    """Chat Completions carries no error flag, so `no_tool_errors` cannot tell a failed tool from a good one by the
    wire alone (it fails closed, saying so); the MCP server's isError, joined to the call, tells."""
    import openai
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from agents.mcp import MCPServerStdio

    set_tracing_disabled(True)
    answer = {"error": "the notes are locked"} if failing else "Dentist: Tuesday 10:00"
    notes = tr.ScriptedMCPServer("notes").tool("search_notes", params={"query": "string"}, answer=answer)

    async def invoke(ctx: tr.TrialContext) -> str:
        server = ctx.mcp(notes)
        model = ctx.scripted([tr.tool_call("search_notes", query="dentist"), tr.reply("done")])
        client = openai.AsyncOpenAI(api_key="t", http_client=ctx.async_http_client(model, httpx2=True), max_retries=0)
        async with MCPServerStdio({"command": server.command[0], "args": server.args}) as mcp:
            agent = Agent(name="n", mcp_servers=[mcp], model=OpenAIChatCompletionsModel(model="m", openai_client=client))
            return str((await Runner.run(agent, "when?")).final_output)

    trial = tr.evaluate([tr.Case(name="flag", invoke=invoke, expect_trajectory=[tr.expect.no_tool_errors()])]
                        ).cases[0].trials[0]
    [verdict] = trial.verdicts
    [result] = trial.trajectory.tool_results
    assert trial.trajectory.error_flags_unknown == {}  # the server's answer said, for the one call
    assert result.is_error is failing and verdict.passed is not failing, verdict.reason
