"""Every view of a comparison says the same verdict: the terminal, `--json`, Markdown (the PR job summary), the HTML
report and the viewer's compare page each show the word for every test and for the run, the live intervals as
intervals, and the gate's one line, all read from the one Comparison `_verdict.judge` decided (no view decides
anything itself). The eval skill's own compare lines stay exactly as the skill prints them."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from html import unescape
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

import trialrun as tr
from trialrun.render.html import comparison_html
from trialrun.render.markdown import comparison_markdown
from trialrun.render.terminal import print_comparison
from trialrun.report.compare import Comparison, compare

STARTED = datetime(2026, 7, 31, 14, 0, tzinfo=timezone.utc)


def _run(run_id: str, counts: dict[str, tuple[int, int]], kind: str, second: int) -> tr.RunReport:
    cases = [tr.CaseResult.from_trials(name, [tr.TrialResult(trial=n + 1, passed=n < passed, models=[kind])
                                               for n in range(run)], tags=[], mode="deterministic")
             for name, (passed, run) in counts.items()]
    return tr.RunReport.build(cases, trial_count=5, started_at=STARTED.replace(second=second), duration_s=1,
                              run_id=run_id)


#: A live pair: one test collapsed, one flaked once, eight unchanged (10 tests x 5 trials).
LIVE_BEFORE = {"collapsed": (5, 5), "flaked": (5, 5), **{f"steady-{i}": (5, 5) for i in range(8)}}
LIVE_AFTER = {"collapsed": (0, 5), "flaked": (4, 5), **{f"steady-{i}": (5, 5) for i in range(8)}}


def _pairs() -> dict[str, tuple[tr.RunReport, tr.RunReport]]:
    return {
        "live": (_run("eval_a", LIVE_BEFORE, "live", 0), _run("eval_b", LIVE_AFTER, "live", 1)),
        "deterministic": (_run("eval_a", {"x": (3, 3), "y": (3, 3)}, "scripted", 0),
                          _run("eval_b", {"x": (0, 3), "y": (3, 3)}, "scripted", 1)),
    }


def _terminal(comparison: Comparison) -> str:
    buffer = StringIO()
    print_comparison(comparison, Console(file=buffer, width=400, highlight=False, color_system=None))
    return buffer.getvalue()


def _viewer(tmp_path: Path, before: tr.RunReport, after: tr.RunReport) -> str:
    from starlette.testclient import TestClient

    from trialrun.view import create_app

    for report, stem in ((before, "results_20260731_140000"), (after, "results_20260731_140001")):
        (tmp_path / f"{stem}.json").write_text(report.model_dump_json())
    client = TestClient(create_app(tmp_path), base_url="http://127.0.0.1")
    page = client.get("/compare", params={"a": "results_20260731_140000", "b": "results_20260731_140001"})
    assert page.status_code == 200
    return page.text


def _text(html: str) -> str:
    """The page's text as a reader sees it (no script, style or embedded data)."""
    visible = re.sub(r"<(script|style)[^>]*>.*?</\1>", "", html, flags=re.S)
    return unescape(re.sub(r"<[^>]+>", "", visible))


