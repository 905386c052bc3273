"""Text a configuration holds (an agent's instructions, AGENTS.md; the reference agent's system prompt), kept in the
config snapshot within a bound, and what changed in it between two runs as a short unified diff: compare's config
changes then say WHAT changed in the instructions, not only that two sha256 values differ.
"""

from __future__ import annotations

import difflib
from pathlib import Path

__all__ = ["SNAPSHOT_TEXT_LIMIT", "DIFF_LINES", "snapshot_text", "file_snapshot_text", "text_diff", "diff_size"]

#: The most characters of one text a config snapshot keeps (the sha256 beside it covers the whole).
SNAPSHOT_TEXT_LIMIT = 20_000
#: The most lines of a unified diff a config change shows.
DIFF_LINES = 24


def snapshot_text(text: str, limit: int = SNAPSHOT_TEXT_LIMIT) -> str:
    """`text` as a snapshot keeps it: whole up to `limit` characters, else its start and a line saying how much
    was left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… [{len(text) - limit:,} more characters not kept; the sha256 covers the whole text]"


def file_snapshot_text(path: Path, limit: int = SNAPSHOT_TEXT_LIMIT) -> str | None:
    """The start of a regular file's text (undecodable bytes replaced), bounded as `snapshot_text`; None when it is
    not a regular file (a folder of instructions is hashed, not kept)."""
    if not path.is_file():
        return None
    try:
        with path.open(encoding="utf-8", errors="replace") as file:
            text = file.read(limit + 1)
            rest = len(file.read()) if len(text) > limit else 0
    except OSError:
        return None
    if not rest and len(text) <= limit:
        return text
    return text[:limit] + f"\n… [{len(text) - limit + rest:,} more characters not kept; the sha256 covers the whole file]"


def text_diff(before: object, after: object, lines: int = DIFF_LINES) -> str | None:
    """A short unified diff (one line of context) from `before` to `after` when both are texts of more than one
    line, or long, and differ; None otherwise (a short value reads well as `a -> b`)."""
    if not isinstance(before, str) or not isinstance(after, str) or before == after:
        return None
    if "\n" not in before + after and len(before) + len(after) < 160:
        return None
    hunks = list(difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=1))[2:]  # no ---/+++
    if len(hunks) > lines:
        hunks = hunks[:lines] + [f"… ({len(hunks) - lines} more diff lines)"]
    return "\n".join(hunks)


def diff_size(diff: str) -> str:
    """How big a `text_diff` is, for a one-line summary: `+2 −1 lines`."""
    added = sum(1 for line in diff.splitlines() if line.startswith("+"))
    removed = sum(1 for line in diff.splitlines() if line.startswith("-"))
    return f"+{added} −{removed} line{'s' if added + removed != 1 else ''}"
