"""Hand grades are never lost (issue 33.2): graders at once, from separate `trialrun grade` processes and from a real
`trialrun view` process over HTTP, each grading its own trial of the same run: every grade is in the result file
afterwards, counted in its JSON. Before the folder's write lock, 1 to 3 of 4 concurrent grades were lost (and
with the lock taken out, this test loses some of its 20). It also caught the safe reader setting aside its whole
1 GiB limit for every read, which ran eight viewer requests at once out of the viewer's address space."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

import httpx
from _view_folders import QUICKSTART, view_process
from click.testing import CliRunner

import trialrun
from trialrun.cli import main

#: A grader process: waits for the go file, so every process reads and rewrites the run at about the same moment.
GRADER = """
import os, sys, time
from trialrun.cli import main
go = sys.argv[1]
while not os.path.exists(go):
    time.sleep(0.002)
main(["grade", *sys.argv[2:]], standalone_mode=True)
"""


def _run(folder: Path, trials: int) -> Path:
    project = folder / "quickstart"
    shutil.copytree(QUICKSTART, project, ignore=shutil.ignore_patterns("results_*", "latest.json"))
    cwd = os.getcwd()
    os.chdir(project)
    try:
        result = CliRunner().invoke(main, ["run", "all", "--trials", str(trials)])
        assert result.exit_code in (0, 1), result.output
    finally:
        os.chdir(cwd)
    (path,) = (project / "state" / "eval").glob("results_*.json")
    return path


def _graded(path: Path) -> dict[tuple[str, int], tuple[float, str]]:
    """Every hand grade in the file: (test, trial) -> (quality, comment), read from the JSON itself."""
    data = json.loads(path.read_text(encoding="utf-8"))
    found = {}
    for case in data["cases"]:
        for trial in case["trials"]:
            for verdict in trial["verdicts"]:
                audit = (verdict.get("details") or {}).get("hand_grade")
                if audit:
                    found[case["name"], trial["trial"]] = (audit["quality"], audit.get("comment", ""))
    return found


def test_graders_at_once_from_processes_and_the_viewer_lose_no_grade(tmp_path: Path) -> None:
    path = _run(tmp_path, trials=4)
    data = json.loads(path.read_text(encoding="utf-8"))
    slots = [(c["name"], t["trial"]) for c in data["cases"] for t in c["trials"] if t["verdicts"]]
    assert len(slots) == 20
    levels = [0.05 * (i % 10 + 1) for i in range(len(slots))]
    wanted = {slot: (round(q, 2), f"grade {i} of {slot[0]} trial {slot[1]}") for i, (slot, q) in enumerate(zip(slots, levels))}
    by_cli, by_view = slots[:12], slots[12:]
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(trialrun.__file__).resolve().parents[1]),
                                                       os.environ.get("PYTHONPATH", "")])}
    with view_process(path.parent) as (base, _):
        page = httpx.get(f"{base}/trial/{path.stem}?{urlencode({'test': slots[0][0], 'trial': 1})}").text
        token = re.search(r'name="token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        processes = [subprocess.Popen([sys.executable, "-c", GRADER, str(go), path.stem, test, f"{wanted[test, n][0]:g}",
                                       "--trial", str(n), "--comment", wanted[test, n][1],
                                       "--results-dir", str(path.parent)],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                     for test, n in by_cli]
        answers: list[int] = []

        def post(test: str, n: int) -> None:
            while not go.exists():
                time.sleep(0.002)
            answer = httpx.post(f"{base}/grade", timeout=60, data={
                "token": token, "run": path.stem, "test": test, "trial": str(n), "quality": f"{wanted[test, n][0]:g}",
                "comment": wanted[test, n][1], "back": "/"})
            answers.append(answer.status_code)

        threads = [threading.Thread(target=post, args=slot) for slot in by_view]
        for thread in threads:
            thread.start()
        time.sleep(1.0)  # every grader process is waiting at its go line by now (they import trialrun first)
        go.touch()
        outputs = [p.communicate(timeout=120)[0] for p in processes]
        for thread in threads:
            thread.join(120)
    assert [p.returncode for p in processes] == [0] * len(by_cli), outputs
    assert answers == [303] * len(by_view)
    assert _graded(path) == wanted  # all 20 grades, each with its own quality and comment


RECOVER = """
import os, sys, time
from trialrun.cli import main
while not os.path.exists(sys.argv[1]):
    time.sleep(0.002)
main(["recover", "--results-dir", sys.argv[2]], standalone_mode=True)
"""


def test_recovers_at_once_save_a_killed_run_once_and_both_succeed(tmp_path: Path) -> None:
    """`trialrun recover` in two processes at once (two terminals after a crash): the run is saved once and neither
    fails (under the folder's lock the second finds the run the first saved, or nothing left to recover). The
    window this closes is narrow: with the lock taken out this test still passed 4 runs of 4 here."""
    from _history_runs import _WRITING, append_trial, start_journal

    folder = tmp_path / "eval"
    folder.mkdir()
    journal = folder / "results_20991231_235959.jsonl"
    start_journal(journal, {"read-file": 2})
    append_trial(journal, "read-file", 1, passed=True, elapsed_s=0.1)
    os.close(_WRITING.pop(journal))  # killed: the journal has no end line and nobody holds its lock
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(trialrun.__file__).resolve().parents[1]),
                                                       os.environ.get("PYTHONPATH", "")])}
    processes = [subprocess.Popen([sys.executable, "-c", RECOVER, str(go), str(folder)], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    time.sleep(1.0)
    go.touch()
    outputs = [p.communicate(timeout=60)[0] for p in processes]
    assert [p.returncode for p in processes] == [0, 0], outputs
    assert all(out.startswith(("recovered", "nothing to recover")) and "error" not in out for out in outputs), outputs
    assert not journal.exists()
    saved = json.loads((folder / "results_20991231_235959.json").read_text(encoding="utf-8"))
    assert saved["status"] == "interrupted" and [t["trial"] for t in saved["cases"][0]["trials"]] == [1]
