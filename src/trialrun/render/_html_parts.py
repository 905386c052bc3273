"""The small pieces of HTML every report page shares: a rate, a sum of money, a duration, a time, a stat box, a
pass/fail badge, a config value, the note shown where JavaScript is off.

Apart from `html` (which assembles the run page) so that the compare summary and the history pages use them
without importing the page that imports them.
"""

from __future__ import annotations

import json
import re
from datetime import timezone
from html import escape
from typing import Any

from ..report.results import RunReport

__all__ = ["_rate", "_money", "_seconds", "_when", "_stat", "_badge", "_value", "_noscript", "breakable"]

#: Where a path, a spec or an identifier may break across lines: after these characters (never inside a word).
_BREAK_AFTER = re.compile(r"([/:_=,(\[]|\.(?!\d))")  # (a number's point keeps 1.00 whole)


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _money(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"${value:,.2f}" if value >= 1 else f"${value:.4f}"


def _seconds(value: float) -> str:
    if value < 60:
        return f"{value:.2f} s"
    minutes, seconds = divmod(round(value), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {seconds:02d}s"


def _when(report: RunReport) -> str:
    return report.started_at.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _stat(label: str, value: str, *, tone: str = "", note: str = "", stat_id: str = "") -> str:
    attrs = f' id="{stat_id}"' if stat_id else ""
    cls = f"stat {tone}".strip()
    extra = f'<span class="stat-note">{escape(note)}</span>' if note else ""
    return (f'<div class="{cls}"{attrs}><dt>{escape(label)}</dt>'
            f'<dd><span class="stat-value">{escape(value)}</span>{extra}</dd></div>')


def _badge(passed: bool, *, yes: str = "PASSED", no: str = "FAILED") -> str:
    return f'<span class="badge {"pass" if passed else "fail"}">{"✓" if passed else "✗"} {yes if passed else no}</span>'


def breakable(text: str) -> str:
    """`text` escaped, with a line-break opportunity (<wbr>) after each / : _ = , ( [ and each . not before a digit:
    a long path, model spec or grader breaks between its parts on a narrow screen instead of in the middle of a
    word (a number stays whole)."""
    return _BREAK_AFTER.sub(r"\1<wbr>", escape(text))


def _value(value: Any) -> str:
    if value is None:
        return '<span class="muted">(none)</span>'
    if isinstance(value, str):
        return breakable(value)
    return breakable(json.dumps(value, ensure_ascii=False))


def _noscript(what: str) -> str:
    return (f'<noscript><p class="noscript">The {what} is drawn by JavaScript, which is off. The summary above is '
            "complete; the full data is in the run's JSON results file.</p></noscript>")
