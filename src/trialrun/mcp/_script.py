"""A scripted MCP server as data: its tools (names, descriptions, input schemas), how each answers, its resources and
prompts. Plain Python, no MCP SDK: the SDK serves it (`_sdk_server`), this only says what to answer.

A tool answers from ONE of: `answers` (a list, one per call, in order; a call past its end is an error result and a
problem that fails the trial, as an exhausted model script is), `answer` (the same answer to every call), `rules`
(`[{"when": {"query": "dentist"}, "answer": ...}, {"answer": ...}]`: the first rule whose `when` equals the call's
arguments on every key it names; a rule without `when` takes any call), or a Python function of the call
(`answers=fn`, `fn(call) -> answer`). An answer is a text, or a mapping: `{"text": ...}`, `{"json": ...}` (structured
content, its JSON as the text), `{"content": [MCP content blocks]}`, `{"error": "..."}` (a result flagged isError, the
tool's own failure), `{"protocol_error": "..."}` or `{"protocol_error": {"code": -32603, "message": "..."}}` (a
JSON-RPC error instead of a result); any of them may add `"delay_s"` (answer late: a slow or hanging tool).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._check import ScriptError, at, check_keys, need

__all__ = ["ScriptedMCPServer", "ScriptedTool", "Rule", "Answer", "ToolCallIn", "ScriptState", "ScriptError",
           "INTERNAL_ERROR"]

#: JSON-RPC's code for an internal error: a `protocol_error` given as text uses it.
INTERNAL_ERROR = -32603
_TYPES = ("string", "integer", "number", "boolean", "object", "array")
_ANSWER_KEYS = ("text", "json", "content", "error", "protocol_error", "delay_s")
_TOOL_KEYS = ("name", "description", "input_schema", "params", "answers", "answer", "rules")


@dataclass(frozen=True, slots=True)
class ToolCallIn:
    """A call a scripted tool answers: the server's name, the tool, the arguments it received, and its number among
    this tool's calls in the trial (from 1). What a Python answer function receives."""

    server: str
    tool: str
    arguments: dict[str, Any]
    number: int


@dataclass(frozen=True, slots=True)
class Answer:
    """One answer, normalised: MCP content blocks, structured content, the isError flag, or a protocol error
    (code, message) instead of a result; `delay_s` before answering."""

    content: tuple[dict[str, Any], ...] = ()
    structured: Any = None
    is_error: bool = False
    protocol_error: tuple[int, str] | None = None
    delay_s: float = 0.0

    @classmethod
    def of(cls, value: Any, where: str = "answer") -> Answer:
        """An answer from any of its forms (see the module); ScriptError naming `where` otherwise."""
        if isinstance(value, Answer):
            return value
        if isinstance(value, str):
            return cls(({"type": "text", "text": value},))
        if not isinstance(value, Mapping):
            raise ScriptError(f"{where}: an answer is a text or a mapping with one of text, json, content, error, "
                              f"protocol_error; got {type(value).__name__} {_short(value)}")
        check_keys(value, _ANSWER_KEYS, where)
        kinds = [key for key in _ANSWER_KEYS[:-1] if key in value]
        if len(kinds) != 1:
            raise ScriptError(f"{where}: an answer gives exactly one of text, json, content, error, protocol_error; "
                              f"got {', '.join(kinds) or 'none of them'}")
        delay = value.get("delay_s", 0.0)
        if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not 0 <= delay < 86400:
            raise ScriptError(f"{at(where, 'delay_s')}: a number of seconds (0 or more), got {_short(delay)}")
        kind = kinds[0]
        item = value[kind]
        if kind == "text":
            return cls(({"type": "text", "text": need(item, str, at(where, "text"), "a text")},), delay_s=float(delay))
        if kind == "error":
            text = need(item, str, at(where, "error"), "the error's text")
            return cls(({"type": "text", "text": text},), is_error=True, delay_s=float(delay))
        if kind == "json":
            text = json.dumps(item, ensure_ascii=False)
            structured = item if isinstance(item, dict) else {"result": item}  # (an object through 2025-11-25)
            return cls(({"type": "text", "text": text},), structured, delay_s=float(delay))
        if kind == "content":
            blocks = need(item, list, at(where, "content"), "a list of MCP content blocks")
            for number, block in enumerate(blocks):
                if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
                    raise ScriptError(f"{at(where, f'content[{number}]')}: a content block is a mapping with a "
                                      f"type (text, image, audio, resource_link, resource), got {_short(block)}")
            return cls(tuple(dict(block) for block in blocks), delay_s=float(delay))
        if isinstance(item, str):
            return cls(protocol_error=(INTERNAL_ERROR, item), delay_s=float(delay))
        spec = need(item, Mapping, at(where, "protocol_error"), "a text, or {code, message}")
        check_keys(spec, ("code", "message"), at(where, "protocol_error"))
        code = spec.get("code", INTERNAL_ERROR)
        if isinstance(code, bool) or not isinstance(code, int):
            raise ScriptError(f"{at(where, 'protocol_error.code')}: a JSON-RPC error code (an integer), got {_short(code)}")
        message = need(spec.get("message"), str, at(where, "protocol_error.message"), "a text")
        return cls(protocol_error=(code, message), delay_s=float(delay))

    @property
    def text(self) -> str:
        """The answer's text blocks, joined (what a model reads of it)."""
        if self.protocol_error is not None:
            return self.protocol_error[1]
        return "\n".join(str(block.get("text", "")) for block in self.content if block.get("type") == "text")


