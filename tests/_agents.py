"""Finding the real command-line coding agents that the agent tests drive.

`.ci/install-agents` installs them (pinned versions) into `$TRIALRUN_AGENTS_DIR` (default
`~/.cache/trialrun-agents`): npm agents into its `node_modules`, Python agents each into its own venv,
`venvs/<name>`; an agent on PATH is used when the cache has none. In CI (`CI` set, e.g. `CI=true`) a
missing agent FAILS the test that needs it, with the command that installs it: those tests must run there, and a
skip would hide that they did not. Outside CI the test is skipped, saying what to install.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["AGENTS", "Agent", "agents_bin_dir", "venv_bin_dir", "find_agent", "in_ci", "installed_version", "require_agent"]


@dataclass(frozen=True)
class Agent:
    """One real agent: the name tests use, its program, and the npm package (with the version checked here), or
    the PyPI package (`pip`: installed into a venv of its own); `version_args` make the program print its version."""

    name: str
    program: str
    package: str
    version: str
    pip: bool = False
    version_args: tuple[str, ...] = ("--version",)

    @property
    def spec(self) -> str:
        return f"{self.package}=={self.version}" if self.pip else f"{self.package}@{self.version}"


AGENTS: dict[str, Agent] = {
    agent.name: agent
    for agent in (
        Agent("pi", "pi", "@mariozechner/pi-coding-agent", "0.73.1"),
        Agent("codex", "codex", "@openai/codex", "0.171.0"),
        Agent("claude-code", "claude", "@anthropic-ai/claude-code", "2.1.197"),
        Agent("opencode", "opencode", "opencode-ai", "1.18.33"),
        # issue 25
        Agent("qwen-code", "qwen", "@qwen-code/qwen-code", "0.24.4"),
        Agent("gemini-cli", "gemini", "@google/gemini-cli", "0.61.0"),
        Agent("continue-cli", "cn", "@continuedev/cli", "1.5.47"),
        Agent("kilo-code", "kilo", "@kilocode/cli", "7.7.7"),
        Agent("copilot-cli", "copilot", "@github/copilot", "1.0.102"),
        Agent("mini-swe-agent", "mini", "mini-swe-agent", "2.4.6", pip=True, version_args=("--help",)),
        Agent("kimi-cli", "kimi", "kimi-cli", "1.51.0", pip=True),
    )
}


def in_ci() -> bool:
    """True when the tests run in CI (the `CI` variable set to anything but empty, 0 or false)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def agents_bin_dir() -> Path:
    """Where `.ci/install-agents` puts the agents' executables."""
    base = os.environ.get("TRIALRUN_AGENTS_DIR") or str(Path.home() / ".cache" / "trialrun-agents")
    return Path(base) / "node_modules" / ".bin"


def venv_bin_dir(name: str) -> Path:
    """Where `.ci/install-agents` puts a Python agent's executables (its own venv)."""
    return agents_bin_dir().parent.parent / "venvs" / name / "bin"


def installed_version(name: str) -> str | None:
    """The version of agent `name`'s package in the install folder, or None when it is not there."""
    agent = AGENTS[name]
    if agent.pip:
        wanted = agent.package.replace("-", "_").lower()
        for info in sorted(venv_bin_dir(name).parent.glob("lib/python*/site-packages/*.dist-info")):
            project, _, version = info.name[: -len(".dist-info")].partition("-")
            if project.lower() == wanted:
                return version
        return None
    manifest = agents_bin_dir().parent / agent.package / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def find_agent(name: str) -> str | None:
    """The path of agent `name`'s executable (the install cache first, then PATH), or None when it is absent."""
    agent = AGENTS[name]
    cached = (venv_bin_dir(name) if agent.pip else agents_bin_dir()) / agent.program
    if cached.is_file() and os.access(cached, os.X_OK):
        return str(cached)
    return shutil.which(agent.program)


def require_agent(name: str) -> str:
    """The executable of agent `name`; when it is absent: a test failure in CI, a skip elsewhere."""
    found = find_agent(name)
    if found is not None:
        return found
    agent = AGENTS[name]
    message = (
        f"{agent.name}: program {agent.program!r} not found in "
        f"{venv_bin_dir(name) if agent.pip else agents_bin_dir()} nor on PATH; install it with .ci/install-agents "
        f"({'PyPI' if agent.pip else 'npm'} package {agent.spec})"
    )
    if in_ci():
        pytest.fail(f"{message}; the real-agent tests must run in CI", pytrace=False)
    pytest.skip(message)
