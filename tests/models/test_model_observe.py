"""ObservedTransport: records any transport's traffic, teeing streams without buffering them, in arrival order."""

from __future__ import annotations

import asyncio
import gzip
import json
from typing import Any

import anthropic
import httpx
import httpx2
import pytest

from trialrun.models import ObservedTransport, ScriptedModel, observe, reply

URL = "https://api.openai.com/v1/chat/completions"
CHUNKS = [
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
    b'"delta":{"content":"Hi "},"finish_reason":null}]}\n\n',
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
    b'"delta":{"content":"there"},"finish_reason":"stop"}]}\n\n',
    b"data: [DONE]\n\n",
]
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


def test_json_exchanges_are_recorded_with_credentials_redacted() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"echo": json.loads(request.content)})

    observed = ObservedTransport(httpx.MockTransport(handler))
    with httpx.Client(transport=observed) as client:
        response = client.post(URL, json={"a": 1}, headers={"authorization": "Bearer sk-secret-value-123456"})
    assert response.json() == {"echo": {"a": 1}}
    [exchange] = observed.exchanges
    assert (exchange.method, exchange.url, exchange.status) == ("POST", URL, 200)
    assert json.loads(exchange.request_body) == {"a": 1}
    assert json.loads(exchange.response_body) == {"echo": {"a": 1}}
    assert exchange.request_headers["authorization"] == "REDACTED"


def test_a_stream_is_teed_as_read_and_recorded_when_it_ends() -> None:
    served: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        def body() -> Any:
            for number, chunk in enumerate(CHUNKS):
                served.append(number)
                yield chunk

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    observed = ObservedTransport(httpx.MockTransport(handler))
    with httpx.Client(transport=observed) as client, client.stream("POST", URL, json=BODY) as response:
        iterator = response.iter_bytes()
        assert next(iterator) == CHUNKS[0]
        assert served == [0] and observed.exchanges == []  # not buffered, not yet recorded
        rest = b"".join(iterator)
    assert rest == b"".join(CHUNKS[1:])
    [exchange] = observed.exchanges
    assert exchange.streamed and exchange.response_body == b"".join(CHUNKS)
    assert observed.trajectory().final_text == "Hi there"


def test_a_stream_closed_early_records_what_was_read() -> None:
    observed = ObservedTransport(httpx.MockTransport(
        lambda request: httpx.Response(200, headers={"content-type": "text/event-stream"}, content=iter(CHUNKS))
    ))
    with httpx.Client(transport=observed) as client, client.stream("POST", URL, json=BODY) as response:
        next(response.iter_bytes())
    [exchange] = observed.exchanges
    assert exchange.response_body == CHUNKS[0]


def test_compressed_streams_are_recorded_decoded() -> None:
    compressed = gzip.compress(b"".join(CHUNKS))
    observed = ObservedTransport(httpx.MockTransport(lambda request: httpx.Response(
        200,
        headers={"content-type": "text/event-stream", "content-encoding": "gzip"},
        content=iter([compressed[:10], compressed[10:]]),
    )))
    with httpx.Client(transport=observed) as client:
        assert client.post(URL, json=BODY).content == b"".join(CHUNKS)
    [exchange] = observed.exchanges
    assert exchange.response_body == b"".join(CHUNKS)
    assert "content-encoding" not in exchange.response_headers
    assert observed.trajectory().final_text == "Hi there"


def test_exchanges_keep_arrival_order_when_streams_finish_out_of_order() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        tag = json.loads(request.content)["tag"].encode()
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=iter([b"data: " + tag + b"\n\n"]))

    observed = ObservedTransport(httpx.MockTransport(handler))
    with httpx.Client(transport=observed) as client:
        first = client.send(client.build_request("POST", URL, json={"tag": "first"}), stream=True)
        second = client.send(client.build_request("POST", URL, json={"tag": "second"}), stream=True)
        second.read()
        second.close()
        assert [json.loads(e.request_body)["tag"] for e in observed.exchanges] == ["second"]
        first.read()
        first.close()
    assert [json.loads(e.request_body)["tag"] for e in observed.exchanges] == ["first", "second"]


def test_async_inner_transport() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        async def body() -> Any:
            for chunk in CHUNKS:
                yield chunk

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    observed = ObservedTransport(httpx.MockTransport(handler))

    async def main() -> bytes:
        async with httpx.AsyncClient(transport=observed) as client:
            async with client.stream("POST", URL, json=BODY) as response:
                return b"".join([chunk async for chunk in response.aiter_bytes()])

    assert asyncio.run(main()) == b"".join(CHUNKS)
    assert observed.trajectory().final_text == "Hi there"


def test_an_httpx_transport_is_bridged_for_the_sdks_httpx2_clients() -> None:
    events = [
        {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "c",
                                              "content": [], "stop_reason": None,
                                              "usage": {"input_tokens": 5, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "bridged"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]
    stream = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]
    observed = ObservedTransport(httpx.MockTransport(
        lambda request: httpx.Response(200, headers={"content-type": "text/event-stream"}, content=iter(stream))
    ))
    client = anthropic.Anthropic(api_key="test", http_client=httpx2.Client(transport=observed), max_retries=0)
    with client.messages.stream(model="c", max_tokens=5, messages=[{"role": "user", "content": "hi"}]) as s:
        assert s.get_final_text() == "bridged"
    assert observed.trajectory().final_text == "bridged"


def test_observe_wraps_only_what_does_not_record_already() -> None:
    scripted = ScriptedModel([reply("x")])
    assert observe(scripted) is scripted
    mock = httpx.MockTransport(lambda request: httpx.Response(204))
    wrapped = observe(mock)
    assert isinstance(wrapped, ObservedTransport) and wrapped.inner is mock
    with pytest.raises(TypeError, match="wraps an httpx transport"):
        ObservedTransport(object())
