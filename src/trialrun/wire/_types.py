"""Provider-neutral shapes that every wire codec reads and writes.

A codec turns one API's JSON (or server-sent events) into these and back, so the scripted model, the cassette
decoder, the trajectory reader and the reference agent all speak one language whatever the provider.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..trajectory import ToolCall, ToolResult, Usage

__all__ = [
    "WireError",
    "ToolSpec",
    "Message",
    "ModelRequest",
    "ModelResponse",
    "ProviderError",
    "Step",
    "Exchange",
    "EncodedResponse",
]


class WireError(ValueError):
    """A body or stream that does not have the shape its API promises. The message says what was wrong."""


@dataclass(slots=True)
class ToolSpec:
    """A tool as a request offers it to the model; `namespace` names the tool namespace it was offered in (an
    OpenAI Responses `namespace` tool lists its member functions, each read as a ToolSpec of its own)."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    namespace: str | None = None


@dataclass(slots=True)
class Message:
    """One conversation entry, neutral: role is "system", "user", "assistant" or "tool".

    An assistant message carries the tool calls it asked for; a tool message carries tool results (one message may
    carry several, as Anthropic's user message with several tool_result blocks does).
    """

    role: str
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)


@dataclass(slots=True)
class ModelRequest:
    """A decoded model request: what a reactive scripted model sees, and where tool results are read from."""

    api: str
    model: str | None = None
    messages: list[Message] = field(default_factory=list)
    tools: list[ToolSpec] = field(default_factory=list)
    system: str | None = None
    stream: bool = False
    body: dict[str, Any] = field(default_factory=dict)
    path: str = ""
    #: Size of the request body in bytes, when the receiver knows it (plausible default token counts use it).
    size: int = field(default=0, compare=False)

    @property
    def tool_names(self) -> list[str]:
        return [tool.name for tool in self.tools]

    @property
    def last_tool_results(self) -> list[ToolResult]:
        """Tool results sent after the last assistant message: the answers to the model's previous tool calls."""
        results: list[ToolResult] = []
        for message in reversed(self.messages):
            if message.role == "assistant":
                break
            results[:0] = message.tool_results
        return results

    @property
    def last_user_text(self) -> str:
        for message in reversed(self.messages):
            if message.role == "user" and message.text:
                return message.text
        return ""


@dataclass(slots=True)
class _Answer:
    """What a model answers in one turn, whether read off the wire (`ModelResponse`) or scripted (`Step`): the two
    share these fields, in this order, so that positional construction of either stays as it was."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    model: str | None = None


@dataclass(slots=True)
class ModelResponse(_Answer):
    """A decoded model response: one turn of the trajectory."""

    stop_reason: str | None = None
    id: str | None = None
    #: What the decoder noticed but kept (a stream cut before its end): `decode_trajectory` adds these to the
    #: trajectory's notes, naming the exchange, while the partial turn stays a turn.
    notes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ProviderError:
    """An error a provider answers with (rate limit, overload, bad request)."""

    status: int = 500
    message: str = ""
    type: str | None = None
    retry_after: float | None = None


@dataclass(slots=True)
class Step(_Answer):
    """One scripted model response, neutral: the codec renders it in whatever format the request asked for."""

    error: ProviderError | None = None


@dataclass(slots=True)
class EncodedResponse:
    """An HTTP response a codec produced: status, headers, body (JSON bytes or a whole SSE stream)."""

    status: int
    headers: dict[str, str]
    body: bytes


@dataclass(slots=True)
class Exchange:
    """One recorded request and its response, as bytes: what observing transports and cassettes hold."""

    method: str
    url: str
    request_headers: dict[str, str] = field(default_factory=dict)
    request_body: bytes = b""
    status: int = 0
    response_headers: dict[str, str] = field(default_factory=dict)
    response_body: bytes = b""

    @property
    def path(self) -> str:
        from urllib.parse import urlsplit

        return urlsplit(self.url).path

    @property
    def streamed(self) -> bool:
        content_type = next((v for k, v in self.response_headers.items() if k.lower() == "content-type"), "")
        return "text/event-stream" in content_type
