"""A ready-made agent's declared contract: every fact about the real agent that trialrun relies on, in one frozen
object in the agent's own module (`trialrun/agents/pi.py`'s `CONTRACT`, ...).

Why one object: the facts (which program and package, how it is pointed at the endpoint and kept quiet, which wire
API it speaks, its shell and file tools and their argument shapes, the exact forms of its refusals and failed
results, its sub-agents and side requests, the knobs it has) used to be spread over the preset, the tests and the
README. Now the preset (`Preset`), `trialrun agents`, the verdict-truth battery and docs/coding-agents.md's agents table read
them from the contract, so adding an agent is one module (its contract and its `prepare`) plus fixtures, and a
feature it does not have is a `None` here, not a skip somewhere else.

Adding an agent: its line in `pinned.txt` (`name npm|pypi PACKAGE VERSION PROGRAM [python>=X.Y]`); its module
with `CONTRACT = AgentContract(name=..., pin=pinned(name), ...)` and a `Preset` subclass naming it (`contract =
CONTRACT`) whose `prepare` writes its configuration (and, where its forms need more than the contract's
`refusals`/`errors`, its own `refusal_in`/`error_in`/`reader`); its class and factory in `agents/__init__.py`'s
`_READY`; its recordings. Then the battery makes its scenarios from the contract (`tests/agents/_battery_agents.py`
reads it), `trialrun agents` and `.ci/install-agents` know it from its pin, and docs/coding-agents.md's tables are written
with it (`python -m trialrun.agents._table`). What the tests check of every contract: tests/agents/test_contracts.py.

Only data and small pure helpers: nothing here runs an agent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ._pins import Pin, pins

__all__ = ["AgentContract", "Endpoint", "ShellTool", "Sessions", "FileTool", "Refusals", "Errors", "Permissions", "Refusing",
           "SubAgents", "SideRequests", "Knobs", "Form", "forms", "matching", "pinned", "WORKSPACE_SEMANTICS"]

#: A form: (why, the pattern a WHOLE text must match). A refusal or an error is where and how an agent puts its
#: message, so words found elsewhere in an output never count.
Form = tuple[str, "re.Pattern[str]"]

#: The write/edit semantics the workspace model (`trialrun._shell._tool_writes`) follows: a whole file written,
#: the string edits of `_shell._edits.STYLES` ("claude", "opencode", "pi"), a Codex `*** Begin Patch` patch, Kimi
#: CLI's `edit: {old, new}` (each the first occurrence, in order; `_shell._tool_writes._kimi_edits`), and "generic"
#: (an exact unique match taken at its word, anything else unknown: Copilot CLI's `edit(path, old_str, new_str)`).
WORKSPACE_SEMANTICS = ("whole-file", "claude", "opencode", "pi", "codex-patch", "kimi", "generic")


def forms(*pairs: tuple[str, str]) -> tuple[Form, ...]:
    """(why, regex) pairs compiled as whole-text forms (DOTALL: a form may span lines)."""
    return tuple((why, re.compile(pattern, re.DOTALL)) for why, pattern in pairs)


def matching(templates: Iterable[Form], text: str) -> str | None:
    """The name of the first form the WHOLE text matches (a refusal or error form), or None."""
    return next((name for name, pattern in templates if pattern.fullmatch(text)), None)


def pinned(name: str) -> Pin:
    """Agent `name`'s package and tested version, from the one pinned list (`trialrun/agents/pinned.txt`)."""
    found = pins().get(name)
    if found is None:
        raise LookupError(f"trialrun/agents/pinned.txt has no line for {name!r}: add `{name} npm|pypi PACKAGE "
                          "VERSION PROGRAM` there")
    return found


@dataclass(frozen=True)
class Endpoint:
    """How the agent is pointed at trialrun's endpoint and kept offline and quiet, in the per-trial HOME."""

    how: str  # one line: what names the endpoint (a provider in a config file, a base-URL variable)
    env: tuple[str, ...] = ()  # the variables the preset sets that point it at the endpoint or its config
    files: tuple[str, ...] = ()  # the configuration files written in the per-trial HOME (relative to it)
    quiet: Mapping[str, str] = field(default_factory=dict)  # variables that switch off telemetry, updates, colour
    flags: tuple[str, ...] = ()  # command-line flags that run it non-interactively and offline


