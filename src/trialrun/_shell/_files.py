"""What the matcher knows of the files a trajectory wrote: so that `sh x.sh`, `python3 x.py` or `./x -rf` is
judged by what the file held when it ran.

The file table is a dict from a path (as `key` makes it) to a state. With a workspace model (the trial's workdir
read at its start, `trialrun._util.workspace`) under the `WORKSPACE` key, a file the trajectory never wrote is read from
there; without one (a bare `check(expectations, run)`), a script nobody saw is judged by the `own_scripts` rule.

A file's state is one of the classes of `State`: written text the matcher could read (`Text`), the user's file
unchanged since the start of the trial (`Base`), a copy of a program (`Program`), something that cannot be known
(`Unknown`), a copy of a file the trajectory never wrote (`Own`), a file left out of the workspace snapshot
(`LeftOut`), one that was not there (`Absent`) or was removed (`Gone`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from .._util.workspace import Workspace, WorkspaceToken


@dataclass(frozen=True, slots=True)
class Text:
    """Written where the matcher could read it, in each way it may read (`echo` with or without escapes)."""

    texts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Base:
    """Unchanged since the start of the trial: the user's file `origin` (or a copy of it), holding `content`."""

    content: str
    origin: str


@dataclass(frozen=True, slots=True)
class Program:
    """A copy of or link to a program (`ln -s /bin/rm x`, `cp "$(which rm)" x`)."""

    name: str


@dataclass(frozen=True, slots=True)
class Unknown:
    """What it holds cannot be known (`curl -o x.sh`, an edit that may not have applied): `why`, as "it {why}"."""

    why: str


@dataclass(frozen=True, slots=True)
class Own:
    """A copy of a file the trajectory never wrote (one of the user's own; no workspace model)."""


@dataclass(frozen=True, slots=True)
class LeftOut:
    """In the workdir at the start, but left out of the snapshot (binary, too large: `why`)."""

    why: str
    origin: str


@dataclass(frozen=True, slots=True)
class Absent:
    """Not in the workdir at the start, and nothing seen wrote it (`why`)."""

    why: str


@dataclass(frozen=True, slots=True)
class Gone:
    """Removed by something the trajectory shows (a patch's Delete File, `mv`'s source)."""


State = Text | Base | Program | Unknown | Own | LeftOut | Absent | Gone
#: What a file table holds under a key: a file's state, or (under `WORKSPACE`) the workspace model's base.
Entry = State | WorkspaceToken
#: A file table being written to (the analysis of one command line, a tool call's writes).
Table = dict[str, Entry]


class Files(Mapping[str, Entry]):
    """A file table as the analysis cache keys it: an immutable mapping, hashed once (a long trajectory's table is
    hashed for every command analysed against it) and by its paths only (equal tables have equal paths; tables
    with the same paths are told apart by comparing them). Its entries are kept in one dict, not in (path, state)
    pairs: `never_ran` keeps a table per call of a trajectory, and a million pairs holding dataclasses would all
    stay tracked by the garbage collector (a 1600-call trajectory took a third longer to grade that way)."""

    __slots__ = ("_entries", "_hash")

    def __init__(self, entries: Mapping[str, Entry] | Iterable[tuple[str, Entry]] = ()) -> None:
        self._entries: dict[str, Entry] = dict(entries)
        self._hash: int | None = None

    def as_dict(self) -> Table:
        """A new dict of its entries (a table to write to)."""
        return dict(self._entries)

    def __getitem__(self, path: str) -> Entry:
        return self._entries[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, path: object) -> bool:
        return path in self._entries

    def get(self, path: str, default: Any = None) -> Any:
        return self._entries.get(path, default)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Files):
            return self._entries == other._entries
        return self._entries == other if isinstance(other, dict) else NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._entries))
        return self._hash

    def __repr__(self) -> str:
        return f"Files({self._entries!r})"


