"""A results folder as a history: its runs oldest first, what changed between each and the one before, the
series a trend chart draws, and the runs still in progress (read from their journals).

Everything a history view shows is computed here, once, from the result files, with the project's own rules:
the config diff and the regressions are `compare.compare`'s (never a second copy), the numbers are the
`RunReport`'s. The journal of a run in progress is read by ONE function, `read_journal`, so a change of the
journal's format touches only it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from .._util.safe_read import UnreadableFile
from ._text_diff import diff_size
from .compare import Comparison, ConfigChange, compare, format_value
from .journal import read_lines
from .results import RunReport
from .store import ResultFileError, ResultsStore, load_report

__all__ = ["snapshot_label", "snapshot_model", "snapshot_rubric", "RunEntry", "History", "LiveRun", "TestPoint", "TrendPoint", "load_history", "read_journal",
           "config_line", "test_history", "suite_trend", "flaky_pair"]

JOURNAL_SUFFIX = ".jsonl"


def snapshot_label(snapshot: dict[str, Any]) -> str:
    """A run's labels (`--label k=v`) in one line, from its config snapshot (a saved run's or a journal's)."""
    labels = snapshot.get("labels")
    if isinstance(labels, dict) and labels:
        return ", ".join(f"{k}={v}" for k, v in labels.items())
    return ""


def snapshot_model(snapshot: dict[str, Any]) -> str:
    for key in ("model", "model_name"):
        if isinstance(snapshot.get(key), str):
            return str(snapshot[key])
    agent = snapshot.get("agent")
    if isinstance(agent, dict) and agent.get("model"):
        return str(agent["model"])
    return ""


def snapshot_rubric(snapshot: dict[str, Any]) -> str:
    value = snapshot.get("rubric", snapshot.get("judge"))
    return "" if value is None else format_value(value)


@dataclass
class RunEntry:
    """One saved run and how it differs from the run before it (None for the oldest)."""

    stem: str
    path: Path
    report: RunReport
    previous: RunEntry | None = None
    comparison: Comparison | None = None

    @property
    def config_changes(self) -> list[ConfigChange]:
        return self.comparison.config_changes if self.comparison is not None else []

    @property
    def label(self) -> str:
        return snapshot_label(self.report.config_snapshot)

    @property
    def model(self) -> str:
        return snapshot_model(self.report.config_snapshot)

    @property
    def rubric(self) -> str:
        """The rubric (or judge) that scored the run, when the snapshot names one."""
        return snapshot_rubric(self.report.config_snapshot)

    @property
    def pass_rate(self) -> float | None:
        graded = len(self.report.graded_cases)
        return self.report.passed_case_count / graded if graded else None


