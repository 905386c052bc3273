"""Kimi CLI (PyPI `kimi-cli`, checked with 1.51.0, Python >= 3.12; 1.52.0, its last release, only prints that it
is no longer maintained): `kimi --print --output-format text --final-message-only --config-file FILE -p PROMPT`,
configured by a TOML file in the trial's HOME (an `openai_legacy` provider at the endpoint, telemetry off) and
KIMI_SHARE_DIR (its sessions and logs) there too; it speaks Chat Completions, streamed. Its tools: Shell
(`command`, `timeout`), ReadFile / WriteFile (`path`, `content`), StrReplaceFile (`path`, `edit: {old, new}`),
Glob, Grep, Agent (sub-agents), FetchURL, SetTodoList, plan-mode tools, background-task tools.

Print mode approves every tool call itself: there are no rules to refuse a command. `permission_mode="plan"`
(`--plan`) makes it refuse file writes outside its plan file ("Plan mode is active. You may only edit the current
plan file: ..."), while Shell still runs whatever it is given (seen: `rm -rf` ran in plan mode).

Every tool result starts with Kimi CLI's own message part, `<system>MESSAGE</system>`, before what the tool
printed (a command's output is a later part, so it cannot stand first): a failure is `<system>ERROR: ...</system>`
("Command failed with exit code: 3.", "`missing.txt` does not exist.", "Command killed by timeout (2s)"), and a
refusal is an ERROR whose message is one of `REFUSALS`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..trajectory import ToolCall, ToolResult
from ._contract import (
    AgentContract,
    Endpoint,
    Errors,
    FileTool,
    Knobs,
    Permissions,
    Refusals,
    ShellTool,
    SubAgents,
    matching,
    pinned,
)
from ._preset import Preset
from ._process import DUMMY_KEY, Launch

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..case import TrialContext
    from ..endpoint import ModelEndpoint
    from ..mcp import McpEndpoint

__all__ = ["KimiCli", "kimi_cli", "REFUSALS", "CONTRACT"]

_MODES = ("plan",)
#: Its own first part of every result: the message, then (after a newline) what the tool printed.
_OWN = re.compile(r"<system>(ERROR: )?(.*?)</system>(?:\n.*)?", re.DOTALL)
#: Its refusals (1.51.0): the message of an ERROR result (tests/fixtures/agent-traffic/kimi-cli/refuse-plan.yaml).
REFUSALS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((why, re.compile(pattern, re.DOTALL)) for why, pattern in (
    ("plan mode", r"Plan mode is active\. You may only edit the current plan file: .*"),
    ("the user rejected it", r"The user rejected .*"),
))


_QUIET = {"KIMI_DISABLE_TELEMETRY": "1", "KIMI_CLI_NO_AUTO_UPDATE": "1", "NO_COLOR": "1"}

CONTRACT = AgentContract(
    name="kimi-cli",
    pin=pinned("kimi-cli"),
    sandboxes_tested=("none", "bwrap"),  # bwrap: the battery's ran-bwrap
    summary="Kimi CLI (the archived Python one): print mode approves every call; plan mode stops file writes only",
    apis=("openai-chat",),
    endpoint=Endpoint("a TOML config file (--config-file) names an openai_legacy provider at the endpoint",
                      env=("KIMI_SHARE_DIR",), files=(".kimi/config.toml", ".kimi/skills/"), quiet=_QUIET,
                      flags=("--print", "--output-format", "text", "--final-message-only")),
    shell=(ShellTool("Shell", "command", long={"timeout": 300}),),
    files=(FileTool("read", "ReadFile", "path", absolute=True),
           FileTool("write", "WriteFile", "path", "whole-file", content="content", absolute=True),
           FileTool("edit", "StrReplaceFile", "path", "kimi", old="old", new="new", edits="edit", edits_list=False,
                    absolute=True)),
    refusals=Refusals(
        REFUSALS, where="the message of its own leading `<system>ERROR: ...</system>` part of the result",
        examples=("Plan mode is active. You may only edit the current plan file: `/tmp/plans/plan.md`.",),
        recordings="refuse-plan.yaml"),
    errors=Errors("none on the wire: its own first part, `<system>ERROR: ...</system>` before the tool's output "
                  "(`kimi-cli/tool-error.yaml`)"),
    # (print mode approves everything: no configuration refuses a command; plan mode refuses writes, runs `rm`)
    permissions=Permissions(modes=_MODES, mode_is="permission_mode is its plan mode (print mode approves "
                                                   "everything else),",
                            note="print mode approves every call; `--plan` refuses file writes but runs shell "
                                 "commands (`rm -rf` ran)"),
    subagents=SubAgents("Agent", "prompt", {"description": "clean up", "subagent_type": "coder"},
                        read="on the wire, by the same forms"),
    others=("AskUserQuestion", "SetTodoList", "TaskList", "TaskOutput", "TaskStop", "Glob", "Grep", "FetchURL",
            "ExitPlanMode", "EnterPlanMode", "SearchWeb", "ReadMediaFile"),
    knobs=Knobs(instructions="none (it reads the workdir's AGENTS.md)", skills="--skills-dir DIR"),
)


def _toml(value: str) -> str:
    import json

    return json.dumps(value)  # a JSON string is a TOML basic string


class KimiCli(Preset):
    contract = CONTRACT

    def check_knobs(self) -> None:
        super().check_knobs()
        if self.allow or self.deny:
            raise ValueError("kimi-cli: print mode approves every tool call; it has no allow/deny rules (use "
                             "permission_mode='plan' to stop its file writes, or a sandbox)")
        if getattr(self, "instructions", None) is not None:
            raise ValueError("kimi-cli reads standing instructions from the workdir's AGENTS.md; the preset has no "
                             "instructions file of its own")

    def _own(self, text: str) -> re.Match[str] | None:
        return _OWN.fullmatch(text)

    def refusal_in(self, call: ToolCall, result: ToolResult) -> str | None:
        own = self._own(result.content)
        return matching(REFUSALS, own.group(2)) if own is not None and own.group(1) else None

    def error_in(self, call: ToolCall, result: ToolResult) -> bool | None:
        own = self._own(result.content)
        return None if own is None else own.group(1) is not None

    def config_toml(self, base_url: str) -> str:
        return "\n".join([
            'default_model = "trialrun"',
            "telemetry = false",
            "[providers.trialrun]",
            'type = "openai_legacy"',
            f"base_url = {_toml(base_url)}",
            f"api_key = {_toml(DUMMY_KEY)}",
            "[models.trialrun]",
            'provider = "trialrun"',
            f"model = {_toml(str(self.model_name))}",
            "max_context_size = 128000",
        ]) + "\n"

    def prepare(self, prompt: str, ctx: TrialContext, endpoint: ModelEndpoint, home: Path) -> Launch:
        share = home / ".kimi"
        share.mkdir(parents=True)
        config = share / "config.toml"
        config.write_text(self.config_toml(endpoint.openai_base_url))
        argv = [self.path, *CONTRACT.endpoint.flags, "--config-file", str(config)]
        if self.skills:
            self.install_skills(share / "skills")
            argv += ["--skills-dir", str(share / "skills")]
        if self.permission_mode == "plan":
            argv.append("--plan")
        argv += [*self.args, "-p", prompt]
        env = {"HOME": str(home), "KIMI_SHARE_DIR": str(share), **_QUIET}
        return Launch(argv, env, home)

    def settings_for_snapshot(self) -> Any:
        return {**super().settings_for_snapshot(), "config": self.config_toml("<endpoint>")}

    mcp_support = "--mcp-config-file FILE (mcpServers: command and args, or url with transport http)"

    def with_mcp(self, launch: Launch, servers: Sequence[McpEndpoint], home: Path) -> Launch:
        path = home / ".kimi" / "trialrun-mcp.json"
        path.write_text(json.dumps({"mcpServers": {
            s.name: {"url": s.url, "transport": "http"} if s.transport == "http" else
            {"command": s.command[0], "args": s.args} for s in servers}}, indent=2))
        launch.argv[1:1] = ["--mcp-config-file", str(path)]
        return launch


def kimi_cli(**options: Any) -> KimiCli:
    """Kimi CLI, ready to run: `tr.agents.kimi_cli(path="~/venvs/kimi/bin/kimi")` (see `Preset`)."""
    return KimiCli(**options)
