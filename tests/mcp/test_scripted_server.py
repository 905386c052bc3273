"""A scripted MCP server, driven by the official MCP SDK's own client (code nobody here wrote) over both transports:
what it lists and answers, by each answer form, and that every message both ways is recorded as the wire carried it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client, MCPError, StdioServerParameters

import trialrun as tr
from trialrun.mcp import TrialMcp
from trialrun.mcp.read import calls_of, tools_listed


def _notes(record: list[dict[str, Any]]) -> tr.ScriptedMCPServer:
    def remember(call: Any) -> str:
        record.append({"tool": call.tool, "arguments": call.arguments, "number": call.number})
        return f"saved note {call.number}: {call.arguments['text']}"

    return (tr.ScriptedMCPServer("notes", instructions="The user's notes.")
            .tool("search_notes", "Search the user's notes", params={"query": "string", "limit": "integer?"},
                  rules=[{"when": {"query": "dentist"}, "answer": "Dentist: Tuesday 10:00"},
                         {"answer": "No notes found"}])
            .tool("add_note", "Add a note", params={"text": "string"}, answers=remember)
            .tool("two_answers", "Answers twice", answers=["first", {"json": {"n": 2}}])
            .tool("locked", "Always fails", answer={"error": "the notes are locked"})
            .tool("broken", "A protocol error", answer={"protocol_error": {"code": -32001, "message": "backend down"}}))


@pytest.fixture
def trial() -> Iterator[TrialMcp]:
    made = TrialMcp()
    yield made
    made.close()


def _client(endpoint: Any) -> Client:
    if endpoint.transport == "http":
        return Client(endpoint.url, mode="legacy")
    return Client(StdioServerParameters(command=endpoint.command[0], args=endpoint.args), mode="legacy")


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_every_answer_form_reaches_the_sdk_client(trial: TrialMcp, transport: str) -> None:
    record: list[dict[str, Any]] = []
    endpoint = trial.add(_notes(record), transport=transport)

    async def use() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with _client(endpoint) as client:
            seen["tools"] = [(t.name, t.input_schema.get("required")) for t in (await client.list_tools()).tools]
            seen["dentist"] = (await client.call_tool("search_notes", {"query": "dentist"})).content[0].text
            seen["other"] = (await client.call_tool("search_notes", {"query": "cat", "limit": 2})).content[0].text
            seen["added"] = (await client.call_tool("add_note", {"text": "milk"})).content[0].text
            seen["first"] = (await client.call_tool("two_answers", {})).content[0].text
            second = await client.call_tool("two_answers", {})
            seen["second"] = (second.content[0].text, second.structured_content)
            locked = await client.call_tool("locked", {})
            seen["locked"] = (locked.content[0].text, locked.is_error)
            with pytest.raises(MCPError) as raised:
                await client.call_tool("broken", {})
            seen["broken"] = (raised.value.code, raised.value.message)
            third = await client.call_tool("two_answers", {})  # past the end of its answers
            seen["third"] = third.is_error
        return seen

    seen = asyncio.run(use())
    assert seen["tools"] == [("search_notes", ["query"]), ("add_note", ["text"]), ("two_answers", None),
                             ("locked", None), ("broken", None)]
    assert seen["dentist"] == "Dentist: Tuesday 10:00" and seen["other"] == "No notes found"
    assert seen["added"] == "saved note 1: milk" and record == [{"tool": "add_note", "arguments": {"text": "milk"},
                                                                "number": 1}]
    assert seen["first"] == "first" and seen["second"] == ('{"n": 2}', {"n": 2})
    assert seen["locked"] == ("the notes are locked", True)
    assert seen["broken"] == (-32001, "backend down")
    assert seen["third"] is True  # an exhausted script answers an error AND fails the trial:
    assert any("no scripted answer left" in p for p in trial.problems())


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_every_message_both_ways_is_recorded_as_sent(trial: TrialMcp, transport: str) -> None:
    endpoint = trial.add(_notes([]), transport=transport)

    async def use() -> None:
        async with _client(endpoint) as client:
            await client.list_tools()
            await client.call_tool("search_notes", {"query": "dentist"})

    asyncio.run(use())
    exchanges = trial.exchanges()
    methods = [(e.method, e.url) for e in exchanges]
    assert methods == [("REQUEST", "mcp://notes/initialize"), ("NOTIFY", "mcp://notes/notifications/initialized"),
                       ("REQUEST", "mcp://notes/tools/list"), ("REQUEST", "mcp://notes/tools/call")]
    call = exchanges[-1]
    request, response = json.loads(call.request_body), json.loads(call.response_body)
    assert request["params"] == {"name": "search_notes", "arguments": {"query": "dentist"}}
    assert response["id"] == request["id"] and response["result"]["content"][0]["text"] == "Dentist: Tuesday 10:00"
    assert call.status == 200 and call.request_headers["x-trialrun-mcp-transport"] == transport
    # the counts the trial keeps: 4 requests' worth of messages, one connection
    assert trial.log.messages == {"notes": 7} and trial.log.connections == {"notes": 1}
    [received] = calls_of(exchanges, first=10)
    assert (received.tool, received.arguments, received.content, received.exchange) == (
        "search_notes", {"query": "dentist"}, "Dentist: Tuesday 10:00", 13)
    assert tools_listed(exchanges) == {"notes": ["search_notes", "add_note", "two_answers", "locked", "broken"]}
    assert trial.problems() == []


def test_resources_and_prompts(trial: TrialMcp) -> None:
    server = tr.ScriptedMCPServer("notes", resources=[{"uri": "notes://today", "name": "today", "text": "Buy milk"}],
                                  prompts=[{"name": "summarize", "text": "Summarize my notes on {topic}",
                                            "arguments": ["topic"]}])
    endpoint = trial.add(server, transport="http")

    async def use() -> tuple[Any, ...]:
        async with _client(endpoint) as client:
            resources = await client.list_resources()
            text = await client.read_resource("notes://today")
            prompt = await client.get_prompt("summarize", {"topic": "shopping"})
            return ([str(r.uri) for r in resources.resources], text.contents[0].text,
                    prompt.messages[0].content.text)

    assert asyncio.run(use()) == (["notes://today"], "Buy milk", "Summarize my notes on shopping")


def test_servers_end_with_their_trial(trial: TrialMcp) -> None:
    endpoint = trial.add(_notes([]), transport="http")
    trial.close()

    async def use() -> None:
        async with _client(endpoint) as client:
            await client.list_tools()

    with pytest.raises(Exception):  # noqa: B017 - any failure: the server is gone (404), the SDK says so its way
        asyncio.run(use())
