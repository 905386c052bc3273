"""Grading by hand in Chromium (issue 36.10): on a trial's page of a real `trialrun view` process, grade that one
trial on the finer scale and override one of its verdicts with a reason; then the result file's JSON (read here,
not through trialrun) holds both, audited, the test's other trial untouched, and the runs page shows how the
heuristic agreed with the person."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import _browser
import pytest
from _view_folders import make_runs, stems, view_process

TEST = "list-dir"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_runs(tmp_path_factory.mktemp("runs"), runs=1)


def _case(path: Path) -> dict[str, Any]:
    return next(c for c in json.loads(path.read_text(encoding="utf-8"))["cases"] if c["name"] == TEST)


def test_grade_one_trial_and_override_one_verdict_from_the_trial_page(context: Any, runs: Path, tmp_path: Path) -> None:
    folder = tmp_path / "eval"
    shutil.copytree(runs, folder, symlinks=True)
    (stem,) = stems(folder)
    path = folder / f"{stem}.json"
    before = _case(path)
    assert [t["passed"] for t in before["trials"]] == [True, True]
    with view_process(folder) as (base, _):
        page = _browser.open_url(context, f"{base}/trial/{stem}?{urlencode({'test': TEST, 'trial': 2})}")
        p = page.page
        # grade trial 2 only, on the finer scale
        assert p.locator("#grade-trial").input_value() == "2"  # this trial is what the form grades by default
        p.fill("#grade-quality", "0.35")
        p.fill("#grade-comment", "lists the files but not the docs folder")
        p.locator("#grade-form button").click()
        p.wait_for_url("**#grade")
        assert "output quality 0.35/0.5" in p.locator("#hand-grade").inner_text()
        # override the rubric's verdict of this trial to fail, with the reason
        label = p.locator("#override-grader option").first.get_attribute("value")
        assert label is not None and label.startswith("rubric(")
        p.select_option("#override-grader", label)
        p.check('#override-form input[name="verdict"][value="fail"]')
        p.fill("#override-reason", "the docs folder is missing from the list")
        p.locator("#override-form button").click()
        p.wait_for_url("**#judgement")
        row = p.locator(f'#verdicts tr[data-grader="{label}"]')
        assert row.locator(".badge.fail").count() == 1 and row.locator(".overridden").count() == 1
        assert "the docs folder is missing from the list" in row.locator(".reason").inner_text()
        assert "FAIL" in p.locator(".page-head .meta").inner_text()
        # the runs page: the heuristic (which said 0.5) against this one hand grade (0.35, nearest level 0.25)
        runs_page = _browser.open_url(context, base + "/").page
        heuristic = runs_page.locator('#judge-agreement tr[data-judge="heuristic"]')
        assert heuristic.locator(".agreed").inner_text() == "0/1 (0%)" and heuristic.locator(".kappa").inner_text() == "0.00"
        assert page.problems == []
    after = _case(path)
    assert after["trials"][0] == before["trials"][0]  # trial 1: untouched
    trial = after["trials"][1]
    verdict = next(v for v in trial["verdicts"] if v["grader"] == label)
    assert verdict["details"]["sub_scores"]["output_quality"] == 0.35
    grade = verdict["details"]["hand_grade"]
    assert grade["via"] == "view" and grade["quality"] == 0.35 and grade["comment"] == "lists the files but not the docs folder"
    assert grade["machine"] == {"quality": 0.5, "by": "heuristic"} and grade["by"] and grade["at"]
    override = verdict["details"]["override"]
    assert override["passed"] is False and override["was"] is True and override["via"] == "view"
    assert override["reason"] == "the docs folder is missing from the list" and override["by"] and override["at"]
    assert verdict["passed"] is False and trial["passed"] is False and trial["score_passed"] is False
    assert after["pass_at_1"] == 0.5 and after["passed"] is False
