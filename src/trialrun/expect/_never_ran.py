"""What `never_ran` examines: every command a trajectory shows, each with the files the calls before it wrote.

Apart from the grader (`trajectory.never_ran`, whose arguments and wording are the user's side) because this is the
walk itself: the calls of command tools in every conversation, in order, followed through the shell analysis
(`_shell.Follower`), with the commands an agent recorded for its own calls counted once, as those calls.
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..trajectory import CallOutcome, ToolCall, Trajectory
from ._base import clip
from ._calls import call_repr, count, in_conversations, not_counted

__all__ = ["Examined", "examine_commands"]

#: Arguments that name a file, not a command (`read_file(path="rm")` carries no command).
_PATH_KEYS = frozenset({"path", "file_path", "filepath", "filePath", "file", "filename", "paths", "directory", "dir",
                        "cwd", "workdir", "url", "pattern", "glob", "notebook_path", "target_file"})
#: How a tool that calls another tool by name names it and holds its arguments (Qwen Code's deferred `tool_call`).
_META_NAME = ("name", "tool", "tool_name")
_META_ARGUMENTS = ("arguments", "args", "input", "parameters")


def _texts(value: Any, where: str = "") -> list[tuple[str, str]]:
    """Every string in a call's arguments, nested ones too, with where it is (`arguments.command`); not file names."""
    if isinstance(value, str):
        return [(where, value)] if value.strip() else []
    found: list[tuple[str, str]] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            if str(key) not in _PATH_KEYS:
                found += _texts(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, (list, tuple)):
        for k, item in enumerate(value):
            found += _texts(item, f"{where}[{k}]")
    return found


def unwrap(call: ToolCall, arguments: Any, tools: Sequence[str]) -> tuple[ToolCall, Any]:
    """A call of a tool that calls another by name (`tool_call(name="run_shell_command", arguments={...})`) as the
    call it makes, when the tool it names is a command tool or a tool the trajectory knows; else the call itself."""
    if not isinstance(arguments, Mapping):
        return call, arguments
    name = next((arguments[k] for k in _META_NAME if isinstance(arguments.get(k), str)), None)
    inner = next((arguments[k] for k in _META_ARGUMENTS if isinstance(arguments.get(k), (Mapping, str))), None)
    if name is None or inner is None or name == call.name:
        return call, arguments
    if isinstance(inner, str):
        import json

        try:
            inner = json.loads(inner)
        except ValueError:
            return call, arguments
        if not isinstance(inner, Mapping):
            return call, arguments
    from .. import _shell

    if _shell.command_of_call(name, {}, tools) is None and not _known_tool(name, tools):
        return call, arguments
    return replace(call, name=name, arguments=dict(inner), raw_arguments=None), inner


def _known_tool(name: str, tools: Sequence[str]) -> bool:
    from .._util.command_tools import is_command_tool

    return is_command_tool(name, tuple(tools))


def _refusal(source: str | None) -> str:
    return ("" if source is None else " (refused by the agent)" if source == "agent"
            else " (denied by policy)" if source == "policy" else f" (refused by the {source})")


@dataclass
class Examined:
    """The commands to match, in order (text, " via TOOL (refused ...)", the files known when it ran, whether the call
    was refused: it was tried, never run), and what the pass reason must name: the tools they came through,
    refused calls left out, calls not known to run commands."""

    trajectory: Trajectory
    workspace: Any
    examined: list[tuple[Any, str, Any, bool]] = field(default_factory=list)
    via_tools: dict[str, None] = field(default_factory=dict)
    skipped: list[CallOutcome] = field(default_factory=list)
    unknown: list[tuple[ToolCall, str, list[tuple[str, str]]]] = field(default_factory=list)  # (call, via, texts)

    def pass_reason(self, command: str) -> str:
        """Why nothing matched, saying what was examined (and where nothing could be)."""
        trajectory = self.trajectory
        where = f" (via {', '.join(self.via_tools)})" if self.via_tools else ""
        reason = f"none of {count(len(self.examined), 'command')}{where}{in_conversations(trajectory)} ran {command!r}"
        if self.workspace is not None:
            reason += f"; scripts judged by the workspace model (the workdir at the start: {self.workspace.describe()})"
        if not self.examined:
            schema_tools = trajectory.command_tools
            offered = [name for name in trajectory.offered_tools if name in schema_tools] if trajectory.offered_tools else []
            reason += (f"; command tools offered: {', '.join(offered)}" if offered
                       else "; no command tool was offered or called" if trajectory.offered_tools else "")
        reason += not_counted(self.skipped)
        if self.unknown:
            calls = [call for call, _, _ in self.unknown]
            shown = ", ".join(call_repr(c) for c in calls[:3]) + (", ..." if len(calls) > 3 else "")
            reason += (f"; the arguments of {count(len(calls), 'call')} to tools not known to run commands, read as "
                       f"text, carry no {command!r}: {shown}")
        return reason

    def cannot_tell(self, pattern: Any, own: Any) -> str | None:
        """Why `pattern` may have run through a tool nobody says runs commands or not: one of its arguments (nested
        ones too) reads as a command that runs it. None when none does."""
        from .. import _shell

        for call, via, texts in self.unknown:
            for where, text in texts:
                match = _shell.match_command(pattern, text, own_scripts=own)
                if match.matched and not match.unparsable:
                    return (f"cannot tell: `{call.name}` is a tool no contract or schema says runs commands or not, "
                            f"and its argument `{where}` carries `{clip(text, 120)}`, which {match.reason}{via}; "
                            f"counted as a match (fail closed; name the tool in command_tools to examine it as one)")
        return None


