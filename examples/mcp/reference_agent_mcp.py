"""trialrun's reference agent given a scripted MCP server, in Python (docs/mcp.md; tests/mcp/test_docs_mcp.py runs it)."""

import trialrun as tr
from trialrun import expect

notes = tr.ScriptedMCPServer("notes").tool(
    "search_notes", "Search the user's notes", params={"query": "string"},
    rules=[{"when": {"query": "dentist"}, "answer": "Dentist: Tuesday 10:00"}, {"answer": "No notes found"}])


async def invoke(ctx: tr.TrialContext) -> tr.Run:
    server = ctx.mcp(notes)                       # served for this trial; every message recorded
    model = ctx.scripted([tr.tool_call("search_notes", query="dentist"), tr.reply("Tuesday at 10:00.")])
    agent = tr.Agent(model, tools=await tr.amcp_tools(server))
    return await agent.arun("When is my dentist appointment?")


case = tr.Case(name="dentist", invoke=invoke, expect_outcome=[expect.contains("Tuesday")],
               expect_trajectory=[expect.mcp_called("notes", "search_notes", {"query": "dentist"}),
                                  expect.mcp_not_called("notes", "delete_notes"), expect.mcp_as_asked()])

if __name__ == "__main__":
    for verdict in tr.evaluate([case]).cases[0].trials[0].verdicts:
        print("ok  " if verdict.passed else "FAIL", verdict.reason)
