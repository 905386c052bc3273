"""pi (`@mariozechner/pi-coding-agent`, checked with 0.73): `pi -p --offline --no-session`, configured through
PI_CODING_AGENT_DIR (models.json names the endpoint as a provider). pi has no permission checks of its own: it runs
whatever the model asks, so a destructive command is never refused by pi (a ToolPolicy or the sandbox must).

Over Anthropic Messages and Gemini the wire flags its failed tool calls; over OpenAI Chat Completions and
Responses nothing does, and its results are read by their form (`FAILED`): a failed bash ENDS with its status
after a blank line ("Command exited with code 2", "Command timed out after N seconds", "Command aborted"), a
failed read IS the file system's error ("ENOENT: no such file or directory, access '...'"), write and edit answer
"Successfully ..." when they worked, and any tool can answer pi's own "Tool X not found" / "Validation failed for
tool ...". (A command whose own output ends like a failed one's, or a file whose whole text is such an error, reads
as failed.)
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..trajectory import ToolCall, ToolResult
from ._contract import AgentContract, Endpoint, Errors, FileTool, Knobs, ShellTool, forms, matching, pinned
from ._preset import Preset
from ._process import DUMMY_KEY, Launch

if TYPE_CHECKING:
    from ..case import TrialContext
    from ..endpoint import ModelEndpoint

__all__ = ["Pi", "pi", "CONTRACT"]

_QUIET = {"PI_OFFLINE": "1", "PI_TELEMETRY": "0", "PI_SKIP_VERSION_CHECK": "1"}

#: pi's provider `api` for each wire API trialrun speaks (its models.json); pi's contract offers exactly these.
_WIRE = {"openai-chat": "openai-completions", "openai-responses": "openai-responses",
         "anthropic": "anthropic-messages", "gemini": "google-generative-ai"}


CONTRACT = AgentContract(
    name="pi",
    pin=pinned("pi"),
    summary="pi coding agent: runs whatever the model asks (no permission system of its own)",
    apis=tuple(_WIRE),  # every wire API pi has a provider type for (the table below)
    endpoint=Endpoint("models.json names the endpoint as a provider (its `api` per wire)",
                      env=("PI_CODING_AGENT_DIR",), files=(".pi/agent/models.json", ".pi/agent/settings.json"),
                      quiet=_QUIET, flags=("-p", "--offline", "--no-session")),
    shell=(ShellTool("bash", "command"),),
    files=(FileTool("read", "read", "path"),
           FileTool("write", "write", "path", "whole-file", content="content"),
           FileTool("edit", "edit", "path", "pi", old="oldText", new="newText", edits="edits")),
    errors=Errors(
        "Anthropic `is_error` / Gemini `error`; over OpenAI wires its forms: a bash result ENDING \"Command exited "
        "with code N\" (or timed out / aborted), a read that IS a file-system error (`ENOENT: ...`), write/edit not "
        "answering \"Successfully ...\"; another tool: unknown (`pi/tool-error*.yaml`)",
        flagged_apis=("anthropic", "gemini"),
        # pi's failures (0.73) over a wire without an error flag, per tool; any tool's ("*"): pi's own loop errors.
        # Seen in tests/fixtures/agent-traffic/pi/tool-error*.yaml (the same texts over all four wires).
        failed={
            "*": forms(("no such tool", r"Tool \S+ not found"), ("invalid arguments", r'Validation failed for tool ".*')),
            "bash": forms(("its exit status", r"(?:.*\n\n)?(?:Command exited with code -?\d+|Command timed out after "
                                              r"\S+ seconds|Command aborted)"),
                          ("no working folder", r"Working directory does not exist: .*")),
            "read": forms(("a file system error", r"E[A-Z]+: [^\n]*"),
                          ("past its end", r"Offset \d+ is beyond end of file .*"), ("aborted", r"Operation aborted")),
        },
        # what write and edit answer when they worked (anything else from them is a failure)
        worked={"write": re.compile(r"Successfully wrote \d+ bytes to .*", re.DOTALL),
                "edit": re.compile(r"Successfully replaced \d+ block\(s\) in .*", re.DOTALL)},
    ),
    knobs=Knobs(instructions="--append-system-prompt FILE", skills="--skill DIR, one per skill"),
    sandboxes_tested=("none", "bwrap"),
)
#: pi's failure forms per tool (the contract's), kept under their old name.
FAILED = CONTRACT.errors.failed


def _failed(call: ToolCall, text: str) -> bool | None:
    """Whether pi's result of `call` is a failure, by its form; None for a tool whose forms are not known here."""
    errors = CONTRACT.errors
    if matching(errors.failed["*"], text):
        return True
    if call.name in errors.worked:
        return not errors.worked[call.name].fullmatch(text)
    if call.name in errors.failed:
        return matching(errors.failed[call.name], text) is not None
    return None


_PROVIDER = "trialrun"


class Pi(Preset):
    contract = CONTRACT

    def error_in(self, call: ToolCall, result: ToolResult) -> bool | None:
        return _failed(call, result.content)

    def _base_url(self, endpoint: ModelEndpoint) -> str:
        if self.api == "anthropic":
            return endpoint.anthropic_base_url
        if self.api == "gemini":
            return endpoint.url + "/v1beta"
        return endpoint.openai_base_url

    def models_json(self, base_url: str) -> dict[str, Any]:
        return {"providers": {_PROVIDER: {"baseUrl": base_url, "api": _WIRE[self.api], "apiKey": DUMMY_KEY,
                                          "models": [{"id": self.model_name}]}}}

    def prepare(self, prompt: str, ctx: TrialContext, endpoint: ModelEndpoint, home: Path) -> Launch:
        config = home / ".pi" / "agent"
        config.mkdir(parents=True)
        (config / "models.json").write_text(json.dumps(self.models_json(self._base_url(endpoint)), indent=2))
        (config / "settings.json").write_text(json.dumps({"enableInstallTelemetry": False, "quietStartup": True}))
        argv = [self.path, *self.contract.endpoint.flags, "--provider", _PROVIDER, "--model", str(self.model_name)]
        for _, skill in self.skill_dirs():
            argv += ["--skill", str(skill)]
        if self.instructions is not None:
            argv += ["--append-system-prompt", str(self.instructions)]
        argv += [*self.args, prompt]
        env = {"HOME": str(home), "PI_CODING_AGENT_DIR": str(config), **self.contract.endpoint.quiet}
        return Launch(argv, env, home)

    def settings_for_snapshot(self) -> Any:
        return {**super().settings_for_snapshot(), "models": self.models_json("<endpoint>")}


def pi(**options: Any) -> Pi:
    """The pi coding agent, ready to run: `tr.agents.pi(skills=["skills/careful"])` (see `Preset` for options)."""
    return Pi(**options)
