"""mini-swe-agent (PyPI `mini-swe-agent`, checked with 2.4.6): `mini -y --exit-immediately -t TASK`, configured by
a YAML file merged over its own `mini.yaml` (`-c mini.yaml -c FILE`), with its global config folder
(MSWEA_GLOBAL_CONFIG_DIR) in the trial's HOME; it speaks Chat Completions through litellm (`openai/M` with
`api_base`), not streamed, and offers ONE tool, `bash` (`command`), each command run in a fresh subshell.

It has no permission checks that work without a terminal (its "confirm" mode asks on stdin), so the preset runs it
in its yolo mode (`-y`): like pi, it runs whatever the model asks; a ToolPolicy or the sandbox must contain it.

A task ends when the model runs `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` alone (what that command printed after
its first line is the submission, the run's output); that call's result is never sent back. A reply without a bash
call is its format error: after 3 in a row it stops (`RepeatedFormatError`), which the preset makes a failed
trial, as it does any ending but `Submitted` (the exit status in the trajectory file it writes, `-o`).

Every result of `bash` is its observation template: a JSON object whose `returncode` is the command's exit status
(`exception_info` when it timed out or did not run), so a failure is read from that object, never from what the
command printed (that is a JSON string inside it)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..trajectory import Run, ToolCall, ToolResult
from ._contract import AgentContract, Endpoint, Errors, Knobs, ShellTool, pinned
from ._preset import Preset
from ._process import DUMMY_KEY, Launch

if TYPE_CHECKING:
    from ..case import TrialContext
    from ..endpoint import ModelEndpoint

__all__ = ["MiniSweAgent", "mini_swe_agent", "SUBMIT", "CONTRACT"]

#: The command that ends a task (mini-swe-agent's own convention, in its mini.yaml prompt).
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
_TRAJECTORY = "mini-trajectory.json"
_QUIET = {"MSWEA_CONFIGURED": "true", "MSWEA_SILENT_STARTUP": "1", "MSWEA_COST_TRACKING": "ignore_errors",
          "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_COLOR": "1",
          "COLUMNS": "100000"}  # (its console wraps at the terminal's width: the trajectory path must stay whole)


_SAVED = re.compile(r"Saved trajectory to '(.+)'")


def _info(stdout: str) -> dict[str, Any] | None:
    """The `info` of the trajectory file mini-swe-agent says it saved (its last line; the file is in the trial's
    HOME, still there while the run is read), or None when it saved none."""
    found = [m.group(1) for m in map(_SAVED.fullmatch, (line.strip() for line in stdout.splitlines())) if m]
    if not found:
        return None
    try:
        info = json.loads(Path(found[-1]).read_text(encoding="utf-8")).get("info")
    except (OSError, ValueError, AttributeError):
        return None
    return info if isinstance(info, dict) else None


CONTRACT = AgentContract(
    name="mini-swe-agent",
    pin=pinned("mini-swe-agent"),
    sandboxes_tested=("none", "bwrap"),  # bwrap: the battery's ran-bwrap
    summary="mini-swe-agent: one bash tool, each command in a fresh subshell; runs whatever the model asks (yolo)",
    apis=("openai-chat",),
    endpoint=Endpoint("a YAML file merged over its mini.yaml names litellm's `openai/M` with `api_base` at the "
                      "endpoint; its global config folder in the per-trial HOME",
                      env=("MSWEA_GLOBAL_CONFIG_DIR",), files=(".config/mini-swe-agent/trialrun.yaml",),
                      quiet=_QUIET, flags=("-y", "--exit-immediately", "-c", "mini.yaml")),
    shell=(ShellTool("bash", "command"),),
    files=(),  # its one tool is bash: it edits with sed, as its prompt teaches
    errors=Errors(
        "none on the wire: its observation JSON `{\"returncode\": N, \"output\": ...}` (with `exception_info` on "
        "a timeout), failed when returncode is not 0 (`mini-swe-agent/tool-error.yaml`)"),
    knobs=Knobs(instructions="none (its prompts are templates in its config: args=['-c', 'my.yaml'])", skills="none"),
    version_args=("--help",),  # (it has no --version; its help starts "This is mini-swe-agent version X.")
    finish=SUBMIT,
    long_commands={"args": ["-c", "environment.timeout=900"]},  # it stops a command after 30 s by default
)


def _observation(text: str) -> dict[str, Any] | None:
    """mini-swe-agent's observation object (its template renders JSON), or None when the text is not one."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) and isinstance(value.get("returncode"), int) else None


