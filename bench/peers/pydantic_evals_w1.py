"""W1 of ../shared/bench/WORKLOAD.md in pydantic-evals, with pydantic-ai's agent loop: trialrun's peer, for
`bench/peers.py` to time beside trialrun. Run it in a virtualenv of its own (pydantic-evals and pydantic-ai-slim,
never trialrun):

    python bench/peers/pydantic_evals_w1.py [--cases 200] [--trials 5]

Case i: the prompt "lookup key-i"; a `FunctionModel` reads the conversation it is shown and asks for
lookup(key="key-i"), then, seeing the tool's result, answers "The value is value-i."; the tool is a plain function.
Two evaluators: the output contains "value-i", and the agent's messages hold a `lookup` call with key "key-i".
`repeat` runs each case `--trials` times; everything else is pydantic-evals' default (unbounded concurrency, the
progress display). Prints one line, `W1-RESULT {json}`, after checking that every trial was graded and passed.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import Evaluator, EvaluatorContext


def lookup(key: str) -> str:
    """Look up a key."""
    return "value-" + key.removeprefix("key-")


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The scripted model: decides from the last request it is shown, as trialrun's ScriptedModel does."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    for part in last.parts:
        if isinstance(part, ToolReturnPart):
            return ModelResponse(parts=[TextPart(f"The value is {part.content}.")])
    prompt = str(last.parts[-1].content)  # the user's "lookup key-i"
    return ModelResponse(parts=[ToolCallPart("lookup", {"key": prompt.removeprefix("lookup ")})])


agent = Agent(FunctionModel(scripted), tools=[lookup])


async def task(prompt: str) -> dict[str, Any]:
    """The agent's run: its final text and the tool calls its messages hold (the trajectory the grader reads)."""
    result = await agent.run(prompt)
    calls = [(part.tool_name, part.args_as_dict()) for message in result.all_messages()
             if isinstance(message, ModelResponse) for part in message.parts if isinstance(part, ToolCallPart)]
    return {"text": result.output, "calls": calls}


@dataclass
class OutputContains(Evaluator[str, dict[str, Any]]):
    def evaluate(self, ctx: EvaluatorContext[str, dict[str, Any]]) -> bool:
        return str(ctx.expected_output) in ctx.output["text"]


@dataclass
class CalledLookup(Evaluator[str, dict[str, Any]]):
    def evaluate(self, ctx: EvaluatorContext[str, dict[str, Any]]) -> bool:
        key = str(ctx.inputs).removeprefix("lookup ")
        return ("lookup", {"key": key}) in [(name, args) for name, args in ctx.output["calls"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    dataset = Dataset[str, dict[str, Any], Any](
        name="W1",
        cases=[Case(name=f"lookup-{i}", inputs=f"lookup key-{i}", expected_output=f"value-{i}")
               for i in range(args.cases)],
        evaluators=[OutputContains(), CalledLookup()],
    )
    started, cpu = time.perf_counter(), time.process_time()
    report = dataset.evaluate_sync(task, repeat=args.trials)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    # no verdict without looking: every trial ran, was graded by both evaluators, and passed
    expected = args.cases * args.trials
    graded = [case for case in report.cases if len(case.assertions) == 2]
    passed = [case for case in graded if all(result.value is True for result in case.assertions.values())]
    by_case: dict[str, list[bool]] = {}
    for case in graded:
        by_case.setdefault(case.source_case_name or case.name, []).append(case in passed)
    if report.failures or len(graded) != expected or len(passed) != expected:
        print(f"W1 in pydantic-evals did not pass: {len(report.failures)} failures, {len(graded)} graded, "
              f"{len(passed)} passed of {expected}", file=sys.stderr)
        sys.exit(1)
    print("W1-RESULT " + json.dumps({
        "framework": "pydantic-evals", "version": version("pydantic-evals"), "cases": args.cases,
        "trials": args.trials, "eval_s": elapsed, "eval_cpu_s": cpu, "passed_trials": len(passed),
        "pass_at_1": len(passed) / expected,
        "pass_pow_k": sum(all(runs) for runs in by_case.values()) / args.cases,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))


if __name__ == "__main__":
    main()
