"""Tutorial: an OpenAI Agents SDK agent tested with trialrun (docs/tutorials/openai-agents.md).

tests/test_docs_examples.py runs this file: what the tutorial shows is what passes.
"""

# [docs:agent]
import openai
from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled

set_tracing_disabled(True)  # the SDK's tracing exporter would post to the network

ran: list[str] = []  # what the tool really did, for the test of this tutorial


@function_tool
def read_notes(topic: str) -> str:
    """Read the user's notes on a topic."""
    ran.append(topic)
    return "Buy milk on Tuesday."


def notes_agent(client: openai.AsyncOpenAI) -> Agent:
    """The agent under test, as the Agents SDK writes it."""
    return Agent(name="notes", instructions="Answer from the user's notes.", tools=[read_notes],
                 model=OpenAIChatCompletionsModel(model="gpt-4.1-mini", openai_client=client))
# [/docs:agent]


# [docs:case]
import trialrun as tr
from trialrun import expect


async def invoke(ctx: tr.TrialContext) -> str:
    model = ctx.scripted([tr.tool_call("read_notes", topic="shopping"), tr.reply("You need to buy milk.")])
    client = openai.AsyncOpenAI(api_key="test", http_client=ctx.async_http_client(model, httpx2=True),
                                max_retries=0)
    result = await Runner.run(notes_agent(client), "What do I need to buy?")
    return str(result.final_output)


case = tr.Case(name="agents-sdk reads the notes", invoke=invoke,
               expect_outcome=[expect.contains("milk")],
               expect_trajectory=[expect.called("read_notes", args={"topic": "shopping"}), expect.max_turns(2),
                                  # no error flag on the wire: the SDK's default failure text is how a failed call reads
                                  expect.no_tool_errors(is_error=lambda call, result: result.content.startswith(
                                      "An error occurred while running the tool.")), expect.not_called("rm*")])
# [/docs:case]


# [docs:lazy]
async def invoke_too_long(ctx: tr.TrialContext) -> str:
    model = ctx.scripted([tr.tool_call("read_notes", topic="shopping"), tr.tool_call("read_notes", topic="shopping"),
                          tr.tool_call("read_notes", topic="shopping"), tr.reply("You need to buy milk.")])
    client = openai.AsyncOpenAI(api_key="test", http_client=ctx.async_http_client(model, httpx2=True),
                                max_retries=0)
    result = await Runner.run(notes_agent(client), "What do I need to buy?")
    return str(result.final_output)


too_long = tr.Case(name="agents-sdk reads the notes three times", invoke=invoke_too_long,
                   expect_outcome=case.expect_outcome, expect_trajectory=case.expect_trajectory)
# [/docs:lazy]

# [docs:run]
if __name__ == "__main__":
    report = tr.evaluate([case, too_long])
    for result in report.cases:
        print(result.name, "passed" if result.passed else "FAILED")
        for verdict in result.trials[0].verdicts:
            print("   ", "ok  " if verdict.passed else "FAIL", verdict.reason)
# [/docs:run]
