"""Turns of the APIs whose tool results ride inside a user message (Anthropic Messages, Gemini), both directions.

Both APIs put a turn's tool results as blocks (parts) of ONE user message, text the user adds after them in the
same message, and the model's text and calls in one assistant (model) message. Neutrally that is a tool message
followed by a user message, so the reading (`Gathered`) and the writing (`TurnWriter`) live here once; each codec
only says how its blocks are spelled.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..trajectory import ToolCall, ToolResult
from ._types import Message, ModelResponse, ToolSpec, WireError


@dataclass(slots=True)
class Gathered:
    """The texts, tool calls and tool results read from one message's blocks, in order."""

    texts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)

    def messages(self, role: str) -> list[Message]:
        """The neutral messages of one API message: an assistant's text (joined with "", as the SDKs join
        assistant text) and calls; else its results as ONE tool message and its text after them as a user message
        (text joined with "\\n"; a message without results keeps its own role)."""
        if role == "assistant":
            return [Message("assistant", "".join(self.texts), self.calls)]
        if not self.results:
            return [Message(role, "\n".join(self.texts))]
        messages = [Message("tool", tool_results=self.results)]
        if self.texts:
            messages.append(Message("user", "\n".join(self.texts)))
        return messages

    def response(self, **details: Any) -> ModelResponse:
        """A model response of the gathered text and calls, with its other `ModelResponse` fields as given."""
        return ModelResponse(text="".join(self.texts), tool_calls=self.calls, **details)


def read_messages(body: Any, key: str, read: Callable[[Any, str], list[Message]]) -> list[Message]:
    """The neutral messages of a request body's message list `key` ("messages", "contents"), each API message read
    by `read` (one message may read as two: its tool results, then its text)."""
    if not isinstance(body, dict):
        raise WireError(f"request body is a {type(body).__name__}, expected a JSON object")
    items = body.get(key)
    if not isinstance(items, list):
        raise WireError(f"request body has no '{key}' list")
    messages: list[Message] = []
    for number, item in enumerate(items):
        messages.extend(read(item, f"{key}[{number}]"))
    return messages


def tool_list(tools: Any) -> list[Any]:
    """A request's `tools` field: absent is none, anything but a list is a broken request."""
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise WireError(f"'tools' is a {type(tools).__name__}, expected a list")
    return tools


def tool_spec(name: str, description: Any, schema: dict[str, Any] | None) -> ToolSpec:
    """A declared tool; a description that is not a string is read as none (the model saw none it could read)."""
    return ToolSpec(name, description if isinstance(description, str) else "", schema or {})


class TurnWriter(ABC):
    """Writes neutral messages as one of these APIs: system messages join the top-level system text, a tool
    message's results become blocks of a user message (consecutive tool messages share one), and a user text right
    after results joins their message, after them, as the APIs require.

    A subclass spells the blocks and keeps the state it needs to spell them (call ids, function names).
    """

    #: The key of a message's list of blocks: "content" (Anthropic), "parts" (Gemini).
    key: ClassVar[str]
    #: The role of the model's messages: "assistant" (Anthropic), "model" (Gemini).
    model_role: ClassVar[str]

    @abstractmethod
    def assistant(self, message: Message) -> Any:
        """The blocks (or plain text) of an assistant message."""

    @abstractmethod
    def result(self, result: ToolResult) -> dict[str, Any]:
        """The block of one tool result."""

    @abstractmethod
    def is_result(self, block: dict[str, Any]) -> bool:
        """Whether a block is a tool result."""

    @abstractmethod
    def text(self, text: str) -> dict[str, Any]:
        """A text block."""

    def user(self, text: str) -> Any:
        """The content of a user message of text alone."""
        return [self.text(text)]

    def write(self, messages: list[Message], system: str | None) -> tuple[str | None, list[dict[str, Any]]]:
        """(the system text, the API's messages) for a neutral conversation."""
        system_parts = [system] if system else []
        out: list[dict[str, Any]] = []
        for message in messages:
            if message.role == "system":
                if message.text:
                    system_parts.append(message.text)
            elif message.role == "assistant":
                out.append({"role": self.model_role, self.key: self.assistant(message)})
            elif message.role == "tool":
                blocks = [self.result(result) for result in message.tool_results]
                if self._after_results(out):
                    out[-1][self.key].extend(blocks)
                else:
                    out.append({"role": "user", self.key: blocks})
            elif message.role == "user":
                if self._after_results(out):
                    out[-1][self.key].append(self.text(message.text))
                else:
                    out.append({"role": "user", self.key: self.user(message.text)})
            else:
                raise ValueError(f"message role {message.role!r} is not one of system, user, assistant, tool")
        return ("\n\n".join(system_parts) if system_parts else None), out

    def _after_results(self, out: list[dict[str, Any]]) -> bool:
        """Whether the last message written is a user message of tool results only (what follows joins it)."""
        if not out or out[-1]["role"] != "user":
            return False
        blocks = out[-1][self.key]
        return isinstance(blocks, list) and bool(blocks) and all(self.is_result(block) for block in blocks)
