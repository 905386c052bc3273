"""Suite files: the eval skill's tests.json (and tests.yaml), validated, with every problem listed at once.

A suite is a JSON (or YAML) array of tests, exactly as the skill defines them::

    {"id": "read-file", "name": "Read a file", "prompt": "What do my notes say?",
     "expected_tools": ["read_file"], "max_turns": 3, "success_criteria": "Says what notes.txt contains"}

`prompt`, `expected_tools`, `max_turns` and `success_criteria` are required, as the skill gives every test them;
`name` defaults to the id. `expected_tools` may be empty (the skill's "say hello"): tool accuracy is then 1.0,
and the test is graded on its output quality and turns (under the "skill" rubric it cannot fail without `expect`
graders, which `_build.suite_warnings` says).

Optional per test: `tags` (`safety` makes the whole test a safety claim for `trialrun compare`), `mode`
("deterministic" | "live_canary"), `trials`, `expect` (graders in data
form: `{"not_called": "run_command"}`, `{"called": {"tool": "read_file", "args": {"path": "a.txt"}}}`,
`{"never_ran": "rm -rf"}`, `{"contains": "Paris"}`, ...), `max_cost_usd`. `expect` is a list of such one-grader
mappings, or one mapping holding several graders (one per key, in order), as the issue writes it:
`"expect": {"not_called": "run_command", "contains": "Paris"}`. `trialrun schema` prints the JSON Schema.

A coding task names its own folder: `"workspace": "tasks/fix-add"` (relative to the suite file's folder; instead of
the configuration's suite-wide `workspace` for this test), copied afresh into each trial's workdir (the folder itself
is never changed), and `"setup"` commands (one, or a list) run in the copy before the agent starts. Its graders
judge the files the agent left: `{"verify": "python3 test_app.py"}` (the task's own test, run in the workdir after
the agent ends), `file_exists`, `file_contains`, `file_matches`, `file_unchanged` and `changed_only`.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError, field_validator

from .. import expect
from .._util.display import listing, shorten
from .._util.files import TOO_DEEP, gc_paused, read_text as _read_text, unencodable_text
from .._util.yaml_read import YamlError, load_yaml
from ..expect._base import Grader

if TYPE_CHECKING:
    import yaml

__all__ = ["SuiteTest", "SuiteError", "SuiteFile", "read_suite", "suite_json_schema", "EXPECT_FORMS",
           "build_expectations", "expect_items"]

#: How `expect` is written, shown whenever it is written some other way.
EXPECT_EXAMPLE = (
    'a list of {grader: value} pairs, e.g. [{"never_ran": "rm -rf"}, {"called": "read_file"}], '
    'or one mapping of graders, e.g. {"not_called": "run_command", "contains": "Paris"}'
)


def expect_items(value: Any) -> list[dict[str, Any]]:
    """A test's `expect` as a list of one-grader mappings: a list as written, or a mapping split into one grader
    per key, in order. ValueError, showing the accepted forms, for anything else."""
    if value is None:
        return []
    if isinstance(value, dict):
        return [{key: item} for key, item in value.items()]
    if not isinstance(value, list):
        raise ValueError(f"should be {EXPECT_EXAMPLE}")
    for number, entry in enumerate(value, start=1):
        if not isinstance(entry, dict) or len(entry) != 1:
            raise ValueError(f"entry {number} ({json.dumps(entry, default=str)}) is not one {{grader: value}} pair; "
                             f"expect should be {EXPECT_EXAMPLE}")
    return list(value)


class SuiteError(ValueError):
    """A suite that cannot run; `problems` lists every one (file, line, test and field), nothing ran."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        count = len(problems)
        head = problems[0] if count == 1 else f"{count:,} problems in the suite; nothing was run:"
        super().__init__(head if count == 1 else listing(head, problems))


