"""What a (non-command) tool call wrote, into the matcher's file table (see `_files`), with each agent's exact
semantics: a write of whole content, a string edit (Claude Code's Edit and MultiEdit, opencode's edit, pi's edits,
Anthropic's text editor, Kimi CLI's StrReplaceFile), a Codex-style patch, a unified diff. Also the patch appliers the shell analysis uses
(`apply_patch` run in a shell, `patch`, `git apply`).

Where what the file holds afterwards cannot be known (an edit of a file trialrun never saw whole, an old string that
is not there, a patch that does not apply cleanly here) the file becomes `Unknown`, saying why: a script run from it
later fails closed, saying why.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping
from typing import Any

from . import _files
from ._edits import Refused, Unknowable, original_edits, sequential_edits, string_edit
from ._patches import (
    PatchError,
    apply_codex_update,
    apply_unified,
    is_codex_patch,
    looks_like_unified_diff,
    parse_codex_patch,
    parse_unified_diff,
)

__all__ = ["apply_codex_patch", "apply_unified_diff", "join", "patch_program", "tool_write", "writes_files"]

State = _files.State
Table = _files.Table

_PATH_KEYS = ("path", "file_path", "filePath", "filepath", "filename", "file", "target_file", "target", "dest",
              "destination", "notebook_path")
_CONTENT_KEYS = ("content", "contents", "text", "file_text", "new_content", "data", "body", "code", "source")
_OLD_KEYS = ("old_string", "old_str", "old_text", "oldString", "oldText")
_NEW_KEYS = ("new_string", "new_str", "new_text", "newString", "newText")
_EDIT_KEYS = (*_OLD_KEYS, "edits", "diff", "patch", "insert_line", *_NEW_KEYS, "new_source", "insert_text")
_WRITER_NAME_RE = re.compile(r"write|create|save|edit|patch|put|append|replace|insert|update|file", re.IGNORECASE)


def join(cwd: str, path: str) -> str:
    """`path` as seen from folder `cwd` (relative to the workdir, or absolute)."""
    if not cwd or path.startswith(("/", "~")):
        return path
    return posixpath.join(cwd, path)


def _style(arguments: Mapping[str, Any]) -> str:
    """Whose edit semantics an edit call's argument names show (see `_edits`)."""
    if "old_string" in arguments or "new_string" in arguments:
        return "claude"
    if "oldString" in arguments or "newString" in arguments:
        return "opencode"
    if "oldText" in arguments or "newText" in arguments:
        return "pi"
    if _kimi_style(arguments):
        return "kimi"
    return "generic"


