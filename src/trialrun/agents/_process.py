"""ProcessAgent: an agent in another process (a CLI coding agent), run once per trial against the case's model.

Per trial: the case's model transport is served on loopback (`ctx.serve`), the agent gets the base URLs and a
dummy key in its environment, runs in the trial's workdir with stdin closed, in a session of its own (so a
timeout, a cancel or Ctrl-C kills everything it started), and its trajectory is read off the wire like any
other agent's. The presets (`trialrun.agents.pi`, ...) are subclasses that also write the agent's own
configuration and read its own permission refusals.
"""

from __future__ import annotations

import asyncio
import errno
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
from typing import TYPE_CHECKING, Any, Union

from .._scrub import add_secret, is_secret_name
from ..trajectory import Denial, Run, Trajectory
from ._session import kill_session

if TYPE_CHECKING:
    from ..case import TrialContext
    from ..endpoint import ModelEndpoint
    from .sandbox import Sandbox

__all__ = ["ProcessAgent", "AgentNotFound", "Launch", "DUMMY_KEY", "APIS"]

DUMMY_KEY = "trialrun-dummy-key"
APIS = ("openai-chat", "openai-responses", "anthropic", "gemini")
#: Output: "stdout", "file:PATH" (relative to the workdir), or a function (stdout, ctx) -> output.
Output = Union[str, Callable[[str, "TrialContext"], Any]]

