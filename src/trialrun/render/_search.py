"""The search page and the 404 of `trialrun view`: trials found by what the agent did and why they failed (the
commands run, tool calls and their arguments, tool results and outputs, failure reasons: `report._search`), with
filters (failed only, test, run, tag), each hit shown in its context with the text marked and linked to its trial
(which marks it too); tests found by id, title, description or tag, runs by label, model, run id or date (a
substring of each, case-insensitive); and a styled "not found" that links home."""

from __future__ import annotations

from html import escape
from urllib.parse import urlencode

from ..report._history import History
from ..report._search import Filters, TrialHits, search_trials
from ._chrome import q, rate, site_nav, when

__all__ = ["search_page", "not_found_page", "MAX_QUERY", "MARK_JS", "snippet", "hit_href"]

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


#: Characters of context shown on each side of a hit.
_CONTEXT = 70
#: Hits shown per trial (the trial page marks every one).
_PER_TRIAL = 3


def snippet(text: str, needle: str) -> str:
    """The text around the first occurrence of `needle` (case-insensitive), escaped, the occurrence in <mark>."""
    at = text.casefold().find(needle.casefold())
    if at < 0:
        return escape(text[: 2 * _CONTEXT])
    end = at + len(needle)
    start, stop = max(0, at - _CONTEXT), min(len(text), end + _CONTEXT)
    before = ("…" if start else "") + text[start:at]
    after = text[end:stop] + ("…" if stop < len(text) else "")
    return f'{escape(before.replace(chr(10), " "))}<mark>{escape(text[at:end])}</mark>{escape(after.replace(chr(10), " "))}'


def hit_href(hit: TrialHits, query: str) -> str:
    """The trial's page, asked to mark `query` (the page's script marks each occurrence and shows the first)."""
    return f"/trial/{q(hit.entry.stem)}?{urlencode({'test': hit.case.name, 'trial': hit.trial.trial, 'hl': query})}"


def _trial_items(hits: list[TrialHits], query: str) -> str:
    items = []
    for hit in hits:
        places = "".join(f'<li><span class="where">{escape(found.where)}</span> <code class="hit-text">'
                         f"{snippet(found.text, query.strip())}</code></li>" for found in hit.found[:_PER_TRIAL])
        more = len(hit.found) - _PER_TRIAL
        state = '<span class="badge pass">✓ pass</span>' if hit.trial.passed else '<span class="badge fail">✗ fail</span>'
        items.append(
            f'<li class="found-trial" data-run="{escape(hit.entry.stem)}" data-test="{escape(hit.case.name)}" '
            f'data-trial="{hit.trial.trial}"><a class="trial-hit" href="{escape(hit_href(hit, query))}">'
            f"<strong>{escape(hit.case.name)}</strong> · trial {hit.trial.trial}</a> {state} "
            f'<span class="muted">{escape(when(hit.entry.report.started_at))}</span>'
            f'<ul class="hits">{places}</ul>'
            + (f'<p class="muted more-hits">and {more} more place{"s" if more != 1 else ""} in this trial</p>'
               if more > 0 else "") + "</li>")
    return "".join(items)


def _filters_form(history: History, query: str, filters: Filters) -> str:
    """The search box with its filters (a GET form: every search is a link)."""
    def select(name: str, label: str, options: list[tuple[str, str]], chosen: str) -> str:
        shown = "".join(f'<option value="{escape(value)}"{" selected" if value == chosen else ""}>{escape(text)}</option>'
                        for value, text in [("", f"any {label}"), *options])
        return f'<label>{escape(label)} <select name="{name}" id="filter-{name}">{shown}</select></label>'

    tags = sorted({t for e in history.runs for c in e.report.cases for t in c.tags})
    runs = [(e.stem, f"{when(e.report.started_at)} {e.label}".strip()) for e in reversed(history.runs)]
    return ('<form class="pick panel search-filters" method="get" action="/search" id="search-form">'
            f'<input type="search" name="q" id="search-query" value="{escape(query)}" aria-label="Search text" '
            'placeholder="rm -rf, a tool, a reason...">'
            f'<label><input type="checkbox" name="failed" value="1" id="filter-failed"{" checked" if filters.failed else ""}>'
            " failed trials only</label>"
            + select("test", "test", [(n, n) for n in history.test_names()], filters.test)
            + select("run", "run", runs, filters.run) + select("tag", "tag", [(t, t) for t in tags], filters.tag)
            + '<button type="submit">Search</button></form>')


