"""Retries are jittered: 16 concurrent requests refused with 429 at once come back spread out, not in lockstep
(which would only be refused again together). Real time, real concurrency, the real retry code of both retriers:
LiveModel and the reference agent's loop."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import httpx
import pytest

import trialrun as tr
from trialrun._util.retry import retry_delay
from trialrun.models.live import LiveModel

T = TypeVar("T")
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


def _ask(client: httpx.AsyncClient, who: str) -> asyncio.Future[httpx.Response]:
    body = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": who}]}
    return client.post("https://api.openai.com/v1/chat/completions", json=body)  # type: ignore[return-value]


#: An event loop held up longer than this while the retries wait (another process on a loaded machine) lets every
#: timer due meanwhile fire at once: the retries then arrive together whatever their jitter, and the arrival times
#: say nothing. Such a measurement is taken again (up to three times in all); a steady one must show the spread.
_STALL_S = 0.05


async def _steadily(work: Callable[[], Awaitable[T]]) -> tuple[T, float]:
    """`work()`'s result and the longest time the loop was held up while it ran (a 5 ms tick's lateness)."""
    lag, done = 0.0, asyncio.Event()

    async def tick() -> None:
        nonlocal lag
        loop = asyncio.get_running_loop()
        while not done.is_set():
            due = loop.time() + 0.005
            await asyncio.sleep(0.005)
            lag = max(lag, loop.time() - due)

    ticker = asyncio.create_task(tick())
    try:
        result = await work()
    finally:
        done.set()
        await ticker  # its last tick, late by a hold-up at the very end
    return result, lag


def _measured(make: Callable[[RateLimited], Callable[[], Awaitable[T]]]) -> tuple[T, RateLimited]:
    for _ in range(3):
        provider = RateLimited()
        result, lag = asyncio.run(_steadily(make(provider)))
        if lag <= _STALL_S:
            break
    return result, provider


def test_sixteen_concurrent_429s_through_live_model_do_not_retry_in_lockstep() -> None:
    def make(provider: RateLimited) -> Callable[[], Awaitable[list[httpx.Response]]]:
        model = LiveModel("https://api.openai.com/v1", api_key="sk-test-jitter", transport=httpx.MockTransport(provider))

        async def main() -> list[httpx.Response]:
            async with httpx.AsyncClient(transport=model) as client:
                return await asyncio.gather(*(_ask(client, f"user-{i}") for i in range(CONCURRENT)))

        return main

    replies, provider = _measured(make)
    assert [r.status_code for r in replies] == [200] * CONCURRENT
    provider.assert_spread()


def test_sixteen_concurrent_429s_through_the_reference_agent_do_not_retry_in_lockstep() -> None:
    def make(provider: RateLimited) -> Callable[[], Awaitable[list[tr.Run]]]:
        async def main() -> list[tr.Run]:
            agent = tr.Agent(httpx.MockTransport(provider))
            return await asyncio.gather(*(agent.arun(f"user-{i}") for i in range(CONCURRENT)))

        return main

    runs, provider = _measured(make)
    assert sorted(run.output for run in runs) == sorted(f"ok user-{i}" for i in range(CONCURRENT))
    provider.assert_spread()


def test_a_held_up_loop_is_seen() -> None:
    async def stall() -> None:
        await asyncio.sleep(0.02)
        time.sleep(0.2)  # noqa: ASYNC251  # the loop's thread held, as a loaded machine would

    assert asyncio.run(_steadily(stall))[1] > _STALL_S


@pytest.mark.parametrize("headers", [{}, {"retry-after": "2"}, {"retry-after": "120"}], ids=["backoff", "retry-after", "capped"])
def test_the_waits_of_one_moment_differ(headers: dict[str, str]) -> None:
    waits = [retry_delay(headers, 1, cap=10.0) for _ in range(CONCURRENT)]
    assert len(set(waits)) == CONCURRENT and max(waits) <= 10.0
