"""The eval skill's seed (../shared/seeds/002_*.txt), statement by statement, through the `trialrun` CLI."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from trialrun.report.results import RunReport


def results(project: Path) -> list[Path]:
    return sorted((project / "state" / "eval").glob("results_*.json"))


def test_load_tests_missing_or_empty_is_an_error(project: Path, cli, write_suite) -> None:
    (project / "state" / "eval" / "tests.json").unlink()
    result = cli("run", "all")
    assert result.exit_code == 2
    assert "state/eval/tests.json not found (configuration: " in result.output
    write_suite(project / "state" / "eval" / "tests.json", "[]")
    result = cli("run", "all")
    assert result.exit_code == 2 and "the suite has no tests" in result.output
    write_suite(project / "state" / "eval" / "tests.json", "")
    assert "the suite is empty" in cli("run", "all").output
    assert results(project) == []


def test_run_all_runs_the_entire_suite_and_writes_results(project: Path, cli) -> None:
    result = cli("run", "all")
    assert result.exit_code == 1  # two tests fail with model v1
    for test_id in ("read-file", "search-json", "list-dir", "refuse-dangerous-command", "summarise-notes"):
        assert test_id in result.output
    [path] = results(project)
    assert f"saved {path}" in result.output.replace("\n", "")
    latest = project / "state" / "eval" / "latest.json"
    assert latest.is_symlink() and latest.resolve() == path.resolve()
    data = json.loads(path.read_text())
    assert data["run_id"] == "eval_" + path.stem.removeprefix("results_")
    assert data["timestamp"].endswith("Z") and len(data["timestamp"]) == 20
    assert data["config_snapshot"]["model"] == "scripted:model_v1.yaml"
    assert data["config_snapshot"]["skills_loaded"] == ["eval"]
    tests = {t["id"]: t for t in data["tests"]}
    assert tests["read-file"] == {
        "id": "read-file", "name": "Read the notes", "passed": True, "tools_used": ["read_file"], "turns": 2,
        "score": 1.0, "sub_scores": {"tool_accuracy": 1.0, "turn_efficiency": 1.0, "output_quality": 0.5},
    }
    assert type(tests["read-file"]["turns"]) is int  # the seed writes "turns": 2, not 2.0
    assert tests["search-json"]["passed"] is False
    assert tests["search-json"]["sub_scores"] == {"tool_accuracy": 0.0, "turn_efficiency": pytest.approx(2 / 3), "output_quality": 0.0}


def test_run_a_specific_test_by_id(project: Path, cli) -> None:
    result = cli("run", "read-file")
    assert result.exit_code == 0, result.output
    data = json.loads(results(project)[0].read_text())
    assert [t["id"] for t in data["tests"]] == ["read-file"]


def test_run_an_unknown_test_id_is_a_usage_error(project: Path, cli) -> None:
    result = cli("run", "read-fil")
    assert result.exit_code == 2 and "no test 'read-fil'" in result.output and "read-file" in result.output


def test_report_shows_the_most_recent_run(project: Path, cli) -> None:
    cli("run", "all")
    cli("run", "read-file")
    result = cli("report")
    assert result.exit_code == 0  # the latest run (read-file only) passed
    assert "read-file" in result.output and "search-json" not in result.output
    first = results(project)[0]
    older = cli("report", first.stem.replace("results_", "eval_"))
    assert older.exit_code == 1 and "search-json" in older.output


def test_report_json_round_trips(project: Path, cli) -> None:
    cli("run", "all")
    data = cli("report", "--json").output
    assert RunReport.model_validate_json(data).case_count == 5


SEED_COMPARE = """\
read-file:                 1.00 -> 1.00  = unchanged
search-json:               0.22 -> 1.00  ▲ +0.78, now passes
list-dir:                  1.00 -> 1.00  = unchanged
refuse-dangerous-command:  0.83 -> 1.00  ▲ +0.17, now passes
summarise-notes:           1.00 -> 0.17  ▼ -0.83, now fails

Avg score: 0.81 -> 0.83  ▲ +0.02
Pass rate: 3/5 -> 4/5   ▲ +1
WARNING: regression in summarise-notes: 1.00 -> 0.17 (-0.83, a drop of 0.10 or more)
Config changes:
  model: scripted:model_v1.yaml -> scripted:model_v2.yaml
"""
#: What trialrun adds below the skill's lines: the kind of runs (their trials talked to a scripted model only), the
#: word for each test and the run, and the gate's decision.
VERDICT = """
Deterministic runs: every change is real; no chance statistics (before, deterministic: scripted model in 5 of 5 trials; after, deterministic: scripted model in 5 of 5 trials)
Verdict:
  read-file:                 not worse: 1/1 -> 1/1 trials passed
  search-json:               not worse: 0/1 -> 1/1 trials passed
  list-dir:                  not worse: 1/1 -> 1/1 trials passed
  refuse-dangerous-command:  not worse: 0/1 -> 1/1 trials passed
  summarise-notes:           worse: 1/1 -> 0/1 trials passed
  the run:                   worse: 1 of 5 tests worse
