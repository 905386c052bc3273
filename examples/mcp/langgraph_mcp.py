"""LangGraph given a scripted MCP server (docs/mcp.md; tests/frameworks/test_mcp_frameworks.py runs it).

langchain-mcp-adapters (0.3.2) requires the MCP SDK below 2, which trialrun's MCP servers need: the server's tools
are made LangChain tools here with the SDK's own client, in a few lines.
"""

import functools
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.tools import StructuredTool
from langchain_openai import ChatOpenAI
from mcp import Client, StdioServerParameters
from pydantic import SecretStr

import trialrun as tr
from trialrun import expect

with warnings.catch_warnings():  # newer langgraph moves create_react_agent and warns about the old import
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent  # pyright: ignore[reportDeprecated, reportUnknownVariableType]

received: list[dict[str, Any]] = []  # the server's own record of what it was sent


def search(call: tr.mcp.ToolCallIn) -> str:
    received.append(call.arguments)
    return "Dentist: Tuesday 10:00"


notes = tr.ScriptedMCPServer("notes").tool("search_notes", "Search the user's notes", params={"query": "string"},
                                           answers=search)


def connect(server: tr.McpEndpoint) -> Client:
    if server.transport == "http":
        return Client(server.url, mode="legacy")
    return Client(StdioServerParameters(command=server.command[0], args=server.args), mode="legacy")


async def langchain_tools(server: tr.McpEndpoint) -> list[StructuredTool]:
    """Each tool the server lists, as a LangChain tool that calls it through the MCP SDK's client."""
    async with connect(server) as client:
        listed = (await client.list_tools()).tools

    def make(name: str) -> Callable[..., Awaitable[str]]:
        async def call(**arguments: object) -> str:
            async with connect(server) as client:
                result = await client.call_tool(name, arguments)
            return "\n".join(block.text for block in result.content if block.type == "text")
        return call

    return [StructuredTool(name=t.name, description=t.description or "", args_schema=t.input_schema,
                           coroutine=make(t.name)) for t in listed]


async def invoke(ctx: tr.TrialContext, transport: str) -> str:
    server = ctx.mcp(notes, transport=transport)
    model = ctx.scripted([tr.tool_call("search_notes", query="dentist"), tr.reply("Tuesday at 10:00.")])
    llm = ChatOpenAI(model="gpt-4.1-mini", api_key=SecretStr("test"), max_retries=0,
                     http_async_client=ctx.async_http_client(model, httpx2=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = create_react_agent(llm, await langchain_tools(server))  # pyright: ignore[reportDeprecated, reportUnknownVariableType]
    state: dict[str, Any] = await graph.ainvoke(  # pyright: ignore[reportUnknownMemberType]
        {"messages": [("user", "When is my dentist appointment?")]})
    return str(state["messages"][-1].content)


cases = [tr.Case(name=f"langgraph over {transport}", invoke=functools.partial(invoke, transport=transport),
                 expect_outcome=[expect.contains("Tuesday")],
                 expect_trajectory=[expect.mcp_called("notes", "search_notes", {"query": "dentist"}),
                                    expect.mcp_as_asked()])
         for transport in ("stdio", "http")]
