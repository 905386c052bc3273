"""Tools for the reference agent: `@tool` (schema from the signature) and `shell_tools(root)`.

A tool's JSON schema comes from its signature through pydantic, its description from its docstring, and its
arguments are validated against that schema before it runs, so a model's malformed call becomes an error result
the model can read, never a crash.
"""

from __future__ import annotations

import asyncio
import codecs
import functools
import inspect
import json
import os
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from .._util.workers import DAEMON_THREADS, call_with_limit
from ..trajectory import killed_text
from ..wire import ToolSpec
from . import _confine
from ._commands import CURRENT_CALL, CallScope, command_env, cut_note, run_shell, stop_commands

__all__ = ["Tool", "ToolError", "tool", "shell_tools", "stop_commands"]


class ToolError(Exception):
    """A tool's own refusal or failure, reported to the model as an error result (not a crash)."""


def _check_timeout(value: float | None, what: str) -> float | None:
    """A time limit in seconds, or None for none. Zero or less is refused: `0` reads as "no time at all" to some
    and "no limit" to others, and either guess would surprise half of them."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
        raise ValueError(f"{what} must be a positive number of seconds, or None for no limit; got {value!r}")
    return float(value)


def _doc_parts(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The docstring's description, and per-parameter text from an `Args:` section when there is one."""
    doc = inspect.getdoc(fn) or ""
    description: list[str] = []
    params: dict[str, str] = {}
    in_args = False
    current: str | None = None
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped.lower() in ("args:", "arguments:", "parameters:"):
            in_args = True
            continue
        if in_args:
            if not stripped:
                current = None
                continue
            head, sep, rest = stripped.partition(":")
            name = head.split("(")[0].strip()
            if sep and name.isidentifier() and line.startswith((" ", "\t")) and not line.startswith(("        ", "\t\t")):
                current = name
                params[name] = rest.strip()
            elif current:
                params[current] += " " + stripped
            continue
        description.append(line)
    return "\n".join(description).strip(), params


