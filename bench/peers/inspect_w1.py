"""Shared benchmark workload W1 (deterministic tool-calling suite) in Inspect AI.

A scripted model, registered as the Inspect model API ``w1`` (model ``w1/scripted``),
reads the conversation it is given: if the last message is a tool result it answers
"The value is <result>."; otherwise it asks for ONE ``lookup(key=...)`` tool call with
the key taken from the user message. Inspect's own ``generate()`` solver runs the tool
loop. Two scorers grade each trial: ``includes()`` (outcome) and ``lookup_called``
(trajectory). Only the ``inspect_ai.eval(...)`` call is timed. One line, ``W1-RESULT {json}``,
goes to stdout; everything else goes to stderr. Trialrun's peer, for ``bench/peers.py`` to time.

Run (in a venv of its own with inspect-ai, never the project's)::

    python bench/peers/inspect_w1.py [--cases 200] [--trials 5]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import resource
import sys
import tempfile
import time
from typing import Any

import inspect_ai
from inspect_ai import Task, eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    get_model,
    modelapi,
)
from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    Score,
    Scorer,
    Target,
    accuracy,
    includes,
    scorer,
)
from inspect_ai.solver import TaskState, generate, use_tools
from inspect_ai.tool import Tool, ToolChoice, ToolInfo, tool

MODEL_NAME = "w1/scripted"
OUTCOME = "includes"
TRAJECTORY = "lookup_called"


@tool
def lookup() -> Tool:
    """The W1 lookup tool: maps "key-i" to "value-i"."""

    async def execute(key: str) -> str:
        """Look up the value stored under a key.

        Args:
            key: The key to look up, e.g. "key-7".
        """
        return "value-" + key.removeprefix("key-")

    return execute


@modelapi(name="w1")
class ScriptedW1API(ModelAPI):
    """Deterministic fake model that decides from the messages it is shown."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig | None = None,
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        last = input[-1]
        if isinstance(last, ChatMessageTool):
            return ModelOutput.from_content(model=self.model_name, content=f"The value is {last.text}.")
        user = next(m for m in reversed(input) if isinstance(m, ChatMessageUser))
        key = user.text.strip().split()[-1]  # "lookup key-i" -> "key-i"
        if not any(t.name == "lookup" for t in tools):
            raise RuntimeError("scripted model was not offered the lookup tool")
        return ModelOutput.for_tool_call(
            model=self.model_name,
            tool_name="lookup",
            tool_arguments={"key": key},
            content="",
        )


@scorer(metrics=[accuracy()])
def lookup_called() -> Scorer:
    """Trajectory grader: an assistant message called lookup(key=<expected key>)."""

    async def score(state: TaskState, target: Target) -> Score:
        expected = str(state.metadata["key"])
        calls = [
            call
            for message in state.messages
            if isinstance(message, ChatMessageAssistant)
            for call in (message.tool_calls or [])
            if call.function == "lookup"
        ]
        ok = any(call.arguments == {"key": expected} for call in calls)
        return Score(
            value=CORRECT if ok else INCORRECT,
            explanation=f"lookup calls: {[c.arguments for c in calls]}",
        )

    return score


def build_task(cases: int, trials: int) -> Task:
    """Build the W1 task: `cases` samples, `trials` epochs, two scorers."""
    dataset = [
        Sample(
            id=i,
            input=f"lookup key-{i}",
            target=f"value-{i}",
            metadata={"key": f"key-{i}"},
        )
        for i in range(cases)
    ]
    return Task(
        dataset=dataset,
        solver=[use_tools(lookup()), generate()],
        scorer=[includes(), lookup_called()],
        epochs=trials,
        name="w1",
    )


def check_log(log: EvalLog, cases: int, trials: int) -> tuple[int, float, float]:
    """Verify the eval log; return (passed_trials, pass@1, pass^k). Exit 1 on failure."""
    problems: list[str] = []
    if log.status != "success":
        problems.append(f"eval status {log.status!r}: {log.error}")
    samples = log.samples or []
    if len(samples) != cases * trials:
        problems.append(f"{len(samples)} sample-epochs logged, expected {cases * trials}")
    per_case: dict[int, list[bool]] = {}
    passed = 0
    for s in samples:
        scores = s.scores or {}
        outcome = scores.get(OUTCOME)
        trajectory = scores.get(TRAJECTORY)
        ok = outcome is not None and trajectory is not None and outcome.value == CORRECT and trajectory.value == CORRECT
        per_case.setdefault(int(s.id), []).append(ok)
        if ok:
            passed += 1
        else:
            problems.append(
                f"sample {s.id} epoch {s.epoch} failed: "
                f"{OUTCOME}={outcome and outcome.value} {TRAJECTORY}={trajectory and trajectory.value}"
            )
    if len(per_case) != cases or any(len(v) != trials for v in per_case.values()):
        problems.append("cases/epochs do not match the requested grid")
    if problems:
        for p in problems[:50]:
            print(p, file=sys.stderr)
        print(f"{len(problems)} problem(s)", file=sys.stderr)
        sys.exit(1)
    pass_at_1 = passed / len(samples)
    pass_pow_k = sum(all(v) for v in per_case.values()) / len(per_case)
    return passed, pass_at_1, pass_pow_k


def main() -> None:
    """Parse arguments, run the eval (timed), check it and print the W1-RESULT line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    cases: int = args.cases
    trials: int = args.trials

    task = build_task(cases, trials)
    model = get_model(MODEL_NAME)
    with tempfile.TemporaryDirectory(prefix="inspect-w1-") as log_dir:
        wall0, cpu0 = time.perf_counter(), time.process_time()
        logs = inspect_eval(task, model=model, log_dir=log_dir, display="none")
        eval_s = time.perf_counter() - wall0
        eval_cpu_s = time.process_time() - cpu0
        if len(logs) != 1:
            print(f"expected 1 eval log, got {len(logs)}", file=sys.stderr)
            sys.exit(1)
        passed, pass_at_1, pass_pow_k = check_log(logs[0], cases, trials)

    version = getattr(inspect_ai, "__version__", None) or importlib.metadata.version("inspect_ai")
    print(
        "W1-RESULT "
        + json.dumps(
            {
                "framework": "inspect_ai",
                "version": version,
                "cases": cases,
                "trials": trials,
                "eval_s": round(eval_s, 4),
                "eval_cpu_s": round(eval_cpu_s, 4),
                "passed_trials": passed,
                "pass_at_1": pass_at_1,
                "pass_pow_k": pass_pow_k,
                "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
