"""The journal of a run: every finished trial, appended as it finishes, so a run killed outright (SIGKILL, power
loss, an OOM kill) is not lost, and a live viewer can follow a run as it goes.

`results_<stamp>.jsonl` sits beside the result file `results_<stamp>.json` it becomes; its format is documented in
docs/journal.md. In short, JSON Lines (UTF-8, one object a line, each written in one `write`):

    {"event": "start", "journal_version": 1, "schema_version": "1.0", "run_id": ..., "started_at": ..., "pid": ...,
     "host": ..., "trial_count": 3, "cases": [{"name": ..., "trials": 3, ...}], "config_snapshot": {...}}
    {"event": "trial", "case": "read-file", "elapsed_s": 0.41, "result": {...a TrialResult...}}
    {"event": "end", "status": "completed" | "interrupted"}

Each line is flushed to the OS as it is written (a killed process loses nothing written); it reaches the disk
(fsync, by a thread of its own) within `fsync_interval_s` seconds, and at once for the start and end lines. The writing process holds an exclusive
`flock` on the file, so a reader can tell a live run from a dead one. Once the result file is saved the journal is
removed: a journal with no result file of the same name is a run that did not finish.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ._files import locked
from ._line_log import LineAppender
from ._scrub import scrub_text, secrets_version
from .results import SCHEMA_VERSION, CaseResult, RunReport, TrialResult

__all__ = ["Journal", "JournalError", "JOURNAL_VERSION", "read_journal", "is_live", "case_plan"]

JOURNAL_VERSION = 1
#: A journal's name is its result file's, with this suffix instead of ".json".
SUFFIX = ".jsonl"


class JournalError(ValueError):
    """A journal that cannot be read; the message names the file and the line."""


def case_plan(case: Any, trials: int, *, skip_reason: str | None = None) -> dict[str, Any]:
    """What the journal's start line says about one selected case (a `Case`): enough to rebuild its result."""
    plan = {"name": case.name, "title": case.title, "description": case.description, "tags": list(case.tags),
            "mode": case.mode, "trials": case.trials or trials, "metadata": case.metadata}
    if skip_reason is not None:
        plan["skip_reason"] = skip_reason
    return plan


class Journal(LineAppender):
    """Appends a run's finished trials to `path` (created empty and exclusively by the results store).

    Writing never stops a run: a write that fails (a full disk) is remembered in `problem`, and the journal stops.
    """

    def __init__(self, path: Path, fd: int, *, fsync_interval_s: float = 1.0) -> None:
        super().__init__(fd)
        self.path = path
        self.fsync_interval_s = fsync_interval_s
        self._started = time.monotonic()
        self.trials = 0
        self._stop = threading.Event()
        self._syncer: threading.Thread | None = None
        try:
            self._hold_lock()
        except OSError:  # pragma: no cover - a file system without locks
            pass

    def start(self, *, run_id: str, started_at: datetime, trial_count: int, cases: list[dict[str, Any]],
              config_snapshot: dict[str, Any]) -> None:
        """The start line: the run and every selected case (`case_plan`), in order."""
        self._started = time.monotonic()
        self._syncer = threading.Thread(target=self._sync_loop, name="trialrun-journal", daemon=True)
        self._syncer.start()
        self._write({"event": "start", "journal_version": JOURNAL_VERSION, "schema_version": SCHEMA_VERSION,
                     "run_id": run_id, "started_at": started_at.isoformat(), "pid": os.getpid(),
                     "host": socket.gethostname(), "trial_count": trial_count, "cases": cases,
                     "config_snapshot": config_snapshot}, sync=True)

    def append(self, case: str, result: TrialResult) -> str:
        """One finished trial: written at once (a killed process loses nothing), on disk within the interval. The
        trial's JSON as written (scrubbed: never a key in an artefact), for the result file to reuse
        (`store.report_text`)."""
        elapsed = round(time.monotonic() - self._started, 3)
        version = secrets_version()  # before the scrub (see _line_log: a secret registered meanwhile is looked for)
        text = scrub_text(result.model_dump_json())
        head = scrub_text('{"event":"trial","case":' + json.dumps(case, ensure_ascii=False) + f',"elapsed_s":{elapsed},'
                          '"result":')
        if self._append(head + text + "}", version=version):
            self.trials += 1
        return text

    def close(self, status: str | None, *, rescrub: bool = True) -> None:
        """Write the end line (unless `status` is None: the run was given up on) and release the file. `rescrub`
        False: the journal is about to go (the result file is being saved); if it stays after all, the caller calls
        `rescrub_if_stale`."""
        if status is not None:
            self._write({"event": "end", "status": status}, sync=True)
        self._stop.set()
        if self._syncer is not None and self._syncer is not threading.current_thread():
            self._syncer.join(5)
        self._close_fd(rescrub=rescrub)

    def remove(self) -> None:
        self._going = True  # nothing to scrub again
        self.close(None)
        try:
            self.path.unlink()
        except OSError:
            pass

    def _write(self, record: dict[str, Any], *, sync: bool) -> None:
        version = secrets_version()
        self._append(scrub_text(json.dumps(record, ensure_ascii=False, default=str)), sync=sync, version=version)

    def _failed(self, exc: OSError) -> str:
        return f"{self.path}: {exc.strerror or exc} (the journal stopped after {self.trials} trial(s))"

    def _sync_loop(self) -> None:
        """fsync what was written since the last one, every `fsync_interval_s`: the bound on what a power loss takes."""
        while not self._stop.wait(self.fsync_interval_s):
            self._sync()


