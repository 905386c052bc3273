"""Finding the secrets in a text and replacing them: every span found (the registry's values and the key shapes),
merged, never cutting a JSON escape in two, each replaced by REDACTED (or, inside longer base64, by base64 of
its length)."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import Any

from .forms import is_base64_char
from .registry import REDACTED, _current
from .shapes import shape_spans


# -- finding and replacing -------------------------------------------------------------------------------------
def _value_spans(text: str, values: Iterable[str], spans: list[tuple[int, int]]) -> None:
    for value in values:
        start = text.find(value)
        while start != -1:
            spans.append((start, start + len(value)))
            start = text.find(value, start + len(value))


def _matcher_spans(text: str, matcher: re.Pattern[str], spans: list[tuple[int, int]]) -> None:
    """Every occurrence of the trie's values, overlapping ones too (the longest at each start): each search goes
    on from one past the last match's start, so a value starting inside another is found as well."""
    match = matcher.search(text)
    while match is not None:
        spans.append(match.span())
        match = matcher.search(text, match.start() + 1)


def _spans(text: str, extra: Iterable[str] = ()) -> list[tuple[int, int]]:
    """Where secrets are in `text`: sorted, merged (start, end) ranges, never cutting a JSON escape in two."""
    spans: list[tuple[int, int]] = []
    state = _current()
    if state.matcher is not None:
        _matcher_spans(text, state.matcher, spans)
    elif state.variants:
        _value_spans(text, state.variants, spans)
    if extra:
        _value_spans(text, extra, spans)
    shape_spans(text, spans)
    return _merged(text, spans)


def _fill(length: int) -> str:
    """What replaces a credential's base64 inside a longer base64 text: REDACTED repeated to its length, so the
    text stays base64 of the same length (a cassette's `body_base64` still decodes, its bytes there replaced)."""
    return (REDACTED * (length // len(REDACTED) + 1))[:length]


def _merged(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    if not spans:
        return spans
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        start, end = _whole_escapes(text, start, end)
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _whole_escapes(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen a span so it neither starts nor ends inside a backslash escape (`\\"`, `\\n`, `\\u00e9`)."""
    def odd_backslashes_before(index: int, floor: int) -> bool:
        count = 0
        while index - count - 1 >= floor and text[index - count - 1] == "\\":
            count += 1
        return count % 2 == 1

    if start > 0 and odd_backslashes_before(start, 0):
        start -= 1
    if end < len(text) and odd_backslashes_before(end, start):
        end += 5 if text[end] == "u" and end + 5 <= len(text) else 1
    return start, end


def _apply(text: str, spans: list[tuple[int, int]], offset: int = 0, base64_forms: Collection[str] = ()) -> str:
    """`text` (which starts at `offset` of the text the spans index) with each span's part of it removed, and
    REDACTED where a span starts inside it; a span that is one of `base64_forms` inside a longer base64 text (a
    base64 character on either side) is replaced by `_fill` of its length instead, so that text stays base64."""
    end_of_text = offset + len(text)
    out: list[str] = []
    position = offset
    for start, end in spans:
        if end <= offset or start >= end_of_text:
            continue
        if start > position:
            out.append(text[position - offset:start - offset])
        if start >= offset:
            inside = base64_forms and end <= end_of_text and text[start - offset:end - offset] in base64_forms and (
                (start > offset and is_base64_char(text[start - offset - 1]))
                or (end < end_of_text and is_base64_char(text[end - offset])))
            out.append(_fill(end - start) if inside else REDACTED)
        position = max(position, min(end, end_of_text))
    if not out and position == offset:
        return text
    out.append(text[position - offset:])
    return "".join(out)


def scrub_text(text: str, extra: Iterable[str] = ()) -> str:
    """`text` with every secret replaced by REDACTED (the same object when there was none).

    `extra`: more values to remove (credentials a request carried, say).

    >>> scrub_text("key sk-proj-abcdefghijklmnopqrstuvwx, token ghp_" + "a1" * 18)
    'key REDACTED, token REDACTED'
    """
    if not text:
        return text
    spans = _spans(text, extra)
    return _apply(text, spans, base64_forms=_current().base64) if spans else text


def scrub_bytes(data: bytes, extra: Iterable[str] = ()) -> bytes:
    """`scrub_text` for UTF-8 bytes (other bytes are left as they are: base64 in a cassette is scrubbed as text)."""
    if not data:
        return data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    scrubbed = scrub_text(text, extra)
    return data if scrubbed is text else scrubbed.encode("utf-8")


def scrub_json(value: Any, extra: Iterable[str] = ()) -> Any:
    """A copy of JSON-like data (dicts, lists, strings, numbers) with secrets removed from every string and key."""
    extra = tuple(extra)
    if isinstance(value, str):
        return scrub_text(value, extra)
    if isinstance(value, dict):
        return {scrub_text(k, extra) if isinstance(k, str) else k: scrub_json(v, extra) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub_json(item, extra) for item in value]
    return value
