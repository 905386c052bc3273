"""Gemini CLI (`@google/gemini-cli`, checked with 0.61.0): `gemini -p PROMPT -m M --skip-trust -o text`, pointed
at the endpoint by GOOGLE_GEMINI_BASE_URL (its Gemini API key auth; loopback may be plain HTTP) and configured
through HOME/.gemini (settings.json: that auth, usage statistics, telemetry and update checks off; policies/*.toml:
the allow/deny rules; GEMINI.md: standing instructions; skills/). It speaks the Gemini API, streamed
(`:streamGenerateContent?alt=sse`): function calls carry no ids, and results are matched to calls by order.
Its tools: run_shell_command (`command`), read_file / write_file (`file_path`), replace (`file_path`,
`instruction`, `old_string`, `new_string`), list_directory, glob, grep_search, web_fetch, google_web_search,
invoke_agent (sub-agents), activate_skill, ... Without `--skip-trust` it stops in a folder it has not been told
to trust.

`permission_mode` is its approval mode (`--approval-mode`): "default" (without a terminal it does not offer the
tools that would ask: a call of one answers `Tool "run_shell_command" not found`), "auto_edit", "yolo" or "plan".
`allow`/`deny` are command prefixes of run_shell_command, written as its policy engine's rules (a deny outranks
an allow).

The Gemini wire flags a failed call (`is_error`), and that flag is Gemini CLI's own: a refused call is a flagged
result whose WHOLE text is one of its refusals (`REFUSALS`: "Tool execution denied by policy.", a built-in
tool its mode removed, plan mode's "Access denied: plan path ..."). A shell command that exits non-zero is NOT
flagged by it (its record says "Exit Code: N"): it counts as an error only where the agent flags one.
"""

from __future__ import annotations

import json
import re
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
    SubAgents,
    pinned,
)
from ._preset import Preset
from ._process import DUMMY_KEY, Launch

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..case import TrialContext
    from ..endpoint import ModelEndpoint
    from ..mcp import McpEndpoint

__all__ = ["GeminiCli", "gemini_cli", "REFUSALS", "CONTRACT"]

_MODES = ("default", "auto_edit", "yolo", "plan")
#: Its own tools (0.61.0): a call of one of these answered "not found" was removed by its approval mode.
BUILTIN_TOOLS = ("run_shell_command", "write_file", "replace", "read_file", "read_many_files", "list_directory",
                 "glob", "grep_search", "web_fetch", "google_web_search", "save_memory", "write_todos",
                 "invoke_agent", "activate_skill", "enter_plan_mode", "exit_plan_mode", "update_topic",
                 "list_background_processes", "read_background_output")

#: Gemini CLI's refusals (0.61.0), each the WHOLE text of a flagged result (tests/fixtures/agent-traffic/gemini-cli:
#: refuse-policy, refuse-default, refuse-plan).
REFUSALS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((why, re.compile(pattern, re.DOTALL)) for why, pattern in (
    ("a policy rule", r"Tool execution denied by policy\..*"),
    ("its approval mode", r'Tool "(?:' + "|".join(BUILTIN_TOOLS) + r')" not found\. Did you mean one of: .*'),
    ("plan mode", r"Access denied: plan path \(.*\) must be within the designated plans directory \(.*\)\."),
))


