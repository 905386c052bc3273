"""ProcessAgent: an agent in another process (a CLI coding agent), run once per trial against the case's model.

Per trial: the case's model transport is served on loopback (`ctx.serve`), the agent gets the base URLs and a
dummy key in its environment, runs in the trial's workdir with stdin closed, under a keeper (a child subreaper:
`_containment`), so that a timeout, a cancel, Ctrl-C or its own exit kills everything it started, even what left
its session, and the run says what was killed (`Run.killed`); its trajectory is read off the wire like any other
agent's. The presets (`trialrun.agents.pi`, ...) are subclasses that also write the agent's own
configuration and read its own permission refusals.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import hashlib
import json
import os
import shlex
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol, Union

from .._contain.keeper import AsyncKeeper, keeper_argv
from .._contain.scope import Scope
from .._scrub import add_secret, is_secret_name
from ..trajectory import Denial, Run, ToolCall, ToolResult, Trajectory, killed_text
from ._head import _Head
from ._mcp import COMMAND_SUPPORT, given_mcp, servers_file

if TYPE_CHECKING:
    from .._contain.sandbox import Sandbox
    from ..case import TrialContext
    from ..endpoint import ModelEndpoint
    from ..mcp import McpEndpoint

__all__ = ["ProcessAgent", "AgentNotFound", "Launch", "ResultReader", "DUMMY_KEY"]

DUMMY_KEY = "trialrun-dummy-key"
#: Output: "stdout", "file:PATH" (relative to the workdir), or a function (stdout, ctx) -> output.
Output = Union[str, Callable[[str, "TrialContext"], Any]]

_STDOUT_LIMIT = 1_000_000  # characters of stdout kept as the output
_DEFAULT_TIMEOUT_S = 300.0


class ResultReader(Protocol):
    """What reads one run's tool results in the agent's own forms (a ProcessAgent itself, or a reading bound to
    what the agent printed about that run): see `ProcessAgent.refusal_in` and `ProcessAgent.error_in`."""

    def refusal_in(self, call: ToolCall, result: ToolResult) -> str | None: ...

    def error_in(self, call: ToolCall, result: ToolResult) -> bool | None: ...


class AgentNotFound(RuntimeError):
    """The agent's program is not installed (the message says which npm package to install)."""


@dataclass
class Launch:
    """What one trial runs: the command line, the environment added to the base one, and the trial's private
    HOME (a temporary folder the agent's configuration is written into, removed after the trial)."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    home: Path | None = None


def endpoint_env(endpoint: ModelEndpoint, api: str, model_name: str | None) -> dict[str, str]:
    """The variables that point OpenAI-, Anthropic- and Gemini-style clients at the endpoint, with a dummy key."""
    env = {
        "OPENAI_BASE_URL": endpoint.openai_base_url,
        "OPENAI_API_BASE": endpoint.openai_base_url,
        "OPENAI_API_KEY": DUMMY_KEY,
        "ANTHROPIC_BASE_URL": endpoint.anthropic_base_url,
        "ANTHROPIC_API_KEY": DUMMY_KEY,
        "GOOGLE_GEMINI_BASE_URL": endpoint.url,
        "GEMINI_BASE_URL": endpoint.url,
        "GEMINI_API_KEY": DUMMY_KEY,
        "GOOGLE_API_KEY": DUMMY_KEY,
        "TRIALRUN_ENDPOINT": endpoint.url,
        "TRIALRUN_API": api,
    }
    if model_name:
        env["TRIALRUN_MODEL"] = model_name
    return env


class _Tail:
    """The last `limit` characters of a stream, and how many it had."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.text = ""
        self.total = 0

    def feed(self, text: str) -> None:
        self.total += len(text)
        self.text = (self.text + text)[-self.limit:]

    def render(self) -> str:
        cut = self.total - len(self.text)
        return (f"[... {cut} characters cut ...]\n" if cut > 0 else "") + self.text


