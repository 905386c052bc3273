"""`trialrun compare` with an interrupted run: the tests Ctrl-C stopped are "not finished", never "removed"; a note
says which run was interrupted and how many tests did not finish; --fail-on-regression fails when the later run
lost tests (removed or not finished). The seed's lines stay exactly as they are for every other test."""

from __future__ import annotations

import json
from pathlib import Path

from trialrun.report.results import RunReport
from trialrun.report.store import ResultsStore, load_report

RESULTS = Path("state") / "eval"


def _interrupted_copy(project: Path, finished: list[str]) -> RunReport:
    """Save the latest run again as if Ctrl-C had stopped it with only `finished` done (what the runner saves)."""
    full = load_report(project / RESULTS / "latest.json")
    report = RunReport.build(
        [c for c in full.cases if c.name in finished], trial_count=full.trial_count, started_at=full.started_at,
        duration_s=0.2, status="interrupted", unfinished=[c.name for c in full.cases if c.name not in finished],
        config_snapshot=full.config_snapshot,
    )
    ResultsStore(project / RESULTS).save(report)
    return load_report(project / RESULTS / "latest.json")


def test_a_run_interrupted_before_any_test_finished(project: Path, cli) -> None:
    cli("run", "all")
    first = load_report(project / RESULTS / "latest.json")
    after = _interrupted_copy(project, finished=[])
    default = cli("compare")  # the default pair passes over a run with nothing finished, and says so
    assert default.exit_code == 2 and "compare needs two runs; found 1 usable result file(s)" in default.output
    assert "(interrupted before any test finished (nothing to show or compare))" in default.output
    pair = (first.run_id, after.run_id)
    result = cli("compare", *pair)  # named, it is compared
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert "read-file:                 1.00 -> not finished  (interrupted)" in lines
    assert not any("removed" in line for line in lines)
    assert f"note: run {after.run_id} was interrupted; 5 tests did not finish" in lines
    assert "Pass rate: 3/5 -> 0/0  ▼ -3" in lines

    gate = cli("compare", *pair, "--fail-on-regression")
    assert gate.exit_code == 1
    assert f"gate: fails: 5 tests did not finish in {after.run_id}" in gate.output

    data = json.loads(cli("compare", *pair, "--json").output)
    assert data["removed"] == [] and len(data["not_finished"]) == 5
    assert data["status_after"] == "interrupted"
    assert {d["status"] for d in data["cases"]} == {"not_finished"}
    assert {d["unfinished_in"] for d in data["cases"]} == {"after"}


def test_finished_tests_keep_the_seed_lines(project: Path, cli) -> None:
    cli("run", "all")
    after = _interrupted_copy(project, finished=["read-file", "list-dir"])
    lines = cli("compare").output.splitlines()
    assert "read-file:                 1.00 -> 1.00  = unchanged" in lines
    assert "list-dir:                  1.00 -> 1.00  = unchanged" in lines
    assert "summarise-notes:           1.00 -> not finished  (interrupted)" in lines
    assert f"note: run {after.run_id} was interrupted; 3 tests did not finish" in lines


def test_an_interrupted_earlier_run_is_named_too(project: Path, cli) -> None:
    cli("run", "all")
    before = _interrupted_copy(project, finished=["read-file"])
    cli("run", "all")
    result = cli("compare", "--fail-on-regression")
    lines = result.output.splitlines()
    assert "list-dir:                  not finished -> 1.00  (interrupted)" in lines
    assert not any("added" in line for line in lines)
    assert f"note: run {before.run_id} was interrupted; 4 tests did not finish" in lines
    assert result.exit_code == 0  # the later run lost nothing


def test_a_removed_test_fails_the_gate(project: Path, cli, write_suite) -> None:
    cli("run", "all")
    suite = project / RESULTS / "tests.json"
    write_suite(suite, [t for t in json.loads(suite.read_text()) if t["id"] != "list-dir"])
    cli("run", "all")
    result = cli("compare", "--fail-on-regression")
    assert "list-dir:                  1.00 -> gone  - removed" in result.output.splitlines()
    assert result.exit_code == 1
    assert "gate: fails: 1 test removed (list-dir)" in result.output
    assert cli("compare").exit_code == 0  # without the flag, compare only reports


def test_markdown_and_html_say_not_finished(project: Path, cli) -> None:
    cli("run", "all")
    after = _interrupted_copy(project, finished=["read-file"])
    result = cli("compare", "--markdown", "cmp.md", "--html", "cmp.html", "--no-summary")
    assert result.exit_code == 0, result.output
    markdown = (project / "cmp.md").read_text()
    assert "| list-dir | 1.00 | not finished | – | ⏸️ not finished |" in markdown
    assert "**Tests removed:** none" in markdown
    assert "**Not finished (interrupted):** search-json, list-dir, refuse-dangerous-command, summarise-notes" in markdown
    run_id = after.run_id.replace("_", "\\_")
    assert f"> Run {run_id} was interrupted; 4 tests did not finish" in markdown
    assert markdown.splitlines()[0].endswith("— nothing worse; 4 tests not finished")
    assert "removed" not in markdown.split("**Tests removed:** none")[0]

    page = (project / "cmp.html").read_text()
    assert f"<li>Run {after.run_id} was interrupted; 4 tests did not finish</li>" in page
    assert '<h3 id="unfinished-h">Not finished (4)</h3>' in page
    assert '<h3 id="removed-h">Removed (0)</h3>' in page


def test_an_empty_later_run_is_noted_and_fails_the_gate(project: Path, cli) -> None:
    cli("run", "all")
    full = load_report(project / RESULTS / "latest.json")
    empty = RunReport.build([], trial_count=1, started_at=full.started_at, duration_s=0.0,
                            config_snapshot=full.config_snapshot)
    ResultsStore(project / RESULTS).save(empty)
    after = load_report(project / RESULTS / "latest.json")
    result = cli("compare", "--fail-on-regression")
    lines = result.output.splitlines()
    assert f"note: run {after.run_id} graded no tests" in lines
    assert "read-file:                 1.00 -> gone  - removed" in lines  # not interrupted: these really are gone
    assert result.exit_code == 1
    assert "gate: fails: 5 tests removed (read-file, search-json, list-dir, refuse-dangerous-command, summarise-notes)" in result.output


def test_the_gate_does_not_pass_when_no_test_was_compared(project: Path, cli) -> None:
    # The earlier run was stopped before any test finished: nothing is shared, nothing was compared, so there is
    # no evidence of "no regression" and --fail-on-regression must not pass on it.
    cli("run", "all")
    empty = _interrupted_copy(project, finished=[])
    cli("run", "all")
    later = load_report(project / RESULTS / "latest.json")
    pair = (str(empty.run_id), str(later.run_id))  # named: the default pair would pass over the empty run
    assert cli("compare", *pair).exit_code == 0  # compare itself shows what it can
    gate = cli("compare", *pair, "--fail-on-regression")
    assert gate.exit_code == 1
    assert "gate: fails: no test was graded by both runs, so nothing was compared" in gate.output
