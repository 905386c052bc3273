"""Patches, parsed and applied to known text: Codex's `*** Begin Patch` format (its `apply_patch`, also opencode's
for GPT models) and unified diffs (`patch`, `git apply`, diff-taking edit tools).

Codex's format, as its apply-patch crate reads it: hunks `*** Add File: P` (then `+` lines), `*** Delete File: P`
and `*** Update File: P` (optionally `*** Move to: Q`) with chunks of ` `/`-`/`+` lines, each optionally after an
`@@ context` line that is looked for first; a chunk's old lines are searched from where the last chunk ended,
exactly, then ignoring trailing whitespace, then ignoring surrounding whitespace (a looser Unicode-punctuation
match Codex also tries is not followed: `Unknowable`). An updated file always ends with a newline. A heredoc
wrapper (`<<'EOF' ... EOF`) around the patch is accepted, as Codex's lenient mode does.

Unified diffs: `--- a/P` / `+++ b/P` headers and `@@ -l,n +l,n @@` hunks; a hunk applies where its old lines
match exactly, nearest to its stated line (a match only `patch`'s fuzz would find is `Unknowable`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ._edits import Unknowable

__all__ = [
    "CODEX_SHELL_TOOLS",
    "CodexHunk",
    "DiffFile",
    "PatchError",
    "apply_codex_update",
    "apply_unified",
    "codex_intercepted",
    "is_codex_patch",
    "looks_like_unified_diff",
    "parse_codex_patch",
    "parse_unified_diff",
]


class PatchError(Exception):
    """The patch cannot be parsed or does not apply: the tool fails (what it changed before failing is not known)."""


@dataclass
class _Chunk:
    context: str | None
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    end_of_file: bool = False


@dataclass
class CodexHunk:
    """One file of a Codex patch: kind "add", "delete" or "update" (with `move_to` and `chunks`)."""

    kind: str
    path: str
    contents: str = ""
    move_to: str | None = None
    chunks: list[_Chunk] = field(default_factory=list)


def is_codex_patch(text: str) -> bool:
    return "*** Begin Patch" in text


_INTERCEPTED_RE = re.compile(
    r"\A\s*(?:cd\s+(?P<dir>'[^']*'|\"[^\"]*\"|[^\s;&|<>'\"]+)\s*&&\s*)?(?:apply_patch|applypatch)\s*<<-?\s*"
    r"(?P<quote>['\"]?)(?P<delimiter>[A-Za-z_]\w*)(?P=quote)[ \t]*\n(?P<body>.*?)\n(?P=delimiter)[ \t]*\n?\s*\Z", re.DOTALL)

#: The shell tools of Codex, which applies a patch given as their whole command itself (no program runs).
CODEX_SHELL_TOOLS = frozenset({"exec_command", "shell", "local_shell", "shell_command"})


def codex_intercepted(command: object) -> tuple[str, str] | None:
    """(patch, folder) when Codex applies `command` itself: `apply_patch <<'EOF' ... EOF` as the whole command, or
    `cd DIR && ` before it, or the argv `["apply_patch", PATCH]` (as its apply-patch crate recognises them). Anywhere
    else in a command line `apply_patch` is a program like any other (and usually not there)."""
    if isinstance(command, (list, tuple)):
        if len(command) == 2 and command[0] in ("apply_patch", "applypatch") and isinstance(command[1], str):
            return command[1], ""
        if len(command) == 3 and str(command[0]).rsplit("/", 1)[-1] in ("bash", "zsh", "sh") and command[1] in (
                "-lc", "-c"):
            command = command[2]
        else:
            return None
    if not isinstance(command, str):
        return None
    match = _INTERCEPTED_RE.match(command)
    if match is None:
        return None
    folder = match.group("dir") or ""
    return match.group("body"), folder.strip("'\"")


def parse_codex_patch(text: str) -> list[CodexHunk]:
    """The hunks of a Codex patch; PatchError when Codex would not accept it."""
    lines = text.strip().splitlines()
    if len(lines) >= 4 and lines[0] in ("<<EOF", "<<'EOF'", '<<"EOF"') and lines[-1].endswith("EOF"):
        lines = lines[1:-1]
    if not lines or lines[0].strip() != "*** Begin Patch":
        raise PatchError("the first line of the patch must be '*** Begin Patch'")
    if lines[-1].strip() != "*** End Patch":
        raise PatchError("the last line of the patch must be '*** End Patch'")
    body = lines[1:-1]
    hunks: list[CodexHunk] = []
    i = 0
    while i < len(body):
        head = body[i].strip()
        if head.startswith("*** Add File: "):
            hunk = CodexHunk("add", head[len("*** Add File: "):])
            i += 1
            added: list[str] = []
            while i < len(body) and body[i].startswith("+"):
                added.append(body[i][1:] + "\n")
                i += 1
            hunk.contents = "".join(added)
        elif head.startswith("*** Delete File: "):
            hunk = CodexHunk("delete", head[len("*** Delete File: "):])
            i += 1
        elif head.startswith("*** Update File: "):
            hunk = CodexHunk("update", head[len("*** Update File: "):])
            i += 1
            if i < len(body) and body[i].startswith("*** Move to: "):
                hunk.move_to = body[i][len("*** Move to: "):]
                i += 1
            i = _update_chunks(body, i, hunk)
        else:
            raise PatchError(f"{head!r} is not a valid hunk header")
        hunks.append(hunk)
    return hunks


def _update_chunks(body: Sequence[str], i: int, hunk: CodexHunk) -> int:
    while i < len(body):
        line = body[i]
        if not line.strip():
            i += 1
            continue
        if line.startswith("*"):
            break
        chunk = _Chunk(None)
        if line == "@@":
            i += 1
        elif line.startswith("@@ "):
            chunk.context = line[3:]
            i += 1
        elif hunk.chunks:
            raise PatchError(f"expected the update hunk to start with a @@ context marker, got {line!r}")
        parsed = 0
        while i < len(body):
            line = body[i]
            if line == "*** End of File":
                if not parsed:
                    raise PatchError("update hunk does not contain any lines")
                chunk.end_of_file = True
                i += 1
                break
            if line == "":
                chunk.old.append("")
                chunk.new.append("")
            elif line[0] == " ":
                chunk.old.append(line[1:])
                chunk.new.append(line[1:])
            elif line[0] == "+":
                chunk.new.append(line[1:])
            elif line[0] == "-":
                chunk.old.append(line[1:])
            else:
                if not parsed:
                    raise PatchError(f"unexpected line in update hunk: {line!r}")
                break
            parsed += 1
            i += 1
        if not parsed:
            raise PatchError("update hunk does not contain any lines")
        hunk.chunks.append(chunk)
    if not hunk.chunks:
        raise PatchError(f"update file hunk for path {hunk.path!r} is empty")
    return i


def _exact(a: str, b: str) -> bool:
    return a == b


def _right(a: str, b: str) -> bool:
    return a.rstrip() == b.rstrip()


def _both(a: str, b: str) -> bool:
    return a.strip() == b.strip()


_PASSES = (_exact, _right, _both)


def _find(lines: Sequence[str], pattern: Sequence[str], first: int) -> int | None:
    for same in _PASSES:  # each pass over every position before a looser one, as Codex's seek_sequence does
        for k in range(first, len(lines) - len(pattern) + 1):
            if all(same(lines[k + j], pattern[j]) for j in range(len(pattern))):
                return k
    return None


def _seek(lines: Sequence[str], pattern: Sequence[str], start: int, end_of_file: bool) -> int | None:
    """Where `pattern` starts in `lines` at or after `start`, as Codex's seek_sequence finds it; Unknowable where
    only its looser Unicode-punctuation pass, or a newer Codex's fall-back for an end-of-file chunk, could."""
    if not pattern:
        return start
    if len(pattern) > len(lines):
        return None
    found = _find(lines, pattern, len(lines) - len(pattern) if end_of_file else start)
    if found is not None:
        return found
    if end_of_file and _find(lines, pattern, start) is not None:
        raise Unknowable("an end-of-file chunk matches only before the end (Codex versions differ on that)")
    if any(ord(ch) > 127 for line in (*lines, *pattern) for ch in line):
        raise Unknowable("the patch's context matches only loosely (Unicode punctuation), as Codex may still apply it")
    return None