@dataclass
class _Started:
    """An agent's process once launched: when, its keeper (None without one), the sandbox's cleanup, its scope, the
    direct child when there is no keeper server to fork it, its stdout and stderr."""

    began: float
    keeper: AsyncKeeper | None
    cleanup: Callable[[], None] | None
    scope: Scope
    process: asyncio.subprocess.Process | None = None
    exited: asyncio.Future[None] | None = None
    streams: list[asyncio.StreamReader] = field(default_factory=list)

    def abandon(self, pipes: tuple[int, int] | None, files: list[BinaryIO]) -> None:
        """Undo a launch that failed part way: the keeper (which kills all when its socket closes), the pipes not
        yet handed to a stream, the sandbox. A pipe is closed once, by whoever owns it: its stream (at the pipe's
        end), else its file object, whose close a transport made for it meanwhile may repeat harmlessly (a
        connection cancelled half made closes it too), else the bare descriptor."""
        if self.keeper is not None:
            self.keeper.close()
        for index, fd in enumerate(pipes or ()):
            if index < len(self.streams):
                continue
            if index < len(files):
                files[index].close()
            else:
                os.close(fd)
        if self.cleanup is not None:
            self.cleanup()

    def exit_code(self) -> int:
        """The agent's exit status as its keeper reported it, else its own, else -9 (killed, status unknown)."""
        status = self.keeper.reports.status if self.keeper is not None else None
        returncode = self.process.returncode if self.process is not None else None
        return status if status is not None else returncode if returncode is not None else -9


async def _read(stream: asyncio.StreamReader, sink: Callable[[str], None]) -> None:
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    while chunk := await stream.read(1 << 16):
        sink(decoder.decode(chunk))
    sink(decoder.decode(b"", True))


