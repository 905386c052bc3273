"""The run report as plain lines, for output that is not a terminal (a CI log, a pipe, a file), without rich.

Not on a terminal rich prints no colours, so the run table is text that is known before rich sees it: every width
is already computed. Writing those lines directly is the same output without importing rich (about 50 ms of a CLI
run) or laying out a 200-row table cell by cell (about 75 ms). The tools column wraps between tool names as rich
wraps it; what else needs rich's layout (a tool name wider than its column, which rich folds; a title or legend
wider than the table, which rich wraps; text whose width rich counts differently from its length, wide
characters in a cell or before a tab) makes `report_lines` answer None, and the caller prints with rich, so the
output never depends on which path printed it (tests/cli/test_plain_output.py compares the two at every width).
The rows, the notes under the table and the summary line are built here once, for both paths (`terminal` styles
them).
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from .._scrub import scrub_text
from .._util.display import clean

if TYPE_CHECKING:
    from ..report.results import RunReport

__all__ = ["PlainConsole", "plain_output", "report_lines", "table_layout", "notes_under_table",
           "summary_parts", "ending_notes", "num", "turns", "TableLayout", "CAPTION"]

#: The legend under the run table.
CAPTION = "acc tool accuracy · eff turn efficiency · qual output quality"
_GAP = 2  # between two columns of the table: one space of padding and the (blank) divider
#: Characters other than printable ASCII that the table itself shows, each one column wide for rich too.
_NARROW = frozenset("–")


def num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def turns(value: float | None) -> str:
    """Mean turns with at most 2 decimals, as every renderer shows them (1.33, 2, 1.5)."""
    return "–" if value is None else f"{value:.2f}".rstrip("0").rstrip(".")


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


@dataclass(frozen=True)
class TableLayout:
    """The run table's text: headers, rows (the last cell PASS, or FAIL and what failed it), each column's natural
    width, and the widths the tools and result columns get (None: their natural ones; both wrap between words) so
    that ids and scores are never split."""

    title: str
    headers: list[str]
    numeric: list[str]
    rows: list[list[str]]
    natural: list[int]
    tools_width: int | None
    needed: int
    result_width: int | None = None


def table_layout(report: RunReport, console_width: int) -> TableLayout:
    """The table of `report` for a console `console_width` columns wide: when the rows do not fit, the tools column
    wraps between tool names, and when even that is not enough the table is wider than the console (`needed`)."""
    from ._cells import quality, result_word, shows_pass_pow_k

    multi = any(shows_pass_pow_k(len(c.trials)) for c in report.cases)
    rows: list[list[str]] = []
    for case in report.graded_cases:
        subs = case.sub_scores or {}
        row = [
            clean(case.name, lines=False),
            num(case.score),
            num(subs.get("tool_accuracy")),
            num(subs.get("turn_efficiency")),
            quality(subs.get("output_quality")),
            turns(case.turns),
            clean(", ".join(case.tools_used), lines=False) or "–",
        ]
        if multi:
            row += [num(case.pass_at_1), num(case.pass_pow_k) if shows_pass_pow_k(case.trial_count) else "–"]
        rows.append([scrub_text(cell) for cell in row] + [clean(result_word(case), lines=False)])
    numeric = ["score", "acc", "eff", "qual", "turns"] + (["pass@1", "pass^k"] if multi else [])
    headers = ["test", *numeric[:5], "tools used", *numeric[5:], "result"]
    natural = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    result_width = None
    if sum(natural) + _GAP * (len(headers) - 1) > console_width:  # "FAIL never_ran" wraps between its words first
        result_width = max([len(headers[-1])] + [len(word) for r in rows for word in r[-1].split()])
        result_width = None if result_width >= natural[-1] else result_width
    widths = [*natural[:-1], result_width or natural[-1]]
    fixed = sum(w for i, w in enumerate(widths) if i != 6) + _GAP * (len(headers) - 1)  # all but the tools column
    longest_tool = max([len("tools")] + [len(clean(t, lines=False)) + 1 for c in report.graded_cases for t in c.tools_used])
    tools_width = max(longest_tool, console_width - fixed) if fixed + natural[6] > console_width else None
    title = f"trialrun {clean(report.run_id or '', lines=False)}".strip()
    if report.regraded_from:  # `trialrun regrade`'s: the trials of another run, graded again
        title += f" (regraded from {clean(report.regraded_from, lines=False)}; no agent ran)"
    return TableLayout(title, headers, numeric, rows, natural, tools_width, fixed + (tools_width or natural[6]),
                       result_width)


def notes_under_table(report: RunReport) -> list[list[tuple[str, str]]]:
    """The lines under the table, as (text, style) parts: why each failing test failed, trials that ended other
    than completed, skipped, partly run and unfinished tests."""
    lines: list[list[tuple[str, str]]] = []
    for case in (c for c in report.graded_cases if not c.passed):
        from .text import why_failed

        lines.append([("✗ ", "red"), (clean(case.name, lines=False), "bold"), (": ", ""),
                      (clean(why_failed(case, limit=400)), "")])
    for line in ending_notes(report):
        lines.append([("! ", "yellow"), (clean(scrub_text(line)), "")])
    for skipped in report.skipped_cases:
        lines.append([("skipped", "yellow"), (f" {clean(scrub_text(skipped.name), lines=False)}: "
                                              f"{clean(scrub_text(skipped.reason))}", "")])
    for case in (c for c in report.cases if c.partial):
        from .text import partly_run

        lines.append([("partly run ", "yellow"), (clean(case.name, lines=False), ""), (f": {partly_run(case)}", "")])
    for name in report.unfinished_cases:
        lines.append([("not finished", "yellow"), (f" {clean(name, lines=False)} (interrupted)", "")])
    return lines


def summary_parts(report: RunReport) -> list[tuple[str, str]]:
    """The run in one line, as (text, style) parts joined by " · ": `4/5 passed · 1 failed · pass@1 0.80 ...`."""
    graded = len(report.graded_cases)
    parts = [(f"{report.passed_case_count}/{graded} passed", "")]
    if report.failed_case_count:
        parts.append((f"{report.failed_case_count} failed", "red"))
    if report.skipped_case_count:
        parts.append((f"{report.skipped_case_count} skipped", ""))
    parts.append((f"pass@1 {num(report.pass_at_1)}", ""))
    from ._cells import run_k, shows_pass_pow_k

    if shows_pass_pow_k(run_k(report)):  # with one trial pass^k is pass@1 again
        parts.append((f"pass^k {num(report.pass_pow_k)} (k={run_k(report)})", ""))
    if report.score is not None:
        parts.append((f"avg score {num(report.score)}", ""))
    if report.cost_usd is not None:
        parts.append((f"cost ${report.cost_usd:.4f}", ""))
    parts.append((f"{report.duration_s:.1f}s", ""))
    if report.status != "completed":
        parts.append((clean(report.status, lines=False), "yellow"))
    return parts


def _fits_one_column_a_char(text: str) -> bool:
    return text.isascii() or all(c.isascii() or c in _NARROW for c in text)


_WORD = re.compile(r"\s*\S+\s*")


def _wrapped(text: str, width: int) -> list[str] | None:
    """`text` wrapped between words into lines of at most `width` columns, as rich wraps a table cell (a word keeps
    the spaces after it, which end its line when it is the last); None when a word is longer than the width (rich
    folds it) or the text is not ASCII (rich counts cells)."""
    if len(text) <= width:
        return [text]
    if not text.isascii():
        return None
    lines: list[str] = []
    start = offset = 0
    for match in _WORD.finditer(text):
        word = match.group()
        length = len(word.rstrip())
        if length > width:
            return None
        if offset and width - offset < length:
            lines.append(text[start:match.start()].rstrip())
            start, offset = match.start(), 0
        offset += len(word)
    lines.append(text[start:].rstrip())
    return lines


def report_lines(report: RunReport, width: int, *, saved: str | None = None) -> list[str] | None:
    """What `terminal.print_report` prints on a `width`-column console that is not a terminal, line by line; None
    when only rich can lay it out (see the module's docstring)."""
    layout = table_layout(report, width)
    natural = list(layout.natural)
    if layout.tools_width is not None:
        natural[6] = layout.tools_width
    if layout.result_width is not None:
        natural[-1] = layout.result_width
    table_width = layout.needed
    if len(layout.title) > table_width or len(CAPTION) > table_width:  # they would wrap
        return None
    if not all(_fits_one_column_a_char(cell) for row in layout.rows for cell in row) or not layout.title.isascii():
        return None
    right = [False, *([True] * 5), False, *([True] * (len(layout.headers) - 8)), False]
    gap = " " * _GAP

    def line(cells: list[str]) -> str:
        return gap.join(cell.rjust(w) if r else cell.ljust(w) for cell, w, r in zip(cells, natural, right))

    # A table wider than the console is rendered at its own width first: its title and caption are then padded to it.
    padded = table_width if table_width > width else 0
    lines = [layout.title.ljust(padded), line(layout.headers), "─" * table_width]
    blank = [""] * len(layout.headers)
    for row in layout.rows:
        tools, result = _wrapped(row[6], natural[6]), _wrapped(row[-1], natural[-1])
        if tools is None or result is None:
            return None
        for number in range(max(len(tools), len(result))):
            cells = list(row) if number == 0 else list(blank)
            cells[6] = tools[number] if number < len(tools) else ""
            cells[-1] = result[number] if number < len(result) else ""
            lines.append(line(cells))
    lines.append(CAPTION.ljust(padded))
    for parts in notes_under_table(report):
        text = "".join(part for part, _ in parts)
        if "\t" in text and not text.isascii():  # rich puts tab stops by cell width
            return None
        lines.append(text.expandtabs(8))
    lines.append(" · ".join(text for text, _ in summary_parts(report)))
    if saved:
        lines.append(f"saved {clean(saved)}")
    return lines


def plain_output(stream: TextIO) -> bool:
    """Whether rich would see `stream` as no terminal (so it would print plain text): not a TTY, and neither
    TTY_COMPATIBLE=1 nor FORCE_COLOR say otherwise; never on Windows or in a notebook, where rich's own rules
    differ."""
    if sys.platform == "win32" or "ipykernel" in sys.modules or type(sys.stdin).__module__.startswith("idlelib"):
        return False
    tty_compatible = os.environ.get("TTY_COMPATIBLE", "")
    if tty_compatible in ("0", "1"):
        return tty_compatible == "0"
    if os.environ.get("FORCE_COLOR") is not None:
        return os.environ["FORCE_COLOR"] == ""
    isatty = getattr(stream, "isatty", None)
    try:
        return isatty is None or not isatty()
    except ValueError:  # a closed file
        return True


def _width() -> int:
    """The width rich gives a console that is not a terminal: $COLUMNS, else the size of the terminal that one of
    the standard streams is attached to, else 80."""
    columns = os.environ.get("COLUMNS")
    if columns is not None and columns.isdigit():
        return int(columns)
    width = 0
    for fd in (0, 1, 2):
        try:
            width = os.get_terminal_size(fd).columns
        except (AttributeError, ValueError, OSError):
            continue
        break
    return width or 80


class PlainConsole:
    """Where the CLI prints when its output is not a terminal (`plain_output`): lines of text, as rich would print
    them there. The stream is looked up at each write (tests and callers swap sys.stdout)."""

    is_terminal = False

    def __init__(self, *, stderr: bool = False) -> None:
        self.stderr = stderr
        self.width = _width()

    @property
    def file(self) -> TextIO:
        return sys.stderr if self.stderr else sys.stdout

    def print(self, text: str, *, markup: bool = False, highlight: bool = False, emoji: bool = False) -> None:
        """A line of plain text, as is (the progress lines, the only caller, are never markup)."""
        self.file.write(text + "\n")

    def lines(self, lines: list[str]) -> None:
        self.file.write("".join(line + "\n" for line in lines))

    def rich(self) -> Any:
        """The rich console the CLI would use here, for what only rich can lay out."""
        from rich.console import Console

        return Console(stderr=self.stderr, highlight=False, soft_wrap=True)
