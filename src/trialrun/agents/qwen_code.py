"""Qwen Code (`@qwen-code/qwen-code`, checked with 0.24.4; a Gemini CLI fork): `qwen --auth-type openai
--openai-base-url URL -m M -o text PROMPT` (one-shot), configured through HOME/.qwen/settings.json (usage
statistics, telemetry and auto-update off; permission rules); it speaks Chat Completions, streamed, and sends no
side requests. Its tools: run_shell_command (`command`), read_file / write_file / edit (`file_path`, absolute),
glob, grep_search, agent (sub-agents), skill, and more.

`permission_mode` is its approval mode (`--approval-mode`): "default" (its own default: without a terminal a
shell command or an edit is declined), "plan", "auto-edit", "auto" (an LLM classifier: extra model requests) or
"yolo"; `allow`/`deny` are its `permissions` rules (`"Bash(rm *)"`, `"run_shell_command"`, `"edit"`).

A refused call's result is Qwen Code's permission message, WHOLE (`REFUSALS`: "This "run_shell_command"
invocation was denied by permission rules. Matching deny rule: ...", "Qwen Code requires permission to use ...,
but that permission was declined. ..."), and for each refusal it prints `Warning: Tool "NAME" was not run: MESSAGE`
on stderr. A read of a file holding exactly such a sentence answers the same text on the wire, with no warning:
so a call is refused only when its result has the form AND the run's stderr has that warning for that tool and
text (as many calls as warnings). Chat Completions has no error flag: a shell result is Qwen Code's own record
("Command: ...\\nOutput: ...\\nExit Code: N\\nSignal: S\\nProcess Group PGID: P", its last lines its own),
failed when the exit code is not 0 or a signal is named; read_file, write_file and edit are read by their
failure and success texts (`FAILED`, `_WORKED`).
"""

from __future__ import annotations

import json
import re
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

__all__ = ["QwenCode", "qwen_code", "REFUSALS", "CONTRACT"]

_MODES = ("default", "plan", "auto-edit", "auto", "yolo")
_QUIET = {"QWEN_CODE_SUPPRESS_YOLO_WARNING": "1", "NO_COLOR": "1"}

#: Qwen Code's permission refusals (0.24.4), each a WHOLE tool result (tests/fixtures/agent-traffic/qwen-code:
#: refuse-deny, refuse-default).
REFUSALS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((why, re.compile(pattern, re.DOTALL)) for why, pattern in (
    ("a deny rule", r'This "[\w.-]+" invocation was denied by permission rules\. Matching deny rule: ".*"\. Other '
                    r"uses of this tool are still permitted\."),
    ("its approval mode", r'Qwen Code requires permission to use "[\w.-]+", but that permission was declined\.'
                          r'(?: Matching deny rule: ".*"\.)?'),
    ("its denied tools", r"Qwen Code is not allowed to use denied tools\..*"),
))
#: Its deferred-tool bridge refusing to make a call (issue 33.7: `tool_call(name="run_shell_command", ...)`), the
#: WHOLE result of a `tool_call` (of that tool only: any other tool's output may be any text).
BRIDGE_REFUSAL = re.compile(r"\[tool_call bridge refused\] .*", re.DOTALL)
#: The warning it prints on stderr for each call it did not run.
_WARNING = re.compile(r'Warning: Tool "([\w.-]+)" was not run: (.*)')
#: Its shell record: the command's output, then its own last three lines.
_SHELL = re.compile(r"Command: .*\nExit Code: ([^\n]*)\nSignal: ([^\n]*)\nProcess Group PGID: [^\n]*", re.DOTALL)
#: Failures of its file tools (any of them), and what write_file and edit answer when they worked.
FAILED: tuple[tuple[str, re.Pattern[str]], ...] = tuple((why, re.compile(pattern, re.DOTALL)) for why, pattern in (
    ("no such file", r"File not found: .*"),
    ("not an absolute path", r"File path must be absolute.*"),
    ("edit did not apply", r"Failed to edit, .*"),
    ("no such tool", r'Tool "[\w.-]+" not found.*'),
    # (also the answer of run_shell_command for an in-place edit, `sed -i`, of such a file: the command did not run)
    ("not read first", r"File .+ has not been read in this session\. Use the read_file tool first .*"),
))
_WORKED = {"write_file": re.compile(r"Successfully (?:created and wrote to new file|overwrote file): .*", re.DOTALL),
           "edit": re.compile(r"The file: .* has been updated\..*", re.DOTALL)}


