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

from .._scrub import scrub_text
from ._html_parts import breakable
from .html import _asset, _csp_hash

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
        from ..report._file_models import iso_time

        return when(iso_time(text))
    except ValueError:
        return text


def crumb_run(stem: str, label: str) -> Crumb:
    return label, f"/run/{q(stem)}"


def crumb_case(stem: str, name: str) -> Crumb:
    """A test inside its run: the run page opened at that case (the report's `#case=` fragment)."""
    return name, f"/run/{q(stem)}#case={q(name)}"


def site_nav(folder: str, crumbs: Sequence[Crumb] = (), *, query: str = "") -> str:
    """The header of every served page: home, the results folder, the search box (trials by what the agent did and
    why they failed; tests; runs), and the breadcrumbs from the runs list to this page."""
    trail = [("Runs", "/"), *crumbs]
    items = "".join(
        f'<li><a href="{escape(href)}">{escape(text)}</a></li>' if href is not None and i < len(trail) - 1
        else f'<li aria-current="page">{escape(text)}</li>' for i, (text, href) in enumerate(trail))
    return ('<nav class="site-nav" aria-label="trialrun"><div class="wrap nav-row">'
            '<a class="home" href="/">trialrun</a>'
            f'<span class="folder" title="the results folder">{breakable(folder)}</span>'
            '<form class="search" role="search" method="get" action="/search">'
            f'<input type="search" name="q" id="search-q" value="{escape(query)}" '
            'placeholder="Search: rm -rf, a tool, a reason..." aria-label="Search trials (commands, tool calls, outputs, '
            'failure reasons), tests and runs">'
            '<button type="submit">Search</button></form></div>'
            f'<ol class="crumbs wrap" id="crumbs">{items}</ol></nav>')


