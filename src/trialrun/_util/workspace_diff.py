"""The workspace diff: the files an agent left in its trial's workdir, against what the workdir held when it started.

For a coding agent the outcome is the files. trialrun makes each trial's workdir and reads it once before the agent
starts (`workspace.snapshot`), so after the agent ends it reads it again the same way and compares: every file
added, changed or removed, text files with a unified diff (`--- a/app.py` / `+++ b/app.py`, three lines of
context, `\\ No newline at end of file` where a file ends without one, as `patch` and `git apply` read it).

The same rules as every reader of a workdir: symbolic links are never followed out of it, only regular files are
read, version-control internals and caches (`workspace.SKIPPED_FOLDERS`: `.git`, `node_modules`, `__pycache__`,
...) are not compared and are named as such. A file the snapshot does not read (binary, larger than its limit) is
compared by its fingerprint (a digest of its bytes, or its size and modification time) and NAMED, never inlined.

Bounded, so a trial that writes a megabyte of generated code does not make a result file of it: each file's diff
keeps at most `FILE_CHARS` characters, a trial's diffs `TRIAL_CHARS` in all, and at most `MAX_LISTED` changed files
are listed (the rest are counted); each cut says what it left out. The paths of the unchanged files are kept too (at
most `MAX_UNCHANGED`), so a stored diff alone can tell which files were there after the agent: `trialrun regrade`
re-runs the file graders on it.

Only the standard library; the runner calls `workspace_diff` off the event loop, once a trial, for a trial that
had a workdir.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Literal

from .workspace import Workspace

__all__ = ["FileChange", "WorkspaceDiff", "workspace_diff", "FILE_CHARS", "TRIAL_CHARS", "MAX_LISTED", "MAX_UNCHANGED",
           "NO_NEWLINE"]

#: The longest diff kept for one file (characters), and for all files of a trial together.
FILE_CHARS = 20_000
TRIAL_CHARS = 200_000
#: Changed files listed at most (the others are counted in `WorkspaceDiff.cut`).
MAX_LISTED = 500
#: Unchanged files named at most.
MAX_UNCHANGED = 2_000
#: The line a unified diff puts after a last line that has no newline.
NO_NEWLINE = "\\ No newline at end of file\n"

Change = Literal["added", "changed", "removed"]


@dataclass(slots=True)
class FileChange:
    """One file the agent added, changed or removed. `kind`: "text" (with a unified `diff`), "binary", "large"
    (larger than the snapshot reads: compared by size and modification time), "link" (a symbolic link leading out
    of the workdir, by its target). `note` says why there is no diff, or what of it was cut."""

    path: str
    change: Change
    kind: str = "text"
    size_before: int | None = None
    size_after: int | None = None
    diff: str | None = None
    note: str | None = None

    @property
    def whole(self) -> bool:
        """The diff is all there (nothing cut, and a text file's)."""
        return self.diff is not None and self.note is None


@dataclass(slots=True)
class WorkspaceDiff:
    """What the agent left: `files` changed (added, changed, removed; sorted by path), `unchanged` (the paths of the
    files examined and found the same), `examined` (files compared in all), `not_examined` (paths not compared, and
    why: a skipped folder, a FIFO, an unreadable file), and `cut` (what the listing's bounds left out)."""

    files: list[FileChange] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    examined: int = 0
    not_examined: dict[str, str] = field(default_factory=dict)
    cut: str | None = None
    unchanged_cut: int = 0

    def get(self, path: str) -> FileChange | None:
        """The change to `path` (a relative POSIX path), or None when it did not change (or was not examined)."""
        return next((item for item in self.files if item.path == path), None)

    @property
    def complete(self) -> bool:
        """Every changed file is listed and every unchanged one named: the diff alone says what was there after."""
        return self.cut is None and not self.unchanged_cut

    def count(self, change: Change) -> int:
        return sum(1 for item in self.files if item.change == change)

    def summary(self) -> str:
        """One line: what changed, of how many files examined."""
        if not self.files:
            text = f"no file changed ({self.examined} file{'s' if self.examined != 1 else ''} examined)"
        else:
            parts = [f"{n} {change}" for change in ("added", "changed", "removed") if (n := self.count(change))]
            text = f"{', '.join(parts)} of {self.examined} file{'s' if self.examined != 1 else ''} examined"
        if self.cut:
            text += f"; {self.cut}"
        return text

    def unified(self) -> str:
        """Every diff of the trial in one text (as `git diff` would print it), binary and large files named."""
        parts = []
        for item in self.files:
            if item.diff:
                parts.append(item.diff if item.diff.endswith("\n") else item.diff + "\n")
            if item.note:
                parts.append(f"# {item.path}: {item.note}\n")
        if self.cut:
            parts.append(f"# {self.cut}\n")
        return "".join(parts)

    def after(self, path: str) -> bool | None:
        """Whether `path` was a file after the agent ended, by this diff alone (None: it cannot say)."""
        item = self.get(path)
        if item is not None:
            return item.change != "removed"
        if path in self.unchanged:
            return True
        return False if self.complete else None

    def text_after(self, path: str) -> str | None:
        """The whole text of `path` after the agent ended, where this diff alone holds it: a text file the agent
        added whose diff was not cut (a changed file's diff shows only what changed). None otherwise."""
        item = self.get(path)
        if item is None or item.change != "added" or item.kind != "text" or not item.whole or item.diff is None:
            return None
        out: list[str] = []
        for line in item.diff.splitlines(keepends=True)[2:]:  # after the --- and +++ lines
            if line.startswith("+"):
                out.append(line[1:])
            elif line == NO_NEWLINE and out:
                out[-1] = out[-1][:-1] if out[-1].endswith("\n") else out[-1]
        return "".join(out)


def workspace_diff(before: Workspace, after: Workspace, *, file_chars: int = FILE_CHARS,
                   trial_chars: int = TRIAL_CHARS, max_listed: int = MAX_LISTED) -> WorkspaceDiff:
    """The files added, changed and removed between two snapshots of one workdir (the bounds as the module says)."""
    paths = sorted(set(before.files) | set(before.fingerprints) | set(after.files) | set(after.fingerprints))
    diff = WorkspaceDiff(examined=len(paths))
    for side in (before, after):
        for rel, why in side.left_out.items():
            if rel not in side.fingerprints and rel not in diff.not_examined:
                diff.not_examined[rel] = why
    budget = trial_chars
    more = 0
    for rel in paths:
        change = _change(rel, before, after)
        if change is None:
            if len(diff.unchanged) < MAX_UNCHANGED:
                diff.unchanged.append(rel)
            else:
                diff.unchanged_cut += 1
            continue
        if len(diff.files) >= max_listed:
            more += 1
            continue
        item = _item(rel, change, before, after)
        if item.diff is not None:
            budget = _bound(item, file_chars, budget)
        diff.files.append(item)
    if more:
        diff.cut = f"{more} more changed file{'s' if more != 1 else ''} not listed (the limit is {max_listed})"
    return diff


def _change(rel: str, before: Workspace, after: Workspace) -> Change | None:
    was = rel in before.files or rel in before.fingerprints
    now = rel in after.files or rel in after.fingerprints
    if not was:
        return "added"
    if not now:
        return "removed"
    if rel in before.files and rel in after.files:
        return None if before.files[rel] == after.files[rel] else "changed"
    return None if before.fingerprints.get(rel) == after.fingerprints.get(rel) else "changed"


def _size(rel: str, side: Workspace) -> int | None:
    if rel in side.files:
        return len(side.files[rel].encode("utf-8"))
    print_ = side.fingerprints.get(rel)
    return None if print_ is None or print_[0] == "link" else print_[1]


def _kind(rel: str, side: Workspace) -> str:
    return "text" if rel in side.files else side.fingerprints.get(rel, ("text", 0, ""))[0]


def _item(rel: str, change: Change, before: Workspace, after: Workspace) -> FileChange:
    """One changed file: a text file with its unified diff, anything else named with what it is."""
    old_kind = None if change == "added" else _kind(rel, before)
    new_kind = None if change == "removed" else _kind(rel, after)
    item = FileChange(rel, change, size_before=_size(rel, before), size_after=_size(rel, after))
    if old_kind in (None, "text") and new_kind in (None, "text"):
        item.diff = unified_text(before.files.get(rel, ""), after.files.get(rel, ""), rel, change)
        return item
    shown = after if new_kind not in (None, "text") else before
    kind, size, target = shown.fingerprints[rel]
    item.kind = kind
    what = {"binary": f"a binary file ({size:,} bytes)",
            "large": f"a file of {size:,} bytes, more than the {shown.limits[1]:,} bytes a file is read up to",
            "link": f"a symbolic link leading out of the workdir (to {target})"}.get(kind, "a file")
    item.note = f"{what}: named, not inlined"
    if old_kind is not None and new_kind is not None and old_kind != new_kind:
        item.note += f" (it was {'a text file' if old_kind == 'text' else old_kind} before)"
    return item


def unified_text(old: str, new: str, rel: str, change: Change = "changed") -> str:
    """A unified diff of one file (three lines of context; `/dev/null` for an added or removed file's other side;
    a last line without a newline marked as `patch` marks it)."""
    import difflib  # here: only a trial with a changed text file needs it

    lines = []
    for line in difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                     "/dev/null" if change == "added" else f"a/{rel}",
                                     "/dev/null" if change == "removed" else f"b/{rel}", n=3):
        lines.append(line if line.endswith("\n") else line + "\n" + NO_NEWLINE)
    return "".join(lines)


def _bound(item: FileChange, file_chars: int, budget: int) -> int:
    """Cut `item`'s diff to the per-file limit and what is left of the trial's; the budget left after it."""
    text = item.diff or ""
    limit = min(file_chars, budget)
    if len(text) <= limit:
        return budget - len(text)
    if limit < 200:
        item.diff = None
        item.note = (f"its diff ({len(text):,} characters) is not inlined: the trial's diffs reached their limit of "
                     f"{TRIAL_CHARS:,} characters")
        return budget
    end = text.rfind("\n", 0, limit) + 1 or limit
    item.diff = text[:end]
    why = "the limit per file" if file_chars <= budget else "what was left of the trial's limit"
    item.note = f"its diff is {len(text):,} characters; the first {end:,} are kept ({why})"
    return budget - end


def digest(text: str) -> str:
    """A short digest of a text (to tell two trials' diffs apart at a glance)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
