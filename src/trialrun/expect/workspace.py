"""Graders of what an agent left in its trial's workdir: for a coding agent the outcome is the files.

- `verify(command)`: a command run in the workdir after the agent ends (the task's own test: `python3 test_app.py`,
  `pytest -q`, `npm test`); passes on exit status 0. It runs through /bin/sh under a keeper, as the reference
  agent's commands do, so a hung verifier is stopped at its own timeout with everything it started, and FAILS
  saying so; inside the sandbox the agent ran in when it ran in one (`ctx.sandbox`); with an environment cut to an
  allow-list (no credentials). A verifier that cannot start (no such program: exit 127) fails. Its output is kept
  (bounded, scrubbed) in the verdict's details and its tail in the reason.
- `file_exists`, `file_contains`, `file_matches`: one file as the agent left it, read with the rule of every
  reader of agent files (`agent.tools.file_beneath`: resolved beneath the workdir, no symbolic link leading out, a
  regular file only, at most `max_bytes` read: a larger file fails, never a part of it).
- `file_unchanged(path or glob)`, `changed_only(globs)`: judged on the trial's workspace diff (`Run.files`, what the
  runner compared after the agent ended), which names every file it examined.

Paths and globs are relative to the workdir, POSIX style; a glob is `fnmatch`'s (`*` also crosses `/`).

In `trialrun regrade` the workdir is gone: the diff-based graders judge the stored diff as they judged the live
one, the file readers answer from it where it holds the answer (a file it says was removed; the whole text of a file
the agent added), and anything else (and `verify`) is named as not regraded.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..trajectory import Run
from ._base import Grader, Verdict, clip, number_label, text_arg
from .outcome import _flags

__all__ = ["verify", "file_exists", "file_contains", "file_matches", "file_unchanged", "changed_only",
           "VERIFY_TIMEOUT_S", "MAX_READ_BYTES", "verify_of"]

#: The verifier's timeout when none is given (seconds).
VERIFY_TIMEOUT_S = 60.0
#: The verifier's output kept in its verdict (characters: its head and tail, with a note of what was cut).
VERIFY_OUTPUT_CHARS = 8_000
#: The largest file `file_contains` and `file_matches` read (a larger one fails, never judged on a part).
MAX_READ_BYTES = 4 * 2**20


def _path_arg(grader: str, name: str, value: Any, *, glob: bool = False) -> str:
    """A workdir-relative POSIX path (or glob), checked when the grader is built."""
    text = text_arg(grader, name, value).strip()
    while text.startswith("./"):
        text = text[2:]
    if not text or text == ".":
        raise ValueError(f"expect.{grader}: {name} must name a file in the workdir, got {value!r}")
    if text.startswith(("/", "~")) or ".." in text.split("/") or "\\" in text and not glob:
        raise ValueError(f"expect.{grader}: {name} {value!r} must be relative to the workdir, inside it "
                         "(no leading / or ~, no ..)")
    return text


def _live_root(ctx: Any) -> Path | None:
    """The trial's workdir when it is there to look at (a trial being graded); None in a regrade, for a stored run
    (`check(expectations, trial.as_run())`) or a trial that never had one."""
    if ctx is None or getattr(ctx, "regrading", False):
        return None
    if getattr(ctx, "has_workdir", True) is False:
        return None
    root = getattr(ctx, "workdir", None)
    return Path(root) if root is not None else None


def _cannot(ctx: Any, label: str, why: str) -> Verdict:
    """The stored diff does not hold the answer: in a regrade asking for the workdir raises (the regrade then keeps
    the run's verdict and names the grader); anywhere else a FAILED verdict saying why."""
    if ctx is not None and getattr(ctx, "regrading", False):
        _ = ctx.workdir  # raises: the regrade's context has no workdir
    return Verdict(False, label, f"cannot tell: {why}")


def _no_workdir(ctx: Any) -> str:
    if ctx is None:
        return "no trial context and no workspace diff on the run: nothing to look at"
    return "the trial had no workdir: nothing to look at"


def _unseen(run: Run) -> str | None:
    """Why the run's workspace diff cannot be judged (none was made, or the workdir could not be read)."""
    diff = run.files
    if diff is None:
        return ("no workspace diff: the trial had no workdir (the files the agent left were never compared), so "
                "nothing was examined")
    if "." in diff.not_examined:
        return f"the workdir was not examined: {diff.not_examined['.']}"
    return None


# -- verify ------------------------------------------------------------------------------------------------
def verify(command: str, *, timeout_s: float = VERIFY_TIMEOUT_S, sandbox: str | None = None,
           max_output: int = VERIFY_OUTPUT_CHARS) -> Grader:
    """`command` run in the trial's workdir after the agent ended passes when it exits 0 (see the module's text).
    `sandbox`: "none", "bwrap" or "auto" to choose; by default the one the agent ran in (`ctx.sandbox`)."""
    command = text_arg("verify", "command", command)
    if not command.strip():
        raise ValueError("expect.verify: give the command to run (e.g. 'python3 test_app.py')")
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 0 < timeout_s <= 86_400:
        raise ValueError(f"expect.verify: timeout_s must be a number of seconds above 0, got {timeout_s!r}")
    if isinstance(max_output, bool) or not isinstance(max_output, int) or max_output < 200:
        raise ValueError(f"expect.verify: max_output must be a whole number of characters, 200 or more, got {max_output!r}")
    chosen = _sandbox(sandbox)
    label = f"verify({command!r}" + (f", timeout_s={number_label(timeout_s)}" if timeout_s != VERIFY_TIMEOUT_S else "") \
        + (f", sandbox={sandbox!r}" if sandbox is not None else "") + ")"
    done: weakref.WeakKeyDictionary[Any, Verdict] = weakref.WeakKeyDictionary()

    async def grade(run: Run, ctx: Any) -> Verdict:
        root = _live_root(ctx)
        if root is None:
            if ctx is not None and getattr(ctx, "regrading", False):
                _ = ctx.workdir  # raises: a regrade cannot run a command in a workdir that is gone
            return Verdict(False, label, f"{_no_workdir(ctx)}; the command was not run")
        kept = _cached(done, ctx)
        if kept is not None:  # run once a trial: the rubric asks first, then the grader itself
            return dataclasses.replace(kept)
        box = chosen if chosen is not None else getattr(ctx, "sandbox", None)
        verdict = await _run_verify(label, command, root, timeout_s, max_output, box)
        try:
            done[ctx] = verdict
        except TypeError:  # a context that takes no weak reference: no memo, the command runs again if asked
            pass
        return dataclasses.replace(verdict)

    grade.verify_command = command  # type: ignore[attr-defined]  # the rubric's quality comes from it
    return Grader(label, grade, "outcome")  # type: ignore[arg-type]  # an async grader (agrade awaits it)


def verify_of(grader: Grader) -> bool:
    """Whether `grader` is an `expect.verify` (a test's success criteria made executable: the rubric's quality)."""
    return getattr(grader.fn, "verify_command", None) is not None


def _cached(done: weakref.WeakKeyDictionary[Any, Verdict], ctx: Any) -> Verdict | None:
    try:
        return done.get(ctx)
    except TypeError:
        return None


def _sandbox(value: str | None) -> Any:
    if value is None:
        return None
    from .._contain.sandbox import resolve_sandbox

    try:
        return resolve_sandbox(value)
    except ValueError as exc:
        raise ValueError(f"expect.verify: sandbox: {exc}") from None


async def _run_verify(label: str, command: str, root: Path, timeout_s: float, max_output: int,
                      sandbox: Any) -> Verdict:
    """Run the verifier in a worker thread (a cancelled trial kills it: its call scope is abandoned)."""
    import asyncio

    from .._scrub import scrub_text
    from ..agent._commands import CURRENT_CALL, CallScope, run_shell

    scope = CallScope()

    def target() -> Any:
        token = CURRENT_CALL.set(scope)
        try:
            return run_shell(command, root, timeout_s, max_output, sandbox=sandbox)
        finally:
            CURRENT_CALL.reset(token)

    boxed = f" in the sandbox ({sandbox.describe()})" if sandbox is not None and getattr(sandbox, "active", False) else ""
    started = time.monotonic()
    try:
        finished = await asyncio.get_running_loop().run_in_executor(None, target)
    except asyncio.CancelledError:
        scope.abandon()
        raise
    except OSError as exc:
        return Verdict(False, label, f"`{command}` could not start{boxed}: {exc}", details={"command": command})
    took = time.monotonic() - started
    output = scrub_text(finished.output)
    details = {"command": command, "exit_code": finished.returncode, "duration_s": round(took, 3), "output": output,
               "timed_out": finished.stopped == "timeout", "killed": list(finished.killed)}
    tail = _tail(output)
    if finished.stopped == "timeout":
        killed = f"; killed: {len(finished.killed)} process{'es' if len(finished.killed) != 1 else ''}" \
            if finished.killed else ""
        return Verdict(False, label, f"`{command}` did not finish within its timeout of {timeout_s:g}s and was "
                       f"stopped with everything it started{killed}{boxed}{tail}", details=details)
    if finished.stopped is not None:
        return Verdict(False, label, f"`{command}` was stopped: {finished.stopped}{boxed}{tail}", details=details)
    code = finished.returncode
    if code == 0:
        return Verdict(True, label, f"`{command}` exited 0 in {took:.1f}s in the workdir{boxed}{tail}", details=details)
    if code in (126, 127):
        why = "no such program (exit 127)" if code == 127 else "the program could not be run (exit 126)"
        return Verdict(False, label, f"`{command}` could not start: {why}{boxed}{tail}", details=details)
    if code < 0:
        return Verdict(False, label, f"`{command}` was killed by signal {-code}{boxed}{tail}", details=details)
    return Verdict(False, label, f"`{command}` exited {code} in {took:.1f}s{boxed}{tail}", details=details)


def _tail(output: str, limit: int = 600) -> str:
    text = output.strip()
    if not text:
        return "; it printed nothing"
    shown = text if len(text) <= limit else "..." + text[-limit:]
    return f"; output{' (its end)' if len(text) > limit else ''}: {shown}"


# -- one file as the agent left it -------------------------------------------------------------------------
def _read(root: Path, path: str, limit: int, *, read: bool = True) -> tuple[bytes | None, str | None]:
    """(the file's bytes or None when there is no such file, why it cannot be read or None)."""
    from ..agent.tools import ToolError, file_beneath

    try:
        return file_beneath(root, path, limit, read=read), None
    except ToolError as exc:
        return None, str(exc)


def file_exists(path: str) -> Grader:
    """`path` is a regular file in the workdir after the agent ended (not a folder, not a link leading out)."""
    path = _path_arg("file_exists", "path", path)
    label = f"file_exists({path!r})"

    def grade(run: Run, ctx: Any) -> Verdict:
        root = _live_root(ctx)
        if root is None:
            return _stored_exists(run, ctx, path, label)
        data, problem = _read(root, path, 0, read=False)
        if problem is not None:
            return Verdict(False, label, f"{path} is not a file the agent left: {problem}")
        if data is None:
            return Verdict(False, label, f"no file {path} in the workdir{_gone_note(run, path)}")
        return Verdict(True, label, f"{path} is a regular file in the workdir")

    return Grader(label, grade, "outcome")


def _gone_note(run: Run, path: str) -> str:
    item = run.files.get(path) if run.files is not None else None
    return " (the agent removed it)" if item is not None and item.change == "removed" else ""


def _stored_exists(run: Run, ctx: Any, path: str, label: str) -> Verdict:
    if run.files is None:
        return _cannot(ctx, label, _no_workdir(ctx))
    there = run.files.after(path)
    if there is None:
        return _cannot(ctx, label, f"the stored workspace diff does not say whether {path} was there")
    item = run.files.get(path)
    how = f"the agent {item.change} it" if item is not None else "it was there, unchanged"
    return Verdict(there, label, f"{path} {'was' if there else 'was not'} a file after the agent ended, by the stored "
                   f"workspace diff ({how})")


def file_contains(path: str, text: str, *, max_bytes: int = MAX_READ_BYTES) -> Grader:
    """The file `path`, as the agent left it, contains `text`."""
    path = _path_arg("file_contains", "path", path)
    text = text_arg("file_contains", "text", text)
    if not text:
        raise ValueError("expect.file_contains: every file contains the empty text, so it could never fail; give the "
                         "text the file must contain")
    label = f"file_contains({path!r}, {text!r}{_bytes(max_bytes)})"

    def found(content: str) -> str | None:
        at = content.find(text)
        return None if at < 0 else f"at line {content.count(chr(10), 0, at) + 1}"

    return Grader(label, _file_grader(label, path, found, f"contain {text!r}", max_bytes), "outcome")


def file_matches(path: str, regex: str | re.Pattern[str], *, flags: int = 0, max_bytes: int = MAX_READ_BYTES) -> Grader:
    """The file `path`, as the agent left it, matches a regular expression (re.search)."""
    path = _path_arg("file_matches", "path", path)
    if not isinstance(regex, re.Pattern):
        try:
            regex = re.compile(text_arg("file_matches", "regex", regex), flags)
        except re.error as exc:
            raise ValueError(f"expect.file_matches: {regex!r} is not a regular expression: {exc}") from None
    pattern = regex
    label = f"file_matches({path!r}, {pattern.pattern!r}{_flags(pattern)}{_bytes(max_bytes)})"

    def found(content: str) -> str | None:
        hit = pattern.search(content)
        return None if hit is None else f"at line {content.count(chr(10), 0, hit.start()) + 1}: {clip(repr(hit.group(0)), 80)}"

    return Grader(label, _file_grader(label, path, found, f"match /{pattern.pattern}/", max_bytes), "outcome")


def _bytes(max_bytes: int) -> str:
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ValueError(f"expect: max_bytes must be a whole number of bytes, 1 or more, got {max_bytes!r}")
    return "" if max_bytes == MAX_READ_BYTES else f", max_bytes={max_bytes}"


def _file_grader(label: str, path: str, found: Any, what: str, max_bytes: int) -> Any:
    """The grading function of a file reader: the live file, or in a regrade the text the stored diff holds."""

    def grade(run: Run, ctx: Any) -> Verdict:
        root = _live_root(ctx)
        if root is None:
            return _stored_text(run, ctx, path, label, found, what)
        data, problem = _read(root, path, max_bytes)
        if problem is not None:
            return Verdict(False, label, f"{path} was not examined: {problem}")
        if data is None:
            return Verdict(False, label, f"no file {path} in the workdir{_gone_note(run, path)}")
        try:
            content = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return Verdict(False, label, f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}): not examined")
        where = found(content)
        if where is not None:
            return Verdict(True, label, f"{path} does {what} ({where}; {len(content):,} characters examined)")
        return Verdict(False, label, f"{path} does not {what} ({len(content):,} characters examined)")

    return grade


