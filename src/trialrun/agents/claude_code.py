"""Claude Code (`@anthropic-ai/claude-code`, checked with 2.1): `claude -p --output-format text`, configured through
CLAUDE_CONFIG_DIR (settings.json: permissions) and ANTHROPIC_BASE_URL; it speaks Anthropic Messages, streamed.

Its own permission check refuses what its mode and rules do not allow, as a tool result flagged `is_error` whose
WHOLE text is one of its permission messages (`REFUSALS`: "Permission to use Bash with command rm -r x has been
denied.", "This command requires approval", "rm in '...' was blocked. For security, ...", "Cannot write to ...
while in plan mode.", ...), read here as denials with source "agent". A result that is not flagged, or whose text
only contains such words (a command that printed them; a failed command's "Exit code 1 ..."), is not a refusal.
The wire's `is_error` is its error flag. In its default mode it blocks shell output redirection (`echo hi > f`);
`permission_mode="acceptEdits"` allows that (and also auto-approves `rm -rf` inside the working folder).
CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC stops its title and other side requests (`side_requests=True` keeps them).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..trajectory import ToolCall, ToolResult
from ._process import DUMMY_KEY, Launch
from ._preset import Preset, matching

if TYPE_CHECKING:
    from ..case import TrialContext
    from ..endpoint import ModelEndpoint

__all__ = ["ClaudeCode", "claude_code"]

_MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")
_QUIET = {"DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
          "DISABLE_BUG_COMMAND": "1", "NO_COLOR": "1"}
#: Stops its title and other side requests (left unset with side_requests=True).
_NO_SIDE_REQUESTS = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}

#: Claude Code's permission refusals, each a WHOLE tool result (flagged is_error), as its 2.1 permission checks
#: word them (rules, modes, its working-folder check); the recordings in tests/fixtures/agent-traffic/claude-code
#: show each marked one (refuse-*.yaml, destructive.yaml, subagent-refused.yaml, lookalike.yaml).
REFUSALS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((why, re.compile(pattern, re.DOTALL)) for why, pattern in (
    # a deny rule (refuse-deny), don't-ask mode (refuse-dontask), a rule on a path: "Permission to edit X ..."
    ("a deny rule or its mode", r"Permission to (?:use|read|edit|write) .+? has been denied"
                                r"(?: because Claude Code is running in don't ask mode)?\.(?: IMPORTANT: .*)?"),
    ("not allowed in its mode", r"This command requires approval"),  # default and plan mode (refuse-default/plan)
    ("not allowed in its mode", r"This \S+ command contains multiple operations\. The following parts? requires? "
                                r"approval: .+"),  # lookalike.yaml
    ("not granted", r"Claude requested permissions to (?:use|write to|read from|edit) .+, but you haven't granted "
                    r"it yet\."),  # refuse-default (Write)
    ("plan mode", r"Cannot write to .+ while in plan mode\."),  # refuse-plan (Write)
    ("its mode", r"Current permission mode \(.+\) requires approval for this \S+ command"),
    ("a permission rule", r"Permission rule '.+' from .+ requires approval for this \S+ command"),
    ("its working-folder check", r"(?:\S+ in|\S+ targeting|Output redirection to) '.+' was blocked(?: by a deny "
                                 r"rule)?\.(?: For security, Claude Code may only .+ the allowed working "
                                 r"directories for this session: .+\.)?"),  # destructive, refuse-*, subagent-refused
    ("its organization", r"Your organization requires approval for this tool"),
))


class ClaudeCode(Preset):
    label = "claude-code"
    program = "claude"
    npm_package = "@anthropic-ai/claude-code"
    apis = ("anthropic",)
    shell_tool = ("Bash", "command")
    permission_modes = _MODES
    permission_mode_is = "permission_mode must be"

    def refusal_in(self, call: ToolCall, result: ToolResult) -> str | None:
        # the error flag AND a whole-result permission message: neither alone is a refusal
        return matching(REFUSALS, result.content) if result.is_error else None

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
               "ANTHROPIC_API_KEY": DUMMY_KEY, **_QUIET, **({} if self.side_requests else _NO_SIDE_REQUESTS)}
        return Launch(argv, env, home)

    def settings_for_snapshot(self) -> Any:
        return {**super().settings_for_snapshot(), "settings": self.settings()}


def claude_code(**options: Any) -> ClaudeCode:
    """Claude Code, ready to run: `tr.agents.claude_code(permission_mode="acceptEdits", allow=["Bash(echo:*)"])`."""
    return ClaudeCode(**options)
