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

from trialrun.models import Cassette, ScriptedModel, read_trajectory, reply, tool_call
from trialrun.models._cassette_io import CassetteFileError, load_exchanges, save_exchanges
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
    assert "set-cookie" not in first_exchange["response"]["headers"]  # not on the response header allow-list
    assert first_exchange["request"]["body"]["messages"][0]["content"] == "my key is REDACTED, hello"
    assert first_exchange["response"]["body"]["choices"][0]["message"]["content"].endswith("debug key REDACTED")
    assert data["exchanges"][2]["request"]["url"].endswith("?key=REDACTED")
    assert data["exchanges"][2]["request"]["headers"]["x-goog-api-key"] == "REDACTED"
    assert all(secret not in json.dumps([e.__repr__() for e in recorder.exchanges]) for secret in (SDK_KEY, LEAKED_KEY))

    # The written cassette replays: the same agent sends the same ORIGINAL (unscrubbed) prompt, no upstream, and gets
    # the recorded (scrubbed) answers: the request is scrubbed with the recording rules before it is matched.
    replayer = Cassette(path)
    client = sdk(replayer, key="sk-a-different-key-for-replay-000")
    assert ask(client, f"my key is {SDK_KEY}, hello").choices[0].message.content == (
        "answer to my key is REDACTED, hello; debug key REDACTED"
    )
    assert ask(client, "second question").choices[0].message.content.startswith("answer to second question")
    assert replayer.problems == [] and replayer.unused == 1


def test_a_key_the_agent_echoes_replays_when_only_its_header_makes_it_a_secret(tmp_path: Path) -> None:
    """A key that is not key-shaped is scrubbed because the request's auth header carries it; replay applies the
    same rule to the request it receives, so the agent sending the same prompt with the same key still matches."""
    plain_key = "plain-team-token-42"
    path = tmp_path / "plain.yaml"
    ask(sdk(Cassette(path, mode="record", upstream=httpx.MockTransport(fake_provider)), key=plain_key),
        f"token {plain_key} please")
    assert plain_key not in path.read_text()
    assert load_exchanges(path)[0].request_body.count(b"token REDACTED please") == 1

    replayer = Cassette(path)
    answer = ask(sdk(replayer, key=plain_key), f"token {plain_key} please").choices[0].message.content
    assert answer.startswith("answer to token REDACTED please") and replayer.problems == []
    # Once a header has carried it, the value is a secret of this process (`_scrub.add_secret`): sent by an agent
    # with another key, it is still scrubbed, so the request still matches, and the key never reaches a message.
    other = Cassette(path)
    answer = ask(sdk(other, key="sk-some-other-key-0123456789abcdef"), f"token {plain_key} please")
    assert answer.choices[0].message.content.startswith("answer to token REDACTED please") and other.problems == []
    # A value no header carried and nothing registered is just text: sent as is, and the miss says where it differs.
    unknown = Cassette(path)
    with pytest.raises(openai.InternalServerError):
        ask(sdk(unknown, key="sk-some-other-key-0123456789abcdef"), "token plain-team-token-43 please")
    assert "body.messages[0].content: recorded 'token REDACTED please' != sent 'token plain-team-token-43 please'" in (
        unknown.problems[0]
    )


def test_a_miss_message_never_shows_a_key_the_agent_sent(tmp_path: Path) -> None:
    path = _cassette(tmp_path, (_body("hello"), "hi"))
    cassette = Cassette(path)
    with pytest.raises(openai.InternalServerError):
        ask(sdk(cassette), f"my key is {SDK_KEY}")
    assert "body.messages[0].content: recorded 'hello' != sent 'my key is REDACTED'" in cassette.problems[0]
    assert SDK_KEY not in cassette.problems[0]


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


