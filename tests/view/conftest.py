"""Headless Chromium for the viewer's browser tests: the render tests' driver (`tests/render/_browser.py`, one place
for how the tests drive the browser), one browser per module; in CI a browser that cannot start fails the tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "render"))

import _browser  # noqa: E402


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
