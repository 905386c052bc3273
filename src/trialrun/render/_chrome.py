"""What every page `trialrun view` serves has around it: the header (the results folder, a search box, the way
back as breadcrumbs), the styled 404, the search page, and the few formatters every page shares, so a number, a
time or a count reads the same on each (`1.00` not `1`, `1 turn`, `2026-12-02 04:26 UTC` not an ISO string).

Everything here escapes what it is given: a results folder is hostile input (tests/view/test_view_escaping.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from html import escape
from urllib.parse import quote

__all__ = ["site_nav", "when", "when_text", "plural", "rate", "crumb_run", "crumb_case", "q"]

#: A breadcrumb: its text and where it links (None: the page itself).
Crumb = tuple[str, "str | None"]


def q(text: str) -> str:
    """A path segment (or query value) with everything quoted: a name with `/`, `?` or `#` stays one segment."""
    return quote(text, safe="")


def rate(value: float | None) -> str:
    """A rate or score as every page shows it: two decimals (`1.00`, never `1`), `n/a` for none."""
    return "n/a" if value is None else f"{value:.2f}"


def plural(count: int, word: str, many: str | None = None) -> str:
    return f"{count:,} {word if count == 1 else (many or word + 's')}"


def when(moment: datetime) -> str:
    """A time as every page shows it: UTC, to the second, named as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def when_text(text: str | None) -> str:
    """An ISO time read from a file (a journal's start) shown as `when` does; what does not parse, as it is."""
    if not text:
        return "?"
    try:
        from .._file_models import iso_time

        return when(iso_time(text))
    except ValueError:
        return text


def crumb_run(stem: str, label: str) -> Crumb:
    return label, f"/run/{q(stem)}"


def crumb_case(stem: str, name: str) -> Crumb:
    """A test inside its run: the run page opened at that case (the report's `#case=` fragment)."""
    return name, f"/run/{q(stem)}#case={q(name)}"


def site_nav(folder: str, crumbs: Sequence[Crumb] = (), *, query: str = "") -> str:
    """The header of every served page: home, the results folder, the search box (tests by id, title or tag; runs
    by label, model or date), and the breadcrumbs from the runs list to this page."""
    trail = [("Runs", "/"), *crumbs]
    items = "".join(
        f'<li><a href="{escape(href)}">{escape(text)}</a></li>' if href is not None and i < len(trail) - 1
        else f'<li aria-current="page">{escape(text)}</li>' for i, (text, href) in enumerate(trail))
    return ('<nav class="site-nav" aria-label="trialrun"><div class="wrap nav-row">'
            '<a class="home" href="/">trialrun</a>'
            f'<span class="folder" title="the results folder">{escape(folder)}</span>'
            '<form class="search" role="search" method="get" action="/search">'
            f'<input type="search" name="q" id="search-q" value="{escape(query)}" '
            'placeholder="Search tests and runs" aria-label="Search tests (id, title, tag) and runs (label, model, date)">'
            '<button type="submit">Search</button></form></div>'
            f'<ol class="crumbs wrap" id="crumbs">{items}</ol></nav>')