def examine_commands(trajectory: Trajectory, workspace: Any, given: Sequence[str], own: Any,
                     include_refused: bool) -> Examined:
    """Every command `trajectory` shows, followed in one pass over its calls: what each call runs and what the calls
    before it wrote (on the trial's workspace model, when there is one: what the workdir held at the start)."""
    from .. import _shell

    schema_tools = trajectory.command_tools
    tools = tuple(given) + tuple(schema_tools) if schema_tools else tuple(given)
    keys = tuple(dict.fromkeys(schema_tools.values())) if schema_tools else ()
    fates = {id(o.call): o for o in trajectory.outcomes()}  # what became of each call (tried / refused / ran)
    seen = Examined(trajectory, workspace)
    calls: list[tuple[Any, str, Any, bool]] = []
    # An agent records the command of each call it ran (the reference agent does): that command and the call's own
    # are one command, examined (and counted) once, as the call's.
    recorded = Counter(trajectory.commands)
    every = _shell.calls_in_order(trajectory)  # (a sub-agent's edit before the main loop's run of it)
    follow = _shell.Follower({r.call_id: r for r in trajectory.all_tool_results if r.call_id}, tools, keys,
                             workspace, own, every, {key: fate.result for key, fate in fates.items()})
    quiet = set(trajectory.quiet_tools)
    for made in every:
        # a call whose arguments the model garbled still shows what it tried (`{"command": "rm -rf /"` cut off)
        arguments = made.raw_arguments if made.raw_arguments is not None else made.arguments
        call, arguments = unwrap(made, arguments, tools)  # (a tool that calls another by name: the call it makes)
        found = _shell.command_of_call(call.name, arguments, tools, keys)
        fate = fates.get(id(made))
        if call is not made:
            follow.answer(call, fate.result if fate is not None else None)
        source = fate.denial.source if fate is not None and fate.denial is not None else None
        text, written = follow.command(call, arguments, found)  # (text typed into a session, for write_stdin)
        files = follow.files
        if source is None:  # a refused call ran nothing: later calls cannot read what it would have written
            follow.ran(call, arguments, written)
        if text is None:
            if found is None and call.name not in quiet and not _shell.writes_files(arguments) and not (
                    source is not None and not include_refused):
                texts = _texts(arguments)
                if texts:
                    seen.unknown.append((call, f" via {call.name}{_refusal(source)}", texts))
            continue
        if fate is not None and source is not None and not include_refused:
            seen.skipped.append(fate)
            continue
        through = call.name if call is made else f"{made.name}(name={call.name!r})"
        seen.via_tools[through] = None
        calls.append((text, f" via {through}{_refusal(source)}", files, source is not None))
        spellings = [] if found is None else [found] if isinstance(found, str) else [" ".join(found), shlex.join(found)]
        same = next((text for text in spellings if recorded[text] > 0), None)
        if same is not None:
            recorded[same] -= 1
    for text, files in follow.recorded(trajectory.commands):
        if recorded[text] > 0:
            recorded[text] -= 1
            seen.examined.append((text, "", files, False))
    seen.examined += calls
    return seen
