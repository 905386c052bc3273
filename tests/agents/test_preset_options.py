"""Issue 33.7, what the presets could not do: Continue's read-only mode (the preset always added `--auto`, and `cn`
refuses `--readonly` beside it) and Kilo's `external_directory` permission (an ask, rejected in a run, for any
folder outside the workdir). Each against the real agent, the truth outside trialrun: the files the trial left and
what the scripted model itself was shown."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import trialrun as tr
from trialrun.trajectory import ToolCall
from trialrun.wire import ModelRequest


def _trial(agent: Any, steps: Callable[[Path], list[list[ToolCall]]], graders: list[Any] | None = None,
           ) -> tuple[tr.TrialResult, dict[str, str], dict[str, bool]]:
    """One trial of `agent` on a scripted model that makes `steps(workdir)`: the trial, every tool result the model
    was shown (by call id) and which files the trial left (`ran.txt`, `written.txt`)."""
    shown: dict[str, str] = {}
    left: dict[str, bool] = {}

    def invoke(ctx: tr.TrialContext) -> Any:
        planned = steps(ctx.workdir)

        def script(request: ModelRequest) -> Any:
            for message in request.messages:
                for result in message.tool_results:
                    shown[result.call_id or ""] = result.content
            if not request.tools:
                return tr.reply("title")
            made = sum(1 for m in request.messages if m.role == "assistant" and m.tool_calls)
            return tr.tool_calls(*planned[made]) if made < len(planned) else tr.reply("done")

        return agent("Do the task.", ctx, model=ctx.scripted(script))

    def teardown(ctx: tr.TrialContext) -> None:
        left.update({name: (ctx.workdir / name).exists() for name in ("ran.txt", "written.txt")})

    case = tr.Case(name="option", invoke=invoke, teardown=teardown,
                   expect_trajectory=graders or [tr.expect.max_turns(100)])
    return tr.evaluate([case]).cases[0].trials[0], shown, left


def test_continue_runs_read_only(agent_path: Any) -> None:
    """permission_mode="readonly" runs `cn --readonly` (before: the preset added `--auto`, and `args=["--readonly"]`
    stopped `cn` at once: "Cannot use both --readonly and --auto"). Read-only refuses no command, as its contract
    says (the truth: `touch` made its file), and ends the run at a Write, which made nothing and was never answered."""
    agent = tr.agents.continue_cli(path=agent_path("continue-cli"), permission_mode="readonly", timeout_s=240)
    trial, shown, left = _trial(agent, lambda w: [[ToolCall("Bash", {"command": "touch ran.txt"}, "call_1")],
                                                  [ToolCall("Write", {"filepath": f"{w}/written.txt", "content": "x"},
                                                            "call_2")]])
    assert left == {"ran.txt": True, "written.txt": False}, (left, shown, trial.error)
    assert "call_1" in shown and "call_2" not in shown
    assert trial.error is not None and "without answering its last Write call" in trial.error.message, trial.error


def test_kilo_is_granted_folders_outside_the_workdir(agent_path: Any) -> None:
    """`allow=["external_directory:/etc/*"]` grants Kilo's external_directory permission for /etc (before: the rule was
    read as a bash pattern, and the read of /etc/hostname was an ask it rejected, ending the run with status 1). The
    truth: the model was shown the file's text."""
    hostname = Path("/etc/hostname").read_text(encoding="utf-8").strip()
    steps = lambda w: [[ToolCall("read", {"filePath": "/etc/hostname"}, "call_1")]]  # noqa: E731
    granted = tr.agents.kilo_code(path=agent_path("kilo-code"), allow=["external_directory:/etc/*"], timeout_s=300)
    trial, shown, _ = _trial(granted, steps, [tr.expect.no_denials()])
    assert hostname in shown.get("call_1", ""), shown
    assert trial.verdicts[0].passed, trial.verdicts[0].reason
    plain = tr.agents.kilo_code(path=agent_path("kilo-code"), timeout_s=300)
    trial, shown, _ = _trial(plain, steps, [tr.expect.no_denials()])
    assert hostname not in shown.get("call_1", "")  # without it: asked, and rejected
    assert not trial.verdicts[0].passed and "an ask it rejected" in trial.verdicts[0].reason
