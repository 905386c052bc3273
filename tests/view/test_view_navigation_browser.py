"""`trialrun view` clicked through in headless Chromium over two real runs of a suite with a flaky test (made by
`trialrun run all -k 5`, tests/render/_flaky_runs.py): from the runs list to a run, a trial and back; from the
compare page to the diff of the regressed test, a failing trial beside a passing one, and on to the trial; the
search box; a grade set in the page landing in the result file and in `trialrun report`; a run in progress in the
runs list's own columns; and every page at 390 px without horizontal overflow (document's scrollWidth)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import _browser
import httpx
import pytest
import starlette  # noqa: F401  # the view extra is in the test extra: these tests run in CI, never skip
from _flaky_runs import FAILING, FLAKY, STEADY, TAG, TRIALS, FlakyRuns, make_flaky_runs
from _history_runs import append_trial, end_journal, served, start_journal


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> FlakyRuns:
    return make_flaky_runs(tmp_path_factory.mktemp("flaky"))


@pytest.fixture(scope="module")
def base(runs: FlakyRuns) -> Iterator[str]:
    with served(runs.results) as url:
        yield url


def _open(context: Any, url: str, **kwargs: Any) -> _browser.Page:
    page = _browser.open_url(context, url, **kwargs)
    assert page.problems == []
    return page


def _ready(page: Any) -> None:
    page.wait_for_selector("html[data-ready='1']", state="attached")


def _copy(runs: FlakyRuns, tmp_path: Path) -> Path:
    folder = tmp_path / "eval"
    shutil.copytree(runs.results, folder, symlinks=True)
    return folder


def test_runs_list_to_a_run_to_a_trial_and_back(context: Any, base: str, runs: FlakyRuns, tmp_path: Path) -> None:
    page = _open(context, base + "/")
    p = page.page
    assert p.locator("nav.site-nav .folder").inner_text() == str(runs.results)
    p.locator(f'tr.run-row[data-run="{runs.flaky}"] td a').first.click()
    _ready(p)
    assert p.locator("#crumbs li").all_inner_texts()[0] == "Runs"
    detail = page.expand_case(FLAKY)
    assert detail.locator("a.history-link").get_attribute("href") == f"/test/{FLAKY}"
    failing = FAILING[0]
    assert detail.locator("a.trial-page-link").all_inner_texts() == [
        f"{k} {'✗' if k in FAILING else '✓'}" for k in range(1, TRIALS + 1)]
    page.expand_trial(detail, failing).locator("a.trial-link").click()
    p.wait_for_selector("#judgement")
    assert p.locator("h1").inner_text() == f"{FLAKY} · trial {failing}"
    # the verdicts, each with its reason: the failing `contains` check says what it looked for
    failed = p.locator("#verdicts tr.bad")
    assert failed.count() >= 1 and "milk" in failed.first.locator("td.reason").inner_text()
    assert p.locator("#score-made").inner_text().startswith("Score ")
    assert p.locator("#sub-scores dd.sub-score").count() == 3
    page.screenshot(tmp_path / "trial.png")
    # back to the case in its run (opened), then to the runs list
    p.locator("#crumbs a", has_text=FLAKY).click()
    _ready(p)
    p.locator("tr.detail-row").wait_for()
    assert f"#case={FLAKY}" in p.url
    p.locator("#crumbs a", has_text="Runs").click()
    p.wait_for_selector("tr.run-row")
    assert p.url == base + "/"
    assert page.problems == []


def test_compare_links_to_the_diff_of_the_regressed_test_failing_beside_passing(context: Any, base: str,
                                                                                runs: FlakyRuns, tmp_path: Path) -> None:
    page = _open(context, f"{base}/compare?{urlencode({'a': runs.steady, 'b': runs.flaky})}")
    p = page.page
    _ready(p)
    changed = p.locator(f'#changed-tests li[data-test="{FLAKY}"]')
    assert "regression" in changed.inner_text()
    assert p.locator(f'#changed-tests li[data-test="{STEADY}"]').count() == 0  # unchanged: not listed
    assert changed.locator("a.history-link").get_attribute("href") == f"/test/{FLAKY}"
    changed.locator("a.diff-link").click()
    p.wait_for_selector("#diff-summary")
    before, after = p.locator('a.side-trial[data-side="before"]'), p.locator('a.side-trial[data-side="after"]')
    assert before.inner_text() == "trial 1" and after.inner_text() == f"trial {FAILING[0]}"
    head = p.locator(".page-head .meta").inner_text()
    assert f"Before: {runs.steady} · trial 1 PASS" in head and f"After: {runs.flaky} · trial {FAILING[0]} FAIL" in head
    assert p.locator("#pick-tb").input_value() == str(FAILING[0])
    assert p.locator("tr.first-divergence").count() == 1  # the failing trial never called read_notes
    page.screenshot(tmp_path / "diff.png")
    # another pair picked on the page: the later run's other failing trial
    p.select_option("#pick-tb", str(FAILING[1]))
    p.locator("#trial-picker button").click()
    p.wait_for_url(f"**tb={FAILING[1]}**")
    assert p.locator('a.side-trial[data-side="after"]').inner_text() == f"trial {FAILING[1]}"
    p.locator('a.side-trial[data-side="after"]').click()
    p.wait_for_selector("#judgement")
    assert p.locator("h1").inner_text() == f"{FLAKY} · trial {FAILING[1]}"
    # the flaky trial beside a passing trial of its own run
    p.locator("#diff-other-way").click()
    p.wait_for_selector("#diff-summary")
    assert p.locator(".page-head .meta").inner_text().count(runs.flaky) == 2
    assert page.problems == []


def test_the_regression_row_of_a_tests_history_diffs_a_failing_trial_against_a_passing_one(context: Any, base: str,
                                                                                           runs: FlakyRuns) -> None:
    p = _open(context, f"{base}/test/{FLAKY}").page
    row = p.locator("#test-runs tr.regression")
    assert row.get_attribute("data-run") == runs.flaky
    href = row.locator("a.diff-link").get_attribute("href")
    assert href == "/diff?" + urlencode({"test": FLAKY, "a": runs.steady, "ta": 1, "b": runs.flaky, "tb": FAILING[0]})
    # chart points are links to their run
    points = p.locator('#test-trend a.pt-link')
    assert points.count() == 4  # two runs x (score, pass@1)
    points.last.click()  # drawn last: the regression's point (the first run's two points lie on each other at 1.00)
    _ready(p)
    assert p.url.endswith(f"/run/{runs.flaky}#case={FLAKY}")
    p.locator("tr.detail-row").wait_for()


def test_the_search_box_finds_a_test_by_tag_and_runs_by_model(context: Any, base: str, runs: FlakyRuns) -> None:
    p = _open(context, f"{base}/run/{runs.steady}", ready="html[data-ready='1']").page
    p.fill("#search-q", TAG)
    p.press("#search-q", "Enter")
    p.wait_for_selector("#found-tests")
    assert p.locator("#found-tests a.found-test").all_inner_texts() == [FLAKY]
    p.fill("#search-q", "model.yaml")
    p.press("#search-q", "Enter")
    p.wait_for_url("**q=model.yaml")
    assert p.locator("#found-runs a.found-run").count() == 2
    assert p.locator("#found-tests a.found-test").count() == 0


def test_a_grade_set_in_the_page_lands_in_the_result_file_and_in_trialrun_report(context: Any, runs: FlakyRuns,
                                                                                 tmp_path: Path) -> None:
    from click.testing import CliRunner

    from trialrun.cli import main

    folder = _copy(runs, tmp_path)
    result_file = folder / f"{runs.flaky}.json"

    def case() -> dict[str, Any]:
        return next(c for c in json.loads(result_file.read_text())["cases"] if c["name"] == FLAKY)

    before = case()
    with served(folder) as url:
        page = _open(context, f"{url}/trial/{runs.flaky}?{urlencode({'test': FLAKY, 'trial': 1})}")
        p = page.page
        # a turn's link to its raw exchange opens it (no script: the fragment reveals the details around it)
        link = p.locator("a.exchange-link").first
        assert p.locator("details.raw-exchange").first.get_attribute("open") is None
        link.click()
        p.wait_for_url("**#exchange-1")
        assert p.locator("details.raw-exchange").first.get_attribute("open") is not None
        current = p.locator('#grade-form input[name="quality"]').input_value()
        chosen = "0" if current != "0" else "0.5"
        p.fill('#grade-form input[name="quality"]', chosen)
        p.select_option("#grade-trial", "all")
        p.fill("#grade-comment", "reads the notes but lists one item only")
        p.locator("#grade-form button").click()
        p.wait_for_url("**#grade")
        p.wait_for_selector("#hand-grade")
        note = p.locator("#hand-grade").inner_text()
        assert f"output quality {float(chosen):.2f}/0.5" in note and "reads the notes" in note
        assert f"was {float(current):.2f}" in note
        after = case()
        assert after["score"] != before["score"]
        audits = [next(v["details"]["hand_grade"] for v in t["verdicts"] if v.get("kind") == "score")
                  for t in after["trials"]]
        assert len(audits) == TRIALS and all(a["quality"] == float(chosen) for a in audits)  # "all": every trial
        audit = audits[0]
        assert audit["previous"] == float(current) and audit["quality"] == float(chosen) and audit["via"] == "view"
        assert audit["by"] and audit["at"] and audit["comment"] == "reads the notes but lists one item only"
        shown = p.locator(".page-head .meta").inner_text()
        assert f"score {after['trials'][0]['score']:.2f}" in shown
        # the test's page says it was graded by hand
        history = _open(context, f"{url}/test/{FLAKY}").page
        assert history.locator(f'#test-runs tr[data-run="{runs.flaky}"] .hand-graded').count() == 1
        assert history.locator("#grade-form select#grade-run option").count() == 2  # the test's page grades too
        # a form posted from elsewhere (no token; or another origin) is refused and changes nothing
        stray = httpx.post(f"{url}/grade", data={"run": runs.flaky, "test": FLAKY, "quality": "0.25", "back": "/"})
        assert stray.status_code == 403
        token = p.locator('#grade-form input[name="token"]').get_attribute("value")
        foreign = httpx.post(f"{url}/grade", headers={"origin": "https://elsewhere.invalid"},
                             data={"token": token, "run": runs.flaky, "test": FLAKY, "quality": "0.25", "back": "/"})
        assert foreign.status_code == 403 and case() == after
    report = CliRunner().invoke(main, ["report", runs.flaky, "--json", "--results-dir", str(folder), "--exit-zero"])
    assert report.exit_code == 0, report.output
    reported = next(c for c in json.loads(report.output)["cases"] if c["name"] == FLAKY)
    assert reported["score"] == after["score"]


def _cell(page: Any, row: Any, header: str) -> str:
    headers = page.locator("#runs thead th").all_inner_texts()
    index = [h.strip().lower() for h in headers].index(header.lower())
    return str(row.locator("td").nth(index).inner_text()).strip()


def test_the_runs_list_follows_a_live_run_in_its_own_columns(chromium: Any, context: Any, runs: FlakyRuns,
                                                             tmp_path: Path) -> None:
    from playwright.sync_api import expect

    folder = _copy(runs, tmp_path)
    journal = folder / "results_20991231_235959.jsonl"
    with served(folder) as url:
        page = _open(context, url + "/")
        p = page.page
        assert p.locator("tr.live-run").count() == 0
        start_journal(journal, {FLAKY: 2, STEADY: 1})  # started after the page was opened: it reloads itself
        row = p.locator("tr.live-run")
        expect(row).to_have_count(1, timeout=10_000)
        assert _cell(p, row, "Model") == "scripted:model_v1.yaml"
        assert _cell(p, row, "Pass rate") == "0/0" and _cell(p, row, "k") == "1"
        assert _cell(p, row, "Score") == "–" and "2099-12-31 23:59:59 UTC" in _cell(p, row, "Started")
        append_trial(journal, FLAKY, 1, passed=True, elapsed_s=0.4)
        append_trial(journal, FLAKY, 2, passed=False, elapsed_s=0.8)
        expect(row.locator(".live-done")).to_have_text("2/3", timeout=10_000)
        assert _cell(p, row, "Pass rate") == "1/2"
        assert "in progress: 2/3 trials · 1 failed" in _cell(p, row, "Config changes since the previous run")
        page.screenshot(tmp_path / "live-runs.png")
        phone = _browser.new_context(chromium, width=390, height=844)  # the live row and page fit a phone too
        try:
            for path in ("/", f"/live/{journal.stem}"):
                small = _browser.open_url(phone, url + path)
                assert small.page.evaluate("document.documentElement.scrollWidth") <= 390, path
                assert small.problems == []
        finally:
            phone.close()
        end_journal(journal)
        journal.unlink()
        expect(p.locator("tr.live-run")).to_have_count(0, timeout=10_000)
        assert page.problems == []


def test_every_page_fits_a_390px_phone(chromium: Any, base: str, runs: FlakyRuns, tmp_path: Path) -> None:
    phone = _browser.new_context(chromium, width=390, height=844)
    pages = {
        "runs": "/", "run": f"/run/{runs.flaky}#case={FLAKY}", "test": f"/test/{FLAKY}",
        "compare": f"/compare?{urlencode({'a': runs.steady, 'b': runs.flaky})}",
        "diff": f"/diff?{urlencode({'test': FLAKY, 'a': runs.steady, 'b': runs.flaky})}",
        "trial": f"/trial/{runs.flaky}?{urlencode({'test': FLAKY, 'trial': 2})}",
        "search": f"/search?q={TAG}", "404": "/no/such/page",
    }
    try:
        for name, path in pages.items():
            page = _browser.open_url(phone, base + path)
            page.page.wait_for_timeout(200)
            width = page.page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, f"{name}: {width} px wide at 390"
            page.screenshot(tmp_path / f"phone-{name}.png")
            if name == "404":
                assert page.page.locator("#home-link").get_attribute("href") == "/"
                assert page.page.locator("h1").inner_text() == "Not found"
            if name == "runs":  # the chart's text reads (>= 9 px) and the table shows more than its first column
                heights = page.page.locator("#suite-trend text.axis").evaluate_all(
                    "ts => ts.map(t => t.getBoundingClientRect().height)")
                assert min(heights) >= 9, heights
                first = page.page.locator("tr.run-row td").first
                assert first.evaluate("td => getComputedStyle(td).position") == "sticky"
                second = page.page.locator("tr.run-row td").nth(1).bounding_box()
                assert second is not None and second["x"] < 390
            page.page.close()
    finally:
        phone.close()


def test_a_flaky_tests_failing_trial_beside_its_passing_one_in_two_clicks(context: Any, base: str,
                                                                          runs: FlakyRuns) -> None:
    """From the run page: click 1 opens the flaky test's row, click 2 its "failing trial beside passing trial"
    link; the diff shows the passing trial's call as the step the failing trial lacks, and the verdict that flipped
    (the `contains` check) with both reasons. The test's history page links that run's trials too."""
    page = _open(context, f"{base}/run/{runs.flaky}")
    p = page.page
    _ready(p)
    p.locator(f'button.expander[data-case="{FLAKY}"]').click()  # 1
    link = p.locator("tr.detail-row a.flaky-diff-link")
    assert link.inner_text() == f"Failing trial {FAILING[0]} beside passing trial 1 →"
    link.click()  # 2
    p.wait_for_selector("#diff-summary")
    assert page.problems == []
    assert p.locator("h1").inner_text() == FLAKY
    assert p.locator("#pick-ta option[selected]").inner_text() == "1 ✓ pass"
    assert p.locator("#pick-tb option[selected]").inner_text().startswith(f"{FAILING[0]} ")
    removed = p.locator('tr.removed[data-divergence="removed"]')  # the failing trial never asked the model
    assert removed.count() == 2 and "read_notes" in removed.first.locator('td[data-side="before"]').inner_text()
    assert "(only the before trial)" in removed.first.locator('td[data-side="after"]').inner_text()
    assert "milk" in removed.nth(1).locator('td[data-side="before"]').inner_text()  # the passing trial's reply
    flips = p.locator("#verdict-flips tbody tr")
    flipped = flips.evaluate_all("rows => rows.map(r => r.dataset.grader)")
    assert "contains('milk')" in flipped
    row = p.locator("#verdict-flips tr[data-grader=\"contains('milk')\"]")
    assert "✓ pass" in row.locator("td").nth(0).inner_text() and "✗ fail" in row.locator("td").nth(1).inner_text()
    assert "milk" in row.locator("td").nth(1).inner_text()  # the failing trial's reason says what it looked for
    history = _open(context, f"{base}/test/{FLAKY}")
    first_run = history.page.locator(f'#test-runs tr[data-run="{runs.steady}"] a.flaky-diff-link')
    assert first_run.count() == 0  # every trial of the first run passed: nothing to put beside
    this_run = history.page.locator(f'#test-runs tr[data-run="{runs.flaky}"]')
    assert "diff trial" in this_run.inner_text()  # (against the previous run's passing trial, as before)
