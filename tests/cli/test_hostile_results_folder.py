"""The CLI over a results folder someone put hostile files in. A FIFO named like a journal or a result file, those
names (and latest.json) linked to /dev/zero: `trialrun report`, `compare`, `recover`, `run` and `report --history`
run as real processes (a 60 s timeout, a 1.5 GiB address-space limit) and finish, naming the file and why it was
not read, with no traceback; the good runs are still used (before: the FIFO hung report, compare and run for ever,
/dev/zero ended in MemoryError). A journal whose lines hold fields of the wrong type is a note naming the file,
the line and the field ("line 1: cases must be a list"), never a traceback, from every command that reads it."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

RESULTS = Path("state/eval")
QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
JOURNAL = "results_29990101_000000.jsonl"
FIFO = "is a FIFO (named pipe), not a regular file"
DEVICE = "is a character device, not a regular file"
LIMIT = 1536 * 2**20


def _limited() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _trialrun(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real `trialrun` (the package under test) in `project`; fails the test when it takes over 60 s (a hang:
    the shared test machine can be slow, never that slow)."""
    import trialrun

    env = {**os.environ, "PYTHONPATH": str(Path(trialrun.__file__).resolve().parents[1]), "COLUMNS": "200"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    try:
        return subprocess.run([sys.executable, "-m", "trialrun", *args], cwd=project, env=env, capture_output=True,
                              text=True, timeout=60, preexec_fn=_limited)
    except subprocess.TimeoutExpired:
        pytest.fail(f"trialrun {' '.join(args)} did not finish within 60 s (blocked on a file?)", pytrace=False)


def _release(folder: Path) -> None:
    for path in folder.iterdir():
        if path.is_fifo():
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The quickstart after two real `trialrun run`s (in this process: fast), copied by each test."""
    from click.testing import CliRunner

    from trialrun.cli import main

    project = tmp_path_factory.mktemp("hostile-cli") / "project"
    shutil.copytree(QUICKSTART, project, ignore=shutil.ignore_patterns("results_*.json", "latest.json"))
    cwd = os.getcwd()
    os.chdir(project)
    try:
        for _ in range(2):
            assert CliRunner().invoke(main, ["run", "all"]).exit_code in (0, 1)
            time.sleep(1.05)  # the next run gets a name of its own second
    finally:
        os.chdir(cwd)
    return project


@pytest.fixture
def two_runs(template: Path, tmp_path: Path) -> tuple[Path, Path]:
    """(a copy of the template project, its results folder)."""
    project = tmp_path / "copy"
    shutil.copytree(template, project, symlinks=True)
    return project, project / RESULTS


#: The hostile files, by name: a FIFO or a link to /dev/zero where a journal, a result file and latest.json go.
HOSTILE = {"results_29990101_000000.jsonl": "fifo", "results_29990101_000001.jsonl": "zero",
           "results_29990101_000002.json": "fifo", "results_29990101_000003.json": "zero"}
COMMANDS = [("report",), ("compare",), ("recover",), ("run", "read-file"), ("report", "--history", "--html", "h.html")]


def _plant(folder: Path, latest: str) -> dict[str, str]:
    """Put the hostile files in (latest.json too, as `latest` says); return name -> why it is not read."""
    planted = {**HOSTILE, "latest.json": latest}
    for name, kind in planted.items():
        (folder / name).unlink(missing_ok=True)
        if kind == "fifo":
            os.mkfifo(folder / name)
        else:
            os.symlink("/dev/zero", folder / name)
    return {name: FIFO if kind == "fifo" else DEVICE for name, kind in planted.items()}


@pytest.mark.parametrize("latest", ["fifo", "zero"], ids=["latest.json a FIFO", "latest.json to /dev/zero"])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_fifos_and_dev_zero_in_the_results_folder_are_named_and_never_block(
        two_runs: tuple[Path, Path], latest: str, command: tuple[str, ...]) -> None:
    project, folder = two_runs
    planted = _plant(folder, latest)
    try:
        result = _trialrun(project, *command)
    finally:
        _release(folder)
    output = result.stdout + result.stderr
    assert "Traceback" not in output and "MemoryError" not in output, output
    if command[0] == "run":
        assert result.returncode in (0, 1) and "saved " in output, output  # not held up, and saved
        return
    journals = [name for name in planted if name.endswith(".jsonl")]
    if command[0] == "recover":  # said, never opened; nothing else to recover
        assert result.returncode == 2, output
        for name in journals:
            assert f"error: not recovered: {folder / name}: {planted[name]}" in output, output
        return
    assert result.returncode in (0, 1), output  # the good runs are shown (compared, exported)
    for name, why in planted.items():
        if name == "latest.json" and command != ("report",):
            continue  # only `report` (the most recent run) reads latest.json
        assert f"warning: skipped {folder / name}: {why}" in output, (name, output)


def _journal_lines(folder: Path) -> list[dict[str, Any]]:
    """A journal of the newest run as a killed run would have left it (its result file gone)."""
    from trialrun.report.journal import case_plan  # noqa: F401  # the format's own writer is what these lines follow

    newest = sorted(folder.glob("results_*.json"))[-1]
    report = json.loads(newest.read_text())
    start = {"event": "start", "journal_version": 1, "schema_version": "1.0", "run_id": report["run_id"],
             "started_at": report["started_at"], "pid": 1, "host": "ci", "trial_count": 1,
             "cases": [{"name": c["name"], "title": None, "description": None, "tags": c["tags"],
                        "mode": c["mode"], "trials": 1, "metadata": c["metadata"]} for c in report["cases"]],
             "config_snapshot": report["config_snapshot"]}
    trials = [{"event": "trial", "case": c["name"], "elapsed_s": 0.5, "result": c["trials"][0]} for c in report["cases"]]
    return [start, *trials, {"event": "end", "status": "completed"}]


#: (line, field path, wrong value, the note's words)
WRONG = [
    (1, ("cases",), 5, "line 1: cases must be a list"),
    (1, ("journal_version",), "x", "line 1: journal_version must be a whole number"),
    (1, ("trial_count",), "2", "line 1: trial_count must be a whole number"),
    (1, ("started_at",), 5, "line 1: started_at must be a time as ISO 8601 text"),
    (1, ("run_id",), ["x"], "line 1: run_id must be text"),
    (1, ("config_snapshot",), "x", "line 1: config_snapshot must be a mapping"),
    (1, ("cases", 0, "name"), 5, "line 1: cases.0.name must be text"),
    (1, ("cases", 0, "trials"), "3", "line 1: cases.0.trials must be a whole number"),
    (1, ("cases", 0, "tags"), "x", "line 1: cases.0.tags must be a list"),
    (1, ("cases", 0, "mode"), 5, "line 1: cases.0.mode must be 'deterministic' or 'live_canary'"),
    (1, ("cases", 0, "metadata"), [], "line 1: cases.0.metadata must be a mapping"),
    (2, ("case",), 5, "line 2: case must be text"),
    (2, ("elapsed_s",), "0.5", "line 2: elapsed_s must be a number"),
    (2, ("result",), 5, "line 2: result must be a mapping"),
    (2, ("result", "passed"), "yes", "line 2: result.passed must be true or false"),
    (2, ("result", "trial"), "1", "line 2: result.trial must be a whole number"),
    (-1, ("status",), 5, "must be 'completed' or 'interrupted'"),
]


def _wrong_journal(folder: Path, line: int, path: tuple[Any, ...], value: Any) -> Path:
    lines = _journal_lines(folder)
    target = lines[line - 1] if line > 0 else lines[line]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    journal = folder / JOURNAL
    journal.write_text("".join(json.dumps(item) + "\n" for item in lines))
    return journal


@pytest.mark.parametrize("line, path, value, note", WRONG, ids=[".".join(map(str, w[1])) + f"@{w[0]}" for w in WRONG])
def test_a_journal_field_of_the_wrong_type_is_a_named_note_from_every_command(
        project: Path, cli: Any, line: int, path: tuple[Any, ...], value: Any, note: str) -> None:
    for _ in range(2):
        assert cli("run", "all").exit_code in (0, 1)
    folder = project / RESULTS
    journal = _wrong_journal(folder, line, path, value)
    number = line if line > 0 else len(_journal_lines(folder))
    note = note if line > 0 else f"line {number}: status {note}"
    named = f"{journal}: {note}"
    # report (the newest usable run, with a warning), compare (the two good runs), the history export
    for args in (("report",), ("compare",), ("report", "--history", "--html", "h.html")):
        result = cli(*args)
        assert result.exit_code in (0, 1), (args, result.output)
        assert f"warning: skipped {named}" in result.output, (args, result.output)
    for args in (("report", str(journal)), ("compare", str(journal), str(sorted(folder.glob("results_*.json"))[0]))):
        result = cli(*args)
        assert result.exit_code == 2 and named in result.output, (args, result.output)
    result = cli("recover")
    assert result.exit_code == 2 and f"error: not recovered: {named}" in result.output, result.output
    assert journal.exists()  # kept, for a person to look at


LATEST_FIELDS = [(("cases",), 5, "cases: Input should be a valid list"),
                 (("run_id",), 5, "run_id: Input should be a valid string"),
                 (("started_at",), "yesterday", "started_at: Input should be a valid datetime"),
                 (("schema_version",), 1, "schema_version must be text"),
                 (("cases", 0, "trials", 0, "passed"), [True], "trials.0.passed: Input should be a valid boolean")]


@pytest.mark.parametrize("path, value, note", LATEST_FIELDS, ids=[".".join(map(str, f[0])) for f in LATEST_FIELDS])
def test_a_copied_latest_json_with_a_field_of_the_wrong_type_is_named(project: Path, cli: Any, path: tuple[Any, ...],
                                                                      value: Any, note: str) -> None:
    """latest.json where the file system has no symlinks is a copy of the newest result file: read as one."""
    assert cli("run", "all").exit_code in (0, 1)
    latest = project / RESULTS / "latest.json"
    data = json.loads(latest.read_text())
    latest.unlink()
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    latest.write_text(json.dumps(data))
    result = cli("report")
    assert result.exit_code == 2 and f"{latest}: " in result.output and note in result.output, result.output
