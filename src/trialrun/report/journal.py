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
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .._scrub import scrub_text, secrets_version
from .._util import safe_read as _safe_read
from .._util.files import locked
from ._file_models import JournalEnd, JournalStart, JournalTrial, problem, validated
from ._line_log import LineAppender
from .results import SCHEMA_VERSION, CaseResult, RunReport, TrialResult

__all__ = ["Journal", "JournalError", "JournalLines", "JOURNAL_VERSION", "read_journal", "read_lines", "is_live",
           "case_plan"]

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
    """Whether a process is still writing this journal (it holds the file's lock; a FIFO or a device named like a
    journal is never opened, so it is not live)."""
    return locked(path)


#: A journal holds what a result file holds (every trial), so it may be as large; a line is one trial.
MAX_BYTES = 2**30
LINE_MAX_BYTES = 256 * 2**20
#: Line problems kept as notes; more are counted.
MAX_PROBLEMS = 20


@dataclass
class JournalLines:
    """A journal read line by line into its typed lines (`_file_models`): the start line, each trial line (with
    its line number and its `result` as the file holds it), the end line, and `problems`, a note per line that is
    not what docs/journal.md says ("line 1: cases must be a list"). A last line cut short (the run is writing it,
    or was killed while it did) is no problem: it is left out."""

    path: Path
    start: JournalStart | None = None
    trials: list[tuple[int, JournalTrial, dict[str, Any]]] = field(default_factory=list)
    end: JournalEnd | None = None
    problems: list[str] = field(default_factory=list)
    #: True when the first line is not a start line (not a trialrun journal at all), or one of a newer version
    foreign: bool = False
    #: Problems past the first MAX_PROBLEMS, counted, not kept (a file of a million bad lines is one note's worth)
    more_problems: int = 0

    def note(self, text: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(text)
        else:
            self.more_problems += 1


def read_lines(path: Path) -> JournalLines:
    """The journal at `path`, typed line by line. UnreadableFile (`_safe_read`) when the file itself cannot be
    read: missing, not a regular file (a FIFO, /dev/zero), too large."""
    read = JournalLines(path)
    first = True
    for line in _safe_read.lines(path, "journal", limit=MAX_BYTES, line_limit=LINE_MAX_BYTES):
        where = f"line {line.number}"
        if line.too_long:
            read.note(f"{where}: longer than {_safe_read.size_text(LINE_MAX_BYTES)}; not read")
            continue
        if not line.data.strip():
            continue
        try:
            record = json.loads(line.data)
        except (ValueError, RecursionError):
            if line.whole:  # a last line without its newline is being written, or was cut short by a kill
                read.note(f"{where}: not valid JSON")
            continue
        if not isinstance(record, dict):
            read.note(f"{where}: not a JSON object")
            continue
        if first:
            first = False
            if not _start(read, record, where):
                return read
            continue
        kind = record.get("event")
        if kind == "trial":
            trial = validated(JournalTrial, record)
            if isinstance(trial, str):
                read.note(f"{where}: {trial}")
            else:
                read.trials.append((line.number, trial, record["result"]))
        elif kind == "end":
            end = validated(JournalEnd, record)
            if isinstance(end, str):
                read.note(f"{where}: {end}")
            else:
                read.end = end
    return read


def _start(read: JournalLines, record: dict[str, Any], where: str) -> bool:
    """Read the start line into `read`; False when the rest of the file is not worth reading (not a journal, or a
    newer one)."""
    if record.get("event") != "start":
        read.foreign = True
        read.note(f"{where}: not a start line; this is not a trialrun journal")
        return False
    version = record.get("journal_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > JOURNAL_VERSION:
        read.foreign = True
        read.note(f"{where}: written by a newer trialrun (journal version {version}); upgrade trialrun")
        return False
    start = validated(JournalStart, record)
    if isinstance(start, str):
        read.note(f"{where}: {start}")
    else:
        read.start = start
    return True


def read_journal(path: Path) -> RunReport:
    """The run a journal records, as a report: "interrupted" unless its end line says otherwise. A last line cut
    short (the process was killed while writing it) is left out; anything else unreadable is a JournalError naming
    the file, the line and the field."""
    try:
        read = read_lines(path)
    except _safe_read.UnreadableFile as exc:
        raise JournalError(f"{path}: {exc.reason}") from None
    if read.start is None and not read.problems:
        raise JournalError(f"{path}: the journal is empty (the run was killed before it started)")  # or cut short
    if read.problems:
        more = len(read.problems) - 1 + read.more_problems
        raise JournalError(f"{path}: {read.problems[0]}" + (f" (and {more} more line(s))" if more else ""))
    assert read.start is not None
    by_case: dict[str, list[TrialResult]] = {}
    elapsed = 0.0
    for number, trial, result in read.trials:
        elapsed = max(elapsed, trial.elapsed_s)
        try:
            by_case.setdefault(trial.case, []).append(TrialResult.model_validate(result))
        except ValidationError as exc:
            raise JournalError(f"{path}: line {number}: {problem(exc, prefix='result')}") from None
    status = read.end.status if read.end is not None else "interrupted"
    try:
        return _report(read.start, by_case, status, elapsed)
    except ValidationError as exc:  # the lines were each right, but do not make a run together
        raise JournalError(f"{path}: line 1: {problem(exc)}") from None


def _report(start: JournalStart, by_case: dict[str, list[TrialResult]], status: str, elapsed: float) -> RunReport:
    results: list[CaseResult] = []
    unfinished: list[str] = []
    for plan in start.cases:
        common: dict[str, Any] = {"tags": list(plan.tags), "mode": plan.mode, "description": plan.description,
                                  "metadata": dict(plan.metadata), "title": plan.title}
        if plan.skip_reason is not None:
            results.append(CaseResult(name=plan.name, skipped=True, skip_reason=plan.skip_reason, **common))
            continue
        trials = sorted(by_case.get(plan.name, []), key=lambda t: t.trial)
        if not trials:
            unfinished.append(plan.name)
            continue
        results.append(CaseResult.from_trials(plan.name, trials, unfinished_trials=max(0, plan.trials - len(trials)),
                                              **common))
    if status == "completed" and unfinished:
        status = "interrupted"
    return RunReport.build(
        results, trial_count=start.trial_count, started_at=start.started_at, duration_s=elapsed, status=status,
        unfinished=unfinished, run_id=start.run_id, config_snapshot=dict(start.config_snapshot),
    )
