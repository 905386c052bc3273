"""GitHub Copilot CLI (`@github/copilot`, program `copilot`, checked with 1.0.102): `copilot -p PROMPT
--no-auto-update --allow-all-tools`, with no GitHub login: its own "bring your own key" provider
(COPILOT_PROVIDER_BASE_URL at the endpoint, COPILOT_PROVIDER_API_KEY, COPILOT_MODEL) and COPILOT_OFFLINE=true
("the CLI skips all network access: GitHub authentication, telemetry, web tools, GitHub MCP server, and
auto-update"); COPILOT_HOME in the trial's HOME. It speaks Chat Completions, streamed, with no side requests.
Without the provider variables it stops: "Error: No authentication information found." The npm launcher
extracts its package into XDG_CACHE_HOME/copilot on first start (8-13 s here): the preset keeps that in one
folder per user under the system's temporary folder, so only the first trial pays it.

Its tools: bash (`command`, `description`), read_bash / stop_bash / list_bash (its shell sessions), view
(`path`, absolute), create (`path`, `file_text`), edit (`path`, `old_str`, `new_str`), grep, glob, task
(sub-agents), skill, sql, fetch_copilot_cli_documentation and agent tools.

`permission_mode` is "allow-all" (the default: `--allow-all-tools`) or "ask" (no such flag: without a terminal
every tool that needs approval is denied); `allow`/`deny` are its `--allow-tool`/`--deny-tool` rules
(`"shell(rm)"`). A refused call's result is WHOLLY one of its permission messages (`REFUSALS`). Chat Completions
has no error flag: bash's result ends with its own line `<shellId: N completed with exit code K>` (after the
command's output, so the last such line is its own), failed when K is not 0; view, create and edit are read by
their failure and success texts.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..trajectory import Run, ToolCall, ToolResult
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
    matching,
    pinned,
)
from ._preset import Preset
from ._process import DUMMY_KEY, Launch, ResultReader

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..case import TrialContext
    from ..endpoint import ModelEndpoint
    from ..mcp import McpEndpoint

__all__ = ["CopilotCli", "copilot_cli", "REFUSALS", "CONTRACT"]

_MODES = ("allow-all", "ask")
#: Copilot CLI's permission refusals (1.0.102), each a WHOLE tool result (tests/fixtures/agent-traffic/copilot-cli).
REFUSALS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((why, re.compile(pattern)) for why, pattern in (
    ("a deny rule", r"Permission to run this tool was denied due to the following rules: [^\n]+"),
    ("no one to approve", r"Permission denied because no interactive user response was available\. Retry in an "
                          r"interactive session so the user can approve it, or try an alternative that does not "
                          r"require this permission\."),
))
_SHELL = re.compile(r".*<shellId: \S+ completed with exit code (-?\d+)>", re.DOTALL)
FAILED: tuple[tuple[str, re.Pattern[str]], ...] = tuple((why, re.compile(pattern, re.DOTALL)) for why, pattern in (
    ("no such path", r"Path .+ does not exist\. Please provide a valid path\."),
))
_WORKED = {"create": re.compile(r"Created file .+ with \d+ characters", re.DOTALL),
           "edit": re.compile(r"File .+ updated with changes\.", re.DOTALL)}


CONTRACT = AgentContract(
    name="copilot-cli",
    pin=pinned("copilot-cli"),
    sandboxes_tested=("none", "bwrap"),  # bwrap: the battery's ran-bwrap
    summary="GitHub Copilot CLI, offline with its own provider at the endpoint (no GitHub login): --allow-all-tools "
            "or nothing allowed, and --allow-tool / --deny-tool rules",
    apis=("openai-chat",),
    endpoint=Endpoint("COPILOT_PROVIDER_BASE_URL (its bring-your-own-key provider) with COPILOT_OFFLINE=true",
                      env=("COPILOT_PROVIDER_BASE_URL", "COPILOT_PROVIDER_API_KEY", "COPILOT_MODEL", "COPILOT_HOME",
                           "XDG_CACHE_HOME"),
                      quiet={"COPILOT_OFFLINE": "true", "COPILOT_AUTO_UPDATE": "false", "NO_COLOR": "1"},
                      flags=("--no-auto-update",)),
    shell=(ShellTool("bash", "command", required=("description",), long={"initial_wait": 300}),),
    files=(FileTool("read", "view", "path", absolute=True),
           FileTool("write", "create", "path", "whole-file", content="file_text", absolute=True),
           FileTool("edit", "edit", "path", "generic", old="old_str", new="new_str", absolute=True)),
    refusals=Refusals(REFUSALS, where="the tool result (never a bash result that ends with its shell record)",
                      examples=("Permission to run this tool was denied due to the following rules: `shell(rm)`",
                                "Permission denied because no interactive user response was available. Retry in an "
                                "interactive session so the user can approve it, or try an alternative that does not "
                                "require this permission."),
                      recordings="refuse-deny.yaml, refuse-default.yaml"),
    errors=Errors("none on the wire: bash's own last line `<shellId: N completed with exit code K>`; view, create, "
                  "edit by their failure and success texts (`copilot-cli/tool-error.yaml`)",
                  failed={"*": FAILED}, worked=_WORKED),
    permissions=Permissions(
        modes=_MODES, default_mode="allow-all", rules='its --allow-tool / --deny-tool rules ("shell(rm)")',
        note="without --allow-all-tools every tool that needs approval is denied (no one to approve)",
        refusing=(Refusing("deny-rule", {"deny": ["shell(rm)"]}, "rm -rf sentinel"),
                  Refusing("ask", {"permission_mode": "ask"}, "rm -rf sentinel"))),
    subagents=SubAgents("task", "prompt", {"description": "clean up", "agent_type": "general-purpose",
                                           "name": "cleaner"},
                        read="on the wire, by the same forms"),
    others=("read_bash", "stop_bash", "list_bash", "fetch_copilot_cli_documentation", "skill", "sql",
            "session_store_sql", "read_agent", "list_agents", "write_agent", "grep", "glob", "report_intent",
            "update_todo", "web_fetch"),
    knobs=Knobs(instructions="none (an AGENTS.md in COPILOT_CUSTOM_INSTRUCTIONS_DIRS did not reach the model)",
                skills="none"),
)


#: Tools whose ordinary result is a file's text, which may read like a refusal (issue 33.7: a `view` of a file holding
#: the refusal sentence is what it read): a refusal of theirs is told by Copilot's own printed record of the call.
_FREE_TEXT = frozenset({"view"})
#: Its printed record of a call it did not run: `✗ Read NAME`, then `│ PATH`, and its reason.
_FAILED_READ = re.compile(r"^✗ Read (?P<name>[^\n]+)\n(?:\s*│ (?P<path>[^\n]+)\n)?(?P<why>(?:[ \t]+[^\n]*\n?)*)",
                          re.MULTILINE)


def _denied_reads(stdout: str) -> Counter[str]:
    """The paths (and names) of the reads Copilot printed as refused (`✗ Read hostname ... Permission denied ...`)."""
    denied: Counter[str] = Counter()
    for found in _FAILED_READ.finditer(stdout):
        why = " ".join(found.group("why").split()).removeprefix("└ ")
        if any(pattern.search(why) for _, pattern in _PRINTED_REFUSALS):
            denied[(found.group("path") or found.group("name")).strip()] += 1
    return denied


#: A refusal as its record of a failed call prints it (the start of each of `REFUSALS`, before its line wraps).
_PRINTED_REFUSALS = (("a deny rule", re.compile(r"^Permission to run this tool was denied due to the following rules")),
                     ("no one to approve", re.compile(r"^Permission denied because no interactive user response")))


class _Reading:
    """One run's results, with the reads Copilot printed as refused (a `view`'s refusal is told by them)."""

    def __init__(self, agent: CopilotCli, denied: Counter[str]) -> None:
        self.agent = agent
        self.denied = denied

    def refusal_in(self, call: ToolCall, result: ToolResult) -> str | None:
        if call.name not in _FREE_TEXT:
            return self.agent.refusal_in(call, result)
        why = matching(REFUSALS, result.content)
        path = call.arguments.get("path")
        if why is None or not isinstance(path, str):
            return None
        for key in (path, os.path.basename(path)):
            if self.denied[key] > 0:
                self.denied[key] -= 1
                return why
        return None

    def error_in(self, call: ToolCall, result: ToolResult) -> bool | None:
        return self.agent.error_in(call, result)


def _cache() -> str:
    """Where its launcher extracts its package: one folder per user, outside any HOME a trial can see."""
    return os.path.join(tempfile.gettempdir(), f"trialrun-copilot-cache-{os.getuid()}")


class CopilotCli(Preset):
    contract = CONTRACT

    def check_knobs(self) -> None:
        super().check_knobs()
        if getattr(self, "skills", None) or getattr(self, "instructions", None) is not None:  # (an AGENTS.md in COPILOT_CUSTOM_INSTRUCTIONS_DIRS did
            raise ValueError("copilot-cli: the preset installs no skills or instructions")  # not reach the model)

    def refusal_in(self, call: ToolCall, result: ToolResult) -> str | None:
        if call.name == "bash" and _SHELL.fullmatch(result.content):
            return None  # it ran: its record ends the result, whatever the command printed before it
        if call.name in _FREE_TEXT:
            return None  # what it read may be any text, a refusal's too: only its printed record tells (`reader`)
        return matching(REFUSALS, result.content)

    def reader(self, run: Run, stdout: str) -> ResultReader:
        return _Reading(self, _denied_reads(stdout))

    def error_in(self, call: ToolCall, result: ToolResult) -> bool | None:
        text = result.content
        if call.name == "bash":
            record = _SHELL.fullmatch(text)
            return None if record is None else record.group(1) != "0"
        if matching(FAILED, text):
            return True
        if call.name in _WORKED:
            return not _WORKED[call.name].fullmatch(text)
        if call.name == "view":
            return False  # what it read (a failure is one of FAILED)
        return None

    def flags(self) -> list[str]:
        flags = [] if self.permission_mode == "ask" else ["--allow-all-tools"]
        flags += [f"--allow-tool={rule}" for rule in self.allow]
        flags += [f"--deny-tool={rule}" for rule in self.deny]
        return flags

    def prepare(self, prompt: str, ctx: TrialContext, endpoint: ModelEndpoint, home: Path) -> Launch:
        config = home / ".copilot"
        config.mkdir(parents=True)
        argv = [self.path, *CONTRACT.endpoint.flags, *self.flags(), *self.args, "-p", prompt]
        env = {"HOME": str(home), "COPILOT_HOME": str(config), "COPILOT_OFFLINE": "true",
               "COPILOT_PROVIDER_BASE_URL": endpoint.openai_base_url, "COPILOT_PROVIDER_API_KEY": DUMMY_KEY,
               "COPILOT_MODEL": str(self.model_name), "COPILOT_AUTO_UPDATE": "false", "XDG_CACHE_HOME": _cache(),
               "NO_COLOR": "1"}
        return Launch(argv, env, home)

    def settings_for_snapshot(self) -> Any:
        return {**super().settings_for_snapshot(), "flags": self.flags()}

    mcp_support = ("--additional-mcp-config @FILE (mcpServers: local command and args, or http url), every tool of "
                   "them (\"tools\": [\"*\"]), its own built-in MCP servers off (--disable-builtin-mcps)")

    def with_mcp(self, launch: Launch, servers: Sequence[McpEndpoint], home: Path) -> Launch:
        path = home / ".copilot" / "trialrun-mcp.json"
        path.write_text(json.dumps({"mcpServers": {
            s.name: ({"type": "http", "url": s.url} if s.transport == "http" else
                     {"type": "local", "command": s.command[0], "args": s.args}) | {"tools": ["*"]}
            for s in servers}}, indent=2))
        launch.argv[1:1] = [f"--additional-mcp-config=@{path}", "--disable-builtin-mcps"]
        return launch


def copilot_cli(**options: Any) -> CopilotCli:
    """GitHub Copilot CLI, offline with its own provider at the endpoint: `tr.agents.copilot_cli(deny=["shell(rm)"])`."""
    return CopilotCli(**options)