class Tool:
    """A function the agent can call, with a JSON schema the model sees."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout_s: float | None = None,
    ) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        doc, param_docs = _doc_parts(fn)
        self.description = description if description is not None else doc
        self.timeout_s = _check_timeout(timeout_s, f"timeout_s of tool {self.name}")
        self.is_async = inspect.iscoroutinefunction(fn)
        self._model = self._arguments_model(fn, param_docs)
        schema = self._model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        self.parameters: dict[str, Any] = schema

    def _arguments_model(self, fn: Callable[..., Any], docs: dict[str, str]) -> type[BaseModel]:
        try:
            hints = get_type_hints(fn)
        except Exception:  # noqa: BLE001 - unresolvable annotations fall back to Any
            hints = {}
        fields: dict[str, Any] = {}
        from pydantic import Field

        for param in inspect.signature(fn).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            annotation = hints.get(param.name, Any)
            default = ... if param.default is param.empty else param.default
            fields[param.name] = (annotation, Field(default, description=docs.get(param.name)))
        return create_model(
            f"{self.name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
        )

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Check arguments against the schema; raise ToolError with a message the model can act on."""
        try:
            model = self._model.model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in error['loc']) or '(arguments)'}: {error['msg']}" for error in exc.errors()
            )
            raise ToolError(f"invalid arguments for {self.name}: {problems}") from None
        return {key: getattr(model, key) for key in type(model).model_fields}

    async def run(self, arguments: dict[str, Any], *, timeout_s: float | None = None) -> str:
        """Validate, call (a sync tool in a thread), time-limit, and render the result as text.

        A sync tool with a time limit runs on a daemon thread of its own that starts it at once, so its clock starts
        when it starts: a shared fixed-size pool would count the time it waited for a free worker, and time out busy
        tools that were never slow. A call that is given up on (its time limit, or the awaiting task cancelled) is abandoned:
        the commands it started are killed (see `_commands`), as a thread cannot be.
        """
        values = self.validate(arguments)
        limit = self._limit(timeout_s)
        scope = CallScope()
        token = CURRENT_CALL.set(scope)  # copied into the worker thread (and into an async tool's task)
        started = time.monotonic()
        try:
            if self.is_async:
                result = await (asyncio.wait_for(self.fn(**values), limit) if limit is not None else self.fn(**values))
            elif limit is not None:
                result = await asyncio.wait_for(DAEMON_THREADS.start(functools.partial(self.fn, **values)), limit)
            else:
                result = await asyncio.to_thread(self.fn, **values)  # to_thread copies contextvars
        except asyncio.TimeoutError:
            scope.abandon()
            if limit is not None and time.monotonic() - started >= limit:
                raise ToolError(f"{self.name} timed out after {limit:g}s") from None
            raise  # the tool's own TimeoutError, before its limit
        except BaseException:  # cancelled (a case's timeout, Ctrl-C), or the tool raised: nothing of it may run on
            scope.abandon()
            raise
        finally:
            CURRENT_CALL.reset(token)
        return _render(result)

    def run_sync(self, arguments: dict[str, Any], *, timeout_s: float | None = None) -> str:
        """The same, without an event loop. A time limit runs the tool on a daemon thread that starts it at once
        (`_util.workers.call_with_limit`), and abandons it when late: a thread cannot be killed, but the commands
        it started are, and it no longer holds anyone up."""
        values = self.validate(arguments)
        limit = self._limit(timeout_s)
        scope = CallScope()
        token = CURRENT_CALL.set(scope)
        try:
            if self.is_async:
                started = time.monotonic()
                coroutine = self.fn(**values)
                try:
                    return _render(asyncio.run(asyncio.wait_for(coroutine, limit) if limit is not None else coroutine))
                except asyncio.TimeoutError:
                    if limit is not None and time.monotonic() - started >= limit:
                        raise ToolError(f"{self.name} timed out after {limit:g}s") from None
                    raise
            if limit is None:
                return _render(self.fn(**values))
            finished, result = call_with_limit(self.fn, values, limit)
            if not finished:
                raise ToolError(f"{self.name} timed out after {limit:g}s")
            return _render(result)
        except BaseException:  # timed out, interrupted, or the tool raised: nothing of it may run on
            scope.abandon()
            raise
        finally:
            CURRENT_CALL.reset(token)

    def _limit(self, timeout_s: float | None) -> float | None:
        """The time limit of a call: the tool's own, else the caller's; None means no limit."""
        if self.timeout_s is not None:
            return self.timeout_s
        return _check_timeout(timeout_s, f"timeout_s for tool {self.name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


@overload
def tool(fn: Callable[..., Any], *, name: str | None = None, description: str | None = None,
         timeout_s: float | None = None) -> Tool: ...
@overload
def tool(fn: None = None, *, name: str | None = None, description: str | None = None,
         timeout_s: float | None = None) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None, *, name: str | None = None, description: str | None = None,
    timeout_s: float | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a function a tool: `@tool` or `@tool(name=..., timeout_s=...)`.

    >>> @tool
    ... def read_notes(topic: str, limit: int = 5) -> str:
    ...     '''Read the notes about a topic.'''
    ...     return f"{limit} notes on {topic}"
    >>> read_notes.parameters["required"], read_notes.description
    (['topic'], 'Read the notes about a topic.')
    """

    def wrap(func: Callable[..., Any]) -> Tool:
        return Tool(func, name=name, description=description, timeout_s=timeout_s)

    return wrap(fn) if fn is not None else wrap


def _render(result: Any) -> str:
    """A tool's return value as the text the model reads: strings as they are, anything else as JSON."""
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(result)


# -- shell tools -------------------------------------------------------------------------------------------


def _parts(root: Path, path: str) -> list[str]:
    """The components of a tool's `path` argument beneath `root`; refuses what is plainly outside it."""
    if not isinstance(path, str) or not path.strip():
        raise ToolError("path must be a non-empty string")
    if "\x00" in path:
        raise ToolError("path contains a NUL byte")
    try:
        return _confine.split(str(root), path)
    except _confine.Outside as exc:
        raise _outside(path, str(exc)) from None


def _outside(path: str, how: str) -> ToolError:
    return ToolError(f"path {path!r} is outside the workspace ({how}); only paths under the workspace root are allowed")


@contextmanager
def _beneath(root: Path, path: str, **options: bool) -> Iterator[tuple[int, str]]:
    """(parent folder descriptor, name) of `path`, resolved beneath `root` without a check-then-use gap."""
    parts = _parts(root, path)
    try:
        with _confine.parent_of(str(root), parts, **options) as found:
            yield found
    except _confine.Outside as exc:
        raise _outside(path, str(exc)) from None
    except FileNotFoundError:
        raise ToolError(f"no such file or folder: {path}") from None
    except NotADirectoryError:
        raise ToolError(f"{path}: a part of it is not a folder") from None
    except OSError as exc:  # ELOOP: a symlink swapped in on the way, or a loop of symlinks
        if isinstance(exc, ToolError):
            raise
        raise ToolError(f"{path}: cannot be reached inside the workspace ({exc.strerror or exc})") from None


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    tail = limit - head
    return text[:head] + cut_note(len(text) - head - tail, len(text)) + (text[-tail:] if tail else "")


def _check_file(info: os.stat_result, shown: str, doing: str) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"{shown} is a directory" + ("; use list_dir to see what is in it" if doing == "read" else ""))
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{shown} is not a regular file; refusing to {doing} it")
    if info.st_nlink > 1:
        raise ToolError(
            f"{shown} has {info.st_nlink} hard links: its content is shared with another path, which may be "
            f"outside the workspace; refusing to {doing} it"
        )


