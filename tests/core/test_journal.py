"""The run journal: each trial is readable the moment it is appended (by another reader, before any close), it is
on disk within the fsync interval (a thread syncs; the appends themselves never wait for the disk), and its lines
are the format docs/journal.md documents."""

from __future__ import annotations

import json
import os
import re
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

import trialrun as tr
from trialrun.report.journal import case_plan, read_journal
from trialrun.report.store import ResultsStore

DOCS = Path(__file__).resolve().parents[2] / "docs" / "journal.md"


def _trial_result() -> tr.TrialResult:
    report = tr.evaluate([tr.Case(name="a", invoke=lambda ctx: "x", expect_outcome=[tr.expect.equals("x")])])
    return report.cases[0].trials[0]


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, int]]:
    """Every fsync: when, and how big the journal was then."""
    seen: list[tuple[float, int]] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        seen.append((time.monotonic(), os.fstat(fd).st_size))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return seen


def _start(tmp_path: Path, interval: float) -> tuple[ResultsStore, object]:
    store = ResultsStore(tmp_path)
    case = tr.Case(name="a", invoke=lambda ctx: "x", trials=3, tags=["t"], expect_outcome=[tr.expect.equals("x")])
    stem, journal = store.reserve(datetime.now(timezone.utc))
    journal.fsync_interval_s = interval
    journal.start(run_id="eval_x", started_at=datetime.now(timezone.utc), trial_count=3, cases=[case_plan(case, 3)],
                  config_snapshot={"model": "m"})
    return store, journal


def test_each_trial_is_readable_at_once_and_on_disk_within_the_interval(tmp_path: Path, fsyncs) -> None:
    store, journal = _start(tmp_path, interval=0.2)
    result = _trial_result()
    after_start = len(fsyncs)
    assert after_start == 1  # the start line, synced at once
    began = time.monotonic()
    for _ in range(50):
        journal.append("a", result)  # type: ignore[attr-defined]
        assert len(journal.path.read_text().splitlines()) == 1 + journal.trials  # type: ignore[attr-defined]
    appended = time.monotonic()
    assert len(fsyncs) == after_start  # 50 appends, none waited for the disk
    time.sleep(0.8)
    size = journal.path.stat().st_size  # type: ignore[attr-defined]
    synced = [(when, length) for when, length in fsyncs[after_start:] if length == size]
    assert synced and synced[0][0] - appended < 0.2 + 0.3  # on disk within the interval (and some scheduling)
    assert synced[0][0] - began >= 0  # and only after the appends
    idle = len(fsyncs)
    time.sleep(0.5)
    assert len(fsyncs) == idle  # nothing new written: no more fsyncs
    journal.close("completed")  # type: ignore[attr-defined]
    assert fsyncs[-1][1] == journal.path.stat().st_size  # type: ignore[attr-defined]  # the end line, synced at once
    report = read_journal(journal.path)  # type: ignore[attr-defined]
    assert report.status == "completed" and report.cases[0].trial_count == 50


def test_the_lines_are_the_documented_format(tmp_path: Path) -> None:
    store, journal = _start(tmp_path, interval=1.0)
    journal.append("a", _trial_result())  # type: ignore[attr-defined]
    journal.close("interrupted")  # type: ignore[attr-defined]
    lines = [json.loads(line) for line in journal.path.read_text().splitlines()]  # type: ignore[attr-defined]
    documented = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", DOCS.read_text(), re.S)]
    assert [line["event"] for line in lines] == [doc["event"] for doc in documented] == ["start", "trial", "end"]
    for line, doc in zip(lines, documented):
        assert set(line) == set(doc), line["event"]  # every field the docs show, and no other
    assert set(lines[0]["cases"][0]) == set(documented[0]["cases"][0])
    assert set(lines[1]["result"]) == set(tr.TrialResult.model_fields)


def test_a_failing_disk_stops_the_journal_not_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, journal = _start(tmp_path, interval=1.0)
    result = _trial_result()
    journal.append("a", result)  # type: ignore[attr-defined]

    def full(fd: int, data: bytes) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    journal.append("a", result)  # type: ignore[attr-defined]  # no exception: the run goes on
    monkeypatch.undo()
    journal.append("a", result)  # type: ignore[attr-defined]  # stopped for good: no torn journal with a hole
    assert journal.problem.endswith("No space left on device (the journal stopped after 1 trial(s))")  # type: ignore[attr-defined]
    journal.close(None)  # type: ignore[attr-defined]
    assert read_journal(journal.path).cases[0].trial_count == 1  # type: ignore[attr-defined]
    # its own fsync thread is gone (not the process's thread count: idle tool workers and companions are kept)
    syncer = journal._syncer  # type: ignore[attr-defined]
    assert syncer is not None and not syncer.is_alive()
