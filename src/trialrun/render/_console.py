"""A run printed to whichever console the CLI has: a `PlainConsole` (not a terminal) gets `_plain`'s lines, without
importing rich, unless the report needs rich's layout; a rich console gets `terminal.print_report`.

Apart from both, so that neither imports the other (`terminal` builds on `_plain`'s layout).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._plain import PlainConsole, report_lines

if TYPE_CHECKING:
    from ..report.results import RunReport

__all__ = ["print_report"]


def print_report(report: RunReport, console: Any, *, saved: str | None = None) -> None:
    """`terminal.print_report` on any console: the same lines, through rich only when they need its layout."""
    if isinstance(console, PlainConsole):
        lines = report_lines(report, console.width, saved=saved)
        if lines is not None:
            console.lines(lines)
            return
        console = console.rich()
    from .terminal import print_report as rich_print_report

    rich_print_report(report, console, saved=saved)
