"""What a trial's workdir held when the agent started: the base of the workspace model.

trialrun makes each trial's workdir, so it can know what a script held when the agent ran it: the text files of
the workdir are read once, after setup and before invoke (`TrialContext.snapshot_workspace`, which the runner calls
when a grader of the case reads the workspace), and the command matcher (`_shell`) applies every write the
trajectory shows on top of them. The snapshot is bounded (files, bytes per file, bytes in all); what it leaves out
is named with the reason, so a grader can say why it could not know a file's content. A regular file left out
(binary, too large, past the limits) and a symbolic link leading out still get a fingerprint (`fingerprints`: a
digest of what was read, else its size and modification time; a link's target), so the workspace diff
(`workspace_diff`) can tell whether the agent changed it.

Only the standard library: the runner imports this for every trial that wants a snapshot.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import weakref
from collections.abc import Iterable, Mapping

__all__ = ["Workspace", "WorkspaceToken", "snapshot", "MAX_FILES", "MAX_FILE_BYTES", "MAX_BYTES", "SKIPPED_FOLDERS"]

#: Files read at most (in walk order: the top of the tree first, names sorted).
MAX_FILES = 2000
#: A file larger than this is left out (scripts are small; a data file is not what an agent runs).
MAX_FILE_BYTES = 512 * 1024
#: Bytes read in all; files past it are left out.
MAX_BYTES = 8 * 1024 * 1024
#: Folders not read at all (version-control internals, installed packages, caches): named as left out.
SKIPPED_FOLDERS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox",
                             ".mypy_cache", ".pytest_cache", ".ruff_cache"})


class Workspace:
    """The workdir's text files as they stood at the start of a trial.

    `root`: the workdir's absolute path (None while the trial has not created it: an empty workdir); `files`:
    relative POSIX path -> text; `left_out`: relative path of a file or folder -> why it was not read (binary,
    too large, past the limits, a skipped folder, unreadable); `folders`: the relative folders that existed;
    `fingerprints`: for each regular file left out and each symbolic link leading out, (kind, size, digest): kind
    "binary", "large" or "link", digest a sha256 of what was read or `size:mtime_ns` of what was not (a link:
    its target).
    """

    __slots__ = ("root", "real_root", "files", "left_out", "folders", "limits", "token", "fingerprints", "_names",
                 "__weakref__")

    def __init__(self, root: str | os.PathLike[str] | None, files: Mapping[str, str] | None = None,
                 left_out: Mapping[str, str] | None = None, folders: Iterable[str] = (),
                 limits: tuple[int, int, int] = (MAX_FILES, MAX_FILE_BYTES, MAX_BYTES),
                 fingerprints: Mapping[str, tuple[str, int, str]] | None = None) -> None:
        self.root: str | None = None
        self.real_root: str | None = None
        self.files: dict[str, str] = dict(files or {})
        self.left_out: dict[str, str] = dict(left_out or {})
        self.fingerprints: dict[str, tuple[str, int, str]] = dict(fingerprints or {})
        self.folders: frozenset[str] = frozenset(folders)
        self.limits = limits
        self.token = WorkspaceToken(self)
        self._names: dict[str, list[str]] | None = None
        if root is not None:
            self.set_root(root)

    def set_root(self, root: str | os.PathLike[str]) -> None:
        """Where the workdir is (for a snapshot taken before the trial created it: it was empty then)."""
        self.root = posixpath.normpath(os.fspath(root))
        self.real_root = posixpath.normpath(os.path.realpath(self.root))

    def __repr__(self) -> str:
        return f"Workspace({self.root!r}, {len(self.files)} files, {len(self.left_out)} left out)"

    @property
    def complete(self) -> bool:
        """Nothing was left out: a relative path that is not in `files` did not exist at the start."""
        return not self.left_out

    def relative(self, path: str) -> str | None:
        """`path` (normalised) relative to the workdir when it is inside it, else None. A relative path is taken as
        relative to the workdir (the agent's folder)."""
        if not path.startswith("/"):
            return None if path == ".." or path.startswith(("../", "~")) else path
        for root in (self.root, self.real_root):
            if root and (path == root or path.startswith(root.rstrip("/") + "/")):
                rest = path[len(root):].lstrip("/")
                return rest or "."
        return None

    def why_left_out(self, rel: str) -> str | None:
        """Why `rel` (or a folder above it) was not read, or None."""
        if not self.left_out:
            return None
        if rel in self.left_out:
            return self.left_out[rel]
        parent = rel
        while "/" in parent:
            parent = parent.rsplit("/", 1)[0]
            if parent in self.left_out:
                return self.left_out[parent]
        return None

    def named(self, name: str) -> list[str]:
        """The files read whose base name is `name` (for a command run from a folder that is not followed)."""
        if self._names is None:
            names: dict[str, list[str]] = {}
            for rel in self.files:
                names.setdefault(rel.rsplit("/", 1)[-1], []).append(rel)
            self._names = names
        return self._names.get(name, [])

    def describe(self) -> str:
        """What was read and what was left out, for a reason or a report."""
        size = sum(len(text) for text in self.files.values())
        text = f"{len(self.files)} text file{'s' if len(self.files) != 1 else ''} ({size} characters)"
        if self.left_out:
            shown = ", ".join(f"{path} ({why})" for path, why in list(self.left_out.items())[:3])
            more = f" and {len(self.left_out) - 3} more" if len(self.left_out) > 3 else ""
            text += f"; left out: {shown}{more}"
        return text


class WorkspaceToken:
    """Stands for a Workspace in the matcher's caches (a command's analysis is cached by what it can see): a weak
    reference, so the caches never keep a trial's files alive after the trial."""

    __slots__ = ("_ref", "__weakref__")

    def __init__(self, workspace: Workspace) -> None:
        self._ref = weakref.ref(workspace)

    def get(self) -> Workspace | None:
        return self._ref()

    def __repr__(self) -> str:
        return f"WorkspaceToken({self.get()!r})"


def snapshot(root: str | os.PathLike[str], *, max_files: int = MAX_FILES, max_file_bytes: int = MAX_FILE_BYTES,
             max_bytes: int = MAX_BYTES) -> Workspace:
    """Read the text files under `root` (a missing `root` is an empty workdir). Symbolic links are not followed
    out of the folder: a link is read only when it points at a file inside it."""
    base = os.fspath(root)
    files: dict[str, str] = {}
    left_out: dict[str, str] = {}
    folders: list[str] = []
    total = 0
    real_base = os.path.realpath(base)
    if not os.path.isdir(base):
        return Workspace(base, limits=(max_files, max_file_bytes, max_bytes))
    fingerprints: dict[str, tuple[str, int, str]] = {}
    for top, dirs, names in os.walk(base):
        rel_top = os.path.relpath(top, base).replace(os.sep, "/")
        rel_top = "" if rel_top == "." else rel_top + "/"
        dirs.sort()
        kept = []
        for name in dirs:
            rel = rel_top + name
            if name in SKIPPED_FOLDERS:
                left_out[rel] = "a folder not read (version control, packages or caches)"
            elif os.path.islink(os.path.join(top, name)):
                left_out[rel] = "a symbolic link to a folder"
                fingerprints[rel] = _link_print(os.path.join(top, name))
            else:
                kept.append(name)
                folders.append(rel)
        dirs[:] = kept
        for name in sorted(names):
            rel = rel_top + name
            path = os.path.join(top, name)
            if len(files) >= max_files:
                left_out[rel] = f"past the snapshot's limit of {max_files} files"
                _stat_print(path, fingerprints, rel, real_base)
                continue
            why = _unreadable(path, real_base, max_file_bytes, max_bytes, total)
            if why is not None:
                left_out[rel] = why
                _stat_print(path, fingerprints, rel, real_base)
                continue
            try:
                with open(path, "rb") as handle:
                    data = handle.read(max_file_bytes + 1)
            except OSError as exc:
                left_out[rel] = f"unreadable ({exc.strerror or exc})"
                continue
            if len(data) > max_file_bytes:
                left_out[rel] = f"larger than the snapshot's limit of {max_file_bytes} bytes per file"
                _stat_print(path, fingerprints, rel, real_base)
                continue
            text = None if b"\0" in data else _utf8(data)
            if text is None:
                left_out[rel] = "binary" if b"\0" in data else "binary (not UTF-8 text)"
                fingerprints[rel] = ("binary", len(data), hashlib.sha256(data).hexdigest())
                continue
            files[rel] = text
            total += len(data)
    return Workspace(base, files, left_out, folders, (max_files, max_file_bytes, max_bytes), fingerprints)


def _utf8(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _link_print(path: str) -> tuple[str, int, str]:
    try:
        return ("link", 0, os.readlink(path))
    except OSError as exc:
        return ("link", 0, f"unreadable link ({exc.strerror or exc})")


def _stat_print(path: str, fingerprints: dict[str, tuple[str, int, str]], rel: str, real_base: str) -> None:
    """The fingerprint of a file that was not read: a link leading out by its target, a regular file by its size
    and modification time (nothing for anything else: a FIFO or a device is named in `left_out` only)."""
    import stat

    if os.path.islink(path) and not _inside(os.path.realpath(path), real_base):
        fingerprints[rel] = _link_print(path)
        return
    try:
        info = os.stat(path)
    except OSError:
        return
    if stat.S_ISREG(info.st_mode):
        fingerprints[rel] = ("large", info.st_size, f"{info.st_size}:{info.st_mtime_ns}")


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _unreadable(path: str, real_base: str, max_file_bytes: int, max_bytes: int, total: int) -> str | None:
    """Why a file is not read before opening it (not a regular file, a link out of the folder, too large)."""
    import stat

    try:
        if os.path.islink(path):
            target = os.path.realpath(path)
            if not (target == real_base or target.startswith(real_base.rstrip(os.sep) + os.sep)):
                return "a symbolic link out of the workdir"
        info = os.stat(path)
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_size > max_file_bytes:
        return f"larger than the snapshot's limit of {max_file_bytes} bytes per file"
    if total + info.st_size > max_bytes:
        return f"past the snapshot's limit of {max_bytes} bytes in all"
    return None
