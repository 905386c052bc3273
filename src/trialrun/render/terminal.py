"""The terminal view (rich): the run table, why failing tests failed, the comparison lines, a progress bar.

Everything shown that came from a result (ids, tool names, reasons, statuses: a user's, an agent's or a model's
text) is passed as rich `Text` through `clean`, never as markup: `read [/etc/hosts]` is an id, not a closing tag,
and an escape sequence in a reply is shown as `\x1b`, not sent to the terminal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.segment import Segments
from rich.table import Table
from rich.text import Text

from .._scrub import scrub_text
from .._util.display import clean
from ..report.results import RunReport
from ._plain import CAPTION, ending_notes, notes_under_table, summary_parts, table_layout
from ._progress import PLAIN_INTERVAL, RunProgress
from .text import why_failed

if TYPE_CHECKING:
    from ..report.compare import Comparison

__all__ = ["print_report", "print_comparison", "why_failed", "ending_notes", "RunProgress", "summary_line", "PLAIN_INTERVAL"]


def print_report(report: RunReport, console: Console, *, saved: str | None = None) -> None:
    """The run as a table (test, score, sub-scores, turns, tools, pass@k when k > 1, result, why).

    The numbers never shrink and a test id is never split: when the console is narrow the tools column wraps
    between tool names, and when even that is not enough the table is printed wider than the console (a CI log or
    a pipe keeps each row's id whole, so it can be searched for). (`_plain.report_lines` is the same output, as
    text, for a console that is not a terminal.)
    """
    layout = table_layout(report, console.width)
    natural, numeric, tools_width = layout.natural, layout.numeric, layout.tools_width
    table = Table(title=Text(layout.title), title_justify="left", expand=False,
                  box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True, padding=(0, 1),
                  caption=CAPTION, caption_justify="left")
    # Every width is known already (`natural`): given to rich, it measures no cell (most of a long table's cost).
    table.add_column("test", no_wrap=True, min_width=natural[0], width=natural[0])
    for position, header in enumerate(numeric[:5], start=1):
        table.add_column(header, justify="right", no_wrap=True, width=natural[position])
    table.add_column("tools used", overflow="fold", width=tools_width or natural[6])
    for position, header in enumerate(numeric[5:], start=7):
        table.add_column(header, justify="right", no_wrap=True, width=natural[position])
    table.add_column("result", overflow="fold", width=layout.result_width or natural[-1])  # "FAIL never_ran" wraps
    for row in layout.rows:
        result = Text(row[-1], style="bold green" if row[-1] == "PASS" else "bold red")  # (FAIL names its cause)
        table.add_row(*(Text(cell) for cell in row[:-1]), result)
    if layout.needed > console.width:  # wider than the console rather than split an id or cut a score
        console.print(Segments(console.render(table, console.options.update_width(layout.needed))), crop=False,
                      soft_wrap=True)
    else:
        console.print(table)
    for parts in notes_under_table(report):
        console.print(Text.assemble(*parts))
    console.print(summary_line(report))
    if saved:
        console.print(Text(f"saved {clean(saved)}"))


def summary_line(report: RunReport) -> str:
    """The run in one line (rich markup): `4/5 passed · 1 failed · pass@1 0.80 · pass^k 0.80 · avg score 0.90 ...`."""
    return " · ".join(f"[{style}]{escape(text)}[/]" if style else text for text, style in summary_parts(report))


def print_comparison(comparison: Comparison, console: Console) -> None:
    """The eval skill's compare lines, coloured: ▲ green, ▼ red, warnings yellow; the words red (worse), green (not
    worse) and yellow (cannot tell); the gate's line bold."""
    from ..report.compare import delta_lines

    for line in delta_lines(comparison):
        word = next((w for w in ("not worse", "cannot tell", "worse") if line.startswith("  ") and f": {w}: " in line),
                    None)  # a line of the verdict
        if line.startswith("WARNING"):
            style = "bold yellow"
        elif line.startswith("gate: "):
            style = "bold red" if line.startswith("gate: fails") else "bold green"
        elif word is not None:
            style = {"worse": "red", "not worse": "green", "cannot tell": "yellow"}[word]
        elif line.startswith("note:") or line.endswith("(interrupted)"):
            style = "yellow"
        else:
            style = "green" if "▲" in line else "red" if "▼" in line else ""
        console.print(Text(clean(scrub_text(line)), style=style))
