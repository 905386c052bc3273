"""Which verdict-truth scenarios each preset gets is decided by its declared contract (no agent runs here): a
feature the agent does not have is a scenario that is not made, and every feature it declares is exercised.
The battery itself (test_verdict_truth.py) runs them on the real agents."""

from __future__ import annotations

import dataclasses

import _battery_scenarios
import pytest
from _battery_scenarios import all_scenarios, scenarios_for

import trialrun as tr
from trialrun.agents._contract import FileTool, SideRequests, SubAgents

CONTRACTS = tr.agents.CONTRACTS


def _names(preset: str) -> set[str]:
    return {s.name for s in scenarios_for(preset, 60.0)}


def _expected(preset: str) -> set[str]:
    """The scenario classes the contract calls for, written from the contract's fields alone."""
    c = CONTRACTS[preset]
    names = {"timeout-descendants", "ran", "ran-refusal-text", "lookalike", "tool-error", "background", "parallel",
             "disguised-quoted", "disguised-sh-c", "disguised-variable", "script-redirect", "script-tee", "script-sed-i"}
    names |= {f"tool-error-{api}" for api in c.apis[1:] if api != "gemini"}
    names |= {f"ran-{box}" for box in c.sandboxes_tested if box != "none"}
    names |= {"script-patch-update", "script-patch-add"} if c.patches else set()
    names |= {f"script-{kind}" for kind in ("write", "edit") if c.file_tool(kind) is not None}
    edit = c.file_tool("edit")
    names |= {"script-edit-near-miss"} if edit is not None and edit.corrects else set()
    shell_only = not (c.files or c.patches)
    names |= {"script-perl-i", "script-cp"} if preset == _battery_scenarios.SHELL_PATHS_ON or shell_only else set()
    refusing = c.permissions.refusing if c.permissions else ()
    names |= {f"refused-{r.name}" for r in refusing}
    if c.subagents:
        names |= {"subagent-ran"} | ({"subagent-refused"} if refusing else set())
    names |= {"typed-into-session"} if c.shell_tool.sessions else set()
    if c.side_requests:
        names |= {"side-requests"} | ({"side-requests-env"} if c.side_requests.env else set())
    names |= {"background-tool"} if c.shell_tool.background else set()
    names |= {f"ran-{tool.name}" for tool in c.shell[1:]} | {f"ran-{name}" for name in c.meta}
    names |= {"read-refusal-text"} if c.refusals is not None and c.file_tool("read") is not None else set()
    edit = c.file_tool("edit")
    names |= {"script-edit-rejected-no-ids"} if c.apis[0] == "gemini" and edit is not None and edit.required else set()
    return names


@pytest.mark.parametrize("preset", sorted(CONTRACTS))
def test_each_preset_gets_the_scenarios_its_contract_declares(preset: str) -> None:
    assert _names(preset) == _expected(preset)


def test_what_the_contracts_say_the_agents_lack() -> None:
    """pi has no permission system, sub-agents or side requests; Codex no edit tool (it patches) and no side
    requests: so those scenarios are not made for them, by their contracts."""
    pi, codex = CONTRACTS["pi"], CONTRACTS["codex"]
    assert (pi.permissions, pi.subagents, pi.side_requests, pi.refusals) == (None, None, None, None)
    assert not {n for n in _names("pi") if n.startswith(("refused-", "subagent-", "side-requests"))}
    assert codex.file_tool("edit") is None and codex.side_requests is None and codex.patches
    assert "script-edit" not in _names("codex") and "script-patch-update" in _names("codex")


def test_a_bare_agent_gets_only_the_common_scenarios(monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent whose contract declares nothing beyond a shell tool: no refused, sub-agent, session, side-request,
    write or edit scenario is made; one that declares them all gets each."""
    pi = CONTRACTS["pi"]
    bare = dataclasses.replace(pi, name="bare", pin=dataclasses.replace(pi.pin, name="bare"), files=(), apis=("openai-chat",),
                               sandboxes_tested=("none",))
    full = dataclasses.replace(
        CONTRACTS["claude-code"], name="full", pin=dataclasses.replace(pi.pin, name="full"),
        subagents=SubAgents("task", "prompt"), side_requests=SideRequests("a title", "a flag"),
        files=(FileTool("write", "write", "path", "whole-file", content="content"),))
    monkeypatch.setitem(_battery_scenarios.CONTRACTS, "bare", bare)
    monkeypatch.setitem(_battery_scenarios.CONTRACTS, "full", full)
    assert _names("bare") == {"timeout-descendants", "ran", "ran-refusal-text", "lookalike", "tool-error",
                              "background", "parallel", "disguised-quoted", "disguised-sh-c", "disguised-variable",
                              "script-redirect", "script-tee", "script-sed-i", "script-perl-i", "script-cp"}
    made = _names("full")
    assert {"subagent-ran", "subagent-refused", "side-requests", "script-write", "background-tool",
            "refused-deny-rule"} <= made and "script-edit" not in made and "side-requests-env" not in made


def test_the_battery_is_the_same_size_on_the_four_agents() -> None:
    """765 verdicts in 85 trials on pi, Codex, Claude Code and opencode (as before the contracts made them), and
    11 verdicts in each one's ran-bwrap (fifth session): 809 in 89; and issue 33.7's read-refusal-text on Claude Code
    and opencode (2 verdicts each): 813 in 91."""
    scenarios = all_scenarios({})
    assert {s.preset for s in scenarios} == set(CONTRACTS)
    four = [s for s in scenarios if s.preset in ("pi", "codex", "claude-code", "opencode")]
    assert (len(four), sum(len(s.checks) for s in four)) == (91, 813)


def test_a_shell_only_agent_edits_by_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent whose only tool is its shell, which stops in-place edits of unread files and stops long commands
    itself (as mini-swe-agent and Qwen Code do): its lookalike edits by `sed -i` after a read, its timeout scenario
    raises the command's own timeout, and it gets every shell write path."""
    pi = CONTRACTS["pi"]
    shell = dataclasses.replace(pi.shell_tool, read_first=True, long={"timeout": 300})
    only = dataclasses.replace(pi, name="only", pin=dataclasses.replace(pi.pin, name="only"), files=(),
                               shell=(shell,), long_commands={"args": ["-c", "timeout=900"]})
    monkeypatch.setitem(_battery_scenarios.CONTRACTS, "only", only)
    made = {s.name: s for s in scenarios_for("only", 60.0)}
    assert {"script-perl-i", "script-cp"} <= set(made) and "script-edit" not in made
    lookalike = [[call.arguments["command"] for call in step] for step in made["lookalike"].main]
    assert lookalike == [["echo rm -rf sentinel"], ["cat clean.sh"], ["sed -i 's/sentinel/sentinel-is-kept/' clean.sh"],
                         ["sed -i 's/kept/still kept/' clean.sh"], ["sh clean.sh"]]
    assert [[c.arguments["command"] for c in step] for step in made["script-sed-i"].main][:2] == [
        ["cat clean.sh"], ["sed -i 's/^echo //' clean.sh"]]
    hang = made["timeout-descendants"]
    assert hang.options["args"] == ["-c", "timeout=900"] and hang.main[0][0].arguments["timeout"] == 300