def apply_codex_update(text: str, hunk: CodexHunk) -> str:
    """A file's text after an Update hunk; PatchError where Codex's apply_patch fails."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    replacements: list[tuple[int, int, list[str]]] = []
    index = 0
    for chunk in hunk.chunks:
        if chunk.context is not None:
            found = _seek(lines, [chunk.context], index, False)
            if found is None:
                raise PatchError(f"failed to find context {chunk.context!r} in {hunk.path}")
            index = found + 1
        if not chunk.old:
            at = len(lines) - 1 if lines and lines[-1] == "" else len(lines)
            replacements.append((at, 0, list(chunk.new)))
            continue
        pattern, new = list(chunk.old), list(chunk.new)
        found = _seek(lines, pattern, index, chunk.end_of_file)
        if found is None and pattern and pattern[-1] == "":
            pattern = pattern[:-1]
            if new and new[-1] == "":
                new = new[:-1]
            found = _seek(lines, pattern, index, chunk.end_of_file)
        if found is None:
            raise PatchError(f"failed to find the expected lines in {hunk.path}")
        replacements.append((found, len(pattern), new))
        index = found + len(pattern)
    replacements.sort(key=lambda r: r[0])
    for start, length, new in reversed(replacements):
        lines[start:start + length] = new
    if not lines or lines[-1] != "":
        lines.append("")
    return "\n".join(lines)


# -- unified diffs --------------------------------------------------------------------------------------------------

_HUNK_RE = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class DiffFile:
    """One file of a unified diff: its old and new paths (as written, with any `a/` prefix) and hunks of
    (old start line, old lines, new lines)."""

    old_path: str
    new_path: str
    hunks: list[tuple[int, list[str], list[str]]] = field(default_factory=list)
    no_newline: bool = False


def looks_like_unified_diff(text: str) -> bool:
    return bool(re.search(r"^--- .*\n\+\+\+ .*\n@@ -\d", text, re.MULTILINE))


def parse_unified_diff(text: str) -> list[DiffFile]:
    """The files of a unified diff; PatchError for a diff that is cut short or malformed."""
    files: list[DiffFile] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old = lines[i][4:].split("\t", 1)[0].strip()
            new = lines[i + 1][4:].split("\t", 1)[0].strip()
            current = DiffFile(old, new)
            files.append(current)
            i += 2
            while i < len(lines) and lines[i].startswith("@@"):
                match = _HUNK_RE.match(lines[i])
                if match is None:
                    raise PatchError(f"malformed hunk header {lines[i]!r}")
                old_count = int(match.group(2)) if match.group(2) is not None else 1
                new_count = int(match.group(4)) if match.group(4) is not None else 1
                i += 1
                before: list[str] = []
                after: list[str] = []
                while i < len(lines) and (len(before) < old_count or len(after) < new_count):
                    line = lines[i]
                    if line.startswith("\\"):
                        current.no_newline = True
                    elif line.startswith(" ") or line == "":
                        before.append(line[1:])
                        after.append(line[1:])
                    elif line.startswith("-"):
                        before.append(line[1:])
                    elif line.startswith("+"):
                        after.append(line[1:])
                    else:
                        raise PatchError(f"unexpected line in a hunk: {line!r}")
                    i += 1
                if len(before) != old_count or len(after) != new_count:
                    raise PatchError("a hunk is shorter than its header says")
                while i < len(lines) and lines[i].startswith("\\"):
                    current.no_newline = True
                    i += 1
                current.hunks.append((int(match.group(1)), before, after))
            continue
        i += 1
    if not files:
        raise PatchError("no file in the diff")
    return files


def apply_unified(text: str, diff: DiffFile) -> str:
    """A file's text after a unified diff's hunks, each where its old lines match exactly nearest its stated
    line; PatchError when one matches nowhere (Unknowable when `patch`'s fuzz might still place it)."""
    if diff.no_newline:
        raise Unknowable("the diff changes a missing final newline")
    lines = text.split("\n")
    trailing = bool(lines) and lines[-1] == ""
    if trailing:
        lines.pop()
    offset = 0
    for start, before, after in diff.hunks:
        want = max(start - 1 + offset, 0) if before else start + offset
        found = None
        for distance in range(len(lines) + 1):
            for at in (want - distance, want + distance):
                if 0 <= at <= len(lines) - len(before) and lines[at:at + len(before)] == before:
                    found = at
                    break
            if found is not None:
                break
        if found is None:
            raise Unknowable("a hunk's lines are not in the file as trialrun knows it (`patch` may apply it with fuzz)")
        lines[found:found + len(before)] = after
        offset += len(after) - len(before) + (found - want)
    return "\n".join(lines) + ("\n" if trailing or not text else "")