AnswerFn = Callable[[ToolCallIn], Any]
When = Mapping[str, Any] | Callable[[dict[str, Any]], bool] | None


@dataclass(frozen=True, slots=True)
class Rule:
    """`when` the call's arguments hold these values (every key named, compared with ==; or a predicate of the
    arguments; None: any call), answer `answer`."""

    answer: Answer
    when: When = None

    def matches(self, arguments: dict[str, Any]) -> bool:
        if self.when is None:
            return True
        if callable(self.when):
            try:
                return bool(self.when(arguments))
            except Exception:  # noqa: BLE001 - a predicate that raises does not match
                return False
        return all(key in arguments and arguments[key] == value for key, value in self.when.items())

    def describe(self) -> str:
        if self.when is None:
            return "(any call)"
        if callable(self.when):
            return getattr(self.when, "__qualname__", "a predicate")
        return json.dumps(dict(self.when), ensure_ascii=False, default=str)


@dataclass(frozen=True, slots=True)
class ScriptedTool:
    """One tool of a scripted server and its script (see the module: `answers`, `answer`, `rules` or a function)."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    answers: tuple[Answer, ...] | AnswerFn | None = None
    rules: tuple[Rule, ...] = ()
    every: Answer | None = None

    def scripted(self) -> str:
        """How it answers, for a message."""
        if callable(self.answers):
            return f"the function {getattr(self.answers, '__qualname__', repr(self.answers))}"
        if self.answers is not None:
            return f"{len(self.answers)} scripted answer(s)"
        if self.every is not None:
            return "one answer to every call"
        return f"{len(self.rules)} rule(s): " + "; ".join(rule.describe() for rule in self.rules)


class ScriptedMCPServer:
    """An MCP server trialrun runs for a trial, answering as scripted: `ctx.mcp(server)` serves it (stdio or
    streamable HTTP) and records every message; `ScriptedMCPServer.load("notes_mcp.yaml")` reads one from a file.

    >>> notes = ScriptedMCPServer("notes").tool(
    ...     "search_notes", "Search the user's notes", params={"query": "string"},
    ...     rules=[{"when": {"query": "dentist"}, "answer": "Dentist: Tuesday 10:00"}, {"answer": "No notes found"}])
    >>> [tool.name for tool in notes.tools], notes.tools[0].input_schema["required"]
    (['search_notes'], ['query'])
    """

    def __init__(self, name: str = "scripted", *, tools: Iterable[ScriptedTool | Mapping[str, Any]] = (),
                 resources: Iterable[Mapping[str, Any]] = (), prompts: Iterable[Mapping[str, Any]] = (),
                 instructions: str | None = None, version: str = "1.0") -> None:
        self.name = need(name, str, "name", "a text")
        if not name.strip():
            raise ScriptError("name: an MCP server needs a name")
        self.instructions = None if instructions is None else need(instructions, str, "instructions", "a text")
        self.version = need(version, str, "version", "a text")
        self.tools: list[ScriptedTool] = []
        for number, item in enumerate(tools):
            self._add(item if isinstance(item, ScriptedTool) else tool_from(item, f"tools[{number}]"))
        from ._extras import prompt_from, resource_from

        self.resources = [resource_from(item, f"resources[{number}]") for number, item in enumerate(resources)]
        self.prompts = [prompt_from(item, f"prompts[{number}]") for number, item in enumerate(prompts)]

    def __repr__(self) -> str:
        return f"ScriptedMCPServer({self.name!r}, tools={[t.name for t in self.tools]!r})"

    def _add(self, made: ScriptedTool) -> None:
        if any(t.name == made.name for t in self.tools):
            raise ScriptError(f"tools: two tools are named {made.name!r}")
        self.tools.append(made)

    def tool(self, name: str, description: str = "", *, input_schema: Mapping[str, Any] | None = None,
             params: Mapping[str, str] | None = None, answers: Sequence[Any] | AnswerFn | None = None,
             answer: Any = None, rules: Sequence[Any] | None = None) -> ScriptedMCPServer:
        """Add a tool (see the module for its answers); returns the server, so tools chain."""
        spec: dict[str, Any] = {"name": name, "description": description}
        for key, value in (("input_schema", input_schema), ("params", params), ("answers", answers),
                           ("answer", answer), ("rules", rules)):
            if value is not None:
                spec[key] = value
        self._add(tool_from(spec, f"tool {name!r}"))
        return self

    def tool_named(self, name: str) -> ScriptedTool | None:
        return next((t for t in self.tools if t.name == name), None)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str | None = None, name: str | None = None) -> ScriptedMCPServer:
        """A server from its file form (a mapping: name, instructions, tools, resources, prompts); ScriptError
        naming `source` and the field for anything wrong (with a did-you-mean for a misspelt key)."""
        try:
            need(data, Mapping, "the file", "a mapping with tools (and name, instructions, resources, prompts)")
            check_keys(data, ("name", "instructions", "version", "tools", "resources", "prompts"), "")
            tools = need(data.get("tools", []), list, "tools", "a list of tools")
            return cls(name or data.get("name", "scripted"), tools=tools,
                       resources=need(data.get("resources", []), list, "resources", "a list"),
                       prompts=need(data.get("prompts", []), list, "prompts", "a list"),
                       instructions=data.get("instructions"), version=data.get("version", "1.0"))
        except ScriptError as exc:
            raise exc.within(source) from None

    @classmethod
    def load(cls, path: Any, *, name: str | None = None) -> ScriptedMCPServer:
        """A server from a YAML or JSON file (see `from_dict`); `name` overrides the file's."""
        from ._file import read_script

        data, source = read_script(path)
        return cls.from_dict(data, source=source, name=name)


