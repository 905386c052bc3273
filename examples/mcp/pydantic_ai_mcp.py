"""pydantic-ai given a scripted MCP server (docs/mcp.md; tests/frameworks/test_mcp_frameworks.py runs it)."""

import functools
from typing import Any

from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

import trialrun as tr
from trialrun import expect

received: list[dict[str, Any]] = []  # the server's own record of what it was sent


def search(call: tr.mcp.ToolCallIn) -> str:
    received.append(call.arguments)
    return "Dentist: Tuesday 10:00"


notes = tr.ScriptedMCPServer("notes").tool("search_notes", "Search the user's notes", params={"query": "string"},
                                           answers=search)


async def invoke(ctx: tr.TrialContext, transport: str) -> str:
    server = ctx.mcp(notes, transport=transport)
    toolset = (MCPToolset(server.url) if transport == "http"
               else MCPToolset(StdioTransport(server.command[0], server.args)))
    model = ctx.scripted([tr.tool_call("search_notes", query="dentist"), tr.reply("Tuesday at 10:00.")])
    llm = OpenAIChatModel("gpt-4.1-mini", provider=OpenAIProvider(
        api_key="test", http_client=ctx.async_http_client(model, httpx2=True)))
    agent = Agent(llm, toolsets=[toolset])
    async with agent:
        return (await agent.run("When is my dentist appointment?")).output


cases = [tr.Case(name=f"pydantic-ai over {transport}", invoke=functools.partial(invoke, transport=transport),
                 expect_outcome=[expect.contains("Tuesday")],
                 expect_trajectory=[expect.mcp_called("notes", "search_notes", {"query": "dentist"}),
                                    expect.mcp_as_asked()])
         for transport in ("stdio", "http")]
