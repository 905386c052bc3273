"""A results folder with a flaky test, made by really running trialrun: a two-test suite whose agent is written
over the official openai SDK against the suite's scripted model, run twice by `trialrun run all -k 5`. In the first
run every trial passes; in the second, trials 2 and 4 of `shopping-notes` forget their tool (the agent answers
without calling read_notes, so the answer lacks "milk"): a flaky failure, a regression against the first run, and a
trial that can only be understood beside a passing one. For the viewer's navigation, diff, grading and phone tests
and docs/make_screenshot.py."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

FLAKY = "shopping-notes"
STEADY = "weather-notes"
TAG = "groceries"
TRIALS = 5
FAILING = (2, 4)  # the trials of the second run that fail

AGENT = '''
"""An agent over the openai SDK that, in the trials fail_trials.txt (in the working folder) names, forgets its
tool: it answers without reading the notes."""
import json
from pathlib import Path

import openai

READ_NOTES = {"type": "function", "function": {
    "name": "read_notes", "description": "Read the user's notes on a topic.",
    "parameters": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}}}
NOTES = {"shopping": "Buy milk and eggs on Tuesday.", "weather": "Rain expected on Friday."}


def run(prompt, ctx):
    fail = {int(x) for x in Path("fail_trials.txt").read_text().split(",") if x.strip()}
    client = openai.OpenAI(api_key="sk-test", max_retries=0, http_client=ctx.http_client(ctx.model, httpx2=True))
    messages = [{"role": "user", "content": prompt}]
    if ctx.case.name == "shopping-notes" and ctx.trial in fail:
        return "I do not know what you need; I did not look."
    while True:
        message = client.chat.completions.create(model="gpt-4.1-mini", messages=messages,
                                                 tools=[READ_NOTES]).choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            topic = json.loads(call.function.arguments)["topic"]
            messages.append({"role": "tool", "tool_call_id": call.id, "content": NOTES.get(topic, "no notes")})
'''

MODEL = """\
shopping-notes:
  - tool_call: {name: read_notes, arguments: {topic: shopping}}
  - reply: "You need to buy milk and eggs."
weather-notes:
  - tool_call: {name: read_notes, arguments: {topic: weather}}
  - reply: "Rain is expected on Friday."
"""


@dataclass(frozen=True)
class FlakyRuns:
    results: Path  # the results folder
    steady: str  # the first run's stem: every trial passed
    flaky: str  # the second run's stem: trials 2 and 4 of FLAKY failed


def make_flaky_runs(folder: Path) -> FlakyRuns:
    """Write the project into `folder`, run it twice with the real `trialrun run`, return the two runs."""
    from trialrun.cli import main

    project = folder / "flaky-project"
    (project / "state" / "eval").mkdir(parents=True)
    (project / "flaky_agent.py").write_text(AGENT, encoding="utf-8")
    (project / "state" / "eval" / "tests.json").write_text(json.dumps([
        {"id": FLAKY, "name": "What to buy", "tags": [TAG], "prompt": "What do I need to buy?",
         "expected_tools": ["read_notes"], "max_turns": 3, "success_criteria": "Says to buy milk",
         "expect": [{"contains": "milk"}]},
        {"id": STEADY, "prompt": "What is the weather going to be?", "expected_tools": ["read_notes"], "max_turns": 3,
         "success_criteria": "Mentions rain", "expect": [{"contains": "Rain"}]}]), encoding="utf-8")
    (project / "model.yaml").write_text(MODEL, encoding="utf-8")
    (project / "trialrun.toml").write_text('agent = "flaky_agent:run"\nmodel = "scripted:model.yaml"\n'
                                           'model_name = "gpt-4.1-mini"\n', encoding="utf-8")
    cwd = os.getcwd()
    os.chdir(project)
    try:
        for fail in ("", ",".join(map(str, FAILING))):
            (project / "fail_trials.txt").write_text(fail, encoding="utf-8")
            result = CliRunner().invoke(main, ["run", "all", "-k", str(TRIALS), "-j", "1"])
            assert result.exit_code in (0, 1), result.output
    finally:
        os.chdir(cwd)
    results = project / "state" / "eval"
    first, second = sorted(p.stem for p in results.glob("results_*.json"))
    return FlakyRuns(results, first, second)
