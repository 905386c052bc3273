"""From a suite file and a configuration to runnable Cases: the model per trial, the agent, the rubric, the judge.

Everything that can be checked before running is checked here (the agent target imports, the scripted model
file has a script for every test, the policy parses), so a configuration error never surfaces mid-run.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import importlib
import importlib.machinery
import inspect
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from .. import _version
from ..models._cassette_io import load_exchanges
from .._util.files import gc_paused, read_text
from .._util.yaml_read import YamlError, load_yaml
from ..agent import Agent, PriceTable, ToolPolicy, prices, shell_tools
from ..agent.tools import Tool
from ..case import Case, TrialContext
from .config import COMMAND_PREFIX, PRESET_NAMES, Config, ConfigError, ModelSpec, load_config, parse_model_spec
from ..expect._base import Grader
from ..expect.rubric import key_terms, rubric
from .judge import llm_judge
from ..models import LiveModel, RateLimit, ScriptedModel
from ..models.scripted import DEFAULT_SIDE_REPLY, shell, subagent
from ._tests_file import SuiteError, SuiteFile, SuiteTest, read_suite
from ..trajectory import ToolCall, Usage
from ..wire import ProviderError, Step

__all__ = ["build_cases", "load_suite", "load_script_file", "config_snapshot", "model_transport", "check_api_keys", "ignored_by_custom_agent",
           "suite_warnings", "process_agent"]

#: config_snapshot keys that describe what only the reference agent receives; left out for a custom agent.
REFERENCE_AGENT_KEYS = ("api", "model_name", "tools", "system_prompt_sha256", "policy")
SHELL_TOOL_NAMES = ("run_command", "read_file", "write_file", "list_dir")
_LIVE_DEFAULTS = {
    "openai": ("https://api.openai.com/v1", "OPENAI_API_KEY"),
    "anthropic": ("https://api.anthropic.com", "ANTHROPIC_API_KEY"),
    "gemini": ("https://generativelanguage.googleapis.com", "GEMINI_API_KEY"),
}


# -- scripted model files ----------------------------------------------------------------------------------
def _step(data: Any, where: str) -> Step | ProviderError:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: a step is a mapping such as {{reply: ...}}, got {type(data).__name__}")
    kinds = [k for k in ("tool_call", "tool_calls", "reply", "error", "shell", "subagent") if k in data]
    extra = sorted(set(data) - {"tool_call", "tool_calls", "reply", "error", "shell", "subagent", "usage", "text"})
    if len(kinds) != 1 or extra:
        raise ConfigError(f"{where}: a step has exactly one of tool_call, tool_calls, reply, error, shell, subagent"
                          + (f" (unknown key(s): {', '.join(extra)})" if extra else f" (got {sorted(data)})"))
    usage = None
    if "usage" in data:
        u = data["usage"]
        if not isinstance(u, dict) or not {"input_tokens", "output_tokens"} <= set(u):
            raise ConfigError(f"{where}: usage needs input_tokens and output_tokens")
        counts = []
        for key in ("input_tokens", "output_tokens", "cached_input_tokens"):
            count = u.get(key, 0)
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise ConfigError(f"{where}: usage: {key} is a whole number of tokens >= 0 (got {count!r})")
            counts.append(count)
        usage = Usage(*counts)
    kind = kinds[0]
    value = data[kind]
    if kind == "reply":
        if not isinstance(value, str):
            raise ConfigError(f"{where}: reply must be text")
        return Step(text=value, usage=usage)
    if kind == "error":
        return _error_step(value, where)
    if kind == "shell":
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}: shell is the command to run through the agent's shell tool, e.g. "
                              f"{{shell: 'echo hi > marker.txt'}} (got {value!r})")
        return replace(shell(value), text=str(data.get("text", "")), usage=usage)
    if kind == "subagent":
        return replace(_subagent_step(value, where), text=str(data.get("text", "")), usage=usage)
    calls = [value] if kind == "tool_call" else value
    if not isinstance(calls, list) or not calls:
        raise ConfigError(f"{where}: tool_calls must be a non-empty list")
    parsed = []
    for number, call in enumerate(calls, start=1):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise ConfigError(f"{where}: tool call {number} needs a name, e.g. {{name: read_file, arguments: {{path: a.txt}}}}")
        arguments = call.get("arguments", {})
        if not isinstance(arguments, dict):
            raise ConfigError(f"{where}: tool call {number}: arguments must be a mapping")
        unknown = sorted(set(call) - {"name", "arguments", "namespace"})
        if unknown:
            raise ConfigError(f"{where}: tool call {number}: unknown key(s) {', '.join(map(str, unknown))} (known: "
                              "name, arguments, namespace)")
        namespace = call.get("namespace")
        if namespace is not None and (not isinstance(namespace, str) or not namespace):
            raise ConfigError(f"{where}: tool call {number}: namespace is the tool namespace's name (OpenAI Responses, "
                              f"e.g. multi_agent_v1), got {namespace!r}")
        parsed.append(ToolCall(call["name"], dict(arguments), namespace=namespace))
    return Step(text=str(data.get("text", "")), tool_calls=parsed, usage=usage)


def _subagent_step(value: Any, where: str) -> Step:
    """`{subagent: "the task"}` or `{subagent: {prompt: ..., description: ..., agent_type: ...}}`."""
    spec = value if isinstance(value, dict) else {"prompt": value}
    unknown = sorted(set(spec) - {"prompt", "description", "agent_type"})
    if unknown:
        raise ConfigError(f"{where}: subagent: unknown key(s) {', '.join(map(str, unknown))} (known: prompt, "
                          "description, agent_type)")
    try:
        return subagent(spec.get("prompt", ""), description=spec.get("description", "Delegated task"),
                        agent_type=spec.get("agent_type"))
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _error_step(value: Any, where: str) -> ProviderError:
    """`{error: {status: 429, retry_after: 0, message: ...}}` (or `{error: 429}`): the provider answers an error."""
    spec = value if isinstance(value, dict) else {"status": value}
    unknown = sorted(set(spec) - {"status", "message", "retry_after"})
    if unknown:
        raise ConfigError(f"{where}: error: unknown key(s) {', '.join(map(str, unknown))} (known: status, message, retry_after)")
    status = spec.get("status")
    if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
        raise ConfigError(f"{where}: error needs an HTTP error status from 400 to 599, e.g. {{error: {{status: 429}}}} "
                          f"(got {status!r})")
    retry_after = spec.get("retry_after")
    if retry_after is not None and (isinstance(retry_after, bool) or not isinstance(retry_after, (int, float)) or retry_after < 0):
        raise ConfigError(f"{where}: error: retry_after is seconds, a number >= 0 (got {retry_after!r})")
    message = spec.get("message")
    if message is not None and not isinstance(message, str):
        raise ConfigError(f"{where}: error: message must be text (got {message!r})")
    return ProviderError(status=status, message=message or _default_error(status),
                         retry_after=None if retry_after is None else float(retry_after))


def _default_error(status: int) -> str:
    return {429: "Rate limit exceeded", 500: "Internal server error", 503: "Service unavailable"}.get(status, f"HTTP {status}")


@dataclass(frozen=True)
class FileScript:
    """One test's script from a scripted model file: the main loop's steps, what side requests get, and the
    sub-agents' scripts (keyed by text their conversation's first request contains)."""

    steps: list[Step | ProviderError]
    side_reply: str = DEFAULT_SIDE_REPLY
    subagents: dict[str, list[Step | ProviderError]] = field(default_factory=dict)

    def model(self) -> ScriptedModel:
        return ScriptedModel(list(self.steps), side_reply=self.side_reply,
                             subagents={key: list(steps) for key, steps in self.subagents.items()})


def _file_script(value: Any, where: str) -> FileScript:
    """`[steps]`, or `{steps: [...], side_reply: text, subagents: {text: [steps]}}`."""
    def steps_of(items: Any, at: str) -> list[Step | ProviderError]:
        if not isinstance(items, list):
            raise ConfigError(f"{at}: expected a list of steps")
        return [_step(step, f"{at}, step {n}") for n, step in enumerate(items, start=1)]

    if isinstance(value, list):
        return FileScript(steps_of(value, where))
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a list of steps, or a mapping with steps (and side_reply, subagents)")
    unknown = sorted(set(value) - {"steps", "side_reply", "subagents"})
    if unknown or "steps" not in value:
        raise ConfigError(f"{where}: a test's script is a list of steps or a mapping with steps, side_reply and "
                          f"subagents" + (f" (unknown key(s): {', '.join(map(str, unknown))})" if unknown else " (no steps)"))
    side_reply = value.get("side_reply", DEFAULT_SIDE_REPLY)
    if not isinstance(side_reply, str):
        raise ConfigError(f"{where}: side_reply must be text (what a request offering no tools, such as a title "
                          f"request, is answered with), got {side_reply!r}")
    subagents = value.get("subagents") or {}
    if not isinstance(subagents, dict):
        raise ConfigError(f"{where}: subagents maps text that a sub-agent's first request contains to its steps")
    return FileScript(steps_of(value["steps"], where), side_reply,
                      {str(key): steps_of(items, f"{where}, subagent {key!r}") for key, items in subagents.items()})


def load_script_file(path: Path) -> dict[str, FileScript]:
    """A scripted model file: {test id: [steps]} (or {test id: {steps, side_reply, subagents}}) in JSON or YAML."""
    text = read_text(path, "scripted model file", ConfigError)
    data: Any = None
    if path.suffix == ".json":  # read as JSON (fast); when it is not, YAML (a superset) says where and why
        try:
            with gc_paused():
                data = json.loads(text)
        except (ValueError, RecursionError):
            data = None
    if data is None:
        try:
            data = load_yaml(text, language="YAML/JSON")
        except YamlError as exc:
            raise ConfigError(f"{path}{exc.where}: {exc}") from None
    if data is None:
        raise ConfigError(f"{path}: the scripted model file is empty; it maps test ids to lists of steps, "
                          f"e.g. {{read-file: [{{reply: hi}}]}}")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a scripted model file maps test ids to lists of steps, e.g. "
                          f"{{read-file: [{{reply: hi}}]}} (got {type(data).__name__})")
    return {str(test_id): _file_script(value, f"{path}: test {test_id!r}") for test_id, value in data.items()}


# -- the model of one trial --------------------------------------------------------------------------------
def _provider(spec: ModelSpec, api: str) -> str:
    """Which provider's defaults (base URL, key variable) a live spec uses: its kind, or for record: the API's."""
    return spec.kind if spec.kind in _LIVE_DEFAULTS else ("anthropic" if api == "anthropic" else "gemini" if api == "gemini" else "openai")


def _live(spec: ModelSpec, api: str, rate_limit: RateLimit | None = None) -> LiveModel:
    if spec.kind == "openai-compatible":
        return LiveModel(spec.target, rate_limit=rate_limit)
    base_url, env = _LIVE_DEFAULTS[_provider(spec, api)]
    return LiveModel(base_url, api_key_env=env, rate_limit=rate_limit)


def _judge_api(spec: ModelSpec) -> str:
    return "anthropic" if spec.kind == "anthropic" else "openai-chat"


def check_api_keys(config: Config, environ: Mapping[str, str] | None = None) -> None:
    """ConfigError, before anything runs, when the model or the judge calls a provider whose API key variable is
    not set: every test would fail the same way, which is a configuration problem, not a result. (An
    openai-compatible server may need no key; its calls say so if it does.)"""
    env_values = os.environ if environ is None else environ
    roles: list[tuple[str, ModelSpec, str]] = [("model", config.model_spec, config.effective_api)]
    if config.judge:
        judge = parse_model_spec(config.judge)
        roles.append(("judge", judge, _judge_api(judge)))
    missing = []
    for role, spec, api in roles:
        if not spec.live or spec.kind == "openai-compatible":
            continue
        variable = _LIVE_DEFAULTS[_provider(spec, api)][1]
        if not env_values.get(variable):
            missing.append(f"{variable} is not set, and the {role} {spec} calls the provider")
    if missing:
        raise ConfigError("; ".join(missing) + ". Set it in the environment, or use a scripted: or replay: model; "
                          "nothing was run")


def model_transport(spec: ModelSpec, test_id: str, config: Config, ctx: TrialContext, scripts: dict[str, FileScript] | None) -> Any:
    """The observed transport a trial talks to, for a model spec."""
    if spec.kind == "scripted":
        assert scripts is not None
        if test_id not in scripts:  # a live canary run after all (e.g. by the pytest plugin's option)
            raise ConfigError(f"{config.resolve(spec.target)}: no script for test {test_id!r}")
        return ctx.observe(scripts[test_id].model())
    if spec.kind in ("replay", "record"):
        cassette = config.resolve(spec.target) / f"{_safe(test_id)}.yaml"
        if spec.kind == "replay":
            return ctx.cassette(cassette, "replay")
        return ctx.cassette(cassette, "record", upstream=_live(spec, config.effective_api, config.rate_limits))
    return ctx.observe(_live(spec, config.effective_api, config.rate_limits))


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


# -- the agent --------------------------------------------------------------------------------------------
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
    try:
        module = importlib.import_module(module_name)
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # noqa: BLE001 - any import failure is a configuration error
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


def _check_cassettes(folder: Path, test_ids: list[str]) -> None:
    """ConfigError before anything runs when a replay: model has no cassette for a test that will run, as a
    scripted: model without a script for it is: a missing recording is a setup problem, not a test failure."""
    paths = [folder / f"{_safe(test_id)}.yaml" for test_id in test_ids]
    missing = [path for path in paths if not path.exists()]
    if missing:
        raise ConfigError(f"replay:{folder}: no cassette for {len(missing)} test(s) that will run: "
                          f"{', '.join(str(path) for path in missing)} (record them with record:{folder}); "
                          "nothing was run")
    for path in paths:  # a corrupt cassette is a file to fix (CassetteFileError names it), not a failed test
        load_exchanges(path)


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


def build_cases(
    suite: SuiteFile, config: Config, *, only: Collection[str] | None = None, include_live_canary: bool = False,
) -> list[Case]:
    """Runnable Cases for the suite's tests (those named in `only`, when given), with the configured agent and model.

    A scripted model must have a script for every test that will run; a live canary that will be skipped (without
    `include_live_canary`) needs none, as it never asks the model anything.
    """
    with gc_paused():  # 100,000 cases: half the time was the collector walking them
        return _build_cases(suite, config, only=only, include_live_canary=include_live_canary)


def _build_cases(
    suite: SuiteFile, config: Config, *, only: Collection[str] | None, include_live_canary: bool,
) -> list[Case]:
    wanted = None if only is None else set(only)  # a set: `only` may name 100,000 tests
    tests = [t for t in suite.tests if wanted is None or t.id in wanted]
    spec = config.model_spec
    api = config.effective_api
    model_name = config.effective_model_name
    scripts = load_script_file(config.resolve(spec.target)) if spec.kind == "scripted" else None
    if scripts is not None:
        missing = [t.id for t in tests if t.id not in scripts and (include_live_canary or t.mode != "live_canary")]
        if missing:
            raise ConfigError(f"{config.resolve(spec.target)}: no script for test(s) {', '.join(map(repr, missing))}")
    _apply_prices(config, prices)
    policy = _policy(config)
    make_tools, tool_names = _tools_factory(config)
    if not config.agent:  # the reference agent's tools are known: an expected tool it lacks is a typo, not a score
        _check_expected_tools(suite, tests, tool_names)
    workspace = config.resolve(config.workspace) if config.workspace else None
    if workspace is not None and not workspace.is_dir():
        raise ConfigError(f"{config.source or 'configuration'}: workspace: {str(workspace)!r} is not a folder")
    process = process_agent(config)
    custom = _import(config.agent, "agent", config) if config.agent and process is None else None
    if custom is not None:
        _check_agent_signature(custom, config.agent or "", config.source or "configuration")
    if spec.kind == "replay":
        _check_cassettes(config.resolve(spec.target),
                         [t.id for t in tests if include_live_canary or t.mode != "live_canary"])
    judge_parsed, judge_scripts = judge_setup(config)

    def setup(ctx: TrialContext) -> None:
        if workspace is not None:
            shutil.copytree(workspace, ctx.workdir, dirs_exist_ok=True, symlinks=True)

    def invoke_for(test: SuiteTest) -> Callable[[TrialContext], Any]:
        if custom is not None and not inspect.iscoroutinefunction(custom):
            def invoke_sync(ctx: TrialContext) -> Any:  # the runner runs a sync agent in a worker thread
                ctx.prompt, ctx.model = test.prompt, model_transport(spec, test.id, config, ctx, scripts)
                return custom(test.prompt, ctx)

            return invoke_sync

        async def invoke(ctx: TrialContext) -> Any:
            ctx.prompt, ctx.model = test.prompt, model_transport(spec, test.id, config, ctx, scripts)
            if process is not None:  # awaited here, so a timeout or Ctrl-C cancels it and kills its processes
                return await process.arun(test.prompt, ctx)
            if custom is not None:
                return await custom(test.prompt, ctx)
            agent = Agent(
                ctx.model, api=api, model_name=model_name, tools=make_tools(lambda: ctx.workdir), policy=policy,
                system=config.system, max_turns=config.turn_limit, max_cost_usd=test.max_cost_usd,
            )
            return await agent.arun(test.prompt)

        return invoke

    cases = []
    for test in tests:
        cases.append(
            Case(
                name=test.id,
                title=test.name,
                invoke=invoke_for(test),
                setup=setup if workspace is not None else None,
                tags=test.tags,
                mode="live_canary" if test.mode == "live_canary" else "deterministic",
                expect_outcome=test_graders(test, suite, config, judge_parsed, judge_scripts),
                max_cost_usd=test.max_cost_usd,
                trials=test.trials,
                metadata=test_metadata(test, suite),
                _source=str(suite.path),
            )
        )
    if spec.live:
        # A live model is the user's explicit choice: its calls must reach the provider, so no test is gated.
        for case in cases:
            case.mode = "live_canary"
    return cases


def judge_setup(config: Config) -> tuple[ModelSpec | None, dict[str, FileScript] | None]:
    """The configured judge's model spec and, for a scripted judge, its scripts (None, None without a judge)."""
    judge_parsed = parse_model_spec(config.judge) if config.judge else None
    judge_scripts = load_script_file(config.resolve(judge_parsed.target)) if judge_parsed and judge_parsed.kind == "scripted" else None
    return judge_parsed, judge_scripts


