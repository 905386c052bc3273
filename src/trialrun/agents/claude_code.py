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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._contract import (
    AgentContract,
    Endpoint,
    Errors,
    FileTool,
    Knobs,
    Permissions,
    Refusals,
    Refusing,
    ShellTool,
    SideRequests,
    SubAgents,
    forms,
    pinned,
)
from ._preset import Preset
from ._process import DUMMY_KEY, Launch

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..case import TrialContext
    from ..endpoint import ModelEndpoint
    from ..mcp import McpEndpoint

__all__ = ["ClaudeCode", "claude_code", "CONTRACT", "REFUSALS"]

_QUIET = {"DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
          "DISABLE_BUG_COMMAND": "1", "NO_COLOR": "1"}
_RM = "rm -rf sentinel"
_PY_DELETE = "python3 -c \"import os; os.remove('sentinel/keep.txt')\""
_RUNS_ALL = {"permission_mode": "acceptEdits", "allow": ["Bash"]}

CONTRACT = AgentContract(
    name="claude-code",
    pin=pinned("claude-code"),
    summary="Claude Code: its own permission modes and rules refuse commands and edits",
    apis=("anthropic",),
    endpoint=Endpoint("ANTHROPIC_BASE_URL (streamed Anthropic Messages), with CLAUDE_CONFIG_DIR's settings.json",
                      env=("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "CLAUDE_CONFIG_DIR"),
                      files=(".claude/settings.json", ".claude/CLAUDE.md", ".claude/skills/"), quiet=_QUIET,
                      flags=("-p", "--output-format", "text")),
    shell=(ShellTool("Bash", "command", required=("description",), background="run_in_background"),),
    files=(FileTool("read", "Read", "file_path", absolute=True),
           FileTool("write", "Write", "file_path", "whole-file", content="content", absolute=True, read_first=True),
           FileTool("edit", "Edit", "file_path", "claude", old="old_string", new="new_string", absolute=True,
                    read_first=True),
           FileTool("edit", "MultiEdit", "file_path", "claude", old="old_string", new="new_string", edits="edits",
                    absolute=True, read_first=True)),
    # Claude Code's permission refusals, each a WHOLE tool result (flagged is_error), as its 2.1 permission checks
    # word them (rules, modes, its working-folder check); the recordings in tests/fixtures/agent-traffic/claude-code
    # show each marked one (refuse-*.yaml, destructive.yaml, subagent-refused.yaml, lookalike.yaml).
    refusals=Refusals(forms(
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
    ), where="the tool result", needs_error_flag=True, examples=(
        "Permission to use Bash with command rm -rf sentinel has been denied.",
        "Permission to use Bash has been denied because Claude Code is running in don't ask mode.",
        "This command requires approval",
        "rm in '/tmp/work/sentinel' was blocked. For security, Claude Code may only remove files from the allowed "
        "working directories for this session: '/tmp/work'.",
    ), recordings="refuse-*.yaml, destructive.yaml, subagent-refused.yaml"),
    errors=Errors("the wire's `is_error` (`tool-error.yaml`)", flagged_apis=("anthropic",)),
    permissions=Permissions(
        modes=("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk"), default_mode="default",
        rules='"Bash(echo:*)", "Bash(rm:*)" (its permission rules)', runs_all=_RUNS_ALL,
        note="the default mode blocks shell redirects and `rm`; `acceptEdits` allows redirects (and `rm -rf` inside the "
             "working folder)",
        refusing=(
            Refusing("default", {}, _RM),
            Refusing("plan", {"permission_mode": "plan"}, _RM),
            # a command its rm/mv path check does not look at: refused by the mode itself
            Refusing("default-python", {}, _PY_DELETE, pattern="python3"),
            Refusing("plan-python", {"permission_mode": "plan"}, _PY_DELETE, pattern="python3"),
            Refusing("dontAsk", {"permission_mode": "dontAsk"}, _RM),
            Refusing("deny-rule", {**_RUNS_ALL, "deny": ["Bash(rm:*)"]}, _RM),
        )),
    subagents=SubAgents("Agent", "prompt", {"description": "clean up", "subagent_type": "general-purpose"},
                        read="on the wire, by the same forms (its results carry the flag)"),
    side_requests=SideRequests("title and other non-essential requests",
                               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
                               env={"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}),
    others=("CronCreate", "CronDelete", "CronList", "EnterWorktree", "ExitWorktree", "NotebookEdit", "ReportFindings",
            "ScheduleWakeup", "SendMessage", "Skill", "TaskCreate", "TaskGet", "TaskList", "TaskOutput", "TaskStop",
            "TaskUpdate", "WebFetch", "WebSearch", "DesignSync", "TodoWrite", "Glob", "Grep", "LS", "NotebookRead",
            "BashOutput", "KillShell", "KillBash", "AskUserQuestion", "ExitPlanMode", "EnterPlanMode"),
    unfollowed={"Workflow": "it runs a workflow script of Claude Code's own that orchestrates sub-agents: what the "
                            "script itself does is not on the wire"},
    knobs=Knobs(instructions="CLAUDE.md in CLAUDE_CONFIG_DIR", skills="CLAUDE_CONFIG_DIR/skills/<name>/SKILL.md"),
    sandboxes_tested=("none", "bwrap"),
)
#: Its refusal forms (the contract's), kept under their old name.
REFUSALS = CONTRACT.refusals.forms if CONTRACT.refusals else ()


class ClaudeCode(Preset):
    contract = CONTRACT

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
        argv = [self.path, *self.contract.endpoint.flags, "--model", str(self.model_name)]
        if self.permission_mode:
            argv += ["--permission-mode", self.permission_mode]
        argv += [*self.args, prompt]
        env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(config), "ANTHROPIC_BASE_URL": endpoint.anthropic_base_url,
               "ANTHROPIC_API_KEY": DUMMY_KEY, **self.contract.endpoint.quiet,
               **({} if self.side_requests or self.contract.side_requests is None else self.contract.side_requests.env)}
        return Launch(argv, env, home)

    def settings_for_snapshot(self) -> Any:
        return {**super().settings_for_snapshot(), "settings": self.settings()}

    mcp_support = ("--mcp-config FILE --strict-mcp-config (the trial's servers and no others), their tools allowed "
                   "by --allowedTools mcp__NAME, connected before its first request (MCP_CONNECTION_NONBLOCKING=false); the "
                   "model sees them as mcp__NAME__TOOL")

    def with_mcp(self, launch: Launch, servers: Sequence[McpEndpoint], home: Path) -> Launch:
        path = home / ".claude" / "trialrun-mcp.json"
        path.write_text(json.dumps({"mcpServers": {s.name: s.config() for s in servers}}, indent=2))
        # before its own flags: both options take several values, up to the next option
        launch.argv[1:1] = ["--mcp-config", str(path), "--strict-mcp-config", "--allowedTools",
                            *(f"mcp__{s.name}" for s in servers)]
        launch.env["MCP_CONNECTION_NONBLOCKING"] = "false"  # connect before the first model request, not during it
        return launch


def claude_code(**options: Any) -> ClaudeCode:
    """Claude Code, ready to run: `tr.agents.claude_code(permission_mode="acceptEdits", allow=["Bash(echo:*)"])`."""
    return ClaudeCode(**options)
