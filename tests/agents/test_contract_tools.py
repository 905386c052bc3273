"""Issue 33.7: every tool an agent offers is classified by its contract (a command tool, a tool that runs none, a
tool whose effects cannot be followed, a tool that calls another by name), so that nothing that can run a command
is left for `never_ran` to skip. The truth is the agent's own tool list: the `tools` of the requests it sends, read
here from the real agents at their pinned versions (the first request to a scripted model) and from the recordings
they made (tests/fixtures/agent-traffic, other configurations: plan modes, deny rules)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import _agent_scope
import pytest
import yaml

import trialrun as tr
from trialrun.wire import ModelRequest

CONTRACTS = tr.agents.CONTRACTS
RECORDINGS = Path(__file__).resolve().parents[1] / "fixtures" / "agent-traffic"


def _names(value: Any) -> set[str]:
    """The tool names a recorded request body offers (OpenAI, Anthropic and Gemini shapes)."""
    found: set[str] = set()
    for tool in value if isinstance(value, list) else []:
        if not isinstance(tool, dict):
            continue
        name = tool.get("name") or (tool.get("function") or {}).get("name")
        if isinstance(name, str):
            found.add(name)
        for declaration in tool.get("functionDeclarations") or tool.get("function_declarations") or []:
            found.add(declaration["name"])
        if tool.get("type") == "namespace":  # Codex's multi_agent_v1: its member tools
            found |= _names(tool.get("tools"))
            found.discard(name)
    return found


def _recorded(agent: str) -> set[str]:
    offered: set[str] = set()
    for path in sorted((RECORDINGS / agent).glob("*.yaml")):
        for exchange in yaml.safe_load(path.read_text(encoding="utf-8"))["exchanges"]:
            body = exchange["request"].get("body")
            if isinstance(body, dict):
                offered |= _names(body.get("tools"))
    return offered


@pytest.mark.parametrize("name", sorted(n for n in CONTRACTS if (RECORDINGS / n).is_dir()))
def test_every_tool_its_recordings_offer_is_classified(name: str) -> None:
    offered = _recorded(name)
    assert offered, f"no tools in {name}'s recordings"
    left = sorted(tool for tool in offered if not CONTRACTS[name].classifies(tool))
    assert not left, f"{name} offers tools its contract does not classify: {left}"


def test_an_unclassified_tool_is_named() -> None:
    """The check can fail: a tool no contract names is not classified."""
    assert not CONTRACTS["kilo-code"].classifies("new_shell_tool")
    assert CONTRACTS["kilo-code"].classifies("background_process") and CONTRACTS["qwen-code"].classifies("tool_call")


def test_every_tool_each_real_agent_offers_is_classified(agent_path: Any) -> None:
    """The real agents, each in the configuration under which it runs what it is asked: the tools of the first request
    it sends (one evaluate, all agents at once). A tool it offers that its contract does not classify fails here."""
    offered: dict[str, list[str]] = {}

    def script_for(name: str) -> Any:
        def script(request: ModelRequest) -> Any:
            if request.tools and name not in offered:
                offered[name] = [tool.name for tool in request.tools]
            return tr.reply("done")
        return script

    cases = []
    names = _agent_scope.in_scope(CONTRACTS)  # every agent in the full scope: a new pin runs them all
    for name in names:
        contract = CONTRACTS[name]
        options = dict(contract.permissions.runs_all) if contract.permissions else {}
        agent = tr.agents.preset(name, path=agent_path(name), timeout_s=300, **options)

        def invoke(ctx: tr.TrialContext, agent: Any = agent, name: str = name) -> Any:
            return agent("Say done.", ctx, model=ctx.scripted(script_for(name)))

        cases.append(tr.Case(name=name, invoke=invoke, expect_trajectory=[tr.expect.max_turns(100)]))
    tr.evaluate(cases, concurrency=4)
    assert set(offered) == set(names), f"no tools seen from {sorted(set(names) - set(offered))}"
    left = {name: [tool for tool in tools if not CONTRACTS[name].classifies(tool)] for name, tools in offered.items()}
    assert not any(left.values()), f"tools the contracts do not classify: { {k: v for k, v in left.items() if v} }"
