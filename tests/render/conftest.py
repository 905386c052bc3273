"""Headless Chromium for the browser tests of the HTML report and of `trialrun view` (one browser per module; in CI
a browser that cannot start fails the tests, see `_browser.require`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import _browser
import pytest


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    _browser.require()
    with _browser.chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def context(chromium: Any) -> Iterator[Any]:
    ctx = _browser.new_context(chromium)
    yield ctx
    ctx.close()