_STDOUT_LIMIT = 1_000_000  # characters of stdout kept as the output
_DEFAULT_TIMEOUT_S = 300.0


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

    Call it as a suite agent, `agent(prompt, ctx)`, or in a Case's invoke with the model to serve:
    `invoke=lambda ctx: agent("make a marker file", ctx, model=tr.ScriptedModel(...))` (it is a coroutine: the
    runner awaits it, and cancelling it kills the agent's processes).
    """

    #: the agent's name in reports and config_snapshot
    label = "command"
    #: its shell tool: (tool name, argument holding the command), when known
    shell_tool: tuple[str, str] | None = None
    #: texts in a tool result that mean the agent's own permission check refused the call
    refusal_markers: tuple[str, ...] = ()

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
    ) -> None:
        from .sandbox import resolve_sandbox

        self.argv = shlex.split(argv) if isinstance(argv, str) else [str(a) for a in argv]
        if not self.argv:
            raise ValueError("ProcessAgent: argv is empty; give the command to run, e.g. ['pi', '-p', '{prompt}']")
        if api not in APIS:
            raise ValueError(f"ProcessAgent: api must be one of {', '.join(APIS)}, got {api!r}")
        if timeout_s is not None and not (isinstance(timeout_s, (int, float)) and 0 < timeout_s < float("inf")):
            raise ValueError(f"ProcessAgent: timeout_s must be a positive number of seconds, got {timeout_s!r}")
        if isinstance(output, str) and output != "stdout" and not (output.startswith("file:") and output[5:]):
            raise ValueError(f"ProcessAgent: output must be 'stdout', 'file:PATH' or a function, got {output!r}")
        if not isinstance(output, str) and not callable(output):
            raise ValueError(f"ProcessAgent: output must be 'stdout', 'file:PATH' or a function, got {output!r}")
        self.env = dict(env or {})
        for name, value in self.env.items():  # a credential given to the agent (trialrun.toml's env): scrubbed
            if is_secret_name(name):            # wherever the agent prints it, as the run's own environment is
                add_secret(value, source=f"{type(self).__name__} env {name}")
        self.api = api
        self.model_name = model_name
        self.timeout_s = None if timeout_s is None else float(timeout_s)
        self.output = output
        self.sandbox = resolve_sandbox(sandbox).for_command(self.argv)  # what it mounts: from the configuration
        self.stderr_tail = stderr_tail

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.argv!r}, api={self.api!r})"

    # -- what presets override ---------------------------------------------------------------------------------
    def prepare(self, prompt: str, ctx: TrialContext, endpoint: ModelEndpoint, home: Path) -> Launch:
        """The command line and environment of one trial (a preset also writes its configuration under `home`)."""
        values = {"prompt": prompt, "model": self.model_name or "", "workdir": str(ctx.workdir)}
        named = any("{prompt}" in arg for arg in self.argv)
        argv = [_fill(arg, values) for arg in self.argv] + ([] if named else [prompt])
        return Launch(argv)

    def interpret(self, run: Run) -> None:
        """Read the agent's own refusals (`denials`, source "agent") and the commands its shell tool ran off the
        trajectory: a call whose result carries one of `refusal_markers` was refused, any other answered call ran."""
        trajectory = run.trajectory
        known = {d.call_id for d in trajectory.denials if d.call_id}
        # every conversation's calls where the trajectory keeps several (a sub-agent's refusal is the agent's too)
        for call in getattr(trajectory, "all_tool_calls", trajectory.tool_calls):
            result = trajectory.result_for(call)
            if result is None:
                continue
            refusal = self.refusal_in(result.content)
            if refusal is not None:
                if call.id not in known:
                    trajectory.denials.append(Denial(call.name, dict(call.arguments), _clip(result.content),
                                                     f"{self.label}: {refusal}", call.id, source="agent"))
                continue
            if self.shell_tool is not None and call.name == self.shell_tool[0]:
                command = call.arguments.get(self.shell_tool[1])
                if isinstance(command, str):
                    trajectory.commands.append(command)

    def refusal_in(self, text: str) -> str | None:
        """The refusal marker found in a tool result's text, or None."""
        return next((marker for marker in self.refusal_markers if marker in text), None)

    def snapshot(self) -> dict[str, Any]:
        """What this agent is configured with, for config_snapshot (and so for `trialrun compare`)."""
        return {"agent": self.label, "agent_command": self.argv, "api": self.api, "model_name": self.model_name,
                "sandbox": self.sandbox.describe()}

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
        endpoint = ctx.serve(transport)
        home = Path(tempfile.mkdtemp(prefix=f"trialrun-{self.label}-home-"))
        try:
            launch = self.prepare(prompt, ctx, endpoint, home)
            env = self.base_environment(home)
            env["PWD"] = str(ctx.workdir)  # some agents (opencode) take their folder from $PWD, not getcwd()
            env.update(endpoint_env(endpoint, self.api, self.model_name))
            env.update(launch.env)
            env.update(self.env)
            return await self._execute(launch, env, ctx, endpoint, home)
        finally:  # off the event loop and the trial's time: an agent's caches in its HOME can be many files
            try:  # (codex: 60-70, 5-15 ms)
                asyncio.get_running_loop().run_in_executor(None, _remove_tree, home)
            except RuntimeError:  # the loop's executor is shutting down: here, then
                _remove_tree(home)

    async def _execute(self, launch: Launch, env: dict[str, str], ctx: TrialContext, endpoint: ModelEndpoint,
                       home: Path) -> Run:
        workdir = ctx.workdir
        argv = launch.argv
        cleanup: Callable[[], None] | None = None
        if self.sandbox.active:
            argv, env, cleanup = self.sandbox.wrap(argv, env, workdir=workdir, home=home, endpoint=endpoint)
        started = time.monotonic()
        out: list[str] = []
        kept = [0]

        def keep(text: str) -> None:
            room = _STDOUT_LIMIT - kept[0]
            if room > 0:
                out.append(text[:room])
            kept[0] += len(text)

        err = _Tail(self.stderr_tail)
        try:
            process = await asyncio.create_subprocess_exec(
                *argv, cwd=workdir, env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, start_new_session=True)
        except BaseException as exc:
            if cleanup is not None:
                cleanup()
            if isinstance(exc, (FileNotFoundError, PermissionError)):
                raise AgentNotFound(f"{self.label}: cannot run {argv[0]!r}: {exc.strerror or exc}") from None
            raise
        timed_out = False
        assert process.stdout is not None and process.stderr is not None
        reading = asyncio.ensure_future(asyncio.gather(_read(process.stdout, keep), _read(process.stderr, err.feed)))
        try:
            timed_out = not await _exited(process, self.timeout_s)
        except BaseException:  # cancelled (a case timeout, Ctrl-C): nobody reads any more
            reading.cancel()
            raise
        finally:
            # always: what the agent left running (`server &`), and everything on a timeout, cancel or Ctrl-C
            kill_session(process.pid)
            if cleanup is not None:
                cleanup()
        try:  # the pipes close once every process holding them is dead (one that left the session may not)
            await asyncio.wait_for(asyncio.shield(reading), 5)
        except asyncio.TimeoutError:
            reading.cancel()
        if process.returncode is None:  # killed: its status arrives a moment later
            await _exited(process, 5)
        exit_code = process.returncode if process.returncode is not None else -9
        duration = time.monotonic() - started
        stdout = "".join(out)
        if kept[0] > _STDOUT_LIMIT:
            stdout += f"\n[... {kept[0] - _STDOUT_LIMIT} characters of stdout cut ...]"
        trajectory = _trajectory_of(endpoint)
        run = Run(output=None, trajectory=trajectory, exit_code=exit_code, stderr=err.render(),
                  duration_s=round(duration, 3))
        output_problem = None
        try:
            run.output = self._output(stdout, ctx)
        except OSError as exc:
            output_problem = f"{self.label}: cannot read its output {self.output}: {exc.strerror or exc}"
        self.interpret(run)
        if timed_out:
            run.status, run.error = "error", (f"{self.label} timed out after {self.timeout_s:g}s; every process it "
                                              f"started was killed{self._tail_note(run)}")
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


async def _exited(process: asyncio.subprocess.Process, timeout_s: float | None) -> bool:
    """Wait for the process itself to exit; False on the timeout. (`process.wait()` also waits for its pipes to
    close, which a background child holding them open would put off for as long as it runs.)"""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    delay = 0.005
    while process.returncode is None:
        if deadline is not None and time.monotonic() >= deadline:
            return False
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)
    return True


def _remove_tree(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


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
