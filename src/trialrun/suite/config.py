"""trialrun.toml (or `[tool.trialrun]` in pyproject.toml): what runs a suite's prompts, and where results go.

Every key is optional. Paths are relative to the file that names them. Command-line flags override the file.

    suite = "state/eval/tests.json"          # the eval skill's default
    agent = "my_pkg.agent:run"               # (prompt, ctx) -> Run | output; default: trialrun's reference agent;
                                             # or a ready-made agent: "pi" | "codex" | "claude-code" | "opencode";
                                             # or a command: "command: my-agent --print {prompt}" (run in each
                                             # trial's workdir; files named next to this one made absolute)
    sandbox = "none"                         # none | bwrap | auto: what agents run, in a bubblewrap sandbox
    model = "scripted:model_v1.yaml"         # scripted:FILE | replay:DIR | record:DIR | openai:MODEL |
                                             # anthropic:MODEL | openai-compatible:URL#MODEL
    api = "openai-chat"                      # openai-chat | openai-responses | anthropic | gemini
    model_name = "gpt-4.1-mini"              # the name sent to the model (scripted/replay/record)
    system = "You are a careful shell pilot."
    tools = ["shell"]                        # "shell", one shell tool's name, or "module:attr" (a tool or a list)
    workspace = "workspace"                  # copied into each trial's workdir; shell tools are rooted there
    skills = ["eval"]                        # recorded as skills_loaded
    results_dir = "state/eval"               # default: the suite's folder; state/eval when the suite sits
                                             # beside this file (a project's root is no place for result files)
    pass_threshold = 0.7
    rubric = "balanced"                      # how the sub-scores make the total: "balanced" | "skill" (the literal
                                             # min(sum, 1.0)); recorded in config_snapshot.rubric
    executor = "ray"                         # where trials run: "local" (default) | "ray" | "ray://HOST:PORT"
    turn_limit = 25                          # the agent's hard stop (a test's max_turns is a budget it scores)
    judge = "openai:gpt-4.1-mini"            # output_quality by an LLM judge (a model spec); default: heuristic
    trials = 1                               # trials per test (a test's `trials` overrides it; --trials / -k)
    concurrency = 4                          # trials in flight at once (default: runner.DEFAULT_CONCURRENCY; -j)
    prices_source = "auto"                   # auto | builtin | genai-prices | litellm: who prices a run ("auto":
                                             # the first maintained map installed, else the built-in table);
                                             # recorded in config_snapshot.prices
    rate_limit = {requests_per_minute = 500, tokens_per_minute = 200000}  # a live model's provider limit,
                                             # shared by every trial (on Ray, by every worker); either key may be
                                             # left out; recorded in config_snapshot.rate_limit
    exchanges = true                         # keep each trial's raw HTTP exchanges, scrubbed, beside the result
                                             # file (results_<stamp>.exchanges.ndjson) for `trialrun view`;
                                             # false (or --no-exchanges; pytest --trialrun-save:
                                             # --trialrun-no-exchanges) keeps none
    exchanges_max_bytes = 4194304            # cap on one trial's kept bodies (bodies past it are cut, saying so)
    pass_env = ["GOPATH", "NODE_OPTIONS"]    # environment variables the reference agent's run_command keeps
                                             # besides its allow-list (PATH, HOME, LANG, ...), also in the sandbox
    [mcp_servers.notes]                      # an MCP server every trial gets (docs/mcp.md): script = FILE (a
    script = "notes_mcp.yaml"                # scripted server) | command = "..." | url = "..." (a real one,
    transport = "stdio"                      # recorded) | replay = DIR; transport = "stdio" | "http"
    [policy]                                 # a ToolPolicy
    deny_commands = ["rm -rf", "curl | sh"]
    [agent_options]                          # for a ready-made or command agent
    permission_mode = "acceptEdits"          # the agent's own vocabulary; also allow/deny rules, instructions
    args = ["--verbose"]                     # (a file), path (the program), env, timeout_s, output, max_body,
    side_requests = true                     # keep Claude Code's / opencode's title requests on (default off)
    [prices."my-model"]                      # extra prices, USD per million tokens (win over any source)
    input = 1.0
    output = 2.0
    [arms.v1]                                # A/B arms: `trialrun run` runs the tests under each (the first is
    agent_options = {instructions = "AGENTS.v1.md"}  # the baseline), each an overlay of what runs the agent
    [arms.v2]                                # (`_arms.ARM_KEYS`; docs/ab-arms.md)
    agent_options = {instructions = "AGENTS.v2.md"}
"""