def _stored_text(run: Run, ctx: Any, path: str, label: str, found: Any, what: str) -> Verdict:
    if run.files is None:
        return _cannot(ctx, label, _no_workdir(ctx))
    if run.files.after(path) is False:
        return Verdict(False, label, f"no file {path} after the agent ended, by the stored workspace diff")
    content = run.files.text_after(path)
    if content is None:
        return _cannot(ctx, label, f"the stored workspace diff does not hold the whole text of {path} (only of a "
                                   "file the agent added, whose diff was not cut)")
    where = found(content)
    if where is not None:
        return Verdict(True, label, f"{path} does {what} ({where}; read from the stored workspace diff)")
    return Verdict(False, label, f"{path} does not {what} ({len(content):,} characters, read from the stored "
                                 "workspace diff)")


# -- judged on the workspace diff ---------------------------------------------------------------------------
def _matches(rel: str, patterns: Sequence[str]) -> bool:
    return any(rel == p or fnmatch.fnmatchcase(rel, p) or (p.endswith("/") and rel.startswith(p)) for p in patterns)


def _listing(items: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _hidden(diff: Any, patterns: Sequence[str]) -> list[str]:
    """The paths not examined that a pattern points into (a file inside `.git`, say): the diff cannot speak for them."""
    return [rel for rel in diff.not_examined
            if any(p == rel or p.startswith(rel.rstrip("/") + "/") or fnmatch.fnmatchcase(rel, p) for p in patterns)]


def file_unchanged(path: str) -> Grader:
    """No file matching `path` (a path or a glob) was added, changed or removed by the agent; at least one file
    matches (a pattern that matches nothing checks nothing, and fails)."""
    pattern = _path_arg("file_unchanged", "path", path, glob=True)
    label = f"file_unchanged({pattern!r})"

    def grade(run: Run, ctx: Any) -> Verdict:
        why = _unseen(run)
        if why is not None:
            return Verdict(False, label, why)
        diff = run.files
        assert diff is not None
        hidden = _hidden(diff, [pattern])
        if hidden:
            return Verdict(False, label, f"{pattern} was not examined: {hidden[0]}: {diff.not_examined[hidden[0]]}")
        touched = [item for item in diff.files if _matches(item.path, [pattern])]
        same = [rel for rel in diff.unchanged if _matches(rel, [pattern])]
        if touched:
            shown = _listing([f"{item.path} ({item.change})" for item in touched])
            first = touched[0].diff or ""
            return Verdict(False, label, f"the agent touched {shown}" + (f": {clip(first, 300)}" if first else ""))
        if not same:
            more = "" if diff.complete else "; the diff's listing was cut, so a match may be among what it left out"
            return Verdict(False, label, f"no file matches {pattern!r} ({diff.examined} file(s) examined): nothing to "
                                         f"check{more}")
        return Verdict(True, label, f"{_listing(same)} unchanged ({len(same)} file{'s' if len(same) != 1 else ''} "
                                    f"matched of {diff.examined} examined)")

    return Grader(label, grade, "outcome")


def changed_only(globs: str | Sequence[str]) -> Grader:
    """Nothing but files matching `globs` was added, changed or removed (nothing changed at all passes too: pair it
    with `verify` to require the work)."""
    patterns = [globs] if isinstance(globs, str) else list(globs) if isinstance(globs, (list, tuple)) else None
    if not patterns:
        raise TypeError(f"expect.changed_only: globs must be a path or glob, or a non-empty list of them, got {globs!r}")
    patterns = [_path_arg("changed_only", "a glob", p, glob=True) for p in patterns]
    label = f"changed_only({patterns!r})"

    def grade(run: Run, ctx: Any) -> Verdict:
        why = _unseen(run)
        if why is not None:
            return Verdict(False, label, why)
        diff = run.files
        assert diff is not None
        outside = [item for item in diff.files if not _matches(item.path, patterns)]
        unlisted = f"; {diff.cut}: they were not checked" if diff.cut else ""
        skipped = f"; not examined: {_listing(list(diff.not_examined), 3)}" if diff.not_examined else ""
        if outside:
            shown = _listing([f"{item.path} ({item.change})" for item in outside])
            return Verdict(False, label, f"the agent also changed {shown}; allowed: {', '.join(patterns)}{unlisted}")
        if diff.cut:
            return Verdict(False, label, f"cannot tell: {diff.cut}, so they were not checked against "
                                         f"{', '.join(patterns)}")
        inside = _listing([f"{item.path} ({item.change})" for item in diff.files])
        what = f"only {inside} changed" if diff.files else "nothing changed"
        return Verdict(True, label, f"{what} (allowed: {', '.join(patterns)}); {diff.examined} file(s) examined{skipped}")

    return Grader(label, grade, "outcome")
