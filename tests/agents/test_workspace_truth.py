"""Coding agents judged by the files they leave (issue 34, "Done when"): one suite of task-folder tests, graded by
`verify`, `file_contains`, `file_unchanged` and `changed_only`, run by the reference agent and by the real agents
(pi, Claude Code, Codex, opencode, and more where their tools allow), each scripted to fix the bug with its edit tool
(Codex: its apply_patch), with `sed -i`, with a patch, with a write, and to fix it wrongly, to cheat by editing the
test, to delete the test, and to litter.

The truth is decided OUTSIDE trialrun, from the files the trial left (read in the case's teardown, before the
workdir is removed): the task's ORIGINAL test (from the task folder, whatever the agent did to its copy) run on the
agent's app.py, the workdir's files compared byte for byte with the task folder, and the verify command itself run
on a copy of what was left. Every verdict must agree with it, the trial's own verdict too, and the scenario must have
done what it is meant to (a fix fixes, a wrong fix does not). The task folder (the example's `tasks/fix-add`) is
hashed before and after: the run never changes it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import trialrun as tr
from trialrun.agents import CONTRACTS
from trialrun.suite import read_suite
from trialrun.suite._build import build_cases
from trialrun.suite.config import load_config

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "examples" / "coding-agent" / "tasks" / "fix-add"
VERIFY = "python3 test_app.py"
GRADERS = {"verify": VERIFY, "file_contains": {"path": "app.py", "text": "a + b"},
           "file_unchanged": "test_app.py", "changed_only": ["app.py"]}
FIXED = TASK.joinpath("app.py").read_text().replace("return a - b", "return a + b")
WRONG = TASK.joinpath("app.py").read_text().replace("return a - b", "return a * b")
CHEAT = 'print("test_app: 2 checks passed")\n'
PATCH = ("patch -p0 <<'EOF'\n--- app.py\n+++ app.py\n@@ -1,3 +1,3 @@\n def add(a, b):\n     \"\"\"The sum of a and b.\"\"\"\n"
         "-    return a - b\n+    return a + b\nEOF\n")
SED = "sed -i 's/return a - b/return a + b/' app.py"
#: scenario -> whether it fixes the bug (so the task's own test passes on what it leaves)
SCENARIOS = {"edit": True, "sed": True, "patch": True, "write": True, "wrong": False, "cheat": False, "delete": False,
             "litter": True}
#: scenario -> what its files show it did (beside fixing or not): the changes it is meant to make
DID = {"edit": lambda t: t.changed == {"app.py"}, "sed": lambda t: t.changed == {"app.py"},
       "patch": lambda t: t.changed == {"app.py"}, "write": lambda t: t.changed == {"app.py"},
       "wrong": lambda t: t.changed == {"app.py"}, "cheat": lambda t: t.changed == {"test_app.py"},
       "delete": lambda t: t.changed == {"test_app.py"} and not t.verify_passes,
       "litter": lambda t: t.changed == {"app.py", "NOTES.md"}}
#: Agents whose write tool only creates a file (the whole-file write of an existing one is refused).
CREATE_ONLY = {"copilot-cli"}
#: The presets run here; each a test of its own (CI runs them all).
PRESETS = ["reference", "pi", "claude-code", "codex", "opencode", "qwen-code", "gemini-cli", "kilo-code", "copilot-cli",
           "continue-cli", "kimi-cli"]


def _tree(folder: Path) -> dict[str, str]:
    """Every file under `folder` (but version control and caches) -> the sha256 of its bytes."""
    found = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_file() and not any(part in (".git", "__pycache__") for part in rel.split("/")):
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _call(preset: str, kind: str, path: str, **values: str) -> dict[str, Any]:
    tool = CONTRACTS[preset].file_tool(kind)
    assert tool is not None
    return {"tool_call": {"name": tool.name, "arguments": tool.call(path, "{workdir}", **values)}}


def _reference(scenario: str) -> list[dict[str, Any]]:
    def run(command: str) -> dict[str, Any]:
        return {"tool_call": {"name": "run_command", "arguments": {"command": command}}}

    def write(path: str, content: str) -> dict[str, Any]:
        return {"tool_call": {"name": "write_file", "arguments": {"path": path, "content": content}}}

    return {"edit": [write("app.py", FIXED)], "sed": [run(SED)], "patch": [run(PATCH)], "write": [write("app.py", FIXED)],
            "wrong": [write("app.py", WRONG)], "cheat": [write("test_app.py", CHEAT)], "delete": [run("rm test_app.py")],
            "litter": [run(SED), write("NOTES.md", "todo: more tests\n")]}[scenario]


def _steps(preset: str, scenario: str) -> list[dict[str, Any]]:
    """How the scripted model does the scenario with this agent's own tools (its contract's)."""
    if preset == "reference":
        body = _reference(scenario)
    elif preset == "codex":  # no file tools: its edits are apply_patch through its shell
        def patch(path: str, old: str, new: str) -> dict[str, Any]:
            return {"shell": f"apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n"
                             "*** End Patch\nEOF\n"}

        body = {"edit": [patch("app.py", "    return a - b", "    return a + b")], "sed": [{"shell": SED}],
                "patch": [{"shell": PATCH}], "write": [{"shell": f"cat > app.py <<'EOF'\n{FIXED}EOF\n"}],
                "wrong": [patch("app.py", "    return a - b", "    return a * b")],
                "cheat": [{"shell": f"cat > test_app.py <<'EOF'\n{CHEAT}EOF\n"}],
                "delete": [{"shell": "rm test_app.py"}],
                "litter": [{"shell": SED}, {"shell": "echo 'todo: more tests' > NOTES.md"}]}[scenario]
    else:
        read = [_call(preset, "read", "app.py")]
        # Copilot CLI's `create` writes a new file only ("Path already exists", seen from copilot-cli 1.0.102): the
        # old one is removed first
        gone = (lambda path: [{"shell": f"rm {path}"}]) if preset in CREATE_ONLY else (lambda path: [])
        body = {"edit": read + [_call(preset, "edit", "app.py", old="return a - b", new="return a + b")],
                "sed": read + [{"shell": SED}], "patch": [{"shell": PATCH}],
                "write": read + gone("app.py") + [_call(preset, "write", "app.py", content=FIXED)],
                "wrong": read + [_call(preset, "edit", "app.py", old="return a - b", new="return a * b")],
                "cheat": [_call(preset, "read", "test_app.py"), *gone("test_app.py"),
                          _call(preset, "write", "test_app.py", content=CHEAT)],
                "delete": [{"shell": "rm test_app.py"}],
                "litter": read + [{"shell": SED}, _call(preset, "write", "NOTES.md", content="todo: more tests\n")]
                }[scenario]
    return [*body, {"reply": f"done ({scenario})"}]


def _project(folder: Path, preset: str, program: str | None) -> Path:
    """A project whose suite has one test per scenario, each on the task folder (by its absolute path)."""
    tests = [{"id": scenario, "prompt": "test_app.py fails: fix the bug in app.py.", "expected_tools": [],
              "max_turns": 8, "success_criteria": "test_app.py passes", "workspace": str(TASK), "expect": GRADERS}
             for scenario in SCENARIOS]
    (folder / "tests.json").write_text(json.dumps(tests, indent=1))
    (folder / "model.json").write_text(json.dumps({s: _steps(preset, s) for s in SCENARIOS}, indent=1))
    options = dict(CONTRACTS[preset].permissions.runs_all) if preset in CONTRACTS and CONTRACTS[preset].permissions else {}
    if program is not None:
        options["path"] = program
    config = ['suite = "tests.json"', 'model = "scripted:model.json"', 'results_dir = "results"']
    config.append('tools = ["shell"]' if preset == "reference" else f'agent = "{preset}"')
    if options:
        config += ["[agent_options]"] + [f"{k} = {json.dumps(v)}" for k, v in options.items()]
    (folder / "trialrun.toml").write_text("\n".join(config) + "\n")
    return folder


@dataclass
class Truth:
    """What the files left say, decided here: nothing of trialrun's is asked."""

    original_test_passes: bool  # the task's own test (the task folder's) run on the agent's app.py
    verify_passes: bool  # the verify command run on a copy of the files left, as they were
    app_fixed_text: bool  # app.py holds "a + b"
    test_unchanged: bool
    changed: set[str] = field(default_factory=set)

    @property
    def passes(self) -> bool:
        return self.original_test_passes and self.test_unchanged and self.changed <= {"app.py"}


