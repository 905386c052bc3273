"""What `import trialrun`, `trialrun --help` and `trialrun --version` import, so that their start-up time cannot
regress in silence (the pytest plugin imports trialrun in every pytest session): none of the heavy libraries a
run needs (pydantic, httpx, rich, pygments, yaml, asyncio, genai-prices). Not timed: a loaded machine would make a
timed test flaky; what is imported is what the time is made of."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pydantic", "pydantic_core", "httpx", "rich", "pygments", "yaml", "asyncio", "genai_prices", "click")


def _imported_by(code: str) -> set[str]:
    """The top-level packages in sys.modules after `code` runs in a fresh interpreter (SystemExit is fine)."""
    probe = (f"import sys, json\ntry:\n    {code}\nexcept SystemExit:\n    pass\n"
             "sys.stdout.flush()\nsys.__stderr__.write('\\nMODULES ' + json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    marker = done.stderr.rsplit("MODULES ", 1)
    assert len(marker) == 2, done.stderr
    return set(json.loads(marker[1]))


def test_import_trialrun_imports_none_of_the_heavy_libraries() -> None:
    loaded = _imported_by("import trialrun")
    assert "trialrun" in loaded
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["run", "--help"]])
def test_help_and_version_import_only_click(argv: list[str]) -> None:
    loaded = _imported_by(f"import sys; sys.argv = ['trialrun', *{argv!r}]; from trialrun.cli import main; main()")
    assert "click" in loaded and "trialrun" in loaded
    assert not loaded & (set(HEAVY) - {"click"}), sorted(loaded & set(HEAVY))


def test_an_agent_whose_tools_run_no_commands_never_imports_the_shell_analysis() -> None:
    """The shell analysis (`trialrun._shell`, about 50 ms to import) is for agents whose tools run commands: a run
    of a plain tool leaves it out, and a command tool's call still has its command recorded (the import happens
    then)."""
    code = '''
import sys
import trialrun as tr

@tr.tool
def lookup(key: str) -> str:
    """Look up a key."""
    return "value-" + key

@tr.tool
def bash(command: str) -> str:
    """Run a shell command."""
    return "ran"

def script(name, arguments):
    return lambda request: tr.reply("done") if request.last_tool_results else tr.tool_call(name, **arguments)

plain = tr.Agent(tr.ScriptedModel(script("lookup", {"key": "k"})), tools=[lookup]).run("go")
assert plain.trajectory.tool_calls[0].name == "lookup" and plain.trajectory.commands == []
plain_imports = "trialrun._shell" in sys.modules
shell = tr.Agent(tr.ScriptedModel(script("bash", {"command": "ls -la"})), tools=[bash]).run("go")
print("PLAIN", plain_imports, "SHELL", "trialrun._shell" in sys.modules, shell.trajectory.commands)
'''
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["PLAIN", "False", "SHELL", "True", "['ls", "-la']"], done.stdout


def test_a_json_scripted_run_with_builtin_prices_imports_neither_httpx2_nor_yaml(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The no-network guard patches httpx2 (the official SDKs' httpx) when something imports it, not by importing
    it (about 20 ms), and PyYAML is imported by the first YAML read: `trialrun run` of a JSON suite with a JSON
    script, priced by the built-in table, imports neither (its trial ran and passed;
    tests/models/test_model_guard.py shows httpx2 imported later is still guarded)."""
    (tmp_path / "tests.json").write_text(json.dumps([{"id": "hello", "prompt": "say hi", "expected_tools": [],
                                                         "max_turns": 1, "success_criteria": "hi"}]))
    (tmp_path / "model.json").write_text(json.dumps({"hello": [{"reply": "hi there"}]}))
    (tmp_path / "trialrun.toml").write_text('suite = "tests.json"\nmodel = "scripted:model.json"\n'
                                            'results_dir = "results"\nprices_source = "builtin"\n')
    code = ("import os\n    os.chdir(" + repr(str(tmp_path)) + ")\n"
            "    sys.argv = ['trialrun', 'run', 'all', '-k', '1', '--no-summary']\n"
            "    from trialrun.cli import main\n    main()")
    loaded = _imported_by(code)
    assert "trialrun" in loaded and "httpx" in loaded
    assert not loaded & {"httpx2", "genai_prices", "yaml"}, sorted(loaded & {"httpx2", "genai_prices", "yaml"})
    result = json.loads((tmp_path / "results" / "latest.json").read_text())
    assert result["cases"][0]["passed"] is True, result["cases"][0]
