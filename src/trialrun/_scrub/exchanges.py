"""HTTP exchanges without secrets: credential headers and query parameters REDACTED, response headers cut to an
allow-list, bodies scrubbed (a streamed one first as its reassembled events)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from .registry import REDACTED, SENSITIVE_HEADERS, _header_tokens
from .replace import _apply, _spans, scrub_bytes, scrub_text
from .shapes import SECRET_QUERY as _SECRET_QUERY

# -- HTTP exchanges -------------------------------------------------------------------------------------------
#: Response headers a cassette keeps (all others are dropped: cookies, account and organisation ids, tracing ids).
RESPONSE_HEADERS_KEPT = frozenset({
    "content-type", "retry-after", "retry-after-ms", "x-should-retry", "date", "openai-processing-ms",
    "openai-version", "anthropic-version",
})
_RESPONSE_HEADER_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-")
_SECRET_HEADER = re.compile(r"auth|key|token|secret|password|cookie|session|signature|credential", re.IGNORECASE)


def credential_values(headers: Any) -> set[bytes]:
    """The credential values (without a `Bearer ` prefix) carried by sensitive headers (a mapping, or (name, value)
    pairs); short ones are ignored."""
    return {token.encode() for _, token in _header_tokens(headers) if len(token) >= 8}


def scrub_headers(headers: dict[str, str], extra: Iterable[str] = (), *, response: bool = False,
                  text: bool = True) -> dict[str, str]:
    """Request headers with credential-looking ones REDACTED and the rest scrubbed; response headers cut to the
    allow-list `RESPONSE_HEADERS_KEPT` (and rate-limit headers). `text=False`: the kept values are not scrubbed as
    text, for a caller that scrubs the whole artefact they are serialised into (`scrub_text` of it, `extra` too)."""
    out: dict[str, str] = {}
    for name, value in headers.items():
        lower = name.lower()
        if response and lower not in RESPONSE_HEADERS_KEPT and not lower.startswith(_RESPONSE_HEADER_PREFIXES):
            continue
        secret = lower in SENSITIVE_HEADERS or _SECRET_HEADER.search(lower) is not None
        out[name] = REDACTED if secret and not response else scrub_text(value, extra) if text else value
    return out


def scrub_url(url: str, extra: Iterable[str] = (), *, text: bool = True) -> str:
    """A URL with the values of credential-looking query parameters (`key=`, `api_key=`, `token=`...) REDACTED (and,
    unless `text=False`, as for `scrub_headers`, scrubbed as text)."""
    base, sep, query = url.partition("?")
    if sep:
        fragment = ""
        if "#" in query:
            query, _, fragment = query.partition("#")
            fragment = "#" + fragment
        parts = []
        for part in query.split("&"):
            name, eq, _ = part.partition("=")
            parts.append(f"{name}={REDACTED}" if eq and _SECRET_QUERY.match(name) else part)
        url = base + "?" + "&".join(parts) + fragment
    return scrub_text(url, extra) if text else url


def scrub_body(body: bytes, extra: Iterable[str] = (), *, streamed: bool = False) -> bytes:
    """A request or response body without secrets; a streamed (SSE) body is first scrubbed as reassembled text."""
    if not body:
        return body
    extra = tuple(extra)
    if streamed:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return body
        joined = _scrub_stream(text, extra)
        if joined is not text:
            body = joined.encode("utf-8")
    return scrub_bytes(body, extra)


def _scrub_stream(text: str, extra: tuple[str, ...]) -> str:
    """An SSE stream with secrets that are split across events removed: the string fields of its events are
    joined per (event type, field path), in order, and a secret found in the joined text is cut out of each piece."""
    from ..wire._sse import parse_sse, render_sse

    events = parse_sse(text)
    if len(events) < 2:
        return text
    payloads: list[Any] = []
    groups: dict[tuple[str, str], list[tuple[Any, Any, str]]] = {}

    def walk(node: Any, path: str, kind: str) -> None:
        if isinstance(node, dict):
            for key, item in node.items():
                if isinstance(item, str):
                    groups.setdefault((kind, f"{path}.{key}"), []).append((node, key, item))
                elif isinstance(item, (dict, list)):
                    walk(item, f"{path}.{key}", kind)
        elif isinstance(node, list):
            for index, item in enumerate(node):
                if isinstance(item, str):
                    groups.setdefault((kind, f"{path}[{index}]"), []).append((node, index, item))
                elif isinstance(item, (dict, list)):
                    walk(item, f"{path}[{index}]", kind)

    for index, event in enumerate(events):
        try:
            data = json.loads(event.data)
        except ValueError:
            data = None
        if isinstance(data, (dict, list)):
            payloads.append(data)
            kind = data.get("type") if isinstance(data, dict) else None
            walk(data, "", f"{event.event}/{kind}")
        else:
            payloads.append(event.data)
            groups.setdefault((f"{event.event}", "(text)"), []).append((payloads, index, event.data))
    changed = False
    for pieces in groups.values():
        if len(pieces) < 2:
            continue
        joined = "".join(piece for _, _, piece in pieces)
        spans = _spans(joined, extra)
        if not spans:
            continue
        offset = 0
        for container, key, piece in pieces:
            if any(start < offset + len(piece) and end > offset for start, end in spans):
                container[key] = _apply(piece, spans, offset)
                changed = True
            offset += len(piece)
    if not changed:
        return text
    return render_sse([(event.event, payloads[i]) for i, event in enumerate(events)]).decode("utf-8")