def tool_from(spec: Mapping[str, Any], where: str) -> ScriptedTool:
    """A ScriptedTool from its mapping form (the file's and `ScriptedMCPServer.tool`'s)."""
    need(spec, Mapping, where, "a mapping with name, description, input_schema (or params) and its answers")
    label = spec.get("name")
    where = f"{where} ({label})" if isinstance(label, str) and label and label not in where else where
    check_keys(spec, _TOOL_KEYS, where)
    name = need(spec.get("name"), str, at(where, "name"), "the tool's name")
    if not name or len(name) > 128 or any(ch.isspace() for ch in name):
        raise ScriptError(f"{at(where, 'name')}: a tool name is 1-128 characters without spaces, got {name!r}")
    description = need(spec.get("description", ""), str, at(where, "description"), "a text")
    if "input_schema" in spec and "params" in spec:
        raise ScriptError(f"{where}: give input_schema (a JSON Schema) or params (its short form), not both")
    schema = (_schema(spec["input_schema"], at(where, "input_schema")) if "input_schema" in spec
              else _params(spec.get("params", {}), at(where, "params")))
    given = [key for key in ("answers", "answer", "rules") if key in spec]
    if len(given) != 1:
        raise ScriptError(f"{where}: a tool answers from exactly one of answers (a list, one per call, or a "
                          f"function), answer (every call) or rules ([{{when, answer}}]); got "
                          f"{', '.join(given) or 'none of them'}")
    kind = given[0]
    value = spec[kind]
    if kind == "answer":
        return ScriptedTool(name, description, schema, every=Answer.of(value, at(where, "answer")))
    if kind == "answers":
        if callable(value):
            return ScriptedTool(name, description, schema, answers=value)
        items = need(value, list, at(where, "answers"), "a list of answers (one per call), or a function")
        return ScriptedTool(name, description, schema,
                            answers=tuple(Answer.of(item, at(where, f"answers[{n}]")) for n, item in enumerate(items)))
    return ScriptedTool(name, description, schema, rules=_rules(value, at(where, "rules")))