CONTRACT = AgentContract(
    name="gemini-cli",
    pin=pinned("gemini-cli"),
    sandboxes_tested=("none", "bwrap"),  # bwrap: the battery's ran-bwrap
    summary="Gemini CLI: approval modes and policy-engine rules; without a terminal it offers no tool that would ask",
    apis=("gemini",),
    endpoint=Endpoint("GOOGLE_GEMINI_BASE_URL (its Gemini API key auth in settings.json)",
                      env=("GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY"),
                      files=(".gemini/settings.json", ".gemini/GEMINI.md", ".gemini/skills/"),  # (and, with
                      # allow/deny rules, .gemini/policies/trialrun.toml)
                      quiet={"GEMINI_TELEMETRY_ENABLED": "false", "NO_COLOR": "1"}, flags=("--skip-trust", "-o", "text")),
    shell=(ShellTool("run_shell_command", "command"),),
    files=(FileTool("read", "read_file", "file_path", absolute=True),
           FileTool("write", "write_file", "file_path", "whole-file", content="content", absolute=True),
           FileTool("edit", "replace", "file_path", "claude", old="old_string", new="new_string", absolute=True,
                    required={"instruction": "make the change"},
                    corrects="a near-miss old string, corrected by itself; its result shows a snippet, not the "
                             "file: unknown")),
    refusals=Refusals(
        REFUSALS, where="the tool result (its functionResponse `error`)", needs_error_flag=True,
        examples=("Tool execution denied by policy.",
                  'Tool "run_shell_command" not found. Did you mean one of: "update_topic", "grep_search", '
                  '"invoke_agent"?'),
        recordings="refuse-policy.yaml, refuse-default.yaml"),
    errors=Errors("Gemini's `error` (its own flag: a shell command that exits non-zero is NOT flagged, its record "
                  "says `Exit Code: N`) (`gemini-cli/tool-error.yaml`)", flagged_apis=("gemini",)),
    permissions=Permissions(
        modes=_MODES, mode_is="permission_mode is its approval mode,", default_mode="default",
        rules="command prefixes of run_shell_command, as its policy engine's rules (a deny outranks an allow)",
        runs_all={"permission_mode": "yolo"},
        note="default and plan mode offer no tool that would ask (a call of one: `Tool ... not found`)",
        refusing=(Refusing("policy", {"permission_mode": "yolo", "deny": ["rm"]}, "rm -rf sentinel"),
                  Refusing("default", {}, "rm -rf sentinel"),
                  Refusing("plan", {"permission_mode": "plan"}, "rm -rf sentinel"))),
    subagents=SubAgents("invoke_agent", "prompt", {"agent_name": "generalist"},
                        read="on the wire (no call ids: its results are paired by position and name)"),
    others=("update_topic", "list_directory", "grep_search", "glob", "web_fetch", "list_background_processes",
            "read_background_output", "google_web_search", "enter_plan_mode", "exit_plan_mode", "activate_skill",
            "save_memory", "write_todos", "read_many_files", "ask_user"),
    knobs=Knobs(instructions="HOME/.gemini/GEMINI.md", skills="HOME/.gemini/skills/<name>/SKILL.md"),
)


def _toml(value: str) -> str:
    return json.dumps(value)  # a JSON string is a TOML basic string


class GeminiCli(Preset):
    contract = CONTRACT

    def settings(self) -> dict[str, Any]:
        return {"privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
                "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                "security": {"auth": {"selectedType": "gemini-api-key"}}}

    def policy(self) -> str:
        """The allow/deny rules as its policy engine's TOML rules on run_shell_command's command prefix."""
        rules = []
        for decision, patterns, priority in (("allow", self.allow, 100), ("deny", self.deny, 200)):
            for pattern in patterns:
                rules.append(f'[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = {_toml(pattern)}\n'
                             f'decision = "{decision}"\npriority = {priority}\n')
        return "\n".join(rules)

    def prepare(self, prompt: str, ctx: TrialContext, endpoint: ModelEndpoint, home: Path) -> Launch:
        config = home / ".gemini"
        config.mkdir(parents=True)
        (config / "settings.json").write_text(json.dumps(self.settings(), indent=2))
        if self.allow or self.deny:
            (config / "policies").mkdir()
            (config / "policies" / "trialrun.toml").write_text(self.policy())
        if self.instructions is not None:
            (config / "GEMINI.md").write_text(self.instructions.read_text(encoding="utf-8"))
        self.install_skills(config / "skills")
        argv = [self.path, "-m", str(self.model_name), *CONTRACT.endpoint.flags]
        if self.permission_mode:
            argv += ["--approval-mode", self.permission_mode]
        argv += [*self.args, "-p", prompt]
        env = {"HOME": str(home), "GOOGLE_GEMINI_BASE_URL": endpoint.url, "GEMINI_API_KEY": DUMMY_KEY,
               **CONTRACT.endpoint.quiet}
        return Launch(argv, env, home)

    def settings_for_snapshot(self) -> Any:
        return {**super().settings_for_snapshot(), "settings": self.settings(), "policy": self.policy()}

    mcp_support = ("mcpServers in HOME/.gemini/settings.json (command and args, or httpUrl), each trusted (its tools "
                   "need no confirmation); the model sees them as mcp_NAME_TOOL")

    def with_mcp(self, launch: Launch, servers: Sequence[McpEndpoint], home: Path) -> Launch:
        path = home / ".gemini" / "settings.json"
        settings = json.loads(path.read_text(encoding="utf-8"))
        settings["mcpServers"] = {
            s.name: ({"httpUrl": s.url} if s.transport == "http" else {"command": s.command[0],
                                                                  "args": s.args}) | {"trust": True, "timeout": 60000}
            for s in servers}
        path.write_text(json.dumps(settings, indent=2))
        return launch


def gemini_cli(**options: Any) -> GeminiCli:
    """Gemini CLI, ready to run: `tr.agents.gemini_cli(permission_mode="yolo", deny=["rm"])` (see `Preset`)."""
    return GeminiCli(**options)
