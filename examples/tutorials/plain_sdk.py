"""Tutorial: an agent you wrote yourself over the official openai SDK, tested with trialrun (docs/tutorials/plain-sdk.md).

tests/test_docs_examples.py runs this file: what the tutorial shows is what passes.
"""

# [docs:agent]
import json

import openai

NOTES = {"shopping": "Buy milk on Tuesday."}
READ_NOTES = {"type": "function", "function": {
    "name": "read_notes", "description": "Read the user's notes on a topic.",
    "parameters": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}}}


def notes_agent(client: openai.OpenAI, prompt: str) -> str:
    """The agent under test: a tool-calling loop that knows nothing of trialrun."""
    messages: list = [{"role": "system", "content": "Answer from the user's notes."},
                      {"role": "user", "content": prompt}]
    while True:
        message = client.chat.completions.create(model="gpt-4.1-mini", messages=messages,
                                                 tools=[READ_NOTES]).choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            topic = json.loads(call.function.arguments)["topic"]
            messages.append({"role": "tool", "tool_call_id": call.id, "content": NOTES.get(topic, "no notes")})
# [/docs:agent]


# [docs:case]
import trialrun as tr
from trialrun import expect


def invoke(ctx: tr.TrialContext) -> str:
    model = ctx.scripted([tr.tool_call("read_notes", topic="shopping"), tr.reply("You need to buy milk.")])
    client = openai.OpenAI(api_key="test", http_client=ctx.http_client(model, httpx2=True), max_retries=0)
    return notes_agent(client, "What do I need to buy?")


case = tr.Case(name="reads the shopping notes", invoke=invoke,
               expect_outcome=[expect.contains("milk")],
               expect_trajectory=[expect.called("read_notes", args={"topic": "shopping"}), expect.max_turns(2),
                                  # Chat Completions results carry no error flag: say how this agent answers a failure
                                  expect.no_tool_errors(is_error=lambda call, result: result.content == "no notes")])
# [/docs:case]


# [docs:lazy]
def invoke_lazy(ctx: tr.TrialContext) -> str:
    model = ctx.scripted([tr.reply("You need to buy milk.")])  # the right answer, without reading the notes
    client = openai.OpenAI(api_key="test", http_client=ctx.http_client(model, httpx2=True), max_retries=0)
    return notes_agent(client, "What do I need to buy?")


lazy = tr.Case(name="guesses without reading", invoke=invoke_lazy, expect_outcome=case.expect_outcome,
               expect_trajectory=case.expect_trajectory)
# [/docs:lazy]

# [docs:run]
if __name__ == "__main__":
    report = tr.evaluate([case, lazy], trials=3)
    for result in report.cases:
        print(result.name, "passed" if result.passed else "FAILED")
        for verdict in result.trials[0].verdicts:
            print("   ", "ok  " if verdict.passed else "FAIL", verdict.reason)
    print("pass@1:", report.pass_at_1, "pass^k:", report.pass_pow_k)
# [/docs:run]
