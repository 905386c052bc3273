"""ScriptedModel behaviour: step helpers, reactive scripts, exhaustion, provider errors, concurrency, raw httpx."""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from trialrun.models import ModelTransport, ScriptedModel, fail, reply, tool_call, tool_calls
from trialrun.trajectory import ToolCall, Usage
from trialrun.wire import ModelRequest, ProviderError, Step

CHAT_URL = "https://api.openai.com/v1/chat/completions"
TOOL = {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}


def openai_client(model: ModelTransport, max_retries: int = 0) -> openai.OpenAI:
    return openai.OpenAI(api_key="test", http_client=httpx.Client(transport=model), max_retries=max_retries)


def ask(client: openai.OpenAI, content: str, **kwargs: Any) -> Any:
    return client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": content}], **kwargs)


# -- step helpers -----------------------------------------------------------------------------------------------------

def test_tool_call_takes_arguments_as_dict_keywords_or_both_and_name_is_positional_only() -> None:
    assert tool_call("read_file", path="a.txt") == Step(tool_calls=[ToolCall("read_file", {"path": "a.txt"})])
    assert tool_call("f", {"a": 1, "b": 2}, b=3).tool_calls[0].arguments == {"a": 1, "b": 3}
    assert tool_call("rename", name="x").tool_calls == [ToolCall("rename", {"name": "x"})]
    assert tool_call("noop").tool_calls == [ToolCall("noop", {})]
    with pytest.raises(TypeError, match="non-empty string"):
        tool_call("")
    with pytest.raises(TypeError, match="arguments must be a dict"):
        tool_call("f", ["not", "a", "dict"])  # type: ignore[arg-type]


def test_tool_calls_flattens_parallel_calls_and_rejects_other_steps() -> None:
    usage = Usage(10, 2)
    step = tool_calls(tool_call("a", x=1), ToolCall("b", {"y": 2}), text="thinking", usage=usage)
    assert [(c.name, c.arguments) for c in step.tool_calls] == [("a", {"x": 1}), ("b", {"y": 2})]
    assert (step.text, step.usage) == ("thinking", usage)
    with pytest.raises(TypeError, match="argument 2"):
        tool_calls(tool_call("a"), reply("no"))
    with pytest.raises(ValueError, match="at least one"):
        tool_calls()


def test_reply_and_fail_build_neutral_steps() -> None:
    assert reply("done", usage=Usage(3, 1)) == Step(text="done", usage=Usage(3, 1))
    assert fail() == ProviderError(status=429, message="", retry_after=None)
    assert fail(503, retry_after=2.5, message="busy") == ProviderError(status=503, message="busy", retry_after=2.5)
    with pytest.raises(ValueError, match="400-599"):
        fail(200)
    with pytest.raises(TypeError, match="reply"):
        reply(42)  # type: ignore[arg-type]


def test_script_entries_are_validated_up_front() -> None:
    with pytest.raises(TypeError, match="script step 2 is a int"):
        ScriptedModel([reply("a"), 7])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="wrap a single step in a list"):
        ScriptedModel(reply("a"))  # type: ignore[arg-type]


# -- reactive scripts ---------------------------------------------------------------------------------------------------

def test_reactive_function_sees_messages_tools_and_last_tool_results() -> None:
    seen: list[ModelRequest] = []

    def brain(request: ModelRequest) -> Step | str:
        seen.append(request)
        if not request.last_tool_results:
            return tool_call("read_file", path=request.last_user_text.split()[-1])
        return f"The file says: {request.last_tool_results[0].content}"

    model = ScriptedModel(brain)
    client = openai_client(model)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Please read notes.txt"}]
    first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=[TOOL])
    call = first.choices[0].message.tool_calls[0]
    assert (call.function.name, json.loads(call.function.arguments)) == ("read_file", {"path": "notes.txt"})
    messages += [first.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": "hello"}]
    second = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=[TOOL])
    assert second.choices[0].message.content == "The file says: hello"

    assert [r.tool_names for r in seen] == [["read_file"], ["read_file"]]
    assert [m.role for m in seen[1].messages] == ["user", "assistant", "tool"]
    assert seen[1].last_tool_results[0].call_id == call.id
    assert model.requests == seen and model.remaining is None
    assert model.trajectory().tool_results[0].content == "hello"


def test_a_list_entry_may_be_a_function_of_the_request() -> None:
    model = ScriptedModel([lambda request: reply(f"you said {request.last_user_text!r}"), "plain string reply"])
    client = openai_client(model)
    assert ask(client, "ping").choices[0].message.content == "you said 'ping'"
    assert ask(client, "again").choices[0].message.content == "plain string reply"


def test_model_option_names_the_model_in_responses() -> None:
    model = ScriptedModel([reply("hi")], model="scripted-4")
    assert ask(openai_client(model), "hi").model == "scripted-4"
    assert model.trajectory().turns[0].model == "scripted-4"


