"""A test whose other trials did not finish is marked *partly run* in the HTML report and in JUnit XML, as the
terminal table marks it ("partly run NAME: 1 of 3 trials finished (interrupted; scored on those)").

The run is a real one: the quickstart run by `trialrun run --trials 3`, then the journal a run killed after the
first trial of two tests would have left (docs/journal.md's format), saved by `trialrun recover`, and shown by
`trialrun report --junit/--html` (before: JUnit and HTML showed those tests as whole ones, passed or failed on the
one trial they had, with nothing saying two of their three trials never ran)."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import _browser
import pytest
from _junit_schema import assert_valid
from click.testing import CliRunner

from trialrun.cli import main

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
STEM = "results_29990101_000000"
#: The tests the killed run finished one trial of (a passing one and a failing one), of 3.
PARTLY = {"read-file": "passed", "search-json": "failed"}
WORDS = "1 of 3 trials finished (interrupted; scored on those)"


def _cli(project: Path, *args: str) -> Any:
    import os

    cwd = os.getcwd()
    os.chdir(project)
    try:
        return CliRunner().invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(cwd)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The result file `trialrun recover` made of the killed run's journal."""
    project = tmp_path_factory.mktemp("partly") / "quickstart"
    shutil.copytree(QUICKSTART, project, ignore=shutil.ignore_patterns("results_*", "latest.json"))
    assert _cli(project, "run", "all", "--trials", "3").exit_code in (0, 1)
    results = project / "state" / "eval"
    whole = json.loads(next(results.glob("results_*.json")).read_text())
    start = {"event": "start", "journal_version": 1, "schema_version": whole["schema_version"], "run_id": "eval_killed",
             "started_at": "2999-01-01T00:00:00+00:00", "pid": 1, "host": "ci", "trial_count": 3,
             "cases": [{"name": c["name"], "title": c["title"], "description": c["description"], "tags": c["tags"],
                        "mode": c["mode"], "trials": 3, "metadata": c["metadata"]} for c in whole["cases"]],
             "config_snapshot": whole["config_snapshot"]}
    lines = [start]
    for case in whole["cases"]:
        kept = case["trials"][:1] if case["name"] in PARTLY else case["trials"]
        lines += [{"event": "trial", "case": case["name"], "elapsed_s": 0.1, "result": t} for t in kept]
    (results / f"{STEM}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = _cli(project, "recover")
    assert result.exit_code == 0 and f"recovered {results / STEM}.json" in result.output, result.output
    path = results / f"{STEM}.json"
    report = json.loads(path.read_text())
    for case in report["cases"]:
        partly = case["name"] in PARTLY
        assert case["unfinished_trials"] == (2 if partly else 0)
        if partly:
            assert ("passed" if case["passed"] else "failed") == PARTLY[case["name"]]
    return path


def test_junit_marks_partly_run_tests_and_stays_schema_valid(saved: Path, tmp_path: Path) -> None:
    out = tmp_path / "junit.xml"
    assert _cli(saved.parent.parent.parent, "report", str(saved), "--junit", str(out)).exit_code in (0, 1)
    text = out.read_text()
    assert_valid(text)
    root = ET.fromstring(text)
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    cases = {c.get("name"): c for c in root.iter("testcase")}
    for name, outcome in PARTLY.items():
        assert props[f"trialrun.case.{name}.unfinished_trials"] == "2"
        assert props[f"trialrun.case.{name}.trials"] == "1"
        out_text = cases[name].findtext("system-out") or ""
        assert out_text.splitlines()[0] == f"{name}: partly run: {WORDS}"
        failure = cases[name].find("failure")
        if outcome == "failed":
            assert failure is not None
            assert failure.get("message", "").startswith(f"partly run, {WORDS}: ")
            assert (failure.text or "").startswith(f"partly run, {WORDS}\n")
        else:
            assert failure is None and cases[name].find("error") is None
    whole = [n for n in cases if n not in PARTLY]
    assert whole and all(f"trialrun.case.{n}.unfinished_trials" not in props for n in whole)
    assert all("partly run" not in (cases[n].findtext("system-out") or "") for n in whole)


@pytest.fixture(scope="module")
def html_file(saved: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("partly-html") / "report.html"
    assert _cli(saved.parent.parent.parent, "report", str(saved), "--html", str(out)).exit_code in (0, 1)
    return out


def test_the_html_summary_names_the_partly_run_tests(html_file: Path) -> None:
    text = html_file.read_text()
    note = text.split('id="partly-run">', 1)[1].split("</p>", 1)[0]
    for name in PARTLY:
        assert f"<code>{name}</code>: {WORDS}" in note
    assert note.count("<code>") == len(PARTLY)


def test_in_the_browser_each_partly_run_row_and_detail_says_so(html_file: Path, context: Any, tmp_path: Path) -> None:
    page = _browser.open_report(context, html_file)
    assert page.problems == []
    rows = page.page.locator("tr.row")
    badges = {}
    for i in range(rows.count()):
        row = rows.nth(i)
        name = row.locator("button.expander").get_attribute("data-case")
        badge = row.locator(".badge.partial")
        badges[name] = badge.get_attribute("title") if badge.count() else None
    assert badges == {name: (f"Partly run: {WORDS}" if name in PARTLY else None) for name in badges}
    assert set(PARTLY) < set(badges)
    for name in PARTLY:
        detail = page.expand_case(name)
        assert detail.locator(".alert.partly-run").inner_text() == f"Partly run: {WORDS}."
        page.page.locator(f'button.expander[data-case="{name}"]').click()  # closed again
    page.screenshot(tmp_path / "partly-run.png")
