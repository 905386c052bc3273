"""How long to wait before retrying a provider error: Retry-After when the provider says, else backoff.

The one place Retry-After is read, for the reference agent's loop and for `LiveModel`, so the two never disagree
about what a provider asked for.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable, Mapping

__all__ = ["retry_delay", "retry_after", "retryable", "RETRY_STATUSES"]

#: Client errors worth retrying (a timeout, a conflict, a rate limit), besides every 5xx (`retryable`).
RETRY_STATUSES = frozenset({408, 409, 429})


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """A header value whatever the mapping's case rules (httpx Headers ignore case, a plain dict does not)."""
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return None if value is None else str(value).strip()


def retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds the provider asked to wait, or None when it did not say (or said something unreadable).

    Reads `retry-after-ms` (OpenAI, Anthropic), then `retry-after` in seconds or as an HTTP date; a date in the
    past means "now" (0). `now` is the current time (default `time.time()`), injectable for tests.
    """
    value = _header(headers, "retry-after-ms")
    if value is not None:
        try:
            millis = float(value)
        except ValueError:
            millis = -1.0
        if millis >= 0:
            return millis / 1000
    value = _header(headers, "retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        return max(0.0, when.timestamp() - (time.time() if now is None else now))
    return seconds if seconds >= 0 else None


def retry_delay(
    headers: Mapping[str, str], attempt: int, *, base: float = 0.5, cap: float = 30.0, now: float | None = None,
    rand: Callable[[], float] = random.random,
) -> float:
    """Seconds to wait before retry number `attempt + 1` (attempt counts from 0), never more than `cap`, with
    jitter, so that many requests refused at once (16 concurrent trials hitting one rate limit) do not all come
    back at the same instant and get refused again together.

    Honours Retry-After (see `retry_after`): a wait between what the provider asked and 20% (and 0.1 s) more,
    never sooner. Otherwise exponential backoff with "equal jitter": between half of `base * 2**attempt` and all
    of it. A window reaching past `cap` ends at `cap` and spans its last fifth. `rand` gives numbers in [0, 1).
    """
    wait = retry_after(headers, now=now)
    if wait is None:
        full = base * (2.0**attempt)
        low, high = full / 2, full
    else:
        low, high = wait, wait * 1.2 + 0.1
    if high > cap:
        high, low = cap, min(low, cap * 0.8)
    return low + (high - low) * rand()


def retryable(status: int, headers: Mapping[str, str]) -> bool:
    """Whether an HTTP error is worth retrying: the provider's `x-should-retry` decides when present (as the
    official SDKs do), else 408, 409, 429 and every 5xx."""
    if status < 400:
        return False
    said = _header(headers, "x-should-retry")
    if said == "true":
        return True
    if said == "false":
        return False
    return status in RETRY_STATUSES or status >= 500
