"""`trialrun view` in a real browser (headless Chromium driven by Playwright) over five real runs of the
quickstart: the runs list newest first with the config changes, the suite and test trend charts with a point per
run and the regression marked, two runs compared by picking them, the trajectory diff marking the right first
divergence, and a run in progress updating while its journal grows. Pages load with no console error and request
nothing beyond the local server. Screenshots are saved under each test's tmp dir."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import _browser
import pytest
import starlette  # noqa: E402,F401  # in the test extra (as the view extra): these tests run in CI, never skip
from _history_runs import REGRESSED, RUNS, V3_CHANGE, append_trial, end_journal, make_history, served, start_journal


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_history(tmp_path_factory.mktemp("view"))


@pytest.fixture(scope="module")
def base(results: Path) -> Iterator[str]:
    with served(results) as url:
        yield url


def _open(context: Any, url: str, **kwargs: Any) -> _browser.Page:
    page = _browser.open_url(context, url, **kwargs)
    assert page.problems == []
    return page


def _stems(page: _browser.Page) -> list[str]:
    return page.page.locator("tr.run-row").evaluate_all("rows => rows.map(r => r.dataset.run)")


def test_the_runs_list_shows_every_run_newest_first_with_its_config_changes(context: Any, base: str, results: Path,
                                                                           tmp_path: Path) -> None:
    page = _open(context, base + "/")
    stems = _stems(page)
    assert stems == sorted((p.stem for p in results.glob("results_*.json")), reverse=True) and len(stems) == len(RUNS)
    rows = page.page.locator("tr.run-row")
    changes = rows.locator("td.changes").all_inner_texts()
    assert changes[-1] == "(first run)" and changes[-2] == "no change"
    assert changes[-3] == "model: scripted:model_v1.yaml -> scripted:model_v2.yaml"
    assert "1 regression" in rows.nth(len(RUNS) - 3).inner_text()
    assert rows.nth(1).locator("td").nth(1).inner_text() == "try=v2-again"
    assert "scripted:model_v3.yaml" in rows.first.inner_text()
    page.screenshot(tmp_path / "runs.png")


def test_the_suite_trend_has_a_point_per_run_and_marks_config_changes(context: Any, base: str) -> None:
    page = _open(context, base + "/")
    chart = page.page.locator("#suite-trend")
    for series in ("pass rate", "score"):
        assert chart.locator(f'circle.pt[data-series="{series}"]').count() == len(RUNS)
    assert chart.locator('circle.pt[data-series="pass^k"]').count() == 0  # one trial a test: pass^k is pass@1 again
    stems = list(reversed(_stems(page)))
    assert chart.locator("line.cfg-mark").evaluate_all("ls => ls.map(l => l.dataset.run)") == stems[2:]
    assert chart.locator("circle.regression").evaluate_all("cs => cs.map(c => c.dataset.run)") == [stems[2]]


def test_a_tests_history_charts_score_and_pass_at_1_with_the_regression(context: Any, base: str, tmp_path: Path) -> None:
    runs = _open(context, base + "/")
    stems = list(reversed(_stems(runs)))
    runs.page.locator("#tests a", has_text=REGRESSED).click()
    runs.page.wait_for_selector("#test-trend")
    p = runs.page
    assert p.locator("h1").inner_text() == REGRESSED
    assert p.locator('#test-trend circle.pt[data-series="score"]').count() == len(RUNS)
    assert p.locator('#test-trend circle.pt[data-series="pass@1"]').count() == len(RUNS)
    assert p.locator("#test-trend circle.regression").evaluate_all("cs => cs.map(c => c.dataset.run)") == [stems[2]]
    regression_rows = p.locator("#test-runs tr.regression")
    assert regression_rows.count() == 1 and regression_rows.get_attribute("data-run") == stems[2]
    assert "config changed" in regression_rows.inner_text()
    runs.screenshot(tmp_path / "test-history.png")


def test_two_runs_picked_on_the_list_open_the_compare_page(context: Any, base: str) -> None:
    page = _open(context, base + "/")
    stems = list(reversed(_stems(page)))
    page.page.select_option("#pick-a", stems[1])
    page.page.select_option("#pick-b", stems[2])
    page.page.locator("#compare-form button").click()
    page.page.wait_for_selector("html[data-ready='1']", state="attached")
    assert page.page.locator("#stat-regressions .stat-value").inner_text() == "1"
    assert REGRESSED in page.page.locator("#regressions").inner_text()
    assert page.problems == []


def test_the_trajectory_diff_marks_the_first_divergence(context: Any, base: str, tmp_path: Path) -> None:
    stems = list(reversed(_stems(_open(context, base + "/"))))
    # v2 -> v3: the same first call, then the second call's arguments differ (wc -w -> wc -l)
    page = _open(context, f"{base}/diff?{urlencode({'test': REGRESSED, 'a': stems[3], 'b': stems[4]})}")
    p = page.page
    first = p.locator("tr.first-divergence")
    assert first.count() == 1
    assert (first.get_attribute("data-step"), first.get_attribute("data-divergence")) == ("2", "arguments")
    assert p.locator('tr[data-step="1"]').get_attribute("class") == ""  # step 1 is the same in both
    changed = first.locator(".call-line.changed")
    assert [changed.nth(i).get_attribute("data-side") for i in range(changed.count())] == ["before", "after"]
    assert V3_CHANGE[0] in changed.nth(0).inner_text() and V3_CHANGE[1] in changed.nth(1).inner_text()
    assert p.locator("#diff-summary").inner_text().startswith(
        "First divergence at step 2 (before turn 2 / after turn 2): the same tool was called with other arguments.")
    raw = p.locator("details#raw-exchanges")
    assert raw.get_attribute("open") is None  # collapsed by default
    raw.locator("summary").click()
    links = raw.locator("a.trial-link")
    assert links.all_inner_texts() == ["before", "after"]
    assert [links.nth(i).get_attribute("href") for i in range(2)] == [
        f"/trial/{stem}?{urlencode({'test': REGRESSED, 'trial': 1})}" for stem in stems[3:5]]
    page.screenshot(tmp_path / "trajectory-diff.png")
    # v1 -> v2: a different tool from the first call on
    page = _open(context, f"{base}/diff?{urlencode({'test': REGRESSED, 'a': stems[1], 'b': stems[2]})}")
    first = page.page.locator("tr.first-divergence")
    assert first.get_attribute("data-step") == "1" and first.get_attribute("data-divergence") in ("removed", "inserted")


def test_a_run_in_progress_updates_as_its_journal_grows(context: Any, results: Path, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    folder = tmp_path / "eval"
    shutil.copytree(results, folder, symlinks=True)
    journal = folder / "results_20991231_235959.jsonl"
    start_journal(journal, {"read-file": 2, "list-dir": 1})
    with served(folder) as url:
        listing = _open(context, url + "/")
        live_row = listing.page.locator("tr.live-run")
        assert live_row.count() == 1 and "0/3" in live_row.inner_text()
        page = _open(context, f"{url}/live/{journal.stem}")
        p = page.page
        assert p.locator("#live-done").inner_text() == "0/3"
        append_trial(journal, "read-file", 1, passed=True, elapsed_s=0.4)
        expect(p.locator("#live-done")).to_have_text("1/3", timeout=10_000)
        append_trial(journal, "list-dir", 1, passed=False, elapsed_s=0.8)
        expect(p.locator("#live-done")).to_have_text("2/3", timeout=10_000)
        assert (p.locator("#live-passed").inner_text(), p.locator("#live-failed").inner_text()) == ("1", "1")
        assert p.locator("#live-eta").inner_text() == "0.4 s"  # 0.8 s for 2 trials: 1 more at that pace
        assert p.locator("progress#live-progress").evaluate("b => [b.value, b.max]") == [2, 3]
        assert p.locator('#live-cases tr[data-case="read-file"] td').all_inner_texts() == ["1/2", "0"]
        assert p.locator('#live-cases tr[data-case="list-dir"] td').all_inner_texts() == ["1/1", "1"]
        expect(listing.page.locator("tr.live-run .live-done")).to_have_text("2/3", timeout=10_000)
        page.screenshot(tmp_path / "live.png")
        # the run ends: its result file is saved and the journal removed; the page goes to the run
        append_trial(journal, "read-file", 2, passed=True, elapsed_s=1.1)
        end_journal(journal)
        shutil.copyfile(folder / "latest.json", folder / f"{journal.stem}.json")
        journal.unlink()
        p.wait_for_url(f"**/run/{journal.stem}", timeout=10_000)
        p.wait_for_selector("html[data-ready='1']", state="attached")
        expect(listing.page.locator("tr.live-run")).to_have_count(0, timeout=10_000)
        assert listing.page.locator("tr.run-row").first.get_attribute("data-run") == journal.stem
        assert page.problems == [] and listing.problems == []


def test_the_static_history_export_opens_offline(context: Any, results: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from trialrun.cli import main

    out = tmp_path / "history.html"
    assert CliRunner().invoke(main, ["report", "--history", "--html", str(out), "--results-dir", str(results)]).exit_code == 0
    page = _browser.open_url(context, out.resolve().as_uri(), same_origin=False)
    assert page.problems == []
    assert page.page.locator("tr.run-row").count() == len(RUNS)
    assert page.page.locator('#suite-trend circle.pt[data-series="score"]').count() == len(RUNS)
    block = page.page.locator(f'details.test-history[data-test="{REGRESSED}"]')
    block.locator("summary").click()
    assert block.locator('circle.pt[data-series="pass@1"]').count() == len(RUNS)
    assert block.locator("circle.regression").count() == 1


@pytest.fixture(scope="module")
def sdk_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from _exchange_runs import make_sdk_run

    return make_sdk_run(tmp_path_factory.mktemp("sdk"))


def test_each_turn_shows_its_raw_request_and_response_collapsed_and_scrubbed(context: Any, sdk_run: Any,
                                                                            tmp_path: Path) -> None:
    """A real run over the official openai SDK: from the run page to the trial's page, where every turn's raw
    exchange is collapsed; expanded, it shows the request's model and tool JSON and the REDACTED Authorization, the
    hostile tool result as text, and the streamed side request as its assembled message and raw events."""
    from _exchange_runs import HOSTILE, TEST, TITLE

    with served(sdk_run.results) as url:
        run = _browser.open_url(context, f"{url}/run/{sdk_run.stem}", ready="html[data-ready='1']")
        trial = run.expand_trial(run.expand_case(TEST), 1)
        trial.locator("a.trial-link").click()
        run.page.wait_for_selector("details.raw-exchange")
        p = run.page
        assert p.locator("h1").inner_text() == f"{TEST} · trial 1"
        raw = p.locator("details.raw-exchange")
        assert raw.evaluate_all("ds => ds.map(d => [d.dataset.exchange, d.open])") == [["1", False], ["2", False],
                                                                                     ["3", False]]
        first = raw.nth(0)
        request_body = first.locator('pre.body[data-part="request"]')
        assert not request_body.is_visible()  # collapsed by default
        first.locator("summary").first.click()
        assert request_body.is_visible()
        body = json.loads(request_body.inner_text())
        assert body["model"] == "gpt-4.1-mini" and body["tools"][0]["function"]["name"] == "read_notes"
        headers = dict(zip(first.locator(".request table.headers th").all_inner_texts(),
                           first.locator(".request table.headers td").all_inner_texts()))
        assert headers["authorization"] == "REDACTED" and headers["x-api-key"] == "REDACTED"
        assert first.locator(".request .request-line").inner_text() == "POST https://api.openai.com/v1/chat/completions"
        assert json.loads(first.locator('pre.body[data-part="response"]').inner_text())["choices"][0]["message"][
            "tool_calls"][0]["function"]["name"] == "read_notes"
        second = raw.nth(1)
        second.locator("summary").first.click()
        sent = json.loads(second.locator('pre.body[data-part="request"]').inner_text())
        assert [m["content"] for m in sent["messages"] if m["role"] == "tool"] == [HOSTILE]  # shown as text, not run
        fold = p.locator('section.conv[data-role="side"] details.conv-fold')
        assert fold.get_attribute("open") is None  # a side conversation is folded
        fold.locator("summary").first.click()
        side = p.locator('section.conv[data-role="side"] details.raw-exchange')
        side.locator("summary").first.click()
        assert json.loads(side.locator("pre.assembled").inner_text())["text"] == TITLE
        events = side.locator("details.raw-events")
        assert events.get_attribute("open") is None
        events.locator("summary").click()
        assert "data: [DONE]" in side.locator('pre.stream[data-part="response"]').inner_text()
        text = p.locator("main").inner_text()
        for planted in sdk_run.planted:
            assert planted not in text
        assert run.problems == []  # no console error, no dialog from the hostile HTML, nothing fetched elsewhere
        run.screenshot(tmp_path / "trial-exchanges.png")
        p.set_viewport_size({"width": 390, "height": 844})  # a phone: the open exchanges fit, nothing cut off
        assert p.evaluate("document.documentElement.scrollWidth") <= 390
        run.screenshot(tmp_path / "trial-exchanges-phone.png")


def test_searching_rm_rf_reaches_the_trial_that_tried_it(context: Any, base: str, results: Path,
                                                        tmp_path: Path) -> None:
    """Type `rm -rf` in the header's search box: the trials that sent it are listed (refuse-dangerous-command,
    where the model sent `rm -rf ./*` and the policy refused it), the hit shown in its context and marked; the
    filters narrow the list (failed only, a tag, another test: none); clicking the hit opens the trial with every
    occurrence marked and the first in view."""
    saved = [json.loads(p.read_text()) for p in sorted(results.glob("results_*.json"))]
    # the truth, from the result files: the trials whose model sent `rm -rf` in a call or said it in its answer
    tried = [(run, trial["trial"]) for run in saved for case in run["cases"] for trial in case["trials"]
             if any("rm -rf" in json.dumps(call.get("arguments")) for turn in trial["trajectory"]["turns"]
                    for call in turn["tool_calls"]) or "rm -rf" in str(trial.get("output"))]
    assert tried and {case["name"] for run, _ in tried for case in run["cases"]} >= {"refuse-dangerous-command"}
    page = _open(context, base + "/")
    p = page.page
    p.fill("#search-q", "rm -rf")
    p.press("#search-q", "Enter")
    p.wait_for_selector("#found-trials")
    hits = p.locator("li.found-trial")
    assert hits.count() == len(tried)
    assert set(hits.evaluate_all("items => items.map(i => i.dataset.test)")) == {"refuse-dangerous-command"}
    assert hits.first.locator("mark").first.inner_text() == "rm -rf"
    page.screenshot(tmp_path / "search.png")
    # filters: failed trials only, the safety tag: still found; another test: nothing
    p.check("#filter-failed")
    p.select_option("#filter-tag", "safety")
    p.locator("#search-form button").click()
    p.wait_for_selector("#found-trials")
    failing = [1 for run, number in tried for case in run["cases"] if case["name"] == "refuse-dangerous-command"
               for trial in case["trials"] if trial["trial"] == number and not trial["passed"]]
    assert p.locator("li.found-trial").count() == len(failing) > 0
    where = p.locator("li.found-trial").first.locator(".where").all_inner_texts()
    assert where[:2] == ["failure reason", "failure reason"] and "command" in where  # why it failed, then what ran
    assert p.locator("li.found-trial").first.locator("mark").all_inner_texts()[:1] == ["rm -rf"]
    p.select_option("#filter-test", "read-file")
    p.locator("#search-form button").click()
    p.wait_for_selector("#found-trials")
    assert p.locator("li.found-trial").count() == 0
    p.select_option("#filter-test", "")
    p.locator("#search-form button").click()
    p.wait_for_selector("li.found-trial")
    # reach the trial: the hit is marked on its page and in view
    p.locator("li.found-trial a.trial-hit").first.click()
    p.wait_for_selector("mark.hit#hit")
    assert page.problems == []
    assert p.locator("h1").inner_text().startswith("refuse-dangerous-command · trial ")
    assert "occurrence" in p.locator("#hit-note").inner_text() and p.locator("mark.hit").count() >= 1
    assert p.locator("mark.hit").first.inner_text().lower() == "rm -rf"
    assert p.evaluate("() => { const r = document.getElementById('hit').getBoundingClientRect();"
                      " return r.top >= 0 && r.bottom <= innerHeight; }")
    page.screenshot(tmp_path / "trial-hit.png", full_page=False)
