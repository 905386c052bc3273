"""The one Retry-After reader (`trialrun._util.retry`), shared by the reference agent's loop and LiveModel."""

from __future__ import annotations

import email.utils

import httpx
import pytest

from trialrun._util.retry import RETRY_STATUSES, retry_after, retry_delay, retryable

NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        pytest.param({}, None, id="absent"),
        pytest.param({"retry-after": "2"}, 2.0, id="seconds"),
        pytest.param({"Retry-After": "0.5"}, 0.5, id="fraction-any-case"),
        pytest.param({"retry-after": "0"}, 0.0, id="zero"),
        pytest.param({"retry-after-ms": "250", "retry-after": "9"}, 0.25, id="ms-wins"),
        pytest.param({"retry-after-ms": "soon", "retry-after": "3"}, 3.0, id="bad-ms-falls-back"),
        pytest.param({"retry-after-ms": "-5", "retry-after": "3"}, 3.0, id="negative-ms-falls-back"),
        pytest.param({"retry-after": email.utils.formatdate(NOW + 7, usegmt=True)}, 7.0, id="http-date"),
        pytest.param({"retry-after": email.utils.formatdate(NOW - 60, usegmt=True)}, 0.0, id="past-date-is-now"),
        pytest.param({"retry-after": "-1"}, None, id="negative"),
        pytest.param({"retry-after": "whenever"}, None, id="garbage"),
    ],
)
def test_retry_after_reads_what_the_provider_asked(headers: dict[str, str], expected: float | None) -> None:
    assert retry_after(headers, now=NOW) == expected
    assert retry_after(httpx.Headers(headers), now=NOW) == expected  # httpx's case-insensitive headers too


def test_retry_delay_honours_retry_after_else_backs_off_and_is_capped() -> None:
    """The window's ends (jitter at 0 and at 1): Retry-After is never cut short; backoff doubles; `cap` holds."""
    def window(*args: object, **kwargs: object) -> tuple[float, float]:
        low, high = (retry_delay(*args, rand=lambda: r, **kwargs) for r in (0.0, 1.0))  # type: ignore[misc,arg-type]
        return round(low, 6), round(high, 6)

    assert window({"retry-after": "2"}, 0) == (2.0, 2.5)
    assert [window({}, attempt) for attempt in range(4)] == [(0.25, 0.5), (0.5, 1.0), (1.0, 2.0), (2.0, 4.0)]
    assert window({}, 2, base=0.1) == (0.2, 0.4)
    assert window({"retry-after": "120"}, 0, cap=10.0) == (8.0, 10.0)
    assert window({}, 10, cap=3.0) == (2.4, 3.0)
    assert window({"retry-after": "garbage"}, 1) == (0.5, 1.0)  # unreadable: backoff, not zero
    assert window({"retry-after": email.utils.formatdate(NOW + 4, usegmt=True)}, 0, now=NOW) == (4.0, 4.9)


@pytest.mark.parametrize("status", sorted(RETRY_STATUSES | {500, 501, 502, 503, 504, 520, 529, 599}))
def test_rate_limits_timeouts_conflicts_and_server_errors_are_retryable(status: int) -> None:
    assert retryable(status, {})


@pytest.mark.parametrize("status", [200, 400, 401, 403, 404, 422])
def test_client_errors_and_successes_are_not(status: int) -> None:
    assert not retryable(status, {})


def test_the_providers_x_should_retry_decides_for_errors() -> None:
    assert not retryable(500, {"x-should-retry": "false"})
    assert retryable(400, {"X-Should-Retry": "true"})
    assert not retryable(200, {"x-should-retry": "true"})  # a success is never retried
