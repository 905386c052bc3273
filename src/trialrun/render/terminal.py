"""The terminal view (rich): the run table, why failing tests failed, the comparison lines, a progress bar.

Everything shown that came from a result (ids, tool names, reasons, statuses: a user's, an agent's or a model's
text) is passed as rich `Text` through `clean`, never as markup: `read [/etc/hosts]` is an id, not a closing tag,
and an escape sequence in a reply is shown as `\x1b`, not sent to the terminal.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from types import TracebackType

from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.segment import Segments
from rich.table import Table
from rich.text import Text

from .._display import clean, markup
from .._scrub import scrub_text
from ..compare import Comparison, delta_lines
from ..results import RunReport
from .text import why_failed

__all__ = ["print_report", "print_comparison", "why_failed", "ending_notes", "RunProgress", "summary_line"]


def _num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _turns(value: float | None) -> str:
    """Mean turns with at most 2 decimals, as every renderer shows them (1.33, 2, 1.5)."""
    return "–" if value is None else f"{value:.2f}".rstrip("0").rstrip(".")


_GAP = 2  # between two columns of the table below: one space of padding and the (blank) divider


#: How a trial that did not complete ended, by the agent's status (the reference agent's; others say their own).
_ENDINGS = {
    "max_turns": "stopped at {limit} with no final response",
    "cost_limit": "stopped at the cost limit (max_cost_usd)",
    "stopped_by_policy": "were stopped by the tool policy",
    "error": "ended in an error",
}


def ending_notes(report: RunReport) -> list[str]:
    """A line per test and way its trials ended other than "completed", passing or not: the rubric can still pass a
    trial the hard turn limit cut off (tool accuracy and turn efficiency reach 0.7 alone), and that must be seen.

        read-file: 1 of 1 trials stopped at turn_limit 25 with no final response
    """
    limit = report.config_snapshot.get("turn_limit")
    lines = []
    for case in report.graded_cases:
        counts = Counter(t.status for t in case.trials if t.status not in (None, "completed"))
        for status, count in counts.items():
            what = _ENDINGS[status] if status in _ENDINGS else f"ended with status {status!r}"
            what = what.replace("{limit}", f"turn_limit {limit}" if limit is not None else "the agent's turn limit")
            lines.append(f"{case.name}: {count} of {len(case.trials)} trials {what}")
    return lines


def print_report(report: RunReport, console: Console, *, saved: str | None = None) -> None:
    """The run as a table (test, score, sub-scores, turns, tools, pass@k when k > 1, result, why).

    The numbers never shrink and a test id is never split: when the console is narrow the tools column wraps
    between tool names, and when even that is not enough the table is printed wider than the console (a CI log or
    a pipe keeps each row's id whole, so it can be searched for).
    """
    multi = any(len(c.trials) > 1 for c in report.cases)
    rows: list[list[str]] = []
    for case in report.graded_cases:
        subs = case.sub_scores or {}
        row = [
            clean(case.name, lines=False),
            _num(case.score),
            _num(subs.get("tool_accuracy")),
            _num(subs.get("turn_efficiency")),
            _num(subs.get("output_quality")),
            _turns(case.turns),
            clean(", ".join(case.tools_used), lines=False) or "–",
        ]
        if multi:
            row += [_num(case.pass_at_1), _num(case.pass_pow_k, 0)]
        rows.append([scrub_text(cell) for cell in row] + ["PASS" if case.passed else "FAIL"])
    numeric = ["score", "acc", "eff", "qual", "turns"] + (["pass@1", "pass^k"] if multi else [])
    headers = ["test", *numeric[:5], "tools used", *numeric[5:], "result"]
    natural = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    fixed = sum(w for i, w in enumerate(natural) if i != 6) + _GAP * (len(headers) - 1)  # all but the tools column
    longest_tool = max([len("tools")] + [len(clean(t, lines=False)) + 1 for c in report.graded_cases for t in c.tools_used])
    tools_width = max(longest_tool, console.width - fixed) if fixed + natural[6] > console.width else None
    needed = fixed + (tools_width or natural[6])
    table = Table(title=Text(f"trialrun {clean(report.run_id or '', lines=False)}".strip()), title_justify="left", expand=False,
                  box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True, padding=(0, 1),
                  caption="acc tool accuracy · eff turn efficiency · qual output quality", caption_justify="left")
    # Every width is known already (`natural`): given to rich, it measures no cell (most of a long table's cost).
    table.add_column("test", no_wrap=True, min_width=natural[0], width=natural[0])
    for position, header in enumerate(numeric[:5], start=1):
        table.add_column(header, justify="right", no_wrap=True, width=natural[position])
    table.add_column("tools used", overflow="fold", width=tools_width or natural[6])
    for position, header in enumerate(numeric[5:], start=7):
        table.add_column(header, justify="right", no_wrap=True, width=natural[position])
    table.add_column("result", no_wrap=True, width=natural[-1])
    for row in rows:
        result = Text(row[-1], style="bold green" if row[-1] == "PASS" else "bold red")
        table.add_row(*(Text(cell) for cell in row[:-1]), result)
    if needed > console.width:  # wider than the console rather than split an id or cut a score
        console.print(Segments(console.render(table, console.options.update_width(needed))), crop=False, soft_wrap=True)
    else:
        console.print(table)
    for case in (c for c in report.graded_cases if not c.passed):
        console.print(Text.assemble(("✗ ", "red"), (clean(case.name, lines=False), "bold"), ": ",
                                    clean(why_failed(case, limit=400))))
    for line in ending_notes(report):
        console.print(Text.assemble(("! ", "yellow"), clean(scrub_text(line))))
    for skipped in report.skipped_cases:
        console.print(Text.assemble(("skipped", "yellow"), f" {clean(scrub_text(skipped.name), lines=False)}: "
                                                         f"{clean(scrub_text(skipped.reason))}"))
    for case in (c for c in report.cases if c.partial):
        console.print(Text.assemble(("partly run ", "yellow"), clean(case.name, lines=False), f": {len(case.trials)} of "
                                    f"{len(case.trials) + case.unfinished_trials} trials finished (interrupted; scored on those)"))
    for name in report.unfinished_cases:
        console.print(Text.assemble(("not finished", "yellow"), f" {clean(name, lines=False)} (interrupted)"))
    console.print(summary_line(report))
    if saved:
        console.print(Text(f"saved {clean(saved)}"))


def summary_line(report: RunReport) -> str:
    """The run in one line (rich markup): `4/5 passed · 1 failed · pass@1 0.80 · pass^k 0.80 · avg score 0.90 ...`."""
    graded = len(report.graded_cases)
    parts = [f"{report.passed_case_count}/{graded} passed"]
    if report.failed_case_count:
        parts.append(f"[red]{report.failed_case_count} failed[/]")
    if report.skipped_case_count:
        parts.append(f"{report.skipped_case_count} skipped")
    parts.append(f"pass@1 {_num(report.pass_at_1)}")
    parts.append(f"pass^k {_num(report.pass_pow_k)}" + (f" (k={report.trial_count})" if report.trial_count > 1 else ""))
    if report.score is not None:
        parts.append(f"avg score {_num(report.score)}")
    if report.cost_usd is not None:
        parts.append(f"cost ${report.cost_usd:.4f}")
    parts.append(f"{report.duration_s:.1f}s")
    if report.status != "completed":
        parts.append(f"[yellow]{markup(report.status, lines=False)}[/]")
    return " · ".join(parts)


def print_comparison(comparison: Comparison, console: Console) -> None:
    """The eval skill's compare lines, coloured: ▲ green, ▼ red, warnings yellow."""
    for line in delta_lines(comparison):
        if line.startswith("WARNING"):
            style = "bold yellow"
        elif line.startswith("note:") or line.endswith("(interrupted)"):
            style = "yellow"
        else:
            style = "green" if "▲" in line else "red" if "▼" in line else ""
        console.print(Text(clean(scrub_text(line)), style=style))


#: Seconds between the plain progress lines written when the output is not a terminal (CI logs).
PLAIN_INTERVAL = 10.0


class RunProgress:
    """Progress of a run, once it has taken more than `delay` seconds (short runs stay quiet).

    On a terminal: a bar with trials done, the passed/failed tally, elapsed time, an ETA and the test that finished
    last. Not on a terminal (a CI log): a plain line every `interval` seconds and when a test finishes its trials,
    instead of silence until the end. `trials` (test name -> trials it runs) tells when a test is finished.
    """

    def __init__(self, console: Console, total: int, *, enabled: bool = True, delay: float = 1.0,
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
            parts.append(f"{finished} done")
        elif self.current:
            parts.append(f"last: {self.current}")
        return " · ".join(parts)

    def _quiet(self) -> bool:
        return time.perf_counter() - self._t0 < self._delay

    def _tick(self) -> None:
        while not self._stopped.wait(self._interval):
            with self._lock:
                if self.done < self.total and not self._quiet():
                    self._console.print(self.line(), markup=False, highlight=False)

    def advance(self, passed: bool, case: str | None = None) -> None:
        with self._lock:
            self.done += 1
            self.failed += 0 if passed else 1
            self.current = case or self.current
            self._progress.update(self._task, advance=1, tally=self._tally(), current=self.current)
            if self._plain and case is not None:
                count = self._finished_trials[case] = self._finished_trials.get(case, 0) + 1
                if count == self._trials.get(case) and not self._quiet():
                    self._console.print(self.line(finished=case), markup=False, highlight=False)

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