def _rules(value: Any, where: str) -> tuple[Rule, ...]:
    items = need(value, list, where, "a list of {when, answer}")
    rules = []
    for number, item in enumerate(items):
        here = f"{where}[{number}]"
        if isinstance(item, Rule):
            rules.append(item)
            continue
        need(item, Mapping, here, "a mapping {when: {argument: value}, answer: ...}")
        check_keys(item, ("when", "answer"), here)
        if "answer" not in item:
            raise ScriptError(f"{here}: a rule needs an answer")
        when = item.get("when")
        if when is not None and not callable(when):
            when = dict(need(when, Mapping, at(here, "when"), "a mapping of argument values (or a predicate)"))
        rules.append(Rule(Answer.of(item["answer"], at(here, "answer")), when))
    return tuple(rules)


def _schema(value: Any, where: str) -> dict[str, Any]:
    schema = dict(need(value, Mapping, where, "a JSON Schema object"))
    if schema.get("type", "object") != "object":
        raise ScriptError(f"{where}: a tool's input schema has type object at its root, got {schema.get('type')!r}")
    schema.setdefault("type", "object")
    properties = schema.get("properties", {})
    need(properties, Mapping, at(where, "properties"), "a mapping of argument schemas")
    return schema


def _params(value: Any, where: str) -> dict[str, Any]:
    """`{query: string, limit: integer?}` as a JSON Schema: each argument's type, required unless it ends in `?`."""
    given = need(value, Mapping, where, "a mapping of argument names to types (string, integer?, ...)")
    properties: dict[str, Any] = {}
    required: list[str] = []
    for key, kind in given.items():
        text = need(kind, str, at(where, str(key)), f"a type ({', '.join(_TYPES)}; end it with ? when optional)")
        optional = text.endswith("?")
        base = text.rstrip("?")
        if base not in _TYPES:
            from ._check import suggestion

            raise ScriptError(f"{at(where, str(key))}: unknown type {text!r}{suggestion(base, _TYPES)}; one of "
                              f"{', '.join(_TYPES)}")
        properties[str(key)] = {"type": base}
        if not optional:
            required.append(str(key))
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


class ScriptState:
    """One trial's use of a scripted server: how many calls each tool has answered, and what went wrong (an
    exhausted script, a call no rule matched, an answer function that raised), for the trial to fail on. Shared by
    every connection of the trial (an agent may connect twice), so its counts are locked."""

    def __init__(self, server: ScriptedMCPServer, label: str) -> None:
        self.server = server
        self.label = label
        self.counts: dict[str, int] = {}
        self.problems: list[str] = []
        self._lock = threading.Lock()

    def answer(self, tool: str, arguments: dict[str, Any]) -> Answer:
        """What `tool` answers to this call (an error answer, and a problem, when its script has none)."""
        scripted = self.server.tool_named(tool)
        if scripted is None:
            names = ", ".join(t.name for t in self.server.tools) or "none"
            return Answer(protocol_error=(-32602, f"Unknown tool: {tool} (this server's tools: {names})"))
        with self._lock:
            self.counts[tool] = number = self.counts.get(tool, 0) + 1
        call = ToolCallIn(self.label, tool, dict(arguments), number)
        try:
            found = _pick(scripted, call)
        except ScriptError as exc:
            found = None
            why = str(exc)
        else:
            why = ""
        if found is not None:
            return found
        problem = f"MCP server {self.label!r}: tool {tool} call {number} ({_short(arguments)}): {why}"
        with self._lock:
            self.problems.append(problem)
        return Answer(({"type": "text", "text": problem},), is_error=True)


def _pick(scripted: ScriptedTool, call: ToolCallIn) -> Answer | None:
    """The scripted answer to `call`; ScriptError saying why there is none."""
    if scripted.every is not None:
        return scripted.every
    if callable(scripted.answers):
        try:
            value = scripted.answers(call)
        except Exception as exc:  # noqa: BLE001 - the user's function failing is the trial's problem, said
            raise ScriptError(f"the answer function raised {type(exc).__name__}: {exc}") from None
        return Answer.of(value, f"the answer function's return value for call {call.number}")
    if scripted.answers is not None:
        if call.number > len(scripted.answers):
            raise ScriptError(f"no scripted answer left ({len(scripted.answers)} scripted, one per call); add answers, "
                              "or answer every call with `answer`")
        return scripted.answers[call.number - 1]
    for rule in scripted.rules:
        if rule.matches(call.arguments):
            return rule.answer
    raise ScriptError(f"no rule matches these arguments (rules: {'; '.join(r.describe() for r in scripted.rules)}); "
                      "add a rule without `when` to answer any other call")


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
