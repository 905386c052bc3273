"""Tools for the reference agent: `@tool` (schema from the signature) and `shell_tools(root)`.

A tool's JSON schema comes from its signature through pydantic, its description from its docstring, and its
arguments are validated against that schema before it runs, so a model's malformed call becomes an error result
the model can read, never a crash.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from .._threads import Workers
from ..wire import ToolSpec

__all__ = ["Tool", "ToolError", "tool", "shell_tools"]


class ToolError(Exception):
    """A tool's own refusal or failure, reported to the model as an error result (not a crash)."""


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
        self.timeout_s = timeout_s
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
        return create_model(  # type: ignore[call-overload, no-any-return]
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

        A sync tool with a time limit runs on a worker that starts it at once, so its clock starts when it starts:
        a shared fixed-size pool would count the time it waited for a free worker, and time out busy tools that
        were never slow.
        """
        values = self.validate(arguments)
        limit = self.timeout_s if self.timeout_s is not None else timeout_s
        if self.is_async:
            call = self.fn(**values)
        elif limit:
            call = _thread_future(self.fn, values, self.name)
        else:
            call = asyncio.to_thread(self.fn, **values)  # to_thread copies contextvars
        try:
            result = await (asyncio.wait_for(call, limit) if limit else call)
        except asyncio.TimeoutError:
            raise ToolError(f"{self.name} timed out after {limit:g}s") from None
        return _render(result)

    def run_sync(self, arguments: dict[str, Any], *, timeout_s: float | None = None) -> str:
        """The same, without an event loop. A time limit runs the tool on a daemon worker that starts it at once
        (`_threads.Workers`), and abandons it when late (a thread cannot be killed; it no longer holds anyone up)."""
        values = self.validate(arguments)
        limit = self.timeout_s if self.timeout_s is not None else timeout_s
        if self.is_async:
            return _render(asyncio.run(asyncio.wait_for(self.fn(**values), limit) if limit else self.fn(**values)))
        if not limit:
            return _render(self.fn(**values))
        done = threading.Event()
        outcome: list[Any] = []  # [value] or [None, exception]

        def work() -> None:
            try:
                outcome.append(context.run(self.fn, **values))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller below
                outcome.extend([None, exc])
            finally:
                done.set()

        context = contextvars.copy_context()
        _WORKERS.submit(work)
        if not done.wait(limit):
            raise ToolError(f"{self.name} timed out after {limit:g}s")
        if len(outcome) == 2:
            raise outcome[1]
        return _render(outcome[0])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


_WORKERS = Workers("trialrun-tool")


def _thread_future(fn: Callable[..., Any], values: dict[str, Any], name: str) -> asyncio.Future[Any]:
    """Run a sync tool on a daemon worker at once; the future settles on the running loop when it returns."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, error: BaseException | None) -> None:
        if not future.done():  # a timed-out call was cancelled: its late result goes nowhere
            if error is None:
                future.set_result(value)
            else:
                future.set_exception(error)

    def work() -> None:
        try:
            value, error = context.run(fn, **values), None
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting caller
            value, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, value, error)
        except RuntimeError:  # the loop closed while the abandoned tool ran on
            pass

    _WORKERS.submit(work)
    return future


def tool(
    fn: Callable[..., Any] | None = None, *, name: str | None = None, description: str | None = None,
    timeout_s: float | None = None,
) -> Any:
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


def _confine(root: Path, path: str) -> Path:
    """Resolve `path` inside `root`; refuse `..`, absolute paths elsewhere and symlinks that lead out."""
    if not isinstance(path, str) or not path.strip():
        raise ToolError("path must be a non-empty string")
    if "\x00" in path:
        raise ToolError("path contains a NUL byte")
    candidate = Path(path)
    target = (candidate if candidate.is_absolute() else root / candidate).resolve()
    if target != root and root not in target.parents:
        raise ToolError(f"path {path!r} is outside the workspace; only paths under the workspace root are allowed")
    return target


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters cut; output was {len(text)} characters ...]\n{text[-tail:]}"


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group a command runs in (its shell and everything the shell started)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # already gone (or not ours): make sure of the shell itself
        process.kill()


def _leftover_output(process: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """What a killed command wrote before it died (communicate keeps what it read before the timeout)."""
    try:
        return process.communicate(timeout=2.0)
    except subprocess.TimeoutExpired as exc:  # a process that left the group still holds the pipes: stop reading
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
        process.wait()
        return _as_bytes(exc.stdout), _as_bytes(exc.stderr)


def _as_bytes(data: bytes | str | None) -> bytes:
    return data.encode() if isinstance(data, str) else (data or b"")


def _joined(out: bytes | None, err: bytes | None) -> str:
    """Standard output, then standard error on a line of its own, decoded (undecodable bytes replaced)."""
    output = (out or b"").decode("utf-8", "replace")
    if err:
        output += ("" if not output or output.endswith("\n") else "\n") + err.decode("utf-8", "replace")
    return output


def shell_tools(
    root: str | os.PathLike[str], *, timeout_s: float = 30.0, max_output: int = 10_000, writable: bool = True,
) -> list[Tool]:
    """run_command, read_file, write_file and list_dir, every path confined to `root`.

    run_command runs through the shell in `root` with a timeout; its result has the exit code and the output,
    capped at `max_output` characters with a note of what was cut.
    """
    base = Path(root).resolve()
    if not base.is_dir():
        raise ValueError(f"shell_tools root {str(root)!r} is not a directory")

    def run_command(command: str) -> str:
        """Run a shell command in the workspace and return its exit code and output."""
        # A session of its own: on timeout the whole process group goes, not only /bin/sh (`sleep 987 & wait`
        # would otherwise outlive the trial, and keep the output pipes open).
        process = subprocess.Popen(
            command, shell=True, cwd=base, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            out, err = _leftover_output(process)
            partial = _joined(out, err)
            raise ToolError(
                f"command timed out after {timeout_s:g}s; it was stopped"
                + (f"; partial output:\n{_cap(partial, max_output)}" if partial else " (no output before that)")
            ) from None
        return f"exit code: {process.returncode}\n{_cap(_joined(out, err), max_output)}"

    def read_file(path: str) -> str:
        """Read a text file in the workspace."""
        target = _confine(base, path)
        if not target.is_file():
            raise ToolError(f"no such file: {path}")
        return _cap(target.read_text(encoding="utf-8", errors="replace"), max_output)

    def write_file(path: str, content: str) -> str:
        """Write a text file in the workspace (creating folders as needed)."""
        target = _confine(base, path)
        if target.is_dir():
            raise ToolError(f"{path} is a directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return f"wrote {len(content)} characters to {path}"

    def list_dir(path: str = ".") -> str:
        """List a folder of the workspace (folders end with /)."""
        target = _confine(base, path)
        if not target.is_dir():
            raise ToolError(f"no such folder: {path}")
        entries = sorted(target.iterdir(), key=lambda p: p.name)
        return "\n".join(p.name + ("/" if p.is_dir() else "") for p in entries) or "(empty)"

    tools = [Tool(run_command), Tool(read_file), Tool(list_dir)]
    if writable:
        tools.insert(2, Tool(write_file))
    return tools
