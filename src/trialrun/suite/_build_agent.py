"""The agent side of building cases: the configured agent (the reference agent's tools, sandbox and policy, a
custom `module:function`, or an agent in another process) imported and checked before anything runs.

A part of `_build`, kept apart because importing a user's agent and tools has its own care: two projects in one
process must each get their own modules (`_forget_other_projects`).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import inspect
import os
import shlex
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..agent import ToolPolicy, shell_tools
from ..agent.tools import Tool
from .config import COMMAND_PREFIX, PRESET_NAMES, Config, ConfigError

__all__ = ["process_agent", "is_process_agent", "ignored_by_custom_agent", "SHELL_TOOL_NAMES"]

#: The reference agent's shell tools; `tools = ["shell"]` means all of them.
SHELL_TOOL_NAMES = ("run_command", "read_file", "write_file", "list_dir")


def _import(target: str, what: str, config: Config) -> Any:
    where = config.source or "configuration"
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"{where}: {what} {target!r} must be 'module:attribute', e.g. 'my_agent:run'")
    for folder in (str(config.base_dir), str(Path.cwd())):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    _forget_other_projects(config.base_dir)
    before = set(sys.modules)
    ctrl_c: list[int] = []
    try:
        with _telling_ctrl_c(ctrl_c):
            module = importlib.import_module(module_name)
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # noqa: BLE001 - any import failure is a configuration error
        if ctrl_c:  # the user pressed Ctrl-C while it was imported (a heavy framework takes seconds): an interrupt
            raise KeyboardInterrupt from None
        # SystemExit(0) at import would otherwise end the run with exit 0 and nothing run: a false green.
        raise ConfigError(f"{where}: {what} {target!r}: cannot import {module_name}: {_raised(exc)}") from None
    finally:
        _remember_project_modules(config.base_dir, set(sys.modules) - before)
    try:
        value = module
        for part in attr.split("."):
            value = getattr(value, part)
    except AttributeError:
        raise ConfigError(f"{where}: {what} {target!r}: {module_name} has no attribute {attr!r}") from None
    return value


#: Project folder -> the modules that importing its agent and tools brought in from that folder.
_PROJECT_MODULES: dict[Path, set[str]] = {}


def _inside(module: Any, folder: Path) -> bool:
    where = getattr(module, "__file__", None)
    if not isinstance(where, str):
        return False
    try:
        return Path(where).resolve().is_relative_to(folder.resolve())
    except (OSError, ValueError):
        return False


def _remember_project_modules(base_dir: Path, added: set[str]) -> None:
    mine = {name for name in added if _inside(sys.modules.get(name), base_dir)}
    if mine:
        _PROJECT_MODULES.setdefault(base_dir, set()).update(mine)


def _clashes(name: str, base_dir: Path) -> bool:
    """Whether the loaded module `name` is not the one this project's folder has under that name."""
    loaded = sys.modules.get(name)
    if loaded is None:
        return False
    try:
        spec = importlib.machinery.PathFinder.find_spec(name, [str(base_dir)])
    except (ImportError, ValueError):
        return False
    if spec is None or not spec.origin or spec.origin in ("built-in", "frozen"):
        return False  # not a module of this folder
    where = getattr(loaded, "__file__", None)
    try:
        return not (where and Path(where).resolve() == Path(spec.origin).resolve())  # else this project's own
    except OSError:
        return True


def _forget_other_projects(base_dir: Path) -> None:
    """Two projects loaded in one process (a script evaluating both, tests driving the CLI in-process), both with
    a `my_agent.py` or a `helpers` package their agents import: when a module another project's import brought in
    from its folder has the name of one in this project's folder, every module the other projects' imports brought
    in is forgotten and this folder goes first on `sys.path`, so the import below runs THIS project's agent and
    tools, not the other's. Modules no project import brought in (the standard library, installed packages, the
    caller's own) are never touched, even when this folder has a file of the same name."""
    others = {other: names for other, names in _PROJECT_MODULES.items() if other != base_dir}
    theirs = {name.partition(".")[0] for names in others.values() for name in names}
    if not any(_clashes(name, base_dir) for name in theirs):
        return
    forget = {name for names in others.values() for name in names}
    for other in others:
        del _PROJECT_MODULES[other]
    for name in forget:
        sys.modules.pop(name, None)
    folder = str(base_dir)
    if sys.path[:1] != [folder]:
        if folder in sys.path:
            sys.path.remove(folder)
        sys.path.insert(0, folder)
    importlib.invalidate_caches()


