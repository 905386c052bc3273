"""LiveModel: URL rewriting, key injection, timeouts, and retries that honour Retry-After with a cap (no waiting)."""

from __future__ import annotations

import asyncio
import email.utils
import json
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from trialrun.models import LiveModel
from trialrun.models.live import _join_path

REAL_KEY = "sk-real-key-0123456789abcdefghij"


def ok(text: str = "live answer") -> httpx.Response:
    return httpx.Response(200, json={
        "id": "chatcmpl-live", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6},
    })


class Provider:
    """A MockTransport handler that answers from a queue and keeps every request it saw."""

    def __init__(self, *answers: httpx.Response | Exception) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def live(provider: Provider, base_url: str = "https://api.openai.com/v1", **kwargs: Any) -> tuple[LiveModel, list[float]]:
    model = LiveModel(base_url, api_key=kwargs.pop("api_key", REAL_KEY), transport=httpx.MockTransport(provider),
                      **kwargs)
    waits: list[float] = []
    model._sleep = waits.append  # type: ignore[method-assign]
    model._rand = lambda: 0.0  # the least wait of each jittered window (test_retry_jitter.py covers the spread)

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)

    model._async_sleep = fake_sleep  # type: ignore[method-assign]
    return model, waits


def sdk(model: LiveModel, max_retries: int = 0) -> openai.OpenAI:
    # The agent keeps its dummy key and default base URL; LiveModel supplies the real ones.
    return openai.OpenAI(api_key="dummy", http_client=httpx.Client(transport=model), max_retries=max_retries)


def ask(client: openai.OpenAI) -> Any:
    return client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])


@pytest.mark.parametrize("base, path, expected", [
    ("/v1", "/v1/chat/completions", "/v1/chat/completions"),
    ("/openai/v1", "/v1/chat/completions", "/openai/v1/chat/completions"),
    ("", "/v1/messages", "/v1/messages"),
    ("/v1", "/chat/completions", "/v1/chat/completions"),
    ("/proxy", "/v1beta/models/g:generateContent", "/proxy/v1beta/models/g:generateContent"),
])
def test_join_path_keeps_the_api_path_under_the_base_path(base: str, path: str, expected: str) -> None:
    assert _join_path(base, path) == expected


def test_forwards_to_the_base_url_with_the_real_key_and_timeout() -> None:
    provider = Provider(ok())
    model, _ = live(provider, "https://gateway.example.com/openai/v1", timeout=12.5)
    completion = ask(sdk(model))
    assert completion.choices[0].message.content == "live answer"
    [sent] = provider.requests
    assert str(sent.url) == "https://gateway.example.com/openai/v1/chat/completions"
    assert sent.headers["host"] == "gateway.example.com"
    assert sent.headers["authorization"] == f"Bearer {REAL_KEY}"
    assert sent.extensions["timeout"] == {"connect": 12.5, "read": 12.5, "write": 12.5, "pool": 12.5}
    assert json.loads(sent.content)["messages"] == [{"role": "user", "content": "hi"}]
    # Recorded, with the key redacted.
    [exchange] = model.exchanges
    assert exchange.request_headers["authorization"] == "REDACTED"
    assert model.trajectory().final_text == "live answer"


