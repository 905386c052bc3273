"""The OpenAI Agents SDK under trialrun: Runner, function tools, Chat Completions and Responses, read off the wire."""

from __future__ import annotations

import openai
import pytest
from agents import Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled

import trialrun as tr
from trialrun import expect

set_tracing_disabled(True)  # the SDK's tracing exporter would post to the network


@pytest.mark.parametrize("api", ["openai-chat", "openai-responses"])
def test_an_agents_sdk_agent_is_graded_from_its_traffic(api: str) -> None:
    ran: list[str] = []

    @function_tool
    def read_notes(topic: str) -> str:
        """Read the user's notes on a topic."""
        ran.append(topic)
        return "Buy milk on Tuesday."

    async def invoke(ctx: tr.TrialContext) -> str:
        model = ctx.scripted([tr.tool_call("read_notes", topic="shopping"), tr.reply("You need to buy milk.")])
        client = openai.AsyncOpenAI(api_key="t", http_client=ctx.async_http_client(model, httpx2=True), max_retries=0)
        kind = OpenAIChatCompletionsModel if api == "openai-chat" else OpenAIResponsesModel
        agent = Agent(name="notes", instructions="Answer from the user's notes.", tools=[read_notes],
                      model=kind(model="gpt-4.1-mini", openai_client=client))
        result = await Runner.run(agent, "What do I need to buy?")
        return str(result.final_output)

    case = tr.Case(name=f"agents-sdk-{api}", invoke=invoke, expect_outcome=[expect.contains("milk")],
                   expect_trajectory=[expect.called("read_notes", args={"topic": "shopping"}), expect.max_turns(2),
                                      expect.not_called("rm*")])
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert trial.passed, [v.reason for v in trial.verdicts if not v.passed] + [str(trial.error)]
    assert ran == ["shopping"]
    trajectory = trial.trajectory
    assert len(trajectory.turns) == 2 and not trajectory.other_conversations
    assert [r.content for r in trajectory.turns[0].tool_results] == ["Buy milk on Tuesday."]
    assert trajectory.prompt == "What do I need to buy?"
    # no error flag on OpenAI's wires: no_tool_errors cannot tell a framework's failed tool from one that worked
    [errors] = tr.check([expect.no_tool_errors()], tr.Run(trajectory=trajectory))
    assert errors.passed == (False) and ("has no error flag" in errors.reason or errors.passed), errors.reason