def search_page(history: History, query: str, filters: Filters | None = None) -> str:
    from ._chrome import _head, _page

    filters = filters if filters is not None else Filters()
    query = query[:MAX_QUERY]
    needle = query.strip().lower()
    tests = _tests(history, needle) if needle else []
    runs = [e for e in reversed(history.runs) if needle and any(needle in f.lower() for f in (
        e.stem, e.report.run_id or "", e.label, e.model, when(e.report.started_at), e.report.started_at.isoformat()))]
    trials, more = search_trials(history, query, filters)
    test_items = "".join(
        f'<li><a class="found-test" href="/test/{q(n)}">{escape(n)}</a>'
        + (f" — {escape(title)}" if title else "")
        + "".join(f' <span class="badge skip">{escape(t)}</span>' for t in tags) + "</li>" for n, title, tags in tests)
    run_items = "".join(
        f'<li><a class="found-run" href="/run/{q(e.stem)}">{escape(when(e.report.started_at))}</a> '
        f"<code>{escape(e.model)}</code> {escape(e.label)} · pass rate {rate(e.pass_rate)}</li>" for e in runs)
    if not needle:
        results = ('<p class="muted">Type a command (<code>rm -rf</code>), a tool or its arguments, words of an output '
                   "or of a failure reason; or a test id, title or tag, or a run label, model or date.</p>")
    else:
        count = f"{len(trials)}{'+' if more else ''}"
        results = (f'<section class="panel" id="found-trials"><h3>Trials ({count})</h3>'
                   + (f'<ul class="trials-found">{_trial_items(trials, query)}</ul>' if trials
                      else '<p class="muted">No trial holds it (commands, tool calls, results, outputs, failure '
                           "reasons).</p>")
                   + (f'<p class="muted" id="more-trials">Only the first {len(trials)} trials are listed: narrow the '
                      "search with the filters.</p>" if more else "")
                   + f'</section><section class="panel" id="found-tests"><h3>Tests ({len(tests)})</h3>'
                   + (f'<ul class="names">{test_items}</ul>' if tests else '<p class="muted">No test matches.</p>')
                   + f'</section><section class="panel" id="found-runs"><h3>Runs ({len(runs)})</h3>'
                   + (f"<ul>{run_items}</ul>" if runs else '<p class="muted">No run matches.</p>') + "</section>")
    body = (_head("trialrun · search", f"Search: {query}" if needle else "Search")
            + f'<main class="wrap" id="main">{_filters_form(history, query, filters)}{results}</main>')
    return _page("trialrun · search", body, served=True, css=_CSS,
                 nav=site_nav(str(history.directory), [("search", None)], query=query))


_CSS = """
.trials-found { list-style: none; padding: 0; margin: 0; }
.found-trial { padding: 8px 0; border-bottom: 1px solid var(--border-soft); }
.found-trial ul.hits { list-style: none; padding: 0; margin: 4px 0 0; }
.found-trial ul.hits li { margin: 2px 0; }
.found-trial .where { display: inline-block; min-width: 8.5em; color: var(--muted); font-size: 0.82rem; }
code.hit-text { white-space: pre-wrap; overflow-wrap: anywhere; }
form.search-filters input[type=search] { flex: 1 1 16em; min-width: 0; font: inherit; padding: 5px 8px; border: 1px solid var(--border); border-radius: 6px; background: var(--surface); color: var(--text); }
form.search-filters label { display: inline-flex; gap: 6px; align-items: center; max-width: 100%; }
form.search-filters select { max-width: min(22em, 70vw); }
"""


def not_found_page(folder: str, what: str, title: str = "Not found") -> str:
    """A 404 saying what was not found (`what` is text, from the request too: escaped here), with the way home."""
    from ._chrome import _head, _page

    body = (_head("trialrun", title, escape(what), "failed")
            + '<main class="wrap" id="main"><p class="alert warn" id="not-found">'
            f'{escape(what)}</p><p><a href="/" id="home-link">← All runs</a> · or search above.</p></main>')
    return _page(f"trialrun · {title.lower()}", body, served=True, nav=site_nav(folder, [(title.lower(), None)]))


#: The trial page's marking of a search hit (`?hl=TEXT`): every occurrence in the page's text is wrapped in
#: <mark class="hit">, the folded parts holding one are opened, and the first is scrolled into view.
MARK_JS = """
(function () {
  var wanted = new URLSearchParams(location.search).get("hl");
  var needle = (wanted || "").trim().toLowerCase();
  var main = document.getElementById("main");
  if (!needle || !main) return;
  var walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT), nodes = [], marks = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  nodes.forEach(function (node) {
    var parent = node.parentNode, text = node.nodeValue, lower = text.toLowerCase(), at = lower.indexOf(needle), from = 0;
    if (at < 0 || !parent || /^(SCRIPT|STYLE|TEXTAREA|OPTION)$/.test(parent.nodeName)) return;
    var frag = document.createDocumentFragment();
    while (at >= 0) {
      frag.appendChild(document.createTextNode(text.slice(from, at)));
      var mark = document.createElement("mark");
      mark.className = "hit";
      mark.textContent = text.slice(at, at + needle.length);
      frag.appendChild(mark);
      marks.push(mark);
      from = at + needle.length;
      at = lower.indexOf(needle, from);
    }
    frag.appendChild(document.createTextNode(text.slice(from)));
    parent.replaceChild(frag, node);
  });
  marks.forEach(function (mark) {
    for (var up = mark.parentNode; up && up !== main; up = up.parentNode) if (up.nodeName === "DETAILS") up.open = true;
  });
  var note = document.createElement("p");
  note.id = "hit-note";
  note.className = "alert " + (marks.length ? "info" : "warn");
  note.textContent = marks.length ? marks.length + " occurrence" + (marks.length === 1 ? "" : "s") + " of \u201c" +
    wanted.trim() + "\u201d marked on this page" : "\u201c" + wanted.trim() + "\u201d is not in this page's text";
  main.insertBefore(note, main.firstChild);
  if (marks.length) { marks[0].id = "hit"; marks[0].scrollIntoView({ block: "center" }); }
})();
"""
