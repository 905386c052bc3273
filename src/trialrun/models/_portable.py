"""Portable scripted steps: `shell(...)` and `subagent(...)` name no tool; each is made a call of the tool the
request itself offers for the job, in that tool's own argument shape, when the step is answered.

So one script drives any coding agent: Claude Code's `Agent`/`Task`, opencode's `task` and Codex's `spawn_agent`
(in its `multi_agent_v1` namespace) all start a sub-agent from the same `subagent("...")` step.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .._util.command_tools import SHELL_PREFERENCE, command_argument, shell_arguments
from ..trajectory import ToolCall
from ..wire._types import ModelRequest, Step, ToolSpec

__all__ = ["SHELL_TOOL", "SUBAGENT_TOOL", "SUBAGENT_TOOLS", "portable", "resolve"]

#: The tool name a portable `shell(...)` step stands for until a request says which shell tool it offers.
SHELL_TOOL = "<shell>"
#: The tool name a portable `subagent(...)` step stands for until a request says which sub-agent tool it offers.
SUBAGENT_TOOL = "<subagent>"
#: The sub-agent tools known, in the order preferred: name -> the agent type given when the step names none
#: (Claude Code: Agent, called Task before 2.1; opencode: task, whose subagent_type is required; Codex: spawn_agent).
SUBAGENT_TOOLS: dict[str, str | None] = {"Agent": "general-purpose", "Task": "general-purpose", "task": "general",
                                         "spawn_agent": None}


def portable(step: Step) -> bool:
    """Whether the step holds a portable call still to be made a real one."""
    return any(call.name in (SHELL_TOOL, SUBAGENT_TOOL) for call in step.tool_calls)


def resolve(step: Step, request: ModelRequest) -> Step | str:
    """The step with each portable call made a call of the request's own tool, or what is wrong."""
    calls = []
    for call in step.tool_calls:
        if call.name == SHELL_TOOL:
            made = _shell_call(call, request)
        elif call.name == SUBAGENT_TOOL:
            made = _subagent_call(call, request)
        else:
            made = call
        if isinstance(made, str):
            return made
        calls.append(made)
    return replace(step, tool_calls=calls)


def _shell_call(call: ToolCall, request: ModelRequest) -> ToolCall | str:
    specs = {spec.name: spec for spec in request.tools}
    by_folded = {name.casefold(): name for name in specs}
    chosen = next((by_folded[name] for name in SHELL_PREFERENCE if name in by_folded), None)
    if chosen is None:
        chosen = next((name for name, spec in specs.items() if command_argument(name, spec.parameters, spec.description)), None)
    if chosen is None:
        return ("a shell step needs a tool that runs commands, but none of the offered tools does (offered: "
                f"{', '.join(specs) or 'none'})")
    spec = specs[chosen]
    command = call.arguments["command"]
    arguments = shell_arguments(chosen, spec.parameters, command, spec.description)
    return ToolCall(chosen, arguments or {"command": command}, call.id, namespace=spec.namespace)


def _subagent_call(call: ToolCall, request: ModelRequest) -> ToolCall | str:
    specs: dict[str, ToolSpec] = {}
    for spec in request.tools:
        specs.setdefault(spec.name, spec)
    chosen = next((specs[name] for name in SUBAGENT_TOOLS if name in specs), None)
    if chosen is None:
        return ("a subagent step needs a tool that starts a sub-agent (Agent or Task: Claude Code; task: opencode; "
                f"spawn_agent: Codex), but none is offered (offered: {', '.join(specs) or 'none'})")
    prompt, description, agent_type = (call.arguments.get(k) for k in ("prompt", "description", "agent_type"))
    properties = chosen.parameters.get("properties") if isinstance(chosen.parameters, dict) else None
    properties = properties if isinstance(properties, dict) else {}
    arguments: dict[str, Any] = {}
    if "prompt" in properties or "message" not in properties:
        arguments["prompt"] = prompt
    else:
        arguments["message"] = prompt
    if "description" in properties:
        arguments["description"] = description
    key = next((k for k in ("subagent_type", "agent_type") if k in properties), None)
    if key is None and agent_type is not None and properties:
        return f"subagent(agent_type={agent_type!r}): {chosen.name} takes no agent type (its arguments: {', '.join(properties)})"
    kind = agent_type or SUBAGENT_TOOLS[chosen.name]
    if kind is not None and (key is not None or not properties):
        arguments[key or "subagent_type"] = kind
    return ToolCall(chosen.name, arguments, call.id, namespace=chosen.namespace)
