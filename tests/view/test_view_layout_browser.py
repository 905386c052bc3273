"""Every page `trialrun view` serves, at 390, 1024, 1400 and 1920 px in headless Chromium (two real runs of a suite
with a flaky test): no horizontal overflow of the page, no word broken in the middle ("traject ory"), no table cut
(from 1024 px every table fits; on a phone a wide table scrolls inside its own box), nothing spilling out of its
card or cell, each chart filling its card, a metric's colour the same on every chart, a test's trial links side by
side, and a test's place in its suite file said in words ("Defined at state/eval/tests.json:1"), never "line 1"."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import _browser
import pytest
import starlette  # noqa: F401  # the view extra is in the test extra: these tests run in CI, never skip
from _flaky_runs import FLAKY, TRIALS, FlakyRuns, make_flaky_runs
from _history_runs import served

WIDTHS = (390, 1024, 1400, 1920)

#: What is wrong with the page, measured in it: the page's overflow; words of 3+ letters (not part of a longer
#: token with digits: ids and hashes may break) drawn on two lines; tables wider than the box that shows them,
#: and whether that box scrolls; cards, cells and badges whose content is wider than they are; each chart's width
#: beside its card's.
MEASURE = """() => {
  const width = document.documentElement.clientWidth;
  const out = {overflow: document.documentElement.scrollWidth - width, broken: [], tables: [], spill: [], charts: []};
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode, el = node.parentElement;
    if (!el || el.closest("pre, textarea, script, style, svg, select, option") || !el.getClientRects().length) continue;
    const re = /(?<![A-Za-z0-9])[A-Za-z]{3,}(?![A-Za-z0-9])/g;
    let m;
    while ((m = re.exec(node.nodeValue))) {
      const range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const tops = new Set(Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (tops.size > 1) out.broken.push(m[0] + " in <" + el.tagName.toLowerCase() + " " + el.className + ">: " + node.nodeValue.slice(0, 60));
    }
  }
  for (const table of document.querySelectorAll("table")) {
    if (!table.getClientRects().length) continue;
    let box = table.parentElement;
    while (box && box !== document.body && getComputedStyle(box).overflowX === "visible") box = box.parentElement;
    const scrolls = !!box && box !== document.body && ["auto", "scroll"].includes(getComputedStyle(box).overflowX);
    const room = scrolls ? box.clientWidth : width;
    if (table.scrollWidth > room + 1) out.tables.push({table: table.id || table.className, width: table.scrollWidth, room, scrolls});
  }
  for (const el of document.querySelectorAll(".stat, .panel, figure, .badge, td, th, dd, .alert, .page-links")) {
    if (!el.getClientRects().length || getComputedStyle(el).overflowX !== "visible") continue;
    if (el.scrollWidth > el.clientWidth + 1) out.spill.push("<" + el.tagName.toLowerCase() + " " + el.className + ">: " + el.innerText.slice(0, 50));
  }
  for (const svg of document.querySelectorAll("svg.trend")) {
    const card = svg.closest("figure") || svg.parentElement, style = getComputedStyle(card);
    const inner = card.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    out.charts.push({chart: svg.id, width: svg.getBoundingClientRect().width, card: inner});
  }
  return out;
}"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> FlakyRuns:
    return make_flaky_runs(tmp_path_factory.mktemp("layout"))


@pytest.fixture(scope="module")
def base(runs: FlakyRuns) -> Iterator[str]:
    with served(runs.results) as url:
        yield url


def _pages(runs: FlakyRuns) -> dict[str, str]:
    return {
        "runs": "/", "run": f"/run/{runs.flaky}#case={FLAKY}", "test": f"/test/{FLAKY}",
        "compare": f"/compare?{urlencode({'a': runs.steady, 'b': runs.flaky})}",
        "diff": f"/diff?{urlencode({'test': FLAKY, 'a': runs.flaky, 'ta': 1, 'b': runs.flaky, 'tb': 2})}",
        "trial": f"/trial/{runs.flaky}?{urlencode({'test': FLAKY, 'trial': 1, 'hl': 'milk'})}",
        "search": "/search?q=milk", "404": "/no/such/page",
    }


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_at_every_width(chromium: Any, base: str, runs: FlakyRuns, width: int, tmp_path: Path) -> None:
    context = _browser.new_context(chromium, width=width, height=900)
    try:
        for name, path in _pages(runs).items():
            page = _browser.open_url(context, base + path)
            if name == "run":
                page.page.wait_for_selector("tr.detail-row", timeout=30_000)  # the case opened (#case=), trial 2 in it
                page.expand_trial(page.page.locator("tr.detail-row").first, 2)  # (its verdicts table measured too)
            page.page.wait_for_timeout(100)
            found = page.page.evaluate(MEASURE)
            where = f"{name} at {width} px"
            page.screenshot(tmp_path / f"{name}-{width}.png")
            expected = ["console error: Failed to load resource: the server responded with a status of 404 (Not Found)"]
            assert page.problems == (expected if name == "404" else []), where
            assert found["overflow"] <= 0, f"{where}: the page is {found['overflow']} px wider than the window"
            assert found["broken"] == [], f"{where}: words broken in the middle: {found['broken']}"
            for table in found["tables"]:  # wider than its box: only on a phone, and then its box scrolls
                assert width < 1024 and table["scrolls"], f"{where}: table cut: {table}"
            assert found["spill"] == [], f"{where}: content wider than its card or cell: {found['spill']}"
            for chart in found["charts"]:
                assert chart["width"] >= 0.95 * chart["card"], f"{where}: the chart uses part of its card: {chart}"
            page.page.close()
    finally:
        context.close()


def test_a_metric_has_one_colour_on_every_chart(context: Any, base: str, runs: FlakyRuns) -> None:
    """The score is drawn in the same colour on the runs list's chart and on a test's chart (series in another
    order on each page once swapped them)."""
    colours: dict[str, set[str]] = {}
    for path, chart in (("/", "#suite-trend"), (f"/test/{FLAKY}", "#test-trend")):
        page = _browser.open_url(context, base + path)
        for series, fill in page.page.locator(f"{chart} circle.pt:not(.regression)").evaluate_all(
                "cs => cs.map(c => [c.dataset.series, getComputedStyle(c).fill])"):
            colours.setdefault(series, set()).add(fill)
        page.page.close()
    assert colours["score"] and all(len(fills) == 1 for fills in colours.values()), colours
    assert colours["pass rate"] == colours["pass@1"]  # how often a trial passes: one colour


@pytest.mark.parametrize("width", [1024, 1920])
def test_trial_links_sit_side_by_side_and_the_suite_line_is_said_in_words(chromium: Any, base: str, runs: FlakyRuns,
                                                                         width: int) -> None:
    context = _browser.new_context(chromium, width=width, height=900)
    try:
        page = _browser.open_url(context, f"{base}/test/{FLAKY}")
        tops = page.page.locator(f'#test-runs tr[data-run="{runs.flaky}"] a.trial-page-link').evaluate_all(
            "links => links.map(a => Math.round(a.getBoundingClientRect().top))")
        assert len(tops) == TRIALS and len(set(tops)) == 1, tops  # one line, not one link a line
        run = _browser.open_url(context, f"{base}/run/{runs.flaky}#case={FLAKY}")
        detail = run.page.locator("tr.detail-row")
        detail.wait_for()
        facts = detail.locator("dl.facts-list").first.inner_text()
        assert "Defined at\nstate/eval/tests.json:1 (its line in the suite file)" in facts and "\nline\n" not in facts
    finally:
        context.close()
