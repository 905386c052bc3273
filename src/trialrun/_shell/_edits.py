"""The exact semantics of the agents' string-replacement edit tools, as pure functions of a file's text.

- Claude Code's `Edit(file_path, old_string, new_string, replace_all)` and its `MultiEdit(file_path, edits)`
  (edits applied one after another): `old_string` must occur once (or `replace_all`), else the tool refuses; an
  empty `new_string` removing a line takes its newline with it; an `old_string` found only after normalising
  quotes is replaced by the file's own spelling.
- opencode's `edit(filePath, oldString, newString, replaceAll)`: an exact unique match, or every match with
  `replaceAll`; otherwise it tries a chain of looser matchers (trimmed lines, whitespace, indentation, ...), so what
  it then does is not known here.
- pi's `edit(path, edits=[{oldText, newText}])`: every `oldText` matched against the ORIGINAL text, unique and not
  overlapping, all replaced at once; a match found only after its fuzzy normalisation rewrites the whole file
  normalised.

`Refused` means the tool refuses the edit, so the file is unchanged; `Unknowable` that what the file holds
afterwards cannot be told (the tool's looser matching may or may not apply it). Generic edit tools (an unknown
agent's `edit_file(path, old_str, new_str)`) are taken at their word only for an exact unique match.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Sequence

__all__ = ["STYLES", "Refused", "Unknowable", "original_edits", "sequential_edits", "string_edit"]

#: The agents whose edit semantics are modelled: "claude" (snake_case arguments), "opencode" (camelCase, with
#: replaceAll), "pi" (edits of oldText/newText against the original), "generic" (anything else).
STYLES = ("claude", "opencode", "pi", "generic")


class Refused(Exception):
    """The edit tool refuses the edit: the file is left as it was."""


class Unknowable(Exception):
    """What the file holds after the edit cannot be told."""


_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


def _count(text: str, old: str) -> int:
    return text.count(old) if old else 0


def string_edit(text: str, old: str, new: str, replace_all: bool = False, style: str = "generic") -> str:
    """`text` after replacing `old` with `new` as the edit tool of `style` does (see the module docstring)."""
    if old == new:
        raise Refused("old and new text are the same")
    crlf = style == "claude" and "\r\n" in text
    if crlf:  # Claude Code edits in LF and writes the file back with its own line endings
        text = text.replace("\r\n", "\n")
    count = _count(text, old)
    if count == 0:
        if style == "claude" and old and _count(text.translate(_QUOTES), old.translate(_QUOTES)):
            raise Unknowable("its old_string matches only once quotes are normalised (Claude Code may still apply it)")
        if style in ("claude", "pi"):
            raise Refused("old text is not in the file")
        raise Unknowable("its old text is not in the file as trialrun knows it (the tool's looser matching may still "
                         "have found something)")
    if count > 1 and not replace_all:
        if style == "claude":
            raise Refused(f"old_string occurs {count} times and replace_all is false")
        raise Unknowable(f"its old text occurs {count} times and replace-all is not set (the tool's looser matching "
                         "may have picked one)")
    if style == "claude" and new == "" and not old.endswith("\n") and old + "\n" in text:
        old += "\n"  # Claude Code deletes the line's newline with it
    result = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    return result.replace("\n", "\r\n") if crlf else result


def sequential_edits(text: str, edits: Sequence[tuple[str, str, bool]], style: str = "claude") -> str:
    """Claude Code's MultiEdit: each (old, new, replace_all) applied to the result of the one before; the whole call
    is refused when one edit is (or when an old_string is part of an earlier edit's new_string)."""
    current = text
    written: list[str] = []
    for old, new, replace_all in edits:
        stripped = old.rstrip("\n")
        if stripped and any(stripped in earlier for earlier in written):
            raise Refused("an old_string is part of an earlier edit's new_string")
        if old == "":  # Claude Code: an empty old_string writes new_string into an empty (or new) file
            if current.strip():
                raise Refused("old_string is empty but the file is not")
            current = new
        else:
            current = string_edit(current, old, new, replace_all, style)
        written.append(new)
    if current == text:
        raise Refused("the edits leave the file as it was")
    return current


def _fuzzy(text: str) -> str:
    """pi's fuzzy normalisation (NFKC, trailing whitespace of each line, smart quotes, dashes, special spaces)."""
    text = unicodedata.normalize("NFKC", text)
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    text = re.sub("[\u2018\u2019\u201a\u201b]", "'", text)
    text = re.sub("[\u201c\u201d\u201e\u201f]", '"', text)
    text = re.sub("[\u2010\u2011\u2012\u2013\u2014\u2015\u2212]", "-", text)
    return re.sub("[\u00a0\u2002-\u200a\u202f\u205f\u3000]", " ", text)


def original_edits(text: str, edits: Sequence[tuple[str, str]]) -> str:
    """pi's edit: every (oldText, newText) matched in the original text (line endings as LF, a BOM aside), each
    unique and none overlapping, then all replaced; refused when one is missing, repeated or overlapping."""
    if not edits:
        raise Refused("no edits given")
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    body = text[len(bom):]
    first_lf, first_crlf = body.find("\n"), body.find("\r\n")
    ending = "\r\n" if first_lf != -1 and first_crlf != -1 and first_crlf < first_lf else "\n"  # pi's own test
    normal = body.replace("\r\n", "\n").replace("\r", "\n")
    pairs = [(old.replace("\r\n", "\n").replace("\r", "\n"), new.replace("\r\n", "\n").replace("\r", "\n"))
             for old, new in edits]
    if any(not old for old, _ in pairs):
        raise Refused("an oldText is empty")
    if any(old not in normal for old, _ in pairs):
        if all(_fuzzy(old) in _fuzzy(normal) for old, _ in pairs):
            raise Unknowable("an oldText matches only after pi's fuzzy normalisation, which rewrites the whole file")
        raise Refused("an oldText is not in the file")
    fuzzy_text = _fuzzy(normal)
    spans: list[tuple[int, int, str]] = []
    for old, new in pairs:
        if fuzzy_text.count(_fuzzy(old)) > 1 or normal.count(old) > 1:
            raise Refused("an oldText occurs more than once")
        start = normal.index(old)
        spans.append((start, start + len(old), new))
    spans.sort()
    for (_a_start, a_end, _), (b_start, _, _) in itertools.pairwise(spans):
        if a_end > b_start:
            raise Refused("two edits overlap")
    result = normal
    for start, end, new in reversed(spans):
        result = result[:start] + new + result[end:]
    if result == normal:
        raise Refused("the edits leave the file as it was")
    return bom + (result.replace("\n", "\r\n") if ending == "\r\n" else result)
