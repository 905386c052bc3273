"""LiveModel's shared rate limit: one budget per endpoint and key across LiveModels, sync and async, a 429's
Retry-After pausing everyone, tokens charged and corrected from usage; on an injected clock (no waiting)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

import trialrun as tr
from trialrun import expect
from trialrun.models import LiveModel, RateLimit, _limiter
from trialrun.suite.config import ConfigError, load_config

BASE = "https://api.openai.com/v1"


class Clock:
    """A fake monotonic clock: sleeping advances it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    async def asleep(self, seconds: float) -> None:
        """Concurrent sleepers wake in the order of their deadlines (a hundredth of the time, for real), each
        moving the clock to its own deadline."""
        target = self.now + seconds
        await asyncio.sleep(seconds / 100)
        self.now = max(self.now, target)


@pytest.fixture
def clock() -> Iterator[Clock]:
    fake = Clock()
    _limiter.reset(fake)
    yield fake
    _limiter.reset()


class Provider:
    """Answers every request (or the queued statuses first), noting when each arrived on the clock."""

    def __init__(self, clock: Clock, *statuses: tuple[int, dict[str, str]], usage: int = 6) -> None:
        self.clock, self.statuses, self.usage = clock, list(statuses), usage
        self.arrivals: list[tuple[float, str]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.arrivals.append((self.clock.now, request.headers.get("authorization", "")))
        if self.statuses:
            status, headers = self.statuses.pop(0)
            return httpx.Response(status, headers=headers, json={"error": {"message": "slow down"}})
        return httpx.Response(200, json={
            "id": "c", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
            "usage": {"prompt_tokens": self.usage - 2, "completion_tokens": 2, "total_tokens": self.usage}})


def model(provider: Provider, clock: Clock, limit: RateLimit | None, key: str = "sk-key-a", **kwargs: object) -> LiveModel:
    live = LiveModel(BASE, api_key=key, transport=httpx.MockTransport(provider), rate_limit=limit, **kwargs)  # type: ignore[arg-type]
    live._sleep = clock.sleep  # type: ignore[method-assign]
    live._async_sleep = clock.asleep  # type: ignore[method-assign]
    live._rand = lambda: 0.0  # type: ignore[method-assign]
    return live


def ask(live: LiveModel, **extra: object) -> object:
    client = openai.OpenAI(api_key="dummy", http_client=httpx.Client(transport=live), max_retries=0)
    return client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], **extra)  # type: ignore[call-overload]


def gaps(arrivals: list[tuple[float, str]]) -> list[float]:
    times = [t for t, _ in arrivals]
    return [round(b - a, 6) for a, b in zip(times, times[1:])]


def test_two_live_models_of_one_endpoint_and_key_share_one_budget(clock: Clock) -> None:
    provider = Provider(clock)
    limit = RateLimit(requests_per_minute=60)
    first, second = model(provider, clock, limit), model(provider, clock, limit)
    for live in (first, second, first, second, first):
        ask(live)
    assert gaps(provider.arrivals) == [1.0] * 4  # one a second across both, never a burst
    other_key = model(provider, clock, limit, key="sk-key-b")  # another key: another budget, not held up
    before = clock.now
    ask(other_key)
    assert provider.arrivals[-1][0] == before
    unlimited = model(provider, clock, None)
    ask(unlimited), ask(unlimited)
    assert provider.arrivals[-1][0] == provider.arrivals[-2][0]  # without a limit nothing waits


def test_async_callers_share_it_and_wait_without_blocking_the_loop(clock: Clock) -> None:
    provider = Provider(clock)
    limit = RateLimit(requests_per_minute=120)
    models = [model(provider, clock, limit) for _ in range(3)]

    async def main() -> list[int]:
        ticks: list[int] = []

        async def ticker() -> None:
            for i in range(50):
                ticks.append(i)
                await asyncio.sleep(0)

        async def one(live: LiveModel) -> None:
            client = openai.AsyncOpenAI(api_key="dummy", http_client=httpx.AsyncClient(transport=live), max_retries=0)
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])

        await asyncio.gather(ticker(), *(one(live) for live in models * 2))
        return ticks

    ticks = asyncio.run(main())
    assert sorted(gaps(provider.arrivals)) == [0.5] * 5  # 120 a minute: 0.5 s apart, six callers at once
    assert len(ticks) == 50  # the loop kept running while they waited


