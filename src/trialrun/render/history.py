"""HTML pages of a results folder's history: the runs list with the suite's trend, a test's history, the
trajectory diff of one test between two runs, and a run in progress. Charts are inline SVG (no CDN, no script).

The same renderers serve `trialrun view` (`served=True`: links between pages, the compare picker, live rows) and
the static export `trialrun report --history --html F` (`served=False`: one self-contained file, every test's
chart inline).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from urllib.parse import quote

from ..report._history import History, LiveRun, RunEntry, config_line, diff_pair, flaky_pair, suite_trend, test_history
from ..report.store import has_finished
from ._cells import result_word, run_k, shows_pass_pow_k
from ._chrome import _head, _page, plural, site_nav, when, when_text
from ._diff_page import diff_href, diff_page, trial_href
from ._html_parts import _money, _rate, breakable

__all__ = ["runs_page", "history_html", "test_page", "diff_page", "live_page", "trend_svg", "Series"]


_LIVE_JS = r"""
(function () {
  "use strict";
  var rows = document.querySelectorAll("[data-live]");
  if (!rows.length) return;
  function fmt(s) { return (Math.round(s * 10) / 10).toFixed(1) + " s"; }
  function poll() {
    rows.forEach(function (el) {
      fetch("/api/live/" + encodeURIComponent(el.getAttribute("data-live")), {cache: "no-store"})
        .then(function (r) { return r.json(); })
        .then(function (d) {
          var set = function (sel, text) { var n = el.querySelector(sel); if (n) n.textContent = text; };
          if (d.finished) { set(".live-state", "finished"); if (el.getAttribute("data-reload") === "run") location.href = d.finished; else location.reload(); return; }
          if (d.gone) { set(".live-state", "stopped (no journal)"); return; }
          set(".live-done", d.done + "/" + d.total);
          set(".live-done-n", String(d.done));
          set(".live-passed", String(d.passed));
          set(".live-failed", String(d.failed));
          set(".live-elapsed", fmt(d.elapsed_s));
          set(".live-eta", d.eta_s === null ? "–" : fmt(d.eta_s));
          set(".live-current", d.current || "");
          set(".live-state", d.status ? d.status : "running");
          var tbody = document.getElementById("live-cases");
          if (tbody && d.cases) {
            tbody.textContent = "";
            Object.keys(d.cases).forEach(function (name) {
              var c = d.cases[name], tr = document.createElement("tr"), th = document.createElement("th");
              var code = document.createElement("code"); code.textContent = name; th.appendChild(code); th.scope = "row";
              tr.setAttribute("data-case", name); tr.appendChild(th);
              [c.done + "/" + c.trials, String(c.failed)].forEach(function (t) {
                var td = document.createElement("td"); td.className = "num"; td.textContent = t; tr.appendChild(td);
              });
              tbody.appendChild(tr);
            });
          }
          var bar = el.querySelector("progress");
          if (bar) { bar.max = Math.max(d.total, 1); bar.value = d.done; }
        })
        .catch(function () {});
    });
    setTimeout(poll, 700);
  }
  poll();
})();
"""


#: The runs list follows the folder: when a run starts, ends or is saved, the page reloads (the folder's listing,
#: not its contents, is polled: /api/runs answers from file names alone).
_RUNS_JS = r"""
(function () {
  "use strict";
  var table = document.getElementById("runs");
  if (!table) return;
  var known = table.getAttribute("data-state");
  function poll() {
    fetch("/api/runs", {cache: "no-store"}).then(function (r) { return r.json(); })
      .then(function (d) { if (d.state !== known) location.reload(); })
      .catch(function () {})
      .then(function () { setTimeout(poll, 1000); });
  }
  setTimeout(poll, 1000);
})();
"""


# -- page shell -------------------------------------------------------------------------------------------
def _when(entry: RunEntry) -> str:
    return when(entry.report.started_at)


def _q(text: str) -> str:
    return quote(text, safe="")


# -- the chart --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Series:
    name: str
    values: Sequence[float | None]


#: A metric's colour class, the same on every chart of every page (a score is never blue here and green there):
#: pass rate and pass@1 (how often a trial passes), score, pass^k.
_COLOURS = {"pass rate": "s0", "pass@1": "s0", "score": "s1", "pass^k": "s2"}


def _colour(name: str, index: int) -> str:
    return _COLOURS.get(name, f"s{index % 3}")


def trend_svg(labels: Sequence[str], series: Sequence[Series], *, config_changed: Sequence[bool] = (),
              regressions: Sequence[bool] = (), title: str = "trend", chart_id: str = "",
              links: Sequence[str] = ()) -> str:
    """A line chart of values in [0, 1] over runs (x: the runs, oldest left). Every value is a `circle.pt` (with a
    `<title>` naming run and value); runs whose config changed get a dashed line marked "config"; regressions a
    filled red point (`circle.regression`) on the first series. With `links` (an href per run), each point is a
    link to its run."""
    width, height, left, right, top, bottom = 720, 230, 58, 16, 16, 56
    n = len(labels)
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(i: int) -> float:
        return left + (plot_w / 2 if n == 1 else plot_w * i / (n - 1))

    def y(v: float) -> float:
        return top + plot_h * (1 - max(0.0, min(1.0, v)))

    parts = [f'<svg class="trend" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}"'
             + (f' id="{escape(chart_id)}"' if chart_id else "") + f"><title>{escape(title)}</title>"]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<line class="grid" x1="{left}" x2="{width - right}" y1="{y(tick):.1f}" y2="{y(tick):.1f}"/>'
                     f'<text class="axis" x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:.2f}</text>')
    for i, changed in enumerate(config_changed):
        if changed:
            near_right = x(i) > width - right - 50
            parts.append(f'<line class="cfg-mark" data-run="{escape(labels[i])}" x1="{x(i):.1f}" x2="{x(i):.1f}" '
                         f'y1="{top}" y2="{top + plot_h}"><title>config changed in {escape(labels[i])}</title></line>'
                         f'<text class="cfg-label" x="{x(i) + (-3 if near_right else 3):.1f}" y="{top + 10}" '
                         f'text-anchor="{"end" if near_right else "start"}">config</text>')
    step = max(1, n // 8)
    for i in range(len(labels)):
        if i % step == 0 or i == n - 1:
            parts.append(f'<text class="axis" x="{x(i):.1f}" y="{height - bottom + 24}" text-anchor="middle">{i + 1}</text>')
    parts.append(f'<text class="axis" x="{left + plot_w / 2:.1f}" y="{height - 6}" text-anchor="middle">run (oldest first)</text>')
    marks: list[str] = []  # regressions drawn last, over every line
    for s_index, s in enumerate(series):
        cls = _colour(s.name, s_index)
        points = [(i, v) for i, v in enumerate(s.values) if v is not None]
        if len(points) > 1:
            path = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in points)
            parts.append(f'<polyline class="line {cls}" points="{path}"/>')
        for i, v in points:
            bad = s_index == 0 and i < len(regressions) and regressions[i]
            circle = (f'<circle class="pt {cls}{" regression" if bad else ""}" data-series="{escape(s.name)}" '
                      f'data-run="{escape(labels[i])}" cx="{x(i):.1f}" cy="{y(v):.1f}" r="{6 if bad else 4}">'
                      f'<title>{escape(labels[i])}: {escape(s.name)} {v:.2f}{" (regression)" if bad else ""}</title></circle>')
            if i < len(links):
                circle = f'<a class="pt-link" href="{escape(links[i])}">{circle}</a>'
            (marks if bad else parts).append(circle)
    parts.extend(marks)
    parts.append("</svg>")
    legend = "".join(f'<span><span class="k {_colour(s.name, i)}"></span>{escape(s.name)}</span>'
                     for i, s in enumerate(series))
    extra = ""
    if any(config_changed):
        extra += "<span>dashed line: config changed</span>"
    if any(regressions):
        extra += "<span>red point: regression</span>"
    return f'<figure class="trend">{"".join(parts)}<figcaption class="legend">{legend}{extra}</figcaption></figure>'


def suite_chart(history: History, *, served: bool = True) -> str:
    trend = suite_trend(history)
    if not trend:
        return '<p class="muted">No runs yet.</p>'
    pow_k = [t.pass_pow_k if _shows_pass_pow_k(history, t.stem) else None for t in trend]  # (k = 1: pass@1 again)
    series = [Series("pass rate", [t.pass_rate for t in trend]), Series("score", [t.score for t in trend])]
    series += [Series("pass^k", pow_k)] if any(v is not None for v in pow_k) else []
    return trend_svg([t.stem for t in trend], series,
                     config_changed=[t.config_changed for t in trend], regressions=[t.regressions > 0 for t in trend],
                     title=f"Suite trend: pass rate, score{' and pass^k' if len(series) > 2 else ''} per run",
                     chart_id="suite-trend",
                     links=[f"/run/{_q(t.stem)}" for t in trend] if served else ())


def _shows_pass_pow_k(history: History, stem: str) -> bool:
    entry = history.run(stem)
    return entry is not None and shows_pass_pow_k(run_k(entry.report))


def test_chart(history: History, name: str, *, served: bool = True) -> str:
    points = test_history(history, name)
    if not points:
        return f'<p class="muted">No run graded {escape(name)}.</p>'
    return trend_svg([p.stem for p in points], [Series("score", [p.score for p in points]),
                                                Series("pass@1", [p.pass_at_1 for p in points])],
                     config_changed=[p.config_changed for p in points], regressions=[p.regression for p in points],
                     title=f"{name}: score and pass@1 per run", chart_id="test-trend",
                     links=[f"/run/{_q(p.stem)}#case={_q(name)}" for p in points] if served else ())


# -- the runs list ----------------------------------------------------------------------------------------
def _live_row(live: LiveRun) -> str:
    """A run in progress in the runs table's own columns: its time, label, model and rubric, the trials passed so
    far under Pass rate, k, and its progress where the config changes go (the page's script keeps them current)."""
    state = live.status or "running"
    return (f'<tr class="row live-run" data-live="{escape(live.stem)}"><td><a href="/live/{_q(live.stem)}">'
            f'{escape(when_text(live.started_at))}</a> <span class="badge info live-state">{escape(state)}</span></td>'
            f"<td>{escape(live.label)}</td><td><code>{escape(live.model)}</code></td><td>{escape(live.rubric)}</td>"
            f'<td class="num live-rate" title="trials passed of those done so far"><span class="live-passed">{live.passed}'
            f'</span>/<span class="live-done-n">{live.done}</span></td><td class="num">–</td><td class="num">–</td>'
            f'<td class="num">–</td><td class="num live-k">{live.trial_count or "–"}</td>'
            f'<td class="changes">in progress: <span class="live-done">{live.done}/{live.total}</span> trials · '
            f'<span class="live-failed">{live.failed}</span> failed · last <code class="live-current">'
            f'{escape(live.current or "")}</code></td></tr>')


def _changes_cell(text: str) -> str:
    """The config changes since the previous run: whole when short, else a line and the rest behind a toggle."""
    if len(text) <= 120:
        return breakable(text)
    return (f'<details class="changes-more"><summary>{breakable(text[:110])}… ({len(text):,} characters)</summary>'
            f"{breakable(text)}</details>")


def _runs_table(history: History, *, served: bool, state: str = "") -> str:
    rows = [_live_row(live) for live in history.live] if served else []
    for entry in reversed(history.runs):
        r = entry.report
        graded = len(r.graded_cases)
        started = escape(_when(entry))
        link = f'<a href="/run/{_q(entry.stem)}">{started}</a>' if served else started
        status = "" if r.status == "completed" else ' <span class="badge skip">interrupted</span>'
        changes = config_line(entry.config_changes, limit=100_000) if entry.previous else "(first run)"
        regress = (f' <span class="badge fail">{plural(len(entry.comparison.regressions), "regression")}</span>'
                   if entry.comparison and entry.comparison.regressions else "")
        rows.append(
            f'<tr class="row run-row" data-run="{escape(entry.stem)}"><td>{link}{status}{regress}</td>'
            f'<td class="label">{breakable(entry.label)}</td>'
            f'<td class="model"><code>{breakable(entry.model)}</code></td><td>{escape(entry.rubric)}</td>'
            f'<td class="num">{r.passed_case_count}/{graded}</td><td class="num">{_rate(r.score)}</td>'
            f'<td class="num">{_rate(r.pass_pow_k) if shows_pass_pow_k(run_k(r)) else "–"}</td>'
            f'<td class="num">{_money(r.cost_usd)}</td>'
            f'<td class="num">{r.trial_count}</td><td class="changes">{_changes_cell(changes or "no change")}</td></tr>')
    head = ("<tr><th>Started</th><th>Label</th><th>Model</th><th>Rubric</th><th class=num>Pass rate</th>"
            "<th class=num>Score</th><th class=num>pass^k</th><th class=num>Cost</th><th class=num>k</th>"
            "<th>Config changes since the previous run</th></tr>")
    return (f'<div class="table-wrap"><div class="scroll"><table class="cases runs" id="runs" data-state="{escape(state)}">'
            f'<thead>{head}</thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div></div>')


def _picker(history: History) -> str:
    if len(history.runs) < 2:
        return ""
    newest_first = list(reversed(history.runs))
    # the pair picked first: the two newest runs that something finished in (one interrupted before any test
    # finished has nothing to compare or diff), else the two newest
    finished = [i for i, e in enumerate(newest_first) if has_finished(e.report)]
    after, before = (finished + [i for i in range(len(newest_first)) if i not in finished])[:2]

    def options(selected: int) -> str:
        return "".join(f'<option value="{escape(e.stem)}"{" selected" if i == selected else ""}>{escape(_when(e))} '
                       f"{escape(e.label)}</option>" for i, e in enumerate(newest_first))

    tests = "".join(f'<option value="{escape(n)}">{escape(n)}</option>' for n in history.test_names())
    return (f'<section class="panel"><h3>Compare two runs</h3><form class="pick" method="get" action="/compare" id="compare-form">'
            f'<label>Before <select name="a" id="pick-a">{options(before)}</select></label>'
            f'<label>After <select name="b" id="pick-b">{options(after)}</select></label>'
            f'<button type="submit">Compare</button></form>'
            f'<form class="pick" method="get" action="/diff" id="diff-form">'
            f'<label>Trajectory diff of <select name="test">{tests}</select></label>'
            f'<input type="hidden" name="a" value="{escape(newest_first[before].stem)}">'
            f'<input type="hidden" name="b" value="{escape(newest_first[after].stem)}">'
            f'<button type="submit">Diff the last two runs</button></form></section>')


def _tests_list(history: History, *, served: bool) -> str:
    names = history.test_names()
    if not names:
        return ""
    if served:
        items = "".join(f'<li><a href="/test/{_q(n)}">{escape(n)}</a></li>' for n in names)
        return f'<section class="panel"><h3>Tests ({len(names)})</h3><ul class="names" id="tests">{items}</ul></section>'
    blocks = "".join(f'<details class="panel test-history" data-test="{escape(n)}"><summary>{escape(n)}</summary>'
                     f"{test_chart(history, n, served=False)}</details>" for n in names)
    return f'<section><h2>Each test across runs ({len(names)})</h2>{blocks}</section>'


def _skipped(history: History) -> str:
    if not history.skipped:
        return ""
    items = "".join(f"<li><code>{escape(p.name)}</code>: {escape(why)}</li>" for p, why in history.skipped.items())
    return f'<div class="alert warn" id="skipped"><p>Result files that could not be read:</p><ul>{items}</ul></div>'


def runs_page(history: History, *, served: bool = True, state: str = "") -> str:
    """The runs of a results folder, newest first, with the suite's trend chart above them."""
    count = len(history.runs)
    meta = f"{escape(str(history.directory))} · {count} run{'s' if count != 1 else ''}"
    if served and history.live:
        meta += f" · {len(history.live)} in progress"
    body = (_head("trialrun · history", "Runs", meta)
            + f'<main class="wrap" id="main"><h2>Suite trend</h2>{suite_chart(history, served=served)}{_skipped(history)}'
            + (_picker(history) if served else "")
            + f"<h2>Runs</h2>{_runs_table(history, served=served, state=state)}{_tests_list(history, served=served)}"
            + f"{_judges(history)}</main>"
            + '<footer class="wrap foot">Made by trialrun.'
            + ("" if served else " Self-contained: this page loads nothing from the network.") + "</footer>")
    return _page("trialrun · runs", body, served=served, script=_LIVE_JS + _RUNS_JS if served else "",
                 nav=site_nav(str(history.directory)) if served else "")


def _judges(history: History) -> str:
    """How the judges of output quality agreed with the hand grades, over every run of the folder."""
    from ..report._agreement import agreement
    from ._agreement import agreement_html

    return agreement_html(agreement(entry.report for entry in history.runs), f"over the {len(history.runs)} runs here")


def history_html(history: History) -> str:
    """The static export: the runs list, the suite trend and every test's chart in one self-contained file."""
    return runs_page(history, served=False)


# -- one test across runs ---------------------------------------------------------------------------------
def _trial_links(entry: RunEntry, name: str) -> str:
    case = next((c for c in entry.report.cases if c.name == name), None)
    return " ".join(f'<a class="trial-page-link" data-trial="{t.trial}" href="{escape(trial_href(entry.stem, name, t.trial))}">'
                    f'{t.trial}{" ✓" if t.passed else " ✗"}</a>' for t in (case.trials if case else []))


def test_page(history: History, name: str, *, token: str = "") -> str:
    """Test `name` across runs: its chart (each point a link to the run), each run's result with its trials, the
    default diff against the run before (a failing trial beside a passing one), and the hand-grade form."""
    from ._grade_form import grade_form, hand_graded

    points = test_history(history, name)
    rows = []
    previous: RunEntry | None = None
    for p in points:
        entry = history.run(p.stem)
        assert entry is not None  # test_history reads the history's own runs
        diff, pair = "", None
        if previous is not None:
            pair = diff_pair(name, previous, entry)
            diff = (f'<a class="diff-link" href="{escape(diff_href(name, *pair.before, *pair.after))}">diff trial '
                    f"{pair.after[1]} vs {'previous run' if pair.before[0] != entry.stem else 'this run'}'s trial "
                    f"{pair.before[1]}</a>")
        this = next((c for c in entry.report.cases if c.name == name), None)
        flaky = flaky_pair(this.trials) if this is not None else None
        if flaky is not None and (pair is None or (pair.before, pair.after) != ((entry.stem, flaky[0]), (entry.stem, flaky[1]))):
            href = diff_href(name, entry.stem, flaky[0], entry.stem, flaky[1])
            diff += (f'{" · " if diff else ""}<a class="flaky-diff-link" href="{escape(href)}">failing trial {flaky[1]} '
                     f"beside passing trial {flaky[0]} (this run)</a>")
        marks = "".join([' <span class="badge info">config changed</span>' if p.config_changed else "",
                         ' <span class="badge fail">regression</span>' if p.regression else "",
                         ' <span class="badge skip hand-graded">graded by hand</span>' if hand_graded(entry, name) else ""])
        status = "" if p.passed is None or this is None else escape(result_word(this))
        rows.append(f'<tr class="row{" regression" if p.regression else ""}" data-run="{escape(p.stem)}">'
                    f'<td><a href="/run/{_q(p.stem)}#case={_q(name)}">{escape(when(p.when))}</a>{marks}</td>'
                    f'<td>{status}</td><td class="num score">{_rate(p.score)}</td><td class="num">{_rate(p.pass_at_1)}</td>'
                    f'<td class="trials">{_trial_links(entry, name)}</td><td>{diff}</td></tr>')
        previous = entry
    table = ('<div class="table-wrap"><div class="scroll"><table class="cases" id="test-runs"><thead><tr><th>Run</th>'
             '<th>Result</th><th class=num>Score</th><th class=num>pass@1</th><th>Trials</th><th>Trajectory</th></tr>'
             f'</thead><tbody>{"".join(reversed(rows))}</tbody></table></div></div>')
    graded = [history.run(p.stem) for p in reversed(points)]
    form = grade_form([e for e in graded if e is not None], name, token, back=f"/test/{_q(name)}") if token else ""
    body = (_head("trialrun · test history", name, f"{len(points)} run{'s' if len(points) != 1 else ''} graded this test")
            + f'<main class="wrap" id="main">{test_chart(history, name)}<h2>Runs</h2>{table}{form}</main>')
    return _page(f"trialrun · {name}", body, served=True, nav=site_nav(str(history.directory), [(name, None)]))


# -- a run in progress ------------------------------------------------------------------------------------
def live_page(live: LiveRun) -> str:
    pct = round(100 * live.done / live.total) if live.total else 0
    cases = "".join(
        f'<tr data-case="{escape(name)}"><th scope="row"><code>{escape(name)}</code></th><td class="num">{c["done"]}/{c["trials"]}</td>'
        f'<td class="num">{c["failed"]}</td></tr>' for name, c in live.cases.items())
    problems = "".join(f"<li>{escape(p)}</li>" for p in live.problems)
    body = (_head("trialrun · run in progress", live.run_id or live.stem, f"started {escape(when_text(live.started_at))}")
            + f'<main class="wrap" id="main"><section class="panel" id="live" data-live="{escape(live.stem)}" data-reload="run">'
              f'<p><span class="badge info live-state">{escape(live.status or "running")}</span> '
              f'<strong class="live-done" id="live-done">{live.done}/{live.total}</strong> trials · '
              f'<span class="live-passed" id="live-passed">{live.passed}</span> passed · '
              f'<span class="live-failed" id="live-failed">{live.failed}</span> failed · '
              f'<span class="live-elapsed">{live.elapsed_s:.1f} s</span> · ETA <span class="live-eta" id="live-eta">'
              f'{"–" if live.eta_s is None else f"{live.eta_s:.1f} s"}</span> · last: <code class="live-current">{escape(live.current or "")}</code></p>'
              f'<progress id="live-progress" max="{max(live.total, 1)}" value="{live.done}">{pct}%</progress>'
              f'<p class="muted">Updates as trials finish (read from {escape(live.path.name)}).</p></section>'
              f'<table class="kv"><thead><tr><th>Test</th><th class=num>Trials done</th><th class=num>Failed</th></tr></thead>'
              f'<tbody id="live-cases">{cases}</tbody></table>'
              + (f'<div class="alert warn"><ul>{problems}</ul></div>' if problems else "") + "</main>")
    return _page(f"trialrun · live {live.stem}", body, served=True, script=_LIVE_JS,
                 nav=site_nav(str(live.path.parent), [(f"{live.stem} (in progress)", None)]))