#: The served pages' own styles, after the report's (`report.css`).
_CSS = """
.runs td { white-space: nowrap; }
table.cases.runs thead th { white-space: normal; vertical-align: bottom; }
.runs td:first-child, .runs td.model, .runs td.label { white-space: normal; }
.runs td:first-child a { white-space: nowrap; }
.runs td.model code { overflow-wrap: break-word; }
.runs td.changes { white-space: normal; min-width: 11em; font-size: 0.85rem; overflow-wrap: break-word; }
#test-runs td.trials { display: table-cell; white-space: nowrap; }
#test-runs td.trials a { white-space: nowrap; margin-right: 4px; }
figure.trend { max-width: 786px; }
.runs tr.live-run { background: var(--info-bg); }
figure.trend { margin: 12px 0; background: var(--surface); border: 1px solid var(--border); border-radius: 8px; padding: 10px 12px; }
figure.trend figcaption { font-size: 0.85rem; color: var(--muted); }
svg.trend { display: block; width: 100%; max-width: 760px; height: auto; }
svg.trend .grid { stroke: var(--border-soft); }
svg.trend .axis { fill: var(--muted); font-size: 11px; font-family: var(--font); }
svg.trend .line { fill: none; stroke-width: 2; }
svg.trend .s0 { stroke: var(--accent); fill: var(--accent); }
svg.trend .s1 { stroke: var(--pass-line); fill: var(--pass-line); }
svg.trend .s2 { stroke: #8250df; fill: #8250df; }
svg.trend .line.s2 { stroke-dasharray: 6 4; }
svg.trend .line.s0, svg.trend .line.s1, svg.trend .line.s2 { fill: none; }
svg.trend .cfg-mark { stroke: var(--warn); stroke-dasharray: 4 3; }
svg.trend .cfg-label { fill: var(--warn); font-size: 11px; }
svg.trend circle.regression { fill: var(--fail); stroke: var(--fail-line); stroke-width: 3; }
.legend .k { display: inline-block; width: 14px; height: 4px; vertical-align: middle; margin-right: 5px; }
.legend .k.s0 { background: var(--accent); } .legend .k.s1 { background: var(--pass-line); } .legend .k.s2 { background: #8250df; }
form.pick + form.pick { margin-top: 8px; }
form.pick { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; }
form.pick select, form.pick button { font: inherit; padding: 5px 8px; border: 1px solid var(--border); border-radius: 6px; background: var(--surface); color: var(--text); }
table.tdiff { border-collapse: collapse; width: 100%; table-layout: fixed; font-size: 0.88rem; }
table.tdiff th, table.tdiff td { border-bottom: 1px solid var(--border-soft); padding: 6px 8px; vertical-align: top; text-align: left; overflow-wrap: anywhere; }
table.tdiff th.turn { width: 6.5em; }
table.tdiff tr.diverged td, table.tdiff tr.diverged th { background: var(--fail-bg); }
table.tdiff tr.first-divergence td, table.tdiff tr.first-divergence th { background: var(--fail-bg); box-shadow: inset 0 2px 0 var(--fail-line), inset 0 -2px 0 var(--fail-line); }
table.tdiff .diff-kind { color: var(--fail); font-weight: 700; font-size: 0.8rem; }
table.tdiff tr.inserted td[data-side="after"], table.tdiff tr.removed td[data-side="before"] { box-shadow: inset 4px 0 0 var(--fail-line); }
table.tdiff tr.inserted td.absent, table.tdiff tr.removed td.absent { background: repeating-linear-gradient(135deg, transparent 0 6px, var(--border-soft) 6px 7px); }
table.tdiff .turn-no { color: var(--muted); font-size: 0.78rem; }
#verdict-flips h2 { margin-top: 0; }
#verdict-flips .reason { display: block; color: var(--muted); font-size: 0.85rem; overflow-wrap: break-word; }
table.tdiff pre { white-space: pre-wrap; margin: 2px 0; font-size: 0.85em; }
.call-line { margin: 0 0 4px; }
.call-line.changed { outline: 2px solid var(--fail-line); border-radius: 4px; }
progress#live-progress { width: 100%; max-width: 520px; height: 12px; }
mark { background: #fff3b0; color: #1f2328; padding: 0 1px; border-radius: 2px; }
mark.hit { outline: 1px solid #d4a72c; }
svg.trend a.pt-link circle { cursor: pointer; }
svg.trend a.pt-link:focus-visible circle { stroke: var(--text); stroke-width: 3; }
.runs details.changes-more summary { cursor: pointer; }
form.grade { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; }
form.grade textarea { font: inherit; flex: 1 1 16em; min-width: 0; max-width: 100%; min-height: 2.4em; padding: 4px 8px; border: 1px solid var(--border); border-radius: 6px; background: var(--bg); color: var(--text); }
form.grade fieldset { border: 0; padding: 0; margin: 0; display: flex; gap: 10px; flex-wrap: wrap; }
form.grade label { display: inline-flex; gap: 6px; align-items: center; min-width: 0; max-width: 100%; }
form.grade select { min-width: 0; max-width: 100%; text-overflow: ellipsis; }
form.grade input[type=number] { width: 5em; font: inherit; }
@media (max-width: 760px) {
  /* the chart is drawn 720 units wide and shrunk to the screen: its text is set larger so it reads at ~11 px */
  svg.trend .axis, svg.trend .cfg-label { font-size: 23px; }
  table.tdiff { font-size: 0.8rem; }
  table.tdiff th.turn { width: 5.6em; overflow-wrap: normal; }
  .runs td:first-child a { white-space: normal; }
  table.tdiff .diff-kind { font-size: 0.7rem; }
  form.pick label { display: flex; gap: 6px; align-items: center; max-width: 100%; }
  form.pick select { max-width: 62vw; }
  /* the first column (sticky) wraps, so the columns beside it are in view too */
  .runs td:first-child, #test-runs td:first-child { white-space: normal; max-width: 9.5em; min-width: 7em; }
  .runs td.changes { min-width: 11em; }
}
"""


def _page(title: str, body: str, *, served: bool, script: str = "", css: str = "", nav: str = "") -> str:
    """The whole page; what came from the runs (title, body) is scrubbed here, where it is serialised (`_scrub`:
    the files it was read from are scrubbed already; this also covers what was learnt of secrets since)."""
    title, body = scrub_text(title), scrub_text(body)
    css = "\n" + _asset("report.css") + _CSS + css
    scripts = f"<script>{script}</script>" if script else ""
    csp = (f"default-src 'none'; style-src {_csp_hash(css)}; img-src data:; base-uri 'none'; "
           + (f"script-src {_csp_hash(script)}; " if script else "")
           + ("connect-src 'self'; form-action 'self'" if served else "form-action 'none'"))
    nav = scrub_text(nav or site_nav("")) if served else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f'<meta http-equiv="Content-Security-Policy" content="{escape(csp)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n<meta name="generator" content="trialrun">\n'
        f"<title>{escape(title)}</title>\n<style>{css}</style>\n</head>\n<body>\n{nav}\n{body}\n{scripts}\n</body>\n</html>\n"
    )


def _head(eyebrow: str, title: str, meta: str = "", state: str = "") -> str:
    return (f'<header class="page-head" data-state="{state}"><div class="wrap"><p class="eyebrow">{escape(eyebrow)}</p>'
            f"<h1>{escape(title)}</h1>{f'<p class=meta>{meta}</p>' if meta else ''}</div></header>")
