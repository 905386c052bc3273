"""Server-sent events: parsing recorded streams and rendering scripted ones."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ._types import WireError


@dataclass(slots=True)
class SSEEvent:
    event: str | None
    data: str

    def json(self, where: str = "event") -> Any:
        try:
            return json.loads(self.data)
        except ValueError as exc:
            raise WireError(f"{where}: data is not valid JSON ({exc}): {self.data[:80]!r}") from None


def parse_sse(body: bytes | str) -> list[SSEEvent]:
    """Split a whole event stream into events (multi-line data joined with newlines, comments dropped)."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    events: list[SSEEvent] = []
    event: str | None = None
    data: list[str] = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if not line:
            if data or event is not None:
                events.append(SSEEvent(event, "\n".join(data)))
            event, data = None, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    if data or event is not None:
        events.append(SSEEvent(event, "\n".join(data)))
    return events


_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)  # one encoder, not one per event


def render_sse(events: list[tuple[str | None, Any]]) -> bytes:
    """Render (event name or None, JSON-able data or a raw string) pairs as an SSE stream."""
    parts: list[str] = []
    for name, data in events:
        payload = data if isinstance(data, str) else _COMPACT.encode(data)
        parts.append((f"event: {name}\n" if name else "") + f"data: {payload}\n\n")
    return "".join(parts).encode()