def test_graders(test: SuiteTest, suite: SuiteFile, config: Config, judge_parsed: ModelSpec | None,
                 judge_scripts: dict[str, FileScript] | None) -> list[Grader]:
    """A suite test's graders: the rubric (with the judge, when one is configured), then its `expect` graders. The
    one place they are made, for a run and for `trialrun regrade` alike."""
    judge = None
    if judge_parsed is not None:
        judge = llm_judge(
            functools.partial(_judge_transport, judge_parsed, test.id, config, judge_scripts),
            api=_judge_api(judge_parsed),
            model_name=judge_parsed.model_name or "gpt-4.1-mini",
            prompt=test.prompt,
        )
    return [
        rubric(expected_tools=test.expected_tools, max_turns=test.max_turns, success_criteria=test.success_criteria,
               threshold=config.pass_threshold, judge=judge, formula=config.rubric),
        *suite.graders.get(test.id, []),
    ]


def test_metadata(test: SuiteTest, suite: SuiteFile) -> dict[str, Any]:
    """What a suite test's case carries as metadata (`results.is_suite_case` tells a suite case by it)."""
    return {"prompt": test.prompt, "expected_tools": test.expected_tools, "max_turns": test.max_turns,
            "success_criteria": test.success_criteria, "line": suite.lines.get(test.id)}


