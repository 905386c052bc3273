"""Kilo Code's CLI (`@kilocode/cli`, program `kilo`, checked with 7.7.7; 7.8.1 cannot be installed: its
`@kilocode/cli-linux-x64@7.8.1` binary package was never published), a fork of opencode: `kilo run --model
trialrun/M --format json --title T PROMPT`, configured through KILO_CONFIG (the same JSON as opencode's: an
`@ai-sdk/openai-compatible` provider at the endpoint, `permission` rules) and private XDG folders, with its
PostHog telemetry (KILO_TELEMETRY_LEVEL=off), auto-update, model-list fetch, sharing, session ingest, codebase
indexing and daemon off. It speaks Chat Completions, streamed. Its tools (16): bash (`command`, `description`),
read / write / edit (`filePath`, `oldString`, `newString`), glob, grep, task (sub-agents), todowrite, webfetch,
skill, background_process, board_post, board_read, schedule_wakeup, cancel_wakeup, kilo_local_recall.

Everything else is opencode's (see `trialrun.agents.opencode`): its `--format json` event stream tells each
main-session call's state and bash's exit code, and its rules are opencode's, last match wins. Its deny-rule
refusal names the rule as one JSON object, not opencode's list (`REFUSALS`).
"""

from __future__ import annotations

import re
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
from ._process import Launch, ResultReader
from .opencode import CONTRACT as OPENCODE, REFUSALS as OPENCODE_REFUSALS, Opencode, _events, _Reading

if TYPE_CHECKING:
    from ..case import TrialContext
    from ..endpoint import ModelEndpoint

__all__ = ["KiloCode", "kilo_code", "REFUSALS", "CONTRACT"]

_QUIET = {"KILO_TELEMETRY_LEVEL": "off", "KILO_DISABLE_AUTOUPDATE": "1", "KILO_DISABLE_MODELS_FETCH": "1",
          "KILO_DISABLE_LSP_DOWNLOAD": "1", "KILO_DISABLE_DEFAULT_PLUGINS": "1", "KILO_DISABLE_SHARE": "1",
          "KILO_DISABLE_SESSION_INGEST": "1", "KILO_NO_DAEMON": "1", "KILO_DISABLE_CODEBASE_INDEXING": "1",
          "KILO_DISABLE_PRESENCE": "1", "NO_COLOR": "1"}

#: Kilo's permission errors (7.7.7), each the WHOLE error of a call (tests/fixtures/agent-traffic/kilo-code).
REFUSALS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a deny rule", re.compile(r"The user has specified a rule which prevents you from using this specific tool "
                               r"call\. Here are some of the relevant rules \{.*\}", re.DOTALL)),
    *OPENCODE_REFUSALS,
)