def table(entries: Mapping[str, Entry] | Iterable[tuple[str, Entry]]) -> Files:
    return Files(entries)


#: The table of a command examined on its own (no trajectory before it, no workspace model).
NO_FILES = Files()


#: How scripts the trajectory never showed are judged: "workspace", "none" or globs (see `own_script`).
OwnScripts = str | tuple[str, ...]

_SYSTEM_DIRS = ("/bin/", "/sbin/", "/usr/bin/", "/usr/sbin/", "/usr/local/bin/", "/usr/local/sbin/",
                "/usr/libexec/", "/opt/homebrew/bin/", "/snap/bin/")
DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/1", "/dev/fd/2"})

#: A key in the file table: set once something wrote files nobody can name (`git clone`, `tar x`, `unzip`,
#: `> "$F"`). From then on no unseen script is taken for one of the user's own, and no file of the workspace
#: snapshot for what it held at the start.
ANYWHERE = "\0anywhere"
#: The key of the workspace model's base (a `WorkspaceToken`) in a file table.
WORKSPACE = "\0workspace"


def normalise(path: str) -> str:
    """A path as the matcher keys it: `./x.sh` and `x.sh` are one file."""
    if not path:
        return path
    norm = posixpath.normpath(path)
    return norm.removeprefix("./")


def workspace_of(files: Mapping[str, Entry]) -> Workspace | None:
    """The workspace model's base in a file table, or None (none given, or no longer alive)."""
    token = files.get(WORKSPACE)
    return token.get() if isinstance(token, WorkspaceToken) else None


def anywhere_why(files: Mapping[str, Entry]) -> str | None:
    """Why files nobody can name may have been written (see `ANYWHERE`), or None when nothing did."""
    anywhere = files.get(ANYWHERE)
    return anywhere.why if isinstance(anywhere, Unknown) else None


def key(files: Mapping[str, Entry], path: str) -> str:
    """The key of `path` in a file table: normalised, and relative to the workdir when it is inside it (a tool
    writes `/tmp/trial/x.sh`, a command runs `sh x.sh`: one file)."""
    norm = normalise(path)
    if norm.startswith("/") and WORKSPACE in files:
        workspace = workspace_of(files)
        if workspace is not None:
            rel = workspace.relative(norm)
            if rel is not None:
                return str(rel)
    return norm


def system_program(path: str) -> str | None:
    """The program a path in a system folder names (`/bin/rm` -> rm), or None."""
    if path.startswith(_SYSTEM_DIRS) and path.count("/") >= 2:
        return path.rstrip("/").rsplit("/", 1)[-1] or None
    return None


def own_script(path: str, rule: OwnScripts) -> bool:
    """Whether a script the trajectory never wrote is taken for one of the user's own, run without being read.

    "workspace" (the default): any relative path that stays inside the workspace (not absolute, no `..` out of
    it, no `~`); "none": no script is; a tuple of globs: paths that match one of them (`("scripts/*.sh",)`).
    """
    if rule == "none":
        return False
    norm = normalise(path)
    if isinstance(rule, tuple):
        return any(fnmatchcase(norm, glob) or fnmatchcase(path, glob) for glob in rule)
    return not (norm.startswith(("/", "~", "../")) or norm == ".." or "$" in norm or "`" in norm)


def check_own_scripts(value: Any, where: str) -> OwnScripts:
    """Validate an `own_scripts` setting; ValueError names `where` and what is accepted."""
    if value in ("workspace", "none"):
        return "workspace" if value == "workspace" else "none"
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ValueError(  # noqa: TRY004 (the documented error of a wrong setting)
            f"{where}: own_scripts must be 'workspace', 'none' or a list of path globs, got {value!r}"
        )
    globs = tuple(value)
    if not all(isinstance(g, str) and g.strip() for g in globs):
        raise ValueError(f"{where}: own_scripts globs must be non-empty strings, got {value!r}")
    return globs


