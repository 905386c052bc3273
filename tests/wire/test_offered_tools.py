"""The tools an agent offered the model are read off the wire (every request's, first seen first), so the rubric can
say "'read-file' was never offered to the model" for an agent trialrun did not build."""

from __future__ import annotations

import httpx

import trialrun as tr


def _tool(name: str) -> dict:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": {}}}}


def _ask(client: httpx.Client, tools: list[str]) -> None:
    body = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hi"}]}
    if tools:
        body["tools"] = [_tool(name) for name in tools]
    assert client.post("/chat/completions", json=body).status_code == 200


def test_offered_tools_are_the_union_of_every_request_in_first_seen_order() -> None:
    model = tr.ScriptedModel([tr.reply("one"), tr.reply("two")])
    with httpx.Client(transport=model, base_url="https://api.openai.com/v1") as client:
        _ask(client, ["read_file", "list_dir"])
        _ask(client, ["list_dir", "run_command", "read_file"])
    assert model.trajectory().offered_tools == ["read_file", "list_dir", "run_command"]


def test_a_request_without_tools_offers_none_and_no_request_is_unknown() -> None:
    model = tr.ScriptedModel([tr.reply("one")])
    from trialrun.expect.rubric import offered_tools

    assert offered_tools(tr.Run("", model.trajectory())) is None  # nothing seen: not known
    with httpx.Client(transport=model, base_url="https://api.openai.com/v1") as client:
        _ask(client, [])
    assert model.trajectory().offered_tools == [] and offered_tools(tr.Run("", model.trajectory())) == []


def test_the_rubric_explains_an_expected_tool_the_agent_never_offered() -> None:
    from trialrun.expect.rubric import rubric

    model = tr.ScriptedModel([tr.reply("done")])
    with httpx.Client(transport=model, base_url="https://api.openai.com/v1") as client:
        _ask(client, ["read_file", "list_dir"])
    run = tr.Run(output="done", trajectory=model.trajectory())
    [verdict] = tr.check([rubric(expected_tools=["read-file"], success_criteria="done")], run)
    assert "'read-file' was never offered to the model (offered: read_file, list_dir)" in verdict.reason
