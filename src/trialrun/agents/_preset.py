"""What every ready-made agent shares: finding its program, its version, the knobs users compare, the snapshot.

A preset class names its `contract` (`_contract.AgentContract`, in the agent's own module); everything the base
class knows about the agent (its label, program, package, APIs, permission modes, refusal forms, side requests)
is read from that contract, never written here a second time.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from ..report._text_diff import file_snapshot_text
from ..trajectory import Run, ToolCall, ToolResult
from ._contract import AgentContract, matching
from ._pins import agents_dir, find_program
from ._process import AgentNotFound, Output, ProcessAgent, file_digest, settings_digest

__all__ = ["Preset", "DEFAULT_MODEL", "matching"]

DEFAULT_MODEL = "trialrun-model"


@functools.lru_cache(maxsize=32)
def program_version(path: str, args: tuple[str, ...] = ("--version",)) -> str | None:
    """`program --version` (or the contract's `version_args`), once per program: its first line (None when it
    cannot say). Run with a temporary HOME: some agents write their configuration when they start."""
    with tempfile.TemporaryDirectory(prefix="trialrun-version-home-") as home:
        try:
            done = subprocess.run([path, *args], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL,
                                  env={**os.environ, "NO_COLOR": "1", "HOME": home, "XDG_CONFIG_HOME": home})
        except (OSError, subprocess.SubprocessError):
            return None
    text = (done.stdout or done.stderr).strip().splitlines()
    return text[0].strip() if done.returncode == 0 and text else None


class Preset(ProcessAgent):
    """A ready-made agent: a ProcessAgent that knows its program's configuration, flags and refusals.

    Knobs: `model_name` (the name the agent asks the endpoint for), `skills` (skill folders with a SKILL.md, or
    skill files), `instructions` (a file whose text the agent takes as standing instructions), `permission_mode`
    and `allow`/`deny` rules (each agent's own vocabulary), `args` (extra command-line arguments), `path` (the
    program; default: found on PATH), `side_requests` (keep the agent's title and summary requests, which the
    presets turn off by default: Claude Code's and opencode's; pi and Codex send none), plus ProcessAgent's
    `env`, `timeout_s`, `output` and `sandbox`.

    Each preset reads its agent's own refusals and error shapes by their FORM (`refusal_in`, `error_in`), as its
    contract declares them.
    """

    contract: ClassVar[AgentContract]
    program: ClassVar[str] = ""
    apis: ClassVar[tuple[str, ...]] = ()
    #: (name, argument) of its first shell tool
    shell_tool: tuple[str, str] | None = None
    #: The agent's own permission modes (empty: it has none), and what `permission_mode` means for it.
    permission_modes: ClassVar[tuple[str, ...]] = ()
    permission_mode_is: ClassVar[str] = "permission_mode must be"
    #: How the agent is given the trial's MCP servers: a preset that writes them says so (see `with_mcp`); None here,
    #: so an agent whose preset does not is refused at configuration time rather than silently given none.
    mcp_support: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """The class attributes the rest of trialrun reads, taken from the subclass's contract."""
        super().__init_subclass__(**kwargs)
        contract = cls.__dict__.get("contract")
        if contract is None:
            return
        cls.label, cls.program, cls.apis = contract.name, contract.program, contract.apis
        cls.shell_tool = (contract.shell_tool.name, contract.shell_tool.argument)
        if contract.permissions is not None:
            cls.permission_modes, cls.permission_mode_is = contract.permissions.modes, contract.permissions.mode_is

    @classmethod
    def package_spec(cls) -> str:
        """Its package at the tested version (`@openai/codex@0.171.0`)."""
        return cls.contract.pin.spec

    @property
    def package(self) -> str:
        """Its registry package (npm or PyPI: `contract.pin.registry`)."""
        return self.contract.pin.package

    npm_package = package  # its name before PyPI agents

    def __init__(
        self,
        *,
        model_name: str | None = None,
        api: str | None = None,
        skills: Sequence[str | os.PathLike[str]] = (),
        instructions: str | os.PathLike[str] | None = None,
        permission_mode: str | None = None,
        allow: Sequence[str] = (),
        deny: Sequence[str] = (),
        args: Sequence[str] = (),
        path: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        timeout_s: float | None = 300.0,
        output: Output = "stdout",
        sandbox: Any = "none",
        side_requests: bool = False,
        max_body: int | None = None,
    ) -> None:
        chosen_api = api or self.apis[0]
        if chosen_api not in self.apis:
            raise ValueError(f"{self.label} speaks {', '.join(self.apis)}; api {chosen_api!r} is not one of them")
        self.path = self.find(path)
        super().__init__([self.path], env=env, api=chosen_api, model_name=model_name or DEFAULT_MODEL,
                         timeout_s=timeout_s, output=output, sandbox=sandbox, max_body=max_body)
        self.skills = [self._existing(s, "skill") for s in skills]
        self.instructions = self._existing(instructions, "instructions") if instructions is not None else None
        self.permission_mode = permission_mode
        self.allow = [str(rule) for rule in allow]
        self.deny = [str(rule) for rule in deny]
        self.args = [str(a) for a in args]
        if not isinstance(side_requests, bool):
            raise ValueError(f"{self.label}: side_requests is true or false, got {side_requests!r}")
        self.side_requests = side_requests
        self.check_knobs()

    def __repr__(self) -> str:
        return f"trialrun.agents.{self.label.replace('-', '_')}(path={str(self.path)!r}, api={self.api!r})"

    @classmethod
    def find(cls, path: str | os.PathLike[str] | None) -> str:
        """The program to run: `path` when given, else where `_pins.find_program` finds it (trialrun's agent cache,
        then PATH: the rule `trialrun agents` shows); AgentNotFound says how to install it."""
        pin = cls.contract.pin
        if path is not None:
            candidate = Path(path).expanduser()
            if candidate.is_dir():
                candidate = candidate / cls.program
            if not (candidate.is_file() and os.access(candidate, os.X_OK)):
                raise AgentNotFound(f"{cls.label}: {str(path)!r} is not an executable {cls.program} program "
                                    f"(install it with `{pin.install_command}`)")
            return os.path.abspath(candidate)
        found, _ = find_program(pin)
        if found is None:
            raise AgentNotFound(f"{cls.label}: the program {cls.program!r} is neither in trialrun's agent cache "
                                f"({agents_dir()}, $TRIALRUN_AGENTS_DIR) nor on PATH; install it with `trialrun agents "
                                f"install {pin.name}` (into the cache) or `{pin.install_command}`, or give its path "
                                f"(path = \"...\")")
        return found

    def _existing(self, value: str | os.PathLike[str], what: str) -> Path:
        path = Path(value).expanduser().resolve()
        if not path.exists():
            raise ValueError(f"{self.label}: {what} {str(value)!r} does not exist")
        return path

    def check_knobs(self) -> None:
        """A preset refuses knobs its agent has no such thing for, by its contract (the message says what it does
        have)."""
        permissions = self.contract.permissions
        if permissions is None:
            if self.permission_mode or self.allow or self.deny:
                raise ValueError(f"{self.label} has no permission modes or allow/deny rules of its own (it runs what "
                                 "the model asks); use a sandbox to contain it")
        else:
            if self.permission_mode is not None and permissions.modes and self.permission_mode not in permissions.modes:
                raise ValueError(f"{self.label}: {permissions.mode_is} one of {', '.join(permissions.modes)}; "
                                 f"got {self.permission_mode!r}")
            if (self.allow or self.deny) and not permissions.rules:
                raise ValueError(f"{self.label}: allow/deny rules are not supported by this preset; use "
                                 f"permission_mode ({permissions.mode_is.removesuffix(',')}) or args=[...]")
        knobs = self.contract.knobs
        for knob, given, where in (("skills", bool(self.skills), knobs.skills),
                                   ("instructions", self.instructions is not None, knobs.instructions)):
            if given and (not where or where.startswith("none")):  # (the contract's "none (why)")
                raise ValueError(f"{self.label}: the preset has no way to give the agent {knob}"
                                 + (f": {where}" if where else ""))
        if self.side_requests and self.contract.side_requests is None:
            with_them = [name for name, c in _contracts().items() if c.side_requests is not None]
            raise ValueError(f"{self.label} sends no title or summary requests: side_requests applies to "
                             f"{' and '.join(with_them)}")

    def interpret(self, run: Run, stdout: str = "") -> None:
        """As ProcessAgent's, and what its contract says of its tools: each tool that runs a command is a command
        tool (Kilo's `background_process` too, whatever its schema says), and the tools that run none are named, so
        that `never_ran` examines the first and reads any other tool's arguments as text (`cannot tell`)."""
        super().interpret(run, stdout)
        trajectory = run.trajectory
        for name, argument in self.contract.command_tools().items():
            trajectory.command_tools.setdefault(name, argument)
        trajectory.quiet_tools = list(dict.fromkeys([*trajectory.quiet_tools, *self.contract.quiet_tools()]))

    def refusal_in(self, call: ToolCall, result: ToolResult) -> str | None:
        """Its contract's refusal forms, on the whole result (with the error flag, where the contract says)."""
        refusals = self.contract.refusals
        return None if refusals is None else refusals.match(result.content, result.is_error)

    def skill_dirs(self) -> list[tuple[str, Path]]:
        """Each skill as (name, folder holding SKILL.md); a lone file is taken as that folder's SKILL.md."""
        found = []
        for skill in self.skills:
            found.append((skill.stem if skill.is_file() else skill.name, skill))
        return found

    def install_skills(self, folder: Path) -> None:
        """Copy the skills into `folder/<name>/SKILL.md` (the layout every agent here reads)."""
        for name, source in self.skill_dirs():
            target = folder / name
            if source.is_dir():
                shutil.copytree(source, target, dirs_exist_ok=True)
            else:
                target.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target / "SKILL.md")

    def settings_for_snapshot(self) -> Any:
        """The agent's settings as written, without the per-trial endpoint (which changes every trial)."""
        return {"permission_mode": self.permission_mode, "allow": self.allow, "deny": self.deny, "args": self.args,
                "side_requests": self.side_requests}

    def unread(self, call: Any) -> str:
        return f"{self.label} does not say whether a {call.name} result failed"

    def snapshot(self) -> dict[str, Any]:
        return {
            "agent": self.label,
            "agent_version": program_version(self.path, self.contract.version_args),
            "api": self.api,
            "model_name": self.model_name,
            "skills_loaded": [name for name, _ in self.skill_dirs()],
            "skills_sha256": file_digest(self.skills),
            "instructions_sha256": file_digest([self.instructions]) if self.instructions else None,
            # the text itself (bounded), so that compare shows what changed in it, not only two hashes
            "instructions_text": file_snapshot_text(self.instructions) if self.instructions else None,
            "agent_settings_sha256": settings_digest(self.settings_for_snapshot()),
            "permission_mode": self.permission_mode,
            "allow": self.allow,
            "deny": self.deny,
            "side_requests": self.side_requests,
            "sandbox": self.sandbox.describe(),
        }


def _contracts() -> dict[str, AgentContract]:
    from . import CONTRACTS  # the registry imports the presets, which import this module

    return CONTRACTS