def test_a_tool_the_request_did_not_offer_is_allowed_but_noted() -> None:
    model = ScriptedModel([tool_call("delete_everything")])
    completion = ask(openai_client(model), "hi", tools=[TOOL])
    assert completion.choices[0].message.tool_calls[0].function.name == "delete_everything"
    assert model.problems == []
    assert any("delete_everything" in note and "did not offer" in note for note in model.trajectory().notes)


# -- running out, errors ------------------------------------------------------------------------------------------------

def test_exhausted_script_answers_500_not_retried_and_records_the_problem() -> None:
    model = ScriptedModel([reply("only answer")])
    client = openai_client(model, max_retries=2)
    assert ask(client, "one").choices[0].message.content == "only answer"
    with pytest.raises(openai.InternalServerError, match="script exhausted after 1 responses") as info:
        ask(client, "two")
    assert info.value.status_code == 500
    assert model.calls == 2  # x-should-retry: false stopped the SDK's own retries
    assert model.problems == [
        "ScriptedModel: script exhausted after 1 responses: request 2 (POST /v1/chat/completions) found no step left"
    ]
    assert len(model.trajectory().turns) == 1


def test_function_returning_none_is_exhausted_and_a_raising_function_is_a_problem() -> None:
    answers = iter(["first"])
    model = ScriptedModel(lambda request: next(answers, None))
    client = openai_client(model)
    assert ask(client, "a").choices[0].message.content == "first"
    with pytest.raises(openai.InternalServerError, match="script exhausted after 1 responses"):
        ask(client, "b")
    assert "the script function returned None for request 2" in model.problems[0]

    def broken(request: ModelRequest) -> Step:
        raise KeyError("no such fixture")

    model = ScriptedModel(broken)
    with pytest.raises(openai.InternalServerError):
        ask(openai_client(model), "c")
    assert model.problems == [
        "ScriptedModel: request 1 (POST /v1/chat/completions): the script function raised KeyError: 'no such fixture'"
    ]


def test_fail_429_is_a_rate_limit_error_in_the_sdk() -> None:
    model = ScriptedModel([fail(429, retry_after=7)])
    with pytest.raises(openai.RateLimitError) as info:
        ask(openai_client(model), "hi")
    assert info.value.response.headers["retry-after"] == "7"
    assert model.problems == []  # a scripted failure is the test's intent, not a problem

    model = ScriptedModel([fail(429, message="slow down")])
    client = anthropic.Anthropic(api_key="test", http_client=httpx2.Client(transport=model), max_retries=0)
    with pytest.raises(anthropic.RateLimitError, match="slow down"):
        client.messages.create(model="claude-x", max_tokens=10, messages=[{"role": "user", "content": "hi"}])


def test_sdk_retries_a_scripted_rate_limit_and_succeeds_on_the_next_step() -> None:
    model = ScriptedModel([fail(429, retry_after=0.01), reply("after the retry")])
    completion = ask(openai_client(model, max_retries=2), "hi")
    assert completion.choices[0].message.content == "after the retry"
    assert model.calls == 2
    trajectory = model.trajectory()
    assert [turn.text for turn in trajectory.turns] == ["after the retry"]
    assert any("HTTP 429" in note for note in trajectory.notes)
    assert [exchange.status for exchange in model.exchanges] == [429, 200]
    with pytest.raises(openai.InternalServerError, match="script exhausted after 2 responses"):
        ask(openai_client(model), "one more")


def test_unknown_path_is_404_and_a_problem() -> None:
    model = ScriptedModel([reply("never")])
    response = httpx.Client(transport=model).post("https://api.openai.com/v1/embeddings", json={"input": "x"})
    assert response.status_code == 404
    assert "not a model API" in response.json()["error"]["message"]
    assert model.problems and "request 1 (POST /v1/embeddings)" in model.problems[0]
    assert model.remaining == 1


def test_undecodable_request_is_400_and_a_problem() -> None:
    model = ScriptedModel([reply("never")])
    response = httpx.Client(transport=model).post(CHAT_URL, content=b"{not json")
    assert response.status_code == 400
    assert "cannot decode the request" in model.problems[0]


# -- raw httpx, both flavours, streaming --------------------------------------------------------------------------------

