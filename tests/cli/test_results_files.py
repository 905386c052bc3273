"""Result files at the command line: which run a reference names, what happens when one is unusable, and paths
that cannot be written (a results dir, --junit, --html, schema -o), which are a message and exit 2, never a
traceback or a lost run."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from trialrun.report.store import ResultsStore


def _folder(project: Path) -> Path:
    return project / "state" / "eval"


def _runs(project: Path) -> list[Path]:
    return sorted(_folder(project).glob("results_*.json"))


# -- unusable files are named ---------------------------------------------------------------------------------
def test_compare_warns_about_a_corrupt_newest_run_it_passed_over(project: Path, cli) -> None:
    cli("run", "all")
    cli("run", "all", "--model", "scripted:model_v2.yaml")
    cli("run", "all", "--model", "scripted:model_v2.yaml")
    first, second, newest = _runs(project)
    newest.write_text(newest.read_text()[:400])

    result = cli("compare")
    assert result.exit_code == 0
    assert f"warning: skipped {newest}: not valid JSON at line" in result.stderr
    assert "the file may be truncated" in result.stderr
    assert "warning" not in result.stdout
    assert result.stdout.startswith(f"eval_{first.stem[8:]} -> eval_{second.stem[8:]}")


def test_compare_with_one_usable_run_names_the_unusable_file(project: Path, cli) -> None:
    cli("run", "all")
    cli("run", "all", "--model", "scripted:model_v2.yaml")
    newest = _runs(project)[-1]
    newest.write_text(newest.read_text()[:400])  # cut short, as a crash mid-write (without write_atomic) would
    result = cli("compare")
    assert result.exit_code == 2
    assert "compare needs two runs; found 1 usable result file(s); unusable: " in result.stderr
    assert f"{newest.name} (not valid JSON at line" in result.stderr
    assert "Traceback" not in result.output


def test_report_warns_about_a_newer_unusable_file(project: Path, cli) -> None:
    cli("run", "read-file")
    bad = _folder(project) / "results_29990101_000000.json"
    bad.write_text('{"schema_version": "9.0"}')
    result = cli("report")
    assert result.exit_code == 0
    assert f"warning: skipped {bad}: written by a newer trialrun (schema 9.0" in result.stderr


def test_without_latest_json_report_falls_back_to_the_newest_usable_run_and_says_so(project: Path, cli) -> None:
    cli("run", "read-file")
    (_folder(project) / "latest.json").unlink()
    bad = _folder(project) / "results_29990101_000000.json"
    bad.write_text("")
    result = cli("report")
    assert result.exit_code == 0 and "read-file" in result.stdout
    assert f"warning: skipped {bad}: the file is empty" in result.stderr


def test_a_bad_field_names_the_test_it_is_in(project: Path, cli) -> None:
    cli("run", "all")
    [path] = _runs(project)
    data = json.loads(path.read_text())
    assert data["cases"][2]["name"] == "list-dir"
    data["cases"][2]["trials"][0]["passed"] = "maybe"
    path.write_text(json.dumps(data))
    result = cli("report", str(path))
    assert result.exit_code == 2
    assert f"{path}: invalid result file: case 'list-dir' (cases.2), trials.0.passed: Input should be a valid boolean" in result.output
    data["cases"][2]["trials"][0]["passed"] = True
    data["cases"][0]["score"] = "high"
    path.write_text(json.dumps(data))
    assert "case 'read-file' (cases.0), score: Input should be a valid number" in cli("report", str(path)).output


# -- run references ---------------------------------------------------------------------------------------
def test_every_kind_of_run_reference_is_accepted(project: Path, cli) -> None:
    cli("run", "all")  # fails 2 tests: exit 1 when reported
    cli("run", "read-file")  # passes: exit 0
    first, second = _runs(project)
    run_id = "eval_" + first.stem.removeprefix("results_")
    for ref in (run_id, first.stem, first.name, str(first), str(first.relative_to(project))):
        result = cli("report", ref)
        assert result.exit_code == 1 and "search-json" in result.output, (ref, result.output)
    for ref in ("latest", "latest.json", second.stem):
        result = cli("report", ref)
        assert result.exit_code == 0 and "search-json" not in result.output, (ref, result.output)
    compared = cli("compare", first.stem, "latest")
    assert compared.exit_code == 0 and "list-dir:" in compared.output and "- removed" in compared.output
    assert cli("grade", first.stem, "read-file", "0.25").exit_code == 0


def test_a_run_id_given_to_evaluate_is_found_inside_the_file(project: Path, cli) -> None:
    import trialrun as tr

    report = tr.evaluate([tr.Case(name="a", invoke=lambda ctx: "x", expect_outcome=[tr.expect.equals("x")])], run_id="nightly-42")
    ResultsStore(_folder(project)).save(report)
    result = cli("report", "nightly-42")
    assert result.exit_code == 0 and "nightly-42" in result.output


def test_an_unknown_reference_lists_the_accepted_forms(project: Path, cli) -> None:
    cli("run", "read-file")
    [path] = _runs(project)
    result = cli("report", "yesterday")
    assert result.exit_code == 2
    for needle in ("no run 'yesterday'", "a run id (eval_YYYYMMDD_HHMMSS)", "a result file's name or stem",
                   "a path to a result file", "'latest'", f"recent: {path.stem}"):
        assert needle in result.output, needle
    # the stem the message lists is itself accepted
    assert cli("report", path.stem).exit_code == 0


# -- paths that cannot be written ---------------------------------------------------------------------------
@pytest.fixture
def afile(project: Path) -> Path:
    """A plain file where a folder is asked for."""
    path = project / "afile"
    path.write_text("not a folder\n")
    return path


def test_a_results_dir_under_a_file_stops_before_running(project: Path, cli, afile: Path) -> None:
    result = cli("run", "read-file", "--results-dir", "afile/sub")
    assert result.exit_code == 2
    assert "results dir" in result.stderr and "afile/sub" in result.stderr and "afile is a file, not a folder" in result.stderr
    assert "nothing was run" in result.stderr and "Traceback" not in result.output
    assert "read-file" not in result.stdout  # no table: nothing ran
    assert _runs(project) == []


def test_a_results_dir_that_does_not_exist_yet_is_created(project: Path, cli) -> None:
    result = cli("run", "read-file", "--results-dir", "out/runs")
    assert result.exit_code == 0, result.output
    assert len(list((project / "out" / "runs").glob("results_*.json"))) == 1


@pytest.mark.parametrize(
    "args, option",
    [
        (["run", "read-file", "--junit", "afile/x.xml"], "--junit"),
        (["run", "read-file", "--markdown", "afile/x.md"], "--markdown"),
        (["report", "--html", "afile/x.html"], "--html"),
        (["report", "--junit", "afile/x.xml"], "--junit"),
        (["compare", "--html", "afile/x.html"], "--html"),
        (["schema", "-o", "afile/s.json"], "--output"),
    ],
)
def test_an_output_file_under_a_file_is_a_usage_error(project: Path, cli, afile: Path, args: list[str], option: str) -> None:
    if args[0] in ("report", "compare"):
        cli("run", "read-file")
        cli("run", "list-dir")
    before = _runs(project)
    result = cli(*args)
    assert result.exit_code == 2
    assert f"Invalid value for {option}: afile/" in result.output and "afile is a file, not a folder" in result.output
    assert "Traceback" not in result.output
    assert _runs(project) == before  # `run` stopped before running


def test_an_output_file_that_is_a_folder_is_a_usage_error(project: Path, cli) -> None:
    (project / "out").mkdir()
    result = cli("schema", "-o", "out")
    assert result.exit_code == 2 and "'out' is a directory" in result.output


def test_schema_output_into_a_new_folder(project: Path, cli) -> None:
    assert cli("schema", "-o", "schemas/suite.json").exit_code == 0
    assert json.loads((project / "schemas" / "suite.json").read_text())["type"] == "array"


def test_a_run_that_cannot_be_saved_is_still_shown_then_exits_2(project: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    target = _folder(project) / "results_x.json"

    def full_disk(self: ResultsStore, report: object, **kwargs: object) -> Path:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(target))

    monkeypatch.setattr(ResultsStore, "save", full_disk)
    result = cli("run", "all")
    assert result.exit_code == 2
    assert "search-json" in result.stdout and "3/5 passed" in result.stdout  # the finished run is not lost
    assert "saved " not in result.stdout
    assert f"error: the run was not saved to {_folder(project)}: {target}: No space left on device" in result.stderr
    assert "Traceback" not in result.output

    as_json = cli("run", "all", "--json")
    assert as_json.exit_code == 2
    assert json.loads(as_json.stdout)["case_count"] == 5
    assert "No space left on device" in as_json.stderr


def test_an_os_error_elsewhere_is_a_message_naming_the_path(project: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    cli("run", "read-file")
    import trialrun.cli._common as cli_module

    def denied(*args: object, **kwargs: object) -> None:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), "report.html")

    monkeypatch.setattr(cli_module, "_write_outputs", denied)
    result = cli("report", "--html", "report.html")
    assert result.exit_code == 2
    assert "error: report.html: Permission denied" in result.stderr and "Traceback" not in result.output


# -- file permissions ---------------------------------------------------------------------------------------
@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_result_files_get_the_usual_permissions(project: Path, cli, umask: int, mode: int) -> None:
    old = os.umask(umask)
    try:
        assert cli("run", "read-file").exit_code == 0
    finally:
        os.umask(old)
    [path] = _runs(project)
    assert path.stat().st_mode & 0o777 == mode


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_rewriting_a_result_file_keeps_its_permissions(project: Path, cli) -> None:
    cli("run", "read-file")
    [path] = _runs(project)
    path.chmod(0o640)
    assert cli("grade", "latest", "read-file", "0.25").exit_code == 0
    assert path.stat().st_mode & 0o777 == 0o640
    assert json.loads(path.read_text())["cases"][0]["sub_scores"]["output_quality"] == 0.25