@dataclass(frozen=True)
class Sessions:
    """A shell tool that leaves a program running (a shell on a tty, a REPL) and another tool that types into it:
    the arguments of both, as the agent spells them (Codex: `exec_command(tty=true)`, `write_stdin`)."""

    tool: str  # the tool that types into a running session
    session: str  # its argument naming the session
    chars: str  # its argument with the text typed
    tty: str  # the shell tool's argument that starts a session on a tty
    wait_ms: str  # both tools' argument saying how long to wait for output (ms)
    max_wait_ms: int  # the longest it waits before it answers "still running" (a long command is polled)
    running: str = r"session ID (\d+)"  # where a result names the session left running (a regex, one group)


@dataclass(frozen=True)
class ShellTool:
    """A tool that runs shell commands, as the agent offers it on the wire."""

    name: str
    argument: str  # the argument holding the command
    shape: Literal["string", "argv"] = "string"
    required: tuple[str, ...] = ()  # other arguments a call must give (Claude Code's and opencode's `description`)
    background: str | None = None  # an argument that runs the command in the background (Claude Code)
    sessions: Sessions | None = None  # the session it leaves running and the tool that types into it (Codex)
    patches: bool = False  # the agent applies `apply_patch <<'EOF' ...` given as the whole command itself (Codex)
    ends_background: bool = False  # what a command left in the background is ended with the agent (Codex's sandbox)
    read_first: bool = False  # it stops a command that edits a file in place (`sed -i`) the agent did not read
    long: Mapping[str, Any] = field(default_factory=dict)  # arguments that let one command run for minutes (its
    # own timeout raised: Kimi CLI's `timeout`, Copilot CLI's `initial_wait`)
    stops_on: tuple[str, ...] = ()  # words that make it end the run without running the command (Continue: exec)
    fixed: Mapping[str, Any] = field(default_factory=dict)  # arguments that make it run the command (Kilo's
    # background_process: action "start")

    def call(self, command: str, **extra: Any) -> dict[str, Any]:
        """The arguments that run `command` with this tool (a short description where one is required)."""
        arguments: dict[str, Any] = {self.argument: ["bash", "-lc", command] if self.shape == "argv" else command}
        arguments.update({**self.fixed, **extra})
        for name in self.required:
            arguments.setdefault(name, "a scripted step" if name == "description" else "")
        return arguments


@dataclass(frozen=True)
class FileTool:
    """A tool that reads, writes or edits one file, with its argument names and its exact semantics (the ones the
    workspace model follows, `WORKSPACE_SEMANTICS`)."""

    kind: Literal["read", "write", "edit"]
    name: str
    path: str  # the argument naming the file
    semantics: str = ""  # for write/edit: one of WORKSPACE_SEMANTICS
    content: str = ""  # write: the argument with the file's whole content
    old: str = ""  # edit: the old and new text's arguments...
    new: str = ""
    edits: str = ""  # ...inside a list of edits in this argument (pi), else at the top
    edits_list: bool = True  # `edits` holds a list of them; False: one object (Kimi CLI's `edit: {old, new}`)
    required: Mapping[str, str] = field(default_factory=dict)  # other arguments a call must give, with a value
    absolute: bool = False  # it wants an absolute path
    read_first: bool = False  # it refuses to edit an existing file the agent did not read first
    corrects: str = ""  # edit: how it applies an edit its semantics refuse, reporting success (Gemini CLI's replace
    # corrects a near-miss old string): then its result decides (`_shell._tool_writes._edit`)

    def call(self, path: str, workdir: str, **values: str) -> dict[str, Any]:
        """The arguments for `path` (relative to `workdir`) and the values: content=..., or old=... and new=..."""
        arguments: dict[str, Any] = {self.path: f"{workdir}/{path}" if self.absolute else path}
        if self.kind == "write":
            arguments[self.content] = values["content"]
        elif self.kind == "edit":
            change = {self.old: values["old"], self.new: values["new"]}
            arguments.update({self.edits: [change] if self.edits_list else change} if self.edits else change)
        return {**arguments, **self.required}


