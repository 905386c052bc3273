"""LangGraph's prebuilt ReAct agent over langchain-openai under trialrun, read off the wire."""

from __future__ import annotations

import pytest
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent

import trialrun as tr
from trialrun import expect


@pytest.mark.filterwarnings("ignore:create_react_agent has been moved")
def test_a_langgraph_react_agent_is_graded_from_its_traffic() -> None:
    ran: list[str] = []

    @tool
    def read_notes(topic: str) -> str:
        """Read the user's notes on a topic."""
        ran.append(topic)
        return "Buy milk on Tuesday."

    def invoke(ctx: tr.TrialContext) -> str:
        model = ctx.scripted([tr.tool_call("read_notes", topic="shopping"), tr.reply("You need to buy milk.")])
        llm = ChatOpenAI(model="gpt-4.1-mini", api_key="t", http_client=ctx.http_client(model, httpx2=True),
                         max_retries=0)
        agent = create_react_agent(llm, [read_notes])
        state = agent.invoke({"messages": [("user", "What do I need to buy?")]})
        return str(state["messages"][-1].content)

    case = tr.Case(name="langgraph", invoke=invoke, expect_outcome=[expect.contains("milk")],
                   expect_trajectory=[expect.called("read_notes", args={"topic": "shopping"}), expect.max_turns(2)])
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert trial.passed, [v.reason for v in trial.verdicts if not v.passed] + [str(trial.error)]
    assert ran == ["shopping"]
    trajectory = trial.trajectory
    assert len(trajectory.turns) == 2 and [r.content for r in trajectory.turns[0].tool_results] == ["Buy milk on Tuesday."]
    # no error flag on OpenAI's wires: no_tool_errors cannot tell a framework's failed tool from one that worked
    [errors] = tr.check([expect.no_tool_errors()], tr.Run(trajectory=trajectory))
    assert errors.passed == (False) and ("has no error flag" in errors.reason or errors.passed), errors.reason