# O_NOFOLLOW: a symlink swapped in at the last moment fails the open. O_NONBLOCK: a FIFO swapped in after the look
# cannot block the open (the descriptor is checked again before any byte moves).
_OPEN_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def _open_file(parent: int, name: str, shown: str, doing: str, flags: int) -> int | None:
    """Open the regular file `name` in folder `parent` (None when it does not exist and `flags` do not create it).

    It is looked at first without being opened (opening a FIFO would wake a writer waiting on it, a device may be
    anything), then opened with `O_NOFOLLOW | O_NONBLOCK` and checked to be the same file.
    """
    try:
        seen: os.stat_result | None = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        seen = None
    if seen is not None:
        if stat.S_ISLNK(seen.st_mode):
            raise ToolError(f"{shown} is a symbolic link; refusing to {doing} through it")
        _check_file(seen, shown, doing)
    elif not flags & os.O_CREAT:
        return None
    try:
        fd = os.open(name, flags | _OPEN_FLAGS, 0o666, dir_fd=parent)
    except FileNotFoundError:
        return None
    except OSError as exc:  # ELOOP (a symlink swapped in), ENXIO (a FIFO nobody reads), ...
        raise ToolError(f"{shown} is not a regular file ({exc.strerror}); refusing to {doing} it") from None
    try:
        info = os.fstat(fd)
        _check_file(info, shown, doing)
        if seen is not None and (info.st_dev, info.st_ino) != (seen.st_dev, seen.st_ino):
            raise ToolError(f"{shown} was replaced while it was opened; refusing to {doing} it")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _listed(name: str, is_dir: bool, is_link: bool) -> str:
    """One line of list_dir: a name that could be read as something else (a newline, a control character, a
    backslash, a leading quote) is shown JSON-quoted, so no file name can forge an entry."""
    shown = json.dumps(name, ensure_ascii=False) if (not name.isprintable() or "\\" in name or name.startswith('"')) else name
    return shown + ("/" if is_dir else "@" if is_link else "")


def _read_capped(fd: int, limit: int) -> str:
    """A file's text, reading at most about `limit` bytes: all of a small file, else its head and tail around a
    note of how many bytes were left out (split characters at the cuts are dropped, not garbled)."""
    size = os.fstat(fd).st_size
    if size <= limit:
        chunks: list[bytes] = []
        have = 0
        while have <= limit:  # the file may have grown since: read one byte more than the limit at most
            chunk = os.read(fd, limit + 1 - have)
            if not chunk:
                break
            chunks.append(chunk)
            have += len(chunk)
        data = b"".join(chunks)
        if len(data) <= limit:
            return data.decode("utf-8", "replace")
        size = max(size, len(data))
    head_n = limit * 3 // 4
    tail_n = limit - head_n
    head = codecs.getincrementaldecoder("utf-8")("replace").decode(os.pread(fd, head_n, 0), False)
    tail_bytes = os.pread(fd, tail_n, size - tail_n) if tail_n else b""
    skip = 0
    while skip < min(3, len(tail_bytes)) and 0x80 <= tail_bytes[skip] < 0xC0:  # a character cut in two
        skip += 1
    tail = tail_bytes[skip:].decode("utf-8", "replace")
    return head + cut_note(size - head_n - tail_n, size, "bytes", "the file is") + tail


