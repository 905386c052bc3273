"""The model side of building cases: scripted model files read and checked, the transport each trial talks to (scripted,
replayed, recorded or live), the provider keys it needs, and the judge's model.

A part of `_build`, kept apart so that what a trial's model is stays in one place: a scripted file missing a test
or a replay folder missing a cassette is found here, before anything runs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from .._util.files import gc_paused, read_text
from .._util.yaml_read import YamlError, load_yaml
from ..case import TrialContext
from ..models import LiveModel, RateLimit, ScriptedModel
from ..models._cassette_io import load_exchanges
from ..models.scripted import DEFAULT_SIDE_REPLY, shell, subagent
from ..trajectory import ToolCall, Usage
from ..wire import ProviderError, Step
from .config import Config, ConfigError, ModelSpec, parse_model_spec

__all__ = ["FileScript", "load_script_file", "check_api_keys", "model_transport", "judge_setup"]

#: Each live provider's base URL and the variable its API key is read from.
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

    def model(self, workdir: str | None = None) -> ScriptedModel:
        """The script as a model; `workdir`: what `{workdir}` in a tool call's arguments stands for (the trial's
        workdir, for a tool that takes absolute paths: Claude Code's Edit, opencode's edit)."""
        def fill(steps: list[Step | ProviderError]) -> list[Step | ProviderError]:
            return [_filled(step, workdir) for step in steps] if workdir is not None else list(steps)

        return ScriptedModel(fill(self.steps), side_reply=self.side_reply,
                             subagents={key: fill(steps) for key, steps in self.subagents.items()})

    @property
    def uses_workdir(self) -> bool:
        """A tool call of the script names `{workdir}` (then the trial's workdir is made to fill it in)."""
        every = [*self.steps, *(step for steps in self.subagents.values() for step in steps)]
        return any(WORKDIR in json.dumps(call.arguments) for step in every if isinstance(step, Step)
                   for call in step.tool_calls)


#: What a scripted model file writes in a tool call's arguments for the trial's workdir.
WORKDIR = "{workdir}"


def _filled(step: Step | ProviderError, workdir: str) -> Step | ProviderError:
    """`step` with `{workdir}` in its tool calls' arguments replaced by `workdir`."""
    if not isinstance(step, Step) or not any(WORKDIR in json.dumps(c.arguments) for c in step.tool_calls):
        return step

    def fill(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(WORKDIR, workdir)
        if isinstance(value, dict):
            return {key: fill(item) for key, item in value.items()}
        if isinstance(value, list):
            return [fill(item) for item in value]
        return value

    return replace(step, tool_calls=[replace(call, arguments=fill(call.arguments)) for call in step.tool_calls])


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


def _missing_model_file(path: Path) -> str:
    """"scripted model file not found", with the model file in the same folder the name most likely meant and the
    ones that are there (a typo in --model scripted:FILE is the usual cause)."""
    import difflib

    try:
        there = sorted(child.name for child in path.parent.iterdir()
                       if child.suffix in (".yaml", ".yml", ".json") and child.is_file())[:200]
    except OSError:
        there = []
    close = difflib.get_close_matches(path.name, there, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    if there:
        hint += f" (YAML and JSON files in {path.parent}: {', '.join(there[:10])}{', ...' if len(there) > 10 else ''})"
    return "scripted model file not found" + hint


def load_script_file(path: Path) -> dict[str, FileScript]:
    """A scripted model file: {test id: [steps]} (or {test id: {steps, side_reply, subagents}}) in JSON or YAML."""
    text = read_text(path, "scripted model file", ConfigError, missing=_missing_model_file(path))
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
        script = scripts[test_id]
        return ctx.observe(script.model(str(ctx.workdir) if script.uses_workdir else None))
    if spec.kind in ("replay", "record"):
        cassette = config.resolve(spec.target) / f"{_safe(test_id)}.yaml"
        if spec.kind == "replay":
            return ctx.cassette(cassette, "replay")
        return ctx.cassette(cassette, "record", upstream=_live(spec, config.effective_api, config.rate_limits))
    return ctx.observe(_live(spec, config.effective_api, config.rate_limits))


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


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


# -- the judge's model ------------------------------------------------------------------------------------
def judge_setup(config: Config) -> tuple[ModelSpec | None, dict[str, FileScript] | None]:
    """The configured judge's model spec and, for a scripted judge, its scripts (None, None without a judge)."""
    judge_parsed = parse_model_spec(config.judge) if config.judge else None
    judge_scripts = load_script_file(config.resolve(judge_parsed.target)) if judge_parsed and judge_parsed.kind == "scripted" else None
    return judge_parsed, judge_scripts


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

