"""ObservedTransport records what the agent was asked (`Trajectory.prompt`): the last user message of its first
model request, in every API the wire codecs speak. Real provider traffic is replayed request by request through an
observed mock transport; requests shaped by the official SDKs go through an observed scripted model."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import anthropic
import httpx
import httpx2
import openai
import pytest

import trialrun as tr
from trialrun import expect
from trialrun.models import ObservedTransport, ScriptedModel, reply, tool_call
from trialrun.models._cassette_io import load_exchanges
from trialrun.report.results import RunReport
from trialrun.wire import Exchange, first_prompt as observed_prompt

TRAFFIC = Path(__file__).resolve().parents[1] / "fixtures" / "provider-traffic"


def _replayed(exchanges: list[Exchange]) -> ObservedTransport:
    """Send each recorded request through an observed transport that answers with the recorded response."""
    answers = iter(exchanges)

    def handler(request: httpx.Request) -> httpx.Response:
        recorded = next(answers)
        return httpx.Response(recorded.status, headers=recorded.response_headers, content=recorded.response_body)

    observed = ObservedTransport(httpx.MockTransport(handler))
    with httpx.Client(transport=observed) as client:
        for exchange in exchanges:
            client.request(exchange.method, exchange.url, content=exchange.request_body,
                           headers={"content-type": "application/json"}).read()
    return observed


@pytest.mark.parametrize(("recording", "prompt"), [
    ("openai-chat/test_dbos__test_dbos_agent_with_model_retry.yaml", "What is the weather in CDMX?"),
    # two agents in one recording: a tool-less one ("What is the capital of Mexico?", kept as a side conversation)
    # and the tool-using loop, which is the main conversation and so gives the prompt
    ("openai-chat-stream/test_prefect__test_multiple_agents.yaml",
     "Tell me: the capital of the country; the weather there; the product name"),
    ("openai-responses-stream/test_openai_responses__test_openai_responses_phase_live.yaml",
     "What is the capital of PotatoLand?"),
    ("anthropic/test_anthropic__test_anthropic_tool_output.yaml", "What is the largest city in the user country?"),
    ("anthropic-stream/test_tool_search__test_anthropic_native_tool_search_streaming.yaml",
     "What is the current USD to EUR exchange rate?"),
    ("gemini/test_google__test_google_model_retry.yaml", "What is the capital of France?"),
    ("gemini-stream/test_google__test_google_model_iter_stream.yaml",
     "What is the temperature of the capital of France?"),
    # The first exchange uploads a file (not a model call); the prompt is the first model request's.
    ("anthropic/test_code_execution_files_vcr__test_anthropic_code_execution_files.yaml",
     "Use the code execution tool to read the uploaded CSV file and report the sum of the `value` column."),
])
def test_the_prompt_of_real_traffic_in_every_api(recording: str, prompt: str) -> None:
    exchanges = load_exchanges(TRAFFIC / recording)
    observed = _replayed(exchanges)
    trajectory = observed.trajectory()
    assert trajectory.prompt is not None and trajectory.prompt.startswith(prompt)
    assert trajectory.turns  # the turns are read as before


def test_no_prompt_when_the_agent_sends_only_instructions() -> None:
    exchanges = load_exchanges(TRAFFIC / "gemini" / "test_google__test_google_instructions_only_with_tool_calls.yaml")
    trajectory = _replayed(exchanges).trajectory()
    assert trajectory.prompt is None and trajectory.turns


def test_openai_chat_and_responses_requests_from_the_sdk() -> None:
    chat_model = ObservedTransport(ScriptedModel([tool_call("read_file", path="notes.txt"), reply("Buy milk.")]))
    client = openai.OpenAI(api_key="sk-test", http_client=httpx.Client(transport=chat_model), max_retries=0)
    messages: list = [{"role": "system", "content": "You are terse."},
                      {"role": "user", "content": "What do my notes say?"}]
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object", "properties": {}}}}]
    first = client.chat.completions.create(model="gpt-4.1-mini", messages=messages, tools=tools)
    call = first.choices[0].message.tool_calls[0]
    messages += [first.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": "Buy milk."},
                 {"role": "user", "content": "And in French?"}]  # a later user message is not the prompt
    client.chat.completions.create(model="gpt-4.1-mini", messages=messages, tools=tools)
    trajectory = chat_model.trajectory()
    assert trajectory.prompt == "What do my notes say?" and len(trajectory.turns) == 2

    responses_model = ObservedTransport(ScriptedModel([reply("Paris.")]))
    client = openai.OpenAI(api_key="sk-test", http_client=httpx.Client(transport=responses_model), max_retries=0)
    client.responses.create(model="gpt-4.1-mini", instructions="Answer in one word.",
                            input=[{"role": "user", "content": [{"type": "input_text", "text": "Capital of France?"}]}])
    assert responses_model.trajectory().prompt == "Capital of France?"


def test_anthropic_and_gemini_requests() -> None:
    anthropic_model = ObservedTransport(ScriptedModel([reply("Hello.")]))
    client = anthropic.Anthropic(api_key="sk-ant-test", http_client=httpx2.Client(transport=anthropic_model),
                                 max_retries=0)
    client.messages.create(model="claude-x", max_tokens=100, system="Be kind.",
                           messages=[{"role": "user", "content": [{"type": "text", "text": "Say hello to Sam."}]}])
    assert anthropic_model.trajectory().prompt == "Say hello to Sam."

    gemini_model = ObservedTransport(ScriptedModel([reply("Rome.")]))
    with httpx.Client(transport=gemini_model) as raw:
        raw.post("https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent",
                 json={"systemInstruction": {"parts": [{"text": "Be brief."}]},
                       "contents": [{"role": "user", "parts": [{"text": "Capital of Italy?"}]}]})
    assert gemini_model.trajectory().prompt == "Capital of Italy?"


def test_unreadable_and_foreign_requests_are_skipped() -> None:
    def exchange(path: str, body: bytes) -> Exchange:
        return Exchange(method="POST", url=f"https://api.openai.com{path}", request_body=body, status=200)

    chat = json.dumps({"model": "m", "messages": [{"role": "user", "content": "the real question"}]}).encode()
    unreadable, foreign = exchange("/v1/chat/completions", b"{not json"), exchange("/oauth/token", b"{}")
    assert observed_prompt([unreadable, exchange("/v1/chat/completions", chat)]) == "the real question"
    assert observed_prompt([foreign, exchange("/v1/chat/completions", chat)]) == "the real question"
    assert observed_prompt([]) is None


def test_a_python_case_keeps_its_observed_prompt_in_the_saved_report() -> None:
    """An invoke that talks to its own mock server through the trial's client: the report records the prompt,
    and it survives the JSON results file."""

    def handler(request: httpx.Request) -> httpx.Response:
        message = {"role": "assistant", "content": "Buy milk."}
        return httpx.Response(200, json={"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
                                         "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})

    def invoke(ctx: tr.TrialContext) -> str:
        client = ctx.http_client(httpx.MockTransport(handler))
        body = {"model": "m", "messages": [{"role": "user", "content": "What do my notes say?"}]}
        answer = client.post("https://api.openai.com/v1/chat/completions", json=body).json()
        return answer["choices"][0]["message"]["content"]

    report = tr.evaluate([tr.Case("notes", invoke, expect_outcome=[expect.contains("milk")])])
    trajectory = report.cases[0].trials[0].trajectory
    assert report.cases[0].passed and trajectory.prompt == "What do my notes say?"
    loaded = RunReport.model_validate_json(report.model_dump_json())
    assert loaded.cases[0].trials[0].trajectory.prompt == "What do my notes say?"


def test_reports_without_a_prompt_still_load() -> None:
    """Result files written before `Trajectory.prompt` existed have no such key."""
    report = RunReport.build([], trial_count=1, started_at=datetime(2025, 1, 2, tzinfo=timezone.utc), duration_s=0)
    data = json.loads(report.model_dump_json())
    data["cases"] = [{"name": "old", "passed": True, "trials": [
        {"trial": 1, "passed": True, "trajectory": {"turns": [], "commands": [], "denials": [], "notes": []}}]}]
    loaded = RunReport.model_validate(data)
    assert loaded.cases[0].trials[0].trajectory.prompt is None
