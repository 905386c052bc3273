"""A scripted MCP server's file: read from YAML or JSON, every mistake named by file and field (with a did-you-mean),
and its JSON Schema (for editors) accepting what the loader accepts and refusing what it refuses."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

import trialrun as tr
from trialrun.mcp import ScriptError, script_json_schema
from trialrun.mcp._script import ScriptState

NOTES = """\
name: notes
instructions: The user's notes.
tools:
  - name: search_notes
    description: Search the user's notes
    params:
      query: string
      limit: integer?
    rules:
      - when: {query: dentist}
        answer: "Dentist: Tuesday 10:00"
      - answer: No notes found
  - name: add_note
    input_schema: {type: object, properties: {text: {type: string}}, required: [text]}
    answers: [saved, {error: disk full}]
resources:
  - {uri: "notes://today", name: today, text: Buy milk}
prompts:
  - {name: summarize, text: "Summarize {topic}", arguments: [topic]}
"""


def test_a_yaml_file_loads_and_answers(tmp_path: Path) -> None:
    path = tmp_path / "notes_mcp.yaml"
    path.write_text(NOTES)
    server = tr.ScriptedMCPServer.load(path)
    assert server.name == "notes" and [t.name for t in server.tools] == ["search_notes", "add_note"]
    assert server.tools[0].input_schema == {"type": "object", "properties": {"query": {"type": "string"},
                                            "limit": {"type": "integer"}}, "required": ["query"]}
    state = ScriptState(server, "notes")
    assert state.answer("search_notes", {"query": "dentist"}).text == "Dentist: Tuesday 10:00"
    assert state.answer("search_notes", {"query": "cats"}).text == "No notes found"
    assert state.answer("add_note", {"text": "a"}).text == "saved"
    failed = state.answer("add_note", {"text": "b"})
    assert failed.is_error and failed.text == "disk full"
    assert state.problems == []
    jsonschema.validate(json.loads(json.dumps(__import__("yaml").safe_load(NOTES))), script_json_schema())


def test_a_json_file_loads_with_the_name_it_is_given(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"tools": [{"name": "ping", "answer": "pong"}]}))
    assert tr.ScriptedMCPServer.load(path, name="ops").name == "ops"


@pytest.mark.parametrize("text, message", [
    ("tools:\n  - name: search\n    answres: [a]\n", "tools[0] (search).answres: unknown key (did you mean 'answers'?)"),
    ("tools:\n  - name: search\n", "tools[0] (search): a tool answers from exactly one of answers"),
    ("tools:\n  - name: s\n    answer: hi\n    rules: []\n", "got answer, rules"),
    ("tools:\n  - name: s\n    params: {q: strng}\n    answer: hi\n", "params.q: unknown type 'strng' (did you mean 'string'?)"),
    ("tools:\n  - name: s\n    answer: {text: hi, eror: x}\n", "answer.eror: unknown key (did you mean 'error'?)"),
    ("tools:\n  - name: s\n    answer: {protocol_error: {code: x, message: m}}\n", "protocol_error.code: a JSON-RPC error code"),
    ("tools:\n  - name: s\n    rules: [{when: {q: 1}}]\n", "rules[0]: a rule needs an answer"),
    ("tols: []\n", "tols: unknown key (did you mean 'tools'?)"),
    ("tools:\n  - name: two words\n    answer: hi\n", "a tool name is 1-128 characters without spaces"),
    ("tools:\n  - {name: a, answer: x}\n  - {name: a, answer: y}\n", "two tools are named 'a'"),
    ("resources:\n  - {uri: today, text: x}\n", "resources[0].uri: a resource URI has a scheme"),
    ("", "the scripted MCP server file is empty"),
    ("tools: [\n", "not valid YAML/JSON"),
])
def test_every_mistake_is_named_by_file_and_field(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad_mcp.yaml"
    path.write_text(text)
    with pytest.raises(ScriptError) as raised:
        tr.ScriptedMCPServer.load(path)
    assert str(raised.value).startswith(str(path)), raised.value
    assert message in str(raised.value)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="not found"):
        tr.ScriptedMCPServer.load(tmp_path / "nope.yaml")


def test_the_schema_refuses_what_the_loader_refuses() -> None:
    schema = script_json_schema()
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"tools": [{"name": "s", "answerz": []}]}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"tools": [{"name": "s", "params": {"q": "strng"}}]}, schema)


def test_an_answer_function_that_raises_fails_the_trial_not_the_server() -> None:
    def boom(call: object) -> str:
        raise RuntimeError("database gone")

    state = ScriptState(tr.ScriptedMCPServer("db").tool("query", answers=boom), "db")
    answer = state.answer("query", {"sql": "select 1"})
    assert answer.is_error and "RuntimeError: database gone" in answer.text
    assert state.problems and "the answer function raised RuntimeError" in state.problems[0]


def test_a_call_no_rule_matches_is_a_problem() -> None:
    server = tr.ScriptedMCPServer("n").tool("search", params={"query": "string"},
                                            rules=[{"when": {"query": "dentist"}, "answer": "Tuesday"}])
    state = ScriptState(server, "n")
    assert state.answer("search", {"query": "cat"}).is_error
    assert "no rule matches these arguments" in state.problems[0] and '{"query": "dentist"}' in state.problems[0]
