"""The checks of a scripted MCP server's fields, with messages that name the file and the field
(`notes_mcp.yaml: tools[0] (search_notes).answerz: unknown key (did you mean 'answers'?)`)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["ScriptError", "at", "need", "check_keys", "suggestion"]


class ScriptError(ValueError):
    """A scripted MCP server that cannot be used; the message names the file (when it came from one) and the field."""

    def within(self, source: str | None) -> ScriptError:
        """The same problem, with the file it was found in named first."""
        return ScriptError(f"{source}: {self}") if source else self


def at(where: str, key: str) -> str:
    """A field's path below `where` (`tools[0].answers`)."""
    return f"{where}.{key}" if where else key


def suggestion(key: str, options: Iterable[str]) -> str:
    close = difflib.get_close_matches(key, list(options), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def need(value: Any, kind: type | tuple[type, ...], where: str, what: str) -> Any:
    """`value` when it is a `kind` (a bool is never a number here); ScriptError naming `where` otherwise."""
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:80] + "..."
        raise ScriptError(f"{where}: expected {what}, got {type(value).__name__} {shown}")
    return value


def check_keys(value: Mapping[str, Any], known: Iterable[str], where: str) -> None:
    """ScriptError for the first key of `value` that is not one of `known`, with a did-you-mean."""
    options = list(known)
    for key in value:
        if key not in options:
            raise ScriptError(f"{at(where, str(key))}: unknown key{suggestion(str(key), options)}; known: "
                              f"{', '.join(options)}")
