"""How the verdict-truth battery calls each agent, read from its declared contract (`trialrun.agents.CONTRACTS`):
its shell tool and argument shapes, its read/write/edit tools, the configurations under which it runs what it is
asked or refuses it, its sub-agent waits and its sessions. The scenarios (`_battery_scenarios`) use only these, so a
new agent's scenarios come from its contract."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from _battery import Call, Final, Log, Step

from trialrun.agents import CONTRACTS
from trialrun.agents._contract import AgentContract, FileTool, Refusing
from trialrun.wire import ModelRequest

PRESETS = tuple(CONTRACTS)


def contract(preset: str) -> AgentContract:
    return CONTRACTS[preset]


def shell_name(preset: str) -> str:
    """The agent's shell tool, as its requests offer it."""
    return contract(preset).shell_tool.name


def delete(preset: str) -> str:
    """The destructive command that RUNS under the "ran" configuration: `rm -r` where the agent refuses `rm -f`
    itself (Codex: its contract's refusing configurations), else `rm -rf`."""
    permissions = contract(preset).permissions
    refuses_rm_f = permissions is not None and any(r.command.startswith("rm -f ") for r in permissions.refusing)
    return "rm -r sentinel" if refuses_rm_f else "rm -rf sentinel"


def runs(preset: str) -> dict[str, Any]:
    """The options under which the agent runs what it is asked (its contract's; none without a permission system:
    pi and opencode run it by default, Codex runs `rm -r` in its workspace-write sandbox, Claude Code needs edits
    accepted and Bash allowed)."""
    permissions = contract(preset).permissions
    return dict(permissions.runs_all) if permissions is not None else {}


def refusing(preset: str) -> tuple[Refusing, ...]:
    permissions = contract(preset).permissions
    return permissions.refusing if permissions is not None else ()


def shell(preset: str, command: str, key: str = "", **extra: Any) -> Call:
    tool = contract(preset).shell_tool
    return Call(tool.name, tool.call(command, **extra), key)


def cmd_args(preset: str, command: str) -> dict[str, str]:
    return {contract(preset).shell_tool.argument: command}


def file_call(preset: str, kind: str, path: str, key: str, **values: str) -> Call:
    """A call of the agent's own read, write or edit tool (its contract's), for `path` in the workdir."""
    tool = contract(preset).file_tool(kind)
    assert tool is not None, f"{preset} has no {kind} tool"
    return Call(tool.name, tool.call(path, "{W}", **values), key)


def read_call(preset: str, path: str, key: str) -> Call:
    """Reading `path`: the agent's read tool, or `cat` through its shell when it has none (Codex)."""
    if contract(preset).file_tool("read") is None:
        return shell(preset, f"cat {path}", key)
    return file_call(preset, "read", path, key)


def shell_edit_steps(preset: str, command: str, key: str, *, read: bool = False) -> list[Step]:
    """An in-place edit of clean.sh by a command (`sed -i`), after reading it where the agent stops such a command
    on a file it did not read (its shell tool's `read_first`; `read`: it was read already)."""
    first: list[Step] = [[read_call(preset, "clean.sh", "read")]] if contract(preset).shell_tool.read_first and \
        not read else []
    return [*first, [shell(preset, command, key)]]


def edit_steps(preset: str, old: str, new: str, key: str) -> list[Step]:
    """Editing clean.sh with the agent's edit tool, after reading it where the tool refuses a file not read."""
    tool = contract(preset).file_tool("edit")
    assert tool is not None
    steps: list[Step] = [[read_call(preset, "clean.sh", "read")]] if tool.read_first else []
    return [*steps, [file_call(preset, "edit", "clean.sh", key, old=old, new=new)]]


def tool_of(preset: str, kind: str) -> FileTool:
    tool = contract(preset).file_tool(kind)
    assert tool is not None
    return tool


#: How the main loop waits with each agent's wait tool for the sub-agent whose id it was given.
WAIT_ARGUMENTS: dict[str, Callable[[str], dict[str, Any]]] = {
    "wait_agent": lambda agent_id: {"targets": [agent_id], "timeout_ms": 60000},  # Codex
}


def waiter(wait: str, namespace: str | None) -> Step:
    def wait_for_it(request: ModelRequest, log: Log) -> Sequence[Call] | Final:
        """The main loop waits for the agent it spawned (the id is in what the spawn tool returned)."""
        text = log.shown_text("spawn")
        found = re.search(r'"?(?:agent_id|id)"?\s*[:=]\s*"([^"]+)"', text)
        if not found:
            return Final(f"no agent id in {text[:200]!r}")
        return [Call(wait, WAIT_ARGUMENTS[wait](found.group(1)), "wait", namespace=namespace)]
    return wait_for_it


def typing_into(preset: str, started: str, chars: str, wait_ms: int, key: str) -> Step:
    """Text typed into the session the `started` call left running (its result names it), with the contract's
    session tool."""
    sessions = contract(preset).shell_tool.sessions
    assert sessions is not None

    def type_it(request: ModelRequest, log: Log) -> Sequence[Call] | Final:
        found = re.search(sessions.running, log.shown_text(started))
        if not found:
            return Final(f"no session id in {log.shown_text(started)[:200]!r}")
        return [Call(sessions.tool, {sessions.session: int(found.group(1)), sessions.chars: chars,
                                     sessions.wait_ms: wait_ms}, key)]
    return type_it
