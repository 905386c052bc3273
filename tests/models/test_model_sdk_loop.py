"""Done-when 1: the official SDKs run a two-step tool loop against ScriptedModel, sync and async, JSON and streamed.

Each driver below is what an agent does with that SDK: send the question with tools, execute the tool calls the
model asked for, send the results, read the final answer. The test checks the SDK's own parsed objects AND the
trajectory the transport read from the traffic against the script.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from trialrun.models import ScriptedModel, reply, tool_call, tool_calls
from trialrun.trajectory import Usage

FIRST_USAGE = Usage(input_tokens=31, output_tokens=12)
FINAL_USAGE = Usage(input_tokens=85, output_tokens=9)
FINAL_TEXT = "Paris is sunny; it is 12:00 there."
SCRIPTED_CALLS = [("get_weather", {"city": "Paris"}), ("get_time", {"tz": "CET", "hour24": True})]
TOOLS: dict[str, Callable[..., str]] = {
    "get_weather": lambda city: f"Sunny in {city}",
    "get_time": lambda tz, hour24: f"12:00 {tz}" if hour24 else f"12pm {tz}",
}
EXPECTED_RESULTS = ["Sunny in Paris", "12:00 CET"]
SCHEMAS = {
    "get_weather": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "get_time": {"type": "object", "properties": {"tz": {"type": "string"}, "hour24": {"type": "boolean"}}},
}
QUESTION = "What is the weather and time in Paris?"


def script() -> ScriptedModel:
    return ScriptedModel(
        [
            tool_calls(tool_call("get_weather", city="Paris"), tool_call("get_time", {"tz": "CET"}, hour24=True),
                       usage=FIRST_USAGE),
            reply(FINAL_TEXT, usage=FINAL_USAGE),
        ]
    )


async def _await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def _events(stream: Any) -> list[Any]:
    if hasattr(stream, "__aiter__"):
        return [event async for event in stream]
    return list(stream)


def _run_tools(calls: list[tuple[str, str, dict[str, Any]]]) -> list[str]:
    return [TOOLS[name](**arguments) for _, name, arguments in calls]


# -- OpenAI Chat Completions ------------------------------------------------------------------------------------------

CHAT_TOOLS = [{"type": "function", "function": {"name": n, "parameters": s}} for n, s in SCHEMAS.items()]


async def _chat_turn(client: Any, messages: list[dict[str, Any]], stream: bool) -> tuple[str, list, Any]:
    kwargs: dict[str, Any] = {"model": "gpt-4o-mini", "messages": messages, "tools": CHAT_TOOLS}
    if not stream:
        completion = await _await(client.chat.completions.create(**kwargs))
        message = completion.choices[0].message
        calls = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]
        return message.content or "", calls, completion.usage
    chunks = await _events(await _await(
        client.chat.completions.create(**kwargs, stream=True, stream_options={"include_usage": True})
    ))
    text, parts, usage = "", {}, None
    for chunk in chunks:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for delta in choice.delta.tool_calls or []:
                part = parts.setdefault(delta.index, {"id": None, "name": "", "arguments": ""})
                part["id"] = part["id"] or delta.id
                if delta.function:
                    part["name"] += delta.function.name or ""
                    part["arguments"] += delta.function.arguments or ""
    calls = [(p["id"], p["name"], json.loads(p["arguments"])) for _, p in sorted(parts.items())]
    return text, calls, usage


async def drive_chat(client: Any, stream: bool) -> tuple[list, str, Any, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    text, calls, first_usage = await _chat_turn(client, messages, stream)
    assert text == ""
    results = _run_tools(calls)
    messages.append({
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, n, a in calls
        ],
    })
    messages += [{"role": "tool", "tool_call_id": i, "content": r} for (i, _, _), r in zip(calls, results)]
    final, more, final_usage = await _chat_turn(client, messages, stream)
    assert more == []
    assert (first_usage.prompt_tokens, first_usage.completion_tokens) == (31, 12)
    assert (final_usage.prompt_tokens, final_usage.completion_tokens) == (85, 9)
    return calls, final, first_usage, final_usage


# -- OpenAI Responses -------------------------------------------------------------------------------------------------

RESPONSES_TOOLS = [{"type": "function", "name": n, "parameters": s} for n, s in SCHEMAS.items()]


async def _responses_turn(client: Any, items: list[Any], stream: bool) -> tuple[str, list, Any]:
    kwargs: dict[str, Any] = {"model": "gpt-5-mini", "input": items, "tools": RESPONSES_TOOLS}
    if stream:
        events = await _events(await _await(client.responses.create(**kwargs, stream=True)))
        types = [event.type for event in events]
        assert types[0] == "response.created" and types[-1] == "response.completed"
        response = events[-1].response
        streamed_text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        assert streamed_text == response.output_text
    else:
        response = await _await(client.responses.create(**kwargs))
    calls = [(o.call_id, o.name, json.loads(o.arguments)) for o in response.output if o.type == "function_call"]
    items += [o.model_dump(exclude_none=True) for o in response.output if o.type == "function_call"]
    return response.output_text, calls, response.usage


async def drive_responses(client: Any, stream: bool) -> tuple[list, str, Any, Any]:
    items: list[Any] = [{"role": "user", "content": QUESTION}]
    text, calls, first_usage = await _responses_turn(client, items, stream)
    assert text == ""
    results = _run_tools(calls)
    items += [{"type": "function_call_output", "call_id": i, "output": r} for (i, _, _), r in zip(calls, results)]
    final, more, final_usage = await _responses_turn(client, items, stream)
    assert more == []
    assert (first_usage.input_tokens, first_usage.output_tokens) == (31, 12)
    assert (final_usage.input_tokens, final_usage.output_tokens) == (85, 9)
    return calls, final, first_usage, final_usage


# -- Anthropic Messages -----------------------------------------------------------------------------------------------

ANTHROPIC_TOOLS = [{"name": n, "description": f"the {n} tool", "input_schema": s} for n, s in SCHEMAS.items()]


async def _anthropic_turn(client: Any, messages: list[dict[str, Any]], how: str) -> tuple[Any, str, list, Any]:
    kwargs: dict[str, Any] = {"model": "claude-scripted-1", "max_tokens": 512, "messages": messages,
                              "tools": ANTHROPIC_TOOLS}
    if how == "create":
        message = await _await(client.messages.create(**kwargs))
        blocks, usage = message.content, message.usage
        content = [b.model_dump(exclude_none=True) for b in blocks]
    elif how == "helper":
        manager = client.messages.stream(**kwargs)
        if hasattr(manager, "__aenter__"):
            async with manager as stream:
                message = await stream.get_final_message()
        else:
            with manager as stream:
                message = stream.get_final_message()
        blocks, usage = message.content, message.usage
        content = [b.model_dump(exclude_none=True, exclude={"parsed_output"}) for b in blocks]
    else:  # raw events with stream=True
        events = await _events(await _await(client.messages.create(**kwargs, stream=True)))
        assert events[0].type == "message_start" and events[-1].type == "message_stop"
        content, partial = [], {}
        usage = events[0].message.usage
        for event in events:
            if event.type == "content_block_start":
                content.append(event.content_block.model_dump(exclude_none=True))
                partial[event.index] = ""
            elif event.type == "content_block_delta":
                if event.delta.type == "text_delta":
                    content[event.index]["text"] += event.delta.text
                elif event.delta.type == "input_json_delta":
                    partial[event.index] += event.delta.partial_json
            elif event.type == "message_delta":
                usage = usage.model_copy(update={"output_tokens": event.usage.output_tokens})
        for index, raw in partial.items():
            if content[index]["type"] == "tool_use":
                content[index]["input"] = json.loads(raw) if raw else {}
        blocks = content
    text = "".join(b["text"] for b in content if b["type"] == "text")
    calls = [(b["id"], b["name"], b["input"]) for b in content if b["type"] == "tool_use"]
    messages.append({"role": "assistant", "content": content})
    return blocks, text, calls, usage


async def drive_anthropic(client: Any, how: str) -> tuple[list, str, Any, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    _, text, calls, first_usage = await _anthropic_turn(client, messages, how)
    assert text == ""
    results = _run_tools(calls)
    messages.append({
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": i, "content": r} for (i, _, _), r in zip(calls, results)],
    })
    _, final, more, final_usage = await _anthropic_turn(client, messages, how)
    assert more == []
    assert (first_usage.input_tokens, first_usage.output_tokens) == (31, 12)
    assert (final_usage.input_tokens, final_usage.output_tokens) == (85, 9)
    return calls, final, first_usage, final_usage


# -- the matrix -------------------------------------------------------------------------------------------------------

def _openai_client(model: ScriptedModel, asynchronous: bool) -> Any:
    if asynchronous:
        return openai.AsyncOpenAI(api_key="test", http_client=httpx.AsyncClient(transport=model), max_retries=0)
    return openai.OpenAI(api_key="test", http_client=httpx.Client(transport=model), max_retries=0)


def _anthropic_client(model: ScriptedModel, asynchronous: bool) -> Any:
    # The anthropic SDK only accepts its own httpx2 clients; the transport answers in their flavour.
    if asynchronous:
        return anthropic.AsyncAnthropic(api_key="test", http_client=httpx2.AsyncClient(transport=model), max_retries=0)
    return anthropic.Anthropic(api_key="test", http_client=httpx2.Client(transport=model), max_retries=0)


DRIVERS: dict[str, tuple[Callable[[ScriptedModel, bool], Any], Callable[[Any], Awaitable[tuple]]]] = {
    "chat": (_openai_client, lambda c: drive_chat(c, stream=False)),
    "chat-stream": (_openai_client, lambda c: drive_chat(c, stream=True)),
    "responses": (_openai_client, lambda c: drive_responses(c, stream=False)),
    "responses-stream": (_openai_client, lambda c: drive_responses(c, stream=True)),
    "anthropic": (_anthropic_client, lambda c: drive_anthropic(c, "create")),
    "anthropic-stream": (_anthropic_client, lambda c: drive_anthropic(c, "events")),
    "anthropic-stream-helper": (_anthropic_client, lambda c: drive_anthropic(c, "helper")),
}


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("flavour", list(DRIVERS))
def test_two_step_tool_loop_through_official_sdk(flavour: str, asynchronous: bool) -> None:
    model = script()
    make_client, drive = DRIVERS[flavour]
    client = make_client(model, asynchronous)
    calls, final, _, _ = asyncio.run(drive(client))

    # What the SDK parsed is what the script said.
    assert [(name, arguments) for _, name, arguments in calls] == SCRIPTED_CALLS
    assert all(call_id for call_id, _, _ in calls) and len({c[0] for c in calls}) == 2
    assert final == FINAL_TEXT

    # The trajectory read from the traffic is the script, with the results the agent sent back.
    trajectory = model.trajectory()
    assert len(trajectory.turns) == 2
    first, second = trajectory.turns
    assert [(c.name, c.arguments) for c in first.tool_calls] == SCRIPTED_CALLS
    assert [c.id for c in first.tool_calls] == [call_id for call_id, _, _ in calls]
    assert [r.content for r in first.tool_results] == EXPECTED_RESULTS
    assert [r.call_id for r in first.tool_results] == [c.id for c in first.tool_calls]
    assert not any(r.is_error for r in first.tool_results)
    assert (first.usage.input_tokens, first.usage.output_tokens) == (31, 12)
    assert second.text == FINAL_TEXT and second.tool_calls == []
    assert (second.usage.input_tokens, second.usage.output_tokens) == (85, 9)
    assert trajectory.final_text == FINAL_TEXT
    assert trajectory.tools_used == ["get_weather", "get_time"]
    assert trajectory.notes == []

    assert model.problems == []
    assert model.calls == 2 and model.remaining == 0
    assert [r.stream for r in model.requests] == ["stream" in flavour] * 2
    assert model.requests[1].last_tool_results[0].content == "Sunny in Paris"
