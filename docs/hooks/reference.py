"""MkDocs hook: the suite, configuration and API reference pages, written from the code itself
(`python docs/hooks/reference.py`), committed so that they read in the repository too, and checked at every build.

The suite page comes from `trialrun.suite.suite_json_schema()` (what `trialrun schema` prints) and
`EXPECT_FORMS`; the configuration page from the `Config` pydantic model, each key's example and comment taken from
config.py's docstring; the API page from `trialrun.__all__` (one mkdocstrings block per public name). A key the
model has but the docstring does not show, or a public name in no section of the API page, is a build warning, so
with `mkdocs build --strict` the reference cannot drift from the code. Also the code blocks' Pygments colours.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

log = logging.getLogger("mkdocs.hooks.reference")


#: The reference pages, committed under docs/ (so that links to them work in the repository too) and checked
#: against the code at every build: `python docs/hooks/reference.py` writes them.
COMMITTED = ("reference/suite.md", "reference/config.md", "reference/suite.schema.json", "reference/api.md")
DOCS = Path(__file__).resolve().parents[1]


def generated() -> dict[str, str]:
    """Each reference page's text as the code says it now."""
    return {"reference/suite.md": suite_page(), "reference/config.md": config_page(),
            "reference/suite.schema.json": suite_schema_json(), "reference/api.md": api_page()}


def on_files(files: Files, config: Any) -> Files:
    """A committed reference page that is not what the code says is a warning (an error with --strict)."""
    for name, text in generated().items():
        path = DOCS / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            log.warning("docs/%s is not what the code says; run python docs/hooks/reference.py", name)
        if files.get_file_from_path(name) is None:
            files.append(File.generated(config, name, content=text))
    files.append(File.generated(config, "css/pygments.css", content=pygments_css()))
    return files


def pygments_css() -> str:
    """The colours of the code blocks (pymdownx.highlight marks them up with Pygments at build time)."""
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(style="default").get_style_defs(".highlight") + "\n"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _type(prop: dict[str, Any]) -> str:
    """A JSON Schema type in words; null is left out (an optional key is simply not written)."""
    if "anyOf" in prop:
        return " or ".join(_type(p) for p in prop["anyOf"] if p.get("type") != "null")
    if "enum" in prop:
        return " | ".join(f"`{json.dumps(v)}`" for v in prop["enum"])
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list of {_type(prop.get('items', {}))}"
    return str(kind)


def _constraints(prop: dict[str, Any]) -> str:
    words = {"minLength": "at least {} characters", "minimum": "≥ {}", "exclusiveMinimum": "> {}"}
    if prop.get("minLength") == 1:
        return "not empty"
    found = [text.format(prop[key]) for key, text in words.items() if key in prop]
    for option in prop.get("anyOf", []):
        found += [text.format(option[key]) for key, text in words.items() if key in option]
    return ", ".join(found)


def suite_schema_json() -> str:
    from trialrun.suite._tests_file import suite_json_schema

    return json.dumps(suite_json_schema(), indent=2) + "\n"


def _default(field: Any) -> str:
    """A pydantic field's default as the file would write it; empty when there is none (required or unset)."""
    if field.is_required():
        return ""
    value = field.get_default(call_default_factory=True)
    return "" if value is None else f"`{json.dumps(value if not hasattr(value, 'as_posix') else str(value))}`"


def suite_page() -> str:
    from trialrun.suite._tests_file import EXPECT_FORMS, SuiteTest, suite_json_schema

    schema = suite_json_schema()
    item = schema["items"]
    required = set(item.get("required", []))
    lines = [
        "# Suite file reference",
        "",
        "<!-- written by docs/hooks/reference.py from trialrun.suite.suite_json_schema(); the docs build checks it -->",
        "",
        "A suite (`tests.json`, or `tests.yaml`) is a JSON array of at least one test. Each test is an object with "
        "these keys; any other key is an error that names the file, the test and the key.",
        "",
        "| key | type | required | default | constraints | description |",
        "|---|---|---|---|---|---|",
    ]
    for name, prop in item["properties"].items():
        default = _default(SuiteTest.model_fields[name])
        lines.append(f"| `{name}` | {_cell(_type(prop) if name != 'expect' else 'list or mapping of graders')} | "
                     f"{'yes' if name in required else ''} | {default} | {_cell(_constraints(prop))} | "
                     f"{_cell(prop.get('description', ''))} |")
    lines += [
        "",
        "## Graders in `expect`",
        "",
        "`expect` is a list of `{grader: value}` pairs, or one mapping holding several graders (one per key, in "
        "order). Every grader must pass for the trial to pass.",
        "",
        "| grader | value |",
        "|---|---|",
        *[f"| `{name}` | {_cell(form)} |" for name, form in EXPECT_FORMS.items()],
        "",
        "## The JSON Schema",
        "",
        "The same schema `trialrun schema` prints (point your editor at it: "
        "[suite.schema.json](suite.schema.json)):",
        "",
        "```json",
        suite_schema_json().rstrip("\n"),
        "```",
        "",
    ]
    return "\n".join(lines)


_KEY = re.compile(r"^    (?:\[(?P<table>\w+)[^\]]*\]|(?P<key>\w+) = )")


