"""A `trialrun run` process leaves what it froze before the run out of the interpreter's last collection
(`trialrun.cli._gc`) only when nothing alive has a finalizer left to run: a tool's file that is still open,
in a reference cycle, keeps every buffered write (and that this guard is needed is shown by switching it off)."""

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


def test_without_the_guard_those_writes_would_be_lost(tmp_path: Path) -> None:
    """The same run with `nothing_to_finalize` forced true: the frozen cycle is never finalised and both files stay
    empty, so the check is what keeps them."""
    folder = _project(tmp_path, TOOL)
    done = _run(folder, "import trialrun.cli._gc as c", "c.nothing_to_finalize = lambda before: True")
    assert done.returncode in (0, 1), done.stderr
    assert (folder / "at-import.txt").read_text() == "" and (folder / "during-run.txt").read_text() == ""


def test_a_plain_run_leaves_the_frozen_objects_out_of_the_last_collection(tmp_path: Path) -> None:
    """A tool without open files: the shortcut is taken (the run's own files are closed by then), and the result
    file and sidecar are whole."""
    folder = _project(tmp_path, 'def lookup(key: str) -> str:\n    """Look up a key."""\n    return "value-" + key[4:]\n')
    done = _run(folder, "import trialrun.cli._run as c, sys",
                "orig = c._leave_frozen_at_exit",
                "def probe():\n    orig()\n    print('left frozen:', c.click.get_current_context().meta.get(c._LEAVE_FROZEN), file=sys.stderr)",
                "c._leave_frozen_at_exit = probe")
    assert done.returncode == 0, done.stderr
    assert "left frozen: True" in done.stderr
    report = json.loads((folder / "results" / "latest.json").read_text())
    assert report["passed_case_count"] == 3
    (sidecar,) = (folder / "results").glob("*.exchanges.ndjson")
    assert len(sidecar.read_text().splitlines()) == 1 + 3


def test_an_open_file_is_seen_before_and_after_the_freeze_and_a_closed_one_is_not(tmp_path: Path) -> None:
    """In a fresh interpreter, as the CLI's is: in the test process, whatever other tests left alive decides
    whether every finalizer can be referred to weakly (when one cannot, `finalizers` says None: no shortcut)."""
    body = f"""
import sys
from trialrun.cli._gc import _alive_with_finalizers, finalizers
early = open({str(tmp_path / "early.txt")!r}, "w")
before = finalizers()
assert before is not None and any(ref() is early for ref in before), before
late = open({str(tmp_path / "late.txt")!r}, "w")
assert any(o is late for o in _alive_with_finalizers())
assert not any(o is sys.stdout or o is sys.__stdout__ for o in _alive_with_finalizers())
early.close()
late.close()
assert not any(o is late or o is early for o in _alive_with_finalizers())
print("examined", len(before))
"""
    done = subprocess.run([sys.executable, "-c", body], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("examined ")