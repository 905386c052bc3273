"""Cassettes: recording scrubs credentials and replays (done-when 4), misses say what differed, files fail clearly."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import yaml

from trialrun._cassette_io import CassetteFileError, load_exchanges, save_exchanges
from trialrun.models import Cassette, ScriptedModel, read_trajectory, reply, tool_call
from trialrun.wire import Exchange

SDK_KEY = "sk-proj-AgentKey0123456789abcdefXYZ"
LEAKED_KEY = "sk-ant-api03-LeakedInBody0123456789abcdef"
GOOGLE_KEY = "AIzaSyA1234567890abcdefghijklmnopqrstuv"
CHAT_URL = "https://api.openai.com/v1/chat/completions"


def completion(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}, **extra,
    }


def fake_provider(request: httpx.Request) -> httpx.Response:
    """A provider that echoes a key into its body and sets a cookie: everything recording must scrub."""
    asked = json.loads(request.content)["messages"][-1]["content"]
    headers = {"set-cookie": "session=abc123secretcookie", "openai-organization": "org-private", "x-request-id": "r1"}
    return httpx.Response(200, json=completion(f"answer to {asked}; debug key {LEAKED_KEY}"), headers=headers)


def sdk(transport: Any, *, key: str = SDK_KEY, max_retries: int = 0) -> openai.OpenAI:
    return openai.OpenAI(api_key=key, http_client=httpx.Client(transport=transport), max_retries=max_retries)


def ask(client: openai.OpenAI, content: str, **kwargs: Any) -> Any:
    return client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": content}], **kwargs)


# -- recording ----------------------------------------------------------------------------------------------------------

def test_recording_scrubs_credentials_from_headers_bodies_and_urls_and_the_file_replays(tmp_path: Path) -> None:
    path = tmp_path / "cassettes" / "notes.yaml"
    recorder = Cassette(path, mode="record", upstream=httpx.MockTransport(fake_provider))
    client = sdk(recorder)
    first = ask(client, f"my key is {SDK_KEY}, hello")
    assert LEAKED_KEY in first.choices[0].message.content  # the agent saw the live answer unchanged
    assert len(load_exchanges(path)) == 1  # written after each exchange
    ask(client, "second question")
    raw = httpx.Client(transport=recorder).post(
        f"https://generativelanguage.googleapis.com/v1beta/models/g:generateContent?key={GOOGLE_KEY}",
        json={"messages": [{"role": "user", "content": "third"}]},
        headers={"x-goog-api-key": GOOGLE_KEY},
    )
    assert raw.status_code == 200

    text = path.read_text()
    for secret in (SDK_KEY, LEAKED_KEY, GOOGLE_KEY, "abc123secretcookie", "org-private"):
        assert secret not in text
    data = yaml.safe_load(text)
    assert data["version"] == 1 and len(data["exchanges"]) == 3
    first_exchange = data["exchanges"][0]
    assert first_exchange["request"]["headers"]["authorization"] == "REDACTED"
    assert first_exchange["response"]["headers"]["set-cookie"] == "REDACTED"
    assert first_exchange["request"]["body"]["messages"][0]["content"] == "my key is REDACTED, hello"
    assert first_exchange["response"]["body"]["choices"][0]["message"]["content"].endswith("debug key REDACTED")
    assert data["exchanges"][2]["request"]["url"].endswith("?key=REDACTED")
    assert data["exchanges"][2]["request"]["headers"]["x-goog-api-key"] == "REDACTED"
    assert all(secret not in json.dumps([e.__repr__() for e in recorder.exchanges]) for secret in (SDK_KEY, LEAKED_KEY))

    # The written cassette replays: the same agent, no upstream, the recorded (scrubbed) answers.
    replayer = Cassette(path)
    client = sdk(replayer, key="sk-a-different-key-for-replay-000")
    assert ask(client, "my key is REDACTED, hello").choices[0].message.content.startswith("answer to my key is")
    assert ask(client, "second question").choices[0].message.content.startswith("answer to second question")
    assert replayer.problems == [] and replayer.unused == 1


def test_recording_a_stream_tees_it_and_the_stream_replays(tmp_path: Path) -> None:
    chunks = [
        b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
        b'"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}\n\n',
        b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
        b'"delta":{"content":"lo"},"finish_reason":"stop"}]}\n\n',
        b"data: [DONE]\n\n",
    ]
    served: list[int] = []

    def streaming_provider(request: httpx.Request) -> httpx.Response:
        def body() -> Any:
            for number, chunk in enumerate(chunks):
                served.append(number)
                yield chunk

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    path = tmp_path / "stream.json"
    recorder = Cassette(path, mode="record", upstream=httpx.MockTransport(streaming_provider))
    stream = ask(sdk(recorder), "hi", stream=True)
    first = next(iter(stream))
    assert first.choices[0].delta.content == "Hel"
    assert served == [0] and not path.exists()  # not buffered: the rest is not read yet, nothing recorded yet
    assert "".join(c.choices[0].delta.content or "" for c in stream) == "lo"
    assert path.exists()

    [recorded] = load_exchanges(path)
    assert recorded.streamed and recorded.response_body == b"".join(chunks)
    replayed = ask(sdk(Cassette(path)), "hi", stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in replayed) == "Hello"
    assert read_trajectory(path).final_text == "Hello"


def test_recording_through_an_async_client(tmp_path: Path) -> None:
    path = tmp_path / "async.yaml"
    recorder = Cassette(path, mode="record", upstream=httpx.MockTransport(fake_provider))
    client = openai.AsyncOpenAI(api_key=SDK_KEY, http_client=httpx.AsyncClient(transport=recorder), max_retries=0)

    async def main() -> list[str]:
        results = await asyncio.gather(*(
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"q{n}"}]) for n in range(5)
        ))
        return [r.choices[0].message.content for r in results]

    answers = asyncio.run(main())
    assert [a.split(";")[0] for a in answers] == [f"answer to q{n}" for n in range(5)]
    assert len(load_exchanges(path)) == 5
    assert SDK_KEY not in path.read_text()


def test_recording_a_scripted_upstream_gives_a_cassette_with_the_same_trajectory(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    script = ScriptedModel([tool_call("read_file", path="a.txt"), reply("done")])
    recorder = Cassette(path, mode="record", upstream=script)
    client = sdk(recorder)
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "read a.txt"}]
    first = client.chat.completions.create(model="m", messages=messages, tools=tools)
    call = first.choices[0].message.tool_calls[0]
    messages += [first.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": "contents of a"}]
    client.chat.completions.create(model="m", messages=messages, tools=tools)
    from_file = read_trajectory(path)
    assert [(c.name, c.arguments) for c in from_file.tool_calls] == [("read_file", {"path": "a.txt"})]
    assert from_file.tool_results[0].content == "contents of a"
    assert from_file.final_text == "done"
    assert recorder.trajectory().turns == from_file.turns == script.trajectory().turns


def test_live_mode_passes_through_without_writing(tmp_path: Path) -> None:
    path = tmp_path / "live.yaml"
    live = Cassette(path, mode="live", upstream=httpx.MockTransport(fake_provider))
    assert ask(sdk(live), "hi").choices[0].message.content.startswith("answer to hi")
    assert not path.exists()
    assert len(live.exchanges) == 1 and live.trajectory().final_text.startswith("answer to hi")


# -- replay matching ------------------------------------------------------------------------------------------------------

def _cassette(tmp_path: Path, *requests_and_answers: tuple[dict[str, Any], str], name: str = "c.yaml") -> Path:
    exchanges = [
        Exchange("POST", CHAT_URL, {"content-type": "application/json"}, json.dumps(body).encode(), 200,
                 {"content-type": "application/json"}, json.dumps(completion(answer)).encode())
        for body, answer in requests_and_answers
    ]
    path = tmp_path / name
    save_exchanges(path, exchanges)
    return path


def _body(*contents: str, **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": c} for c in contents], **extra}


def test_identical_requests_take_recordings_in_recorded_order(tmp_path: Path) -> None:
    path = _cassette(tmp_path, (_body("same"), "first"), (_body("other"), "x"), (_body("same"), "second"))
    client = sdk(Cassette(path))
    assert [ask(client, "same").choices[0].message.content for _ in range(2)] == ["first", "second"]


def test_ignored_fields_do_not_affect_matching(tmp_path: Path) -> None:
    path = _cassette(tmp_path, (_body("a", user="alice", metadata={"run": "1"}, temperature=0.5), "ok"))
    client = sdk(Cassette(path))
    assert ask(client, "a", user="bob", metadata={"run": "2"}, temperature=0.5).choices[0].message.content == "ok"
    strict = Cassette(path, ignore_fields=())
    with pytest.raises(openai.InternalServerError):
        ask(sdk(strict), "a", user="bob", metadata={"run": "1"}, temperature=0.5)
    assert "body.user: recorded 'alice' != sent 'bob'" in strict.problems[0]
    loose = Cassette(path, ignore_fields=("metadata", "user", "temperature"))
    assert ask(sdk(loose), "a", temperature=0.9).choices[0].message.content == "ok"


def test_a_miss_names_the_cassette_request_number_and_first_differing_field(tmp_path: Path) -> None:
    path = _cassette(tmp_path, (_body("hello"), "hi"), (_body("hello", "recorded turn"), "bye"))
    cassette = Cassette(path)
    client = sdk(cassette, max_retries=2)
    ask(client, "hello")
    with pytest.raises(openai.InternalServerError) as info:
        ask(client, "hello", )  # the agent repeats itself instead of sending its second turn
    message = cassette.problems[0]
    assert message.startswith(f"cassette {path}: request 2 (POST /v1/chat/completions) matches no recording")
    assert "exchange 2: body.messages: recorded 2 items != sent 1 items" in message
    assert f"Cassette({str(path)!r}, mode=\"record\")" in message and "--model record:DIR" in message
    assert message in str(info.value)
    assert len(cassette.exchanges) == 2  # not retried by the SDK

    cassette = Cassette(path)
    client = sdk(cassette)
    ask(client, "hello")
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="gpt-4o-mini", messages=[
            {"role": "user", "content": "hello"}, {"role": "user", "content": "sent turn"}])
    assert "body.messages[1].content: recorded 'recorded turn' != sent 'sent turn'" in cassette.problems[0]


def test_a_miss_on_path_and_when_every_recording_is_used(tmp_path: Path) -> None:
    path = _cassette(tmp_path, (_body("hello"), "hi"))
    cassette = Cassette(path)
    client = sdk(cassette)
    with pytest.raises(openai.InternalServerError):
        client.responses.create(model="gpt-4o-mini", input="hello")
    assert "path: recorded '/v1/chat/completions' != sent '/v1/responses'" in cassette.problems[0]
    ask(client, "hello")
    with pytest.raises(openai.InternalServerError):
        ask(client, "hello")
    assert "all 1 recordings were already replayed" in cassette.problems[1]
    assert "request 3" in cassette.problems[1]


def test_replay_drops_wire_encoding_headers_because_bodies_are_stored_decoded(tmp_path: Path) -> None:
    path = tmp_path / "gz.yaml"
    save_exchanges(path, [Exchange(
        "POST", CHAT_URL, {}, json.dumps(_body("x")).encode(), 200,
        {"content-type": "application/json", "content-encoding": "gzip", "content-length": "3",
         "transfer-encoding": "chunked"},
        json.dumps(completion("plain")).encode(),
    )])
    assert ask(sdk(Cassette(path)), "x").choices[0].message.content == "plain"


# -- files ----------------------------------------------------------------------------------------------------------------

def test_corrupt_and_missing_cassette_files_fail_with_the_file_name(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.yaml"
    corrupt.write_text("interactions:\n- request: [unclosed\n")
    with pytest.raises(CassetteFileError, match=r"corrupt\.yaml: not valid YAML"):
        Cassette(corrupt)
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"exchanges": [{"request": {"method": "POST"}}]}')
    with pytest.raises(CassetteFileError, match=r"wrong\.json: exchange 1: request has no 'url'"):
        Cassette(wrong)
    missing = tmp_path / "missing.yaml"
    with pytest.raises(CassetteFileError, match=r"missing\.yaml: cassette file not found; record it first") as info:
        Cassette(missing)
    assert 'mode="record"' in str(info.value)
    with pytest.raises(ValueError, match="mode must be one of replay, record, live"):
        Cassette(missing, mode="rewind")  # type: ignore[arg-type]
