"""Progress of a run: a rich bar on a terminal, plain lines in a CI log; rich is imported only for the bar.

A test's id is shown as data: scrubbed of secrets (an id may hold a token's value) and escaped, for the bar as
rich markup (`read [/etc/hosts]` is an id, not a closing tag)."""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Any

from .._scrub import scrub_text
from .._util.display import clean, markup

__all__ = ["RunProgress", "PLAIN_INTERVAL"]


#: Seconds between the plain progress lines written when the output is not a terminal (CI logs).
PLAIN_INTERVAL = 10.0


class RunProgress:
    """Progress of a run, once it has taken more than `delay` seconds (short runs stay quiet).

    On a terminal: a bar with trials done, the passed/failed tally, elapsed time, an ETA and the test that finished
    last. Not on a terminal (a CI log): a plain line once the run has lasted `delay`, when the first trial ends,
    when a test finishes its trials and every `interval` seconds, instead of silence until the end. `trials` (test name -> trials it runs) tells when a test is finished.
    """

    def __init__(self, console: Any, total: int, *, enabled: bool = True, delay: float = 1.0,
                 interval: float = PLAIN_INTERVAL, trials: dict[str, int] | None = None) -> None:
        self.total = total
        self.done = 0
        self.failed = 0
        self.current = ""
        self._console = console
        self._trials = dict(trials or {})
        self._finished_trials: dict[str, int] = {}
        self._bar = enabled and console.is_terminal and total > 0
        self._plain = enabled and not console.is_terminal and total > 0
        self._delay = delay
        self._interval = interval
        self._progress: Any = None  # the rich bar, on a terminal only (`console` is a rich Console there)
        if self._bar:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]running[/]"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[tally]}"),
                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.fields[current]}"),
                console=console, transient=True,
            )
            self._task = self._progress.add_task("trials", total=total, tally="", current="")
        self._lock = threading.Lock()
        self._started = False
        self._stopped = threading.Event()
        self._timer = threading.Timer(delay, self._start) if self._bar else None
        self._ticker = threading.Thread(target=self._tick, daemon=True) if self._plain else None
        self._t0 = time.perf_counter()

    def _start(self) -> None:
        with self._lock:
            if not self._started and self.done < self.total:
                self._progress.start()
                self._started = True

    def _tally(self) -> str:
        passed = self.done - self.failed
        return f"[green]{passed} passed[/]" + (f" [red]{self.failed} failed[/]" if self.failed else "")

    def line(self, finished: str | None = None) -> str:
        """The plain progress line: `progress: 3/10 trials · 2 passed · 1 failed · 4.2s · ETA 9s · read-file done`."""
        elapsed = time.perf_counter() - self._t0
        parts = [f"progress: {self.done}/{self.total} trials", f"{self.done - self.failed} passed"]
        if self.failed:
            parts.append(f"{self.failed} failed")
        parts.append(f"{elapsed:.1f}s")
        if 0 < self.done < self.total:
            parts.append(f"ETA {elapsed / self.done * (self.total - self.done):.0f}s")
        if finished:
            parts.append(f"{clean(scrub_text(finished), lines=False)} done")
        elif self.current:
            parts.append(f"last: {clean(scrub_text(self.current), lines=False)}")
        return " · ".join(parts)

    def _quiet(self) -> bool:
        return time.perf_counter() - self._t0 < self._delay

    def _tick(self) -> None:
        """A plain line once the run has lasted `delay` (a CI log then shows from the start that it runs, and how far
        it is), then every `interval`."""
        wait = self._delay
        while not self._stopped.wait(wait):
            wait = self._interval
            with self._lock:
                if self.done < self.total and not self._quiet():
                    self._console.print(self.line(), markup=False, highlight=False, emoji=False)

    def advance(self, passed: bool, case: str | None = None) -> None:
        with self._lock:
            self.done += 1
            self.failed += 0 if passed else 1
            self.current = case or self.current
            if self._progress is not None:
                self._progress.update(self._task, advance=1, tally=self._tally(),
                                      current=markup(scrub_text(self.current), lines=False))
            if self._plain and case is not None:
                count = self._finished_trials[case] = self._finished_trials.get(case, 0) + 1
                if self._quiet():
                    return
                if count == self._trials.get(case):
                    self._console.print(self.line(finished=case), markup=False, highlight=False, emoji=False)
                elif self.done == 1:  # the first trial: its time is the first estimate of the run's
                    self._console.print(self.line(), markup=False, highlight=False, emoji=False)

    def __enter__(self) -> RunProgress:
        if self._timer is not None:
            self._timer.daemon = True
            self._timer.start()
        if self._ticker is not None:
            self._ticker.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def stop(self) -> None:
        """Take the bar off the screen (also before the process exits without unwinding)."""
        if self._timer is not None:
            self._timer.cancel()
        self._stopped.set()
        with self._lock:
            if self._started:
                self._progress.stop()
                self._started = False
