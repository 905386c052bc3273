"""Finding the real CLI coding agents for these tests (installed by .ci/install-agents into a cache folder).

TRIALRUN_AGENTS_DIR (default ~/.cache/trialrun-agents) holds node_modules/.bin/<program>; PATH is tried next. In CI
(CI set) a missing agent FAILS the test with what to install: these tests must run there, never skip.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

#: agent name (as in trialrun.toml) -> (program, npm package)
AGENTS = {"pi": ("pi", "@mariozechner/pi-coding-agent"), "codex": ("codex", "@openai/codex"),
          "claude-code": ("claude", "@anthropic-ai/claude-code"), "opencode": ("opencode", "opencode-ai")}


def agents_dir() -> Path:
    return Path(os.environ.get("TRIALRUN_AGENTS_DIR") or "~/.cache/trialrun-agents").expanduser()


def agent_program(name: str) -> str:
    """The path of a real agent's program ("claude-code" -> .../claude); fails in CI (skips elsewhere) when it is
    not installed."""
    program, package = AGENTS[name]
    candidate = agents_dir() / "node_modules" / ".bin" / program
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    found = shutil.which(program)
    if found:
        return found
    message = (f"{program} is not installed: run .ci/install-agents, or `npm install --prefix {agents_dir()} "
               f"{package}` (TRIALRUN_AGENTS_DIR names the folder)")
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def agent_path() -> object:
    """`agent_path("claude-code")`: the path of a real agent's program (see agent_program)."""
    return agent_program
