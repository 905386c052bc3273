"""How long to wait before retrying a provider error: Retry-After when the provider says, else backoff."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping

__all__ = ["retry_delay", "RETRY_STATUSES"]

#: Worth retrying: rate limits, overload and transient server errors.
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


def retry_delay(headers: Mapping[str, str], attempt: int, *, base: float = 0.5, cap: float = 30.0) -> float:
    """Seconds to wait before retry number `attempt + 1` (attempt counts from 0), never more than `cap`.

    Honours `retry-after-ms` and `retry-after` (seconds or an HTTP date); otherwise exponential backoff.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    wait: float | None = None
    if "retry-after-ms" in lowered:
        try:
            wait = float(lowered["retry-after-ms"]) / 1000
        except ValueError:
            wait = None
    if wait is None and "retry-after" in lowered:
        value = lowered["retry-after"].strip()
        try:
            wait = float(value)
        except ValueError:
            try:
                wait = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
            except (TypeError, ValueError, IndexError):
                wait = None
    if wait is None or wait < 0:
        wait = base * (2**attempt)
    return min(wait, cap)
