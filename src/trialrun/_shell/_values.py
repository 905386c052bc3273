"""Command values that are not one plain command line: several commands one tool call carries
(`CommandLines`) and a command argument nothing can read (`UnreadableCommand`). Every matcher knows both."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from typing import Any


class CommandLines(str):
    """Several commands one tool call carries (`{"command": "ls", "cmd": "rm -rf /"}`): the tool may run any
    of them, so `match_command`, `cannot_read`, `commands_for_allow_list` and `commands_in` examine each one on its
    own (one command's unclosed here-document cannot swallow the next). As a string: one per line."""

    parts: tuple[str | tuple[str, ...], ...]

    def __new__(cls, parts: Iterable[str | Sequence[str]]) -> CommandLines:
        kept = tuple(p if isinstance(p, str) else tuple(str(w) for w in p) for p in parts)
        self = super().__new__(cls, "\n".join(p if isinstance(p, str) else shlex.join(p) for p in kept))
        self.parts = kept
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.parts,))


class UnreadableCommand(str):
    """A command tool's command argument that is neither a string nor an argv list (`{"argv": [...]}`,
    `["rm", None]`): nothing can say what it runs, so every matcher counts it as a match (fail closed)."""

    __slots__ = ()


#: How the reason of a match in text typed into a session begins its "where".
TYPED = "typed into session "


class TypedInput(str):
    """Text typed into a running session, as the command the matcher examines (the session's program fed the text
    as its standard input); `shown` is how a reason names it."""

    shown: str

    def __new__(cls, command: str, shown: str) -> TypedInput:
        self = super().__new__(cls, command)
        self.shown = shown
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.shown))


class UnknownInput(UnreadableCommand):
    """What a call runs cannot be known, for the reason the string gives (text typed into a session nobody saw
    start, or with line-editing keys in it): every matcher counts it as a match, saying why."""
