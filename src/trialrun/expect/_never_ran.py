"""What `never_ran` examines: every command a trajectory shows, each with the files the calls before it wrote.

Apart from the grader (`trajectory.never_ran`, whose arguments and wording are the user's side) because this is the
walk itself: the calls of command tools in every conversation, in order, followed through the shell analysis
(`_shell.Follower`), with the commands an agent recorded for its own calls counted once, as those calls.
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..trajectory import CallOutcome, ToolCall, Trajectory
from ._calls import call_repr, count, in_conversations, not_counted

__all__ = ["Examined", "examine_commands"]

#: Programs whose name at the start of an argument makes it look like a shell command.
_PROGRAMS = frozenset("""rm rmdir ls cat echo cd cp mv mkdir chmod chown curl wget git python python3 node npm npx pip
sh bash zsh sudo find grep sed awk tar kill pkill dd docker make perl ruby ssh scp rsync touch truncate""".split())


def _carries_command_text(call: ToolCall) -> bool:
    """A call of a tool not known to run commands whose arguments read like a shell command (`rm -rf d`)."""
    for value in call.arguments.values():
        if isinstance(value, str):
            first = value.strip().split(None, 1)[0] if value.strip() else ""
            if first.rsplit("/", 1)[-1] in _PROGRAMS and (" " in value.strip() or "/" in first):
                return True
    return False


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
    unclassified: list[ToolCall] = field(default_factory=list)

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
        if self.unclassified:
            calls = self.unclassified
            shown = ", ".join(call_repr(c) for c in calls[:3]) + (", ..." if len(calls) > 3 else "")
            reason += (f"; {count(len(calls), 'call')} to tools not known to run commands carry "
                       f"command-like text, not examined: {shown} (name the tool in command_tools to examine it)")
        return reason


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
                             workspace, own, every)
    for call in every:
        # a call whose arguments the model garbled still shows what it tried (`{"command": "rm -rf /"` cut off)
        arguments = call.raw_arguments if call.raw_arguments is not None else call.arguments
        found = _shell.command_of_call(call.name, arguments, tools, keys)
        fate = fates.get(id(call))
        source = fate.denial.source if fate is not None and fate.denial is not None else None
        text, written = follow.command(call, arguments, found)  # (text typed into a session, for write_stdin)
        files = follow.files
        if source is None:  # a refused call ran nothing: later calls cannot read what it would have written
            follow.ran(call, arguments, written)
        if text is None:
            if found is None and _carries_command_text(call):
                seen.unclassified.append(call)
            continue
        if fate is not None and source is not None and not include_refused:
            seen.skipped.append(fate)
            continue
        seen.via_tools[call.name] = None
        calls.append((text, f" via {call.name}{_refusal(source)}", files, source is not None))
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
