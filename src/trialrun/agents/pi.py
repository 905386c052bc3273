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
from ._process import DUMMY_KEY, Launch
from ._preset import Preset, matching

if TYPE_CHECKING:
    from ..case import TrialContext
    from ..endpoint import ModelEndpoint

__all__ = ["Pi", "pi"]

#: pi's failures (0.73) over a wire without an error flag, per tool; any tool's: pi's own loop errors.
#: Seen in tests/fixtures/agent-traffic/pi/tool-error*.yaml (the same texts over all four wires).
FAILED: dict[str, tuple[tuple[str, re.Pattern[str]], ...]] = {
    name: tuple((why, re.compile(pattern, re.DOTALL)) for why, pattern in forms) for name, forms in {
        "*": (("no such tool", r"Tool \S+ not found"), ("invalid arguments", r'Validation failed for tool ".*')),
        "bash": (("its exit status", r"(?:.*\n\n)?(?:Command exited with code -?\d+|Command timed out after \S+ "
                                     r"seconds|Command aborted)"),
                 ("no working folder", r"Working directory does not exist: .*")),
        "read": (("a file system error", r"E[A-Z]+: [^\n]*"), ("past its end", r"Offset \d+ is beyond end of file .*"),
                 ("aborted", r"Operation aborted")),
    }.items()
}
#: What write and edit answer when they worked (anything else from them is a failure).
_WORKED = {"write": re.compile(r"Successfully wrote \d+ bytes to .*", re.DOTALL),
           "edit": re.compile(r"Successfully replaced \d+ block\(s\) in .*", re.DOTALL)}


def _failed(call: ToolCall, text: str) -> bool | None:
    """Whether pi's result of `call` is a failure, by its form; None for a tool whose forms are not known here."""
    if matching(FAILED["*"], text):
        return True
    if call.name in _WORKED:
        return not _WORKED[call.name].fullmatch(text)
    if call.name in FAILED:
        return matching(FAILED[call.name], text) is not None
    return None


_PROVIDER = "trialrun"
_WIRE = {"openai-chat": "openai-completions", "openai-responses": "openai-responses",
         "anthropic": "anthropic-messages", "gemini": "google-generative-ai"}


class Pi(Preset):
    label = "pi"
    program = "pi"
    npm_package = "@mariozechner/pi-coding-agent"
    apis = ("openai-chat", "openai-responses", "anthropic", "gemini")
    shell_tool = ("bash", "command")

    def check_knobs(self) -> None:
        if self.permission_mode or self.allow or self.deny:
            raise ValueError("pi has no permission modes or allow/deny rules of its own (it runs what the model "
                             "asks); use a sandbox to contain it")
        if self.side_requests:
            raise ValueError("pi sends no title or summary requests: side_requests applies to claude-code and "
                             "opencode")

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
        argv = [self.path, "-p", "--offline", "--no-session", "--provider", _PROVIDER, "--model", str(self.model_name)]
        for _, skill in self.skill_dirs():
            argv += ["--skill", str(skill)]
        if self.instructions is not None:
            argv += ["--append-system-prompt", str(self.instructions)]
        argv += [*self.args, prompt]
        env = {"HOME": str(home), "PI_CODING_AGENT_DIR": str(config), "PI_OFFLINE": "1", "PI_TELEMETRY": "0",
               "PI_SKIP_VERSION_CHECK": "1"}
        return Launch(argv, env, home)

    def settings_for_snapshot(self) -> Any:
        return {**super().settings_for_snapshot(), "models": self.models_json("<endpoint>")}


def pi(**options: Any) -> Pi:
    """The pi coding agent, ready to run: `tr.agents.pi(skills=["skills/careful"])` (see `Preset` for options)."""
    return Pi(**options)
