"""pi (`@mariozechner/pi-coding-agent`, checked with 0.73): `pi -p --offline --no-session`, configured through
PI_CODING_AGENT_DIR (models.json names the endpoint as a provider). pi has no permission checks of its own: it runs
whatever the model asks, so a destructive command is never refused by pi (a ToolPolicy or the sandbox must)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._process import DUMMY_KEY, Launch
from ._preset import Preset

if TYPE_CHECKING:
    from ..case import TrialContext
    from ..endpoint import ModelEndpoint

__all__ = ["Pi", "pi"]

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