from __future__ import annotations

import difflib
from collections.abc import Collection
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from .._contain.sandbox import SANDBOXES
from .._util.files import read_text
from .._util.toml_read import TomlError, loads as toml_loads
from ..agents._pins import PRESET_NAMES, preset_suggestion

__all__ = ["Config", "ConfigError", "load_config", "DEFAULT_SUITE", "CONFIG_FILE", "ModelSpec", "parse_model_spec",
           "PRESET_NAMES", "COMMAND_PREFIX", "COMMAND_OPTIONS", "PRESET_OPTIONS", "preset_suggestion"]

CONFIG_FILE = "trialrun.toml"
DEFAULT_SUITE = "state/eval/tests.json"
#: Where results go when the suite sits at the project's root (the default layout's results folder).
DEFAULT_RESULTS = "state/eval"
MODEL_KINDS = ("scripted", "replay", "record", "openai", "anthropic", "openai-compatible")
COMMAND_PREFIX = "command:"
#: The [agent_options] a command agent takes, and those every ready-made agent takes (each in its own vocabulary).
COMMAND_OPTIONS = ("env", "timeout_s", "output", "max_body")
PRESET_OPTIONS = (*COMMAND_OPTIONS, "path", "permission_mode", "allow", "deny", "args", "instructions", "side_requests")


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the file and the key."""


class ModelSpec(BaseModel):
    """A parsed model spec such as `scripted:model.yaml` or `openai-compatible:http://localhost:8000/v1#llama`."""

    kind: str
    target: str
    model_name: str | None = None

    @property
    def live(self) -> bool:
        return self.kind in ("openai", "anthropic", "openai-compatible", "record")

    def __str__(self) -> str:
        if self.kind == "openai-compatible":
            return f"{self.kind}:{self.target}#{self.model_name}"
        return f"{self.kind}:{self.target}"


def parse_model_spec(text: str) -> ModelSpec:
    """Parse a model spec; ConfigError says what the forms are."""
    kind, sep, rest = str(text).partition(":")
    if not sep or kind not in MODEL_KINDS or not rest:
        raise ConfigError(
            f"model {text!r} is not a model spec; expected one of scripted:FILE, replay:DIR, record:DIR, "
            "openai:MODEL, anthropic:MODEL, openai-compatible:URL#MODEL"
        )
    if kind == "openai-compatible":
        url, hash_, name = rest.rpartition("#")
        if not hash_ or not url or not name:
            raise ConfigError(f"model {text!r}: openai-compatible needs URL#MODEL, e.g. openai-compatible:http://localhost:8000/v1#llama-3")
        return ModelSpec(kind=kind, target=url, model_name=name)
    if kind in ("openai", "anthropic"):
        return ModelSpec(kind=kind, target=rest, model_name=rest)
    return ModelSpec(kind=kind, target=rest)


def _check_agent(value: str) -> str:
    """`agent`: a ready-made agent's name, `module:function` or `command: PROGRAM ARGS`; a name that is none of
    these (a typo of a ready-made agent's, most likely) says which one was meant."""
    if "\x00" in value:
        raise ValueError(f"{_shown(value)} holds a NUL character, which no program or module name can")
    if value in PRESET_NAMES or value.startswith(COMMAND_PREFIX) or ":" in value:
        if value.startswith(COMMAND_PREFIX) and not value[len(COMMAND_PREFIX):].strip():
            raise ValueError(f"{value!r} names no program; write the command after it, e.g. 'command: my-agent {{prompt}}'")
        return value
    suggestion = preset_suggestion(value)
    hint = (f"; did you mean {suggestion!r}?" if suggestion else
            f"; the ready-made agents are {', '.join(map(repr, PRESET_NAMES))}")
    raise ValueError(f"{_shown(value)} is not a ready-made agent, a 'module:attribute' (e.g. 'my_agent:run') or a "
                     f"'command: PROGRAM ARGS'{hint}")


def _shown(value: str, width: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= width else f"{text[:width]}... ({len(text) - width:,} more characters)"


def _env_name_problem(name: object) -> str | None:
    if not isinstance(name, str) or not name:
        return "an environment variable needs a name"
    if "=" in name or "\x00" in name:
        return f"the name {_shown(name)} holds {'=' if '=' in name else 'a NUL character'}, which no variable name can"
    return None


def _text_problem(value: object, what: str) -> str | None:
    if not isinstance(value, str):
        return f"{what} must be text (a quoted string), got {_toml_value(value)}"
    if "\x00" in value:
        return f"{what} holds a NUL character, which no program argument or variable can"
    return None


def _agent_option_problems(options: dict[str, Any]) -> list[str]:
    """Each [agent_options] value typed strictly, as the agent is started with it (a `timeout_s = true` would be a
    1 s limit, an `allow = "ls"` the rules "l" and "s"), so a mistake is named before anything runs."""
    problems: list[str] = []
    for key, value in options.items():
        if key == "env":
            if not isinstance(value, dict):
                problems.append(f"env must be a table of text values, e.g. env = {{NAME = \"value\"}}, got "
                                f"{_toml_value(value)}")
                continue
            for name, item in value.items():
                problem = _env_name_problem(name) or _text_problem(item, f"env.{name}")
                if problem:
                    problems.append(problem if problem.startswith("env.") else f"env: {problem}")
        elif key == "timeout_s":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
                problems.append(f"timeout_s must be a positive number of seconds, got {_toml_value(value)}")
        elif key == "max_body":
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                problems.append(f"max_body must be a positive number of bytes, got {_toml_value(value)}")
        elif key in ("allow", "deny", "args"):
            if not isinstance(value, list):
                problems.append(f"{key} must be a list of text, e.g. {key} = [\"...\"], got {_toml_value(value)}")
            else:
                problems.extend(p for n, item in enumerate(value, 1) if (p := _text_problem(item, f"{key}[{n}]")))
        elif key == "side_requests":
            if not isinstance(value, bool):
                problems.append(f"side_requests must be true or false, got {_toml_value(value)}")
        elif key in ("output", "path", "instructions", "permission_mode"):  # their values: the agent checks them
            if problem := _text_problem(value, key):
                problems.append(problem)
    return problems


def _one_of(value: str, choices: Collection[str], quoted: bool = False) -> str:
    """`value` when it is one of `choices`; else the ValueError pydantic turns into "KEY: must be one of ..."."""
    if value not in choices:
        shown = ", ".join(map(repr, choices)) if quoted else ", ".join(choices)
        raise ValueError(f"must be one of {shown}" + (f" (got {value!r})" if quoted else ""))
    return value


class Config(BaseModel):
    """The parsed configuration (paths already resolved against the file's folder)."""

    model_config = ConfigDict(extra="forbid")

    # Strict types: TOML has integers, floats, booleans and strings, and `trials = "2"` or `trials = true` is a
    # mistake to name, not a value to coerce.
    suite: Path = Path(DEFAULT_SUITE)
    agent: StrictStr | None = None
    model: StrictStr = "scripted:model.yaml"
    api: StrictStr | None = None
    model_name: StrictStr | None = None
    system: StrictStr | None = None
    tools: list[StrictStr] = Field(default_factory=lambda: ["shell"])
    workspace: Path | None = None
    skills: list[StrictStr] = Field(default_factory=list)
    sandbox: StrictStr = "none"
    agent_options: dict[str, Any] = Field(default_factory=dict)
    results_dir: Path | None = None
    pass_threshold: StrictFloat = 0.7
    rubric: StrictStr = "balanced"
    turn_limit: StrictInt = 25
    judge: StrictStr | None = None
    policy: dict[str, Any] = Field(default_factory=dict)
    prices: dict[str, dict[str, StrictFloat]] = Field(default_factory=dict)
    prices_source: StrictStr = "auto"
    trials: StrictInt = 1
    concurrency: StrictInt | None = None
    executor: StrictStr | None = None
    rate_limit: dict[str, Any] | None = None
    exchanges: StrictBool = True
    exchanges_max_bytes: StrictInt = 4 * 2**20
    pass_env: list[StrictStr] = Field(default_factory=list)
    arms: dict[str, Any] = Field(default_factory=dict, description="the A/B arms: name -> overlay (checked by _arms)")
    mcp_servers: dict[str, Any] = Field(default_factory=dict)
    source: Path | None = Field(default=None, exclude=True, description="the file this came from")
    base_dir: Path = Field(default_factory=Path.cwd, exclude=True)

    @field_validator("agent")
    @classmethod
    def _agent(cls, value: str | None) -> str | None:
        return None if value is None else _check_agent(value)

    @field_validator("agent_options")
    @classmethod
    def _agent_options(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        """A process agent's options: every key known to that kind of agent, every value of the type it takes."""
        agent = info.data.get("agent") or ""
        if not value or not (agent in PRESET_NAMES or agent.startswith(COMMAND_PREFIX)):
            return value  # the reference or a custom agent receives none of them (a warning says so)
        allowed = COMMAND_OPTIONS if agent.startswith(COMMAND_PREFIX) else PRESET_OPTIONS
        unknown = sorted(map(str, set(value) - set(allowed)))
        problems = []
        if unknown:
            close = [f"{match[0]!r} for {key!r}" for key in unknown
                     if (match := difflib.get_close_matches(key, allowed, n=1))]
            problems.append(f"unknown key(s) {', '.join(unknown)} for agent {agent!r} (known: {', '.join(allowed)})"
                            + (f"; did you mean {', '.join(close)}?" if close else ""))
        problems += _agent_option_problems({key: item for key, item in value.items() if key in allowed})
        if problems:
            raise ValueError("; ".join(problems))
        return value

    @field_validator("mcp_servers")
    @classmethod
    def _mcp_servers(cls, value: dict[str, Any]) -> dict[str, Any]:
        from ._mcp_config import check_mcp_servers

        return check_mcp_servers(value)

    @field_validator("pass_env")
    @classmethod
    def _pass_env(cls, value: list[str]) -> list[str]:
        for name in value:
            if problem := _env_name_problem(name):
                raise ValueError(problem)
        return value

    @field_validator("executor")
    @classmethod
    def _executor(cls, value: str | None) -> str | None:
        from ..run.executor import resolve_executor

        resolve_executor(value)  # an unknown spelling is an error naming the key (Ray itself is needed only to run)
        return value

    @field_validator("rate_limit")
    @classmethod
    def _rate_limit(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            from ..models.ratelimit import RateLimit

            RateLimit.from_mapping(value)  # its ValueError names the key inside the table
        return value

    @field_validator("api")
    @classmethod
    def _api(cls, value: str | None) -> str | None:
        from ..wire import CODECS  # the wire APIs are the codecs trialrun has: one list, the registry's

        return None if value is None else _one_of(value, CODECS)

    @field_validator("rubric")
    @classmethod
    def _rubric(cls, value: str) -> str:
        from ..expect.rubric import RUBRICS  # the one list of rubrics

        return _one_of(value, RUBRICS, quoted=True)

    @field_validator("model", "judge")
    @classmethod
    def _spec(cls, value: str | None) -> str | None:
        if value is not None:
            parse_model_spec(value)  # its ConfigError says what the forms are
        return value

    @field_validator("sandbox")
    @classmethod
    def _sandbox(cls, value: str) -> str:
        return _one_of(value, SANDBOXES)

    @field_validator("prices_source")
    @classmethod
    def _prices_source(cls, value: str) -> str:
        from ..agent._price_sources import PRICE_SOURCES  # the one list of sources

        return _one_of(value, PRICE_SOURCES)

    @field_validator("pass_threshold")
    @classmethod
    def _threshold(cls, value: float) -> float:
        if not 0 <= value <= 1:
            raise ValueError("must be between 0 and 1")
        if value == 0:
            raise ValueError("must be above 0 (a pass mark of 0 passes every test, whatever the agent does)")
        return value

    @field_validator("exchanges_max_bytes")
    @classmethod
    def _exchanges_cap(cls, value: int) -> int:
        from ..report.exchanges import BODY_MIN_BYTES

        if value < BODY_MIN_BYTES:
            raise ValueError(f"must be at least {BODY_MIN_BYTES} (to keep none, set exchanges = false)")
        return value

    @field_validator("turn_limit", "trials", "concurrency")
    @classmethod
    def _positive(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError("must be at least 1")
        return value

    def resolve(self, path: Path | str) -> Path:
        path = Path(path)
        return path if path.is_absolute() else (self.base_dir / path)

    @property
    def rate_limits(self) -> Any:
        """The `RateLimit` of `rate_limit`, or None."""
        from ..models.ratelimit import RateLimit

        return None if self.rate_limit is None else RateLimit.from_mapping(self.rate_limit)

    @property
    def model_spec(self) -> ModelSpec:
        return parse_model_spec(self.model)

    @property
    def effective_api(self) -> str:
        if self.api:
            return self.api
        return "anthropic" if self.model_spec.kind == "anthropic" else "openai-chat"

    @property
    def effective_model_name(self) -> str:
        return self.model_name or self.model_spec.model_name or "gpt-4.1-mini"

    def suite_path(self) -> Path:
        return self.resolve(self.suite)

    def results_path(self) -> Path:
        """`results_dir`, else the suite's folder, except the project's root folder (the suite beside trialrun.toml,
        or in the current folder without one): there results go to state/eval/, as in the default layout."""
        if self.results_dir:
            return self.resolve(self.results_dir)
        folder = self.suite_path().parent
        return self.base_dir / DEFAULT_RESULTS if folder.resolve() == self.base_dir.resolve() else folder

    def with_overrides(self, **overrides: Any) -> Config:
        """A copy with command-line values applied (None means "not given")."""
        data = {key: value for key, value in overrides.items() if value is not None}
        if not data:
            return self
        merged = self.model_copy(update=data)
        try:
            return Config.model_validate({**merged.model_dump(), "source": self.source, "base_dir": self.base_dir})
        except ValidationError as exc:
            raise ConfigError(_describe(exc, "command line")) from None


#: What each kind of wrong value should have been, in TOML's words.
_EXPECTED = {"string_type": "text (a quoted string)", "int_type": "a whole number", "float_type": "a number",
             "list_type": "a list, e.g. [\"a\", \"b\"]", "dict_type": "a table", "path_type": "a path (text)",
             "bool_type": "true or false"}


def _describe(exc: ValidationError, where: str) -> str:
    known = list(Config.model_fields)
    lines = []
    for error in exc.errors():
        key = ".".join(str(p) for p in error["loc"])
        if error["type"] == "extra_forbidden":
            close = difflib.get_close_matches(str(error["loc"][0]), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            lines.append(f"{where}: unknown key {key!r}{hint}")
            continue
        value = error.get("input")
        expected = _EXPECTED.get(error["type"])
        message = f"expected {expected}" if expected else error["msg"].removeprefix("Value error, ")
        got = "" if isinstance(value, (dict, list)) or repr(value) in message else f", got {_toml_value(value)}"
        lines.append(f"{where}: {key}: {message}{got}")
    return "\n".join(lines)


def _toml_value(value: Any) -> str:
    """A value as TOML writes it (true, not True), with its kind when that is the point."""
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, str):
        return f"{value!r} (text)"
    return repr(value)


def _read(path: Path) -> dict[str, Any]:
    text = read_text(path, "configuration file", ConfigError, missing="no such configuration file")
    try:
        return toml_loads(text.removeprefix("\ufeff"))  # a BOM some editors write
    except TomlError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _tool_table(raw: dict[str, Any], path: Path) -> dict[str, Any]:
    """pyproject.toml's [tool] table, checked (a stray `tool = 1` is a mistake to name, not a crash)."""
    tool = raw.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: tool must be a table ([tool.trialrun]), got {type(tool).__name__}")
    return tool


def find_config(start: Path | str | None = None) -> tuple[Path, dict[str, Any]] | None:
    """The configuration in force for a directory, as pytest and ruff find theirs: walking up from `start` to the
    first folder with a trialrun.toml or a pyproject.toml with a [tool.trialrun] section (its file and table), or
    None when there is none up to the root."""
    base = Path(start or Path.cwd()).resolve()
    for folder in (base, *base.parents):
        if (folder / CONFIG_FILE).exists():  # a FIFO or folder in its place is refused by _read, never skipped
            return folder / CONFIG_FILE, _read(folder / CONFIG_FILE)
        pyproject = folder / "pyproject.toml"
        if pyproject.exists():
            tool = _tool_table(_read(pyproject), pyproject)
            if "trialrun" in tool:
                return pyproject, tool["trialrun"]
    return None


def load_config(start: Path | str | None = None, *, path: Path | str | None = None) -> Config:
    """The configuration for a directory: the first trialrun.toml or [tool.trialrun] from it upwards (paths in it
    are relative to its folder), else defaults relative to the directory. `config.source` says which was used."""
    base = Path(start or Path.cwd()).resolve()
    data: dict[str, Any] = {}
    source: Path | None = None
    if path is not None:
        source = Path(path).resolve()
        raw = _read(source)
        data = _tool_table(raw, source).get("trialrun", {}) if source.name == "pyproject.toml" else raw
    else:
        found = find_config(base)
        if found is not None:
            source, data = found
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the trialrun configuration must be a table")
    folder = source.parent if source else base
    try:
        config = Config.model_validate({**data, "source": source, "base_dir": folder})
    except ValidationError as exc:
        raise ConfigError(_describe(exc, str(source or "configuration"))) from None
    try:
        config.model_spec  # noqa: B018 - validate the spec now, not mid-run
    except ConfigError as exc:
        raise ConfigError(f"{source or 'configuration'}: {exc}") from None
    return config
