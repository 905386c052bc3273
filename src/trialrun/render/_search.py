"""The search page and the 404 of `trialrun view`: tests found by id, title, description or tag, runs by label,
model, run id or date (a substring of each, case-insensitive), and a styled "not found" that links home."""

from __future__ import annotations

from html import escape

from ..report._history import History
from ._chrome import q, rate, site_nav, when

__all__ = ["search_page", "not_found_page", "MAX_QUERY"]

#: A search box, not a document: longer queries are cut here.
MAX_QUERY = 200


def _tests(history: History, needle: str) -> list[tuple[str, str, list[str]]]:
    """(name, title, tags) of each test whose id, title, description or a tag holds `needle` (newest run's case)."""
    found = []
    for name in history.test_names():
        case = next(c for entry in reversed(history.runs) for c in entry.report.cases if c.name == name)
        fields = [name, case.title or "", case.description or "", *case.tags]
        if any(needle in f.lower() for f in fields):
            found.append((name, case.title or "", list(case.tags)))
    return found


def search_page(history: History, query: str) -> str:
    from ._chrome import _head, _page

    query = query[:MAX_QUERY]
    needle = query.strip().lower()
    tests = _tests(history, needle) if needle else []
    runs = [e for e in reversed(history.runs) if needle and any(needle in f.lower() for f in (
        e.stem, e.report.run_id or "", e.label, e.model, when(e.report.started_at), e.report.started_at.isoformat()))]
    test_items = "".join(
        f'<li><a class="found-test" href="/test/{q(n)}">{escape(n)}</a>'
        + (f" — {escape(title)}" if title else "")
        + "".join(f' <span class="badge skip">{escape(t)}</span>' for t in tags) + "</li>" for n, title, tags in tests)
    run_items = "".join(
        f'<li><a class="found-run" href="/run/{q(e.stem)}">{escape(when(e.report.started_at))}</a> '
        f"<code>{escape(e.model)}</code> {escape(e.label)} · pass rate {rate(e.pass_rate)}</li>" for e in runs)
    if not needle:
        results = '<p class="muted">Type a test id, title or tag, or a run label, model or date.</p>'
    else:
        results = (f'<section class="panel" id="found-tests"><h3>Tests ({len(tests)})</h3>'
                   + (f'<ul class="names">{test_items}</ul>' if tests else '<p class="muted">No test matches.</p>')
                   + f'</section><section class="panel" id="found-runs"><h3>Runs ({len(runs)})</h3>'
                   + (f"<ul>{run_items}</ul>" if runs else '<p class="muted">No run matches.</p>') + "</section>")
    body = (_head("trialrun · search", f"Search: {query}" if needle else "Search")
            + f'<main class="wrap" id="main">{results}</main>')
    return _page("trialrun · search", body, served=True,
                 nav=site_nav(str(history.directory), [("search", None)], query=query))


def not_found_page(folder: str, what: str, title: str = "Not found") -> str:
    """A 404 saying what was not found (`what` is text, from the request too: escaped here), with the way home."""
    from ._chrome import _head, _page

    body = (_head("trialrun", title, escape(what), "failed")
            + '<main class="wrap" id="main"><p class="alert warn" id="not-found">'
            f'{escape(what)}</p><p><a href="/" id="home-link">← All runs</a> · or search above.</p></main>')
    return _page(f"trialrun · {title.lower()}", body, served=True, nav=site_nav(folder, [(title.lower(), None)]))
