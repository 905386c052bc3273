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

import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..trajectory import ToolCall, ToolResult
from ._process import DUMMY_KEY, Launch
from ._preset import Preset, matching

if TYPE_CHECKING:
    from ..case import TrialContext
    from ..endpoint import ModelEndpoint

__all__ = ["CopilotCli", "copilot_cli", "REFUSALS"]

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


def _cache() -> str:
    """Where its launcher extracts its package: one folder per user, outside any HOME a trial can see."""
    return os.path.join(tempfile.gettempdir(), f"trialrun-copilot-cache-{os.getuid()}")


class CopilotCli(Preset):
    label = "copilot-cli"
    program = "copilot"
    npm_package = "@github/copilot"
    apis = ("openai-chat",)
    shell_tool = ("bash", "command")
    permission_modes = _MODES
    permission_mode_is = "permission_mode must be"

    def check_knobs(self) -> None:
        super().check_knobs()
        if self.skills or self.instructions is not None:  # (an AGENTS.md in COPILOT_CUSTOM_INSTRUCTIONS_DIRS did
            raise ValueError("copilot-cli: the preset installs no skills or instructions")  # not reach the model)
        if self.side_requests:
            raise ValueError("copilot-cli sends no title or summary requests: side_requests applies to claude-code "
                             "and opencode")

    def refusal_in(self, call: ToolCall, result: ToolResult) -> str | None:
        if call.name == "bash" and _SHELL.fullmatch(result.content):
            return None  # it ran: its record ends the result, whatever the command printed before it
        return matching(REFUSALS, result.content)

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
        argv = [self.path, "-p", prompt, "--no-auto-update", *self.flags(), *self.args]
        env = {"HOME": str(home), "COPILOT_HOME": str(config), "COPILOT_OFFLINE": "true",
               "COPILOT_PROVIDER_BASE_URL": endpoint.openai_base_url, "COPILOT_PROVIDER_API_KEY": DUMMY_KEY,
               "COPILOT_MODEL": str(self.model_name), "COPILOT_AUTO_UPDATE": "false", "XDG_CACHE_HOME": _cache(),
               "NO_COLOR": "1"}
        return Launch(argv, env, home)

    def settings_for_snapshot(self) -> Any:
        return {**super().settings_for_snapshot(), "flags": self.flags()}


def copilot_cli(**options: Any) -> CopilotCli:
    """GitHub Copilot CLI, offline with its own provider at the endpoint: `tr.agents.copilot_cli(deny=["shell(rm)"])`."""
    return CopilotCli(**options)
