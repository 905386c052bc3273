"""Which tools run shell commands, known by name or found from the tool's schema.

A fixed list of names cannot know every agent's shell tool (Codex's is `exec_command(cmd=...)`, Claude Code's
`Bash`), so a tool also counts as a command tool when its JSON schema has a string argument named like a command
(`command`, `cmd`, `script`, `shell_command`, ...) or an argv array (`command: ["bash", "-lc", "..."]`). The schemas
come from the requests on the wire, so this works for any agent. One module, used by the trajectory decoder, the
`never_ran` grader, the command matcher and the scripted model's portable `shell` step.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Any

__all__ = ["KNOWN_COMMAND_TOOLS", "COMMAND_ARGUMENT_NAMES", "command_argument", "shell_arguments", "SHELL_PREFERENCE",
           "GLOB_CHARS", "is_command_tool"]

#: Tool names that run shell commands in the agents and frameworks people use (compared ignoring case).
KNOWN_COMMAND_TOOLS: tuple[str, ...] = (
    "run_command", "bash", "shell", "exec", "execute_command", "local_shell", "exec_command", "run_shell_command",
)
#: The characters that make a tool name or a pattern a glob.
GLOB_CHARS = re.compile(r"[*?\[]")


@lru_cache(maxsize=256)
def is_command_tool(tool: str, command_tools: tuple[str, ...]) -> bool:
    """Whether `tool` is one of `command_tools` (names compared ignoring case; entries may be globs). Here, apart
    from the shell analysis (`_shell`), so an agent whose tools run no commands never imports it."""
    name = tool.casefold()
    return any(
        name == t.casefold() or (GLOB_CHARS.search(t) is not None and fnmatchcase(name, t.casefold()))
        for t in command_tools
    )


#: Argument names that hold a command, compared ignoring case and `_`/`-`.
COMMAND_ARGUMENT_NAMES: tuple[str, ...] = (
    "command", "cmd", "script", "shell_command", "command_line", "cmdline", "bash_command", "shell_script", "commands",
)
_NORMALISED = frozenset(name.replace("_", "") for name in COMMAND_ARGUMENT_NAMES)
#: Which offered tool a portable `shell` step calls first when several could run it.
SHELL_PREFERENCE: tuple[str, ...] = ("bash", "exec_command", "run_command", "shell", "run_shell_command",
                                     "execute_command", "local_shell", "exec")


#: Words that say a tool runs commands, looked for in the name and descriptions of a tool that is not a known
#: command tool but has a command-like argument (opencode's `task(command=...)`, "the command that triggered this
#: task", and Claude Code's `Workflow(script=...)` are not shells; Codex's `exec_command`, "Runs a command in a PTY",
#: is).
_SHELL_WORDS = re.compile(r"(?<![a-z])(shell|bash|zsh|sh|terminal|command[ -]line|cli|pty|tty|subprocess|argv|"
                          r"(run|runs|execute|executes|exec)( an?| the)?( shell| bash| terminal)? commands?)(?![a-z])", re.I)


def _normal(name: str) -> str:
    return name.casefold().replace("_", "").replace("-", "")


def _kind(schema: Any) -> str | None:
    """"string", "argv" (an array of strings) or None for a property schema."""
    if not isinstance(schema, Mapping):
        return None
    kind = schema.get("type")
    if isinstance(kind, list):  # ["string", "null"]
        kind = next((k for k in kind if k != "null"), None)
    if kind is None:
        for key in ("anyOf", "oneOf"):
            for option in schema.get(key) or ():
                found = _kind(option)
                if found is not None:
                    return found
        return None
    if kind == "string":
        return "string"
    if kind == "array":
        items = schema.get("items")
        return "argv" if isinstance(items, Mapping) and items.get("type") == "string" else None
    return None


def command_argument(name: str, parameters: Any = None, description: str = "") -> str | None:
    """The argument of tool `name` that holds a command, or None when the tool does not run commands.

    `parameters` is the tool's JSON schema as offered on the wire, `description` its description. A known command
    tool without a schema (or with none of the usual argument names) takes `command`. Another tool counts when it
    has a command-like argument AND its name or a description says it runs commands (a shell, a terminal, a PTY):
    an argument named `command` alone is not enough (opencode's sub-agent tool has one).

    >>> command_argument("exec_command", {"type": "object", "properties": {"cmd": {"type": "string"}}})
    'cmd'
    >>> command_argument("read_file", {"type": "object", "properties": {"path": {"type": "string"}}}) is None
    True
    """
    known = name.casefold() in KNOWN_COMMAND_TOOLS
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    if isinstance(properties, Mapping):
        for key, schema in properties.items():
            if isinstance(key, str) and _normal(key) in _NORMALISED and _kind(schema) is not None:
                if known:
                    return key
                about = schema.get("description") if isinstance(schema, Mapping) else None
                first = description.strip().split(". ", 1)[0].split("\n", 1)[0][:300]  # what the tool IS, not its manual
                words = f"{name.replace('_', ' ')} {first} {about[:300] if isinstance(about, str) else ''}"
                if _SHELL_WORDS.search(words):
                    return key
    return "command" if known else None


def shell_arguments(name: str, parameters: Any, command: str, description: str = "") -> dict[str, Any] | None:
    """The arguments that make tool `name` run `command`, in that tool's own shape, or None when it cannot.

    A string argument takes the command; an argv array takes `["bash", "-lc", command]`. Other REQUIRED string
    arguments (opencode's and Claude Code's `description`) get a short description of the command.
    """
    key = command_argument(name, parameters, description)
    if key is None:
        return None
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    schema = properties.get(key) if isinstance(properties, Mapping) else None
    arguments: dict[str, Any] = {key: ["bash", "-lc", command] if _kind(schema) == "argv" else command}
    required = parameters.get("required") if isinstance(parameters, Mapping) else None
    for other in required if isinstance(required, list) else ():
        if other == key or not isinstance(other, str) or not isinstance(properties, Mapping):
            continue
        spec = properties.get(other)
        if isinstance(spec, Mapping) and "default" in spec:
            arguments[other] = spec["default"]
        elif _kind(spec) == "string":
            arguments[other] = f"Run: {command}" if len(command) <= 60 else f"Run: {command[:57]}..."
    return arguments