class SuiteTest(BaseModel):
    """One test of a suite file."""

    model_config = ConfigDict(extra="forbid", title="trialrun suite test")

    id: StrictStr = Field(description="Unique identifier (the case's name)", min_length=1)
    name: StrictStr | None = Field(default=None, description="Human-readable label (default: the id)")
    prompt: StrictStr = Field(description="The message sent to the agent", min_length=1)
    expected_tools: list[StrictStr] = Field(
        description="Tool names the agent should use (may be empty: tool accuracy is then 1.0)")
    max_turns: StrictInt = Field(ge=1, description="Turn budget (scored by turn_efficiency; not a hard stop)")
    success_criteria: StrictStr = Field(min_length=1, description="What good output looks like (judged by output_quality)")
    tags: list[StrictStr] = Field(default_factory=list)
    mode: Literal["deterministic", "live_canary"] = "deterministic"
    trials: StrictInt | None = Field(default=None, ge=1, description="Trials for this test (overrides --trials)")
    expect: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Extra graders in data form, all of which must pass: a list of {grader: value} pairs, or one "
                    "mapping of graders (one per key)",
    )
    max_cost_usd: float | None = Field(default=None, ge=0)
    workspace: StrictStr | None = Field(
        default=None, min_length=1,
        description="This test's task folder (relative to the suite file's folder), copied afresh into each trial's "
                    "workdir instead of the configuration's workspace; the folder itself is never changed")
    setup: StrictStr | list[StrictStr] | None = Field(
        default=None,
        description="Shell command(s) run in the trial's copy of the workspace before the agent starts (e.g. "
                    "\"git init -q && git add -A && git commit -qm base\"); one that fails is the trial's setup error")

    @field_validator("setup")
    @classmethod
    def _setup_commands(cls, value: str | list[str] | None) -> str | list[str] | None:
        commands = [value] if isinstance(value, str) else value or []
        if any(not command.strip() for command in commands):
            raise ValueError("a setup command is empty")
        return value

    @property
    def setup_commands(self) -> list[str]:
        """The setup commands, in order (none, one, or the list as written)."""
        return [self.setup] if isinstance(self.setup, str) else list(self.setup or [])

    @field_validator("expect", mode="before")
    @classmethod
    def _expect_forms(cls, value: Any) -> list[dict[str, Any]]:
        return expect_items(value)


#: The data forms of graders a suite's `expect` may use: name -> how its value is given.
EXPECT_FORMS: dict[str, str] = {
    "contains": "text",
    "not_contains": "text",
    "equals": "value",
    "matches": "regex",
    "ended": "status or list of statuses",
    "called": "tool name, or {tool, args, times, at_least, at_most, exact_args, include_refused}",
    "not_called": "tool name, or {tool, include_refused}",
    "called_in_order": "list of tool names (or [name, args] pairs), or {steps, exact, include_refused}",
    "max_turns": "integer",
    "max_tool_calls": "integer",
    "no_tool_errors": "true",
    "no_denials": "true",
    "never_ran": "command pattern, or {command, include_refused (older name: include_denied), own_scripts, "
                 "command_tools}",
    "max_cost_usd": "number",
    "safety": 'one {grader: value} pair, marked as a safety claim, e.g. {"not_contains": "password"}',
    "verify": "command, or {command, timeout_s, sandbox}",
    "file_exists": "path",
    "file_contains": "{path, text}",
    "file_matches": "{path, regex}",
    "file_unchanged": "path or glob",
    "changed_only": "glob, or list of globs",
    "mcp_called": "{server, tool, args, times, at_least, at_most, exact_args}",
    "mcp_not_called": "{server, tool, args, reached}, or a server name (no tool of it called)",
    "mcp_as_asked": "true, or {server, tool}",
    "mcp_only_declared": "true",
}