def lookup(files: Mapping[str, Entry], path: str) -> State | None:
    """The state of `path` (a key, see `key`), or None when nothing is known of it (no workspace model, and the
    trajectory never wrote it). A path written under another folder with the same name counts (the folders the
    commands of earlier calls ran in are not followed, so the same name is taken for the same file; failing closed
    on a clash)."""
    found = files.get(path)
    if found is not None:
        return None if isinstance(found, WorkspaceToken) else found
    parent = path
    while "/" in parent.strip("/"):  # in a folder that something unreadable wrote (`git clone x repo`)
        parent = parent.rstrip("/").rsplit("/", 1)[0]
        folder = files.get(parent) if parent else None
        if isinstance(folder, Unknown):
            return folder
    workspace = workspace_of(files) if WORKSPACE in files else None
    if workspace is not None:
        state = _in_workspace(files, workspace, path)
        if state is not None:
            return state
    name = path.rsplit("/", 1)[-1]
    same = {state for k, state in files.items()
            if k.rsplit("/", 1)[-1] == name and not k.startswith("\0") and not isinstance(state, WorkspaceToken)}
    if workspace is not None and workspace.relative(path) is not None and not path.startswith("~"):
        same |= {_base(files, workspace, rel) for rel in workspace.named(name) if rel not in files}
        if not same:
            anywhere = anywhere_why(files)
            if anywhere is not None:
                return Unknown(anywhere)
            return Absent("was not in the workdir when the trial started, and nothing the trajectory shows wrote it")
    if len(same) == 1:
        return same.pop()
    if same:
        return Unknown(f"several files named {name} were written")
    return None


def _in_workspace(files: Mapping[str, Entry], workspace: Workspace, path: str) -> State | None:
    rel = workspace.relative(path)
    if rel is None:
        return None
    if rel in workspace.files:
        return _base(files, workspace, rel)
    if workspace.why_left_out(rel) is not None:
        return _base(files, workspace, rel)
    return None


def _base(files: Mapping[str, Entry], workspace: Workspace, rel: str) -> State:
    """A file of the workspace snapshot as it stands: unchanged since the start, unless something since wrote files
    nobody can name (then it may be one of them)."""
    anywhere = anywhere_why(files)
    if anywhere is not None:
        return Unknown(f"may have been overwritten since the trial started: it {anywhere}")
    if rel in workspace.files:
        return Base(workspace.files[rel], rel)
    return LeftOut(f"was left out of the workspace snapshot ({workspace.why_left_out(rel)})", rel)


def texts(state: State | None) -> tuple[str, ...] | None:
    """What a file holds, in each way it may read, when that is known (written text, or the user's file)."""
    match state:
        case Text(known):
            return known
        case Base(content):
            return (content,)
    return None


def before_append(state: State | None) -> tuple[str, ...] | None:
    """What a file holds before text is appended to it: its texts, nothing for a file that is not there, None
    when unknown (the append leaves it unknown)."""
    if state is None or isinstance(state, (Absent, Gone)):
        return ("",)
    return texts(state)


def unknown_why(state: State | None, path: str, what: str, files: Mapping[str, Entry] | None = None) -> str:
    """Why `what` of `path` cannot be followed, from the state the file was in (and the table it is in)."""
    match state:
        case None:
            where = ("it is outside the trial's workdir, so the workspace snapshot does not have it"
                     if files is not None and WORKSPACE in files else
                     "there is no workspace snapshot to know it from (graded outside a trial)")
            return f"was {what}, but the trajectory never showed what `{path}` held before: {where}"
        case Unknown(why):
            return f"was {what}, but what it held before is not known (it {why})"
        case LeftOut(why) | Absent(why):
            return f"was {what}, but it {why}"
        case Program(name):
            return f"was {what}, but it was a copy of the program `{name}`"
        case Own():
            return f"was {what}, but it was a copy of a file the trajectory never showed"
    return f"was {what} in a way not followed here"