def load_suite(path: str | Path, config: Config | None = None) -> list[Case]:
    """Read a suite file and build runnable Cases from it with a configuration (trialrun.toml). It lives here, not
    in `suite`, so data flows one way: suite files -> cases."""
    suite = read_suite(path)
    return build_cases(suite, config if config is not None else load_config(Path(path).parent))


def _where(suite: SuiteFile, test: SuiteTest) -> str:
    """`state/eval/tests.json:12: test 'read-file'`: where a message about one test points."""
    line = suite.lines.get(test.id)
    return f"{suite.path}:{line}: test {test.id!r}" if line else f"{suite.path}: test {test.id!r}"


def _check_expected_tools(suite: SuiteFile, tests: list[SuiteTest], tool_names: list[str]) -> None:
    """SuiteError, before anything runs, for an expected tool the reference agent does not have (with a
    did-you-mean): the model is never offered it, so the test could only ever score low."""
    problems = []
    for test in tests:
        for name in test.expected_tools:
            if name in tool_names:
                continue
            close = difflib.get_close_matches(name, tool_names, n=1, cutoff=0.6)
            if not close:
                close = [t for t in tool_names if t.replace("_", "-").lower() == name.replace("_", "-").lower()]
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append(f"{_where(suite, test)}, field 'expected_tools': {name!r} is not a tool of the reference "
                            f"agent{hint}; its tools: {', '.join(tool_names) or 'none'}")
    if problems:
        raise SuiteError(problems)


