"""A scripted MCP server's file (YAML or JSON), read by the one safe reader, and its JSON Schema for editors.

    name: notes
    instructions: The user's notes.
    tools:
      - name: search_notes
        description: Search the user's notes
        params:                                      # or input_schema: {a JSON Schema}
          query: string
          limit: integer?                            # optional
        rules:
          - when: {query: dentist}
            answer: "Dentist: Tuesday 10:00"
          - answer: No notes found
    resources:
      - {uri: "notes://today", name: today, text: "Buy milk"}
    prompts:
      - {name: summarize, text: "Summarize my notes on {topic}", arguments: [topic]}
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .._util.files import read_text
from .._util.yaml_read import YamlError, load_yaml
from ._check import ScriptError

__all__ = ["read_script", "script_json_schema"]


def read_script(path: str | os.PathLike[str]) -> tuple[Any, str]:
    """The file's data and its name for messages; ScriptError naming the file when it cannot be read."""
    where = Path(path)
    text = read_text(where, "scripted MCP server file", ScriptError)
    if where.suffix == ".json":
        try:
            return json.loads(text), str(where)
        except ValueError:
            pass  # YAML (a superset of JSON) says where and why
    try:
        data = load_yaml(text, language="YAML/JSON")
    except YamlError as exc:
        raise ScriptError(f"{where}{exc.where}: {exc}") from None
    if data is None:
        raise ScriptError(f"{where}: the scripted MCP server file is empty; it holds tools, e.g. "
                          "{tools: [{name: search_notes, params: {query: string}, answer: No notes}]}")
    return data, str(where)


_ANSWER: dict[str, Any] = {
    "anyOf": [
        {"type": "string"},
        {"type": "object", "additionalProperties": False, "minProperties": 1, "properties": {
            "text": {"type": "string"}, "json": {}, "content": {"type": "array", "items": {"type": "object"}},
            "error": {"type": "string"}, "delay_s": {"type": "number", "minimum": 0},
            "protocol_error": {"anyOf": [{"type": "string"}, {"type": "object", "additionalProperties": False,
                                                               "properties": {"code": {"type": "integer"},
                                                                              "message": {"type": "string"}}}]}}},
    ]
}


def script_json_schema() -> dict[str, Any]:
    """JSON Schema of a scripted MCP server file (what `ScriptedMCPServer.load` reads), for editors."""
    tool = {"type": "object", "additionalProperties": False, "required": ["name"], "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 128},
        "description": {"type": "string"},
        "input_schema": {"type": "object"},
        "params": {"type": "object", "additionalProperties": {
            "type": "string", "pattern": r"^(string|integer|number|boolean|object|array)\??$"}},
        "answers": {"type": "array", "items": {"$ref": "#/$defs/answer"}},
        "answer": {"$ref": "#/$defs/answer"},
        "rules": {"type": "array", "items": {"type": "object", "additionalProperties": False, "required": ["answer"],
                                             "properties": {"when": {"type": "object"},
                                                            "answer": {"$ref": "#/$defs/answer"}}}},
    }}
    strings = {"type": "string"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "trialrun scripted MCP server",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "name": strings, "instructions": strings, "version": strings,
            "tools": {"type": "array", "items": tool},
            "resources": {"type": "array", "items": {"type": "object", "additionalProperties": False,
                                                     "required": ["uri", "text"], "properties": {
                "uri": strings, "name": strings, "text": strings, "description": strings, "mime_type": strings}}},
            "prompts": {"type": "array", "items": {"type": "object", "additionalProperties": False,
                                                   "required": ["name", "text"], "properties": {
                "name": strings, "text": strings, "description": strings,
                "arguments": {"type": "array", "items": strings}}}},
        },
        "$defs": {"answer": _ANSWER},
    }