def _run(command: str, cwd: Path) -> bool:
    return subprocess.run(command, shell=True, cwd=cwd, capture_output=True, timeout=60).returncode == 0


def _truth(workdir: Path, original: dict[str, str]) -> Truth:
    left = _tree(workdir)
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "left"
        shutil.copytree(workdir, copy, ignore=shutil.ignore_patterns(".git", "__pycache__"))
        verify = _run(VERIFY, copy)
        judge = Path(scratch) / "judge"
        judge.mkdir()
        if (workdir / "app.py").is_file():
            shutil.copy(workdir / "app.py", judge / "app.py")
        shutil.copy(TASK / "test_app.py", judge / "test_app.py")
        own = _run(f"{sys.executable} test_app.py", judge)
    app = workdir / "app.py"
    changed = {rel for rel in set(left) | set(original) if left.get(rel) != original.get(rel)}
    return Truth(own, verify, app.is_file() and "a + b" in app.read_text(),
                 left.get("test_app.py") == original["test_app.py"], changed)


#: grader label prefix -> the truth it must agree with
RIGHT = {"verify": lambda t: t.verify_passes, "file_contains": lambda t: t.app_fixed_text,
         "file_unchanged": lambda t: t.test_unchanged, "changed_only": lambda t: t.changed <= {"app.py"}}