def _first(arguments: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    return next((arguments[k] for k in keys if isinstance(arguments.get(k), str)), None)


def _edit(files: Table, path: str, what: str, change: Callable[[str], str], creates: str | None = None,
          reported: str | None = None) -> None:
    """Apply `change` to every reading of `path`'s text; a file that is not there is created with `creates` (when
    the tool creates files), anything not known becomes unknown. `reported`: the call's result, which was no error:
    an edit the tool's semantics as followed here refuse, which the tool itself reports done (Gemini CLI's `replace`
    and Continue's `Edit` correct a near-miss old string themselves), changed the file in a way the call does not
    show: it becomes unknown, and a script run from it fails closed."""
    key = _files.key(files, path)
    state = _files.lookup(files, key)
    known = _files.texts(state)
    if known is None:
        if creates is not None and isinstance(state, (_files.Absent, _files.Gone)):
            files[key] = _files.Text((creates,))
        else:
            files[key] = _files.Unknown(_files.unknown_why(state, path, what, files))
        return
    results: list[str] = []
    refused: list[str] = []
    for text in known:
        try:
            results.append(change(text))
        except Refused as exc:
            refused.append(str(exc))
        except Unknowable as exc:
            files[key] = _files.Unknown(f"was {what}, but {exc}")
            return
    if refused and results:  # refused in one reading of the file, applied in another
        files[key] = _files.Unknown(f"was {what}, which applies to one reading of it and not another ({refused[0]})")
    elif results:
        files[key] = _files.Text(tuple(dict.fromkeys(results)))
    elif reported is not None:  # refused here, done there: the tool's own report wins
        shown = _reported_change(reported, known)
        if shown is not None:  # it says what it did, as a diff of the file (Continue's Edit)
            files[key] = _files.Text(shown)
        else:
            files[key] = _files.Unknown(f"was {what}, which an exact match refuses ({refused[0]}), but the tool reported "
                                     f"it done (`{_clip(reported)}`): what it changed is not known")
    # refused in every reading, and the tool said so (or said nothing): the file stays as it was


def _reported_change(reported: str, known: tuple[str, ...]) -> tuple[str, ...] | None:
    """What the file holds after an edit whose result shows it as a unified diff of that one file (`Diff:` then
    `--- a` / `+++ b` / hunks), applied to every reading of it; None when the result shows no such diff or it does
    not apply (then what the tool did is not known)."""
    start = reported.find("\n--- ")
    if start < 0 or not looks_like_unified_diff(reported[start + 1:]):
        return None
    try:
        parts = parse_unified_diff(reported[start + 1:])
        if len(parts) != 1:
            return None
        return tuple(dict.fromkeys(apply_unified(text, parts[0]) for text in known))
    except (PatchError, Unknowable):
        return None


def _clip(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def writes_files(arguments: Any) -> bool:
    """Whether a call's arguments are a write, edit or patch of files as `tool_write` follows them (a file and its
    content or edit, a patch, a diff): its text is a file's, followed by the workspace model, not a command.

    >>> writes_files({"path": "x.sh", "content": "rm -rf build"}), writes_files({"action": "start", "command": "x"})
    (True, False)
    """
    if not isinstance(arguments, Mapping):
        return False
    if any(isinstance(v, str) and (is_codex_patch(v) or looks_like_unified_diff(v)) for v in arguments.values()):
        return True
    if not _first(arguments, _PATH_KEYS):
        return False
    return any(k in arguments for k in _EDIT_KEYS) or _first(arguments, _CONTENT_KEYS[:4]) is not None


def tool_write(arguments: Any, files: Table, tool: str = "write_file", failed: bool = False,
               reported: str | None = None) -> None:
    """Record what a (non-command) tool call wrote: `write_file(path, content)`, an edit, a patch. Arguments named
    like `text` or `data` count as a file's content only for a tool named like a writer. `failed`: the call's
    result was an error, so an edit or write of one file changed nothing (a patch may have half applied);
    `reported`: its result, which was no error (an edit the semantics followed here refuse was then done some other
    way: see `_edit`)."""
    if not isinstance(arguments, Mapping):
        return
    patch = next((v for v in arguments.values() if isinstance(v, str) and is_codex_patch(v)), None)
    if patch is not None:
        folder = arguments.get("workdir")
        apply_codex_patch(patch, files, cwd=folder if isinstance(folder, str) else "", failed=failed,
                          shown=f"`{tool}`")
        return
    path = _first(arguments, _PATH_KEYS)
    diff = next((v for k, v in arguments.items() if isinstance(v, str) and k not in _CONTENT_KEYS[:4]
                 and looks_like_unified_diff(v)), None)
    if diff is not None:
        apply_unified_diff(diff, files, target=path, failed=failed)
        return
    if not path:
        return
    if failed and (any(k in arguments for k in _EDIT_KEYS) or _first(arguments, _CONTENT_KEYS) is not None):
        return  # the tool refused (Claude Code: not Read first; a missing old string): nothing was written
    shown = f"`{tool}`"
    if _kimi_style(arguments.get("edit")):
        if not failed:
            _kimi_edits(files, path, arguments["edit"], shown, reported)
        return  # (a failed one changed nothing: Kimi CLI writes only when every edit applied)
    edits = arguments.get("edits")
    if "notebook_path" in arguments or "new_source" in arguments:
        files[_files.key(files, path)] = _files.Unknown(f"was edited by {shown} (a notebook cell edit, not followed)")
        return
    if edits is not None:
        _edits_list(files, path, edits, shown, reported)
        return
    old, new = _first(arguments, _OLD_KEYS), _first(arguments, _NEW_KEYS)
    command = arguments.get("command")
    if command == "insert" or "insert_line" in arguments:  # Anthropic's text editor: insert after a line
        line = arguments.get("insert_line")
        inserted = new if new is not None else _first(arguments, ("insert_text", "text"))
        if isinstance(line, int) and not isinstance(line, bool) and isinstance(inserted, str):
            _edit(files, path, f"edited by {shown}", lambda text: _insert(text, line, inserted), reported=reported)
        else:
            files[_files.key(files, path)] = _files.Unknown(f"was edited by {shown} in a way not followed here")
        return
    if command == "undo_edit":
        files[_files.key(files, path)] = _files.Unknown(f"had an edit undone by {shown}")
        return
    if old is not None or new is not None:
        if old is None or new is None:
            files[_files.key(files, path)] = _files.Unknown(f"was edited by {shown} in a way not followed here")
            return
        style = _style(arguments)
        replace_all = bool(arguments.get("replace_all") or arguments.get("replaceAll"))
        what = f"edited by {shown}"
        if style == "pi":
            _edit(files, path, what, lambda text: original_edits(text, [(old, new)]), reported=reported)
        elif style == "claude" and old == "":
            _edit(files, path, what, lambda text: sequential_edits(text, [(old, new, replace_all)]), creates=new,
                  reported=reported)
        else:
            _edit(files, path, what, lambda text: string_edit(text, old, new, replace_all, style), reported=reported)
        return
    keys = _CONTENT_KEYS if _WRITER_NAME_RE.search(tool) else _CONTENT_KEYS[:4]
    content = _first(arguments, keys)
    if content is not None and not any(k in arguments for k in _EDIT_KEYS):
        files[_files.key(files, path)] = _files.Text((content,))


def _kimi_style(edit: Any) -> bool:
    """Kimi CLI's StrReplaceFile: `edit` is one `{old, new, replace_all}` or a list of them."""
    edits = edit if isinstance(edit, list) else [edit]
    return bool(edits) and all(isinstance(e, Mapping) and isinstance(e.get("old"), str) and
                               isinstance(e.get("new"), str) for e in edits)


def _kimi_edits(files: Table, path: str, edit: Any, shown: str, reported: str | None = None) -> None:
    """Kimi CLI's edits, one after another, each Python's `str.replace` of the first occurrence (every one with
    `replace_all`); an edit that changes nothing at all is refused."""
    steps = [(e["old"], e["new"], bool(e.get("replace_all"))) for e in (edit if isinstance(edit, list) else [edit])]

    def change(text: str) -> str:
        result = text
        for old, new, every in steps:
            result = result.replace(old, new) if every else result.replace(old, new, 1)
        if result == text:
            raise Refused("no replacements were made")
        return result

    _edit(files, path, f"edited by {shown}", change, reported=reported)


def _insert(text: str, line: int, inserted: str) -> str:
    lines = text.split("\n")
    if line < 0 or line > len(lines):
        raise Refused(f"insert_line {line} is outside the file")
    added = inserted.split("\n")
    return "\n".join([*lines[:line], *added, *lines[line:]])


def _edits_list(files: Table, path: str, edits: Any, shown: str, reported: str | None = None) -> None:
    """An `edits` list: pi's ({oldText, newText} against the original) or a MultiEdit's ({old_string, new_string,
    replace_all}, one after another)."""
    what = f"edited by {shown}"
    if isinstance(edits, str):  # some models send the list as JSON text (pi parses it)
        import json

        try:
            edits = json.loads(edits)
        except ValueError:
            edits = None
    if not isinstance(edits, list) or not edits or not all(isinstance(e, Mapping) for e in edits):
        files[_files.key(files, path)] = _files.Unknown(f"was {what} with edits not followed here")
        return
    if all(isinstance(e.get("oldText"), str) and isinstance(e.get("newText"), str) for e in edits):
        pairs = [(e["oldText"], e["newText"]) for e in edits]
        _edit(files, path, what, lambda text: original_edits(text, pairs), reported=reported)
        return
    steps: list[tuple[str, str, bool]] = []
    style = "generic"
    for e in edits:
        old, new = _first(e, _OLD_KEYS), _first(e, _NEW_KEYS)
        if old is None or new is None:
            files[_files.key(files, path)] = _files.Unknown(f"was {what} with edits not followed here")
            return
        style = _style(e)
        steps.append((old, new, bool(e.get("replace_all") or e.get("replaceAll"))))
    creates = steps[0][1] if style == "claude" and steps[0][0] == "" else None
    _edit(files, path, what, lambda text: sequential_edits(text, steps, style), creates=creates, reported=reported)


def apply_codex_patch(patch: str, files: Table, cwd: str = "", failed: bool = False, shown: str = "a patch") -> None:
    """A Codex `*** Begin Patch` patch applied to the table. A patch Codex would not parse changes nothing; one
    that does not apply here, or whose result is an error, leaves every file it names unknown."""
    try:
        hunks = parse_codex_patch(patch)
    except PatchError:
        return  # Codex rejects the whole patch before writing anything
    named = [join(cwd, h.path) for h in hunks] + [join(cwd, h.move_to) for h in hunks if h.move_to]

    def unknown(why: str) -> None:
        for path in named:
            files[_files.key(files, path)] = _files.Unknown(why)

    if failed:
        unknown(f"was patched by {shown}, whose result was an error (what it changed before failing is not known)")
        return
    staged: dict[str, State] = {}

    def state_of(path: str) -> State | None:
        k = _files.key(files, path)
        return staged[k] if k in staged else _files.lookup(files, k)

    for hunk in hunks:
        path = join(cwd, hunk.path)
        k = _files.key(files, path)
        if hunk.kind == "add":
            staged[k] = _files.Text((hunk.contents,))
            continue
        state = state_of(path)
        known = _files.texts(state)
        if hunk.kind == "delete":
            if isinstance(state, (_files.Absent, _files.Gone)):
                return unknown(f"was patched by {shown}, which deletes `{hunk.path}`, a file that is not there (the "
                               "patch fails)")
            staged[k] = _files.Gone()
            continue
        if known is None:
            return unknown(_files.unknown_why(state, hunk.path, f"patched by {shown}", files))
        try:
            results = tuple(dict.fromkeys(apply_codex_update(text, hunk) for text in known))
        except (PatchError, Unknowable) as exc:
            return unknown(f"was patched by {shown}, but the patch does not apply cleanly to what trialrun knows "
                           f"of `{hunk.path}` ({exc})")
        if hunk.move_to:
            staged[k] = _files.Gone()
            staged[_files.key(files, join(cwd, hunk.move_to))] = _files.Text(results)
        else:
            staged[k] = _files.Text(results)
    files.update(staged)


def patch_program(patch: str, files: Table, cwd: str = "", shown: str = "`apply_patch`") -> None:
    """`apply_patch` run as a program inside a shell command (not as the whole command, which Codex applies itself):
    whether such a program is there and what it did is not known, so the files the patch names become unknown."""
    try:
        hunks = parse_codex_patch(patch)
    except PatchError:
        return  # a program that is there rejects it; one that is not changes nothing either
    why = (f"was named in a patch given to {shown} inside a shell command: Codex applies a patch itself only when it "
           "is the whole command, and whether an `apply_patch` program is there (and what it did) is not known")
    for hunk in hunks:
        for path in (hunk.path, hunk.move_to):
            if path:
                files[_files.key(files, join(cwd, path))] = _files.Unknown(why)


_STRIP_RE = re.compile(r"^(?:a|b)/")


def apply_unified_diff(diff: str, files: Table, cwd: str = "", strip: int | None = None, target: str | None = None,
                       failed: bool = False, shown: str = "a diff") -> None:
    """A unified diff applied to the table: each file's hunks where they match exactly. `strip`: leading path
    components to drop (`patch -p1`; None: `a/` and `b/` are dropped, as `git apply` does); `target`: the one file
    it patches (`patch FILE`, an edit tool's path)."""
    try:
        parsed = parse_unified_diff(diff)
    except PatchError as exc:
        if target is not None:
            files[_files.key(files, join(cwd, target))] = _files.Unknown(f"was patched by {shown} not read here ({exc})")
        else:
            files[_files.ANYWHERE] = _files.Unknown(f"was patched by {shown} not read here ({exc})")
        return

    def path_of(name: str) -> str:
        if strip is None:
            return _STRIP_RE.sub("", name)
        parts = name.split("/")
        return "/".join(parts[strip:]) if strip < len(parts) else parts[-1]

    entries = []
    for part in parsed:
        new = part.new_path if part.new_path != "/dev/null" else part.old_path
        name = target if target is not None and len(parsed) == 1 else path_of(new)
        entries.append((join(cwd, name), part))
    if failed:
        for path, _ in entries:
            files[_files.key(files, path)] = _files.Unknown(f"was patched by {shown}, whose result was an error")
        return
    staged: dict[str, State] = {}
    for path, part in entries:
        k = _files.key(files, path)
        if part.new_path == "/dev/null":
            staged[k] = _files.Gone()
            continue
        state = _files.Absent("") if part.old_path == "/dev/null" else staged.get(k) or _files.lookup(files, k)
        known = ("",) if part.old_path == "/dev/null" else _files.texts(state)
        if known is None:
            staged[k] = _files.Unknown(_files.unknown_why(state, path, f"patched by {shown}", files))
            continue
        try:
            staged[k] = _files.Text(tuple(dict.fromkeys(apply_unified(text, part) for text in known)))
        except (PatchError, Unknowable) as exc:
            staged[k] = _files.Unknown(f"was patched by {shown}, but the diff does not apply cleanly to what "
                                     f"trialrun knows of it ({exc})")
    files.update(staged)