def test_anthropic_hosts_get_x_api_key_from_the_named_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_ANTHROPIC_KEY", "sk-ant-real-key-abcdefghijklmnop")
    provider = Provider(httpx.Response(200, json={
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "hello from claude"}], "usage": {"input_tokens": 3, "output_tokens": 4},
    }))
    model = LiveModel("https://api.anthropic.com", "MY_ANTHROPIC_KEY", transport=httpx.MockTransport(provider))
    client = anthropic.Anthropic(api_key="dummy", http_client=httpx2.Client(transport=model), max_retries=0)
    message = client.messages.create(model="claude-x", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    assert message.content[0].text == "hello from claude"
    [sent] = provider.requests
    assert str(sent.url) == "https://api.anthropic.com/v1/messages"
    assert sent.headers["x-api-key"] == "sk-ant-real-key-abcdefghijklmnop"
    assert "authorization" not in sent.headers
    assert sent.headers["anthropic-version"]  # the SDK's own headers pass through


def test_auth_header_override_and_missing_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    provider = Provider(ok())
    model, _ = live(provider, "https://my-azure.example.com/openai", auth_header="api-key")
    ask(sdk(model))
    assert provider.requests[0].headers["api-key"] == REAL_KEY
    assert "authorization" not in provider.requests[0].headers

    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with pytest.raises(ValueError, match="environment variable NO_SUCH_KEY_VAR is not set"):
        LiveModel("https://api.openai.com/v1", "NO_SUCH_KEY_VAR")
    with pytest.raises(ValueError, match="base_url must be an http"):
        LiveModel("api.openai.com")


def test_retries_429_and_5xx_honouring_retry_after_with_a_cap() -> None:
    provider = Provider(
        httpx.Response(429, headers={"retry-after": "2"}, json={"error": {"message": "slow"}}),
        httpx.Response(503, json={"error": {"message": "busy"}}),
        httpx.Response(429, headers={"retry-after": "120"}, json={"error": {"message": "slower"}}),
        httpx.Response(529, headers={"retry-after-ms": "250"}, json={"error": {"message": "overloaded"}}),
        ok("finally"),
    )
    model, waits = live(provider, max_retries=4, max_retry_wait=10.0)
    assert ask(sdk(model)).choices[0].message.content == "finally"
    # retry-after; backoff (2nd try: half of 0.5 * 2 at the least); capped (its window's least: 0.8 of the cap); ms
    assert waits == [2.0, 0.5, 8.0, 0.25]
    assert [e.status for e in model.exchanges] == [429, 503, 429, 529, 200]
    assert len(model.trajectory().turns) == 1


def test_retry_after_as_an_http_date() -> None:
    now = 1_700_000_000.0
    provider = Provider(
        httpx.Response(429, headers={"retry-after": email.utils.formatdate(now + 7, usegmt=True)}), ok()
    )
    model, waits = live(provider)
    model._clock = lambda: now  # type: ignore[method-assign]
    ask(sdk(model))
    assert waits == [7.0]


def test_gives_up_after_max_retries_and_the_sdk_sees_the_last_error() -> None:
    provider = Provider(*[httpx.Response(429, json={"error": {"message": "no"}}) for _ in range(3)])
    model, waits = live(provider, max_retries=2)
    with pytest.raises(openai.RateLimitError):
        ask(sdk(model))
    assert len(provider.requests) == 3 and waits == [0.25, 0.5]


def test_does_not_retry_client_errors_or_when_the_provider_says_not_to() -> None:
    provider = Provider(httpx.Response(400, json={"error": {"message": "bad"}}))
    model, waits = live(provider)
    with pytest.raises(openai.BadRequestError):
        ask(sdk(model))
    provider = Provider(httpx.Response(500, headers={"x-should-retry": "false"}, json={"error": {"message": "x"}}))
    model, waits = live(provider)
    with pytest.raises(openai.InternalServerError):
        ask(sdk(model))
    assert waits == [] and len(provider.requests) == 1


def test_retries_connection_errors_then_raises_the_last_one() -> None:
    provider = Provider(httpx.ConnectError("refused"), ok("reconnected"))
    model, waits = live(provider)
    assert ask(sdk(model)).choices[0].message.content == "reconnected"
    assert waits == [0.25]
    provider = Provider(httpx.ConnectError("down"), httpx.ConnectError("still down"))
    model, waits = live(provider, max_retries=1)
    with pytest.raises(httpx.ConnectError, match="still down"):
        httpx.Client(transport=model).post("https://api.openai.com/v1/chat/completions", json={})


def test_async_retries_and_streaming_pass_through() -> None:
    chunks = [
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
        b'"delta":{"content":"str"},"finish_reason":null}]}\n\n',
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
        b'"delta":{"content":"eamed"},"finish_reason":"stop"}]}\n\n',
        b"data: [DONE]\n\n",
    ]

    async def body() -> Any:
        for chunk in chunks:
            yield chunk

    provider = Provider(
        httpx.Response(502, json={"error": {"message": "bad gateway"}}),
        httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body()),
    )
    model, waits = live(provider)
    client = openai.AsyncOpenAI(api_key="dummy", http_client=httpx.AsyncClient(transport=model), max_retries=0)

    async def main() -> str:
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        return "".join([c.choices[0].delta.content or "" async for c in stream])

    assert asyncio.run(main()) == "streamed"
    assert waits == [0.25]
    assert [e.status for e in model.exchanges] == [502, 200]
    assert model.exchanges[1].streamed and model.trajectory().final_text == "streamed"


def test_retries_what_the_sdks_retry_408_and_409_and_past_dates_mean_now() -> None:
    now = 1_700_000_000.0
    provider = Provider(
        httpx.Response(408, json={"error": {"message": "timeout"}}),
        httpx.Response(409, headers={"retry-after": email.utils.formatdate(now - 30, usegmt=True)}),
        ok("third time"),
    )
    model, waits = live(provider)
    model._clock = lambda: now  # type: ignore[method-assign]
    assert ask(sdk(model)).choices[0].message.content == "third time"
    assert waits == [0.25, 0.0]


def test_without_a_base_url_requests_keep_their_own_url_and_key() -> None:
    provider = Provider(httpx.Response(503, json={"error": {"message": "busy"}}), ok("passed through"))
    model = LiveModel(transport=httpx.MockTransport(provider), timeout=5.0)
    model._sleep = lambda seconds: None  # type: ignore[method-assign]
    client = openai.OpenAI(api_key="sk-agents-own-key-0123456789", base_url="https://proxy.example.com/v9",
                           http_client=httpx.Client(transport=model), max_retries=0)
    assert ask(client).choices[0].message.content == "passed through"
    assert [str(r.url) for r in provider.requests] == ["https://proxy.example.com/v9/chat/completions"] * 2
    assert provider.requests[1].headers["authorization"] == "Bearer sk-agents-own-key-0123456789"
    assert provider.requests[1].extensions["timeout"]["read"] == 5.0
    assert repr(model) == "LiveModel(pass-through)"
    with pytest.raises(ValueError, match="need a base_url"):
        LiveModel(api_key_env="OPENAI_API_KEY")
