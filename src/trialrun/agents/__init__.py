"""Agents in another process: `ProcessAgent` for any command, and ready-made ones for real coding agents.

    agent = tr.agents.claude_code(permission_mode="acceptEdits", skills=["skills/careful"])
    tr.Case(name="marker", invoke=lambda ctx: agent("make marker.txt", ctx, model=tr.ScriptedModel(...)), ...)

In trialrun.toml: `agent = "pi"` (or "codex", "claude-code", "opencode"), or `agent = "command: my-agent {prompt}"`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._contract import AgentContract
from ._process import AgentNotFound, Launch, ProcessAgent
from ._preset import Preset
from .claude_code import ClaudeCode, claude_code
from .codex import Codex, codex
from .opencode import Opencode, opencode
from .pi import Pi, pi

__all__ = ["ProcessAgent", "Preset", "AgentNotFound", "Launch", "PRESETS", "CONTRACTS", "AgentContract", "preset",
           "pi", "codex", "claude_code", "opencode", "Pi", "Codex", "ClaudeCode", "Opencode"]

#: Each ready-made agent: its class (which names its contract) and its factory. Adding an agent is its module, a
#: line here and its line in the pinned list (`trialrun/agents/pinned.txt`, which `agent = "..."` is checked against).
_READY: tuple[tuple[type[Preset], Callable[..., Preset]], ...] = (
    (Pi, pi), (Codex, codex), (ClaudeCode, claude_code), (Opencode, opencode))
#: The ready-made agents' factories, by their trialrun.toml names.
PRESETS: dict[str, Callable[..., Preset]] = {cls.contract.name: factory for cls, factory in _READY}
#: Each ready-made agent's declared contract (`AgentContract`), by name.
CONTRACTS: dict[str, AgentContract] = {cls.contract.name: cls.contract for cls, _ in _READY}

def preset(name: str, **options: Any) -> Preset:
    """A ready-made agent by its trialrun.toml name ("pi", "codex", "claude-code", "opencode"); a mistyped name
    (`claude`, `claude_code`, `Pi`) says which one it most likely means."""
    if name not in PRESETS:
        from ..config import preset_suggestion

        suggestion = preset_suggestion(name)
        raise ValueError(f"no ready-made agent {name!r}" + (f"; did you mean {suggestion!r}?" if suggestion else "")
                         + f" (known: {', '.join(PRESETS)})")
    return PRESETS[name](**options)