def config_examples(doc: str) -> dict[str, list[str]]:
    """Each top-level key of config.py's docstring example -> its example lines (a table: its header and keys)."""
    blocks: dict[str, list[str]] = {}
    current: str | None = None
    in_table = False
    for line in doc.splitlines():
        if not line.startswith("    "):
            if line.strip():
                current = None
            continue
        match = _KEY.match(line)
        if match and match["table"]:
            current, in_table = match["table"], True
        elif match and not in_table:
            current = match["key"]
        if current is not None:
            blocks.setdefault(current, []).append(line[4:].rstrip())
    return blocks


def config_page() -> str:
    from trialrun.expect.rubric import RUBRICS
    from trialrun.suite import config as module
    from trialrun.wire import CODECS

    choices = {"api": tuple(CODECS), "sandbox": module.SANDBOXES, "rubric": tuple(RUBRICS),
               "model": tuple(f"{kind}:…" for kind in module.MODEL_KINDS),
               "judge": tuple(f"{kind}:…" for kind in module.MODEL_KINDS)}
    schema = module.Config.model_json_schema()
    examples = config_examples(module.__doc__ or "")
    lines = [
        "# Configuration reference",
        "",
        "<!-- written by docs/hooks/reference.py from trialrun.suite.config.Config; the docs build checks it -->",
        "",
        f"`{module.CONFIG_FILE}` (or a `[tool.trialrun]` section in `pyproject.toml`), found by walking up from the "
        "current folder. Every key is optional; paths are relative to the file that names them; command-line flags "
        "override the file. An unknown key or a value of the wrong kind is an error naming the file and the key.",
        "",
        "| key | type | default | one of |",
        "|---|---|---|---|",
    ]
    keys = [name for name, field in module.Config.model_fields.items() if not field.exclude]
    for name in keys:
        prop = schema["properties"][name]
        field = module.Config.model_fields[name]
        one_of = ", ".join(f"`{c}`" for c in choices.get(name, ()))
        lines.append(f"| [`{name}`](#{name}) | {_cell(_type(prop))} | {_cell(_default(field))} | {one_of} |")
    lines.append("")
    for name in keys:
        example = examples.get(name)
        if not example:
            log.warning("config reference: Config.%s is not shown in trialrun/suite/config.py's docstring example", name)
            continue
        lines += [f"## `{name}`", "", "```toml", *example, "```", ""]
    for name in sorted(set(examples) - set(keys)):
        log.warning("config reference: config.py's docstring shows %r, which Config does not have", name)
    return "\n".join(lines)


#: Sections of the API page: a heading and the modules whose public names it shows, in this order.
_API_SECTIONS = (
    ("Cases and running", ("case", "run.runner", "run.arms", "run.executor", "expect")),
    ("Results", ("report.results", "report.compare")),
    ("What an agent did", ("trajectory",)),
    ("The model seam", ("models", "endpoint")),
    ("MCP servers", ("mcp",)),
    ("The reference agent", ("agent",)),
    ("Agents in another process", ("agents",)),
)


#: Modules whose page block shows all their public names (so they are not listed one by one as well).
_WHOLE_MODULES = ("expect", "agents")


def api_page() -> str:
    """One mkdocstrings block per name `trialrun/__init__.py` re-exports, grouped by the module defining it."""
    import trialrun

    eager = {name: "case" for name in ("Case", "case", "CaseError", "Problem", "TrialContext")}
    where = {**eager, **trialrun._EXPORTS}  # noqa: SLF001 - the package's own list of public names
    exported = [name for name in trialrun.__all__ if name not in ("__version__", "expect")]
    lines = ["# Python API", "", "<!-- written by docs/hooks/reference.py from trialrun.__all__ -->", "",
             "Everything below is importable from the package: `import trialrun as tr`, then `tr.Case`, "
             "`tr.evaluate`, `tr.expect.called`, ...", "",
             "Read in the repository, this page lists each public name as `::: trialrun.<module>.<name>`: the "
             "module under `src/trialrun/` whose docstrings document it. The docs site (`pip install -e "
             "'.[docs]' && mkdocs serve`) shows each one's signature and docstring in its place.", ""]
    shown: set[str] = set()
    for heading, modules in _API_SECTIONS:
        lines += [f"## {heading}", ""]
        for name in exported:
            if where[name] in modules:
                shown.add(name)
                if where[name] not in _WHOLE_MODULES:  # those are shown below, with the rest of their module
                    lines += [f"::: trialrun.{where[name]}.{name}", "    options:", "      heading_level: 3", ""]
        if "expect" in modules:
            lines += ["### The graders (`trialrun.expect`)", "", "::: trialrun.expect", "    options:",
                      "      show_root_heading: false", "      heading_level: 4", ""]
        if "agents" in modules:
            from trialrun.agents import PRESETS

            lines += ["### `trialrun.agents`", "", "::: trialrun.agents", "    options:",
                      "      show_root_heading: false", "      heading_level: 4", "",
                      "### The ready-made agents", "",
                      "In `trialrun.toml`: " + ", ".join(f"`agent = \"{key}\"`" for key in PRESETS) + ".", ""]
            for make in PRESETS.values():
                lines += [f"::: {make.__module__}.{make.__name__}", "    options:", "      heading_level: 4", ""]
    for name in sorted(set(exported) - shown):
        log.warning("API reference: trialrun.%s (from .%s) is in no section of docs/hooks/reference.py", name,
                    where[name])
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(DOCS.parent / "src"))
    for name, text in generated().items():
        path = DOCS / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote docs/{name}")
