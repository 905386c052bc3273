"""opencode (`opencode-ai`, checked with 1.18): `opencode run --model trialrun/M --title T`, configured through
OPENCODE_CONFIG (a JSON file naming the endpoint as an OpenAI-compatible provider) and private XDG folders; it
speaks Chat Completions, streamed. `--title` stops its title request (which would race the main loop).

Permissions are its bash rules, last match wins: `permission_mode` is the default for every command ("allow",
"ask" or "deny"), then `allow` patterns, then `deny` patterns (so a deny rule beats a broader allow). A call its
rules refuse (or would ask about: nobody can answer in a run) ends the run with exit status 0, no tool result and
no final text ("The user rejected permission to use this specific tool call."): read here as a denial with source
"agent" and a failed trial, never a pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..trajectory import Denial, Run
from ._process import DUMMY_KEY, Launch
from ._preset import Preset

if TYPE_CHECKING:
    from ..case import TrialContext
    from ..endpoint import ModelEndpoint

__all__ = ["Opencode", "opencode"]

_MODES = ("allow", "ask", "deny")
_REJECTED = "rejected permission"
_QUIET = {"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1",
          "OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1", "NO_COLOR": "1"}


class Opencode(Preset):
    label = "opencode"
    program = "opencode"
    npm_package = "opencode-ai"
    apis = ("openai-chat",)
    shell_tool = ("bash", "command")
    refusal_markers = ("The user rejected permission", "rejected permission to use",
                       "has specified a rule which prevents you from using")
    permission_modes = _MODES
    permission_mode_is = "permission_mode is the default for commands,"

    def bash_rules(self) -> dict[str, str]:
        rules = {"*": self.permission_mode or "allow"}
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
        argv = [self.path, "run", "--model", f"trialrun/{self.model_name}", "--title", "trialrun", *self.args, prompt]
        env = {"HOME": str(home), "OPENCODE_CONFIG": str(config_file), **{k: str(v) for k, v in xdg.items()}, **_QUIET}
        return Launch(argv, env, home)

    def interpret(self, run: Run) -> None:
        super().interpret(run)
        # its own rejection ends the run: the refused call has no result on the wire; the text is on its output
        said = (run.stderr or "") + str(run.output or "")
        if _REJECTED in said:
            trajectory = run.trajectory
            answered = {r.call_id for r in trajectory.tool_results}
            denied = {d.call_id for d in trajectory.denials}
            for call in trajectory.tool_calls:
                if call.id not in answered and call.id not in denied:
                    trajectory.denials.append(Denial(call.name, dict(call.arguments),
                                                     "The user rejected permission to use this specific tool call.",
                                                     "opencode: its permission rules", call.id, source="agent"))

    def check_ending(self, run: Run, stdout: str) -> None:
        if run.status == "completed" and not run.trajectory.final_text.strip():
            agent_denials = [d for d in run.trajectory.denials if d.source == "agent"]
            why = (f"after its own permission rejection of {agent_denials[-1].tool}" if agent_denials
                   else "without a final answer")
            run.status, run.error = "error", f"opencode exited 0 {why}, with no final text: the task was not done"

    def settings_for_snapshot(self) -> Any:
        return {**super().settings_for_snapshot(), "config": self.config("<endpoint>")}


def opencode(**options: Any) -> Opencode:
    """opencode, ready to run: `tr.agents.opencode(deny=["rm *"])` (see `Preset`)."""
    return Opencode(**options)