@pytest.mark.parametrize("kind", ["live", "deterministic"])
def test_every_view_shows_the_same_words_intervals_and_gate(kind: str, tmp_path: Path) -> None:
    before, after = _pairs()[kind]
    comparison = compare(before, after)
    assert comparison.gate is not None and comparison.run is not None
    data = json.loads(comparison.model_dump_json())
    words = {d["name"]: d["word"] for d in data["cases"]}
    terminal, markdown = _terminal(comparison), comparison_markdown(comparison)
    static, served = comparison_html(comparison, before, after), _viewer(tmp_path, before, after)
    gate = comparison.gate.line

    assert data["gate"]["line"] == gate and gate in terminal.splitlines()
    assert gate.removeprefix("gate: ") in markdown
    for page in (static, served):
        text = _text(page)
        assert gate.removeprefix("gate: ") in text and f"THE RUN IS {comparison.run.word.upper()}" in text
        assert comparison.run.reason in text
        payload = json.loads(unescape(re.search(r'id="trialrun-data"[^>]*>(.*?)</script>', page, re.S).group(1)))
        assert {c["name"]: c.get("word") for c in payload["comparison"]["cases"]} == words  # the page's table
    for name, word in words.items():
        assert re.search(rf"^  {re.escape(name)}:\s+{word}: ", terminal, re.M), (name, word)
        assert re.search(rf"^\| \**{re.escape(name)}\** \|.*\| \S+ {word} \|", markdown, re.M), (name, word)
    plain_markdown = unescape(markdown.replace("\\", ""))  # Markdown's escapes off, to read it as text
    assert f" {comparison.run.word}** — {comparison.run.reason}" in plain_markdown

    chance = comparison.run.chance
    if kind == "deterministic":
        assert chance is None and comparison.pairing == "deterministic"
        for view in (terminal, markdown, _text(static), _text(served)):
            assert "every change is real" in view.lower() and "p=" not in view and "95%" not in view
        return
    assert chance is not None and chance.pass_pow_k_change is not None
    low, high = chance.change[1], chance.change[2]
    shown = f"[{low:+.2f}, {high:+.2f}]"
    plain_markdown = unescape(markdown.replace("\\", ""))
    assert shown in terminal and shown in plain_markdown and shown in _text(static) and shown in _text(served)
    assert words == {"collapsed": "worse", "flaked": "cannot tell", **{f"steady-{i}": "cannot tell" for i in range(8)}}
    assert data["run"]["word"] == "worse" and comparison.gate.failed


def test_the_eval_skill_s_lines_are_kept_exactly() -> None:
    before = _run("eval_1", {"read-file": (1, 1), "search-json": (1, 1), "web-search": (1, 1)}, "scripted", 0)
    after = _run("eval_2", {"read-file": (1, 1), "search-json": (1, 1), "web-search": (1, 1)}, "scripted", 1)
    for report, scores in ((before, (0.95, 0.80, 0.75)), (after, (0.88, 1.00, 0.75))):
        for case, score in zip(report.cases, scores):
            case.score = score
    lines = _terminal(compare(before, after)).splitlines()
    assert "read-file:    0.95 -> 0.88  ▼ -0.07" in lines
    assert "search-json:  0.80 -> 1.00  ▲ +0.20" in lines
    assert "web-search:   0.75 -> 0.75  = unchanged" in lines
    assert "Pass rate: 3/3 -> 3/3   = unchanged" in lines


def test_the_compare_page_s_table_shows_each_test_s_word_in_a_browser(context: object, tmp_path: Path) -> None:
    """The per-test table the page's script draws (headless Chromium): a Verdict column with each word, the pass@1
    change as an interval, and a filter for the tests that are worse."""
    import _browser

    before, after = _pairs()["live"]
    comparison = compare(before, after)
    html_file = tmp_path / "compare.html"
    html_file.write_text(comparison_html(comparison, before, after), encoding="utf-8")
    page = _browser.open_report(context, html_file)
    assert page.problems == []
    p = page.page
    row = p.locator('#delta-table tbody tr.row[data-case="collapsed"]')
    assert "worse" in row.inner_text() and "-1.00 [" in row.inner_text()
    assert "cannot tell" in p.locator('#delta-table tbody tr.row[data-case="flaked"]').inner_text()
    p.locator("#filter-status label", has_text="Verdict: worse").click()
    names = p.locator("#delta-table tbody tr.row").evaluate_all("rows => rows.map(r => r.dataset.case)")
    assert names == ["collapsed"]
    assert "fails: 1 test worse (collapsed)" in p.locator("#gate").inner_text()
    page.screenshot(tmp_path / "compare-verdict.png")
    assert page.problems == []
