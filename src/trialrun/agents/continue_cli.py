"""Continue's CLI (`@continuedev/cli`, program `cn`, checked with 1.5.47): `cn -p PROMPT --config FILE --auto`,
configured by a config.yaml in the trial's HOME (one `openai` model with `apiBase` at the endpoint) and
CONTINUE_GLOBAL_DIR (its sessions, logs and permissions.yaml) there too, telemetry and metrics off; it speaks
Chat Completions, streamed, with no side requests. Its tools: Bash (`command`, `timeout`), Read / Write
(`filepath`, `content`), Edit (`file_path`, `old_string`, `new_string`: it refuses a file not Read first), List,
Fetch, Checklist, CheckBackgroundJob, AskQuestion, Exit, Skills.

In print mode (`-p`) it ran every command it was given, whatever it was told: `rm -rf` ran with `--auto`, with no
flag, with `--readonly` (its plan mode) and with `--exclude "Bash(rm*)"` or `--ask "Bash(rm*)"` (tried), so the
preset offers no allow/deny rules: like pi, a ToolPolicy or the sandbox must contain it. `permission_mode` is
"auto" (the default, `--auto`) or "readonly" (`--readonly`, which ends the run at a Write or Edit).

In print mode it also ends at once, exit status 0, with no output and without running it or answering it, on a
command with `exec` in it (`touch s.txt; exec true`, tried): a run that ends with no final text is a failed one.

A tool that failed answers "Error executing tool NAME: WHY" (a command that exits 3: "Error executing tool Bash:
Error (exit code 3): ..."); anything else is what the tool returned, so a command that prints exactly such a line
reads as failed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..trajectory import Run, ToolCall, ToolResult
from ._contract import AgentContract, Endpoint, Errors, FileTool, Knobs, Permissions, ShellTool, forms, pinned
from ._preset import Preset
from ._process import DUMMY_KEY, Launch

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..case import TrialContext
    from ..endpoint import ModelEndpoint
    from ..mcp import McpEndpoint

__all__ = ["ContinueCli", "continue_cli", "CONTRACT"]

_FAILED = re.compile(r"Error executing tool \S+: .*", re.DOTALL)
#: Its edit tool's own refusal of a file it has not read (not an error of the tool's run: nothing was written).
_NOT_READ = re.compile(r"You must use the Read tool to read .+ before editing it\.")
_QUIET = {"CONTINUE_CLI_ENABLE_TELEMETRY": "0", "CONTINUE_METRICS_ENABLED": "0", "NO_COLOR": "1"}


CONTRACT = AgentContract(
    name="continue-cli",
    pin=pinned("continue-cli"),
    sandboxes_tested=("none", "bwrap"),  # bwrap: the battery's ran-bwrap
    summary="Continue's CLI (cn): in print mode it runs every command (its --readonly, --exclude, --ask did not stop "
            "`rm -rf`)",
    apis=("openai-chat",),
    endpoint=Endpoint("a config.yaml (--config) with one `openai` model whose apiBase is the endpoint",
                      env=("CONTINUE_GLOBAL_DIR",), files=(".continue/config.yaml",), quiet=_QUIET,
                      flags=("-p", "--auto")),
    shell=(ShellTool("Bash", "command", long={"timeout": 300}, stops_on=("exec",)),),
    files=(FileTool("read", "Read", "filepath", absolute=True),
           FileTool("write", "Write", "filepath", "whole-file", content="content", absolute=True),
           FileTool("edit", "Edit", "file_path", "claude", old="old_string", new="new_string", absolute=True,
                    read_first=True,
                    corrects="a near-miss old string, corrected by itself; its result shows the diff, which is applied")),
    errors=Errors("none on the wire: a failed tool answers \"Error executing tool NAME: WHY\" "
                  "(`continue-cli/tool-error.yaml`)",
                  failed={"*": forms(("its tool failed", _FAILED.pattern), ("not read first", _NOT_READ.pattern))}),
    others=("List", "Fetch", "Checklist", "CheckBackgroundJob", "AskQuestion", "Exit", "Skills", "Search",
            "ViewDiff", "Status"),
    # its modes, `--auto` (the default) or `--readonly` (issue 33.7: the preset used to add --auto always, and
    # `cn` refuses both at once); neither refuses a command: read-only ran `rm -rf`, and ended its run, unanswered,
    # at a Write (tried)
    permissions=Permissions(
        modes=("auto", "readonly"), mode_is="permission_mode is its tool mode (--auto or --readonly),",
        default_mode="auto",
        note="neither refuses a command (`rm -rf` ran in both, tried); read-only ends the run, silently and "
             "unanswered, at a Write or Edit"),
    knobs=Knobs(instructions="--rule TEXT", skills="none"),
)


class ContinueCli(Preset):
    contract = CONTRACT

    def check_knobs(self) -> None:
        if self.allow or self.deny:
            raise ValueError("continue-cli: in print mode it runs every command it is given (its --exclude and --ask "
                             "did not stop `rm -rf`), so the preset takes no allow/deny rules; use a sandbox to "
                             "contain it")
        if getattr(self, "skills", None):
            raise ValueError("continue-cli: the preset installs no skills")
        super().check_knobs()  # (its side requests: none)

    def error_in(self, call: ToolCall, result: ToolResult) -> bool | None:
        text = result.content
        return bool(_FAILED.fullmatch(text) or _NOT_READ.fullmatch(text))

    def check_ending(self, run: Run, stdout: str) -> None:
        if run.status == "completed" and not run.trajectory.final_text.strip():
            unanswered = [c.name for c in run.trajectory.tool_calls if run.trajectory.result_for(c) is None]
            run.status, run.error = "error", ("continue-cli exited 0 with no final text" + (
                f", without answering its last {unanswered[-1]} call (it stops so, silently, on a command it would "
                "ask about: seen for any command with `exec` in it)" if unanswered else "") + ": the task was not done")

    def config_yaml(self, base_url: str) -> str:
        model = {"name": "trialrun", "provider": "openai", "model": str(self.model_name), "apiBase": base_url,
                 "apiKey": DUMMY_KEY, "roles": ["chat", "edit", "apply"]}
        # (JSON is YAML)
        return json.dumps({"name": "trialrun", "version": "1.0.0", "schema": "v1", "models": [model]}, indent=2)

    def prepare(self, prompt: str, ctx: TrialContext, endpoint: ModelEndpoint, home: Path) -> Launch:
        folder = home / ".continue"
        folder.mkdir(parents=True)
        config = folder / "config.yaml"
        config.write_text(self.config_yaml(endpoint.openai_base_url))
        argv = [self.path, "--config", str(config)]
        if self.instructions is not None:
            argv += ["--rule", self.instructions.read_text(encoding="utf-8")]
        mode = f"--{self.permission_mode or 'auto'}"
        argv += [*self.args, *(mode if flag == "--auto" else flag for flag in CONTRACT.endpoint.flags), prompt]
        return Launch(argv, {"HOME": str(home), "CONTINUE_GLOBAL_DIR": str(folder), **_QUIET}, home)

    def settings_for_snapshot(self) -> Any:
        return {**super().settings_for_snapshot(), "config": self.config_yaml("<endpoint>")}

    mcp_support = "mcpServers in its config.yaml (name with command and args, or a streamable-http url)"

    def with_mcp(self, launch: Launch, servers: Sequence[McpEndpoint], home: Path) -> Launch:
        path = home / ".continue" / "config.yaml"
        config = json.loads(path.read_text(encoding="utf-8"))  # (written as JSON, which is YAML)
        config["mcpServers"] = [{"name": s.name, "type": "streamable-http", "url": s.url} if s.transport == "http"
                                else {"name": s.name, "command": s.command[0], "args": s.args}
                                for s in servers]
        path.write_text(json.dumps(config, indent=2))
        return launch


def continue_cli(**options: Any) -> ContinueCli:
    """Continue's CLI, ready to run: `tr.agents.continue_cli()` (see `Preset`)."""
    return ContinueCli(**options)