def build_expectations(items: list[dict[str, Any]]) -> tuple[list[Grader], list[str]]:
    """Graders from data-form expectations, and a problem message for each one that is wrong."""
    graders: list[Grader] = []
    problems: list[str] = []
    for number, item in enumerate(items, start=1):
        where = f"expect[{number}]"
        if not isinstance(item, dict) or len(item) != 1:
            problems.append(f"{where}: each entry is one {{grader: value}} pair, e.g. {{\"contains\": \"Paris\"}}")
            continue
        [(name, value)] = item.items()
        if name not in EXPECT_FORMS:
            close = difflib.get_close_matches(name, list(EXPECT_FORMS), n=1)
            problems.append(f"{where}: unknown grader {name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                            + f"; known: {', '.join(EXPECT_FORMS)}")
            continue
        try:
            graders.append(_grader(name, value))
        except (TypeError, ValueError) as exc:
            problems.append(f"{where}: {name}: {exc} (expected {EXPECT_FORMS[name]})")
    return graders, problems


def _need(value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    if isinstance(value, bool) and kind is not bool and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise TypeError(f"got {value!r}, expected {what}")
    if not isinstance(value, kind):
        raise TypeError(f"got {type(value).__name__} {value!r}, expected {what}")
    return value


def _spec(value: Any, keys: set[str], required: str, what: str = "a mapping") -> dict[str, Any]:
    """A grader's mapping form: only its known keys, and the one it cannot do without."""
    spec = dict(_need(value, dict, what))
    unknown = sorted(set(spec) - keys)
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(map(repr, unknown))}")
    if required not in spec:
        raise ValueError(f"{required!r} is required")
    return spec


def _grader(name: str, value: Any) -> Grader:
    if name in ("contains", "not_contains", "matches"):
        with_text: Callable[[str], Grader] = getattr(expect, name)
        return with_text(_need(value, str, "a string"))
    if name == "equals":
        return expect.equals(value)
    if name == "ended":
        statuses = [value] if isinstance(value, str) else value
        if not isinstance(statuses, list) or not all(isinstance(s, str) for s in statuses):
            raise TypeError(f"got {value!r}")
        return expect.ended(*statuses)
    if name == "not_called":
        if isinstance(value, str):
            return expect.not_called(value)
        spec = _spec(value, {"tool", "include_refused"}, "tool", "a tool name, or a mapping")
        return expect.not_called(_need(spec.pop("tool"), str, "a tool name"), **spec)
    if name == "called":
        if isinstance(value, str):
            return expect.called(value)
        spec = _spec(value, {"tool", "args", "times", "at_least", "at_most", "exact_args", "include_refused"}, "tool")
        tool = _need(spec.pop("tool"), str, "a tool name")
        return expect.called(tool, spec.pop("args", None), **spec)
    if name == "called_in_order":
        if isinstance(value, dict):
            spec = _spec(value, {"steps", "exact", "include_refused"}, "steps")
            steps = _need(spec.pop("steps"), list, "a list")
        else:
            spec, steps = {}, _need(value, list, "a list, or a mapping")
        return expect.called_in_order([tuple(s) if isinstance(s, list) else s for s in steps], **spec)
    if name in ("max_turns", "max_tool_calls"):
        with_limit: Callable[[int], Grader] = getattr(expect, name)
        return with_limit(_need(value, int, "an integer"))
    if name in ("no_tool_errors", "no_denials"):
        if value is not True:
            raise ValueError(f"got {value!r}, write {{\"{name}\": true}}")
        plain: Callable[[], Grader] = getattr(expect, name)
        return plain()
    if name == "never_ran":
        if isinstance(value, dict):
            spec = _spec(value, {"command", "include_refused", "include_denied", "own_scripts", "command_tools"},
                         "command")
            command = _need(spec.pop("command"), str, "a command pattern")
            return expect.never_ran(command, **spec)
        return expect.never_ran(_need(value, str, "a command pattern"))
    if name == "max_cost_usd":
        return expect.max_cost_usd(float(_need(value, (int, float), "a number")))
    if name == "safety":  # a safety claim: compare fails it on one failing trial, whatever the counts
        inner = _need(value, dict, 'one {grader: value} pair, e.g. {"not_contains": "password"}')
        if len(inner) != 1 or next(iter(inner)) not in EXPECT_FORMS or next(iter(inner)) == "safety":
            raise ValueError(f"got {json.dumps(inner, default=str)}; write one grader, e.g. {{\"not_contains\": "
                             f"\"password\"}}; known: {', '.join(n for n in EXPECT_FORMS if n != 'safety')}")
        [(inner_name, inner_value)] = inner.items()
        return expect.safety(_grader(inner_name, inner_value))
    if name.startswith("mcp_"):
        return _mcp_grader(name, value)
    return _workspace_grader(name, value)


def _workspace_grader(name: str, value: Any) -> Grader:
    """The graders of the files an agent left (`expect.workspace`), in data form."""
    if name == "verify":
        if isinstance(value, str):
            return expect.verify(value)
        spec = _spec(value, {"command", "timeout_s", "sandbox"}, "command", "a command, or a mapping")
        command = _need(spec.pop("command"), str, "a command")
        if "timeout_s" in spec:
            _need(spec["timeout_s"], (int, float), "a number of seconds")
        if "sandbox" in spec:
            _need(spec["sandbox"], str, "none, bwrap or auto")
        return expect.verify(command, **spec)
    if name in ("file_exists", "file_unchanged"):
        one: Callable[[str], Grader] = getattr(expect, name)
        return one(_need(value, str, "a path" if name == "file_exists" else "a path or glob"))
    if name in ("file_contains", "file_matches"):
        key = "text" if name == "file_contains" else "regex"
        spec = _spec(value, {"path", key}, "path", f"a mapping {{path, {key}}}")
        if key not in spec:
            raise ValueError(f"{key!r} is required")
        two: Callable[[str, str], Grader] = getattr(expect, name)
        return two(_need(spec["path"], str, "a path"), _need(spec[key], str, "a string"))
    if name == "changed_only":
        globs = [value] if isinstance(value, str) else _need(value, list, "a glob, or a list of globs")
        return expect.changed_only([_need(g, str, "a glob") for g in globs])
    raise ValueError(f"unknown grader {name!r}")  # pragma: no cover - EXPECT_FORMS guards


def _mcp_grader(name: str, value: Any) -> Grader:
    """The MCP graders' data forms (`{"mcp_called": {"server": "notes", "tool": "search_notes", "args": {...}}}`)."""
    if name == "mcp_only_declared":
        if value is not True:
            raise ValueError(f"got {value!r}, write {{\"{name}\": true}}")
        return expect.mcp_only_declared()
    if name == "mcp_as_asked":
        if value is True:
            return expect.mcp_as_asked()
        spec = dict(_need(value, dict, "true, or {server, tool}"))
        unknown = sorted(set(spec) - {"server", "tool"})
        if unknown:
            raise ValueError(f"unknown key(s) {', '.join(map(repr, unknown))}")
        return expect.mcp_as_asked(**spec)
    if name == "mcp_not_called" and isinstance(value, str):
        return expect.mcp_not_called(value)
    keys = ({"server", "tool", "args", "times", "at_least", "at_most", "exact_args"} if name == "mcp_called"
            else {"server", "tool", "args", "reached"})
    spec = _spec(value, keys, "server")
    if name == "mcp_called":
        if "tool" not in spec:
            raise ValueError("'tool' is required")
        return expect.mcp_called(_need(spec.pop("server"), str, "a server name"), _need(spec.pop("tool"), str, "a tool"),
                                 spec.pop("args", None), **spec)
    return expect.mcp_not_called(_need(spec.pop("server"), str, "a server name"), spec.pop("tool", None),
                                 spec.pop("args", None), **spec)


@dataclass(slots=True)
class SuiteFile:
    """A parsed, validated suite file."""

    path: Path
    tests: list[SuiteTest]
    lines: dict[str, int]
    graders: dict[str, list[Grader]]


_BETWEEN = re.compile(r"[ \t\r\n,]*")
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


class _Duplicated(dict[str, Any]):
    """A JSON object that spelled a key twice (json keeps the last silently): `twice` says which."""

    twice: list[str]


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)
    if len(data) == len(pairs):
        return data
    seen: set[str] = set()
    marked = _Duplicated(data)
    marked.twice = []
    for key, _ in pairs:
        if key in seen:
            marked.twice.append(key)
        seen.add(key)
    return marked


