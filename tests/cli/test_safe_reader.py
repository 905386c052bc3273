"""The one safe reader (`trialrun._util.safe_read`) that everything read from a results folder (and every file the CLI
is handed) goes through: a FIFO or a device is never opened (looked at first), a FIFO swapped in after that look
does not block (O_NONBLOCK) and is refused once open (fstat), a file swapped for another is refused, sizes and
line lengths are bounded. Each read runs in a thread the test gives up on after 5 s, so a reader that blocks fails
the test instead of hanging it."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from trialrun._util import safe_read as _safe_read
from trialrun._util.files import locked
from trialrun._util.safe_read import UnreadableFile


def _within(seconds: float, work: Callable[[], Any]) -> Any:
    """`work()`'s result (or exception), failing the test when it has not returned within `seconds`."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"the read did not return within {seconds} s (it blocked)", pytrace=False)
    if "error" in box:
        raise box["error"]
    return box["value"]


@pytest.fixture
def fifo(tmp_path: Path) -> Any:
    path = tmp_path / "results_1.jsonl"
    os.mkfifo(path)
    yield path
    try:  # a reader that did block (a regression) gets its end of file
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


def test_a_fifo_is_refused_without_being_opened(fifo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda path, *a, **k: opened.append(str(path)) or real_open(path, *a, **k))
    with pytest.raises(UnreadableFile, match=r"results_1\.jsonl: is a FIFO \(named pipe\), not a regular file"):
        _within(5, lambda: _safe_read.read_bytes(fifo, "journal"))
    assert str(fifo) not in opened


def test_a_fifo_swapped_in_after_the_look_does_not_block_and_is_refused(fifo: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    regular = tmp_path / "regular"
    regular.write_text("{}")
    looked = os.stat(regular)
    real_stat = os.stat
    monkeypatch.setattr(os, "stat", lambda path, *a, **k: looked if Path(path) == fifo else real_stat(path, *a, **k))
    with pytest.raises(UnreadableFile, match=r"is a FIFO \(named pipe\), not a regular file"):
        _within(5, lambda: _safe_read.read_bytes(fifo, "journal"))


def test_a_file_swapped_for_another_between_the_look_and_the_open_is_refused(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text("{}")
    second.write_text("{}")
    other = os.stat(second)
    real_stat = os.stat
    monkeypatch.setattr(os, "stat", lambda path, *a, **k: other if Path(path) == first else real_stat(path, *a, **k))
    with pytest.raises(UnreadableFile, match="it was replaced while being opened"):
        _safe_read.read_bytes(first, "result file")


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/null", "/dev/tty"])
def test_a_link_to_a_device_is_refused_at_once(tmp_path: Path, target: str) -> None:
    if not os.path.exists(target):
        pytest.skip(f"{target} does not exist here")
    link = tmp_path / "results_2.exchanges.ndjson"
    os.symlink(target, link)
    with pytest.raises(UnreadableFile, match="is a character device, not a regular file"):
        _within(5, lambda: list(_safe_read.lines(link, "exchanges file")))


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as handle:
        handle.truncate(10 * 2**20 + 1)  # sparse: nothing is written, nothing would be read
    with pytest.raises(UnreadableFile, match=r"too large \(10\.0 MiB; the limit is 10\.0 MiB\)"):
        _safe_read.read_bytes(big, "result file", limit=10 * 2**20)


def test_lines_are_bounded_and_the_last_cut_short_one_is_marked(tmp_path: Path) -> None:
    path = tmp_path / "results_3.jsonl"
    path.write_bytes(b'{"a": 1}\n' + b"x" * 5000 + b"\n" + b'{"b": 2}\n' + b'{"c": 3')
    got = list(_safe_read.lines(path, "journal", line_limit=1000))
    assert [(line.number, line.data, line.whole, line.too_long) for line in got] == [
        (1, b'{"a": 1}', True, False), (2, b"", True, True), (3, b'{"b": 2}', True, False), (4, b'{"c": 3', False, False)]
    wanted = list(_safe_read.lines(path, "journal", wanted=b'{"b"'))
    assert [line.data for line in wanted] == [b'{"a": 1}', b"", b'{"b": 2}', b""]  # the first line is always given


def test_a_journal_lock_check_on_a_fifo_is_false_and_never_blocks(fifo: Path) -> None:
    assert _within(5, lambda: locked(fifo)) is False


def test_a_sidecar_line_over_the_limit_is_said_to_be_too_long(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from trialrun.report.exchanges import read as _exchange_read

    monkeypatch.setattr(_exchange_read, "LINE_MAX_BYTES", 1000)
    path = tmp_path / "results_4.exchanges.ndjson"
    big = {"event": "trial", "case": "c", "trial": 1, "exchanges": [{"n": 1, "request": {"body_text": "x" * 5000}}]}
    path.write_text(json.dumps({"event": "start", "exchanges_version": 1}) + "\n"
                    + json.dumps(big, separators=(",", ":")) + "\n")
    found = _exchange_read.read_trial_exchanges(path, "c", 1)
    assert found.problem == (f"{path.name} line 2: the exchanges of trial 1 of 'c' take more than 1,000 bytes; "
                             "they are not shown")
    assert _exchange_read.read_trial_exchanges(path, "c", 2).problem.startswith(f"{path.name} has no exchanges")


def test_a_journal_of_many_bad_lines_is_a_few_notes_and_a_count(tmp_path: Path) -> None:
    from trialrun.report._history import read_journal

    path = tmp_path / "results_5.jsonl"
    start = '{"event": "start", "journal_version": 1, "started_at": "2026-01-01T00:00:00+00:00", "cases": []}\n'
    path.write_text(start + '{"event": "trial", "case": 5, "result": {"passed": true}}\n' * 1000)
    live = read_journal(path)
    assert live is not None and len(live.problems) == 21
    assert live.problems[0] == f"{path.name} line 2: case must be text"
    assert live.problems[-1] == f"{path.name}: 980 more line(s) like these"
