"""pydantic-ai (a real agent framework nobody here wrote) under trialrun: its agent loop, its tools, read off the wire."""

from __future__ import annotations

import sys

import pytest

import trialrun as tr
from trialrun import expect

if sys.version_info < (3, 11):  # pydantic-ai 2 needs 3.11; the test extra leaves it out on 3.10 (CI runs it on 3.11+)
    pytest.skip("pydantic-ai 2 requires Python 3.11", allow_module_level=True)

from pydantic_ai import Agent  # in the test extra: a missing framework fails collection, it never skips
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider


def _agent(model: object, ran: list[str]) -> Agent:
    agent = Agent(model, system_prompt="Answer from the user's notes.")

    @agent.tool_plain
    def read_notes(topic: str) -> str:
        """Read the user's notes on a topic."""
        ran.append(topic)
        return "Buy milk on Tuesday."

    return agent


@pytest.mark.parametrize("api", ["openai-chat", "openai-responses", "anthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_pydantic_ai_agent_is_graded_from_its_traffic(api: str, stream: bool) -> None:
    ran: list[str] = []

    async def invoke(ctx: tr.TrialContext) -> str:
        model = ctx.scripted([tr.tool_call("read_notes", topic="shopping"), tr.reply("You need to buy milk.")])
        client = ctx.async_http_client(model, httpx2=True)
        if api == "anthropic":
            llm: object = AnthropicModel("claude-test", provider=AnthropicProvider(api_key="t", http_client=client))
        else:
            kind = OpenAIChatModel if api == "openai-chat" else OpenAIResponsesModel
            llm = kind("gpt-4.1-mini", provider=OpenAIProvider(api_key="t", http_client=client))
        agent = _agent(llm, ran)
        if stream:
            async with agent.run_stream("What do I need to buy?") as result:
                return await result.get_output()
        return (await agent.run("What do I need to buy?")).output

    case = tr.Case(name=f"pydantic-ai-{api}", invoke=invoke, expect_outcome=[expect.contains("milk")],
                   expect_trajectory=[expect.called("read_notes", args={"topic": "shopping"}), expect.max_turns(2),
                                      expect.called_in_order(["read_notes"], exact=True), expect.never_ran("rm")])
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert trial.passed, [v.reason for v in trial.verdicts if not v.passed] + [str(trial.error)]
    assert ran == ["shopping"]  # the framework really ran its tool
    trajectory = trial.trajectory
    assert len(trajectory.turns) == 2 and not trajectory.other_conversations
    assert [r.content for r in trajectory.turns[0].tool_results] == ["Buy milk on Tuesday."]
    assert trajectory.prompt == "What do I need to buy?" and "read_notes" in trajectory.offered_tools
    # no error flag on OpenAI's wires: no_tool_errors cannot tell a framework's failed tool from one that worked
    [errors] = tr.check([expect.no_tool_errors()], tr.Run(trajectory=trajectory))
    assert errors.passed == (api == "anthropic") and ("has no error flag" in errors.reason or errors.passed), errors.reason
