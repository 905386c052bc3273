"""Finding the real command-line coding agents that the agent tests drive.

`.ci/install-agents` installs them (pinned versions) into `$TRIALRUN_AGENTS_DIR` (default
`~/.cache/trialrun-agents`); an agent on PATH is used when the cache has none (`_pins.find_program`, the rule a
trial follows). In CI (`CI` set, e.g. `CI=true`) a
missing agent FAILS the test that needs it, with the command that installs it: those tests must run there, and a
skip would hide that they did not. Outside CI the test is skipped, saying what to install.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trialrun.agents._pins import Pin, agents_dir, cache_program, find_program, pins
from trialrun.cli._agents import package_version

__all__ = ["AGENTS", "Agent", "agents_bin_dir", "find_agent", "in_ci", "installed_version", "require_agent"]


#: One real agent: the name tests use, its program, its package and the version checked here (a `Pin`).
Agent = Pin
#: Every ready-made agent, from the one pinned list its contract reads (trialrun/agents/pinned.txt).
AGENTS: dict[str, Agent] = dict(pins())


def in_ci() -> bool:
    """True when the tests run in CI (the `CI` variable set to anything but empty, 0 or false)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def agents_bin_dir() -> Path:
    """Where `.ci/install-agents` puts the agents' executables."""
    return agents_dir() / "node_modules" / ".bin"


def installed_version(name: str) -> str | None:
    """The version of agent `name`'s package in the install folder (its package.json; a PyPI agent's dist-info
    in its venv), or None when it is not there."""
    return package_version(AGENTS[name], str(cache_program(AGENTS[name])))


def find_agent(name: str) -> str | None:
    """The path of agent `name`'s executable where a trial finds it (the agent cache first, then PATH), or None
    when it is absent."""
    return find_program(AGENTS[name])[0]


def require_agent(name: str) -> str:
    """The executable of agent `name`; when it is absent: a test failure in CI, a skip elsewhere."""
    found = find_agent(name)
    if found is not None:
        return found
    agent = AGENTS[name]
    message = (
        f"{agent.name}: program {agent.program!r} not found in {agents_bin_dir()} nor on PATH; install it with "
        f".ci/install-agents ({agent.registry} package {agent.spec})"
    )
    if in_ci():
        pytest.fail(f"{message}; the real-agent tests must run in CI", pytrace=False)
    pytest.skip(message)