def suite_warnings(suite: SuiteFile, config: Config, only: Collection[str] | None = None) -> list[str]:
    """What is legal in a suite but probably not meant, one message per test (the CLI prints them as warnings and
    `--strict` makes them errors): a test that cannot fail under the configured rubric, success criteria the
    heuristic cannot check (no judge: any non-empty answer would get full output quality), and a turn budget above
    the reference agent's hard `turn_limit` (the agent is stopped before it could use the budget)."""
    warnings = []
    for test in suite.tests:
        if only is not None and test.id not in only:
            continue
        if config.rubric == "skill" and not test.expected_tools and not suite.graders.get(test.id):
            warnings.append(f"{_where(suite, test)}: cannot fail under the \"skill\" rubric: with no expected_tools "
                            "and no expect graders, tool accuracy and turn efficiency alone reach 1.0 (use "
                            "rubric = \"balanced\", or add expect graders)")
        if not config.judge and not key_terms(test.success_criteria):
            warnings.append(f"{_where(suite, test)}, field 'success_criteria': no word of {test.success_criteria!r} "
                            "is one the heuristic can look for, so any non-empty answer gets output_quality 0.5 (name "
                            "what the answer must contain, or configure a judge)")
        if not config.agent and test.max_turns > config.turn_limit:
            warnings.append(f"{_where(suite, test)}, field 'max_turns': {test.max_turns} is above turn_limit "
                            f"{config.turn_limit}: the agent is stopped after {config.turn_limit} turns, before the "
                            "budget is used up")
    return warnings


