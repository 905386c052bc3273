"""Agents in another process: `ProcessAgent` for any command, and ready-made ones for real coding agents.

    agent = tr.agents.claude_code(permission_mode="acceptEdits", skills=["skills/careful"])
    tr.Case(name="marker", invoke=lambda ctx: agent("make marker.txt", ctx, model=tr.ScriptedModel(...)), ...)

In trialrun.toml: `agent = "pi"` (or "codex", "claude-code", "opencode", "mini-swe-agent", "qwen-code",
"gemini-cli", "kimi-cli", "continue-cli", "kilo-code", "copilot-cli"), or `agent = "command: my-agent {prompt}"`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._process import AgentNotFound, Launch, ProcessAgent
from ._preset import Preset
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

__all__ = ["ProcessAgent", "Preset", "AgentNotFound", "Launch", "PRESETS", "preset", "pi", "codex", "claude_code", "opencode",
           "mini_swe_agent", "qwen_code", "gemini_cli", "kimi_cli", "continue_cli", "kilo_code", "copilot_cli", "Pi", "Codex", "ClaudeCode", "Opencode", "MiniSweAgent", "QwenCode", "GeminiCli", "KimiCli", "ContinueCli", "KiloCode", "CopilotCli"]


PRESETS: dict[str, Callable[..., Preset]] = {"pi": pi, "codex": codex, "claude-code": claude_code, "opencode": opencode,
                                       "mini-swe-agent": mini_swe_agent, "qwen-code": qwen_code,
                                       "gemini-cli": gemini_cli, "kimi-cli": kimi_cli,
                                       "continue-cli": continue_cli, "kilo-code": kilo_code,
                                       "copilot-cli": copilot_cli}


def preset(name: str, **options: Any) -> Preset:
    """A ready-made agent by its trialrun.toml name (`PRESETS`: "pi", "codex", "claude-code", ...); a mistyped name
    (`claude`, `claude_code`, `Pi`) says which one it most likely means."""
    if name not in PRESETS:
        from ..config import preset_suggestion

        suggestion = preset_suggestion(name)
        raise ValueError(f"no ready-made agent {name!r}" + (f"; did you mean {suggestion!r}?" if suggestion else "")
                         + f" (known: {', '.join(PRESETS)})")
    return PRESETS[name](**options)