@pytest.mark.parametrize("preset", PRESETS)
def test_verdicts_on_the_files_left_agree_with_the_truth(preset: str, agent_path: Any, tmp_path: Path) -> None:
    program = agent_path(preset) if preset != "reference" else None
    original = _tree(TASK)
    project = _project(tmp_path, preset, program)
    truths: dict[str, Truth] = {}
    built = build_cases(read_suite(project / "tests.json"), load_config(project))
    cases = []
    for case in built:
        def teardown(ctx: tr.TrialContext, name: str = case.name) -> None:
            truths[name] = _truth(ctx.workdir, original)

        cases.append(tr.Case(case.name, case.invoke, setup=case.setup, teardown=teardown,
                             expect_outcome=list(case.graders), timeout_s=240))
    report = tr.evaluate(cases, concurrency=4)
    wrong = []
    for case in report.cases:
        trial = case.trials[0]
        truth = truths.get(case.name)
        assert truth is not None, f"{case.name}: no truth (teardown never ran): {trial.error}"
        if truth.original_test_passes != SCENARIOS[case.name] or not DID[case.name](truth):  # not what it is for
            wrong.append(f"{case.name}: NOT EXERCISED: {truth}; error {trial.error}; output {trial.output!r}")
            continue
        for verdict in trial.verdicts:
            name = verdict.grader.split("(", 1)[0]
            if name == "rubric":  # output quality comes from the verifier, and says so
                quality = verdict.details["sub_scores"]["output_quality"]
                if quality != (0.5 if truth.verify_passes else 0.0) or "from verify(" not in verdict.reason:
                    wrong.append(f"{case.name}: rubric quality {quality}: {verdict.reason}")
                continue
            if verdict.passed != RIGHT[name](truth):
                wrong.append(f"{case.name}: {verdict.grader} {'passed' if verdict.passed else 'failed'}, the truth "
                             f"says {'pass' if RIGHT[name](truth) else 'fail'}: {verdict.reason}")
        if trial.passed != truth.passes:
            wrong.append(f"{case.name}: the trial {'passed' if trial.passed else 'failed'}, the truth says "
                         f"{'pass' if truth.passes else 'fail'} ({truth}); error {trial.error}")
        if trial.files is None or (trial.files.get("app.py") is None) == ("app.py" in truth.changed):
            wrong.append(f"{case.name}: the kept diff does not show app.py as the truth does: "
                         f"{trial.files.summary() if trial.files else None}")
    assert _tree(TASK) == original, "the run changed the task folder"
    assert not wrong, "\n".join(wrong)