def read_beneath(root: Path, path: str, limit: int) -> str:
    """read_file's rule, for every reader of a file an agent made (a process agent's `output = "file:..."` too):
    `path` resolved beneath `root` (no symlink leading out), a regular file only (never a FIFO or a device),
    not hard-linked, at most about `limit` bytes read. ToolError says which rule it broke."""
    with _beneath(root, path) as (parent, name):
        fd = _open_file(parent, name, path, "read", os.O_RDONLY)
    if fd is None:
        raise ToolError(f"no such file: {path}")
    try:
        return _read_capped(fd, limit)
    finally:
        os.close(fd)


def file_beneath(root: Path, path: str, limit: int, *, read: bool = True) -> bytes | None:
    """read_beneath's rule, for a grader that must see a whole file or none (`expect.file_contains`): the bytes of
    the regular file `path` beneath `root` (b"" with `read=False`: only that it is one), None when there is no such
    file; ToolError for anything else, a file of more than `limit` bytes included (never a part of it)."""
    try:
        with _beneath(root, path) as (parent, name):
            fd = _open_file(parent, name, path, "read", os.O_RDONLY)
    except ToolError as exc:
        if str(exc).startswith("no such file or folder"):
            return None
        raise
    if fd is None:
        return None
    try:
        size = os.fstat(fd).st_size
        if not read:
            return b""
        if size > limit:
            raise ToolError(f"{path} is {size:,} bytes, more than the {limit:,} bytes a grader reads")
        chunks: list[bytes] = []
        have = 0
        while have <= limit:
            chunk = os.read(fd, limit + 1 - have)
            if not chunk:
                break
            chunks.append(chunk)
            have += len(chunk)
        if have > limit:
            raise ToolError(f"{path} grew past the {limit:,} bytes a grader reads while it was read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def shell_tools(
    root: str | os.PathLike[str], *, timeout_s: float | None = 30.0, max_output: int = 10_000, writable: bool = True,
    sandbox: Any = "none",
    pass_env: tuple[str, ...] | list[str] = (),
) -> list[Tool]:
    """run_command, read_file, write_file and list_dir for a workspace `root`.

    What is confined: the PATHS of read_file, write_file and list_dir. They are resolved beneath `root` with no gap
    between check and use (`_confine`: openat2 RESOLVE_BENEATH, else an O_NOFOLLOW walk from a folder descriptor),
    so `..`, absolute paths elsewhere, symlinks leading out and a parent folder swapped for a symlink mid-call are
    all refused; read_file follows a relative symlink that stays inside, write_file writes through no symlink at
    all, and list_dir never follows one (it shows `name@`) and JSON-quotes names that hold a newline or other
    control character, so a name cannot forge an entry. Only regular files are read or written (never a
    FIFO or device, which could block or be anything), and never one with several hard links (its content is
    shared with a path that may be outside `root`). read_file reads at most about `max_output` bytes and list_dir
    lists at most `max_output` characters, with a note of what was cut.

    What is NOT confined: run_command. It runs through the shell with `root` as its working folder, and the command
    can read and write anything the user running trialrun can (`cat /etc/passwd`, `cd ..`): a sandbox for commands is
    not part of these tools. What it does guarantee: the command starts with an environment cut to an
    allow-list (`COMMAND_ENV`: PATH, HOME, LANG, TERM, ..., `LC_*`, plus the names in `pass_env`, in the sandbox
    too; trialrun.toml's `pass_env`), never the
    parent's API keys; its result has the exit code and the output, capped at `max_output` characters (read as it
    arrives: memory stays bounded whatever a command prints); and it has a timeout (None: none), after which its
    everything it started is killed, even children that left its session with `setsid`, forked twice or cleared
    their environment: each command runs under a keeper, a child subreaper (see `_commands`). Background children
    of a command that finished are killed when the trial ends.
    `sandbox` ("none", "bwrap", "auto") runs each command under bubblewrap: only `root` writable, no network, no
    secrets in its environment, nothing it starts outliving it (see `trialrun._contain.sandbox`): the way to confine
    run_command.
    """
    base, limit_s, sandbox = _workspace(root, timeout_s, max_output, sandbox)
    tools = [_run_command_tool(base, limit_s, max_output, sandbox, pass_env),
             _read_file_tool(base, max_output), _list_dir_tool(base, max_output)]
    if writable:
        tools.insert(2, _write_file_tool(base))
    return tools


