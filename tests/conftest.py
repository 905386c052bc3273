"""Shared test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

PROVIDER_TRAFFIC = Path(__file__).resolve().parent / "fixtures" / "provider-traffic"


@pytest.fixture
def provider_traffic() -> Path:
    """Folder of real recorded provider traffic (VCR-style YAML cassettes), one sub-folder per wire format."""
    return PROVIDER_TRAFFIC
