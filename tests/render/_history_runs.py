"""A results folder with a real history, for the view's tests and docs/make_screenshot.py: the bundled quickstart
run by the real `trialrun run` five times (v1, v1 again, then a configuration change to model_v2.yaml that
regresses summarise-notes, v2 with a label, then model_v3.yaml: v2 with summarise-notes' second command changed),
and `trialrun view` served on a free loopback port."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart"

#: (arguments of `trialrun run`) for each run, oldest first; the third changes the config.
RUNS = [["run", "all"], ["run", "all"], ["run", "all", "--model", "scripted:model_v2.yaml"],
        ["run", "all", "--model", "scripted:model_v2.yaml", "--label", "try=v2-again"],
        ["run", "all", "--model", "scripted:model_v3.yaml"]]
#: The test the configuration change regresses (v2 calls run_command where v1 called read_file).
REGRESSED = "summarise-notes"
#: What model_v3.yaml changes in v2: the arguments of summarise-notes' second call (turn 2).
V3_CHANGE = ("wc -w notes.txt", "wc -l notes.txt")


def make_history(folder: Path) -> Path:
    """Copy the quickstart into `folder`, run it as RUNS says, and return its results folder."""
    from trialrun.cli import main

    project = folder / "quickstart"
    shutil.copytree(QUICKSTART, project, ignore=shutil.ignore_patterns("results_*", "latest.json"))
    v2 = (project / "model_v2.yaml").read_text(encoding="utf-8")
    assert V3_CHANGE[0] in v2
    (project / "model_v3.yaml").write_text(v2.replace(*V3_CHANGE), encoding="utf-8")
    cwd = os.getcwd()
    os.chdir(project)
    try:
        for args in RUNS:
            result = CliRunner().invoke(main, args)
            assert result.exit_code in (0, 1), result.output
    finally:
        os.chdir(cwd)
    results = project / "state" / "eval"
    assert len(list(results.glob("results_*.json"))) == len(RUNS)
    return results


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def served(results: Path) -> Iterator[str]:
    """`trialrun view`'s app on 127.0.0.1 in a thread; yields its base URL and stops it afterwards."""
    import uvicorn

    from trialrun.view import create_app

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(results), host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("trialrun view did not start within 15 s")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


# -- a journal, written as docs/journal.md says a run writes it ----------------------------------------------
#: The journals "being written" here: a live run holds its journal's lock (trialrun.report.journal.is_live), so these
#: hold it too until `end_journal`.
_WRITING: dict[Path, int] = {}


def start_journal(path: Path, cases: dict[str, int], *, run_id: str = "eval_20991231_235959") -> None:
    """The start line of a run of `cases` (name -> trials), locked as a running trialrun holds its journal."""
    import fcntl
    import json

    line = {"event": "start", "journal_version": 1, "schema_version": "1.0", "run_id": run_id,
            "started_at": "2099-12-31T23:59:59+00:00", "pid": os.getpid(), "host": "test", "trial_count": 1,
            "cases": [{"name": n, "title": None, "description": None, "tags": [], "mode": "deterministic",
                       "trials": k, "metadata": {}} for n, k in cases.items()],
            "config_snapshot": {"model": "scripted:model_v1.yaml"}}
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    fd = os.open(path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    _WRITING[path] = fd


def append_trial(path: Path, case: str, trial: int, *, passed: bool, elapsed_s: float) -> None:
    """One finished trial's line (its result as the result file holds a TrialResult), written with one write."""
    import json

    from trialrun.report.results import TrialResult

    result = TrialResult(trial=trial, passed=passed, duration_s=0.1).model_dump(mode="json")
    with path.open("a", encoding="utf-8") as journal:
        journal.write(json.dumps({"event": "trial", "case": case, "elapsed_s": elapsed_s, "result": result}) + "\n")


def end_journal(path: Path, status: str = "completed") -> None:
    with path.open("a", encoding="utf-8") as journal:
        journal.write(f'{{"event": "end", "status": "{status}"}}\n')
    fd = _WRITING.pop(path, None)
    if fd is not None:
        os.close(fd)  # the writer is done: its lock goes with it
