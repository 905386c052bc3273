"""Agents in another process: `ProcessAgent` for any command, and ready-made ones for real coding agents.

    agent = tr.agents.claude_code(permission_mode="acceptEdits", skills=["skills/careful"])
    tr.Case(name="marker", invoke=lambda ctx: agent("make marker.txt", ctx, model=tr.ScriptedModel(...)), ...)

In trialrun.toml: `agent = "pi"` (or any name in `PRESETS`: "codex", "claude-code", "opencode", "qwen-code",
"gemini-cli", "continue-cli", "kilo-code", "copilot-cli", "mini-swe-agent", "kimi-cli"), or
`agent = "command: my-agent {prompt}"`.

May import: everything up to `run` (a trial's endpoint, its keeper and sandbox from `_contain`); never the
suite files (they build agents from trialrun.toml), a renderer or the CLI.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._contract import AgentContract
from ._preset import Preset
from ._process import AgentNotFound, Launch, ProcessAgent
from .claude_code import ClaudeCode, claude_code
from .codex import Codex, codex
from .continue_cli import ContinueCli, continue_cli
from .copilot_cli import CopilotCli, copilot_cli
from .gemini_cli import GeminiCli, gemini_cli
from .kilo_code import KiloCode, kilo_code
from .kimi_cli import KimiCli, kimi_cli
from .mini_swe_agent import MiniSweAgent, mini_swe_agent
from .opencode import Opencode, opencode
from .pi import Pi, pi
from .qwen_code import QwenCode, qwen_code

__all__ = ["ProcessAgent", "Preset", "AgentNotFound", "Launch", "PRESETS", "CONTRACTS", "AgentContract", "preset",
           "pi", "codex", "claude_code", "opencode", "Pi", "Codex", "ClaudeCode", "Opencode",
           # issue 25
           "qwen_code", "gemini_cli", "continue_cli", "kilo_code", "copilot_cli", "mini_swe_agent", "kimi_cli",
           "QwenCode", "GeminiCli", "ContinueCli", "KiloCode", "CopilotCli", "MiniSweAgent", "KimiCli"]

#: Each ready-made agent: its class (which names its contract) and its factory. Adding an agent is its module, a
#: line here and its line in the pinned list (`trialrun/agents/pinned.txt`, which `agent = "..."` is checked against).
_READY: tuple[tuple[type[Preset], Callable[..., Preset]], ...] = (
    (Pi, pi), (Codex, codex), (ClaudeCode, claude_code), (Opencode, opencode),
    (QwenCode, qwen_code), (GeminiCli, gemini_cli), (ContinueCli, continue_cli), (KiloCode, kilo_code),
    (CopilotCli, copilot_cli), (MiniSweAgent, mini_swe_agent), (KimiCli, kimi_cli))
#: The ready-made agents' factories, by their trialrun.toml names.
PRESETS: dict[str, Callable[..., Preset]] = {cls.contract.name: factory for cls, factory in _READY}
#: Each ready-made agent's declared contract (`AgentContract`), by name.
CONTRACTS: dict[str, AgentContract] = {cls.contract.name: cls.contract for cls, _ in _READY}

def preset(name: str, **options: Any) -> Preset:
    """A ready-made agent by its trialrun.toml name ("pi", "codex", "claude-code", "opencode"); a mistyped name
    (`claude`, `claude_code`, `Pi`) says which one it most likely means."""
    if name not in PRESETS:
        from ._pins import preset_suggestion

        suggestion = preset_suggestion(name)
        raise ValueError(f"no ready-made agent {name!r}" + (f"; did you mean {suggestion!r}?" if suggestion else "")
                         + f" (known: {', '.join(PRESETS)})")
    return PRESETS[name](**options)
