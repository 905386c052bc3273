"""The OpenAI Agents SDK given a scripted MCP server (docs/mcp.md; tests/frameworks/test_mcp_frameworks.py runs it)."""

import functools
from typing import Any

import openai
from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.mcp import MCPServerStdio, MCPServerStreamableHttp

import trialrun as tr
from trialrun import expect

set_tracing_disabled(True)  # the SDK's tracing exporter would post to the network
received: list[dict[str, Any]] = []  # the server's own record of what it was sent


def search(call: tr.mcp.ToolCallIn) -> str:
    received.append(call.arguments)
    return "Dentist: Tuesday 10:00"


notes = tr.ScriptedMCPServer("notes").tool("search_notes", "Search the user's notes", params={"query": "string"},
                                           answers=search)


async def invoke(ctx: tr.TrialContext, transport: str) -> str:
    server = ctx.mcp(notes, transport=transport)
    mcp = (MCPServerStreamableHttp({"url": server.url}) if transport == "http"
           else MCPServerStdio({"command": server.command[0], "args": server.args}))
    model = ctx.scripted([tr.tool_call("search_notes", query="dentist"), tr.reply("Tuesday at 10:00.")])
    client = openai.AsyncOpenAI(api_key="test", http_client=ctx.async_http_client(model, httpx2=True),
                                max_retries=0)
    async with mcp:
        agent = Agent(name="notes", instructions="Answer from the user's notes.", mcp_servers=[mcp],
                      model=OpenAIChatCompletionsModel(model="gpt-4.1-mini", openai_client=client))
        result = await Runner.run(agent, "When is my dentist appointment?")
    return str(result.final_output)


cases = [tr.Case(name=f"agents-sdk over {transport}", invoke=functools.partial(invoke, transport=transport),
                 expect_outcome=[expect.contains("Tuesday")],
                 expect_trajectory=[expect.mcp_called("notes", "search_notes", {"query": "dentist"}),
                                    expect.mcp_as_asked()])
         for transport in ("stdio", "http")]
