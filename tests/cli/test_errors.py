"""Bad input at the command line: every malformed suite, config and result file gets a clear message, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SUITE = Path("state/eval/tests.json")


@pytest.mark.parametrize(
    "text, message",
    [
        ('[{"id": "a", "prompt": "x"},\n {"id": "b" "prompt": "y"}]', "tests.json:2:13: not valid JSON: Expecting ',' delimiter"),
        ('{"id": "a"}', "tests.json: a suite is a JSON array of tests, got an object"),
        ('"tests"', "tests.json: a suite is a JSON array of tests, got a string"),
        ('[{"id": "a", "prompt": "x", "sucess_criteria": "y"}]',
         "tests.json:1: test 'a', field 'sucess_criteria': unknown field (did you mean 'success_criteria'?)"),
        ('[{"id": "a", "prompt": "x"},\n {"id": "a", "prompt": "y"}]', "tests.json:2: test 'a': duplicate id 'a' (first at line 1)"),
        ('[{"id": "a", "prompt": "x", "max_turns": "3"}]',
         "test 'a', field 'max_turns': input should be a valid integer (got '3')"),
        ('[{"id": "a", "prompt": "x", "max_turns": 2.5}]', "test 'a', field 'max_turns': input should be a valid integer"),
        ('[{"id": "a", "prompt": "x", "expected_tools": ["read_file", 7]}]',
         "test 'a', field 'expected_tools[1]': input should be a valid string (got 7)"),
        ('[{"prompt": "x"}]', "test #1, field 'id': required"),
        ('[{"id": "a"}]', "test 'a', field 'prompt': required"),
        ('[{"id": "a", "prompt": "x", "mode": "sometimes"}]', "test 'a', field 'mode'"),
        ('[{"id": "a", "prompt": "x", "expect": [{"contain": "y"}]}]',
         "test 'a', field 'expect': expect[1]: unknown grader 'contain' (did you mean 'contains'?)"),
        ('[{"id": "a", "prompt": "x", "expect": [{"called": {"tol": "y"}}]}]',
         "test 'a', field 'expect': expect[1]: called: unknown key(s) 'tol'"),
        ('[{"id": "a", "prompt": "x", "expect": [{"max_turns": "2"}]}]',
         "test 'a', field 'expect': expect[1]: max_turns: got str '2', expected an integer"),
        ('[3]', "test #1: a test is an object, got int"),
    ],
)
def test_malformed_suite_messages(project: Path, cli, write_suite, text: str, message: str) -> None:
    write_suite(project / SUITE, text)
    result = cli("run", "all")
    assert result.exit_code == 2
    assert message in result.output, result.output
    assert "Traceback" not in result.output
    assert not list((project / "state" / "eval").glob("results_*.json"))


def test_every_problem_is_listed_at_once(project: Path, cli, write_suite) -> None:
    write_suite(project / SUITE, [
        {"id": "a", "prompt": "x", "expected_tools": ["read_file"], "max_turns": "3", "success_criteria": "c"},
        {"id": "a", "prompt": "y", "expected_tools": ["read_file"], "max_turns": 3, "success_criteria": "c"},
        {"id": "b", "prompt": "z", "expected_tools": [1], "max_turns": 3, "success_criteria": "c", "colour": "red"},
        {"id": "c", "prompt": "w"},
    ])
    result = cli("run", "all")
    assert "7 problems in the suite; nothing was run:" in result.output
    for needle in ("field 'max_turns'", "duplicate id 'a'", "field 'expected_tools[0]'", "field 'colour': unknown field",
                   "test 'c', field 'expected_tools': required", "test 'c', field 'max_turns': required",
                   "test 'c', field 'success_criteria': required"):
        assert needle in result.output


def test_yaml_suites_work_and_report_line_and_column(project: Path, cli, write_suite) -> None:
    write_suite(project / "state" / "eval" / "tests.yaml", "- id: read-file\n  prompt: What do my notes say?\n  expected_tools: [read_file]\n"
                "  max_turns: 2\n  success_criteria: Mentions the meeting with Sam\n")
    result = cli("run", "all", "--suite", "state/eval/tests.yaml")
    assert result.exit_code == 0, result.output
    write_suite(project / "state" / "eval" / "tests.yaml", "- id: a\n  prompt: [oops\n")
    result = cli("run", "all", "--suite", "state/eval/tests.yaml")
    assert result.exit_code == 2 and "tests.yaml:3:1: not valid YAML" in result.output


@pytest.mark.parametrize(
    "toml, message",
    [
        ('modle = "x"\n', "unknown key 'modle' (did you mean 'model'?)"),
        ('model = "gpt-4"\n', "model 'gpt-4' is not a model spec"),
        ('turn_limit = 0\n', "turn_limit: must be at least 1"),
        ('pass_threshold = 7\n', "pass_threshold: must be between 0 and 1"),
        ('model = [\n', "not valid TOML"),
        ('model = "scripted:missing.yaml"\n', "missing.yaml: scripted model file not found"),
        ('agent = "nowhere:run"\n', "agent 'nowhere:run': cannot import nowhere"),
        ('[policy]\ndeny_comands = ["rm -rf"]\n', "[policy]: unknown policy key(s): deny_comands"),
        ('tools = ["shel"]\n', "tools: 'shel' is not 'shell'"),
        ('workspace = "nope"\n', "workspace"),
    ],
)
def test_configuration_errors(project: Path, cli, toml: str, message: str) -> None:
    config = project / "trialrun.toml"
    base = 'model = "scripted:model_v1.yaml"\n' if not toml.startswith(("model", "modle")) else ""
    config.write_text(base + toml)
    result = cli("run", "all")
    assert result.exit_code == 2 and message in result.output, result.output
    assert "Traceback" not in result.output


def test_a_script_without_a_test_is_named(project: Path, cli) -> None:
    (project / "partial.yaml").write_text("read-file:\n  - reply: hi\n")
    result = cli("run", "all", "--model", "scripted:partial.yaml")
    assert result.exit_code == 2 and "no script for test(s) 'search-json'" in result.output


def test_bad_label_is_a_usage_error(project: Path, cli) -> None:
    result = cli("run", "all", "--label", "novalue")
    assert result.exit_code == 2 and "is not KEY=VALUE" in result.output


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "the file is empty"),
        ('{"schema_version": "1.0", "run_id": "x", "cases": [', "not valid JSON at line 1"),
        ('{"schema_version": "9.0"}', "written by a newer trialrun (schema 9.0"),
        ('{"run_id": "x"}', "not a trialrun result file (no schema_version)"),
        ('{"schema_version": "1.0", "started_at": "yesterday"}', "invalid result file: started_at"),
    ],
)
def test_corrupt_result_files_name_the_file_and_the_others_stay_usable(project: Path, cli, content: str, message: str) -> None:
    cli("run", "read-file")
    cli("run", "list-dir")
    folder = project / "state" / "eval"
    bad = folder / "results_29990101_000000.json"
    bad.write_text(content)
    result = cli("report", "eval_29990101_000000")
    assert result.exit_code == 2 and str(bad.name) in result.output and message in result.output
    assert cli("report").exit_code == 0  # latest.json still names a good run
    assert "read-file" in cli("compare").output  # compare skips the unusable file


def test_missing_run_id(project: Path, cli) -> None:
    cli("run", "read-file")
    result = cli("report", "eval_20000101_000000")
    assert result.exit_code == 2 and "no run 'eval_20000101_000000'" in result.output


def test_report_without_results(project: Path, cli) -> None:
    result = cli("report")
    assert result.exit_code == 2 and "no runs here; nothing to show; run `trialrun run` first" in result.output


def test_a_newer_run_written_by_hand_is_not_trusted_as_latest(project: Path, cli) -> None:
    """latest.json, not the newest file name, says which run is the latest: a result file copied in or written by
    hand with a later timestamp is not shown by `report` (or `grade latest`) until a run points latest.json at it."""
    assert cli("run", "read-file").exit_code == 0
    folder = project / "state" / "eval"
    [ours] = folder.glob("results_*.json")
    data = json.loads(ours.read_text())
    data["run_id"] = "eval_29990101_000000"
    data["cases"][0]["passed"] = False
    data["failed_case_count"], data["passed_case_count"] = 1, 0
    (folder / "results_29990101_000000.json").write_text(json.dumps(data))

    result = cli("report")
    assert result.exit_code == 0, result.output  # the real run passed; the hand-written one "failed"
    assert str(ours) in result.output and "eval_29990101_000000" not in result.output
    graded = cli("grade", "latest", "read-file", "0.25")
    assert graded.exit_code == 0 and f"({ours.resolve()})" in graded.output
    assert json.loads((folder / "results_29990101_000000.json").read_text())["cases"][0]["passed"] is False
    # named explicitly, the hand-written file is still readable
    assert cli("report", "results_29990101_000000").exit_code == 1


@pytest.mark.parametrize("command", [("run", "all"), ("report",), ("compare",), ("view",)])
def test_a_folder_that_is_not_a_project_says_where_it_looked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             command: tuple[str, ...]) -> None:
    """Run from the wrong folder (no trialrun.toml here or above): each command names the folder it looked in and
    suggests `trialrun init`, --config and --suite, in the one error style (exit 2, no click Usage)."""
    from click.testing import CliRunner

    from trialrun.cli import main

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, list(command))
    assert result.exit_code == 2, result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("error: ") and str(tmp_path / "state" / "eval") in line
    assert f"no trialrun.toml or [tool.trialrun] was found in {tmp_path} or above" in line
    assert "`trialrun init` makes a project here" in line and "--suite FILE" in line and "Usage:" not in result.output


def test_a_missing_model_file_says_which_was_meant(project: Path) -> None:
    """--model scripted:FILE with a typo: the model files beside it, and the one most likely meant."""
    from click.testing import CliRunner

    from trialrun.cli import main

    result = CliRunner().invoke(main, ["run", "all", "--model", "scripted:modelv2.yaml"])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        f"error: {project / 'modelv2.yaml'}: scripted model file not found; did you mean 'model_v2.yaml'? (YAML and "
        f"JSON files in {project}: model_v1.yaml, model_v2.yaml)")


@pytest.mark.parametrize(("args", "said"), [
    (("compare", "one-run"), "error: give two runs (A B) or none for the two most recent"),
    (("run", "all", "--label", "nokey"), "error: Invalid value for --label: 'nokey' is not KEY=VALUE"),
    (("report", "--history"), "error: --history writes the runs list as HTML: give --html FILE"),
    (("run", "no-such-test"), "error: no test 'no-such-test' in "),
    (("agents", "clause"), "error: Invalid value for NAMES: no ready-made agent 'clause'"),
])
def test_our_own_checks_speak_in_one_error_style(project: Path, args: tuple[str, ...], said: str) -> None:
    """A check trialrun makes prints `error: ...` and exits 2, like every other user error; click's `Usage: ...
    Error: ...` is left to what click itself finds while parsing (an unknown option)."""
    from click.testing import CliRunner

    from trialrun.cli import main

    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 2 and said in result.output, result.output
    assert "Usage:" not in result.output and "Error:" not in result.output
    parsing = CliRunner().invoke(main, ["run", "--no-such-option"])
    assert parsing.exit_code == 2 and "No such option" in parsing.output