def is_live(path: Path) -> bool:
    """Whether a process is still writing this journal (it holds the file's lock)."""
    return locked(path)


def read_journal(path: Path) -> RunReport:
    """The run a journal records, as a report: "interrupted" unless its end line says otherwise. A last line cut
    short (the process was killed while writing it) is left out; anything else unreadable names the line."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise JournalError(f"{path}: cannot read the journal ({exc.strerror or exc})") from None
    lines = raw.split(b"\n")
    complete, tail = lines[:-1], lines[-1]  # the tail is empty after a whole last line
    if not complete and not tail.strip():
        raise JournalError(f"{path}: the journal is empty (the run was killed before it started)")
    records: list[dict[str, Any]] = []
    for number, line in enumerate(complete + ([tail] if tail.strip() else []), 1):
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            if number == len(complete) + 1:  # a cut-short last line: the trial being written when the run died
                break
            raise JournalError(f"{path}: line {number} is not valid JSON") from None
        if not isinstance(record, dict):
            raise JournalError(f"{path}: line {number} is not a JSON object")
        records.append(record)
    start = records[0] if records else {}
    if start.get("event") != "start":
        raise JournalError(f"{path}: not a trialrun journal (line 1 is not a start line)")
    if int(start.get("journal_version", 0)) > JOURNAL_VERSION:
        raise JournalError(f"{path}: written by a newer trialrun (journal version {start['journal_version']}); upgrade trialrun")
    by_case: dict[str, list[TrialResult]] = {}
    status, elapsed = "interrupted", 0.0
    for number, record in enumerate(records[1:], 2):
        if record.get("event") == "trial":
            elapsed = max(elapsed, float(record.get("elapsed_s") or 0.0))
            try:
                by_case.setdefault(str(record["case"]), []).append(TrialResult.model_validate(record["result"]))
            except (KeyError, ValidationError) as exc:
                raise JournalError(f"{path}: line {number}: not a trial result ({exc.__class__.__name__})") from None
        elif record.get("event") == "end":
            status = str(record.get("status") or "interrupted")
    return _report(start, by_case, status, elapsed)


def _report(start: dict[str, Any], by_case: dict[str, list[TrialResult]], status: str, elapsed: float) -> RunReport:
    results: list[CaseResult] = []
    unfinished: list[str] = []
    for plan in start.get("cases", []):
        common = {"tags": list(plan.get("tags") or []), "mode": plan.get("mode", "deterministic"),
                  "description": plan.get("description"), "metadata": plan.get("metadata") or {}, "title": plan.get("title")}
        name = plan["name"]
        if "skip_reason" in plan:
            results.append(CaseResult(name=name, skipped=True, skip_reason=plan["skip_reason"], **common))
            continue
        trials = sorted(by_case.get(name, []), key=lambda t: t.trial)
        if not trials:
            unfinished.append(name)
            continue
        results.append(CaseResult.from_trials(name, trials, unfinished_trials=max(0, int(plan.get("trials", 1)) - len(trials)),
                                              **common))
    if status == "completed" and unfinished:
        status = "interrupted"
    return RunReport.build(
        results, trial_count=int(start.get("trial_count", 1)), started_at=datetime.fromisoformat(start["started_at"]),
        duration_s=elapsed, status=status, unfinished=unfinished,
        run_id=start.get("run_id"), config_snapshot=start.get("config_snapshot") or {},
    )