@pytest.mark.parametrize("client_class", [httpx.Client, httpx2.Client], ids=["httpx", "httpx2"])
def test_raw_httpx_clients_of_both_flavours(client_class: type) -> None:
    model = ScriptedModel([tool_call("read_file", path="x"), reply("streamed answer")])
    with client_class(transport=model) as client:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [TOOL]}
        data = client.post(CHAT_URL, json=body).json()
        assert data["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "read_file"
        with client.stream("POST", CHAT_URL, json={**body, "stream": True}) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    text = "".join(
        choice["delta"].get("content") or ""
        for line in lines[:-1]
        for choice in json.loads(line[6:])["choices"]
    )
    assert text == "streamed answer"
    assert [turn.text for turn in model.trajectory().turns] == ["", "streamed answer"]


def test_async_httpx_client() -> None:
    model = ScriptedModel([reply("async hello")])

    async def main() -> Any:
        async with httpx.AsyncClient(transport=model) as client:
            return (await client.post(CHAT_URL, json={"model": "m", "messages": []})).json()

    assert asyncio.run(main())["choices"][0]["message"]["content"] == "async hello"


@pytest.mark.parametrize("stream", [False, True])
def test_gemini_generate_content_through_raw_httpx(stream: bool) -> None:
    model = ScriptedModel([tool_call("get_weather", city="Oslo"), reply("Cold.", usage=Usage(20, 2))])
    base = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash"
    url = f"{base}:streamGenerateContent?alt=sse" if stream else f"{base}:generateContent"
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "Weather in Oslo?"}]}]
    tools = [{"functionDeclarations": [{"name": "get_weather", "parameters": {"type": "object"}}]}]
    with httpx.Client(transport=model) as client:
        first = client.post(url, json={"contents": contents, "tools": tools})
        assert first.status_code == 200
        contents += [
            {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"result": "-3C"}}}]},
        ]
        assert client.post(url, json={"contents": contents, "tools": tools}).status_code == 200
    trajectory = model.trajectory()
    assert [(c.name, c.arguments) for c in trajectory.tool_calls] == [("get_weather", {"city": "Oslo"})]
    assert "-3C" in trajectory.tool_results[0].content
    assert trajectory.final_text == "Cold."
    assert trajectory.turns[-1].usage == Usage(20, 2)


# -- concurrency ------------------------------------------------------------------------------------------------------

def _echo(request: ModelRequest) -> Step:
    return reply(f"echo:{request.last_user_text}")


def test_many_threads_share_one_model_without_losing_or_duplicating_exchanges() -> None:
    model = ScriptedModel(_echo)
    client = openai_client(model)
    barrier = threading.Barrier(8)

    def worker(n: int) -> list[str]:
        barrier.wait()
        return [ask(client, f"{n}-{i}").choices[0].message.content for i in range(25)]

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = [a for batch in pool.map(worker, range(8)) for a in batch]
    expected = sorted(f"echo:{n}-{i}" for n in range(8) for i in range(25))
    assert sorted(answers) == expected
    exchanges = model.exchanges
    assert len(exchanges) == 200 and model.calls == 200
    assert sorted(json.loads(e.response_body)["choices"][0]["message"]["content"] for e in exchanges) == expected
    # Each recorded response answers the request recorded with it.
    for exchange in exchanges:
        sent = json.loads(exchange.request_body)["messages"][0]["content"]
        assert json.loads(exchange.response_body)["choices"][0]["message"]["content"] == f"echo:{sent}"


def test_many_asyncio_tasks_share_one_model_and_a_list_script_is_consumed_exactly_once() -> None:
    model = ScriptedModel([reply(f"step {n}") for n in range(100)])
    client = openai.AsyncOpenAI(api_key="test", http_client=httpx.AsyncClient(transport=model), max_retries=0)

    async def main() -> list[str]:
        async def one(n: int) -> str:
            completion = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": str(n)}]
            )
            return completion.choices[0].message.content or ""

        return await asyncio.gather(*(one(n) for n in range(100)))

    answers = asyncio.run(main())
    assert sorted(answers) == sorted(f"step {n}" for n in range(100))
    assert model.remaining == 0 and model.problems == []
    # Exchanges are recorded in the order the steps were taken.
    assert [json.loads(e.response_body)["choices"][0]["message"]["content"] for e in model.exchanges] == [
        f"step {n}" for n in range(100)
    ]


def test_async_script_function_in_the_async_path_and_a_clear_error_in_the_sync_one() -> None:
    import asyncio

    import httpx

    import trialrun as tr

    async def slow(request):
        await asyncio.sleep(0.01)
        return tr.reply("late but fine")

    async def main() -> str:
        model = tr.ScriptedModel(slow)
        async with httpx.AsyncClient(transport=model) as client:
            reply = await client.post("https://api.openai.com/v1/chat/completions",
                                      json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        return reply.json()["choices"][0]["message"]["content"]

    assert asyncio.run(main()) == "late but fine"
    model = tr.ScriptedModel(slow)
    with httpx.Client(transport=model) as client:
        reply = client.post("https://api.openai.com/v1/chat/completions", json={"model": "m", "messages": []})
    assert reply.status_code == 500
    assert "use an async client" in model.problems[0]