@dataclass
class LiveRun:
    """What a run's journal says so far: the same numbers the terminal's progress shows."""

    stem: str
    path: Path
    run_id: str | None = None
    started_at: str | None = None
    total: int = 0
    done: int = 0
    failed: int = 0
    elapsed_s: float = 0.0
    current: str | None = None
    status: str | None = None  # "completed" / "interrupted" once the end line is written
    cases: dict[str, dict[str, int]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    label: str = ""
    model: str = ""
    rubric: str = ""
    trial_count: int | None = None
    #: Why the journal itself cannot be read (not a regular file, too large), None when it was read
    unreadable: str | None = None

    @property
    def passed(self) -> int:
        return self.done - self.failed

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the pace so far (the terminal's ETA), None before the first trial or after the last."""
        if not 0 < self.done < self.total:
            return None
        return self.elapsed_s / self.done * (self.total - self.done)

    def as_json(self) -> dict[str, Any]:
        return {"eta_s": None if self.eta_s is None else round(self.eta_s, 1), "stem": self.stem, "run_id": self.run_id, "started_at": self.started_at, "total": self.total,
                "done": self.done, "passed": self.passed, "failed": self.failed, "elapsed_s": round(self.elapsed_s, 3),
                "current": self.current, "status": self.status, "cases": self.cases, "problems": self.problems,
                "label": self.label, "model": self.model, "rubric": self.rubric, "trial_count": self.trial_count}


@dataclass
class History:
    directory: Path
    runs: list[RunEntry] = field(default_factory=list)  # oldest first
    live: list[LiveRun] = field(default_factory=list)
    skipped: dict[Path, str] = field(default_factory=dict)

    def run(self, stem: str) -> RunEntry | None:
        return next((r for r in self.runs if r.stem == stem or r.report.run_id == stem), None)

    def test_names(self) -> list[str]:
        names: dict[str, None] = {}
        for entry in reversed(self.runs):
            for case in entry.report.cases:
                names.setdefault(case.name)
        return list(names)


#: path -> ((device, inode, size, mtime), its report): one entry a file, replaced when the file changes.
_cache: dict[str, tuple[tuple[int, int, int, int], RunReport]] = {}


def _load(path: Path) -> RunReport:
    """A result file, loaded once per version (device, inode, size, mtime): a viewer re-reads the folder on every
    page (from several threads at once: at worst a file is loaded twice)."""
    stat = path.stat()
    key = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
    cached = _cache.get(str(path))
    if cached is not None and cached[0] == key:
        return cached[1]
    report = load_report(path)
    _cache[str(path)] = (key, report)
    return report


def load_history(directory: str | os.PathLike[str]) -> History:
    """The runs of a results folder (oldest first) and the runs in progress. Files that do not load are listed in
    `skipped` with why, never silently dropped."""
    store = ResultsStore(directory)
    history = History(store.directory)
    previous: RunEntry | None = None
    files = store.files()
    for path in files:
        try:
            report = _load(path)
        except (ResultFileError, OSError) as exc:
            history.skipped[path] = getattr(exc, "reason", str(exc))
            continue
        entry = RunEntry(path.name.split(".")[0], path, report, previous)
        if previous is not None:
            entry.comparison = compare(previous.report, report)
        history.runs.append(entry)
        previous = entry
    saved = {p.name for p in files}
    if store.directory.is_dir():
        for path in sorted(store.directory.glob(f"results_*{JOURNAL_SUFFIX}")):
            if path.name in saved or path.with_suffix(".json").exists():
                continue  # read as a saved (interrupted) run, or already finished
            live = read_journal(path)
            if live is not None:
                history.live.append(live)
    return history


def read_journal(path: Path) -> LiveRun | None:
    """The progress of a run from its journal (docs/journal.md), read by the journal's own line reader
    (`journal.read_lines`): a start line, a line per finished trial, an end line. A missing journal is None (the
    run finished and removed it); a last line cut short is skipped (the run is writing it); a file that cannot be
    read (a FIFO, a device) and lines that are not what the format says are listed in `problems`, by line and
    field ("results_X.jsonl line 1: cases must be a list"), and the rest is still counted."""
    live = LiveRun(path.name.removesuffix(JOURNAL_SUFFIX), path)
    try:
        read = read_lines(path)
    except UnreadableFile as exc:
        if exc.missing:
            return None
        live.unreadable = exc.reason
        live.problems.append(f"{path.name}: {exc.reason}")
        return live
    live.problems = [f"{path.name} {note}" for note in read.problems]
    if read.more_problems:
        live.problems.append(f"{path.name}: {read.more_problems} more line(s) like these")
    if read.start is not None:
        live.run_id = read.start.run_id
        live.started_at = read.start.started_at.isoformat()
        snapshot = read.start.config_snapshot if isinstance(read.start.config_snapshot, dict) else {}
        live.label, live.model, live.rubric = snapshot_label(snapshot), snapshot_model(snapshot), snapshot_rubric(snapshot)
        live.trial_count = read.start.trial_count
        for case in read.start.cases:
            if case.skip_reason is None:
                live.cases[case.name] = {"trials": case.trials, "done": 0, "failed": 0}
                live.total += case.trials
    for _, trial, _ in read.trials:
        passed = trial.result.passed
        live.done += 1
        live.failed += 0 if passed else 1
        live.current = trial.case
        live.elapsed_s = max(live.elapsed_s, trial.elapsed_s)
        counts = live.cases.setdefault(trial.case, {"trials": 0, "done": 0, "failed": 0})
        counts["done"] += 1
        counts["failed"] += 0 if passed else 1
    if read.end is not None:
        live.status = read.end.status
    return live


def config_line(changes: list[ConfigChange], *, limit: int = 160) -> str:
    """The config changes since the previous run in one line: `model: a -> b; trials: 1 -> 3` (cut at `limit`)."""
    text = "; ".join(f"{c.key}: {format_value(c.before)} -> {format_value(c.after)}" if c.diff is None
                     else f"{c.key}: changed ({diff_size(c.diff)})" for c in changes)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class TestPoint:
    """One test in one run: what its history chart draws."""

    stem: str
    when: datetime
    score: float | None
    pass_at_1: float | None
    passed: bool | None
    config_changed: bool
    regression: bool


def test_history(history: History, name: str) -> list[TestPoint]:
    """The runs that graded test `name`, oldest first; a regression is one `compare` flags against the run before."""
    points = []
    for entry in history.runs:
        case = next((c for c in entry.report.cases if c.name == name and not c.skipped), None)
        if case is None:
            continue
        regression = entry.comparison is not None and name in entry.comparison.regressions
        points.append(TestPoint(entry.stem, entry.report.started_at, case.score, case.pass_at_1, case.passed,
                                bool(entry.config_changes), regression))
    return points


@dataclass(frozen=True)
class TrendPoint:
    """One run of the suite: what the trend chart draws."""

    stem: str
    when: datetime
    pass_rate: float | None
    score: float | None
    pass_pow_k: float | None
    config_changed: bool
    regressions: int


def suite_trend(history: History) -> list[TrendPoint]:
    return [TrendPoint(e.stem, e.report.started_at, e.pass_rate, e.report.score, e.report.pass_pow_k,
                       bool(e.config_changes), len(e.comparison.regressions) if e.comparison else 0)
            for e in history.runs]


@dataclass(frozen=True)
class DiffPair:
    """Two trials of one test to put side by side: (run stem, trial number) before and after."""

    before: tuple[str, int]
    after: tuple[str, int]


def _trials(entry: RunEntry, name: str) -> list[Any]:
    case = next((c for c in entry.report.cases if c.name == name), None)
    return list(case.trials) if case is not None else []


def flaky_pair(trials: Sequence[Any]) -> tuple[int, int] | None:
    """(a passing trial, a failing trial) of one test in one run (the first of each), when it has both: a flaky
    test, whose failing trial is best read beside a passing one; None otherwise."""
    passing = next((t.trial for t in trials if t.passed), None)
    failing = next((t.trial for t in trials if not t.passed), None)
    return None if passing is None or failing is None else (passing, failing)


def diff_pair(name: str, before: RunEntry, after: RunEntry) -> DiffPair:
    """The trials a diff of `name` shows by default: a failing trial of the later run (its first; else its first
    trial) against a passing trial of the earlier run, or, when the earlier run has none but the later run passed
    some (a flaky test), against the later run's own passing trial; else the earlier run's first trial."""
    later, earlier = _trials(after, name), _trials(before, name)
    failing = next((t.trial for t in later if not t.passed), later[0].trial if later else 1)
    passing = next((t.trial for t in earlier if t.passed), None)
    if passing is not None:
        return DiffPair((before.stem, passing), (after.stem, failing))
    flaky = next((t.trial for t in later if t.passed), None)
    if flaky is not None and flaky != failing:
        return DiffPair((after.stem, flaky), (after.stem, failing))
    return DiffPair((before.stem, earlier[0].trial if earlier else 1), (after.stem, failing))