@contextlib.contextmanager
def _telling_ctrl_c(came: list[int]) -> Iterator[None]:
    """While an agent's module is imported, a real Ctrl-C is noted in `came` (then raised as usual), so that it is told
    from a KeyboardInterrupt the module raises itself (a configuration error). Only where Python's own handler is
    in place, in the main thread."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return

    def noted(signum: int, frame: Any) -> None:
        came.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, noted)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _raised(exc: BaseException) -> str:
    """What an import raised, for a message: `SystemExit(0) at import` says more than a bare `0`."""
    if isinstance(exc, (SystemExit, KeyboardInterrupt)):
        return f"it raised {type(exc).__name__}({', '.join(map(repr, exc.args))}) while being imported"
    return f"{type(exc).__name__}: {exc}"


def _check_agent_signature(agent: Any, target: str, where: object = "configuration") -> None:
    """ConfigError before anything runs when the agent cannot be called as agent(prompt, ctx): otherwise every
    trial would fail with the same TypeError, a configuration problem reported as test failures."""
    if not callable(agent):
        raise ConfigError(f"{where}: agent {target!r} is not callable; it should be a function taking (prompt, ctx)")
    try:
        signature = inspect.signature(agent)
    except (TypeError, ValueError):  # a builtin or extension without a signature: let the call decide
        return
    try:
        signature.bind("prompt", "ctx")
    except TypeError as exc:
        raise ConfigError(f"{where}: agent {target!r} has the signature {signature}, but trialrun calls it as "
                          f"{target.partition(':')[2] or target}(prompt, ctx): the expected signature is (prompt, ctx) "
                          f"({exc}); nothing was run") from None


_COMMAND_PREFIX = COMMAND_PREFIX


def is_process_agent(config: Config) -> bool:
    agent = config.agent or ""
    return agent in PRESET_NAMES or agent.startswith(_COMMAND_PREFIX)


def process_agent(config: Config) -> Any:
    """The ProcessAgent a configuration names (`agent = "pi"`, `agent = "command: ..."`), or None; every problem
    (an unknown option, a missing program, a skill file that is not there) is a ConfigError naming the file."""
    if not is_process_agent(config):
        return None
    from ..agents import AgentNotFound, ProcessAgent, preset

    where = str(config.source or "configuration")
    agent = config.agent or ""
    options = dict(config.agent_options)  # keys and types checked with the configuration (`config.Config`)
    if options.get("instructions") is not None:
        options["instructions"] = config.resolve(options["instructions"])
    if options.get("path") is not None:
        options["path"] = config.resolve(options["path"])
    try:
        if agent.startswith(_COMMAND_PREFIX):
            try:
                words = shlex.split(agent[len(_COMMAND_PREFIX):])
            except ValueError as exc:  # an unclosed quote
                raise ValueError(f"cannot be split into a program and its arguments ({exc})") from None
            argv = [_beside_config(arg, config) for arg in words]
            command = ProcessAgent(argv, api=config.effective_api,
                                   model_name=config.effective_model_name, sandbox=_sandbox(config), **options)
            _check_program(argv[0], config, options.get("env") or {})
            return command
        return preset(agent, api=config.api, model_name=config.model_name or config.model_spec.model_name,
                      skills=[config.resolve(skill) for skill in config.skills], sandbox=_sandbox(config), **options)
    except AgentNotFound as exc:
        raise ConfigError(f"{where}: agent {agent!r}: {exc}; nothing was run") from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: agent {agent!r}: {exc}") from None


def _check_program(program: str, config: Config, env: Mapping[str, str]) -> None:
    """The program of a `command:` agent, found before anything runs: a file that can be run, on the PATH the agent
    gets (its `env`'s PATH, else this one) when it is a bare name, else beside trialrun.toml, in the workspace
    (each trial's workdir starts as a copy of it) or where the absolute path says. A program named through a
    placeholder (`{workdir}/agent`) is known only per trial."""
    if "{" in program:
        return
    if os.sep not in program and (os.altsep is None or os.altsep not in program):
        found = shutil.which(program, path=env.get("PATH", os.environ.get("PATH")))
        if found is None:
            raise ValueError(f"the program {program!r} is not on PATH (nor an executable file there); give its path, "
                             "or install it; nothing was run")
        return
    path = Path(program)
    candidates = [path] if path.is_absolute() else [config.resolve(path)] + (
        [config.resolve(config.workspace) / path] if config.workspace else [])
    for candidate in candidates:
        if candidate.is_dir():
            raise ValueError(f"the program {program!r} is a folder, not a program; nothing was run")
        if candidate.exists():
            if not os.access(candidate, os.X_OK):
                raise ValueError(f"the program {program!r} is not executable (chmod +x {str(candidate)!r}, or run "
                                 "it through its interpreter); nothing was run")
            return
    looked = " or ".join(repr(str(c)) for c in candidates)
    raise ValueError(f"the program {program!r} does not exist (looked for {looked}); nothing was run")


def _beside_config(arg: str, config: Config) -> str:
    """A command runs in each trial's workdir: an argument naming a file next to trialrun.toml (`agent.py`) is made
    absolute, so it still names that file there."""
    if arg.startswith("-") or "{" in arg or Path(arg).is_absolute():
        return arg
    candidate = config.resolve(arg)
    return str(candidate) if candidate.is_file() else arg


def _tools_factory(config: Config) -> tuple[Callable[[Callable[[], Path]], list[Tool]], list[str]]:
    """What builds each trial's tools from its workdir (asked for only when a shell tool needs it, so a trial whose
    tools touch no files creates no folder), and their names (for the config snapshot)."""
    fixed: list[Tool] = []
    shell_names: list[str] = []
    for entry in config.tools:
        if entry == "shell":
            shell_names.extend(n for n in SHELL_TOOL_NAMES if n not in shell_names)
        elif entry in SHELL_TOOL_NAMES:
            shell_names.append(entry)
        elif ":" in entry:
            value = _import(entry, "tool", config)
            for item in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(item, Tool):
                    fixed.append(item)
                elif callable(item):
                    fixed.append(Tool(item))
                else:
                    raise ConfigError(f"{config.source or 'configuration'}: tool {entry!r}: {item!r} is not a tool or a function")
        else:
            raise ConfigError(f"{config.source or 'configuration'}: tools: {entry!r} is not 'shell', a shell tool "
                              f"({', '.join(SHELL_TOOL_NAMES)}) or 'module:attr'")

    sandbox = _sandbox(config) if shell_names else "none"

    def make(root: Callable[[], Path]) -> list[Tool]:
        shell = ([t for t in shell_tools(root(), sandbox=sandbox, pass_env=config.pass_env) if t.name in shell_names]
                 if shell_names else [])
        return shell + fixed

    return make, shell_names + [t.name for t in fixed]


def _sandbox(config: Config) -> Any:
    """The configured sandbox, checked once before anything runs (sandbox = "bwrap" where bubblewrap is unusable
    is a ConfigError; "auto" says once that it runs without one)."""
    if config.sandbox == "none":
        return "none"
    from .._contain.sandbox import resolve_sandbox

    try:
        return resolve_sandbox(config.sandbox)
    except ValueError as exc:
        raise ConfigError(f"{config.source or 'configuration'}: {exc}") from None


def _policy(config: Config) -> ToolPolicy | None:
    if not config.policy:
        return None
    try:
        return ToolPolicy.from_dict(config.policy)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{config.source or 'configuration'}: [policy]: {exc}") from None


def ignored_by_custom_agent(config: Config) -> list[str]:
    """What the configuration sets that a custom agent never receives (policy, system, tools go to the reference
    agent only), one message each, so a user is not misled into thinking they shaped the run."""
    if not config.agent:
        return []
    settings: list[tuple[str, object]] = [("policy", config.policy), ("system", config.system),
                                          ("tools", config.tools != ["shell"]), ("pass_env", config.pass_env)]
    kind = "a custom agent"
    if is_process_agent(config):
        kind = "a command agent" if config.agent.startswith(_COMMAND_PREFIX) else "a ready-made agent"
        settings.append(("turn_limit", config.turn_limit != Config.model_fields["turn_limit"].default))
        if config.agent.startswith(_COMMAND_PREFIX):
            settings.append(("skills", config.skills))
    elif config.agent_options:
        settings.append(("agent_options", config.agent_options))
    ignored = [key for key, value in settings if value]
    if config.sandbox != "none" and not is_process_agent(config):
        ignored.append("sandbox")
    if not ignored:
        return []
    return [(f"agent {config.agent!r} is {kind}: it does not receive {', '.join(ignored)} "
             f"(they configure the reference agent only), so they are ignored and not recorded")]