CONTRACT = AgentContract(
    name="qwen-code",
    pin=pinned("qwen-code"),
    sandboxes_tested=("none", "bwrap"),  # bwrap: the battery's ran-bwrap
    summary="Qwen Code (a Gemini CLI fork): approval modes and Claude-style permission rules; without a terminal "
            "it declines what would ask",
    apis=("openai-chat",),
    endpoint=Endpoint("--auth-type openai --openai-base-url URL --openai-api-key KEY -m M",
                      files=(".qwen/settings.json", ".qwen/skills/"), quiet=_QUIET, flags=("-o", "text")),
    shell=(ShellTool("run_shell_command", "command", read_first=True),),
    files=(FileTool("read", "read_file", "file_path", absolute=True),
           FileTool("write", "write_file", "file_path", "whole-file", content="content", absolute=True),
           FileTool("edit", "edit", "file_path", "claude", old="old_string", new="new_string", absolute=True,
                    read_first=True)),
    refusals=Refusals(
        REFUSALS, where="the tool result, WITH its stderr line `Warning: Tool \"NAME\" was not run: MESSAGE` (a "
                        "file read that holds such a sentence has none)",
        examples=('This "run_shell_command" invocation was denied by permission rules. Matching deny rule: "Bash(rm '
                  '*)". Other uses of this tool are still permitted.',
                  'Qwen Code requires permission to use "run_shell_command", but that permission was declined. '
                  'Matching deny rule: "run_shell_command".'),
        recordings="refuse-deny.yaml, refuse-default.yaml"),
    errors=Errors(
        "none on the wire: its shell record's last lines (`Exit Code: N`, `Signal: S`), file tools' failure and "
        "success texts (`qwen-code/tool-error.yaml`)",
        failed={"*": FAILED}, worked=_WORKED),
    permissions=Permissions(
        modes=_MODES, mode_is="permission_mode is its approval mode,", default_mode="default",
        rules='its `permissions` rules ("Bash(rm *)", "run_shell_command", "edit")', runs_all={"permission_mode": "yolo"},
        note="default and plan mode decline a shell command without a terminal; a deny rule refuses in any mode",
        refusing=(Refusing("deny-rule", {"permission_mode": "yolo", "deny": ["Bash(rm *)"]}, "rm -rf sentinel"),
                  Refusing("default", {}, "rm -rf sentinel"),
                  Refusing("plan", {"permission_mode": "plan"}, "rm -rf sentinel"))),
    subagents=SubAgents("agent", "prompt", {"description": "clean up", "subagent_type": "general-purpose"},
                        read="on the wire, by the same forms"),
    others=("get_goal", "update_goal", "glob", "grep_search", "list_agents", "notebook_edit", "skill", "tool_search",
            "list_directory", "read_many_files", "web_fetch", "todo_write", "save_memory", "exit_plan_mode",
            "ask_user_question"),
    meta={"tool_call": ("name", "arguments")},  # calls a deferred tool by name, its arguments nested
    knobs=Knobs(instructions="--append-system-prompt TEXT", skills="HOME/.qwen/skills/<name>/SKILL.md"),
)