def _duplicated_keys(value: Any) -> list[str]:
    """Every key spelled twice in an object anywhere in `value`, as a dotted path (`expect.0.called.tool`)."""
    found: list[str] = []
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, _Duplicated):
            found.extend(f"{where}.{key}" if where else key for key in item.twice)
        if isinstance(item, dict):
            stack.extend((f"{where}.{key}" if where else str(key), child) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend((f"{where}.{index}" if where else str(index), child) for index, child in enumerate(item))
    return sorted(found)


#: For a test's index and value, every key spelled twice in it (a dotted path each): JSON and YAML keep the last.
Twice = Callable[[int, Any], list[str]]


def _json_items(text: str, path: Path) -> tuple[Any, list[int], Twice]:
    """Parse JSON; for a top-level array also return the line where each element starts (counted in one pass,
    so 100,000 tests take as long to place as to parse), and whether any object spelled a key twice."""
    duplicated = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal duplicated
        data = _pairs(items)
        duplicated = duplicated or isinstance(data, _Duplicated)
        return data

    try:
        data = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise SuiteError([f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}"]) from None
    except RecursionError:
        raise SuiteError([f"{path}: {TOO_DEEP}"]) from None
    # Only a \\uD800-\\uDFFF escape makes such text (the file was decoded strictly): look only then.
    if _SURROGATE.search(text) and (where := unencodable_text(data)) is not None:
        raise SuiteError([f"{path}: {where}: text that is not valid Unicode (a lone surrogate escape such as \\ud800)"])
    lines: list[int] = []
    if isinstance(data, list):
        decoder = json.JSONDecoder()
        index = text.index("[") + 1
        line, counted = 1, 0
        for _ in data:
            index = _BETWEEN.match(text, index).end()  # type: ignore[union-attr]
            line += text.count("\n", counted, index)
            counted = index
            lines.append(line)
            _, index = decoder.raw_decode(text, index)
    return data, lines, lambda index, item: _duplicated_keys(item) if duplicated else []


def _yaml_items(text: str, path: Path) -> tuple[Any, list[int], Twice]:
    import yaml  # here: a JSON suite needs no YAML (see _yaml._loader)

    try:
        data, node = load_yaml(text, with_node=True)
    except YamlError as exc:
        raise SuiteError([f"{path}{exc.where}: {exc}"]) from None
    lines = [item.start_mark.line + 1 for item in node.value] if isinstance(node, yaml.SequenceNode) else []
    if isinstance(node, yaml.MappingNode):  # {tests: [...]}
        node = next((value for key, value in node.value if getattr(key, "value", None) == "tests"), None)
    items = node.value if isinstance(node, yaml.SequenceNode) else []
    return data, lines, lambda index, item: _yaml_twice(items[index]) if index < len(items) else []


def _yaml_twice(root: yaml.Node) -> list[str]:
    """Every key spelled twice in a mapping anywhere under `root`, as a dotted path (merge keys `<<` aside)."""
    import yaml

    found: list[str] = []
    stack: list[tuple[str, yaml.Node]] = [("", root)]
    done: set[int] = set()
    while stack:
        where, node = stack.pop()
        if id(node) in done:  # an alias: its value was looked at where it was written
            continue
        done.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key, value in node.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else None
                if name is not None and name != "<<":
                    if name in seen:
                        found.append(f"{where}.{name}" if where else name)
                    seen.add(name)
                stack.append((f"{where}.{name}" if where else str(name), value))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((f"{where}.{index}" if where else str(index), child) for index, child in enumerate(node.value))
    return sorted(found)


def _shown(path: Path) -> Path:
    """A path as the user would write it: relative to the current folder when inside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except (ValueError, OSError):
        return path


def read_suite(path: str | Path) -> SuiteFile:
    """Read and validate a suite file; SuiteError lists every problem (file, line, test, field)."""
    with gc_paused():  # 100,000 tests: a third of the time without the collector walking them again and again
        return _read_suite(path)


def _read_suite(path: str | Path) -> SuiteFile:
    path = _shown(Path(path))
    try:
        text = _read_text(path, "suite file", ValueError, missing="suite file not found (create it, or pass --suite PATH)")
    except ValueError as exc:
        raise SuiteError([str(exc)]) from None
    is_yaml = path.suffix in (".yaml", ".yml")
    form = "a YAML list of tests (each starting '- id: ...')" if is_yaml else "a JSON array of tests"
    if not text.strip():
        raise SuiteError([f"{path}: the suite is empty; it should be {form}"])
    data, lines, twice = (_yaml_items if is_yaml else _json_items)(text, path)
    if isinstance(data, dict) and isinstance(data.get("tests"), list):
        data = data["tests"]  # also accept {"tests": [...]}
    if data is None and is_yaml:  # only comments
        raise SuiteError([f"{path}: the suite is empty; it should be {form}"])
    if not isinstance(data, list):
        raise SuiteError([f"{path}: a suite is {form}, got {_kind(data, is_yaml)}"])
    if not data:
        raise SuiteError([f"{path}: the suite has no tests"])
    problems: list[str] = []
    tests: list[SuiteTest] = []
    where: dict[str, int] = {}
    graders: dict[str, list[Grader]] = {}
    for index, item in enumerate(data):
        line = lines[index] if index < len(lines) else None
        ident = item.get("id") if isinstance(item, dict) else None
        label = f"test {shorten(repr(ident))}" if isinstance(ident, str) and ident else f"test #{index + 1}"
        prefix = f"{path}:{line}: {label}" if line else f"{path}: {label}"
        if not isinstance(item, dict):
            problems.append(f"{prefix}: a test is an object, got {type(item).__name__}")
            continue
        for key in twice(index, item):
            problems.append(f"{prefix}: key {key!r} is given twice (only the last would count; remove one)")
        if isinstance(ident, str) and ident:
            if ident in where:
                problems.append(f"{prefix}: duplicate id {ident!r} (first at line {where[ident]})")
            else:
                where[ident] = line or 0
        try:
            items = expect_items(item.get("expect"))
        except ValueError:
            items = []  # SuiteTest's validation reports the shape, with the accepted forms
        built, grader_problems = build_expectations(items)
        problems.extend(f"{prefix}, field 'expect': {p}" for p in grader_problems)
        try:
            test = SuiteTest.model_validate(item)
        except ValidationError as exc:
            problems.extend(f"{prefix}, {_field_problem(error)}" for error in exc.errors())
            continue
        graders[test.id] = built
        tests.append(test)
    if problems:
        raise SuiteError(problems)
    return SuiteFile(path=path, tests=tests, lines=where, graders=graders)


def _kind(value: Any, is_yaml: bool) -> str:
    """What a value is, in the words of the format it was written in."""
    if isinstance(value, dict):
        return "a mapping" if is_yaml else "an object"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__


def _field_problem(error: Any) -> str:
    loc = [str(p) for p in error["loc"]]
    field = loc[0] if loc else "?"
    field += "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in loc[1:])
    if error["type"] == "extra_forbidden":
        close = difflib.get_close_matches(field, list(SuiteTest.model_fields), n=1)
        return f"field {field!r}: unknown field" + (f" (did you mean {close[0]!r}?)" if close else "")
    if error["type"] == "missing":
        return f"field {field!r}: required"
    value = error.get("input")
    shown = f" (got {value!r})" if not isinstance(value, (dict, list)) else ""
    message = error["msg"].removeprefix("Value error, ")
    return f"field {field!r}: {message[:1].lower()}{message[1:]}{shown}"


def suite_json_schema() -> dict[str, Any]:
    """JSON Schema of a suite file, for editors (`trialrun schema`)."""
    item = SuiteTest.model_json_schema()
    defs = item.pop("$defs", {})
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "trialrun suite (tests.json)",
        "type": "array",
        "minItems": 1,
        "items": item,
    }
    if defs:
        schema["$defs"] = defs
    names = {"enum": list(EXPECT_FORMS)}
    field = item["properties"]["expect"]
    field.pop("type", None)
    field.pop("items", None)
    values = {**_value_schemas(), **_mcp_schemas()}  # each grader's value, checked by editors too
    field["anyOf"] = [
        {"type": "array", "items": {"type": "object", "minProperties": 1, "maxProperties": 1, "propertyNames": names,
                                    "properties": values}},
        {"type": "object", "propertyNames": names, "properties": values},
    ]
    return schema


def _value_schemas() -> dict[str, Any]:
    """What the value of each grader of the files left may be, for an editor to check as it is typed."""
    text = {"type": "string", "minLength": 1}
    globs = {"anyOf": [text, {"type": "array", "items": text, "minItems": 1}]}

    def mapping(required: list[str], **keys: Any) -> dict[str, Any]:
        return {"type": "object", "required": required, "additionalProperties": False, "properties": keys}

    return {
        "verify": {"anyOf": [text, mapping(["command"], command=text,
                                           timeout_s={"type": "number", "exclusiveMinimum": 0},
                                           sandbox={"enum": ["none", "bwrap", "auto"]})]},
        "file_exists": text,
        "file_contains": mapping(["path", "text"], path=text, text=text),
        "file_matches": mapping(["path", "regex"], path=text, regex=text),
        "file_unchanged": text,
        "changed_only": globs,
    }
def _mcp_schemas() -> dict[str, Any]:
    text, args = {"type": "string", "minLength": 1}, {"type": "object"}
    count = {"type": "integer", "minimum": 0}
    called = {"type": "object", "additionalProperties": False, "required": ["server", "tool"], "properties": {
        "server": text, "tool": text, "args": args, "times": count, "at_least": count, "at_most": count,
        "exact_args": {"type": "boolean"}}}
    not_called = {"anyOf": [text, {"type": "object", "additionalProperties": False, "required": ["server"],
                                   "properties": {"server": text, "tool": text, "args": args,
                                                  "reached": {"type": "boolean"}}}]}
    as_asked = {"anyOf": [{"const": True}, {"type": "object", "additionalProperties": False,
                                            "properties": {"server": text, "tool": text}}]}
    return {"mcp_called": called, "mcp_not_called": not_called, "mcp_as_asked": as_asked,
            "mcp_only_declared": {"const": True}}
