"""A real run whose raw exchanges the view shows: `trialrun run` (the real CLI) of a one-test suite whose agent is
written over the official openai SDK, against the suite's scripted model. The agent's traffic carries planted
credentials (an `Authorization: Bearer sk-proj-...` key, an `x-api-key` token it also echoes into its system
prompt, an `api_key=` value there too) and a hostile tool result (HTML and script), and after its loop it asks for
a title in a streamed side request, so the sidecar holds JSON and server-sent-event bodies of two conversations."""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

TEST = "shopping-notes"
HOSTILE = '<script>alert("xss")</script><img src=x onerror="alert(1)"> Buy milk on Tuesday.'
TITLE = "OK"  # what a scripted model answers a side request (models.scripted.DEFAULT_SIDE_REPLY)

AGENT = '''
import json

import openai

KEY = {key!r}
ECHO = {echo!r}
BODY_KEY = {body_key!r}
READ_NOTES = {{"type": "function", "function": {{
    "name": "read_notes", "description": "Read the user's notes on a topic.",
    "parameters": {{"type": "object", "properties": {{"topic": {{"type": "string"}}}}, "required": ["topic"]}}}}}}
NOTES = {{"shopping": {hostile!r}}}


def run(prompt, ctx):
    client = openai.OpenAI(api_key=KEY, default_headers={{"x-api-key": ECHO}}, max_retries=0,
                           http_client=ctx.http_client(ctx.model, httpx2=True))
    messages = [{{"role": "system", "content": "Answer from the notes. Config: api_key=" + BODY_KEY
                  + ", session " + ECHO}}, {{"role": "user", "content": prompt}}]
    while True:
        message = client.chat.completions.create(model="gpt-4.1-mini", messages=messages,
                                                 tools=[READ_NOTES]).choices[0].message
        if not message.tool_calls:
            break
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            topic = json.loads(call.function.arguments)["topic"]
            messages.append({{"role": "tool", "tool_call_id": call.id, "content": NOTES.get(topic, "no notes")}})
    stream = client.chat.completions.create(model="gpt-4.1-mini", stream=True, messages=[
        {{"role": "user", "content": "A title of three words for: " + prompt}}])
    title = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    return (message.content or "") + " [" + title + "]"
'''


@dataclass(frozen=True)
class SdkRun:
    results: Path  # the results folder
    stem: str  # the run's result file stem
    key: str  # the planted secrets: none may reach the sidecar
    echo: str
    body_key: str

    @property
    def sidecar(self) -> Path:
        return self.results / f"{self.stem}.exchanges.ndjson"

    @property
    def planted(self) -> tuple[str, str, str]:
        return self.key, self.echo, self.body_key


def make_sdk_run(folder: Path, *extra: str) -> SdkRun:
    """Write the project into `folder`, run it once with `trialrun run` (plus `extra` arguments), return the run."""
    from trialrun.cli import main

    key = "sk-proj-" + secrets.token_urlsafe(24).replace("-", "a").replace("_", "b")
    echo, body_key = secrets.token_hex(12), secrets.token_hex(10)
    project = folder / "sdk-project"
    (project / "state" / "eval").mkdir(parents=True)
    (project / "sdk_agent.py").write_text(AGENT.format(key=key, echo=echo, body_key=body_key, hostile=HOSTILE),
                                          encoding="utf-8")
    (project / "state" / "eval" / "tests.json").write_text(json.dumps([{
        "id": TEST, "prompt": "What do I need to buy?", "expected_tools": ["read_notes"], "max_turns": 3,
        "success_criteria": "Says to buy milk", "expect": {"contains": "milk"}}]), encoding="utf-8")
    (project / "model.yaml").write_text(
        f"{TEST}:\n  - tool_call: {{name: read_notes, arguments: {{topic: shopping}}}}\n"
        f"  - reply: \"You need to buy milk.\"\n", encoding="utf-8")
    (project / "trialrun.toml").write_text('agent = "sdk_agent:run"\nmodel = "scripted:model.yaml"\n'
                                           'model_name = "gpt-4.1-mini"\n', encoding="utf-8")
    cwd = os.getcwd()
    os.chdir(project)
    try:
        result = CliRunner().invoke(main, ["run", "all", *extra])
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, result.output
    results = project / "state" / "eval"
    (saved,) = results.glob("results_*.json")
    return SdkRun(results, saved.stem, key, echo, body_key)
