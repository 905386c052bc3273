"""opencode (`opencode-ai`, checked with 1.18): `opencode run --format json --model trialrun/M --title T`,
configured through OPENCODE_CONFIG (a JSON file naming the endpoint as an OpenAI-compatible provider) and private
XDG folders; it speaks Chat Completions, streamed. `--title` stops its title request (which would race the main
loop); `side_requests=True` leaves it on.

Permissions are its bash rules, last match wins: `permission_mode` is the default for every command ("allow",
"ask" or "deny"), then `allow` patterns, then `deny` patterns (so a deny rule beats a broader allow).

What a call came to is read from opencode's own event stream (`--format json` on stdout: each main-session tool
call's state, "completed" or "error" with its error, and bash's exit code), because the wire cannot tell: a
Chat Completions result has no error flag and opencode's bash result is the command's bare output, so a command
that prints a refusal sentence looks exactly like one. A call in state "error" whose error is WHOLLY one of
opencode's permission messages (`REFUSALS`: a deny rule's "The user has specified a rule which prevents you from
using this specific tool call. Here are some of the relevant rules [...]", an ask it auto-rejected, "The user
rejected permission to use this specific tool call.") was refused: a denial with source "agent". An ask ends the
run with exit status 0, no tool result and no final text: a failed trial, never a pass. The stream covers the
main session only; a sub-agent's results are read from the wire by the same whole-result templates (a refusal,
a failed read), and whether its bash commands failed is unknown. The output (stdout) is the main session's text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..trajectory import Denial, Run, ToolCall, ToolResult
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

__all__ = ["Opencode", "opencode", "REFUSALS", "CONTRACT"]

_QUIET = {"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1",
          "OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1", "NO_COLOR": "1"}

#: Its bash rules: `permission_mode` the default for every command, then allow, then deny (last match wins).
_PERMISSIONS = Permissions(
    modes=("allow", "ask", "deny"), default_mode="allow", mode_is="permission_mode is the default for commands,",
    rules='bash patterns ("rm *"): allow, then deny, last match wins',
    note="an ask is auto-rejected (the run ends: a failed trial)",
    refusing=(Refusing("deny-rule", {"deny": ["rm *"]}, "rm -rf sentinel"),
              Refusing("ask", {"permission_mode": "ask"}, "rm -rf sentinel")))

CONTRACT = AgentContract(
    name="opencode",
    pin=pinned("opencode"),
    summary="opencode: bash permission rules (allow, ask, deny), last match wins",
    apis=("openai-chat",),
    endpoint=Endpoint("OPENCODE_CONFIG names the endpoint as an OpenAI-compatible provider; private XDG folders",
                      env=("OPENCODE_CONFIG", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"),
                      files=("opencode.json", ".config/opencode/skill/"), quiet=_QUIET,
                      flags=("run", "--format", "json")),
    shell=(ShellTool("bash", "command", required=("description",)),),
    files=(FileTool("read", "read", "filePath", absolute=True),
           FileTool("write", "write", "filePath", "whole-file", content="content", absolute=True),
           FileTool("edit", "edit", "filePath", "opencode", old="oldString", new="newString", absolute=True,
                    read_first=True)),
    # opencode's permission errors (PermissionDeniedError, PermissionRejectedError, PermissionCorrectedError in
    # 1.18), each the WHOLE error of a tool call (tests/fixtures/agent-traffic/opencode: refuse-deny,
    # destructive-ask, subagent-refused; lookalike.yaml prints them from commands that ran).
    refusals=Refusals(forms(
        ("a deny rule", r"The user has specified a rule which prevents you from using this specific tool call\. Here "
                        r"are some of the relevant rules \[.*\]"),
        ("an ask it rejected", r"The user rejected permission to use this specific tool call\."),
        ("an ask it rejected", r"The user rejected permission to use this specific tool call with the following "
                               r"feedback: .+"),
    ), where="its event stream (`--format json`: a call in state \"error\"); a sub-agent's on the wire", examples=(
        "The user has specified a rule which prevents you from using this specific tool call. Here are some of the "
        'relevant rules [{"permission":"bash","pattern":"rm *","action":"deny"}]',
        "The user rejected permission to use this specific tool call.",
    ), recordings="refuse-deny.yaml, destructive-ask.yaml, subagent-refused.yaml"),
    errors=Errors(
        "none on the wire (its bash result is the bare output): the event stream's state and bash exit code "
        "(`tool-error.yaml`); a sub-agent's read by its form, its bash: unknown",
        # the forms of a failed `read` (its error text, 1.18) and of one that worked (what the tool returns)
        failed={"read": forms(("no such file", r"(?:File not found: |Failed to read file: ).+"))},
        worked={"read": re.compile(r"<path>[^\n]*</path>\n<type>.*", re.DOTALL)},
    ),
    permissions=_PERMISSIONS,
    subagents=SubAgents("task", "prompt", {"description": "clean up", "subagent_type": "general"},
                        read="on the wire (its event stream covers the main session only): refusals and reads by "
                             "their forms, whether its bash failed is unknown"),
    side_requests=SideRequests("a title request (which races the main loop)", "--title trialrun"),
    others=("glob", "grep", "list", "skill", "todowrite", "todoread", "webfetch", "websearch", "codesearch"),
    knobs=Knobs(instructions="`instructions` in its config", skills="XDG_CONFIG_HOME/opencode/skill/<name>/SKILL.md"),
    sandboxes_tested=("none", "bwrap"),
)
#: Its refusal forms (the contract's), kept under their old name.
REFUSALS = CONTRACT.refusals.forms if CONTRACT.refusals else ()
#: What `opencode run` prints for an ask it auto-rejects (stderr), when no event stream says it.
_AUTO_REJECTED = re.compile(r"permission requested: (\S+) \((.*)\); auto-rejecting")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class _State:
    """A tool call's end state in opencode's event stream."""

    status: str
    error: str = ""
    exit: int | None = None


def _events(stdout: str) -> tuple[dict[str, _State], list[str]] | None:
    """The main session's tool states by call id and its texts, from `--format json` lines; None when stdout
    holds no event stream (another `--format` in args, or a run that printed nothing)."""
    states: dict[str, _State] = {}
    texts: list[str] = []
    session: str | None = None
    seen = False
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict) or not isinstance(event.get("part"), dict):
            continue
        seen = True
        session = session or event.get("sessionID")
        if event.get("sessionID") != session:
            continue
        part = event["part"]
        if event.get("type") == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        state = part.get("state")
        if event.get("type") == "tool_use" and isinstance(state, dict) and isinstance(part.get("callID"), str):
            metadata = state.get("metadata")
            code = metadata.get("exit") if isinstance(metadata, dict) else None
            states[part["callID"]] = _State(str(state.get("status")), str(state.get("error") or ""),
                                            code if isinstance(code, int) and not isinstance(code, bool) else None)
    return (states, texts) if seen else None


class _Reading:
    """One run's results read with opencode's event stream (the states by call id) and, where the stream says
    nothing (a sub-agent's calls), the wire's whole-result forms."""

    def __init__(self, agent: Opencode, states: dict[str, _State]) -> None:
        self.agent = agent
        self.states = states
        refusals = agent.contract.refusals
        self.forms = refusals.forms if refusals is not None else ()

    def refusal_in(self, call: ToolCall, result: ToolResult | None) -> str | None:
        state = self.states.get(call.id or "")
        if state is not None:
            return matching(self.forms, state.error) if state.status == "error" else None
        return None if result is None else matching(self.forms, result.content)

    def error_in(self, call: ToolCall, result: ToolResult) -> bool | None:
        state = self.states.get(call.id or "")
        if state is not None and state.status in ("completed", "error"):
            return state.status == "error" or (state.exit is not None and state.exit != 0)
        errors = self.agent.contract.errors
        if call.name in errors.failed:  # a sub-agent's read: its failure and success have forms of their own
            if matching(errors.failed[call.name], result.content):
                return True
            worked = errors.worked.get(call.name)
            return False if worked is not None and worked.fullmatch(result.content) else None
        return None


class Opencode(Preset):
    contract = CONTRACT

    def bash_rules(self) -> dict[str, str]:
        rules = {"*": self.permission_mode or str(_PERMISSIONS.default_mode)}
        rules.update({pattern: "allow" for pattern in self.allow})
        rules.update({pattern: "deny" for pattern in self.deny})
        return rules

    def config(self, base_url: str) -> dict[str, Any]:
        model = f"trialrun/{self.model_name}"
        config: dict[str, Any] = {
            "$schema": "https://opencode.ai/config.json",
            "provider": {"trialrun": {"npm": "@ai-sdk/openai-compatible", "name": "trialrun",
                                      "options": {"baseURL": base_url, "apiKey": DUMMY_KEY},
                                      "models": {str(self.model_name): {"name": str(self.model_name)}}}},
            "model": model, "small_model": model, "autoupdate": False, "share": "disabled",
            "permission": {"bash": self.bash_rules(), "edit": "allow", "webfetch": "deny"},
        }
        if self.instructions is not None:
            config["instructions"] = [str(self.instructions)]
        return config

    def prepare(self, prompt: str, ctx: TrialContext, endpoint: ModelEndpoint, home: Path) -> Launch:
        xdg = {name: home / folder for name, folder in (("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"),
                                                         ("XDG_CACHE_HOME", ".cache"), ("XDG_STATE_HOME", ".local/state"))}
        for folder in xdg.values():
            folder.mkdir(parents=True)
        config_file = home / "opencode.json"
        config_file.write_text(json.dumps(self.config(endpoint.openai_base_url), indent=2))
        self.install_skills(xdg["XDG_CONFIG_HOME"] / "opencode" / "skill")
        title = [] if self.side_requests else ["--title", "trialrun"]
        argv = [self.path, *self.contract.endpoint.flags, "--model", f"trialrun/{self.model_name}", *title, *self.args,
                prompt]
        env = {"HOME": str(home), "OPENCODE_CONFIG": str(config_file), **{k: str(v) for k, v in xdg.items()},
               **self.contract.endpoint.quiet}
        return Launch(argv, env, home)

    mcp_support = ("the mcp table of its opencode.json (local: the command; remote: the url); the model sees the "
                   "tools as NAME_TOOL")

    def with_mcp(self, launch: Launch, servers: Sequence[McpEndpoint], home: Path) -> Launch:
        path = home / "opencode.json"
        config = json.loads(path.read_text(encoding="utf-8"))
        config["mcp"] = {s.name: {"type": "remote", "url": s.url, "enabled": True} if s.transport == "http"
                         else {"type": "local", "command": s.command, "enabled": True} for s in servers}
        path.write_text(json.dumps(config, indent=2))
        return launch

    def _output(self, stdout: str, ctx: TrialContext) -> Any:
        events = _events(stdout)  # the output is what the session said, as `opencode run` prints it without --format
        return super()._output(stdout if events is None else "\n".join(events[1]), ctx)

    def reader(self, run: Run, stdout: str) -> ResultReader:
        events = _events(stdout)
        return _Reading(self, events[0] if events is not None else {})

    def interpret(self, run: Run, stdout: str = "") -> None:
        super().interpret(run, stdout)
        # an ask it auto-rejected ends the run: the refused call has no result on the wire
        trajectory = run.trajectory
        answered = {r.call_id for r in trajectory.all_tool_results}
        denied = {d.call_id for d in trajectory.denials}
        unanswered = [c for c in trajectory.all_tool_calls if c.id not in answered and c.id not in denied]
        if not unanswered:
            return
        events = _events(stdout)
        reading = _Reading(self, events[0] if events is not None else {})
        rejected = None if events is not None else _auto_rejected(run.stderr or "")
        for call in unanswered:
            if events is not None:
                why, reason = reading.refusal_in(call, None), reading.states.get(call.id or "", _State("")).error
            else:  # no event stream: the line opencode prints when it auto-rejects an ask, for that tool
                why, reason = ("an ask it rejected", "") if rejected and call.name in rejected else (None, "")
            if why is not None:
                trajectory.denials.append(Denial(call.name, dict(call.arguments), reason or
                                                 f"{self.label} auto-rejected its ask: {rejected and rejected[call.name]}",
                                                 f"{self.label}: {why}", call.id, source="agent"))

    def check_ending(self, run: Run, stdout: str) -> None:
        if run.status == "completed" and not run.trajectory.final_text.strip():
            agent_denials = [d for d in run.trajectory.denials if d.source == "agent"]
            why = (f"after its own permission rejection of {agent_denials[-1].tool}" if agent_denials
                   else "without a final answer")
            run.status, run.error = "error", f"{self.label} exited 0 {why}, with no final text: the task was not done"

    def settings_for_snapshot(self) -> Any:
        return {**super().settings_for_snapshot(), "config": self.config("<endpoint>")}


def _auto_rejected(stderr: str) -> dict[str, str]:
    """Tool -> patterns of each "permission requested: TOOL (PATTERNS); auto-rejecting" line opencode printed."""
    found: dict[str, str] = {}
    for line in _ANSI.sub("", stderr).splitlines():
        match = _AUTO_REJECTED.fullmatch(line.lstrip("! ").strip())
        if match:
            found.setdefault(match.group(1), match.group(2))
    return found


def opencode(**options: Any) -> Opencode:
    """opencode, ready to run: `tr.agents.opencode(deny=["rm *"])` (see `Preset`)."""
    return Opencode(**options)