def test_the_real_clock_waits_and_the_loop_still_runs() -> None:
    _limiter.reset()
    arrivals: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        arrivals.append(time.monotonic())
        return httpx.Response(200, json={"ok": True})

    live = LiveModel(BASE, api_key="sk-real-clock", transport=httpx.MockTransport(handler),
                     rate_limit=RateLimit(requests_per_minute=1200))  # 50 ms apart

    async def main() -> int:
        ticks = 0
        stop = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                await asyncio.sleep(0.005)

        async def calls() -> None:
            async with httpx.AsyncClient(transport=live) as client:
                await asyncio.gather(*(client.post(f"{BASE}/chat/completions", json={}) for _ in range(5)))
            stop.set()

        nonlocal started
        started = time.monotonic()
        await asyncio.gather(ticker(), calls())
        return ticks

    started = 0.0
    ticks = asyncio.run(main())
    # The k-th arrival came at least k slots of 50 ms after the calls began. Counted from the start, not from the
    # first arrival: under load a request may arrive late (never early), and the first one late next to a second
    # on time would make a gap look short.
    assert len(arrivals) == 5
    assert all(t - started >= k * 0.05 - 0.002 for k, t in enumerate(sorted(arrivals))), (started, arrivals)
    assert ticks >= 10  # about 0.2 s of waiting, the ticker running every 5 ms meanwhile


def test_a_429_retry_after_pauses_every_caller_of_the_limit(clock: Clock) -> None:
    provider = Provider(clock, (429, {"retry-after": "7"}))
    limit = RateLimit(requests_per_minute=600)
    refused, other = model(provider, clock, limit, max_retries=0), model(provider, clock, limit)
    with pytest.raises(openai.RateLimitError):
        ask(refused)  # no retries: it returns at once, but the budget is paused for everyone
    start = provider.arrivals[0][0]
    ask(other)
    assert provider.arrivals[1][0] == pytest.approx(start + 7)
    ask(model(provider, clock, limit, key="sk-key-b"))  # another key's budget was not refused: not paused
    assert provider.arrivals[2][0] == pytest.approx(start + 7)


def test_a_429_retried_waits_the_pause_once(clock: Clock) -> None:
    provider = Provider(clock, (429, {"retry-after": "3"}))
    live = model(provider, clock, RateLimit(requests_per_minute=600))
    ask(live)
    assert gaps(provider.arrivals) == [3.0]  # the retry waited 3 s (its own wait covered the pause)


def test_tokens_are_estimated_then_settled_from_the_reported_usage(clock: Clock) -> None:
    provider = Provider(clock, usage=300)
    limit = RateLimit(tokens_per_minute=600)  # 10 tokens a second
    live = model(provider, clock, limit)
    ask(live, max_tokens=50)
    ask(live)
    ask(live)
    # the first request's estimate (its bytes / 4 + max_tokens) was settled to the 300 tokens it used: 30 s
    assert gaps(provider.arrivals) == [30.0, 30.0]
    body = json.dumps({"model": "m", "messages": [], "max_tokens": 50}).encode()
    assert _limiter.estimate_tokens(body) == len(body) // 4 + 50


def test_limits_of_the_same_endpoint_combine_to_the_strictest(clock: Clock) -> None:
    provider = Provider(clock)
    ask(model(provider, clock, RateLimit(requests_per_minute=60)))
    ask(model(provider, clock, RateLimit(requests_per_minute=30, tokens_per_minute=10**6)))
    ask(model(provider, clock, RateLimit(requests_per_minute=120)))
    assert gaps(provider.arrivals) == [1.0, 2.0]
    assert _limiter.limiter_for(_limiter.identity(BASE, "sk-key-a"), RateLimit(requests_per_minute=60)).limit == \
        RateLimit(requests_per_minute=30, tokens_per_minute=10**6)


