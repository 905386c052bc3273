"""The compare page's way on, when `trialrun view` serves it: each test that changed between the two runs, with
its trajectory diff (by default a failing trial of the later run beside a passing one, `_history.diff_pair`) and
its history across runs."""

from __future__ import annotations

from html import escape

from ..report._history import RunEntry, diff_pair
from ..report.compare import Comparison
from ._chrome import q, rate
from ._diff_page import diff_href

__all__ = ["changed_tests"]


def changed_tests(comparison: Comparison, before: RunEntry, after: RunEntry) -> str:
    changed = [d for d in comparison.cases if d.regression or d.status != "unchanged"]
    if not changed:
        return '<p class="muted" id="changed-tests">No test changed between the two runs.</p>'
    rows = []
    for d in changed:
        both = d.status not in ("added", "removed") and d.unfinished_in is None
        diff = ""
        if both:
            pair = diff_pair(d.name, before, after)
            diff = f'<a class="diff-link" href="{escape(diff_href(d.name, *pair.before, *pair.after))}">diff</a> · '
        mark = ' <span class="badge fail">regression</span>' if d.regression else ""
        rows.append(f'<li data-test="{escape(d.name)}"><code>{escape(d.name)}</code>{mark} {escape(d.status)} '
                    f"{rate(d.before)} → {rate(d.after)}: {diff}"
                    f'<a class="history-link" href="/test/{q(d.name)}">history</a></li>')
    return (f'<section class="panel" id="changed-tests"><h3>Changed tests ({len(changed)})</h3>'
            f'<ul class="plain">{"".join(rows)}</ul></section>')
