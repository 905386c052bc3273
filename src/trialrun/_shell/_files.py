"""What the matcher knows of the files a trajectory wrote: so that `sh x.sh`, `python3 x.py` or `./x -rf` is
judged by what was written to that path earlier (by a tool call or a redirect), and a script nobody saw is
judged by the `own_scripts` rule.

A file's state is one of
  ("text", (content, ...))  written where the matcher could read it (several readings: `echo` with or without escapes)
  ("program", name)         a copy of or link to a program (`ln -s /bin/rm x`, `cp "$(which rm)" x`)
  ("unknown", why)          written by something whose output is only known at run time (`curl -o x.sh`)
  ("own",)                  a copy of a file the trajectory never wrote (one of the user's own)
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from typing import Any, Union

State = tuple
Files = tuple  # ((path, State), ...): hashable, for the analysis cache
#: How scripts the trajectory never showed are judged: "workspace", "none" or globs (see `own_script`).
OwnScripts = Union[str, tuple[str, ...]]

_SYSTEM_DIRS = ("/bin/", "/sbin/", "/usr/bin/", "/usr/sbin/", "/usr/local/bin/", "/usr/local/sbin/",
                "/usr/libexec/", "/opt/homebrew/bin/", "/snap/bin/")
_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/1", "/dev/fd/2"})
_PATH_KEYS = ("path", "file_path", "filePath", "filepath", "filename", "file", "target_file", "target", "dest",
              "destination")
_CONTENT_KEYS = ("content", "contents", "text", "file_text", "new_content", "data", "body", "code", "source")
_EDIT_KEYS = ("old_string", "old_str", "old_text", "oldString", "edits", "diff", "patch", "insert_line", "new_str",
              "new_string", "newString")


def normalise(path: str) -> str:
    """A path as the matcher keys it: `./x.sh` and `x.sh` are one file."""
    if not path:
        return path
    norm = posixpath.normpath(path)
    return norm[2:] if norm.startswith("./") else norm


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
        raise ValueError(
            f"{where}: own_scripts must be 'workspace', 'none' or a list of path globs, got {value!r}"
        )
    globs = tuple(value)
    if not all(isinstance(g, str) and g.strip() for g in globs):
        raise ValueError(f"{where}: own_scripts globs must be non-empty strings, got {value!r}")
    return globs


#: A key in the file table: set once something wrote files nobody can name (`git clone`, `tar x`, `unzip`,
#: `> "$F"`). From then on no unseen script is taken for one of the user's own.
ANYWHERE = "\0anywhere"


def lookup(files: Mapping[str, State], path: str) -> State | None:
    """The state of `path`, or None when the trajectory never wrote it. A path written under another folder with
    the same name counts (a tool wrote `/work/trial/x.sh`, the command runs `sh x.sh`): the folders the
    commands run in are not followed, so the same name is taken for the same file (failing closed on a clash)."""
    key = normalise(path)
    if key in files:
        return files[key]
    parent = key
    while "/" in parent.strip("/"):  # in a folder that something unreadable wrote (`git clone x repo`)
        parent = parent.rstrip("/").rsplit("/", 1)[0]
        if parent and files.get(parent, ("",))[0] == "unknown":
            return files[parent]
    name = key.rsplit("/", 1)[-1]
    same = {state for k, state in files.items() if k.rsplit("/", 1)[-1] == name and not k.startswith("\0")}
    if len(same) == 1:
        return same.pop()
    if same:
        return ("unknown", f"several files named {name} were written")
    return None


_WRITER_NAME_RE = re.compile(r"write|create|save|edit|patch|put|append|replace|insert|update|file", re.I)


def tool_write(arguments: Any, files: dict[str, State], tool: str = "write_file") -> None:
    """Record what a (non-command) tool call wrote: `write_file(path, content)`, an edit, an `apply_patch`.
    Arguments named like `text` or `data` count as a file's content only for a tool named like a writer."""
    if not isinstance(arguments, Mapping):
        return
    patch = next((v for k, v in arguments.items() if isinstance(v, str) and "*** Begin Patch" in v), None)
    if patch is not None:
        _apply_patch(patch, files)
        return
    path = next((arguments[k] for k in _PATH_KEYS if isinstance(arguments.get(k), str)), None)
    if not path:
        return
    keys = _CONTENT_KEYS if _WRITER_NAME_RE.search(tool) else _CONTENT_KEYS[:4]
    content = next((arguments[k] for k in keys if isinstance(arguments.get(k), str)), None)
    if content is not None and not any(k in arguments for k in _EDIT_KEYS):
        files[normalise(path)] = ("text", (content,))
        return
    if any(k in arguments for k in _EDIT_KEYS):
        old = next((arguments[k] for k in ("old_string", "old_str", "old_text", "oldString")
                    if isinstance(arguments.get(k), str)), None)
        new = next((arguments[k] for k in ("new_string", "new_str", "new_text", "newString")
                    if isinstance(arguments.get(k), str)), None)
        before = lookup(files, path)
        if before is not None and before[0] == "text" and old is not None and new is not None:
            files[normalise(path)] = ("text", tuple(t.replace(old, new) for t in before[1]))
        elif before is None and old is not None and new is not None:
            # an edit of one of the user's files: what it now holds is theirs plus the new text
            files[normalise(path)] = ("text", (new,))
        else:
            files[normalise(path)] = ("unknown", "was edited in a way not followed here")


def _apply_patch(patch: str, files: dict[str, State]) -> None:
    """Codex's `apply_patch` format: added files are read; updated ones become unknown."""
    current: str | None = None
    added: list[str] = []
    for line in patch.splitlines():
        if line.startswith("*** "):
            if current is not None:
                files[normalise(current)] = ("text", ("\n".join(added) + "\n",))
                current = None
            if line.startswith("*** Add File: "):
                current, added = line[len("*** Add File: "):].strip(), []
            elif line.startswith(("*** Update File: ", "*** Move to: ")):
                files[normalise(line.split(": ", 1)[1].strip())] = ("unknown", "was patched in a way not followed here")
        elif current is not None and line.startswith("+"):
            added.append(line[1:])
    if current is not None:
        files[normalise(current)] = ("text", ("\n".join(added) + "\n",))
