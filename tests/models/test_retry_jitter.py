"""Retries are jittered: 16 concurrent requests refused with 429 at once come back spread out, not in lockstep
(which would only be refused again together). Real time, real concurrency, the real retry code of both retriers:
LiveModel and the reference agent's loop."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import httpx
import pytest

import trialrun as tr
from trialrun._util.retry import retry_delay
from trialrun.models.live import LiveModel

CONCURRENT = 16
RETRY_AFTER = "0.2"


class RateLimited:
    """Refuses each conversation's first request with 429 (Retry-After 0.2 s), answers the retry; records when the
    retries arrive."""

    def __init__(self) -> None:
        self.first: set[str] = set()
        self.refused_at: list[float] = []
        self.retried_at: list[float] = []
        self.lock = threading.Lock()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        who = json.loads(request.content)["messages"][-1]["content"]
        with self.lock:
            if who not in self.first:
                self.first.add(who)
                self.refused_at.append(time.monotonic())
                return httpx.Response(429, headers={"retry-after": RETRY_AFTER}, json={"error": {"message": "rate limited"}})
            self.retried_at.append(time.monotonic())
        return httpx.Response(200, json={
            "id": "c", "object": "chat.completion", "model": "gpt-4.1-mini",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok " + who}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    def assert_spread(self) -> None:
        assert len(self.refused_at) == len(self.retried_at) == CONCURRENT
        first_refusal = min(self.refused_at)
        waits = sorted(t - first_refusal for t in self.retried_at)
        assert waits[0] >= float(RETRY_AFTER) - 0.01  # never sooner than the provider asked
        buckets = {int(w * 100) for w in waits}  # 10 ms buckets: in lockstep they all land in one or two
        assert waits[-1] - waits[0] > 0.05 and len(buckets) >= 5, waits


def _ask(client: httpx.AsyncClient, who: str) -> "asyncio.Future[httpx.Response]":
    body = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": who}]}
    return client.post("https://api.openai.com/v1/chat/completions", json=body)  # type: ignore[return-value]


def test_sixteen_concurrent_429s_through_live_model_do_not_retry_in_lockstep() -> None:
    provider = RateLimited()
    model = LiveModel("https://api.openai.com/v1", api_key="sk-test", transport=httpx.MockTransport(provider))

    async def main() -> list[httpx.Response]:
        async with httpx.AsyncClient(transport=model) as client:
            return await asyncio.gather(*(_ask(client, f"user-{i}") for i in range(CONCURRENT)))

    replies = asyncio.run(main())
    assert [r.status_code for r in replies] == [200] * CONCURRENT
    provider.assert_spread()


def test_sixteen_concurrent_429s_through_the_reference_agent_do_not_retry_in_lockstep() -> None:
    provider = RateLimited()

    async def main() -> list[tr.Run]:
        agent = tr.Agent(httpx.MockTransport(provider))
        return await asyncio.gather(*(agent.arun(f"user-{i}") for i in range(CONCURRENT)))

    runs = asyncio.run(main())
    assert sorted(run.output for run in runs) == sorted(f"ok user-{i}" for i in range(CONCURRENT))
    provider.assert_spread()


@pytest.mark.parametrize("headers", [{}, {"retry-after": "2"}, {"retry-after": "120"}], ids=["backoff", "retry-after", "capped"])
def test_the_waits_of_one_moment_differ(headers: dict[str, str]) -> None:
    waits = [retry_delay(headers, 1, cap=10.0) for _ in range(CONCURRENT)]
    assert len(set(waits)) == CONCURRENT and max(waits) <= 10.0