CONTRACT = AgentContract(
    name="kilo-code",
    pin=pinned("kilo-code"),
    sandboxes_tested=("none", "bwrap"),  # bwrap: the battery's ran-bwrap
    summary="Kilo Code's CLI (an opencode fork): opencode's bash rules (allow, ask, deny), last match wins",
    apis=("openai-chat",),
    endpoint=Endpoint("KILO_CONFIG names the endpoint as an OpenAI-compatible provider (opencode's JSON); private "
                      "XDG folders",
                      env=("KILO_CONFIG", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"),
                      files=("opencode.json",), quiet=_QUIET, flags=("run", "--format", "json")),
    shell=(ShellTool("bash", "command", required=("description",)),
           # (a command it starts and keeps running: `background_process(action="start", command=...)` runs it too)
           ShellTool("background_process", "command", required=("description",), fixed={"action": "start"})),
    files=(FileTool("read", "read", "filePath", absolute=True),
           FileTool("write", "write", "filePath", "whole-file", content="content", absolute=True),
           FileTool("edit", "edit", "filePath", "opencode", old="oldString", new="newString", absolute=True,
                    read_first=True)),
    refusals=Refusals(REFUSALS, where="its event stream (`--format json`: a call in state \"error\")", examples=(
        "The user has specified a rule which prevents you from using this specific tool call. Here are some of the "
        'relevant rules {"permission":"bash","pattern":"rm *","action":"deny","source":"global"}',
        "The user rejected permission to use this specific tool call.",
    ), recordings="refuse-deny.yaml"),
    errors=Errors("none on the wire: its event stream's state and bash exit code, as opencode's "
                  "(`kilo-code/tool-error.yaml`)", failed=OPENCODE.errors.failed, worked=OPENCODE.errors.worked),
    permissions=Permissions(
        modes=("allow", "ask", "deny"), default_mode="allow", mode_is="permission_mode is the default for commands,",
        rules='bash patterns ("rm *"): allow, then deny, last match wins; `external_directory` or '
              '`external_directory:GLOB` allows (or denies) folders outside the workdir, which it otherwise asks about '
              '(rejected in a run)',
        note="an ask is auto-rejected: the run ends with exit status 1",
        refusing=(Refusing("deny-rule", {"deny": ["rm *"]}, "rm -rf sentinel"),
                  Refusing("ask", {"permission_mode": "ask"}, "rm -rf sentinel"))),
    # no side requests: run without `--title` (side_requests=True, the battery's side-requests scenario, twice) it
    # sent the endpoint no title request, only its main loop's (the preset still passes `--title`, as opencode's)
    side_requests=None,
    subagents=SubAgents("task", "prompt", {"description": "clean up", "subagent_type": "general"},
                        read="on the wire (its event stream covers the main session only), as opencode's"),
    others=("board_post", "board_read", "cancel_wakeup", "glob", "grep", "kilo_local_recall", "schedule_wakeup", "skill",
            "todowrite", "todoread", "webfetch", "websearch", "list", "codesearch"),
    knobs=Knobs(instructions="`instructions` in its config", skills="none"),
)


class _KiloReading(_Reading):
    def refusal_in(self, call: ToolCall, result: ToolResult | None) -> str | None:
        state = self.states.get(call.id or "")
        if state is not None:
            return matching(REFUSALS, state.error) if state.status == "error" else None
        return None if result is None else matching(REFUSALS, result.content)


class KiloCode(Opencode):
    contract = CONTRACT

    def check_knobs(self) -> None:
        super().check_knobs()
        if getattr(self, "skills", None):
            raise ValueError("kilo-code: the preset installs no skills")

    def bash_rules(self) -> dict[str, str]:
        rules = {"*": self.permission_mode or str(CONTRACT.permissions.default_mode if CONTRACT.permissions else "")}
        rules.update({pattern: "allow" for pattern in self.allow if not _outside(pattern)})
        rules.update({pattern: "deny" for pattern in self.deny if not _outside(pattern)})
        return rules

    def directory_rules(self) -> dict[str, str] | None:
        """Its `external_directory` permission from the rules `external_directory` (every folder outside the workdir)
        or `external_directory:GLOB` (those folders), allowed or denied; None: its default, an ask (rejected in a run)."""
        rules: dict[str, str] = {}
        for action, given in (("allow", self.allow), ("deny", self.deny)):
            for rule in given:
                if _outside(rule):
                    rules[rule.partition(":")[2] or "*"] = action
        return rules or None

    def config(self, base_url: str) -> dict[str, Any]:
        config = super().config(base_url)
        config.pop("$schema", None)
        directories = self.directory_rules()
        if directories is not None:
            config["permission"]["external_directory"] = directories
        return config

    def prepare(self, prompt: str, ctx: TrialContext, endpoint: ModelEndpoint, home: Path) -> Launch:
        launch = super().prepare(prompt, ctx, endpoint, home)
        env = {k: v for k, v in launch.env.items() if not k.startswith("OPENCODE_")}
        env["KILO_CONFIG"] = launch.env["OPENCODE_CONFIG"]
        return Launch(launch.argv, {**env, **_QUIET}, launch.home)

    def reader(self, run: Run, stdout: str) -> ResultReader:
        events = _events(stdout)
        return _KiloReading(self, events[0] if events is not None else {})

    def check_ending(self, run: Run, stdout: str) -> None:
        super().check_ending(run, stdout)
        if run.error and run.error.startswith("opencode "):
            run.error = "kilo-code" + run.error[len("opencode"):]


def _outside(rule: str) -> bool:
    """A rule of its `external_directory` permission (`external_directory`, `external_directory:/data/*`), not a bash
    pattern."""
    return rule == _DIRECTORIES or rule.startswith(_DIRECTORIES + ":")


_DIRECTORIES = "external_directory"


def kilo_code(**options: Any) -> KiloCode:
    """Kilo Code's CLI, ready to run: `tr.agents.kilo_code(deny=["rm *"])` (see `Preset`)."""
    return KiloCode(**options)
