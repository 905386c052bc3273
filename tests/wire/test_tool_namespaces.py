"""Tool namespaces (OpenAI Responses): what Codex offers and sends (its `multi_agent_v1` namespace holding
`spawn_agent`), read and rendered the way the real agent and the official SDK read them.

The ground truth is Codex's own recorded traffic (tests/fixtures/agent-traffic/codex/subagent.yaml, where a scripted
namespaced call started a real Codex sub-agent that made the marker file) and the OpenAI SDK's own response types.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

import trialrun as tr
from trialrun.models._cassette_io import load_exchanges
from trialrun.trajectory import ToolCall
from trialrun.wire import codec_named, decode_exchange, decode_trajectory
from trialrun.wire._types import Message, ToolSpec

TRAFFIC = Path(__file__).resolve().parents[1] / "fixtures" / "agent-traffic"
SUBAGENT_TOOLS = ["close_agent", "resume_agent", "send_input", "spawn_agent", "wait_agent"]


def _codex_request() -> dict[str, Any]:
    body = json.loads(load_exchanges(TRAFFIC / "codex" / "subagent.yaml")[0].request_body)
    assert isinstance(body, dict)
    return body


def test_a_namespace_tool_is_read_as_its_functions_each_naming_its_namespace() -> None:
    body = _codex_request()
    [raw] = [tool for tool in body["tools"] if tool.get("type") == "namespace"]
    assert raw["name"] == "multi_agent_v1" and [t["name"] for t in raw["tools"]] == SUBAGENT_TOOLS
    request = codec_named("openai-responses").decode_request(body, "/v1/responses")
    spaced = [(spec.name, spec.namespace) for spec in request.tools if spec.namespace]
    assert spaced == [(name, "multi_agent_v1") for name in SUBAGENT_TOOLS]
    spawn = next(spec for spec in request.tools if spec.name == "spawn_agent")
    assert "message" in spawn.parameters["properties"]  # the member's own schema, not the namespace's
    assert "multi_agent_v1" not in request.tool_names and "spawn_agent" in request.tool_names


def test_codex_sends_back_a_namespaced_call_as_it_was_rendered_and_the_decoder_keeps_it() -> None:
    exchanges = load_exchanges(TRAFFIC / "codex" / "subagent.yaml")
    _, response = decode_exchange(exchanges[0], 1)
    assert response is not None
    [call] = response.tool_calls
    assert (call.name, call.namespace) == ("spawn_agent", "multi_agent_v1")
    # Codex repeats the call in its next request's input: the same item shape the scripted model rendered
    repeated = [item for item in json.loads(exchanges[1].request_body)["input"] if item.get("type") == "function_call"]
    [item] = repeated
    assert {k: v for k, v in item.items() if k not in ("id", "status")} == {
        "type": "function_call", "name": "spawn_agent", "namespace": "multi_agent_v1",
        "arguments": json.dumps(call.arguments, separators=(",", ":")), "call_id": call.id}
    trajectory = decode_trajectory(exchanges)
    assert [(c.name, c.namespace) for c in trajectory.tool_calls] == [("spawn_agent", "multi_agent_v1"),
                                                                     ("wait_agent", "multi_agent_v1")]
    assert not [note for note in trajectory.notes if "did not offer" in note]  # a member of an offered namespace


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_scripted_namespaced_call_is_what_the_official_sdk_reads(stream: bool) -> None:
    model = tr.ScriptedModel([tr.tool_call("spawn_agent", message="do it", namespace="multi_agent_v1")])
    client = openai.OpenAI(api_key="t", base_url="http://model.test/v1", http_client=httpx.Client(transport=model))
    body = _codex_request()
    tools, items = body["tools"], [{"role": "user", "content": "delegate"}]
    if stream:
        with client.responses.stream(model="m", input=items, tools=tools) as events:  # type: ignore[arg-type]
            response = events.get_final_response()
    else:
        response = client.responses.create(model="m", input=items, tools=tools)  # type: ignore[arg-type]
    [item] = response.output
    assert (item.type, item.name, item.namespace) == ("function_call", "spawn_agent", "multi_agent_v1")  # type: ignore[union-attr]
    assert json.loads(item.arguments) == {"message": "do it"}  # type: ignore[union-attr]
    [call] = model.trajectory().tool_calls
    assert call.namespace == "multi_agent_v1"


@pytest.mark.parametrize("api", ["openai-chat", "anthropic", "gemini"])
def test_a_namespaced_call_on_an_api_without_namespaces_is_an_error_not_a_flattened_name(api: str) -> None:
    model = tr.ScriptedModel([tr.tool_call("spawn_agent", message="x", namespace="multi_agent_v1")])
    codec = codec_named(api)
    body = codec.encode_request(model="m", messages=[Message("user", "go")],
                                tools=[ToolSpec("spawn_agent", "", {"type": "object"})])
    path = "/v1/models/m:generateContent" if api == "gemini" else ("/v1/messages" if api == "anthropic" else "/v1/chat/completions")
    response = httpx.Client(transport=model).post(f"http://model.test{path}", json=body)
    assert response.status_code == 500
    assert "multi_agent_v1.spawn_agent in a tool namespace" in response.text and "only OpenAI Responses" in response.text
    assert model.problems


def test_the_reference_agent_sends_namespaced_tools_and_calls_in_the_responses_shape() -> None:
    codec = codec_named("openai-responses")
    tools = [ToolSpec("exec_command", "run", {"type": "object"}),
             ToolSpec("spawn_agent", "spawn", {"type": "object"}, namespace="multi_agent_v1"),
             ToolSpec("wait_agent", "wait", {"type": "object"}, namespace="multi_agent_v1")]
    call = ToolCall("spawn_agent", {"message": "m"}, "call_1", namespace="multi_agent_v1")
    body = codec.encode_request(model="m", messages=[Message("user", "go"), Message("assistant", tool_calls=[call])],
                                tools=tools)
    assert [t.get("type") for t in body["tools"]] == ["function", "namespace"]
    assert [t["name"] for t in body["tools"][1]["tools"]] == ["spawn_agent", "wait_agent"]
    assert body["input"][1] == {"type": "function_call", "call_id": "call_1", "name": "spawn_agent",
                                "namespace": "multi_agent_v1", "arguments": '{"message":"m"}'}
    again = codec.decode_request(body, "/v1/responses")
    assert [(t.name, t.namespace) for t in again.tools] == [(t.name, t.namespace) for t in tools]
    assert again.messages[1].tool_calls == [call]


def test_tool_call_keeps_an_argument_called_namespace_when_given_in_the_dict() -> None:
    step = tr.tool_call("kubectl", {"namespace": "prod"})
    assert step.tool_calls == [ToolCall("kubectl", {"namespace": "prod"})]
    with pytest.raises(TypeError, match="namespace must be a non-empty string"):
        tr.tool_call("spawn_agent", namespace="")
