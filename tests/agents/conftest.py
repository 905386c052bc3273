"""The real CLI coding agents for these tests (installed by .ci/install-agents into a cache folder; see
tests/_agents.py, the one place that finds them: in CI a missing agent FAILS the test, it never skips)."""

from __future__ import annotations

import pytest
from _agents import require_agent


@pytest.fixture(scope="session")
def agent_path() -> object:
    """`agent_path("claude-code")`: the path of a real agent's program (see `_agents.require_agent`)."""
    return require_agent