class ProcessAgent:
    """An agent that runs as a command: `ProcessAgent(["my-agent", "--print", "{prompt}"])`.

    `argv` is a list (or a string split like a shell would, never run through one); `{prompt}` is replaced by the
    prompt as ONE argument (appended as the last argument when no element names it), `{model}` by the model
    name, `{workdir}` by the trial's folder. `env` adds variables. `api` is the wire format the agent will speak
    (recorded, and passed on as TRIALRUN_API), `model_name` is passed as `{model}` and TRIALRUN_MODEL.
    `timeout_s` stops the agent (and everything it started). `output` is "stdout", "file:PATH" (a file the agent
    writes in its workdir) or a function `(stdout, ctx) -> output`. `sandbox` is "none", "bwrap" or "auto".
    `max_body` is the largest request body the model endpoint reads, in bytes (larger: 413 and a note; default
    32 MiB).

    Call it as a suite agent, `agent(prompt, ctx)`, or in a Case's invoke with the model to serve:
    `invoke=lambda ctx: agent("make a marker file", ctx, model=tr.ScriptedModel(...))` (it is a coroutine: the
    runner awaits it, and cancelling it kills the agent's processes).
    """

    #: the agent's name in reports and config_snapshot
    label = "command"
    #: its shell tool: (tool name, argument holding the command), when known
    shell_tool: tuple[str, str] | None = None

    def __init__(
        self,
        argv: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        api: str = "openai-chat",
        model_name: str | None = None,
        timeout_s: float | None = _DEFAULT_TIMEOUT_S,
        output: Output = "stdout",
        sandbox: str | Sandbox = "none",
        stderr_tail: int = 4000,
        max_body: int | None = None,
    ) -> None:
        from .._contain.sandbox import resolve_sandbox

        self.argv = shlex.split(argv) if isinstance(argv, str) else [str(a) for a in argv]
        if not self.argv:
            raise ValueError("ProcessAgent: argv is empty; give the command to run, e.g. ['pi', '-p', '{prompt}']")
        from ..wire import CODECS  # the wire APIs are the codecs trialrun has: one list, the registry's

        if api not in CODECS:
            raise ValueError(f"ProcessAgent: api must be one of {', '.join(CODECS)}, got {api!r}")
        bad_arg = next((a for a in self.argv if "\0" in a), None)
        if bad_arg is not None:
            raise ValueError(f"ProcessAgent: argv holds a NUL byte (no program can receive it): {bad_arg!r}")
        if timeout_s is not None and (isinstance(timeout_s, bool) or not (
                isinstance(timeout_s, (int, float)) and 0 < timeout_s < float("inf"))):
            raise ValueError(f"ProcessAgent: timeout_s must be a positive number of seconds, got {timeout_s!r}")
        if isinstance(output, str) and output != "stdout" and not (output.startswith("file:") and output[5:]):
            raise ValueError(f"ProcessAgent: output must be 'stdout', 'file:PATH' or a function, got {output!r}")
        if not isinstance(output, str) and not callable(output):
            raise ValueError(f"ProcessAgent: output must be 'stdout', 'file:PATH' or a function, got {output!r}")
        self.env = dict(env or {})
        for name, value in self.env.items():
            if not isinstance(name, str) or not name or "=" in name or "\0" in name:
                raise ValueError(f"ProcessAgent: env: {name!r} is not a variable name (text, without '=' or NUL)")
            if not isinstance(value, str):
                raise ValueError(f"ProcessAgent: env {name}: must be text, got {type(value).__name__} {value!r}")
            if "\0" in value:
                raise ValueError(f"ProcessAgent: env {name}: holds a NUL byte (no program can receive it)")
        for name, value in self.env.items():  # a credential given to the agent (trialrun.toml's env): scrubbed
            if is_secret_name(name):            # wherever the agent prints it, as the run's own environment is
                add_secret(value, source=f"{type(self).__name__} env {name}")
        self.api = api
        self.model_name = model_name
        self.timeout_s = None if timeout_s is None else float(timeout_s)
        self.output = output
        self.sandbox = resolve_sandbox(sandbox).for_command(self.argv)  # what it mounts: from the configuration
        self.stderr_tail = stderr_tail
        if max_body is not None and (isinstance(max_body, bool) or not isinstance(max_body, int) or max_body <= 0):
            raise ValueError(f"ProcessAgent: max_body must be a positive number of bytes, got {max_body!r}")
        self.max_body = max_body  # the largest request body its endpoint reads (None: DEFAULT_MAX_BODY, 32 MiB)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.argv!r}, api={self.api!r})"

    # -- what presets override ---------------------------------------------------------------------------------
    def prepare(self, prompt: str, ctx: TrialContext, endpoint: ModelEndpoint, home: Path) -> Launch:
        """The command line and environment of one trial (a preset also writes its configuration under `home`)."""
        values = {"prompt": prompt, "model": self.model_name or "", "workdir": str(ctx.workdir)}
        named = any("{prompt}" in arg for arg in self.argv)
        argv = [_fill(arg, values) for arg in self.argv] + ([] if named else [prompt])
        return Launch(argv)

    def interpret(self, run: Run, stdout: str = "") -> None:
        """Read, off the trajectory, the agent's own refusals (`denials`, source "agent"), whether each tool result
        was an error (`ToolResult.is_error`) and the commands its shell tool ran: a call whose result has the FORM
        of the agent's refusal (`refusal_in`) was refused (its result is an error), any other answered call ran.
        `stdout` is what the agent printed (a preset may read its own event stream there)."""
        trajectory = run.trajectory
        known = {d.call_id for d in trajectory.denials if d.call_id}
        reader = self.reader(run, stdout)
        # every conversation's calls (a sub-agent's refusal is the agent's too)
        for call, result in _answered(trajectory):
            refusal = reader.refusal_in(call, result)
            if refusal is not None:
                result.is_error = True
                trajectory.error_flags_unknown.pop(result.call_id or "", None)
                if call.id not in known:
                    trajectory.denials.append(Denial(call.name, dict(call.arguments), _clip(result.content),
                                                     f"{self.label}: {refusal}", call.id, source="agent"))
                continue
            self._read_error(trajectory, call, result, reader)
            if self.shell_tool is not None and call.name == self.shell_tool[0]:
                command = call.arguments.get(self.shell_tool[1])
                if isinstance(command, str):
                    trajectory.commands.append(command)

    def _read_error(self, trajectory: Trajectory, call: ToolCall, result: ToolResult, reader: ResultReader) -> None:
        """Set `result.is_error` from the agent's result format where the wire had no flag and the agent's form
        tells; otherwise say, in `error_flags_unknown`, that this agent's result was not read."""
        why = trajectory.error_flags_unknown.get(result.call_id or "")
        if why is None:
            return  # the wire flagged it (Anthropic, Gemini): that flag is the agent's own
        failed = reader.error_in(call, result)
        if failed is None:
            if why.endswith("has no error flag"):
                trajectory.error_flags_unknown[result.call_id or ""] = f"{why} and {self.unread(call)}"
            return
        result.is_error = failed
        del trajectory.error_flags_unknown[result.call_id or ""]

    def reader(self, run: Run, stdout: str) -> ResultReader:
        """What reads this run's results: the agent itself (its forms on the wire); a preset whose agent prints
        its own record of each call (opencode's event stream) returns a reading bound to it."""
        return self

    def refusal_in(self, call: ToolCall, result: ToolResult) -> str | None:
        """Why the agent's own permission system refused `call`, when `result` has the form of its refusal (a
        preset knows its agent's forms: whole-result templates, error flags, structured fields); else None."""
        return None

    def unread(self, call: ToolCall) -> str:
        """Why the agent's result of `call` could not be read as failed or not (ends `no_tool_errors`'s reason)."""
        return "no preset read this agent's results (a plain ProcessAgent knows no agent's result format)"

    def error_in(self, call: ToolCall, result: ToolResult) -> bool | None:
        """Whether `result` (over a wire without an error flag) is a failure in the agent's own result format:
        True, False, or None when the form does not say (a plain ProcessAgent knows no agent's format)."""
        return None

    def snapshot(self) -> dict[str, Any]:
        """What this agent is configured with, for config_snapshot (and so for `trialrun compare`)."""
        return {"agent": self.label, "agent_command": self.argv, "api": self.api, "model_name": self.model_name,
                "sandbox": self.sandbox.describe()}

    #: How the agent is given the trial's MCP servers (`_mcp`; None: it cannot, and a trial with some is refused).
    mcp_support: str | None = COMMAND_SUPPORT

    def with_mcp(self, launch: Launch, servers: Sequence[McpEndpoint], home: Path) -> Launch:
        """`launch` given the trial's MCP servers: a preset writes them into its agent's own configuration."""
        launch.env["TRIALRUN_MCP_CONFIG"] = str(servers_file(servers, home))
        return launch

    def base_environment(self, home: Path | None) -> dict[str, str]:
        """The environment the agent starts from: the caller's (a sandbox keeps only an allow-list of it)."""
        return self.sandbox.environment(home) if self.sandbox.active else dict(os.environ)

    # -- running -------------------------------------------------------------------------------------------------
    async def __call__(self, prompt: str, ctx: TrialContext, *, model: Any = None) -> Run:
        return await self.arun(prompt, ctx, model=model)

    def run(self, prompt: str, ctx: TrialContext, *, model: Any = None) -> Run:
        """`arun` for code without an event loop."""
        return asyncio.run(self.arun(prompt, ctx, model=model))

    async def arun(self, prompt: str, ctx: TrialContext, *, model: Any = None) -> Run:
        """Run the agent once on `prompt` against `model` (default: the suite's model for this trial, `ctx.model`)."""
        transport = model if model is not None else ctx.model
        if transport is None:
            raise ValueError(f"{self.label}: no model to serve; pass model=... (e.g. tr.ScriptedModel([...])), or "
                             "run it as a suite's agent")
        endpoint = ctx.serve(transport, max_body=self.max_body)
        if self.sandbox.active:  # a verify command runs in the same sandbox (`expect.verify`)
            ctx.sandbox = self.sandbox
        home = Path(tempfile.mkdtemp(prefix=f"trialrun-{self.label}-home-"))
        try:
            launch = self.prepare(prompt, ctx, endpoint, home)
            launch = given_mcp(self, launch, ctx, endpoint, home)  # the trial's MCP servers, in its configuration
            env = self.base_environment(home)
            env["PWD"] = str(ctx.workdir)  # some agents (opencode) take their folder from $PWD, not getcwd()
            env.update(endpoint_env(endpoint, self.api, self.model_name))
            env.update(launch.env)
            env.update(self.env)
            return await self._execute(launch, env, ctx, endpoint, home)
        finally:  # off the event loop and the trial's time: an agent's caches in its HOME can be many files
            try:  # (codex: 60-70, 5-15 ms)
                asyncio.get_running_loop().run_in_executor(None, functools.partial(shutil.rmtree, home, True))
            except RuntimeError:  # the loop's executor is shutting down: here, then
                shutil.rmtree(home, ignore_errors=True)

    async def _execute(self, launch: Launch, env: dict[str, str], ctx: TrialContext, endpoint: ModelEndpoint,
                       home: Path) -> Run:
        out = _Head(_STDOUT_LIMIT)
        err = _Tail(self.stderr_tail)
        child = await self._launch(launch.argv, env, ctx.workdir, endpoint, home)
        timed_out, killed = await self._wait(child, launch, ctx, out, err)
        return self._finish(child, endpoint, ctx, out.render(), err, timed_out, killed)

    async def _launch(self, command: list[str], env: dict[str, str], workdir: Path, endpoint: ModelEndpoint,
                      home: Path) -> _Started:
        """Start the agent under its keeper (and sandbox), its output piped. A launch that fails part way closes
        what it opened; a program that cannot be run at all is AgentNotFound."""
        cleanup: Callable[[], None] | None = None
        if self.sandbox.active:  # the keeper around bwrap: it sees (in /proc) and kills what is inside too
            command, env, cleanup = self.sandbox.wrap(command, env, workdir=workdir, home=home, endpoint=endpoint)
        keeper = AsyncKeeper() if keeper_argv(command) is not None else None  # None: no Python to run a keeper
        scope = keeper.scope if keeper is not None else Scope(cgroup=False)
        argv = command if keeper is None else keeper_argv(command, cgroup=scope.cgroup) or command
        env = scope.env(env)  # (argv: only where no keeper server can run)
        child = _Started(time.monotonic(), keeper, cleanup, scope)
        pipes = None
        files: list[BinaryIO] = []  # the pipes' owners from the moment each is wrapped (never a bare fd closed twice)
        if keeper is not None:  # the usual way: a fork of the keeper server
            pipes = keeper.launch(command, env=env, cwd=workdir)
        try:
            if pipes is not None:
                files.extend(os.fdopen(fd, "rb", 0) for fd in pipes)
                for file in files:
                    child.streams.append(await _pipe(file))
            else:  # no keeper server here: a keeper interpreter of its own, or no keeper at all
                child.process, child.exited = await _spawn(
                    argv, cwd=workdir, env=env, stdin=keeper.theirs.fileno() if keeper is not None else None)
                assert child.process.stdout is not None and child.process.stderr is not None
                child.streams = [child.process.stdout, child.process.stderr]
        except BaseException as exc:
            child.abandon(pipes, files)
            if isinstance(exc, (FileNotFoundError, PermissionError)):
                raise AgentNotFound(f"{self.label}: cannot run {argv[0]!r}: {exc.strerror or exc}") from None
            raise
        if keeper is not None:
            keeper.started()
        return child

    async def _wait(self, child: _Started, launch: Launch, ctx: TrialContext, out: _Head,
                    err: _Tail) -> tuple[bool, list[str]]:
        """Read the agent's output until it ends or times out, then kill what it left: whether it timed out, and
        what was killed (noted in `ctx` even when the wait is cancelled)."""
        keeper, process, cleanup, scope = child.keeper, child.process, child.cleanup, child.scope
        reading = asyncio.ensure_future(asyncio.gather(_read(child.streams[0], out.feed),
                                                       _read(child.streams[1], err.feed)))
        reading.add_done_callback(_retrieved)  # cancelled when nobody reads any more: never an unretrieved error
        try:
            if keeper is not None:
                timed_out = not await keeper.exited(self.timeout_s)
            else:
                assert child.exited is not None
                timed_out = not await _within(child.exited, self.timeout_s)
        except BaseException:  # cancelled (a case timeout, Ctrl-C): nobody reads any more; kill, note, go on
            reading.cancel()
            ctx._note_killed(await _contain(keeper, process, cleanup, scope))
            raise
        # always: what the agent left running (`nohup server &`), and everything on a timeout
        killed = await _contain(keeper, process, cleanup, scope)
        left = getattr(cleanup, "left", None)  # a sandbox's command that ended by itself (`Ending`)
        if left is not None:  # its PID namespace ended what it held, named by the shell inside: the keeper outside
            killed = left     # saw only those same processes dying, under other pids (nothing leaves the namespace)
        ctx._note_killed(killed)
        if keeper is not None and keeper.reports.failure is not None:
            reading.cancel()
            failure = keeper.reports.failure
            raise AgentNotFound(f"{self.label}: cannot run {launch.argv[0]!r}: {failure.strerror or failure}")
        try:  # the pipes close once every process holding them is dead
            await asyncio.wait_for(asyncio.shield(reading), 5)
        except asyncio.TimeoutError:
            reading.cancel()
        if child.exited is not None:
            await _within(child.exited, 5)  # the direct child (the keeper, or bwrap around it) is reaped by now or soon
        return timed_out, killed

    def _finish(self, child: _Started, endpoint: ModelEndpoint, ctx: TrialContext, stdout: str, err: _Tail,
                timed_out: bool, killed: list[str]) -> Run:
        """The ended agent as a Run: its trajectory, output and how it ended (a timeout, a failing exit status or
        an unreadable output file is an error; a preset may still call a clean exit one)."""
        exit_code = child.exit_code()
        duration = time.monotonic() - child.began
        run = Run(output=None, trajectory=_trajectory_of(endpoint), exit_code=exit_code, stderr=err.render(),
                  duration_s=round(duration, 3), killed=killed)
        output_problem = None
        try:
            run.output = self._output(stdout, ctx)
        except OSError as exc:
            output_problem = f"{self.label}: cannot read its output {self.output}: {exc.strerror or exc}"
        self.interpret(run, stdout)
        lost = child.keeper.reports.lost if child.keeper is not None else None
        if lost is not None:  # whatever the agent did, a trial whose containment was attacked is no pass
            run.status, run.error = "error", (f"{self.label}: its keeper was {lost} before the agent ended (something "
                                              f"it ran attacked its containment); {killed_text(killed) or 'none left'}")
        elif timed_out:
            run.status, run.error = "error", (f"{self.label} timed out after {self.timeout_s:g}s; it and every "
                                              f"process it started were killed ({killed_text(killed) or 'none left'})"
                                              f"{self._tail_note(run)}")
        elif exit_code != 0:
            run.status, run.error = "error", (f"{self.label} exited with status {exit_code} after "
                                              f"{duration:.1f}s{self._tail_note(run)}")
        elif output_problem is not None:
            run.status, run.error = "error", output_problem
        else:
            run.status = "completed"
        self.check_ending(run, stdout)
        return run

    def check_ending(self, run: Run, stdout: str) -> None:
        """A preset's chance to call a run that exited 0 a failure (opencode after its own rejection)."""

    def _tail_note(self, run: Run) -> str:
        tail = (run.stderr or "").strip()
        return f"; stderr (last {self.stderr_tail} characters):\n{tail}" if tail else "; stderr was empty"

    def _output(self, stdout: str, ctx: TrialContext) -> Any:
        if callable(self.output):
            return self.output(stdout, ctx)
        if self.output.startswith("file:"):
            # read here, outside any sandbox, from a folder the agent controlled: with the shell tools'
            # confinement (a link out of the workdir, a FIFO, a device, a huge file are the agent's doing)
            from ..agent.tools import ToolError, read_beneath

            try:
                return read_beneath(ctx.workdir, self.output[5:], _STDOUT_LIMIT)
            except ToolError as exc:
                raise OSError(errno.EPERM, str(exc)) from None
        return stdout.rstrip("\n")


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's protocol for a process with pipes, which also says the moment the process itself exits (from the
    child watcher: `Process.wait()` also waits for the pipes, which a background child may hold open)."""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


async def _spawn(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
                 stdin: int | None) -> tuple[asyncio.subprocess.Process, asyncio.Future[None]]:
    """Start `argv` in a session of its own with stdout and stderr piped (stdin: the keeper's socket, or
    /dev/null); returns the process and a future done when it exits."""
    loop = asyncio.get_running_loop()
    protocol: list[_Protocol] = []

    def factory() -> _Protocol:
        protocol.append(_Protocol(1 << 16, loop))
        return protocol[0]

    transport, _ = await loop.subprocess_exec(
        factory, *argv, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL if stdin is None else stdin,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True)
    return asyncio.subprocess.Process(transport, protocol[0], loop), protocol[0].exited


async def _pipe(file: BinaryIO) -> asyncio.StreamReader:
    """A stream reading the pipe `file` from the event loop (it closes at the end of the pipe)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 16, loop=loop)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), file)
    return reader