_OWN_OK = "{url: https://api.openai.com/v1/chat/completions}"
MALFORMED_FILES = [
    ("own-headers-list", f"exchanges:\n- request: {{url: {CHAT_URL}, headers: [1, 2]}}\n",
     "exchange 1: request.headers is a list, expected a mapping"),
    ("own-header-value-mapping", f"exchanges:\n- request: {{url: {CHAT_URL}, headers: {{x-a: {{b: 1}}}}}}\n",
     "exchange 1: request.headers['x-a'] is a mapping, expected text"),
    ("own-response-list", f"exchanges:\n- request: {_OWN_OK}\n  response: [1]\n",
     "exchange 1: response is a list, expected a mapping"),
    ("own-status-text", f"exchanges:\n- request: {_OWN_OK}\n  response: {{status: abc}}\n",
     "exchange 1: response.status is text ('abc'), expected an HTTP status code such as 200"),
    ("own-status-out-of-range", f"exchanges:\n- request: {_OWN_OK}\n  response: {{status: 20}}\n",
     "exchange 1: response.status is 20, expected an HTTP status code from 100 to 599"),
    ("own-url-list", "exchanges:\n- request: {url: [1]}\n", "exchange 1: request.url is a list, expected text"),
    ("own-response-headers-text", f"exchanges:\n- request: {_OWN_OK}\n  response: {{headers: nope}}\n",
     "exchange 1: response.headers is text ('nope'), expected a mapping"),
    ("own-request-text", "exchanges:\n- request: hello\n", "exchange 1: request is text ('hello'), expected a mapping"),
    ("own-entry-list", f"exchanges:\n- request: {_OWN_OK}\n- [1]\n",
     "exchange 2 is a list, expected a mapping with 'request' and 'response'"),
    ("vcr-headers-number", f"interactions:\n- request: {{uri: {CHAT_URL}, headers: 5}}\n",
     "exchange 1: request.headers is a number (5), expected a mapping"),
    ("vcr-header-values-mappings", f"interactions:\n- request: {{uri: {CHAT_URL}, headers: {{a: [{{b: 1}}]}}}}\n",
     "exchange 1: request.headers['a'] is a mapping, expected text"),
    ("vcr-response-list", f"interactions:\n- request: {{uri: {CHAT_URL}}}\n  response: [1]\n",
     "exchange 1: response is a list, expected a mapping"),
    ("vcr-status-code-text", f"interactions:\n- request: {{uri: {CHAT_URL}}}\n  response: {{status: {{code: abc}}}}\n",
     "exchange 1: response.status.code is text ('abc'), expected an HTTP status code such as 200"),
    ("vcr-response-headers-list",
     f"interactions:\n- request: {{uri: {CHAT_URL}}}\n  response: {{status: {{code: 200}}, headers: [x]}}\n",
     "exchange 1: response.headers is a list, expected a mapping"),
    ("vcr-no-uri", "interactions:\n- request: {method: POST}\n", "exchange 1: request has no 'uri'"),
    ("exchanges-not-a-list", "exchanges: {a: 1}\n", "the list of exchanges is a mapping, expected a list"),
]


@pytest.mark.parametrize(("text", "message"), [pytest.param(*row[1:], id=row[0]) for row in MALFORMED_FILES])
def test_a_malformed_cassette_names_the_file_exchange_and_field(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    for load in (Cassette, read_trajectory):  # replaying it and reading its trajectory fail the same way
        with pytest.raises(CassetteFileError) as info:
            load(path)
        assert str(info.value) == f"{path}: {message}"


def test_yaml_scalars_that_are_not_text_are_read_as_the_text_they_show(tmp_path: Path) -> None:
    """YAML reads unquoted 200, true and 2024-01-01 as a number, a boolean and a date: fine where text is expected."""
    path = tmp_path / "scalars.yaml"
    path.write_text(
        f"exchanges:\n- request: {{url: {CHAT_URL}, headers: {{x-retry: 2, x-flag: true}}, body: {{day: 2024-01-01}}}}\n"
        "  response: {status: '201', headers: {x-n: 1.5}}\n"
    )
    [exchange] = load_exchanges(path)
    assert exchange.request_headers == {"x-retry": "2", "x-flag": "true"}
    assert json.loads(exchange.request_body) == {"day": "2024-01-01"}
    assert (exchange.status, exchange.response_headers) == (201, {"x-n": "1.5"})


# -- the default upstream: LiveModel's timeout and retries ------------------------------------------------------------


class _FlakyProvider:
    """Stands where the real network is (httpx's own transports): a 429 asking for no wait, then the answer."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if len(self.requests) == 1:
            return httpx.Response(429, headers={"retry-after": "0"}, json={"error": {"message": "slow down"}})
        return fake_provider(request)


@pytest.fixture
def network(monkeypatch: pytest.MonkeyPatch) -> _FlakyProvider:
    """Replace httpx's real transports, which a cassette with no `upstream=` ends in, by the flaky provider."""
    provider = _FlakyProvider()
    monkeypatch.setattr(httpx, "HTTPTransport", lambda **kwargs: httpx.MockTransport(provider))
    monkeypatch.setattr(httpx, "AsyncHTTPTransport", lambda **kwargs: httpx.MockTransport(provider))
    return provider


@pytest.mark.parametrize("mode", ["record", "live"])
def test_without_an_upstream_a_cassette_retries_429_and_sets_a_timeout(
    tmp_path: Path, network: _FlakyProvider, mode: str
) -> None:
    path = tmp_path / f"{mode}.yaml"
    cassette = Cassette(path, mode=mode)  # type: ignore[arg-type]
    answer = ask(sdk(cassette, max_retries=0), "hi")  # the SDK does not retry: the cassette's upstream does
    assert answer.choices[0].message.content.startswith("answer to hi")
    assert len(network.requests) == 2
    assert all(str(r.url) == CHAT_URL for r in network.requests)  # the request's own URL...
    assert network.requests[1].headers["authorization"] == f"Bearer {SDK_KEY}"  # ...and its own key
    assert network.requests[1].extensions["timeout"] == httpx.Timeout(60.0).as_dict()
    assert [e.status for e in cassette.exchanges] == [200]  # only the final answer is the exchange
    if mode == "record":
        assert [e.status for e in load_exchanges(path)] == [200]
    else:
        assert not path.exists()
    cassette.close()


def test_without_an_upstream_an_async_recording_retries_too(tmp_path: Path, network: _FlakyProvider) -> None:
    path = tmp_path / "async.yaml"
    cassette = Cassette(path, mode="record")
    client = openai.AsyncOpenAI(api_key=SDK_KEY, http_client=httpx.AsyncClient(transport=cassette), max_retries=0)

    async def main() -> str:
        completion = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
        await cassette.aclose()
        return completion.choices[0].message.content

    assert asyncio.run(main()).startswith("answer to q")
    assert len(network.requests) == 2 and [e.status for e in load_exchanges(path)] == [200]


def test_a_given_upstream_is_used_as_is(tmp_path: Path) -> None:
    """An explicit upstream is not wrapped in a second retry loop (a LiveModel upstream already retries)."""
    provider = _FlakyProvider()
    cassette = Cassette(tmp_path / "given.yaml", mode="live", upstream=httpx.MockTransport(provider))
    with pytest.raises(openai.RateLimitError):
        ask(sdk(cassette, max_retries=0), "hi")
    assert len(provider.requests) == 1


# -- bodies that are not JSON -----------------------------------------------------------------------------------------
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) + b"\xff\xfe\x00\x80"  # not UTF-8, NULs included
DOWNLOAD = bytes(reversed(range(256))) * 3 + b"\xc3\x28"  # an invalid UTF-8 sequence at the end


