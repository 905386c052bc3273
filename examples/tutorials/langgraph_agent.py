"""Tutorial: a LangGraph ReAct agent over langchain-openai tested with trialrun (docs/tutorials/langgraph.md).

tests/test_docs_examples.py runs this file: what the tutorial shows is what passes.
"""

# [docs:agent]
import warnings

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

with warnings.catch_warnings():  # newer langgraph moves create_react_agent and warns about the old import
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

ran: list[str] = []  # what the tool really did, for the test of this tutorial


@tool
def read_notes(topic: str) -> str:
    """Read the user's notes on a topic."""
    ran.append(topic)
    return "Buy milk on Tuesday."


def notes_agent(llm: ChatOpenAI):  # noqa: ANN201 - a compiled LangGraph graph
    """The agent under test, as LangGraph writes it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(llm, [read_notes])
# [/docs:agent]


# [docs:case]
import trialrun as tr
from trialrun import expect


def invoke(ctx: tr.TrialContext) -> str:
    model = ctx.scripted([tr.tool_call("read_notes", topic="shopping"), tr.reply("You need to buy milk.")])
    llm = ChatOpenAI(model="gpt-4.1-mini", api_key="test", http_client=ctx.http_client(model, httpx2=True),
                     max_retries=0)
    state = notes_agent(llm).invoke({"messages": [("user", "What do I need to buy?")]})
    return str(state["messages"][-1].content)


case = tr.Case(name="langgraph reads the notes", invoke=invoke,
               expect_outcome=[expect.contains("milk")],
               expect_trajectory=[expect.called("read_notes", args={"topic": "shopping"}), expect.max_turns(2),
                                  # no error flag on the wire: ToolNode's error template is how a failed call reads
                                  expect.no_tool_errors(is_error=lambda call, result: result.content.endswith(
                                      "Please fix your mistakes."))])
# [/docs:case]


# [docs:lazy]
def invoke_wrong_answer(ctx: tr.TrialContext) -> str:
    model = ctx.scripted([tr.tool_call("read_notes", topic="shopping"), tr.reply("Nothing, your list is empty.")])
    llm = ChatOpenAI(model="gpt-4.1-mini", api_key="test", http_client=ctx.http_client(model, httpx2=True),
                     max_retries=0)
    state = notes_agent(llm).invoke({"messages": [("user", "What do I need to buy?")]})
    return str(state["messages"][-1].content)


wrong_answer = tr.Case(name="langgraph reads the notes and answers wrong", invoke=invoke_wrong_answer,
                       expect_outcome=case.expect_outcome, expect_trajectory=case.expect_trajectory)
# [/docs:lazy]

# [docs:run]
if __name__ == "__main__":
    report = tr.evaluate([case, wrong_answer])
    for result in report.cases:
        print(result.name, "passed" if result.passed else "FAILED")
        for verdict in result.trials[0].verdicts:
            print("   ", "ok  " if verdict.passed else "FAIL", verdict.reason)
# [/docs:run]
