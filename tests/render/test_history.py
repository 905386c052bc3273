"""A results folder as a history (no browser): the runs of the real `trialrun run` oldest first with what changed
between them (compare's config diff and regressions), each test's and the suite's series, runs in progress read
from their journals, `trialrun report --history --html`, and `trialrun view` without its extra."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from _history_runs import REGRESSED, RUNS, append_trial, end_journal, make_history, start_journal
from click.testing import CliRunner

from trialrun.cli import main
from trialrun.report._history import config_line, load_history, read_journal, suite_trend, test_history as history_of


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_history(tmp_path_factory.mktemp("history"))


def test_runs_are_read_oldest_first_with_the_config_changes_since_the_previous(results: Path) -> None:
    history = load_history(results)
    assert len(history.runs) == len(RUNS) and history.skipped == {}
    first, same, changed, labelled, v3 = history.runs
    assert first.previous is None and first.config_changes == []
    assert same.config_changes == []
    assert config_line(changed.config_changes) == "model: scripted:model_v1.yaml -> scripted:model_v2.yaml"
    assert config_line(labelled.config_changes) == "labels.try: (none) -> v2-again"
    assert labelled.label == "try=v2-again" and changed.model == "scripted:model_v2.yaml"
    assert changed.comparison is not None and changed.comparison.regressions == [REGRESSED]
    assert config_line(v3.config_changes) == ("labels.try: v2-again -> (none); "
                                              "model: scripted:model_v2.yaml -> scripted:model_v3.yaml")


def test_a_tests_history_marks_the_config_change_and_the_regression(results: Path) -> None:
    points = history_of(load_history(results), REGRESSED)
    assert [p.passed for p in points] == [True, True, False, False, False]
    assert [p.config_changed for p in points] == [False, False, True, True, True]
    assert [p.regression for p in points] == [False, False, True, False, False]
    assert points[2].score is not None and points[2].score < points[1].score


def test_the_suite_trend_has_a_point_per_run(results: Path) -> None:
    history = load_history(results)
    trend = suite_trend(history)
    assert [t.stem for t in trend] == [e.stem for e in history.runs]
    assert [t.regressions for t in trend] == [0, 0, 1, 0, 0]
    assert trend[0].pass_rate == history.runs[0].report.passed_case_count / 5


def test_a_journal_is_read_as_progress_and_a_missing_one_is_none(tmp_path: Path) -> None:
    journal = tmp_path / "results_20991231_235959.jsonl"
    assert read_journal(journal) is None
    start_journal(journal, {"a": 2, "b": 1})
    append_trial(journal, "a", 1, passed=True, elapsed_s=0.5)
    append_trial(journal, "b", 1, passed=False, elapsed_s=0.9)
    with journal.open("a") as f:
        f.write('{"event": "trial", "case": "a", "resu')  # the writer is mid-line
    live = read_journal(journal)
    assert live is not None
    assert (live.total, live.done, live.passed, live.failed, live.current) == (3, 2, 1, 1, "b")
    assert live.cases == {"a": {"trials": 2, "done": 1, "failed": 0}, "b": {"trials": 1, "done": 1, "failed": 1}}
    assert live.status is None and live.problems == [] and live.elapsed_s == 0.9
    assert live.eta_s == pytest.approx(0.45)  # the terminal's ETA: 0.9 s for 2 trials, 1 to go


def test_a_bad_line_inside_a_journal_is_a_problem_named_by_line(tmp_path: Path) -> None:
    journal = tmp_path / "results_20991231_235959.jsonl"
    start_journal(journal, {"a": 1})
    with journal.open("a") as f:
        f.write("garbage\n")
    append_trial(journal, "a", 1, passed=True, elapsed_s=0.1)
    end_journal(journal)
    live = read_journal(journal)
    assert live is not None and live.problems == [f"{journal.name} line 2: not valid JSON"]
    assert (live.done, live.status) == (1, "completed")


def test_a_run_in_progress_is_listed_until_its_result_file_is_saved(results: Path, tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "eval"
    shutil.copytree(results, folder, symlinks=True)
    journal = folder / "results_20991231_235959.jsonl"
    start_journal(journal, {"read-file": 1})
    assert [live.stem for live in load_history(folder).live] == [journal.stem]
    (folder / "results_20991231_235959.json").write_text((folder / "latest.json").read_text())
    history = load_history(folder)
    assert history.live == [] and history.runs[-1].stem == journal.stem


def test_report_history_writes_one_self_contained_file(results: Path, tmp_path: Path) -> None:
    out = tmp_path / "history.html"
    result = CliRunner().invoke(main, ["report", "--history", "--html", str(out), "--results-dir", str(results)])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"wrote {out}: 5 run(s) of {results}"
    page = out.read_text(encoding="utf-8")
    assert page.count('class="row run-row"') == 5
    suite = page[page.index('id="suite-trend"'):page.index("</svg>", page.index('id="suite-trend"'))]
    assert len(re.findall(r'<circle class="pt s0', suite)) == 5  # pass rate: a point per run
    assert page.count('class="panel test-history"') == 5  # every test's chart inline
    assert not re.search(r'(src|href)="(https?:)?//', page)  # nothing from the network
    assert "default-src &#x27;none&#x27;" in page


def test_report_history_needs_html(results: Path) -> None:
    result = CliRunner().invoke(main, ["report", "--history", "--results-dir", str(results)])
    assert result.exit_code == 2 and "--history writes the runs list as HTML: give --html FILE" in result.output


def test_view_without_its_extra_names_the_extra(results: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    monkeypatch.setitem(sys.modules, "starlette", None)
    result = CliRunner().invoke(main, ["view", str(results)])
    assert result.exit_code == 2
    assert "error: trialrun view needs the 'view' extra: pip install 'trialrun[view]'" in result.output


def test_view_of_a_folder_that_does_not_exist_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["view", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "no such folder" in result.output


def test_neither_import_trialrun_nor_help_imports_the_web_stack() -> None:
    code = ("import sys, trialrun, trialrun.cli\n"
            "from click.testing import CliRunner\n"
            "CliRunner().invoke(trialrun.cli.main, ['--help']); CliRunner().invoke(trialrun.cli.main, ['view', '--help'])\n"
            "print(sorted(m for m in ('starlette', 'uvicorn', 'trialrun.view') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_view_answers_only_to_this_machines_names(results: Path) -> None:
    from starlette.testclient import TestClient

    from trialrun.view import create_app

    client = TestClient(create_app(results), base_url="http://127.0.0.1:8765")
    assert client.get("/").status_code == 200
    assert client.get("/", headers={"host": "evil.example"}).status_code == 400


def test_a_result_file_that_does_not_load_is_named_on_the_runs_page(results: Path, tmp_path: Path) -> None:
    import shutil

    from trialrun.render.history import runs_page

    folder = tmp_path / "eval"
    shutil.copytree(results, folder, symlinks=True)
    (folder / "results_20991231_000000.json").write_text('{"schema_version": "1.0", "cases": [', encoding="utf-8")
    history = load_history(folder)
    assert len(history.runs) == len(RUNS)
    assert [p.name for p in history.skipped] == ["results_20991231_000000.json"]
    page = runs_page(history)
    assert 'id="skipped"' in page and "results_20991231_000000.json" in page and "truncated" in page


def test_trialrun_view_serves_the_folder_on_loopback(results: Path) -> None:
    import os
    import signal
    import socket
    import time

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "trialrun", "view", str(results), "--port", str(port)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = process.stdout.readline() if process.stdout else ""
        assert line.strip() == f"trialrun view: serving {results} at http://127.0.0.1:{port}/ (Ctrl-C to stop)"
        deadline = time.monotonic() + 10
        while True:
            try:
                page = httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        assert page.status_code == 200 and page.text.count('class="row run-row"') == len(RUNS)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, 9)
            process.wait(5)
    assert process.returncode == 0
