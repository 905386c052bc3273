"""The terminal view (rich): the run table, why failing tests failed, the comparison lines, a progress bar."""

from __future__ import annotations

import re
import threading
import time
from types import TracebackType

from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from ..compare import Comparison, delta_lines
from ..results import CaseResult, RunReport
from .text import first_reason

__all__ = ["print_report", "print_comparison", "why_failed", "RunProgress"]


def _num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def why_failed(case: CaseResult, limit: int = 90) -> str:
    """One line saying why a case failed (`text.first_reason`), whitespace collapsed and cut to `limit` characters
    so the table's row stays one line; "" for a case that did not fail."""
    text = " ".join(first_reason(case).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_GAP = 2  # between two columns of the table below: one space of padding and the (blank) divider


def _fold_words(text: str, width: int) -> str:
    """`text` broken into lines of at most `width` characters after '-', '_', '.', '/' or a space, so a test id
    like refuse-dangerous-command folds into its words; a word longer than `width` is cut where it must."""
    lines: list[str] = []
    line = ""
    for word in re.findall(r"[^-_./ ]*[-_./ ]|[^-_./ ]+", text):
        while len(word) > width:
            if line:
                lines.append(line.rstrip())
                line = ""
            lines.append(word[:width])
            word = word[width:]
        if len(line) + len(word.rstrip()) > width:
            lines.append(line.rstrip())
            line = ""
        line += word
    if line:
        lines.append(line.rstrip())
    return "\n".join(lines)


def print_report(report: RunReport, console: Console, *, saved: str | None = None) -> None:
    """The run as a table (test, score, sub-scores, turns, tools, pass@k when k > 1, result, why).

    The numbers never shrink: when the terminal is narrow the tools column wraps between tool names and the test
    column folds at the words of the test id, so an 80-column terminal shows every score in full.
    """
    multi = any(len(c.trials) > 1 for c in report.cases)
    rows: list[list[str]] = []
    for case in report.graded_cases:
        subs = case.sub_scores or {}
        row = [
            case.name,
            _num(case.score),
            _num(subs.get("tool_accuracy")),
            _num(subs.get("turn_efficiency")),
            _num(subs.get("output_quality")),
            "–" if case.turns is None else f"{case.turns:g}",
            ", ".join(case.tools_used) or "–",
        ]
        if multi:
            row += [_num(case.pass_at_1), _num(case.pass_pow_k, 0)]
        rows.append(row + ["PASS" if case.passed else "FAIL"])
    numeric = ["score", "acc", "eff", "qual", "turns"] + (["pass@1", "pass^k"] if multi else [])
    headers = ["test", *numeric[:5], "tools used", *numeric[5:], "result"]
    natural = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    fixed = sum(w for i, w in enumerate(natural) if i not in (0, 6)) + _GAP * (len(headers) - 1)
    room = console.width - fixed
    test_width: int | None = None
    tools_width: int | None = None
    longest_tool = max([len("tools")] + [len(t) + 1 for c in report.graded_cases for t in c.tools_used])
    if natural[0] + natural[6] > room and room >= longest_tool + 4:
        # the tools column gives way first (it wraps between names), the test column only what is still missing
        tools_width = max(longest_tool, room - natural[0])
        test_width = room - tools_width
    table = Table(title=f"trialrun {report.run_id or ''}".strip(), title_justify="left", expand=False,
                  box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True, padding=(0, 1),
                  caption="acc tool accuracy · eff turn efficiency · qual output quality", caption_justify="left")
    table.add_column("test", overflow="fold", width=test_width)
    for header in numeric[:5]:
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column("tools used", overflow="fold", width=tools_width)
    for header in numeric[5:]:
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column("result", no_wrap=True)
    for row in rows:
        name = _fold_words(row[0], test_width) if test_width else row[0]
        result = Text(row[-1], style="bold green" if row[-1] == "PASS" else "bold red")
        table.add_row(name, *row[1:-1], result)
    console.print(table)
    for case in (c for c in report.graded_cases if not c.passed):
        console.print(Text.assemble(("✗ ", "red"), (case.name, "bold"), ": ", why_failed(case, limit=400)))
    for skipped in report.skipped_cases:
        console.print(f"[yellow]skipped[/] {skipped.name}: {skipped.reason}")
    for name in report.unfinished_cases:
        console.print(f"[yellow]not finished[/] {name} (interrupted)")
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
        parts.append(f"[yellow]{report.status}[/]")
    console.print(" · ".join(parts))
    if saved:
        console.print(f"saved {saved}")


def print_comparison(comparison: Comparison, console: Console) -> None:
    """The eval skill's compare lines, coloured: ▲ green, ▼ red, warnings yellow."""
    for line in delta_lines(comparison):
        style = "bold yellow" if line.startswith("WARNING") else "green" if "▲" in line else "red" if "▼" in line else None
        console.print(Text(line, style=style or ""))


class RunProgress:
    """A progress bar that appears only on a terminal, and only once the run has taken more than `delay` seconds."""

    def __init__(self, console: Console, total: int, *, enabled: bool = True, delay: float = 1.0) -> None:
        self.total = total
        self.done = 0
        self.failed = 0
        self._enabled = enabled and console.is_terminal and total > 0
        self._progress = Progress(
            TextColumn("[bold]running[/]"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[failed]}"),
            TimeElapsedColumn(), console=console, transient=True,
        )
        self._task = self._progress.add_task("trials", total=total, failed="")
        self._lock = threading.Lock()
        self._started = False
        self._timer = threading.Timer(delay, self._start) if self._enabled else None
        self._t0 = time.perf_counter()

    def _start(self) -> None:
        with self._lock:
            if not self._started and self.done < self.total:
                self._progress.start()
                self._started = True

    def advance(self, passed: bool) -> None:
        with self._lock:
            self.done += 1
            self.failed += 0 if passed else 1
            self._progress.update(self._task, advance=1, failed=f"[red]{self.failed} failed[/]" if self.failed else "")

    def __enter__(self) -> RunProgress:
        if self._timer is not None:
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def stop(self) -> None:
        """Take the bar off the screen (also before the process exits without unwinding)."""
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            if self._started:
                self._progress.stop()
                self._started = False