async def _within(future: asyncio.Future[None], timeout_s: float | None) -> bool:
    """Wait for `future` (not cancelling it); False on the timeout."""
    try:
        await asyncio.wait_for(asyncio.shield(future), timeout_s)
    except asyncio.TimeoutError:
        return False
    return True


async def _contain(keeper: AsyncKeeper | None, process: asyncio.subprocess.Process | None,
                   cleanup: Callable[[], None] | None, scope: Scope) -> list[str]:
    """Kill whatever of the agent is still alive and say what that was: by its keeper (when neither it nor its
    warden answers, trialrun takes over: `AsyncKeeper.finished`), or, without one, by its scope's sweep; blocking
    work on a worker thread, never on the event loop. Runs to its end even when cancelled again meanwhile."""
    async def contain() -> list[str]:
        try:
            if keeper is not None:
                keeper.stop()
                await keeper.finished()
                killed = keeper.reports.note()
                keeper.close()
                if process is not None:  # a keeper of its own, not a server's fork: no warden removes its cgroup
                    keeper.scope.remove()
                return killed
            if process is None:
                return []
            return await asyncio.get_running_loop().run_in_executor(
                None, functools.partial(scope.sweep, None, session=process.pid))
        finally:
            if cleanup is not None:
                cleanup()

    task = asyncio.ensure_future(contain())
    while True:
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                raise


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Take a future's outcome: a cancelled `gather` keeps a CancelledError, printed as "never retrieved" otherwise."""
    if not future.cancelled():
        future.exception()