def test_a_trial_timed_out_while_waiting_on_the_limit_says_so() -> None:
    _limiter.reset()

    def invoke(ctx: tr.TrialContext) -> str:
        live = ctx.observe(LiveModel(BASE, api_key="sk-timeout", rate_limit=RateLimit(requests_per_minute=30),
                                     transport=httpx.MockTransport(lambda r: httpx.Response(200, json={}))))
        with ctx.http_client(live) as client:
            for _ in range(3):  # the second waits 2 s: past the trial's timeout
                client.post(f"{BASE}/chat/completions", json={})
        return "done"

    case = tr.Case(name="waits", invoke=invoke, timeout_s=0.5, expect_outcome=[expect.contains("done")])
    error = tr.evaluate([case]).cases[0].trials[0].error
    assert error is not None and error.type == "TimeoutError"
    assert error.message.startswith("trial timed out after 0.5s, ")
    assert "waiting for the rate limit (https://api.openai.com/v1: 30 requests/min)" in error.message
    plain = tr.Case(name="sleeps", invoke=lambda ctx: time.sleep(1), timeout_s=0.2, expect_outcome=[expect.contains("x")])
    assert tr.evaluate([plain]).cases[0].trials[0].error.message == "trial timed out after 0.2s"  # type: ignore[union-attr]


def test_rate_limit_values_are_checked() -> None:
    with pytest.raises(ValueError, match="tokens_per_minute must be a positive number, got -1"):
        RateLimit(tokens_per_minute=-1)
    with pytest.raises(ValueError, match="needs requests_per_minute, tokens_per_minute or both"):
        RateLimit()
    with pytest.raises(ValueError, match="must be a trialrun.RateLimit, got dict"):
        LiveModel(BASE, api_key="sk-key-values", rate_limit={"requests_per_minute": 5})  # type: ignore[arg-type]
    assert "600 requests/min" in repr(LiveModel(BASE, api_key="sk-key-values", rate_limit=RateLimit(requests_per_minute=600)))


def test_trialrun_toml_sets_the_limit_and_bad_values_name_the_key(tmp_path: Path) -> None:
    config_file = tmp_path / "trialrun.toml"
    config_file.write_text('model = "openai-compatible:http://127.0.0.1:9/v1#m"\n'
                           "rate_limit = {requests_per_minute = 90, tokens_per_minute = 40000}\n")
    config = load_config(tmp_path)
    assert config.rate_limits == RateLimit(requests_per_minute=90, tokens_per_minute=40000)
    from trialrun.suite._build import _rate_limit_snapshot
    from trialrun.suite._build_model import _live

    assert _live(config.model_spec, config.effective_api, config.rate_limits).rate_limit == config.rate_limits
    assert _rate_limit_snapshot(config) == {"requests_per_minute": 90, "tokens_per_minute": 40000,
                                            "applies_to": "openai-compatible:http://127.0.0.1:9/v1#m",
                                            "shared": "every trial of the run"}
    for text, message in [
        ("rate_limit = {requests_per_minute = 0}", "rate_limit: requests_per_minute must be a positive number, got 0"),
        ('rate_limit = {requests_per_minute = "60"}', "rate_limit: requests_per_minute must be a positive number, got '60'"),
        ("rate_limit = {rpm = 60}", "rate_limit: unknown key(s) rpm (known: requests_per_minute, tokens_per_minute)"),
        ("rate_limit = {}", "rate_limit: a rate limit needs requests_per_minute, tokens_per_minute or both"),
        ("rate_limit = 60", "rate_limit: expected a table"),
    ]:
        config_file.write_text(text + "\n")
        with pytest.raises(ConfigError) as raised:
            load_config(tmp_path)
        assert str(raised.value).startswith(f"{config_file}: {message}"), str(raised.value)


def test_a_pass_through_limits_each_endpoint_and_key_the_requests_carry(clock: Clock) -> None:
    provider = Provider(clock)
    live = LiveModel(transport=httpx.MockTransport(provider), rate_limit=RateLimit(requests_per_minute=60))
    live._sleep = clock.sleep  # type: ignore[method-assign]
    with httpx.Client(transport=live) as client:
        for key in ("Bearer sk-1", "Bearer sk-2", "Bearer sk-1"):
            client.post(f"{BASE}/chat/completions", headers={"authorization": key}, json={})
        client.post("https://other.example.com/v1/chat/completions", headers={"authorization": "Bearer sk-1"}, json={})
    # sk-1 at the same endpoint waited a second for its own earlier request; sk-2 and the other host did not
    assert [t - 1000.0 for t, _ in provider.arrivals] == [0.0, 0.0, 1.0, 1.0]