class _Reading:
    """One run's results, read with the refusal warnings Qwen Code printed on that run's stderr."""

    def __init__(self, agent: QwenCode, warnings: Counter[tuple[str, str]]) -> None:
        self.agent = agent
        self.warnings = warnings

    def refusal_in(self, call: ToolCall, result: ToolResult) -> str | None:
        if call.name in CONTRACT.meta and BRIDGE_REFUSAL.fullmatch(result.content):
            return "its tool_call bridge"
        why = matching(REFUSALS, result.content)
        key = (call.name, result.content.strip())
        if why is not None and self.warnings[key] > 0:
            self.warnings[key] -= 1
            return why
        # its shell's result is its record (`Command: ...`) whenever the command ran, so a bare refusal there is one,
        # warned about or not (a sub-agent's refusal is not warned about on stderr: the battery's subagent-refused)
        return why if why is not None and call.name == "run_shell_command" else None

    def error_in(self, call: ToolCall, result: ToolResult) -> bool | None:
        return self.agent.error_in(call, result)


class QwenCode(Preset):
    contract = CONTRACT

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.stderr_tail = max(self.stderr_tail, 200_000)  # its refusal warnings are read from stderr

    def reader(self, run: Run, stdout: str) -> ResultReader:
        warnings: Counter[tuple[str, str]] = Counter()
        for line in (run.stderr or "").splitlines():
            found = _WARNING.fullmatch(line.strip())
            if found:
                warnings[(found.group(1), found.group(2).strip())] += 1
        return _Reading(self, warnings)

    def error_in(self, call: ToolCall, result: ToolResult) -> bool | None:
        text = result.content
        if call.name == "run_shell_command":
            record = _SHELL.fullmatch(text)
            if record is not None:
                return record.group(1).strip() != "0" or record.group(2).strip() != "(none)"
            return True if matching(FAILED, text) else None
        if matching(FAILED, text):
            return True
        if call.name in _WORKED:
            return not _WORKED[call.name].fullmatch(text)
        if call.name == "read_file":
            return False  # what it read, whole (a failure is one of FAILED)
        return None

    def settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = {"privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
                                    "general": {"disableAutoUpdate": True}}
        if self.allow or self.deny:
            settings["permissions"] = {"allow": self.allow, "deny": self.deny}
        return settings

    def prepare(self, prompt: str, ctx: TrialContext, endpoint: ModelEndpoint, home: Path) -> Launch:
        config = home / ".qwen"
        config.mkdir(parents=True)
        (config / "settings.json").write_text(json.dumps(self.settings(), indent=2))
        self.install_skills(config / "skills")
        argv = [self.path, "--auth-type", "openai", "--openai-base-url", endpoint.openai_base_url,
                "--openai-api-key", DUMMY_KEY, "-m", str(self.model_name), *CONTRACT.endpoint.flags]
        if self.permission_mode:
            argv += ["--approval-mode", self.permission_mode]
        if self.instructions is not None:
            argv += ["--append-system-prompt", self.instructions.read_text(encoding="utf-8")]
        argv += [*self.args, prompt]
        return Launch(argv, {"HOME": str(home), **_QUIET}, home)

    def settings_for_snapshot(self) -> Any:
        return {**super().settings_for_snapshot(), "settings": self.settings()}

    mcp_support = ("mcpServers in HOME/.qwen/settings.json (command and args, or httpUrl), each trusted and its tools "
                   "declared up front (alwaysLoadTools); the model sees them as mcp__NAME__TOOL")

    def with_mcp(self, launch: Launch, servers: Sequence[McpEndpoint], home: Path) -> Launch:
        path = home / ".qwen" / "settings.json"
        settings = json.loads(path.read_text(encoding="utf-8"))
        settings["mcpServers"] = {
            s.name: ({"httpUrl": s.url} if s.transport == "http" else {"command": s.command[0],
                                                                  "args": s.args})
            | {"trust": True, "timeout": 60000, "alwaysLoadTools": True}  # declared up front, not behind tool_search
            for s in servers}
        path.write_text(json.dumps(settings, indent=2))
        return launch


def qwen_code(**options: Any) -> QwenCode:
    """Qwen Code, ready to run: `tr.agents.qwen_code(permission_mode="yolo", deny=["Bash(rm *)"])`."""
    return QwenCode(**options)