def _workspace(
    root: str | os.PathLike[str], timeout_s: float | None, max_output: int, sandbox: Any
) -> tuple[Path, float | None, Any]:
    """shell_tools' arguments checked once, before any tool exists: the resolved root, the time limit and the
    resolved sandbox. A bad one is a ValueError now, never a surprise at the model's first call."""
    base = Path(root).resolve()
    if sandbox != "none":
        from .._contain.sandbox import resolve_sandbox

        sandbox = resolve_sandbox(sandbox)
    if not base.is_dir():
        raise ValueError(f"shell_tools root {str(root)!r} is not a directory")
    limit_s = _check_timeout(timeout_s, "shell_tools timeout_s")
    if isinstance(max_output, bool) or not isinstance(max_output, int) or max_output < 1:
        raise ValueError(f"shell_tools max_output must be a positive number of characters, got {max_output!r}")
    return base, limit_s, sandbox


# Each tool below is made by a function of its own, so its closure holds only what it needs; the inner function's
# name, signature and docstring are the tool's name, schema and description the model sees.
def _run_command_tool(
    base: Path, limit_s: float | None, max_output: int, sandbox: Any, pass_env: tuple[str, ...] | list[str]
) -> Tool:
    """run_command: a shell command in `base`, with the cut environment, capped output and time limit."""

    def run_command(command: str) -> str:
        """Run a shell command in the workspace and return its exit code and output."""
        finished = run_shell(command, base, limit_s, max_output, None if sandbox == "none" else sandbox,
                             env=command_env(pass_env), pass_env=tuple(pass_env))
        if finished.stopped == "timeout":
            raise ToolError(
                f"command timed out after {limit_s:g}s; it was stopped"
                + (f"; partial output:\n{finished.output}" if finished.output else " (no output before that)")
            )
        if finished.stopped == "keeper lost":
            raise ToolError(f"command stopped: its keeper was {finished.lost} (by the command); everything it started "
                            f"was killed ({killed_text(list(finished.killed)) or 'nothing was left'})")
        if finished.stopped is not None:
            raise ToolError(f"command stopped: its workspace {base} was removed")
        return f"exit code: {finished.returncode}\n{finished.output}"

    return Tool(run_command)


def _read_file_tool(base: Path, max_output: int) -> Tool:
    """read_file: read_beneath's rule, at most about `max_output` bytes."""

    def read_file(path: str) -> str:
        """Read a text file in the workspace."""
        return read_beneath(base, path, max_output)

    return Tool(read_file)


def _write_file_tool(base: Path) -> Tool:
    """write_file: a regular file beneath `base`, written through no symlink."""

    def write_file(path: str, content: str) -> str:
        """Write a text file in the workspace (creating folders as needed)."""
        with _beneath(base, path, create=True, follow_last=False) as (parent, name):
            if name in (".", ".."):
                raise ToolError(f"{path} is a directory")
            fd = _open_file(parent, name, path, "write", os.O_WRONLY | os.O_CREAT)  # no O_TRUNC before the checks
        assert fd is not None
        with os.fdopen(fd, "wb") as handle:
            handle.truncate(0)
            handle.write(content.encode("utf-8"))
        return f"wrote {len(content)} characters to {path}"

    return Tool(write_file)


def _list_dir_tool(base: Path, max_output: int) -> Tool:
    """list_dir: a folder beneath `base`, never following a symlink, at most `max_output` characters."""

    def list_dir(path: str = ".") -> str:
        """List a folder of the workspace (folders end with /, symlinks with @; they are not followed)."""
        with _beneath(base, path, follow_last=False) as (parent, name):
            try:
                fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | _OPEN_FLAGS, dir_fd=parent)
            except FileNotFoundError:
                raise ToolError(f"no such folder: {path}") from None
            except OSError:  # ENOTDIR, or ELOOP: a symlink, which list_dir does not follow
                raise ToolError(f"{path} is not a folder") from None
        try:
            with os.scandir(fd) as entries:
                names = sorted(_listed(e.name, e.is_dir(follow_symlinks=False), e.is_symlink()) for e in entries)
        finally:
            os.close(fd)
        return _cap("\n".join(names), max_output) if names else "(empty)"

    return Tool(list_dir)
