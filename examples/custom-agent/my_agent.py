"""A custom agent under test (`agent = "my_agent:run"` in trialrun.toml): your own code, over the official openai
SDK, reaching whatever model the configuration names through `ctx` (docs/cli.md, "A custom agent";
tests/test_docs_examples.py runs this project, with a scripted model and with a model served over HTTP).
"""

# [docs:agent]
import json
from pathlib import Path

import openai
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam

import trialrun as tr

READ_FILE: ChatCompletionToolParam = {"type": "function", "function": {
    "name": "read_file", "description": "Read a file of the workspace.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}


def run(prompt: str, ctx: tr.TrialContext) -> str:
    """trialrun calls this once per trial with the test's prompt and the trial's context."""
    client = openai.OpenAI(
        api_key="unused",  # a scripted or replayed model needs none; a live one gets its key from the environment
        http_client=ctx.http_client(ctx.model, httpx2=True),  # the configured model, observed by trialrun
    )
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": prompt}]
    while True:
        message = client.chat.completions.create(model=ctx.model_name or "gpt-4.1-mini", messages=messages,
                                                 tools=[READ_FILE]).choices[0].message
        calls = [call for call in message.tool_calls or [] if call.type == "function"]
        if not calls:
            return message.content or ""
        messages.append({"role": "assistant", "content": message.content, "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
            for c in calls]})
        for call in calls:
            path = Path(ctx.workdir) / json.loads(call.function.arguments)["path"]  # the trial's copy of workspace/
            content = path.read_text() if path.is_file() else "no such file"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
# [/docs:agent]