gate: fails: 1 test worse (summarise-notes)
"""

#: The same story under the skill's literal formula: the clamp hides refuse-dangerous-command's change in the total,
#: so its line says the flip and the sub-score that moved.
SKILL_COMPARE = """\
read-file:                 1.00 -> 1.00  = unchanged
search-json:               0.67 -> 1.00  ▲ +0.33, now passes
list-dir:                  1.00 -> 1.00  = unchanged
refuse-dangerous-command:  1.00 -> 1.00  ▲ now passes; output_quality 0.25 -> 0.50 (+0.25)
summarise-notes:           1.00 -> 0.50  ▼ -0.50, now fails

Avg score: 0.93 -> 0.90  ▼ -0.03
Pass rate: 3/5 -> 4/5   ▲ +1
WARNING: regression in summarise-notes: 1.00 -> 0.50 (-0.50, a drop of 0.10 or more)
Config changes:
  model: scripted:model_v1.yaml -> scripted:model_v2.yaml
"""


def test_compare_loads_the_two_most_recent_runs(project: Path, cli) -> None:
    cli("run", "all")
    cli("run", "all", "--model", "scripted:model_v2.yaml")
    result = cli("compare")
    assert result.exit_code == 0
    assert result.output.split("\n", 1)[1] == SEED_COMPARE + VERDICT  # the skill's lines first, exactly
    assert cli("compare", "--fail-on-regression").exit_code == 1


def test_compare_under_the_skill_rubric_tells_the_same_story(project: Path, cli) -> None:
    cli("run", "all", "--rubric", "skill")
    cli("run", "all", "--rubric", "skill", "--model", "scripted:model_v2.yaml")
    result = cli("compare")
    assert result.output.split("\n", 1)[1] == SKILL_COMPARE + VERDICT


def test_compare_needs_two_runs(project: Path, cli) -> None:
    cli("run", "read-file")
    result = cli("compare")
    assert result.exit_code == 2 and "1 run(s) here; compare needs two runs" in result.output


def _scored_run(project: Path, cli, write_suite, budgets: dict[str, tuple[int, int]]) -> None:
    """Write a run where test id -> (max_turns, turns) gives score = max_turns / turns exactly under the skill's
    formula: the expected tool is never used (tool_accuracy 0) and no criteria term appears (output_quality 0)."""
    tests = []
    script: dict[str, list] = {}
    for test_id, (max_turns, turns) in budgets.items():
        tests.append({"id": test_id, "prompt": "p", "expected_tools": ["write_file"], "max_turns": max_turns,
                      "success_criteria": "zebra"})
        script[test_id] = [{"tool_call": {"name": "list_dir", "arguments": {}}}] * (turns - 1) + [{"reply": "no"}]
    write_suite(project / "state" / "eval" / "tests.json", tests)
    (project / "script.json").write_text(json.dumps(script))
    cli("run", "all", "--model", "scripted:script.json", "--rubric", "skill")


def test_regression_warning_at_a_drop_of_exactly_ten_points(project: Path, cli, write_suite) -> None:
    _scored_run(project, cli, write_suite, {"a": (1, 2), "b": (19, 20), "c": (1, 2), "d": (1, 4)})
    _scored_run(project, cli, write_suite, {"a": (2, 5), "b": (17, 20), "c": (5, 11), "d": (1, 5)})
    out = cli("compare").output
    assert "a:  0.50 -> 0.40  ▼ -0.10" in out  # 0.4 - 0.5 is -0.0999... in binary floating point: still -0.10
    assert "b:  0.95 -> 0.85  ▼ -0.10" in out
    assert "c:  0.50 -> 0.45  ▼ -0.05" in out
    assert "WARNING: regression in a: 0.50 -> 0.40 (-0.10, a drop of 0.10 or more)" in out
    assert "WARNING: regression in b: 0.95 -> 0.85 (-0.10, a drop of 0.10 or more)" in out
    assert "WARNING: regression in c" not in out and "WARNING: regression in d" not in out


def test_results_validate_against_the_published_schema(project: Path, cli) -> None:
    cli("run", "all", "--trials", "2")
    schema = json.loads(cli("schema", "--results").output)
    for path in results(project):
        jsonschema.validate(json.loads(path.read_text()), schema)


def test_suite_schema_accepts_the_bundled_suite(project: Path, cli) -> None:
    schema = json.loads(cli("schema").output)
    jsonschema.validate(json.loads((project / "state" / "eval" / "tests.json").read_text()), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([{"id": "x", "prompt": "p", "max_turns": "3"}], schema)


def test_trials_score_every_trial_and_report_pass_at_k(project: Path, cli) -> None:
    result = cli("run", "all", "--trials", "3")
    assert "pass@1" in result.output and "pass^k" in result.output and "(k=3)" in result.output
    data = json.loads(results(project)[0].read_text())
    assert data["trial_count"] == 3 and all(len(c["trials"]) == 3 for c in data["cases"])
    assert data["pass_at_1"] == pytest.approx(0.6) and data["pass_pow_k"] == pytest.approx(0.6)


def test_grade_by_hand_rewrites_quality_score_and_totals(project: Path, cli, write_suite) -> None:
    _scored_run(project, cli, write_suite, {"a": (1, 2)})
    path = results(project)[0]
    before = RunReport.model_validate_json(path.read_text())
    assert before.case("a").score == 0.5 and before.failed_case_count == 1
    result = cli("grade", before.run_id, "a", "0.25")
    assert result.exit_code == 0, result.output
    assert "score 0.50 -> 0.75; passed" in result.output
    after = RunReport.model_validate_json(path.read_text())
    case = after.case("a")
    assert case.score == 0.75 and case.passed and case.sub_scores["output_quality"] == 0.25
    assert after.passed_case_count == 1 and after.failed_case_count == 0
    assert case.trials[0].verdicts[0].details["quality_by"] == "hand"
    assert cli("grade", before.run_id, "zz", "0.25").exit_code == 2


def test_compare_shows_added_and_removed_tests_and_pass_at_k_with_trials(project: Path, cli, write_suite) -> None:
    cli("run", "read-file", "list-dir", "--trials", "2")
    cli("run", "read-file", "search-json", "--trials", "2", "--model", "scripted:model_v2.yaml")
    out = cli("compare").output
    assert "search-json:    new -> 1.00  + added" in out
    assert "list-dir:     1.00 -> gone  - removed" in out
    assert "pass@1:    1.00 -> 1.00  = unchanged" in out and "pass^k:    1.00 -> 1.00  = unchanged" in out
    data = json.loads(cli("compare", "--json").output)
    assert data["added"] == ["search-json"] and data["removed"] == ["list-dir"]


def test_configuration_from_pyproject(project: Path, cli) -> None:
    toml = (project / "trialrun.toml").read_text()
    (project / "trialrun.toml").unlink()
    body = "\n".join(line for line in toml.splitlines() if not line.startswith("#"))
    body = body.replace("[policy]", "[tool.trialrun.policy]")
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n\n[tool.trialrun]\n" + body + "\n")
    result = cli("run", "read-file")
    assert result.exit_code == 0, result.output
    snapshot = json.loads((project / "state" / "eval" / "latest.json").read_text())["config_snapshot"]
    assert snapshot["model"] == "scripted:model_v1.yaml" and snapshot["policy"]["deny_commands"] == ["rm -rf", "curl | sh"]


def test_a_test_over_its_turn_budget_is_measured_not_stopped(project: Path, cli) -> None:
    cli("run", "summarise-notes", "--model", "scripted:model_v2.yaml")
    case = json.loads((project / "state" / "eval" / "latest.json").read_text())["cases"][0]
    assert case["turns"] == 4 and case["metadata"]["max_turns"] == 2  # 4 turns ran against a budget of 2
    assert case["sub_scores"]["turn_efficiency"] == 0.5 and case["trials"][0]["status"] == "completed"


ROOT = Path(__file__).resolve().parents[2]
#: README.md and the docs pages that hold what moved out of it (docs/cli.md has the full compare story)
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _readme_blocks() -> list[str]:
    """The fenced blocks of README.md and the docs pages, in order (fences opened and closed line by line)."""
    blocks: list[str] = []
    for document in DOCUMENTS:
        current: list[str] | None = None
        for line in document.read_text(encoding="utf-8").splitlines():
            if line.startswith("```"):
                if current is None:
                    current = []
                else:
                    blocks.append("\n".join(current) + "\n")
                    current = None
            elif current is not None:
                current.append(line)
    return blocks


def test_the_readme_compare_sample_is_what_compare_prints(project: Path, cli) -> None:
    """Every copy of the sample (README.md's and docs/cli.md's) is what compare prints."""
    samples = [block for block in _readme_blocks() if block.startswith("eval_") and " -> eval_" in block.split("\n")[0]]
    assert len(samples) >= 2, "the compare sample is not in both README.md and docs/cli.md"
    cli("run", "all")
    cli("run", "all", "--model", "scripted:model_v2.yaml")
    printed = cli("compare").output.split("\n", 1)[1]
    for sample in samples:
        assert printed == sample.split("\n", 1)[1]

    [verdict] = [block for block in _readme_blocks()  # docs/cli.md's, of the same two runs with -k 5
                 if block.startswith("Deterministic runs: every change is real") and "25 of 25 trials" in block]
    cli("run", "all", "-k", "5")
    cli("run", "all", "-k", "5", "--model", "scripted:model_v2.yaml")
    lines = cli("compare").output.splitlines()
    assert all(line in lines for line in verdict.splitlines()), verdict
    assert "  summarise-notes:           worse: 5/5 -> 0/5 trials passed" in verdict.splitlines()
