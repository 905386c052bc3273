"""Task folders in a suite (issue 34): a test's own `workspace`, copied afresh into each trial's workdir (the folder
itself never changes: hashed before and after), its `setup` commands, the graders of the files left in tests.json
(schema, did-you-mean), the rubric's output quality from `verify`, a hung verifier's cost, and the files left in
`trialrun report --files`, the export and `trialrun regrade`. The project is the coding-agent example, run by the
reference agent (agents/reference.toml)."""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path

import jsonschema
import pytest

from trialrun.report.store import load_report

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "coding-agent"
REFERENCE = "agents/reference.toml"


@pytest.fixture
def coding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "coding-agent"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("results"))
    monkeypatch.chdir(target)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setenv("COLUMNS", "160")
    return target


def _hashes(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _latest(project: Path) -> object:
    return load_report(project / "results" / "latest.json")


def _suite(project: Path) -> list[dict]:
    return json.loads((project / "tests.json").read_text())


def _write(project: Path, tests: list[dict]) -> None:
    (project / "tests.json").write_text(json.dumps(tests, indent=1))


def test_each_trial_works_on_a_fresh_copy_of_its_task_folder_which_never_changes(coding: Path, cli) -> None:
    before = _hashes(coding / "tasks")
    result = cli("run", "all", "--config", REFERENCE, "-k", "2")
    assert result.exit_code == 0, result.output
    assert _hashes(coding / "tasks") == before
    report = _latest(coding)
    changed = {case.name: {tuple((f.path, f.change) for f in t.files.files) for t in case.trials} for case in report.cases}
    assert changed == {"fix-add": {(("app.py", "changed"),)}, "tax-constant": {(("prices.py", "changed"),)},
                       "greet": {(("hello.py", "changed"),)}}
    fix = report.cases[0].trials[0]
    assert ".git" in fix.files.not_examined  # its setup made a repository in the copy; not compared
    assert "+    return a + b" in fix.files.get("app.py").diff


def test_setup_commands_run_in_the_copy_in_order_before_the_agent(coding: Path, cli) -> None:
    tests = _suite(coding)
    tests[2]["setup"] = ["echo one > made.txt", "echo two >> made.txt"]
    tests[2]["expect"]["verify"] = "test \"$(cat made.txt)\" = \"$(printf 'one\\ntwo')\" && python3 test_hello.py"
    _write(coding, tests)
    assert cli("run", "greet", "--config", REFERENCE).exit_code == 0
    trial = _latest(coding).cases[0].trials[0]
    assert trial.passed and "made.txt" in trial.files.unchanged  # made before the agent started: not its change
    assert not (coding / "tasks" / "greet" / "made.txt").exists()


def test_a_failing_setup_command_is_the_trial_s_setup_error_naming_the_test_not_a_grade(coding: Path, cli) -> None:
    tests = _suite(coding)
    tests[2]["setup"] = ["true", "echo 'no such fixture' >&2; exit 3"]
    _write(coding, tests)
    result = cli("run", "greet", "--config", REFERENCE)
    assert result.exit_code == 1
    trial = _latest(coding).cases[0].trials[0]
    assert trial.error.phase == "setup" and trial.error.type == "SetupError" and trial.verdicts == []
    assert trial.error.message == ("test 'greet': setup command 2 of 2 `echo 'no such fixture' >&2; exit 3` exited 3: "
                                   "no such fixture")
    assert "setup: SetupError: test 'greet': setup command 2 of 2" in " ".join(result.output.split())


def test_a_missing_task_folder_is_an_error_naming_the_test_before_anything_runs(coding: Path, cli) -> None:
    tests = _suite(coding)
    tests[1]["workspace"] = "tasks/tax-constnt"
    _write(coding, tests)
    result = cli("run", "all", "--config", REFERENCE)
    assert result.exit_code == 2 and not (coding / "results").exists()
    line = next(n for n, text in enumerate((coding / "tests.json").read_text().splitlines(), 1) if "tax-constant" in text)
    assert (f"tests.json:{line - 1}: test 'tax-constant', field 'workspace': 'tasks/tax-constnt' is not a folder (did "
            "you mean 'tasks/tax-constant'?)") in " ".join(result.output.split())


@pytest.mark.parametrize(("change", "message"), [
    ({"worksapce": "tasks/greet"}, "field 'worksapce': unknown field (did you mean 'workspace'?)"),
    ({"expect": {"verfy": "python3 t.py"}}, "unknown grader 'verfy' (did you mean 'verify'?)"),
    ({"expect": {"file_contains": {"path": "a.py"}}}, "file_contains: 'text' is required (expected {path, text})"),
    ({"expect": {"changed_only": "/etc/*"}}, "changed_only: expect.changed_only: a glob '/etc/*' must be relative"),
    ({"expect": {"verify": {"command": "true", "timeout_s": "5"}}}, "verify: got str '5', expected a number of seconds"),
    ({"setup": ["ok", " "]}, "field 'setup': a setup command is empty"),
])
def test_a_wrong_task_field_or_grader_is_named_with_a_suggestion(coding: Path, cli, change: dict, message: str) -> None:
    tests = _suite(coding)
    tests[2].update(change)
    _write(coding, tests)
    result = cli("run", "all", "--config", REFERENCE)
    assert result.exit_code == 2 and message in result.output, result.output


def test_the_schema_describes_task_folders_and_the_graders_of_the_files(coding: Path, cli) -> None:
    schema = json.loads(cli("schema").output)
    jsonschema.validate(_suite(coding), schema)
    item = schema["items"]["properties"]
    assert {"workspace", "setup"} <= set(item)
    bad = _suite(coding)
    bad[0]["expect"]["file_contains"] = {"path": "app.py"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    bad[0]["expect"]["file_contains"] = {"path": "app.py", "text": "a + b"}
    bad[0]["expect"]["verify"] = {"command": "pytest", "timeout_s": 0}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_a_hung_verifier_costs_its_timeout_and_no_more(coding: Path, cli) -> None:
    tests = _suite(coding)
    tests[0]["expect"]["verify"] = {"command": "sleep 300", "timeout_s": 2}
    _write(coding, tests)
    started = time.monotonic()
    assert cli("run", "fix-add", "--config", REFERENCE).exit_code == 1
    took = time.monotonic() - started
    trial = _latest(coding).cases[0].trials[0]
    [rubric, verify] = trial.verdicts[:2]
    assert not verify.passed and "did not finish within its timeout of 2s and was stopped" in verify.reason
    assert rubric.details["sub_scores"]["output_quality"] == 0.0 and "from verify('sleep 300'" in rubric.reason
    assert took < 2 + 6, took  # its timeout, the reference agent's few steps and the run's own start


def test_sed_instead_of_edit_passes_when_expected_tools_leave_the_path_open(coding: Path, cli) -> None:
    """The rubric's docs: tool accuracy counts `expected_tools`; `verify` gives output quality. A test that expects a
    tool the agent did not use scores 0.67 on a correct fix and fails; one that names no tool passes it, and a wrong
    fix fails either way."""
    tests = _suite(coding)
    fix = tests[0]
    wrong = {**fix, "id": "wrong-fix"}
    strict = {**fix, "id": "strict", "expected_tools": ["write_file"]}
    _write(coding, [fix, strict, wrong])
    script = {"fix-add": [{"tool_call": {"name": "run_command", "arguments": {
        "command": "sed -i 's/return a - b/return a + b/' app.py"}}}, {"reply": "fixed"}]}
    script["strict"] = script["fix-add"]
    script["wrong-fix"] = [{"tool_call": {"name": "run_command", "arguments": {
        "command": "sed -i 's/return a - b/return a * b/' app.py"}}}, {"reply": "fixed"}]
    (coding / "agents" / "reference.yaml").write_text(json.dumps(script))
    cli("run", "all", "--config", REFERENCE)
    scores = {c.name: (c.trials[0].verdicts[0].score, c.trials[0].passed) for c in _latest(coding).cases}
    assert scores["fix-add"] == (1.0, True)
    assert scores["strict"][0] == pytest.approx(2 / 3) and scores["strict"][1] is False
    assert scores["wrong-fix"] == (pytest.approx(2 / 3), False)


def test_report_files_and_the_export_show_the_files_left(coding: Path, cli) -> None:
    cli("run", "all", "--config", REFERENCE)
    shown = cli("report", "--files", "--test", "fix-add", "--exit-zero").output
    assert "== fix-add · trial 1 · PASS" in shown and "--- a/app.py" in shown and "+    return a + b" in shown
    assert "tax-constant" not in shown.split("Files left:")[1]
    atif = [json.loads(line) for line in cli("export", "latest", "--format", "atif").output.splitlines()]
    files = atif[0]["extra"]["trialrun"]["files"]
    assert files["changed"][0]["path"] == "app.py" and "+    return a + b" in files["diff"]
    spans = json.loads(cli("export", "latest", "--format", "otel").output)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    root = {a["key"]: a["value"] for a in spans[0]["attributes"]}
    assert root["trialrun.files.summary"]["stringValue"] == "1 changed of 2 files examined"


def test_regrade_judges_the_stored_diff_and_names_the_verifier_it_could_not_run(coding: Path, cli) -> None:
    assert cli("run", "all", "--config", REFERENCE).exit_code == 0
    tests = _suite(coding)
    tests[0]["expect"]["changed_only"] = ["README.md"]  # now app.py is a change it does not allow
    tests[0]["expect"]["file_exists"] = "app.py"
    _write(coding, tests)
    result = cli("regrade", "--config", REFERENCE, "--make-latest")
    assert result.exit_code == 1
    text = " ".join(result.output.split())
    assert "verify('python3 test_app.py'): kept its verdict from" in text
    report = _latest(coding)
    fix = {v.grader: v for v in report.cases[0].trials[0].verdicts}
    assert not fix["changed_only(['README.md'])"].passed
    assert fix["changed_only(['README.md'])"].reason == "the agent also changed app.py (changed); allowed: README.md"
    assert fix["file_exists('app.py')"].passed and "by the stored workspace diff" in fix["file_exists('app.py')"].reason
    assert fix["verify('python3 test_app.py')"].details["regrade"] == "kept"
    assert "as the run judged it: not run again" in next(v for k, v in fix.items() if k.startswith("rubric")).reason


def test_verify_runs_in_the_sandbox_the_reference_agent_s_commands_run_in(coding: Path, cli, tmp_path: Path) -> None:
    import os

    from trialrun._contain.sandbox import bwrap_problem

    if bwrap_problem() is not None and not os.environ.get("CI"):
        pytest.skip(f"bubblewrap: {bwrap_problem()}")
    host = tmp_path / "on-the-host.txt"  # under /tmp, which the sandbox replaces with an empty one
    host.write_text("x")
    config = coding / REFERENCE
    config.write_text(config.read_text().replace('tools = ["shell"]', 'tools = ["shell"]\nsandbox = "bwrap"'))
    tests = _suite(coding)
    tests[2]["expect"]["verify"] = f"test ! -e {host} && /usr/bin/python3 test_hello.py"
    _write(coding, tests)
    assert cli("run", "greet", "--config", REFERENCE).exit_code == 0
    verify = _latest(coding).cases[0].trials[0].verdicts[1]
    assert verify.passed and "in the sandbox (bwrap)" in verify.reason, verify.reason


def test_a_link_that_leads_back_into_the_task_folder_is_refused(coding: Path, cli) -> None:
    """Copied as it is, an absolute link to a file of the task folder would let a trial write to the folder."""
    import os

    before = _hashes(coding / "tasks")
    os.symlink(coding / "tasks" / "greet" / "config.json", coding / "tasks" / "greet" / "settings.json")
    result = cli("run", "all", "--config", REFERENCE)
    assert result.exit_code == 2
    assert ("field 'workspace': settings.json is a symbolic link to an absolute path inside the task folder itself"
            in " ".join(result.output.split()))
    (coding / "tasks" / "greet" / "settings.json").unlink()
    os.symlink("config.json", coding / "tasks" / "greet" / "settings.json")  # a relative one stays in the copy
    assert cli("run", "greet", "--config", REFERENCE).exit_code == 0
    (coding / "tasks" / "greet" / "settings.json").unlink()
    assert _hashes(coding / "tasks") == before


def test_an_ab_run_of_a_coding_agent_compares_its_verify_pass_rates(coding: Path, cli, tmp_path: Path) -> None:
    """Issue 34: a coding-agent A/B is judged by the same graders. Arm `wrong` writes `a * b`; the task's own test,
    run here on what that arm writes, fails: so its verifier must fail in every trial where the other arm's passes,
    and the A/B (and `trialrun compare` of the two arms' runs) must call fix-add worse for that, and gate on it."""
    import subprocess
    import sys

    import yaml

    script = yaml.safe_load((coding / "agents" / "reference.yaml").read_text())
    fixes = {}
    for arm, body in (("right", "a + b"), ("wrong", "a * b")):
        steps = [s for s in script["fix-add"] if s.get("tool_call", {}).get("name") != "write_file"]
        written = next(s for s in script["fix-add"] if s.get("tool_call", {}).get("name") == "write_file")
        content = written["tool_call"]["arguments"]["content"].replace("a + b", body)
        steps.insert(1, {"tool_call": {"name": "write_file", "arguments": {"path": "app.py", "content": content}}})
        (coding / "agents" / f"{arm}.yaml").write_text(json.dumps({"fix-add": steps}))
        judge = tmp_path / arm  # the truth: the task folder's own test on the app.py this arm writes
        shutil.copytree(EXAMPLE / "tasks" / "fix-add", judge)
        (judge / "app.py").write_text(content)
        fixes[arm] = subprocess.run([sys.executable, "test_app.py"], cwd=judge, capture_output=True).returncode == 0
    assert fixes == {"right": True, "wrong": False}
    config = coding / REFERENCE
    config.write_text(config.read_text() + '\n[arms.right]\nmodel = "scripted:right.yaml"\n'
                      '[arms.wrong]\nmodel = "scripted:wrong.yaml"\n')
    result = cli("run", "fix-add", "--config", REFERENCE, "-k", "2", "--fail-on-regression")
    assert result.exit_code == 1 and "--fail-on-regression: wrong:" in result.output, result.output
    (summary,) = (coding / "results").glob("ab_*.json")
    data = json.loads(summary.read_text())
    assert data["comparisons"]["wrong"]["regressions"] == ["fix-add"] and data["gate"]["failed"] is True
    for arm in data["arms"]:
        verdicts = [v for t in load_report(coding / arm["file"]).cases[0].trials for v in t.verdicts
                    if v.grader == "verify('python3 test_app.py')"]
        assert [v.passed for v in verdicts] == [fixes[arm["name"]]] * 2, (arm["name"], [v.reason for v in verdicts])
    compared = json.loads(cli("compare", "--config", REFERENCE, "--json").output)
    [case] = compared["cases"]
    assert (case["name"], case["word"], case["trials_passed_before"], case["trials_passed_after"]) == (
        "fix-add", "worse", 2, 0)
    assert case["sub_score_regressions"] == ["output_quality"]  # the rubric's quality came from verify: 0.5 -> 0
