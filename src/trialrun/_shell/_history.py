"""The calls before a command, in the form the matcher reads them (`match_command(..., earlier=...)`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ._calls import DEFAULT_COMMAND_TOOLS, command_of_call


def history(
    earlier: Iterable[Any], command_tools: Iterable[str] = DEFAULT_COMMAND_TOOLS
) -> list[str | list[str] | tuple[str, Mapping[str, Any]]]:
    """Earlier tool calls, as (tool, arguments) pairs, with those of command tools turned into their commands;
    commands given as strings (or argv lists) stay as they are. Arguments may be JSON text, as models send them.

    >>> history([("write_file", {"path": "x.sh", "content": "ls"}), ("bash", {"command": "sh x.sh"}), "ls"])
    [('write_file', {'path': 'x.sh', 'content': 'ls'}), 'sh x.sh', 'ls']
    """
    tools = tuple(command_tools)
    out: list[str | list[str] | tuple[str, Mapping[str, Any]]] = []
    for item in earlier:
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) and not isinstance(item[1], str):
            tool, arguments = item
            command = command_of_call(tool, arguments, tools)
            if command is not None:
                out.append(command)
            elif isinstance(arguments, Mapping):
                out.append((tool, arguments))
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], str):
            command = command_of_call(item[0], item[1], tools)  # (tool, raw arguments as the model sent them)
            if command is not None:
                out.append(command)
                continue
            import json

            try:
                arguments = json.loads(item[1])
            except ValueError:
                continue
            if isinstance(arguments, Mapping):
                out.append((item[0], arguments))
        else:
            out.append(item)
    return out
