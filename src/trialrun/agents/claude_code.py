"""Claude Code (`@anthropic-ai/claude-code`, checked with 2.1): `claude -p --output-format text`, configured through
CLAUDE_CONFIG_DIR (settings.json: permissions) and ANTHROPIC_BASE_URL; it speaks Anthropic Messages, streamed.

Its own permission check refuses what its mode and rules do not allow, as an error tool result ("... was
blocked", "... requires approval", "... haven't granted it yet"), read here as denials with source "agent". In its
default mode it blocks shell output redirection (`echo hi > f`); `permission_mode="acceptEdits"` allows that (and
also auto-approves `rm -rf` inside the working folder). CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC stops its title
and other side requests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._process import DUMMY_KEY, Launch
from ._preset import Preset

if TYPE_CHECKING:
    from ..case import TrialContext
    from ..endpoint import ModelEndpoint

__all__ = ["ClaudeCode", "claude_code"]

_MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")
_QUIET = {"DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
          "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_BUG_COMMAND": "1", "NO_COLOR": "1"}


class ClaudeCode(Preset):
    label = "claude-code"
    program = "claude"
    npm_package = "@anthropic-ai/claude-code"
    apis = ("anthropic",)
    shell_tool = ("Bash", "command")
    refusal_markers = ("was blocked", "requires approval", "haven't granted it yet", "Permission to use",
                       "has been denied", "permission denied by")
    permission_modes = _MODES
    permission_mode_is = "permission_mode must be"

    def settings(self) -> dict[str, Any]:
        permissions: dict[str, Any] = {"allow": self.allow, "deny": self.deny}
        if self.permission_mode:
            permissions["defaultMode"] = self.permission_mode
        return {"permissions": permissions, "includeCoAuthoredBy": False}

    def prepare(self, prompt: str, ctx: TrialContext, endpoint: ModelEndpoint, home: Path) -> Launch:
        config = home / ".claude"
        config.mkdir(parents=True)
        (config / "settings.json").write_text(json.dumps(self.settings(), indent=2))
        if self.instructions is not None:
            (config / "CLAUDE.md").write_text(self.instructions.read_text(encoding="utf-8"))
        self.install_skills(config / "skills")
        argv = [self.path, "-p", "--output-format", "text", "--model", str(self.model_name)]
        if self.permission_mode:
            argv += ["--permission-mode", self.permission_mode]
        argv += [*self.args, prompt]
        env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(config), "ANTHROPIC_BASE_URL": endpoint.anthropic_base_url,
               "ANTHROPIC_API_KEY": DUMMY_KEY, **_QUIET}
        return Launch(argv, env, home)

    def settings_for_snapshot(self) -> Any:
        return {**super().settings_for_snapshot(), "settings": self.settings()}


def claude_code(**options: Any) -> ClaudeCode:
    """Claude Code, ready to run: `tr.agents.claude_code(permission_mode="acceptEdits", allow=["Bash(echo:*)"])`."""
    return ClaudeCode(**options)
