"""Codex CLI (`@openai/codex`, checked with 0.171): `codex exec --ephemeral`, configured through CODEX_HOME
(config.toml names the endpoint as a model provider; it speaks the Responses API, streamed).

Codex runs commands in its own sandbox (`permission_mode` is its sandbox_mode: "workspace-write" by default,
"read-only" or "danger-full-access") with approval_policy "never", and refuses some commands itself (`rm -f`
style) while it runs others (`rm -r`): its refusals come back as text tool results ("exec_command failed: ...
Rejected", "rejected: ..."), read here as denials with source "agent"."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._process import DUMMY_KEY, Launch
from ._preset import Preset

if TYPE_CHECKING:
    from ..case import TrialContext
    from ..endpoint import ModelEndpoint

__all__ = ["Codex", "codex"]

_MODES = ("read-only", "workspace-write", "danger-full-access")
_KEY_VARIABLE = "TRIALRUN_CODEX_KEY"


def _toml(value: Any) -> str:
    return json.dumps(value)  # JSON strings, numbers, booleans and arrays are TOML too


class Codex(Preset):
    label = "codex"
    program = "codex"
    npm_package = "@openai/codex"
    apis = ("openai-responses",)
    shell_tool = ("exec_command", "cmd")
    permission_modes = _MODES
    permission_mode_is = "permission_mode is its sandbox_mode,"

    def check_knobs(self) -> None:
        super().check_knobs()
        if self.allow or self.deny:
            raise ValueError("codex: allow/deny rules are not supported by this preset; use permission_mode "
                             "(its sandbox_mode) or args=['-c', 'key=value']")

    def refusal_in(self, text: str) -> str | None:
        # what ran starts "Chunk ID: ..." with its exit code; a refusal is Codex's own text in its place
        head = text.lstrip()[:400]
        if head.startswith("exec_command failed") and "Rejected" in head:
            return "exec_command failed: Rejected"
        if head.startswith(("rejected:", "Rejected")):
            return "rejected"
        return None

    def config_toml(self, base_url: str) -> str:
        lines = [
            f"model = {_toml(self.model_name)}",
            'model_provider = "trialrun"',
            'approval_policy = "never"',
            f"sandbox_mode = {_toml(self.permission_mode or 'workspace-write')}",
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
        argv = [self.path, "exec", "--skip-git-repo-check", "--ephemeral", "--color", "never",
                "--output-last-message", str(last), *self.args, prompt]
        env = {"PATH": path, "HOME": str(home), "CODEX_HOME": str(config), _KEY_VARIABLE: DUMMY_KEY, "NO_COLOR": "1"}
        return Launch(argv, env, home)

    def settings_for_snapshot(self) -> Any:
        return {**super().settings_for_snapshot(), "config": self.config_toml("<endpoint>")}


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