@dataclass(frozen=True)
class Refusals:
    """How the agent says it refused a call itself: each refusal is a WHOLE text of one of `forms`."""

    forms: tuple[Form, ...]
    where: str  # where that text is: "the tool result", "its event stream (...)"
    needs_error_flag: bool = False  # the result must also carry the wire's error flag (Claude Code)
    examples: tuple[str, ...] = ()  # texts seen from the real agent (each matches one of `forms`)
    recordings: str = ""  # the fixtures that show them

    def match(self, text: str, flagged: bool = True) -> str | None:
        """Why `text` is a refusal of this agent's (the form's name), or None."""
        if self.needs_error_flag and not flagged:
            return None
        return matching(self.forms, text)


@dataclass(frozen=True)
class Errors:
    """How a failed tool result is told: the wire's flag on `flagged_apis`, else the agent's own result forms."""

    how: str  # one line, for docs/coding-agents.md's table
    flagged_apis: tuple[str, ...] = ()
    failed: Mapping[str, tuple[Form, ...]] = field(default_factory=dict)  # tool ("*": any tool) -> failure forms
    worked: Mapping[str, re.Pattern[str]] = field(default_factory=dict)  # tool -> what it answers when it worked


@dataclass(frozen=True)
class Refusing:
    """A configuration under which the agent refuses a command by itself (`options` for the preset), with a
    command it refuses there: the verdict-truth battery runs each."""

    name: str
    options: Mapping[str, Any]
    command: str
    pattern: str = "rm"  # what the command runs, as a `never_ran` pattern
    extra: Mapping[str, Any] = field(default_factory=dict)  # more arguments of the shell call (Codex's escalation)


@dataclass(frozen=True)
class Permissions:
    """The agent's own permission system: its modes (`permission_mode`), its rules (`allow`/`deny`)."""

    modes: tuple[str, ...]
    mode_is: str = "permission_mode must be"  # what permission_mode is for this agent, in its error message
    default_mode: str | None = None
    rules: str = ""  # the allow/deny rules' syntax ("" when the preset takes none)
    runs_all: Mapping[str, Any] = field(default_factory=dict)  # options under which it runs what it is asked
    refusing: tuple[Refusing, ...] = ()
    note: str = ""  # what it refuses by itself, and what it lets through, in a line (for docs/coding-agents.md)


@dataclass(frozen=True)
class SubAgents:
    """The agent's sub-agent tool: how the main loop starts one, and how its results are read."""

    tool: str
    prompt: str  # the argument with the sub-agent's task
    arguments: Mapping[str, Any] = field(default_factory=dict)  # the call's other arguments
    namespace: str | None = None  # the tool namespace it lives in (Codex: multi_agent_v1)
    wait: str | None = None  # the tool the main loop waits for it with (Codex: wait_agent)
    read: str = ""  # how its calls' results are read

    def call(self, prompt: str) -> dict[str, Any]:
        return {**self.arguments, self.prompt: prompt}


@dataclass(frozen=True)
class SideRequests:
    """Requests the agent makes besides its loop (a title, a summary): off by default, `side_requests=True`
    keeps them."""

    what: str
    stopped_by: str  # how the preset stops them
    env: Mapping[str, str] = field(default_factory=dict)  # variables that stop them (empty to keep them on)


@dataclass(frozen=True)
class Knobs:
    """Where the knobs users compare go, in the agent's own terms ("none (why)" where the preset has no way to give
    them: then the knob is refused, saying so)."""

    instructions: str
    skills: str


