"""Finding the command in a tool call, and what an allow list judges in it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._util.command_tools import KNOWN_COMMAND_TOOLS, is_command_tool as _is_command_tool
from ._analysis import Walker
from ._expand import Env
from ._nodes import Simple
from ._patterns import shorten, shown_command
from ._syntax import ASSIGN_RE, Parser, assignment
from ._values import CommandLines, UnreadableCommand
from ._words import ParseError

DEFAULT_COMMAND_TOOLS: tuple[str, ...] = KNOWN_COMMAND_TOOLS
COMMAND_ARGUMENT_KEYS: tuple[str, ...] = ("command", "cmd")


def command_of_call(
    tool: str, arguments: Mapping[str, Any] | str, command_tools: Iterable[str] = DEFAULT_COMMAND_TOOLS,
    keys: Sequence[str] = (),
) -> str | list[str] | None:
    """The command a tool call runs, or None when the tool is not a command tool (or the call carries none).

    Argument `command` or `cmd`, a string or a list (argv); also OpenAI's local_shell shape,
    `{"action": {"command": [...]}}`. A call that carries several different ones (`{"command": "ls",
    "cmd": "rm -rf /"}`) may run any of them: it gives a `CommandLines`, a string of them one per line that
    every matcher here examines one by one. Tool names are compared ignoring case (`Bash` is `bash`), and
    `command_tools` entries may be globs (`"*shell*"`). `keys` names further arguments that hold the command
    (found from the tool's schema: `script`, `shell_command`, ...). `arguments` may be the JSON text a model sent.

    >>> command_of_call("bash", {"command": "ls -la"})
    'ls -la'
    >>> command_of_call("read_file", {"path": "a.txt"}) is None
    True
    """
    if not _is_command_tool(tool, tuple(command_tools)):
        return None
    if isinstance(arguments, str):
        import json

        text = arguments
        try:
            arguments = json.loads(text)
        except ValueError:
            if text.lstrip().startswith(("{", "[")):
                return UnreadableCommand(text)  # garbled JSON (cut off mid-call): what it runs is unknown
            return text  # a command tool whose raw argument text is the command itself
    if not isinstance(arguments, Mapping):
        return None
    found: list[str | list[str]] = []
    for source in (arguments, arguments.get("action")):
        if isinstance(source, Mapping):
            for key in (*COMMAND_ARGUMENT_KEYS, *keys) if keys else COMMAND_ARGUMENT_KEYS:
                value = _as_command(source.get(key))
                if value is not None and value not in found:
                    found.append(value)
    if len(found) > 1:
        return CommandLines(found)
    return found[0] if found else None


def _as_command(value: Any) -> str | list[str] | None:
    if value is None or (isinstance(value, (list, tuple)) and not value):
        return None  # no command given: nothing runs
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) for v in value):
        return [str(v) for v in value]
    return UnreadableCommand(repr(value))


def commands_for_allow_list(
    command: str | Sequence[str],
) -> tuple[list[tuple[tuple[str, ...], tuple[bool, ...], str, bool, tuple[str, ...]]], list[str]]:
    """What an allow list judges in `command` (`ToolPolicy(allow_commands=...)`): every program it runs, wrappers
    included (`sudo`, `env`, `bash -c`), each as (its words from the program on, which of them are only known at
    run time, a display, whether what runs is uncertain, the variables assigned in front of it); and the names of
    all variables the line assigns (`X=1 cmd`, `X=1`, `export X=1`, `env X=1 cmd`, nested shell code too).
    ValueError when it cannot be parsed.

    >>> found, assigned = commands_for_allow_list("PATH=. sudo ls -la")
    >>> [(words, prefix) for words, _, _, _, prefix in found], assigned
    ([(('sudo', 'ls', '-la'), ('PATH',)), (('ls', '-la'), ('PATH',))], ['PATH'])
    """
    if isinstance(command, CommandLines):  # several commands in one call: each is judged on its own
        found_all: list[tuple[tuple[str, ...], tuple[bool, ...], str, bool, tuple[str, ...]]] = []
        assigned_all: list[str] = []
        for part in command.parts:
            found, assigned_here = commands_for_allow_list(part)
            found_all.extend(found)
            assigned_all.extend(assigned_here)
        return found_all, assigned_all
    prefixes: dict[int, list[str]] = {}
    assigned: list[str] = []

    class Recorder(Walker):
        def simple(self, cmd: Simple, env: Env, depth: int) -> list[int]:
            names: list[str] = []
            for word in cmd.words:  # the same test `Walker.simple` uses for an assignment in front of a command
                match = assignment(word)
                if match is None:
                    break
                names.append(match.group(0).split("[", 1)[0].rstrip("+="))
            ids = super().simple(cmd, env, depth)
            assigned.extend(names)
            for x in ids:
                prefixes.setdefault(x, []).extend(names)
            return ids

    walker = Recorder()
    try:
        if isinstance(command, str):
            walker.script(Parser(command).parse_all(), {}, 0)
        elif len(command) == 1 and re.search(r"\s|[;&|<>$`]", command[0]):
            walker.script(Parser(command[0]).parse_all(), {}, 0)
        else:
            walker.argv([str(w) for w in command], [None] * len(command), {}, 0)
    except (ParseError, RecursionError) as exc:
        raise ValueError(f"cannot parse command {shorten(shown_command(command))!r}: {exc}") from None
    found = []
    for x, inv in enumerate(walker.invs):
        if inv.guessed:  # seen only by guessing; the program only known at run time is judged (and refused) itself
            continue
        if inv.program in ("env", "sudo", "doas", "export", "declare", "typeset", "local", "readonly"):
            assigned += [a.split("=", 1)[0].split("[", 1)[0].rstrip("+") for a in inv.args if ASSIGN_RE.match(a)]
        dynamic = tuple(d is not None for d in inv.dyn)
        found.append((tuple(inv.words), dynamic, inv.display, inv.uncertain, tuple(prefixes.get(x, ()))))
    return found, assigned
