"""The terminal view (rich): the run table, why failing tests failed, the comparison lines, a progress bar."""

from __future__ import annotations

import threading
import time
from types import TracebackType

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


def print_report(report: RunReport, console: Console, *, saved: str | None = None) -> None:
    """The run as a table (test, score, sub-scores, turns, tools, pass@k when k > 1, result, why)."""
    multi = any(len(c.trials) > 1 for c in report.cases)
    table = Table(title=f"trialrun {report.run_id or ''}".strip(), title_justify="left", expand=False)
    table.add_column("test", no_wrap=True)
    table.add_column("score", justify="right")
    table.add_column("tool acc.", justify="right")
    table.add_column("turn eff.", justify="right")
    table.add_column("quality", justify="right")
    table.add_column("turns", justify="right")
    table.add_column("tools used", overflow="fold")
    if multi:
        table.add_column("pass@1", justify="right")
        table.add_column("pass^k", justify="right")
    table.add_column("result", no_wrap=True)
    failing: list[CaseResult] = []
    for case in report.graded_cases:
        subs = case.sub_scores or {}
        result = Text("PASS", style="bold green") if case.passed else Text("FAIL", style="bold red")
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
        table.add_row(*row, result)
        if not case.passed:
            failing.append(case)
    console.print(table)
    for case in failing:
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
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            if self._started:
                self._progress.stop()
                self._started = False
