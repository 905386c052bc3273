"""Text that came from a user, an agent or a model, made safe to print: data, never terminal commands or markup.

A test id, a tool argument or a model's reply can hold escape sequences (`ESC ] 0 ; title BEL` retitles the
window, `ESC [ 2 J` clears the screen, OSC 8 forges hyperlinks), bidirectional overrides that make text read
differently from what it is, and, for rich, markup (`read [/etc/hosts]` is a closing tag). Everything trialrun
prints goes through `clean` (plain output: click, pytest) or `markup` (text placed inside rich markup).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["clean", "markup", "listing", "shorten", "LISTED"]

#: How many problems a message lists before it says how many more there are.
LISTED = 50

# C0 and C1 controls (ESC, CSI, BEL, backspace, carriage return...), DEL, line and paragraph separators, the
# invisible format characters (soft hyphen, zero-width space, bidi marks, embeddings, overrides and isolates, word
# joiners, BOM, interlinear annotations), Unicode tag characters, and lone surrogates. Zero-width (non-)joiners
# stay: emoji sequences need them.
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u206f\ufeff"
    "\ufff9-\ufffb\U000e0000-\U000e007f\ud800-\udfff]"
)
_UNSAFE_LINES = re.compile(f"{_UNSAFE.pattern[:-1]}\n\t]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if char in "\n\t\r":
        return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}[char]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def clean(text: object, *, lines: bool = True) -> str:
    """`text` with every control or invisible format character written as its escape (`\\x1b`, `\\u202e`), so it
    prints as what it is. With `lines=False` newlines and tabs are escaped too (an id, a name: one line)."""
    value = str(text)
    return (_UNSAFE if lines else _UNSAFE_LINES).sub(_escape, value)


def markup(text: object, *, lines: bool = True) -> str:
    """`clean(text)` escaped for rich markup, to place inside a markup string (`f"[dim]{markup(path)}[/]"`)."""
    from rich.markup import escape

    return escape(clean(text, lines=lines))


def shorten(text: str, width: int = 200) -> str:
    """At most `width` characters, saying how many were left out (a 10 MB id must not make a 10 MB message)."""
    if len(text) <= width:
        return text
    return f"{text[:width]}... ({len(text) - width:,} more characters)"


def listing(head: str, items: Sequence[object], limit: int = LISTED) -> str:
    """`head` and the first `limit` items, one per line (`\\n  - item`), and how many more there are."""
    shown = "".join(f"\n  - {item}" for item in items[:limit])
    more = len(items) - limit
    return head + shown + (f"\n  ... and {more:,} more (fix these first)" if more > 0 else "")
