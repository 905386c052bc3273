"""The live model: forwards an agent's requests to a real provider, with the real key, timeouts and retries.

Used by live canaries and for recording cassettes. The agent keeps whatever base URL and dummy key it was built
with; the transport rewrites the URL to `base_url`, injects the key from the environment, and retries rate limits,
server errors and dropped connections, honouring Retry-After, each wait capped, so a canary is not lost to a
transient 429. Without a base URL it is a pass-through with the same timeouts and retries: what a recording or
live `Cassette` uses to reach the provider each request names. With `rate_limit=RateLimit(...)` every attempt
first takes a slot from the limiter shared by all LiveModels of the same endpoint and key (`_limiter`).
"""

from __future__ import annotations

import os
import random
import time
from typing import Any
from urllib.parse import urlsplit

import anyio

from .._scrub import add_secret
from .._util.retry import retry_after, retry_delay, retryable
from ..wire._types import Exchange
from . import _limiter
from ._base import ModelKind, ModelTransport, NetworkClient, aforward, flavour, forward, transport_errors
from .ratelimit import RateLimit

__all__ = ["LiveModel"]

_AUTH_HEADERS = ("authorization", "x-api-key", "api-key", "x-goog-api-key")
_BACKOFF_BASE = 0.5  # seconds before the first retry without Retry-After; doubles each time


def _style(host: str) -> tuple[str, str]:
    """(auth header, default key environment variable) for a provider host."""
    host = host.lower()
    if "anthropic" in host:
        return "x-api-key", "ANTHROPIC_API_KEY"
    if "googleapis.com" in host or "generativelanguage" in host:
        return "x-goog-api-key", "GEMINI_API_KEY"
    return "authorization", "OPENAI_API_KEY"


def _join_path(base_path: str, request_path: str) -> str:
    """Put the request's API path under the base URL's path, without doubling a shared prefix such as /v1.

    `/openai/v1` + `/v1/chat/completions` -> `/openai/v1/chat/completions`; `/v1` + `/v1/messages` -> `/v1/messages`.
    """
    base = [part for part in base_path.split("/") if part]
    path = [part for part in request_path.split("/") if part]
    if base and path[: len(base)] == base:
        joined = path
    else:
        overlap = next((n for n in range(min(len(base), len(path)), 0, -1) if base[-n:] == path[:n]), 0)
        joined = base + path[overlap:]
    return "/" + "/".join(joined) + ("/" if request_path.endswith("/") and joined else "")


