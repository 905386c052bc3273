"""Following a trajectory's calls in order, for `expect.never_ran`: what each call runs (a command tool's command
in its folder, or text typed into a running session) and the file table later calls read (what the calls that ran
before wrote, on top of the workspace model's base). One pass: each call's effects are folded once, so a long
trajectory costs time in proportion to its length.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from . import _files
from ._patches import CODEX_SHELL_TOOLS, codex_intercepted
from ._patterns import fold, start_files
from ._sessions import Sessions, stdin_arguments
from ._tool_writes import join

__all__ = ["Follower", "calls_in_order"]

_FOLDER_KEYS = ("workdir", "cwd", "working_directory")


def calls_in_order(trajectory: Any) -> list[Any]:
    """Every conversation's calls in the order they were made: a sub-agent that edits a script before the main
    loop runs it comes first. Turns are ordered by the exchange they were read from (arrival order); a trajectory
    nobody observed keeps its conversations one after another."""
    others = trajectory.other_conversations
    if not others:
        return list(trajectory.tool_calls)
    turns = [*trajectory.turns, *(turn for conversation in others for turn in conversation.turns)]
    if any(turn.exchange is None for turn in turns if turn.tool_calls):
        return list(trajectory.all_tool_calls)
    return [call for turn in sorted(turns, key=lambda t: t.exchange or 0) for call in turn.tool_calls]


class Follower:
    """The state of a walk through a trajectory's calls (see the module docstring).

    `results`: the tool results by call id; `answers`: the result of each call by the call object's `id()`, paired
    as the wire pairs them (`Trajectory.outcomes`: by call id, or, where the wire has none, Gemini's, by position in
    the turn), which wins; `workspace`: the trial's workspace model (`ctx.workspace`) or None."""

    def __init__(self, results: Mapping[str, Any], tools: Sequence[str], keys: Sequence[str], workspace: Any,
                 own: _files.OwnScripts, calls: Iterable[Any] = (), answers: Mapping[int, Any] | None = None) -> None:
        self.results = results
        self.answers = dict(answers or {})
        self.tools = tuple(tools)
        self.keys = tuple(keys)
        self.workspace = workspace
        self.own = own
        self.files: _files.Files = start_files(workspace)
        self.sessions = Sessions()
        # the last call that types into each session: what is left of its input without a newline is examined there
        self.last_input: dict[str, int] = {}
        for k, call in enumerate(calls):
            found = stdin_arguments(call.name, call.arguments) if isinstance(call.arguments, Mapping) else None
            if found is not None:
                self.last_input[found[0]] = k
        self.index = -1

    def _result(self, call: Any) -> Any:
        if id(call) in self.answers:
            return self.answers[id(call)]
        return self.results.get(call.id) if call.id is not None else None

    def answer(self, call: Any, result: Any) -> None:
        """`call` (one made for a call of another tool, a meta tool's) is answered by `result`."""
        self.answers[id(call)] = result

    def command(self, call: Any, arguments: Any, found: Any) -> tuple[Any, Any]:
        """What `call` runs, as (the command to examine, the command whose writes later calls see): `found` (its
        command tool's command, run in the folder the call names), text typed into a session, or (None, None)."""
        self.index += 1
        if found is not None:
            folder = next((arguments.get(k) for k in _FOLDER_KEYS if isinstance(arguments, Mapping)
                           and isinstance(arguments.get(k), str) and arguments.get(k)), None)
            patch = codex_intercepted(found) if call.name.casefold() in CODEX_SHELL_TOOLS else None
            if patch is not None:  # Codex applies it itself, as its apply_patch tool would (no program runs)
                where = join(folder, patch[1]) if folder and not self._is_root(folder) else patch[1]
                return found, (call.name, {"input": patch[0], "workdir": where})
            if folder is not None and isinstance(found, str) and not self._is_root(folder):
                found = f"cd {shlex.quote(folder)}\n{found}"
            return found, found
        if not isinstance(arguments, Mapping):
            return None, None
        typed = stdin_arguments(call.name, arguments)
        if typed is None:
            return None, None
        result = self._result(call)
        run = self.sessions.typed(typed[0], typed[1], result.content if result is not None else None,
                                  last=self.last_input.get(typed[0]) == self.index)
        if run is None:
            return None, None
        return run

    def _is_root(self, folder: str) -> bool:
        if folder in (".", "./"):
            return True
        root = getattr(self.workspace, "root", None)
        return root is not None and _files.normalise(folder) in (root, getattr(self.workspace, "real_root", None))

    def ran(self, call: Any, arguments: Any, written: Any) -> None:
        """`call` ran: its writes are folded into the file table (`written`: its command, from `command`; None for
        a call of another tool), and a session it started is remembered."""
        result = self._result(call)
        if written is not None:
            if isinstance(written, str) and result is not None and isinstance(arguments, Mapping):
                self.sessions.started(written, arguments, result.content)
            if written != "":
                self.files = fold(self.files, written, self.own)
            return
        if isinstance(arguments, str):  # the raw JSON text a model sent (a garbled call is no write)
            import json

            try:
                arguments = json.loads(arguments)
            except ValueError:
                return
        if isinstance(arguments, Mapping):
            failed = result is not None and bool(result.is_error)
            # (a result that is no error is the tool's report that it did what it was asked: see `_tool_writes`)
            item = (call.name, arguments, True if failed else str(result.content)) if result is not None else (
                call.name, arguments)
            self.files = fold(self.files, item, self.own)

    def recorded(self, commands: Sequence[Any]) -> Iterable[tuple[Any, _files.Files]]:
        """Each of an agent's own record of the commands it ran, with the file table the ones before it left."""
        files = start_files(self.workspace)
        for command in commands:
            yield command, files
            files = fold(files, command, self.own)