@dataclass(frozen=True)
class AgentContract:
    """Everything trialrun relies on about one real agent (see the module docstring). `None` for a feature the
    agent does not have: no permission system, no sub-agents, no side requests, no refusals of its own."""

    name: str  # the trialrun.toml name (`agent = "pi"`)
    pin: Pin  # its package, tested version and program: `pinned(name)`
    summary: str  # one line on what it is
    apis: tuple[str, ...]  # the wire APIs it speaks; the first is the default
    endpoint: Endpoint
    shell: tuple[ShellTool, ...]
    files: tuple[FileTool, ...]
    errors: Errors
    knobs: Knobs
    refusals: Refusals | None = None
    permissions: Permissions | None = None
    subagents: SubAgents | None = None
    side_requests: SideRequests | None = None
    sandboxes_tested: tuple[str, ...] = ("none",)  # the sandboxes the real agent runs in, in the tests
    version_args: tuple[str, ...] = ("--version",)  # what makes the program print its version first
    finish: str | None = None  # the command the model ends its task with, instead of a final text (mini-swe-agent)
    long_commands: Mapping[str, Any] = field(default_factory=dict)  # options under which a command may run for
    # minutes without the agent stopping it itself (its own command timeout raised)
    # Every other tool it offers (read off the `tools` of the first request it sends, at its pinned version, in
    # each configuration the tests run: tests/agents/test_contract_tools.py), so that none is left unclassified:
    others: tuple[str, ...] = ()  # tools that run no command (search, fetch, todo lists, its sessions' output)
    unfollowed: Mapping[str, str] = field(default_factory=dict)  # tool -> why what it runs cannot be followed:
    # `never_ran` reads its arguments as text and fails ("cannot tell") when they carry the command
    meta: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # a tool that calls another by name ->
    # (the argument naming the tool, the argument holding its arguments): Qwen Code's `tool_call`

    def __post_init__(self) -> None:
        if self.pin.name != self.name:
            raise ValueError(f"contract {self.name!r}: its pin is {self.pin.name!r}'s")
        if not self.apis or not self.shell:
            raise ValueError(f"contract {self.name!r}: needs at least one API and one shell tool")
        for tool in self.files:
            if tool.kind != "read" and tool.semantics not in WORKSPACE_SEMANTICS:
                raise ValueError(f"contract {self.name!r}: {tool.name} has semantics {tool.semantics!r}, not one "
                                 f"of {', '.join(WORKSPACE_SEMANTICS)}")

    @property
    def program(self) -> str:
        return self.pin.program

    @property
    def shell_tool(self) -> ShellTool:
        """The shell tool a portable step uses (the first)."""
        return self.shell[0]

    def file_tool(self, kind: str) -> FileTool | None:
        """Its tool of `kind` ("read", "write", "edit"), or None when it has none."""
        return next((tool for tool in self.files if tool.kind == kind), None)

    @property
    def patches(self) -> bool:
        """Whether it applies patches given as a shell tool's whole command (Codex's apply_patch)."""
        return any(tool.patches for tool in self.shell)

    def command_tools(self) -> dict[str, str]:
        """Every tool of its that runs a shell command, with the argument holding the command."""
        return {tool.name: tool.argument for tool in self.shell}

    def quiet_tools(self) -> tuple[str, ...]:
        """Every tool of its that runs no command itself: its file tools (their writes are followed by the workspace
        model), the tool that types into a session, its sub-agent tools (a sub-agent's own calls are read off the
        wire) and its `others`."""
        names = [tool.name for tool in self.files]
        names += [tool.sessions.tool for tool in self.shell if tool.sessions is not None]
        if self.subagents is not None:
            names += [self.subagents.tool, *([self.subagents.wait] if self.subagents.wait else [])]
        return tuple(dict.fromkeys([*names, *self.others]))

    def classifies(self, tool: str) -> bool:
        """Whether the contract says what `tool` does (every tool the agent offers must be classified)."""
        return tool in self.command_tools() or tool in self.quiet_tools() or tool in self.unfollowed or \
            tool in self.meta

    @property
    def has_rules(self) -> bool:
        return self.permissions is not None and bool(self.permissions.rules)
