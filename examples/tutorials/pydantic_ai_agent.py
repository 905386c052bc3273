"""Tutorial: a pydantic-ai agent tested with trialrun (docs/tutorials/pydantic-ai.md).

tests/test_docs_examples.py runs this file: what the tutorial shows is what passes.
"""

# [docs:agent]
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

ran: list[str] = []  # what the tool really did, for the test of this tutorial


def notes_agent(model: OpenAIChatModel) -> Agent:
    """The agent under test, as pydantic-ai writes it."""
    agent = Agent(model, system_prompt="Answer from the user's notes.")

    @agent.tool_plain
    def read_notes(topic: str) -> str:
        """Read the user's notes on a topic."""
        ran.append(topic)
        return "Buy milk on Tuesday."

    return agent
# [/docs:agent]


# [docs:case]
import trialrun as tr
from trialrun import expect


async def invoke(ctx: tr.TrialContext) -> str:
    model = ctx.scripted([tr.tool_call("read_notes", topic="shopping"), tr.reply("You need to buy milk.")])
    provider = OpenAIProvider(api_key="test", http_client=ctx.async_http_client(model, httpx2=True))
    agent = notes_agent(OpenAIChatModel("gpt-4.1-mini", provider=provider))
    return (await agent.run("What do I need to buy?")).output


case = tr.Case(name="pydantic-ai reads the notes", invoke=invoke,
               expect_outcome=[expect.contains("milk")],
               expect_trajectory=[expect.called("read_notes", args={"topic": "shopping"}),
                                  expect.called_in_order(["read_notes"], exact=True), expect.max_turns(2),
                                  # no error flag on the wire: pydantic-ai's retry prompt is how a failed call reads
                                  expect.no_tool_errors(is_error=lambda call, result: result.content.endswith(
                                      "Fix the errors and try again."))])
# [/docs:case]


# [docs:lazy]
async def invoke_wrong_topic(ctx: tr.TrialContext) -> str:
    model = ctx.scripted([tr.tool_call("read_notes", topic="work"), tr.reply("You need to buy milk.")])
    provider = OpenAIProvider(api_key="test", http_client=ctx.async_http_client(model, httpx2=True))
    agent = notes_agent(OpenAIChatModel("gpt-4.1-mini", provider=provider))
    return (await agent.run("What do I need to buy?")).output


wrong_topic = tr.Case(name="pydantic-ai reads the wrong notes", invoke=invoke_wrong_topic,
                      expect_outcome=case.expect_outcome, expect_trajectory=case.expect_trajectory)
# [/docs:lazy]

# [docs:run]
if __name__ == "__main__":
    report = tr.evaluate([case, wrong_topic])
    for result in report.cases:
        print(result.name, "passed" if result.passed else "FAILED")
        for verdict in result.trials[0].verdicts:
            print("   ", "ok  " if verdict.passed else "FAIL", verdict.reason)
# [/docs:run]
