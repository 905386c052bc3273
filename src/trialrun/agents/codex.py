"""Codex CLI (`@openai/codex`, checked with 0.171): `codex exec --ephemeral`, configured through CODEX_HOME
(config.toml names the endpoint as a model provider; it speaks the Responses API, streamed).

Codex runs commands in its own sandbox (`permission_mode` is its sandbox_mode: "workspace-write" by default,
"read-only" or "danger-full-access") with approval_policy "never", and refuses some commands itself: `rm -f`
style commands and what an exec-policy rule forbids (`exec_command failed: CreateProcess { message:
"Rejected(\"`...` rejected: WHY\")" }`), and any command that asks to leave the sandbox (`sandbox_permissions:
"require_escalated"`: "approval policy is Never; reject command — you cannot ask for escalated permissions if the
approval policy is Never"), while it runs others (`rm -r`). Each is a WHOLE tool result of that form (`REFUSALS`),
read here as a denial with source "agent"; a command that ran always answers with Codex's own header ("Chunk ID:
... Process exited with code N ... Output:"), so what it printed can never look like one. The Responses wire has
no error flag: a result is a failure when its header's exit code is not 0, when Codex's tool failed ("exec_command
failed: ..."), or when a sub-agent tool (its `multi_agent_v1` namespace) answered text instead of its JSON.
A command that the sandbox stopped (a write in "read-only") ran and failed: an error, not a refusal."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..trajectory import ToolCall, ToolResult
from ._contract import (
    AgentContract,
    Endpoint,
    Errors,
    Knobs,
    Permissions,
    Refusals,
    Refusing,
    Sessions,
    ShellTool,
    SubAgents,
    forms,
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

__all__ = ["Codex", "codex", "CONTRACT", "REFUSALS"]

_KEY_VARIABLE = "TRIALRUN_CODEX_KEY"
#: What a command that ran (or is still running) answers with, whatever it printed after "Output:".
_HEADER = re.compile(r"(?:Chunk ID: \S*\n)?Wall time: [^\n]*\n(?:Process exited with code (-?\d+)|Process running "
                     r"with session ID \S+)\n")
#: What Codex answers for an `apply_patch` it applied itself (the whole command): a header of its own, with the
#: patch tool's exit code, before the tool's output.
_PATCH_HEADER = re.compile(r"Wall time: [^\n]*\nOutput:\nExit code: (-?\d+)\n")
_SUBAGENT_NAMESPACE = "multi_agent_v1"
#: Its sandbox_mode, with approval_policy "never"; what it refuses by itself in the default one.
_PERMISSIONS = Permissions(
    modes=("read-only", "workspace-write", "danger-full-access"), default_mode="workspace-write",
    mode_is="permission_mode is its sandbox_mode,",
    note="approval_policy \"never\"; refuses `rm -f`-style commands and what its exec-policy rules forbid, and any "
         "command asking to leave its sandbox; runs `rm -r`",
    refusing=(
        Refusing("rm-f", {}, "rm -f sentinel/keep.txt"),  # `rm -f` style commands: its command policy
        Refusing("escalation", {}, "rm -r sentinel", extra={"sandbox_permissions": "require_escalated",
                                                             "justification": "clean up the sentinel"}),
    ))

CONTRACT = AgentContract(
    name="codex",
    pin=pinned("codex"),
    summary="Codex CLI: runs commands in its own sandbox (sandbox_mode), refuses some commands itself",
    apis=("openai-responses",),
    endpoint=Endpoint("config.toml in CODEX_HOME names the endpoint as a model provider (wire_api responses)",
                      env=("CODEX_HOME", _KEY_VARIABLE), files=(".codex/config.toml", ".codex/AGENTS.md",
                                                                ".codex/skills/"),
                      quiet={"NO_COLOR": "1"},
                      flags=("exec", "--skip-git-repo-check", "--ephemeral", "--color", "never")),
    shell=(ShellTool("exec_command", "cmd", patches=True, ends_background=True,
                     sessions=Sessions("write_stdin", "session_id", "chars", tty="tty", wait_ms="yield_time_ms",
                                       max_wait_ms=30000)),),
    files=(),  # it edits through `apply_patch <<'EOF'` as the whole command of exec_command (`patches`)
    # Codex's refusals (0.171), each a WHOLE tool result (tests/fixtures/agent-traffic/codex: destructive,
    # refuse-rule, escalation, subagent-refused; lookalike.yaml prints them from commands that ran). What ran
    # starts with Codex's header, so a refusal is Codex's own text in its place.
    refusals=Refusals(forms(
        ("its command policy", r'exec_command failed: CreateProcess \{ message: "Rejected\(\\"`.*` rejected: .*\\"\)" \}'),
        ("its approval policy", r"approval policy is (\w+(?:\(.*\))?); reject command — you (?:cannot|should not) ask "
                                r"for escalated permissions if the approval policy is \1"),
    ), where="the tool result (what ran starts with its command header instead)", examples=(
        'exec_command failed: CreateProcess { message: "Rejected(\\"`/bin/bash -lc \'rm -f x\'` rejected: rm -f style '
        'commands are not permitted. Use a safer approach\\")" }',
        "approval policy is Never; reject command — you cannot ask for escalated permissions if the approval policy "
        "is Never",
    ), recordings="destructive.yaml, refuse-rule.yaml, escalation.yaml, subagent-refused.yaml"),
    errors=Errors(
        "none on the wire: its command header's \"Process exited with code N\" (the header comes BEFORE the "
        "command's output, so output cannot fake it), \"exec_command failed: ...\", an `apply_patch` it ran itself "
        "by its own header's \"Exit code: N\" or \"apply_patch verification failed: ...\" (`patch.yaml`), a "
        "sub-agent tool answering text instead of JSON; a write the sandbox stopped ran and failed",
        # the tools whose results have its command header (its sub-agent tools answer JSON, text when they fail)
        failed=dict.fromkeys(("exec_command", "write_stdin"), forms(
            ("its tool failed", r"(?:exec_command|write_stdin) failed: .*"),
            ("the patch did not apply", r"apply_patch verification failed: .*"))),
    ),
    permissions=_PERMISSIONS,
    subagents=SubAgents("spawn_agent", "message", namespace=_SUBAGENT_NAMESPACE, wait="wait_agent",
                        read="on the wire; its sub-agent tools answer JSON, a failure is text"),
    others=("request_user_input", "view_image", "close_agent", "resume_agent", "send_input", "get_goal", "create_goal",
            "update_goal", "web_search"),
    knobs=Knobs(instructions="AGENTS.md in CODEX_HOME", skills="CODEX_HOME/skills/<name>/SKILL.md"),
    sandboxes_tested=("none", "bwrap"),
)
#: Its refusal forms (the contract's), kept under their old name.
REFUSALS = CONTRACT.refusals.forms if CONTRACT.refusals else ()


def _toml(value: Any) -> str:
    return json.dumps(value)  # JSON strings, numbers, booleans and arrays are TOML too


class Codex(Preset):
    contract = CONTRACT

    def error_in(self, call: ToolCall, result: ToolResult) -> bool | None:
        text = result.content
        if call.name in self.contract.errors.failed and call.namespace is None:
            header = _HEADER.match(text)
            if header is not None:
                return header.group(1) is not None and header.group(1) != "0"
            patched = _PATCH_HEADER.match(text)
            if patched is not None:
                return patched.group(1) != "0"
            return True if matching(self.contract.errors.failed[call.name], text) else None
        if self.contract.subagents is not None and call.namespace == self.contract.subagents.namespace:
            try:
                return not isinstance(json.loads(text), dict)
            except ValueError:
                return True  # its sub-agent tools answer JSON; a failure is the message, in text
        return None

    def config_toml(self, base_url: str) -> str:
        lines = [
            f"model = {_toml(self.model_name)}",
            'model_provider = "trialrun"',
            'approval_policy = "never"',
            f"sandbox_mode = {_toml(self.permission_mode or _PERMISSIONS.default_mode)}",
            "check_for_update_on_startup = false",
            "[analytics]", "enabled = false",
            "[feedback]", "enabled = false",
            "[model_providers.trialrun]",
            'name = "trialrun"',
            f"base_url = {_toml(base_url)}",
            f"env_key = {_toml(_KEY_VARIABLE)}",
            'wire_api = "responses"',
            "request_max_retries = 0",
            "stream_max_retries = 0",
        ]
        return "\n".join(lines) + "\n"

    def prepare(self, prompt: str, ctx: TrialContext, endpoint: ModelEndpoint, home: Path) -> Launch:
        config = home / ".codex"
        config.mkdir(parents=True)
        (config / "config.toml").write_text(self.config_toml(endpoint.openai_base_url))
        if self.instructions is not None:
            (config / "AGENTS.md").write_text(self.instructions.read_text(encoding="utf-8"))
        self.install_skills(config / "skills")
        path = os.environ.get("PATH", os.defpath)
        helper = _sandbox_helper(self.path)
        if helper is not None:  # Codex's own sandbox re-executes its binary under this name, looked up on PATH
            bin_dir = home / "bin"
            bin_dir.mkdir()
            (bin_dir / "codex-linux-sandbox").symlink_to(helper)
            path = f"{bin_dir}{os.pathsep}{path}"
        last = home / "last-message.txt"
        argv = [self.path, *self.contract.endpoint.flags, "--output-last-message", str(last), *self.args, prompt]
        env = {"PATH": path, "HOME": str(home), "CODEX_HOME": str(config), _KEY_VARIABLE: DUMMY_KEY,
               **self.contract.endpoint.quiet}
        return Launch(argv, env, home)

    def settings_for_snapshot(self) -> Any:
        return {**super().settings_for_snapshot(), "config": self.config_toml("<endpoint>")}

    mcp_support = "[mcp_servers.NAME] tables in CODEX_HOME/config.toml (command and args, or url)"

    def with_mcp(self, launch: Launch, servers: Sequence[McpEndpoint], home: Path) -> Launch:
        lines = []
        for server in servers:
            lines += [f"[mcp_servers.{_toml(server.name)}]", "startup_timeout_sec = 30", "required = true",
                      "default_tools_approval_mode = \"approve\""]
            if server.transport == "http":
                lines.append(f"url = {_toml(server.url)}")
            else:
                lines += [f"command = {_toml(server.command[0])}",
                          f"args = {_toml(server.args)}"]
        with (home / ".codex" / "config.toml").open("a", encoding="utf-8") as config:
            config.write("\n".join(lines) + "\n")
        return launch


def _sandbox_helper(program: str) -> Path | None:
    """Codex's native binary (the npm launcher runs it): its Linux sandbox runs it again as
    `codex-linux-sandbox`, which must be on PATH outside CODEX_HOME (Codex hides that folder from commands)."""
    package = Path(program).resolve().parent.parent  # .../@openai/codex/bin/codex.js -> .../@openai/codex
    for pattern in ("../codex-linux-*/vendor/*/bin/codex", "node_modules/@openai/codex-linux-*/vendor/*/bin/codex",
                    "vendor/*/codex/codex", "vendor/*/bin/codex"):
        found = sorted(package.glob(pattern))
        if found:
            return found[0].resolve()
    return None


def codex(**options: Any) -> Codex:
    """Codex CLI, ready to run: `tr.agents.codex(permission_mode="workspace-write")` (see `Preset`)."""
    return Codex(**options)
