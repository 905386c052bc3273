"""The coding-agent example (`examples/coding-agent/`): what each agent's scripted model file and configuration hold,
made from the agents' declared contracts (`trialrun.agents.CONTRACTS`: their shell, read and edit tools and argument
shapes, the options under which they run what they are asked), so a contract and the example never disagree.

`python tests/_coding_example.py` writes the files; tests/test_coding_agent_example.py checks they are what this
makes, and runs them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "coding-agent"
sys.path.insert(0, str(ROOT / "src"))

from trialrun.agents import CONTRACTS  # noqa: E402

#: Each task's changes: (file, [(old text, new text), ...], the test command, the final answer).
_PRICES_OLD = "def total(price):\n    \"\"\"The price with 20% tax.\"\"\"\n    return round(price * 1.2, 2)"
_PRICES_NEW = ("TAX_RATE = 0.2\n\n\ndef total(price):\n    \"\"\"The price with 20% tax.\"\"\"\n"
               "    return round(price * (1 + TAX_RATE), 2)")
TASKS: dict[str, tuple[str, list[tuple[str, str]], str, str]] = {
    "fix-add": ("app.py", [("    return a - b", "    return a + b")], "python3 test_app.py",
                "Fixed add() in app.py: it subtracted. test_app.py passes."),
    "tax-constant": ("prices.py", [(_PRICES_OLD, _PRICES_NEW),
                                   ("    return round(price * 0.2, 2)", "    return round(price * TAX_RATE, 2)")],
                     "python3 test_prices.py",
                     "prices.py now uses a TAX_RATE constant in total() and tax(); test_prices.py still passes."),
    "greet": ("hello.py", [("def hello():", "def greet(name):\n    return f\"Hello, {name}!\"\n\n\ndef hello():")],
              "python3 test_hello.py", "Added greet(name) to hello.py; config.json is untouched."),
}
#: The presets the example has files for: every agent with a shell and an edit tool, Codex (its edit is a patch,
#: `apply_patch`, through its shell) and the reference agent (`trialrun.Agent` with the shell tools).
PRESETS = [name for name, c in CONTRACTS.items() if c.file_tool("edit") is not None] + ["codex", "reference"]


def task_text(test: str) -> str:
    return (EXAMPLE / "tasks" / test / TASKS[test][0]).read_text()


def changed_text(test: str) -> str:
    """The task's file with its changes made (what a correct agent leaves)."""
    text = task_text(test)
    for old, new in TASKS[test][1]:
        assert text.count(old) == 1, (test, old)
        text = text.replace(old, new)
    return text


def _patch(file: str, changes: list[tuple[str, str]]) -> str:
    hunks = "".join("@@\n" + "".join(f"-{line}\n" for line in old.split("\n"))
                    + "".join(f"+{line}\n" for line in new.split("\n")) for old, new in changes)
    return f"apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: {file}\n{hunks}*** End Patch\nEOF\n"


def steps(preset: str, test: str) -> list[dict[str, Any]]:
    """The scripted model's steps for one task: read the file, change it with the agent's own edit tool (Codex: a
    patch; the reference agent: its whole new text), run the task's test, answer."""
    file, changes, command, answer = TASKS[test]
    if preset == "reference":
        return [{"tool_call": {"name": "read_file", "arguments": {"path": file}}},
                {"tool_call": {"name": "write_file", "arguments": {"path": file, "content": changed_text(test)}}},
                {"tool_call": {"name": "run_command", "arguments": {"command": command}}},
                {"reply": answer}]
    contract = CONTRACTS[preset]
    if preset == "codex":
        change: list[dict[str, Any]] = [{"shell": f"cat {file}"}, {"shell": _patch(file, changes)}]
    else:
        read, edit = contract.file_tool("read"), contract.file_tool("edit")
        assert read is not None and edit is not None
        change = [{"tool_call": {"name": read.name, "arguments": read.call(file, "{workdir}")}}]
        change += [{"tool_call": {"name": edit.name, "arguments": edit.call(file, "{workdir}", old=old, new=new)}}
                   for old, new in changes]
    return [*change, {"shell": command}, {"reply": answer}]


def _describe(preset: str) -> str:
    if preset == "reference":
        return "the reference agent (trialrun.Agent): read_file, write_file, run_command"
    contract = CONTRACTS[preset]
    tools = [contract.shell_tool.name] + [t.name for k in ("read", "edit") if (t := contract.file_tool(k)) is not None]
    return f"{preset}: {', '.join(tools)}" + (" (its edits are patches: apply_patch through its shell)"
                                              if preset == "codex" else "")


def script_yaml(preset: str) -> str:
    """The scripted model file of one preset (YAML; each step one line of JSON flow, which YAML reads)."""
    lines = [f"# What the scripted model answers {_describe(preset)}, step by step, for each task of",
             "# ../tests.json. {workdir} stands for the trial's workdir (for a tool that wants an absolute path);",
             "# `shell:` runs a command through whatever shell tool the agent offers. Written from the agent's",
             "# contract by tests/_coding_example.py (tests/test_coding_agent_example.py checks it).", ""]
    for test in TASKS:
        lines.append(f"{test}:")
        lines += [f"  - {json.dumps(step, ensure_ascii=False)}" for step in steps(preset, test)]
    return "\n".join(lines) + "\n"


def config_toml(preset: str) -> str:
    """The configuration that runs the suite with one preset (its options: those under which it runs what it is
    asked, from its contract)."""
    head = [f"# The coding-agent example with {preset}: trialrun run --config agents/{preset}.toml",
            "# (from examples/coding-agent/; docs/tutorials/coding-agent.md, \"Graded by the files\")."]
    if preset == "reference":
        body = ['tools = ["shell"]']
    else:
        body = [f'agent = "{preset}"']
    body += [f'model = "scripted:{preset}.yaml"', 'suite = "../tests.json"', 'results_dir = "../results"']
    contract = CONTRACTS.get(preset)
    options = dict(contract.permissions.runs_all) if contract is not None and contract.permissions is not None else {}
    if options:
        body.append("")
        body.append("[agent_options]")
        body += [f"{key} = {json.dumps(value)}" for key, value in options.items()]
    return "\n".join(head + body) + "\n"


def files() -> dict[Path, str]:
    """Every generated file of the example and what it holds."""
    made: dict[Path, str] = {}
    for preset in PRESETS:
        made[EXAMPLE / "agents" / f"{preset}.yaml"] = script_yaml(preset)
        made[EXAMPLE / "agents" / f"{preset}.toml"] = config_toml(preset)
    return made


if __name__ == "__main__":
    for path, text in files().items():
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")
