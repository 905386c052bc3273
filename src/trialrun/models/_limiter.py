"""The shared rate limiter behind `LiveModel(rate_limit=...)`: one per provider endpoint and key, per process (or
per Ray run, in an actor: `_ray`), so every trial's model draws on the same budget.

Why reservations: a caller reserves a slot (the limiter's lock held for microseconds) and then waits for it outside
the lock, with `time.sleep` or `anyio.sleep`: an async caller never blocks its event loop, and the same `Limiter`
serves threads, coroutines and a Ray actor. The schedule is GCRA (a virtual clock per resource): the next request
may go `60 / requests_per_minute` seconds after the last one, and after the tokens charged so far are paid off at
`tokens_per_minute`. A request larger than a second's tokens still goes (then the others wait longer).
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import math
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .ratelimit import RateLimit

__all__ = ["Limiter", "Permits", "limiter_for", "identity", "estimate_tokens", "usage_tokens", "REMOTE", "WAITS",
           "WaitLog", "reset"]


class Limiter:
    """The schedule of one limit. `clock` is monotonic seconds (injectable: tests never wait)."""

    def __init__(self, limit: RateLimit, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self._clock = clock
        self._lock = threading.Lock()
        self._next_request = -math.inf  # when the next request may go
        self._tokens_paid = -math.inf  # when the tokens charged so far are paid off
        self._paused_until = -math.inf  # a provider's Retry-After, for everyone

    def tighten(self, limit: RateLimit) -> None:
        """Two LiveModels with different limits for the same endpoint and key: the stricter of each applies."""
        with self._lock:
            pairs = [(a, b) for a, b in zip(self.limit.as_dict().values(), limit.as_dict().values())]
            self.limit = RateLimit(*(min(x for x in pair if x is not None) if any(x is not None for x in pair) else None
                                     for pair in pairs))

    def reserve(self, tokens: int = 0, count: int = 1) -> list[float]:
        """Reserve `count` consecutive request slots (the first charged `tokens`); the seconds from now until each."""
        rpm, tpm = self.limit.requests_per_minute, self.limit.tokens_per_minute
        with self._lock:
            now = self._clock()
            delays = []
            for index in range(count):
                at = max(now, self._paused_until)
                if rpm is not None:
                    at = max(at, self._next_request)
                    self._next_request = at + 60.0 / rpm
                if tpm is not None:
                    at = max(at, self._tokens_paid)
                    self._tokens_paid = at + (tokens if index == 0 else 0) * 60.0 / tpm
                delays.append(at - now)
            return delays

    def settle(self, tokens: int) -> None:
        """Correct the tokens charged (the provider's usage minus the estimate; negative gives some back)."""
        if self.limit.tokens_per_minute is not None and tokens:
            with self._lock:
                self._tokens_paid += tokens * 60.0 / self.limit.tokens_per_minute

    def pause(self, seconds: float) -> None:
        """No slot for anyone for `seconds` (a 429's Retry-After)."""
        with self._lock:
            self._paused_until = max(self._paused_until, self._clock() + seconds)

    def paused_for(self) -> float:
        with self._lock:
            return max(0.0, self._paused_until - self._clock())


class Permits(Protocol):
    """What LiveModel asks of a limiter: the local `Limiter` of the process, or a Ray run's actor (`_ray`)."""

    where: str

    @property
    def limit(self) -> RateLimit: ...
    def take(self, tokens: int) -> float: ...
    def atake(self, tokens: int) -> Awaitable[float]: ...
    def settle(self, tokens: int) -> None: ...
    def pause(self, seconds: float) -> None: ...
    def paused_for(self) -> float: ...


class _Local:
    """A process's `Limiter` as `Permits`."""

    where = "process"

    def __init__(self, limiter: Limiter) -> None:
        self._limiter = limiter

    @property
    def limit(self) -> RateLimit:
        return self._limiter.limit

    def take(self, tokens: int) -> float:
        return self._limiter.reserve(tokens)[0]

    async def atake(self, tokens: int) -> float:
        return self._limiter.reserve(tokens)[0]

    def settle(self, tokens: int) -> None:
        self._limiter.settle(tokens)

    def pause(self, seconds: float) -> None:
        self._limiter.pause(seconds)

    def paused_for(self) -> float:
        return self._limiter.paused_for()


#: Set on a Ray worker while it runs a trial of a run with the shared limiter: (identity, limit) -> Permits.
REMOTE: contextvars.ContextVar[Callable[[str, RateLimit], Permits] | None] = contextvars.ContextVar(
    "trialrun_remote_limiter", default=None)

_registry: dict[str, Limiter] = {}
_registry_lock = threading.Lock()
_clock: Callable[[], float] = time.monotonic  # the clock new local limiters get (tests replace it, with `reset`)


def reset(clock: Callable[[], float] = time.monotonic) -> None:
    """Forget every local limiter; new ones use `clock` (for tests)."""
    global _clock
    with _registry_lock:
        _registry.clear()
        _clock = clock


def identity(origin: str, key: str | None) -> str:
    """Which budget a request draws on: the endpoint, and a fingerprint of the key (never the key itself)."""
    return f"{origin}#{hashlib.sha256((key or '').encode()).hexdigest()[:12]}" if key else origin


def limiter_for(who: str, limit: RateLimit) -> Permits:
    """The shared limiter of `who` (the Ray run's, on a worker; else the process's), made stricter if need be."""
    remote = REMOTE.get()
    if remote is not None:
        return remote(who, limit)
    with _registry_lock:
        limiter = _registry.get(who)
        if limiter is None:
            limiter = _registry[who] = Limiter(limit, _clock)
    if limiter.limit != limit:
        limiter.tighten(limit)
    return _Local(limiter)


@dataclass
class WaitLog:
    """How long a trial waited on rate limits, and which (the runner opens one per trial: a timeout says so).
    Real time, so a wait still going on when the trial times out counts too."""

    seconds: float = 0.0
    limits: dict[str, str] = field(default_factory=dict)
    _since: list[float] = field(default_factory=list)  # starts of the waits going on now

    def begin(self, where: str, limit: RateLimit) -> float:
        self.limits.setdefault(where, limit.describe())
        start = time.monotonic()
        self._since.append(start)
        return start

    def end(self, start: float) -> None:
        self._since.remove(start)
        self.seconds += time.monotonic() - start

    def waited(self) -> float:
        now = time.monotonic()
        return self.seconds + sum(now - start for start in list(self._since))

    def describe(self) -> str:
        which = "; ".join(f"{where}: {text}" for where, text in self.limits.items())
        return f"{self.waited():.2g}s of it waiting for the rate limit ({which})"


WAITS: contextvars.ContextVar[WaitLog | None] = contextvars.ContextVar("trialrun_rate_limit_waits", default=None)


def estimate_tokens(body: bytes) -> int:
    """A request's tokens before it is sent: about 4 bytes a token for what it sends, plus the output it allows
    (`max_tokens` and its kin, which providers count against the limit when they admit a request)."""
    estimate = len(body) // 4
    try:
        data = json.loads(body) if body[:1] == b"{" else None
    except ValueError:
        data = None
    if isinstance(data, dict):
        for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
            value = data.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                estimate += value
                break
    return estimate


def usage_tokens(exchange: Any) -> int | None:
    """The tokens the provider says an exchange used (input + output), or None when it did not say."""
    from ..wire import decode_trajectory

    try:
        usage = decode_trajectory([exchange]).usage
    except Exception:  # noqa: BLE001 - an unreadable response keeps its estimate
        return None
    total = (usage.input_tokens or 0) + (usage.output_tokens or 0) if usage is not None else 0
    return total or None