def _judge_transport(spec: ModelSpec, test_id: str, config: Config, scripts: dict[str, FileScript] | None) -> Any:
    from ..models import Cassette

    if spec.kind == "scripted":
        assert scripts is not None
        if test_id not in scripts:
            raise ConfigError(f"judge script has no entry for test {test_id!r}")
        return scripts[test_id].model()
    if spec.kind in ("replay", "record"):
        path = config.resolve(spec.target) / f"judge-{_safe(test_id)}.yaml"
        mode: Literal["replay", "record"] = "record" if spec.kind == "record" else "replay"
        return Cassette(path, mode, upstream=_live(spec, "openai-chat") if spec.kind == "record" else None)
    return _live(spec, _judge_api(spec))


# -- what the run was configured with ----------------------------------------------------------------------
def _git_commit(folder: Path) -> str | None:
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def config_snapshot(config: Config, suite: SuiteFile, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """What the run was configured with, for compare to diff. Never a secret: no keys, no environment values."""
    reference = not config.agent
    process = process_agent(config)
    _, tool_names = _tools_factory(config) if reference else (None, [])
    policy = _policy(config) if reference else None
    suite_bytes = suite.path.read_bytes()
    snapshot: dict[str, Any] = {
        "model": str(config.model_spec),
        "api": config.effective_api,
        "model_name": config.effective_model_name,
        "agent": config.agent or "trialrun.Agent",
        "skills_loaded": list(config.skills),
        "sandbox": _sandbox_name(config),
        "tools": tool_names,
        "system_prompt_sha256": hashlib.sha256(config.system.encode()).hexdigest()[:16] if config.system else None,
        "policy": policy.summary() if policy else None,
        "judge": config.judge or "heuristic",
        "pass_threshold": config.pass_threshold,
        "rubric": config.rubric,
        "turn_limit": config.turn_limit,
        "trials": config.trials,
        "executor": executor_name(config.executor),
        "prices": _prices_snapshot(config),
        "suite": {"path": _relative(suite.path), "sha256": hashlib.sha256(suite_bytes).hexdigest()},
        "trialrun_version": _version.__version__,
        "python_version": platform.python_version(),
        "git_commit": _git_commit(config.base_dir),
    }
    if not reference:  # a custom agent gets (prompt, ctx) and no more: these configure the reference agent only
        for key in REFERENCE_AGENT_KEYS:
            del snapshot[key]
    if reference and config.pass_env:  # the names only: what run_command keeps of the environment
        snapshot["pass_env"] = sorted(config.pass_env)
    if process is not None:  # what the agent itself was configured with: version, settings and skills hashes
        snapshot.update(process.snapshot())
    if (limit := _rate_limit_snapshot(config)) is not None:
        snapshot["rate_limit"] = limit
    if labels:
        snapshot["labels"] = dict(labels)
    return snapshot


def executor_name(executor: str | None) -> str:
    """Where the trials ran, as `config_snapshot.executor` records it: "local", "ray" or "ray://HOST:PORT" (never
    a user or password a URL may carry)."""
    text = (executor or "").strip() or "local"
    return re.sub(r"//[^/@]*@", "//", text)


def _rate_limit_snapshot(config: Config) -> dict[str, Any] | None:
    """The limit the live model's calls were held to (shared by every trial; on Ray by every worker), if any."""
    limit = config.rate_limits
    if limit is None or not config.model_spec.live:
        return None
    return {**limit.as_dict(), "applies_to": str(config.model_spec), "shared": "every trial of the run"}


def _apply_prices(config: Config, table: PriceTable) -> None:
    """The configured price source and explicit prices, into `table`; a ConfigError naming the key otherwise."""
    try:
        table.use(config.prices_source)
    except ValueError as exc:
        raise ConfigError(f"{config.source or 'configuration'}: prices_source: {exc}") from None
    for model, entry in config.prices.items():
        try:
            table.set(model, **entry)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{config.source or 'configuration'}: prices.{model}: {exc}") from None


def _prices_snapshot(config: Config) -> dict[str, Any]:
    """Which source prices this configuration's runs (and its version), without touching the shared table."""
    table = PriceTable()
    _apply_prices(config, table)
    return table.describe()


def _sandbox_name(config: Config) -> str:
    sandbox = _sandbox(config)
    return sandbox if isinstance(sandbox, str) else sandbox.describe()


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


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