def _fill(arg: str, values: Mapping[str, str]) -> str:
    """`{prompt}`, `{model}`, `{workdir}` replaced in one argument (other braces left as they are)."""
    for key, value in values.items():
        arg = arg.replace("{" + key + "}", value)
    return arg


def _trajectory_of(endpoint: ModelEndpoint) -> Trajectory:
    """What the agent's model calls through `endpoint` were: ctx.serve serves an observed transport."""
    from ..models import ModelTransport

    transport = endpoint.transport
    if not isinstance(transport, ModelTransport):
        raise TypeError(f"the agent's endpoint serves {type(transport).__name__}, not an observed model transport")
    return transport.trajectory()


def _answered(trajectory: Trajectory) -> list[tuple[ToolCall, ToolResult]]:
    """Every answered call of every conversation with its result: by call id, or in order within its turn for an
    API without call ids (Gemini)."""
    pairs = []
    for turn in trajectory.all_turns:
        loose = turn.unnamed_results()
        by_id = {result.call_id: result for result in turn.tool_results if result.call_id is not None}
        for call in turn.tool_calls:
            result = by_id.get(call.id) if call.id is not None else (loose.pop(0) if loose else None)
            if result is not None:
                pairs.append((call, result))
    return pairs


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def file_digest(paths: Sequence[Path]) -> str | None:
    """One sha256 over files (or folders, every file in them) in order: what the agent was configured with."""
    if not paths:
        return None
    digest = hashlib.sha256()
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for item in files:
            digest.update(str(item.relative_to(path) if path.is_dir() else item.name).encode())
            digest.update(item.read_bytes())
    return digest.hexdigest()[:16]


def settings_digest(settings: Any) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]