class MiniSweAgent(Preset):
    contract = CONTRACT

    def check_knobs(self) -> None:
        if self.permission_mode or self.allow or self.deny:
            raise ValueError("mini-swe-agent has no permission modes or allow/deny rules that work without a "
                             "terminal (its confirm mode asks on one), so the preset runs it in yolo mode (it runs "
                             "what the model asks); use a sandbox to contain it")
        if getattr(self, "skills", None) or getattr(self, "instructions", None) is not None:
            raise ValueError("mini-swe-agent has no skills or instruction files; its prompts are templates in its "
                             "config (pass args=['-c', 'my.yaml'])")
        if self.side_requests:
            raise ValueError("mini-swe-agent sends no title or summary requests: side_requests applies to claude-code "
                             "and opencode")

    def error_in(self, call: ToolCall, result: ToolResult) -> bool | None:
        if call.name != "bash":
            return None
        observation = _observation(result.content)
        if observation is None:
            return None
        return observation["returncode"] != 0 or bool(observation.get("exception_info"))

    def config(self, base_url: str) -> dict[str, Any]:
        return {"model": {"model_name": f"openai/{self.model_name}", "cost_tracking": "ignore_errors",
                          "model_kwargs": {"api_base": base_url, "api_key": DUMMY_KEY}}}

    def prepare(self, prompt: str, ctx: TrialContext, endpoint: ModelEndpoint, home: Path) -> Launch:
        config_dir = home / ".config" / "mini-swe-agent"
        config_dir.mkdir(parents=True)
        config_file = config_dir / "trialrun.yaml"
        config_file.write_text(json.dumps(self.config(endpoint.openai_base_url), indent=2))  # JSON is YAML
        argv = [self.path, *CONTRACT.endpoint.flags, "-c", str(config_file), *self.args,
                "-o", str(home / _TRAJECTORY), "-t", prompt]
        env = {"HOME": str(home), "MSWEA_GLOBAL_CONFIG_DIR": str(config_dir), **_QUIET}
        return Launch(argv, env, home)

    def _output(self, stdout: str, ctx: TrialContext) -> Any:
        info = _info(stdout)
        if self.output == "stdout" and info is not None and info.get("exit_status") == "Submitted":
            return str(info.get("submission") or "").rstrip("\n")  # what the submit command printed after its line
        return super()._output(stdout, ctx)

    def check_ending(self, run: Run, stdout: str) -> None:
        if run.status != "completed":
            return
        info = _info(stdout)
        status = info.get("exit_status") if info is not None else None
        if status != "Submitted":
            why = {"RepeatedFormatError": "the model answered without a bash call 3 times in a row",
                   "LimitsExceeded": "its step or cost limit was reached"}.get(str(status), "")
            run.status, run.error = "error", (f"mini-swe-agent ended with {status or 'no trajectory file'}"
                                              f"{': ' + why if why else ''}, not a submission: the task was not "
                                              "finished")

    def settings_for_snapshot(self) -> Any:
        return {**super().settings_for_snapshot(), "config": self.config("<endpoint>")}


def mini_swe_agent(**options: Any) -> MiniSweAgent:
    """mini-swe-agent, ready to run: `tr.agents.mini_swe_agent(path="~/venvs/mini/bin/mini")` (see `Preset`)."""
    return MiniSweAgent(**options)
