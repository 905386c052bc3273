"""A `trialrun run` process ends as any Python program does: a tool's file that is still open, in a reference
cycle made when the tool was imported or during the run, keeps every buffered write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TOOL = '''
import threading

class Keeper:
    """A file in a reference cycle: only the collector finalises (flushes) it."""
    def __init__(self, path):
        self.me = self
        self.file = open(path, "w", buffering=1 << 20)

AT_IMPORT = Keeper("at-import.txt")  # frozen before the run: a cycle among the frozen objects
HOLDER = {}
LOCK = threading.Lock()  # trials run at once: without it two calls could each open (and truncate) the file


def lookup(key: str) -> str:
    """Look up a key."""
    with LOCK:
        AT_IMPORT.file.write("looked up " + key + "\\n")
        if "during" not in HOLDER:  # opened while the run goes: referred to only from the frozen cycle
            HOLDER["during"] = Keeper("during-run.txt")
            AT_IMPORT.held = HOLDER["during"]
        HOLDER["during"].file.write("during " + key + "\\n")
    return "value-" + key.removeprefix("key-")
'''


def _project(folder: Path, tool: str) -> Path:
    (folder / "tests.json").write_text(json.dumps([
        {"id": f"t{i}", "prompt": f"lookup key-{i}", "expected_tools": ["lookup"], "max_turns": 2,
         "success_criteria": f"says value-{i}"} for i in range(3)]))
    (folder / "model.yaml").write_text("".join(
        f"t{i}:\n  - tool_call: {{name: lookup, arguments: {{key: key-{i}}}}}\n  - reply: \"value-{i}\"\n" for i in range(3)))
    (folder / "tool_mod.py").write_text(tool)
    (folder / "trialrun.toml").write_text('suite = "tests.json"\nmodel = "scripted:model.yaml"\nresults_dir = "results"\n'
                                          'tools = ["tool_mod:lookup"]\n')
    return folder


def _run(folder: Path, *prefix: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])}
    code = "\n".join([*prefix, "import runpy, sys", "sys.argv = ['trialrun', 'run', 'all']",
                      "runpy.run_module('trialrun', run_name='__main__', alter_sys=True)"])
    return subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, capture_output=True, text=True, timeout=120)


def test_open_files_in_cycles_keep_their_writes_when_the_process_ends(tmp_path: Path) -> None:
    folder = _project(tmp_path, TOOL)
    done = _run(folder)
    assert done.returncode in (0, 1), done.stderr
    assert sorted((folder / "at-import.txt").read_text().splitlines()) == [f"looked up key-{i}" for i in range(3)]
    assert sorted((folder / "during-run.txt").read_text().splitlines()) == [f"during key-{i}" for i in range(3)]
