"""`RateLimit`: a provider's rate limit, for `LiveModel(..., rate_limit=...)` and trialrun.toml's `rate_limit`.

A value, not a limiter: the limiter lives in the process (or, on Ray, in one actor for the run) and is shared by
every LiveModel that talks to the same endpoint with the same key, so sixteen trials of one suite together stay
under the provider's limit, not each of them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["RateLimit"]

_KEYS = ("requests_per_minute", "tokens_per_minute")
_SHIPPING: list[list[RateLimit]] = []  # collectors open while cases are pickled for Ray workers (see `_ray.ship`)


def _check(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class RateLimit:
    """At most `requests_per_minute` requests and `tokens_per_minute` tokens a minute (either may be None).

    Requests are spaced evenly (60 a minute lets one through a second, never 60 at once: providers enforce their
    minute limits over shorter periods too). Tokens are the request's estimate (its bytes / 4 plus its max_tokens)
    charged when it is sent, corrected by the usage the provider reports. A 429 with Retry-After pauses every
    caller of the limit, not only the one refused. Every retry is a request too.

    >>> RateLimit(requests_per_minute=600).describe()
    '600 requests/min'
    >>> RateLimit(requests_per_minute=0)
    Traceback (most recent call last):
    ...
    ValueError: requests_per_minute must be a positive number, got 0
    """

    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None

    def __post_init__(self) -> None:
        for name in _KEYS:
            object.__setattr__(self, name, _check(name, getattr(self, name)))
        if self.requests_per_minute is None and self.tokens_per_minute is None:
            raise ValueError("a rate limit needs requests_per_minute, tokens_per_minute or both")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> RateLimit:
        """From a table such as trialrun.toml's `rate_limit = {requests_per_minute = 500}`; a ValueError names the
        key that is wrong."""
        if not isinstance(data, Mapping):
            raise ValueError(f"must be a table such as {{requests_per_minute = 500}}, got {data!r}")
        unknown = sorted(set(map(str, data)) - set(_KEYS))
        if unknown:
            raise ValueError(f"unknown key(s) {', '.join(unknown)} (known: {', '.join(_KEYS)})")
        return cls(**{key: data[key] for key in _KEYS if key in data})

    def describe(self) -> str:
        parts = []
        if self.requests_per_minute is not None:
            parts.append(f"{self.requests_per_minute:g} requests/min")
        if self.tokens_per_minute is not None:
            parts.append(f"{self.tokens_per_minute:g} tokens/min")
        return ", ".join(parts)

    def as_dict(self) -> dict[str, float | None]:
        return {key: getattr(self, key) for key in _KEYS}

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled for a Ray worker: the driver learns that a run needs the shared limiter actor.
        for collector in _SHIPPING:
            collector.append(self)
        return (RateLimit, (self.requests_per_minute, self.tokens_per_minute))
