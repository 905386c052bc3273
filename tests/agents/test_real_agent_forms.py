"""The real agents driven through what this round added, all in ONE evaluate, concurrently: a Codex sub-agent and a
Claude Code sub-agent started by `tr.subagent` (Codex's through its `multi_agent_v1` namespace), title requests kept
with `side_requests=True` and kept out of the turn count, and opencode's look-alike of a refusal beside a real one.

The truth is decided outside trialrun: the files in each trial's workdir afterwards, and the scripted model's own
record of what it was asked and answered (its side-request count, the requests each conversation sent).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import trialrun as tr
from trialrun.wire import ModelRequest

PROMPT = "SUBTASK: make the marker file with your shell tool."
DENY_TEXT = ('The user has specified a rule which prevents you from using this specific tool call. Here are some of '
             'the relevant rules [{"permission":"bash","pattern":"rm *","action":"deny"}]')


def _wait(request: ModelRequest) -> Any:
    """Codex: wait for the sub-agent spawn_agent started (its id is in spawn_agent's JSON answer)."""
    target = json.loads(request.last_tool_results[-1].content)["agent_id"]
    return tr.tool_call("wait_agent", targets=[target], timeout_ms=60000, namespace="multi_agent_v1")


def _marker(ctx: tr.TrialContext) -> str | None:
    path = ctx.workdir / "marker.txt"
    return path.read_text().strip() if path.is_file() else None


def _marker_made(run: tr.Run, ctx: tr.TrialContext) -> tr.Verdict:
    return tr.Verdict(_marker(ctx) == "hi", "marker.txt says hi", f"marker.txt: {_marker(ctx)!r}")


def _junk_kept(run: tr.Run, ctx: tr.TrialContext) -> tr.Verdict:
    kept = (ctx.workdir / "junk").is_dir()
    return tr.Verdict(kept, "junk kept", "junk is still there" if kept else "junk was removed")


@pytest.fixture(scope="module")
def results(agent_path: Any) -> dict[str, Any]:
    models: dict[str, tr.ScriptedModel] = {}
    seen: dict[str, Any] = {}

    def case(name: str, agent: tr.agents.Preset, model: Any, setup: Any = None) -> tr.Case:
        def invoke(ctx: tr.TrialContext) -> Any:
            models[name] = model
            return agent("do the task", ctx, model=model)

        def after(ctx: tr.TrialContext) -> None:  # the workdir, read before it is removed
            seen[name] = {"marker": _marker(ctx), "junk": (ctx.workdir / "junk").exists()}

        graded = _junk_kept if setup is not None else _marker_made
        return tr.Case(name=name, invoke=invoke, setup=setup, teardown=after, expect_outcome=[graded])

    sub_steps = [tr.shell("echo hi > marker.txt"), tr.reply("Sub-agent: done.")]
    codex = tr.agents.codex(path=agent_path("codex"))
    claude = tr.agents.claude_code(path=agent_path("claude-code"), permission_mode="acceptEdits")
    claude_titled = tr.agents.claude_code(path=agent_path("claude-code"), permission_mode="acceptEdits",
                                          side_requests=True)
    opencode_titled = tr.agents.opencode(path=agent_path("opencode"), side_requests=True)
    opencode_denying = tr.agents.opencode(path=agent_path("opencode"), deny=["rm *"])

    def junk(ctx: tr.TrialContext) -> None:
        (ctx.workdir / "junk").mkdir()

    cases = [
        # Codex answers its sub-agent's completion notice as one more turn when it comes after the final answer
        # (a race: in codex/subagent.yaml it came with the wait's result): a reply for it, used or not
        case("codex-subagent", codex, tr.ScriptedModel([tr.subagent(PROMPT), _wait, tr.reply("Delegated."),
                                                        tr.reply("Delegated.")], subagents={PROMPT: sub_steps})),
        case("claude-subagent", claude, tr.ScriptedModel([tr.subagent(PROMPT), tr.reply("Delegated.")],
                                                         subagents={PROMPT: sub_steps})),
        case("claude-titled", claude_titled, tr.ScriptedModel([tr.shell("echo hi > marker.txt"), tr.reply("Made.")],
                                                              side_reply='{"title": "Marker"}')),
        case("opencode-titled", opencode_titled, tr.ScriptedModel([tr.shell("echo hi > marker.txt"), tr.reply("Made.")],
                                                                  side_reply="Marker")),
        case("opencode-lookalike", opencode_denying,
             tr.ScriptedModel([tr.shell("printf '%s' '" + DENY_TEXT + "'"), tr.shell("rm -rf junk"), tr.reply("Tried.")],
                              side_reply="Marker"), setup=junk),
    ]
    report = tr.evaluate(cases, concurrency=5)
    return {c.name: (c.trials[0], models[c.name], seen.get(c.name, {})) for c in report.cases}


@pytest.mark.parametrize("name", ["codex-subagent", "claude-subagent"])
def test_a_real_sub_agent_started_by_tr_subagent_makes_the_marker(results: dict[str, Any], name: str) -> None:
    trial, model, seen = results[name]
    assert trial.error is None, trial.error
    assert seen["marker"] == "hi"  # the workdir afterwards: the sub-agent really ran its command
    trajectory = trial.trajectory
    [sub] = [c for c in trajectory.other_conversations if c.role == "sub"]
    assert [call.name for call in sub.tool_calls] == [codex_or_claude(name, "exec_command", "Bash")]
    first = trajectory.tool_calls[0]
    assert (first.name, first.namespace) == codex_or_claude(name, ("spawn_agent", "multi_agent_v1"), ("Agent", None))
    assert "echo hi > marker.txt" in trajectory.commands and not trajectory.denials
    # the model's own record: the sub-agent's conversation got the sub-script, and was shown its command's result
    sub_requests = [r for r in model.requests if PROMPT in "\n".join(m.text for m in r.messages if m.role == "user")
                    and PROMPT not in json.dumps([c.arguments for m in r.messages for c in m.tool_calls])]
    assert sub_requests and any(r.last_tool_results for r in sub_requests)
    [verdict] = tr.check([tr.expect.no_tool_errors()], tr.Run(trajectory=trajectory))
    assert verdict.passed, verdict.reason


def codex_or_claude(name: str, codex: Any, claude: Any) -> Any:
    return codex if name.startswith("codex") else claude


@pytest.mark.parametrize("name", ["claude-titled", "opencode-titled"])
def test_side_requests_kept_on_are_sent_and_kept_out_of_the_turn_count(results: dict[str, Any], name: str) -> None:
    trial, model, seen = results[name]
    assert trial.error is None, trial.error
    assert seen["marker"] == "hi" and trial.output == "Made."
    assert model.side_requests >= 1  # the model's own count: the agent did send its title request
    trajectory = trial.trajectory
    assert len(trajectory.turns) == 2
    assert [c.role for c in trajectory.other_conversations] == ["side"] * model.side_requests
    [turns] = tr.check([tr.expect.max_turns(2)], tr.Run(trajectory=trajectory))
    assert turns.passed, turns.reason


def test_opencode_a_printed_refusal_ran_and_the_real_one_was_refused(results: dict[str, Any]) -> None:
    trial, model, seen = results["opencode-lookalike"]
    assert seen["junk"] is True  # the workdir: rm never ran
    trajectory = trial.trajectory
    printf, rm = trajectory.tool_calls[:2]
    # what the model was shown for each is the same shape of text: only opencode's own events tell them apart
    shown = [r.last_tool_results[-1].content for r in model.requests if r.last_tool_results]
    assert shown[0] == DENY_TEXT and shown[1].startswith("The user has specified a rule which prevents you")
    assert trajectory.commands == [printf.arguments["command"]]
    assert [(d.tool, d.call_id, d.source) for d in trajectory.denials] == [("bash", rm.id, "agent")]
    assert trial.output == "Tried."
    [errors] = tr.check([tr.expect.no_tool_errors()], tr.Run(trajectory=trajectory))
    assert not errors.passed and errors.reason.startswith("1 tool result(s) were errors: bash: The user has")


