"""`tr.subagent(...)`: one portable step that starts a sub-agent through whatever sub-agent tool a request offers
(Claude Code's Agent, opencode's task, Codex's namespaced spawn_agent), and the same steps in a scripted YAML file.

The requests are the real agents' own recorded first requests; the resolved calls are exactly the ones in the
recordings, which each real agent accepted and ran as a sub-agent (its sub-agent's conversation follows there:
tests/fixtures/agent-traffic/{claude-code,opencode,codex}/subagent*.yaml).
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

import trialrun as tr
from trialrun.models._cassette_io import load_exchanges
from trialrun.suite._build_model import load_script_file
from trialrun.suite.config import ConfigError
from trialrun.trajectory import ToolCall
from trialrun.wire import decode_exchange

TRAFFIC = Path(__file__).resolve().parents[1] / "fixtures" / "agent-traffic"
PROMPT = "SUBTASK: run the commands you are given, using your shell tool."


@pytest.mark.parametrize(("name", "number"), [("claude-code/subagent-refused.yaml", 2),
                                             ("opencode/subagent-refused.yaml", 2), ("codex/subagent.yaml", 1)])
def test_subagent_becomes_the_call_each_real_agent_ran_as_a_sub_agent(name: str, number: int) -> None:
    exchange = load_exchanges(TRAFFIC / name)[number - 1]
    request, recorded = decode_exchange(exchange, number)
    assert request is not None and recorded is not None
    model = tr.ScriptedModel([tr.subagent(PROMPT, description="Run the subtask")])
    body = json.loads(exchange.request_body)
    body["stream"] = False
    response = httpx.Client(transport=model).post(f"http://model.test{exchange.path}", json=body)
    assert response.status_code == 200, response.text
    [call] = model.trajectory().tool_calls
    [expected] = recorded.tool_calls
    assert (call.name, call.arguments, call.namespace) == (expected.name, expected.arguments, expected.namespace)
    assert {"Agent": None, "task": None, "spawn_agent": "multi_agent_v1"}[call.name] == call.namespace


def test_a_request_offering_no_sub_agent_tool_is_an_error_naming_what_it_offers() -> None:
    model = tr.ScriptedModel([tr.subagent("do it")])
    exchange = load_exchanges(TRAFFIC / "pi" / "marker.yaml")[0]
    response = httpx.Client(transport=model).post(f"http://model.test{exchange.path}", content=exchange.request_body)
    assert response.status_code == 500
    assert "a subagent step needs a tool that starts a sub-agent" in response.text
    assert "offered: read, bash, edit, write" in response.text


def test_an_agent_type_for_a_tool_that_takes_none_is_an_error() -> None:
    model = tr.ScriptedModel([tr.subagent("do it", agent_type="explorer")])
    exchange = load_exchanges(TRAFFIC / "codex" / "subagent.yaml")[0]
    body = json.loads(exchange.request_body)
    body["stream"] = False
    response = httpx.Client(transport=model).post(f"http://model.test{exchange.path}", json=body)
    assert response.status_code == 500 and "spawn_agent takes no agent type" in response.text


def test_subagent_checks_what_it_is_given() -> None:
    with pytest.raises(TypeError, match="prompt must be a non-empty string"):
        tr.subagent("  ")
    with pytest.raises(TypeError, match="description must be text"):
        tr.subagent("x", description=3)  # type: ignore[arg-type]


def test_a_scripted_yaml_file_names_a_namespace_and_a_subagent_step(tmp_path: Path) -> None:
    path = tmp_path / "model.yaml"
    path.write_text("delegate:\n"
                    "  - subagent: {prompt: 'do the subtask', description: 'Subtask', agent_type: explorer}\n"
                    "  - tool_call: {name: wait_agent, namespace: multi_agent_v1, arguments: {targets: [a1]}}\n"
                    "  - subagent: 'plain prompt'\n")
    steps = load_script_file(path)["delegate"].steps
    assert [call for step in steps for call in step.tool_calls] == [  # type: ignore[union-attr]
        ToolCall("<subagent>", {"prompt": "do the subtask", "description": "Subtask", "agent_type": "explorer"}),
        ToolCall("wait_agent", {"targets": ["a1"]}, namespace="multi_agent_v1"),
        ToolCall("<subagent>", {"prompt": "plain prompt", "description": "Delegated task", "agent_type": None}),
    ]


@pytest.mark.parametrize(("step", "message"), [
    ("{tool_call: {name: x, namespace: 3}}", "namespace is the tool namespace's name"),
    ("{tool_call: {name: x, namspace: y}}", "unknown key(s) namspace (known: name, arguments, namespace)"),
    ("{subagent: {prompt: x, type: y}}", "subagent: unknown key(s) type"),
    ("{subagent: ''}", "prompt must be a non-empty string"),
])
def test_a_mistake_in_a_scripted_yaml_step_names_the_file_and_step(tmp_path: Path, step: str, message: str) -> None:
    path = tmp_path / "model.yaml"
    path.write_text(f"t:\n  - {step}\n")
    with pytest.raises(ConfigError, match="model.yaml: test 't', step 1") as caught:
        load_script_file(path)
    assert message in str(caught.value)