class LiveModel(NetworkClient, ModelTransport):
    """Forwards requests to `base_url` (e.g. "https://api.openai.com/v1") with the key from `api_key_env`.

    - `base_url=None`: each request goes to its own URL with its own credentials (a pass-through that adds only the
      timeout and the retries); `api_key`, `api_key_env` and `auth_header` need a base URL.
    - The key goes in `Authorization: Bearer` for OpenAI-style hosts, `x-api-key` for Anthropic, `x-goog-api-key`
      for Gemini (chosen from the host; `auth_header=` overrides). With neither `api_key` nor `api_key_env`, the key
      is read from OPENAI_API_KEY / ANTHROPIC_API_KEY / GEMINI_API_KEY when set, else the request's own is kept.
    - Retries 408, 409, 429, 5xx (or as the provider's `x-should-retry` says) and connection errors up to
      `max_retries` times, waiting Retry-After when given, else exponential backoff; every wait is capped at
      `max_retry_wait` seconds.
    - `transport`: the transport that reaches the network (default: a real httpx transport; a MockTransport in tests).
    - `rate_limit`: a `RateLimit` shared with every LiveModel of this endpoint and key in the process (on Ray,
      across the run's workers); a 429's Retry-After pauses it for all of them. Waiting counts towards a trial's
      timeout, and a trial that times out says how long it waited and for which limit.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key_env: str | None = None,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        max_retry_wait: float = 30.0,
        transport: Any = None,
        auth_header: str | None = None,
        rate_limit: RateLimit | None = None,
    ) -> None:
        super().__init__()
        if max_retries < 0 or max_retry_wait < 0 or timeout <= 0:
            raise ValueError("LiveModel: max_retries and max_retry_wait must be >= 0 and timeout > 0")
        self.base_url: str | None = None
        if base_url is None:
            if api_key is not None or api_key_env is not None or auth_header is not None:
                raise ValueError(
                    "LiveModel: api_key, api_key_env and auth_header need a base_url (without one, each request "
                    "keeps its own URL and key)"
                )
            self.auth_header = ""
        else:
            parts = urlsplit(base_url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(
                    f"LiveModel: base_url must be an http(s) URL such as https://api.openai.com/v1, got {base_url!r}"
                )
            self.base_url = base_url.rstrip("/")
            self._scheme, self._netloc, self._base_path = parts.scheme, parts.netloc, parts.path
            default_header, default_env = _style(parts.hostname or "")
            self.auth_header = (auth_header or default_header).lower()
            if api_key is None and api_key_env is not None:
                api_key = os.environ.get(api_key_env)
                if not api_key:
                    raise ValueError(
                        f"LiveModel({base_url!r}): environment variable {api_key_env} is not set; live calls need "
                        "the provider's API key there"
                    )
            elif api_key is None:
                api_key = os.environ.get(default_env) or None
        self._api_key = api_key
        if api_key:  # a key no shape or environment variable may give away: scrubbed wherever it is echoed
            add_secret(api_key, source=f"LiveModel({self.base_url!r}) api_key")
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.max_retry_wait = float(max_retry_wait)
        self._transport = transport
        if rate_limit is not None and not isinstance(rate_limit, RateLimit):
            raise ValueError(f"LiveModel: rate_limit must be a trialrun.RateLimit, got {type(rate_limit).__name__}")
        self.rate_limit = rate_limit
        self._charged: dict[int, tuple[_limiter.Permits, int]] = {}  # slot -> (limiter, tokens estimated)
        self._init_network()
        # Injectable so tests never wait.
        self._sleep = time.sleep
        self._async_sleep = anyio.sleep
        self._clock = time.time
        self._rand = random.random  # the retry jitter (`_retry.retry_delay`)

    @property
    def model_kind(self) -> ModelKind:
        return "live"

    def __repr__(self) -> str:
        limit = f", rate_limit={self.rate_limit.describe()!r}" if self.rate_limit else ""
        return f"LiveModel({self.base_url!r}{limit})" if self.base_url else f"LiveModel(pass-through{limit})"

    # -- building the upstream request ------------------------------------------------------------------------------

    def _outgoing(self, request: Any) -> Any:
        module = flavour(request)
        if self.base_url is None:
            target = str(request.url)
        else:
            raw = request.url.raw_path.decode("ascii")
            path, _, query = raw.partition("?")
            target = f"{self._scheme}://{self._netloc}{_join_path(self._base_path, path)}" + (f"?{query}" if query else "")
        headers = [(k, v) for k, v in request.headers.multi_items() if k.lower() != "host"]
        if self._api_key:
            headers = [(k, v) for k, v in headers if k.lower() not in _AUTH_HEADERS]
            value = f"Bearer {self._api_key}" if self.auth_header == "authorization" else self._api_key
            headers.append((self.auth_header, value))
        extensions = {**request.extensions, "timeout": module.Timeout(self.timeout).as_dict()}
        return module.Request(request.method, target, headers=headers, content=request.content, extensions=extensions)

    def _network(self, request: Any, asynchronous: bool) -> Any:
        if self._transport is not None:
            return self._transport
        return self._default_network(request, asynchronous)

    def _wait(self, attempt: int, response: Any) -> float | None:
        """Seconds to wait before retry `attempt` (1-based), or None when this outcome must not be retried.

        `response` is None after a connection error (always worth retrying while attempts remain).
        """
        if attempt > self.max_retries:
            return None
        headers = response.headers if response is not None else {}
        if response is not None and not retryable(response.status_code, headers):
            return None
        return retry_delay(headers, attempt - 1, base=_BACKOFF_BASE, cap=self.max_retry_wait, now=self._clock(),
                           rand=self._rand)

    # -- the rate limit ---------------------------------------------------------------------------------------------

    def _permits(self, outgoing: Any) -> tuple[_limiter.Permits, int] | None:
        """The shared limiter this request draws on, and its token estimate (0 without a token limit)."""
        if self.rate_limit is None:
            return None
        # the key sent: the configured one, else the request's own (a pass-through's, or one kept under a base URL)
        key = self._api_key or next((v for k, v in outgoing.headers.items() if k.lower() in _AUTH_HEADERS), None)
        if self.base_url is not None:
            who = _limiter.identity(self.base_url, key)
        else:  # a pass-through: the request's own endpoint
            url = outgoing.url
            who = _limiter.identity(f"{url.scheme}://{url.netloc.decode('ascii')}", key)
        permits = _limiter.limiter_for(who, self.rate_limit)
        tokens = _limiter.estimate_tokens(outgoing.content) if permits.limit.tokens_per_minute else 0
        return permits, tokens

    def _pause(self, permits: _limiter.Permits, seconds: float) -> None:
        log = _limiter.WAITS.get()
        start = log.begin(self.base_url or "pass-through", permits.limit) if log is not None else 0.0
        try:
            self._sleep(seconds)
        finally:
            if log is not None:
                log.end(start)

    async def _apause(self, permits: _limiter.Permits, seconds: float) -> None:
        log = _limiter.WAITS.get()
        start = log.begin(self.base_url or "pass-through", permits.limit) if log is not None else 0.0
        try:
            await self._async_sleep(seconds)
        finally:
            if log is not None:
                log.end(start)

    def _throttle(self, taken: tuple[_limiter.Permits, int] | None) -> None:
        """Wait for a slot (sync). A pause that began while waiting (someone's 429) is waited out too."""
        if taken is None:
            return
        permits, tokens = taken
        while True:
            delay = permits.take(tokens)
            if delay > 0:
                self._pause(permits, delay)
            rest = permits.paused_for()
            if rest <= 0:
                return
            permits.settle(-tokens)  # that slot fell inside the pause: given back, and a new one taken after it
            self._pause(permits, rest)

    async def _athrottle(self, taken: tuple[_limiter.Permits, int] | None) -> None:
        """`_throttle` for async callers: waits with anyio.sleep, never blocking the event loop."""
        if taken is None:
            return
        permits, tokens = taken
        while True:
            delay = await permits.atake(tokens)
            if delay > 0:
                await self._apause(permits, delay)
            rest = permits.paused_for()
            if rest <= 0:
                return
            permits.settle(-tokens)
            await self._apause(permits, rest)

    def _answered(self, taken: tuple[_limiter.Permits, int] | None, slot: int, response: Any) -> None:
        """After a response: a 429's Retry-After pauses everyone's limiter; the tokens are settled when the
        exchange is recorded (a stream's, when it ends)."""
        if taken is None:
            return
        permits, tokens = taken
        if response.status_code == 429:
            seconds = retry_after(response.headers, now=self._clock())
            if seconds:
                permits.pause(min(seconds, self.max_retry_wait))  # capped as every retry wait is
        if tokens:
            with self._lock:
                self._charged[slot] = taken

    def _fill(self, slot: int, exchange: Exchange) -> None:
        super()._fill(slot, exchange)
        with self._lock:
            taken = self._charged.pop(slot, None)
        if taken is not None:
            used = _limiter.usage_tokens(exchange)
            if used is not None:
                taken[0].settle(used - taken[1])

    # -- serving ----------------------------------------------------------------------------------------------------

    def _handle(self, request: Any) -> Any:
        outgoing = self._outgoing(request)
        transport = self._network(request, False)
        errors = transport_errors()
        attempt = 0
        while True:
            attempt += 1
            taken = self._permits(outgoing)
            self._throttle(taken)
            try:
                response = forward(transport, outgoing)
            except errors:
                wait = self._wait(attempt, None)
                if wait is None:
                    raise
                self._sleep(wait)
                continue
            slot = self._reserve()
            self._answered(taken, slot, response)
            wait = self._wait(attempt, response)
            if wait is None:
                return self._observe(slot, outgoing, response)
            response.read()
            response.close()
            self._observe(slot, outgoing, response)
            self._sleep(wait)

    async def _ahandle(self, request: Any) -> Any:
        outgoing = self._outgoing(request)
        transport = self._network(request, True)
        errors = transport_errors()
        attempt = 0
        while True:
            attempt += 1
            taken = self._permits(outgoing)
            await self._athrottle(taken)
            try:
                response = await aforward(transport, outgoing)
            except errors:
                wait = self._wait(attempt, None)
                if wait is None:
                    raise
                await self._async_sleep(wait)
                continue
            slot = self._reserve()
            self._answered(taken, slot, response)
            wait = self._wait(attempt, response)
            if wait is None:
                return self._observe(slot, outgoing, response)
            await response.aread()
            await response.aclose()
            self._observe(slot, outgoing, response)
            await self._async_sleep(wait)