def file_provider(request: httpx.Request) -> httpx.Response:
    """An uploads API: stores a binary body, hands back bytes of its own, answers plain text and a JSON string."""
    if request.method == "POST" and request.url.path == "/v1/files":
        assert request.content == PNG, "the provider must receive the upload unchanged"
        return httpx.Response(200, json={"id": "file-1", "bytes": len(request.content)})
    if request.url.path == "/v1/files/file-1/content":
        return httpx.Response(200, content=DOWNLOAD, headers={"content-type": "application/octet-stream"})
    if request.url.path == "/v1/status":
        return httpx.Response(200, content=b'"ok"', headers={"content-type": "application/json"})
    return httpx.Response(200, text="caf\u00e9 plain text\r\n", headers={"content-type": "text/plain"})


def _use_the_files_api(transport: Any) -> list[bytes]:
    with httpx.Client(transport=transport, base_url="https://api.openai.com") as client:
        uploaded = client.post("/v1/files", content=PNG, headers={"content-type": "application/octet-stream"})
        downloaded = client.get("/v1/files/file-1/content")
        status = client.get("/v1/status")
        text = client.get("/v1/readme")
    return [uploaded.content, downloaded.content, status.content, text.content]


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_binary_uploads_and_downloads_replay_byte_for_byte(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"files{suffix}"
    live = _use_the_files_api(Cassette(path, mode="record", upstream=httpx.MockTransport(file_provider)))
    assert live[1] == DOWNLOAD

    stored = load_exchanges(path)
    assert [e.request_body for e in stored] == [PNG, b"", b"", b""]
    assert [e.response_body for e in stored][1:] == [DOWNLOAD, b'"ok"', "caf\u00e9 plain text\r\n".encode()]
    raw = path.read_text()
    data = json.loads(raw) if suffix == ".json" else yaml.safe_load(raw)
    upload, download, status, text = data["exchanges"]
    assert set(upload["request"]) >= {"body_base64"} and "body" not in upload["request"]
    assert download["response"]["body_base64"] and upload["response"]["body"] == {"id": "file-1", "bytes": len(PNG)}
    assert status["response"]["body_text"] == '"ok"' and text["response"]["body_text"] == "caf\u00e9 plain text\r\n"

    replay = Cassette(path)  # the binary upload must also MATCH its recording to be answered
    assert _use_the_files_api(replay) == live
    assert replay.problems == []


def test_a_broken_base64_body_names_the_file_exchange_and_field(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "exchanges": [
        {"request": {"method": "GET", "url": CHAT_URL}, "response": {"status": 200, "body_base64": "AAAA"}},
        {"request": {"method": "POST", "url": CHAT_URL, "body_base64": "not base64!"}, "response": {"status": 200}},
    ]}))
    with pytest.raises(CassetteFileError, match=r"broken\.yaml: exchange 2: request\.body_base64 is not valid base64"):
        load_exchanges(path)
