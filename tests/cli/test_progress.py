"""Run progress: on a terminal a bar with the tally, an ETA and the last test; not on a terminal (a CI log) a plain
line from the delay on, when the first trial ends, every interval and when a test finishes its trials; nothing for a
run shorter than the delay."""

from __future__ import annotations

import io
import time

from rich.console import Console

from trialrun.render.terminal import RunProgress


def _plain() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=False, width=200), out


def test_plain_lines_at_the_end_of_each_test_and_every_interval() -> None:
    console, out = _plain()
    with RunProgress(console, 3, delay=0, interval=0.2, trials={"a": 2, "b": 1}) as progress:
        progress.advance(True, "a")  # the first trial: a line, though a has one more trial to go
        assert out.getvalue().splitlines()[-1].startswith("progress: 1/3 trials · 1 passed · ")
        progress.advance(False, "a")
        first = out.getvalue().splitlines()[-1]
        assert first.startswith("progress: 2/3 trials · 1 passed · 1 failed · ")
        assert "ETA " in first and first.endswith("a done")
        before = len(out.getvalue().splitlines())
        deadline = time.monotonic() + 5
        while len(out.getvalue().splitlines()) <= before and time.monotonic() < deadline:
            time.sleep(0.05)
        tick = out.getvalue().splitlines()[before]
        assert tick.startswith("progress: 2/3 trials") and tick.endswith("last: a")  # the periodic line
        progress.advance(True, "b")
    last = out.getvalue().splitlines()[-1]
    assert last.startswith("progress: 3/3 trials · 2 passed · 1 failed") and last.endswith("b done")
    assert "ETA" not in last


def test_plain_lines_start_with_the_first_trial() -> None:
    """A CI log hears of a long run from its start: a line once the delay is past (before any trial ended, long
    before the first interval), and one when the first trial ends, even while its test has trials to go."""
    console, out = _plain()
    with RunProgress(console, 4, delay=0.1, interval=600, trials={"a": 4}) as progress:
        deadline = time.monotonic() + 5
        while not out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert out.getvalue().splitlines()[0].startswith("progress: 0/4 trials · 0 passed · ")
        progress.advance(True, "a")
        lines = out.getvalue().splitlines()
        assert len(lines) == 2 and lines[1].startswith("progress: 1/4 trials · 1 passed") and "ETA " in lines[1]
        progress.advance(True, "a")
        assert len(out.getvalue().splitlines()) == 2  # the second trial of four: nothing new to say


def test_a_run_shorter_than_the_delay_prints_nothing() -> None:
    console, out = _plain()
    with RunProgress(console, 2, delay=60, interval=0.05, trials={"a": 2}) as progress:
        progress.advance(True, "a")
        time.sleep(0.2)
        progress.advance(True, "a")
    assert out.getvalue() == ""


def test_the_terminal_bar_shows_the_tally_the_eta_and_the_last_test() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=160, color_system=None)
    with RunProgress(console, 4, delay=0, trials={"read-file": 2, "list-dir": 2}) as progress:
        time.sleep(0.1)
        progress.advance(True, "read-file")
        progress.advance(False, "list-dir")
        progress._progress.refresh()
        shown = out.getvalue()
    assert "2/4" in shown and "1 passed" in shown and "1 failed" in shown
    assert "ETA" in shown and "list-dir" in shown
    assert "progress:" not in shown  # no plain lines on a terminal
