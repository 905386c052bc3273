"""Every suite test has the seed's fields (prompt, expected_tools, max_turns, success_criteria; name defaults to the
id). `expected_tools: []` is a valid test (the skill's "say hello"): under the balanced rubric it can still fail on
output quality and turns; under the skill's rubric it cannot fail without `expect` graders, which is a warning
naming the test (an error with --strict), never a refusal. An expected tool the reference agent does not have is a
suite error before anything runs, with a did-you-mean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SUITE = Path("state") / "eval" / "tests.json"
FULL = {"id": "read-file", "prompt": "What do my notes say?", "expected_tools": ["read_file"], "max_turns": 2,
        "success_criteria": "Mentions the meeting with Sam on Tuesday and buying milk"}


def _nothing_saved(project: Path) -> bool:
    return not list((project / "state" / "eval").glob("results_*.json"))


def test_a_test_with_only_a_prompt_is_refused_naming_each_missing_field(project: Path, cli, write_suite) -> None:
    write_suite(project / SUITE, [{"id": "read-file", "prompt": "What do my notes say?"}])
    result = cli("run", "all")
    assert result.exit_code == 2
    for field in ("expected_tools", "max_turns", "success_criteria"):
        assert f"tests.json:2: test 'read-file', field '{field}': required" in result.output, result.output
    assert "field 'name'" not in result.output  # the label defaults to the id
    assert _nothing_saved(project)


@pytest.mark.parametrize("field", ["prompt", "expected_tools", "max_turns", "success_criteria"])
def test_each_seed_field_is_required(project: Path, cli, write_suite, field: str) -> None:
    write_suite(project / SUITE, [{k: v for k, v in FULL.items() if k != field}])
    result = cli("run", "all")
    assert result.exit_code == 2
    assert f"test 'read-file', field '{field}': required" in result.output


def test_blank_success_criteria_are_refused(project: Path, cli, write_suite) -> None:
    write_suite(project / SUITE, [{**FULL, "success_criteria": ""}])
    result = cli("run", "all")
    assert result.exit_code == 2 and "field 'success_criteria'" in result.output


SAY_HELLO = {"id": "say-hello", "prompt": "Say hello", "expected_tools": [], "max_turns": 1,
             "success_criteria": "Greets the user with hello"}


def test_no_expected_tools_runs_and_can_fail_under_the_balanced_rubric(project: Path, cli, write_suite) -> None:
    write_suite(project / SUITE, [SAY_HELLO])
    (project / "lazy.yaml").write_text("say-hello:\n  - reply: No.\n")
    (project / "good.yaml").write_text("say-hello:\n  - reply: Hello there, greetings user!\n")
    lazy = cli("run", "all", "--model", "scripted:lazy.yaml")
    assert lazy.exit_code == 1, lazy.output  # tool accuracy 1.0 and turn efficiency 1.0 are two thirds: 0.67
    assert "score 0.67 (< 0.7)" in lazy.output and "warning:" not in lazy.output
    good = cli("run", "all", "--model", "scripted:good.yaml")
    assert good.exit_code == 0, good.output
    assert json.loads((project / "state" / "eval" / "latest.json").read_text())["tests"][0]["score"] == 1.0


def test_no_expected_tools_under_the_skill_rubric_is_a_warning_and_an_error_with_strict(project: Path, cli, write_suite) -> None:
    write_suite(project / SUITE, [SAY_HELLO, {**SAY_HELLO, "id": "graded", "expect": {"contains": "hello"}}])
    (project / "lazy.yaml").write_text("say-hello:\n  - reply: No.\ngraded:\n  - reply: No.\n")
    result = cli("run", "all", "--model", "scripted:lazy.yaml", "--rubric", "skill")
    assert result.exit_code == 1, result.output  # 'graded' fails its expect grader; 'say-hello' cannot fail
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: state/eval/tests.json:2: test 'say-hello': cannot fail under the \"skill\" rubric: "
                        "with no expected_tools and no expect graders, tool accuracy and turn efficiency alone reach "
                        "1.0 (use rubric = \"balanced\", or add expect graders)"]
    data = json.loads((project / "state" / "eval" / "latest.json").read_text())
    assert [t["passed"] for t in data["tests"]] == [True, False] and data["config_snapshot"]["rubric"] == "skill"

    saved = len(list((project / "state" / "eval").glob("results_*.json")))
    strict = cli("run", "all", "--model", "scripted:lazy.yaml", "--rubric", "skill", "--strict")
    assert strict.exit_code == 2
    assert "test 'say-hello': cannot fail under the \"skill\" rubric" in strict.output and "(an error with --strict)" in strict.output
    assert "Traceback" not in strict.output
    assert len(list((project / "state" / "eval").glob("results_*.json"))) == saved  # nothing ran or was saved


def test_a_misspelt_expected_tool_is_refused_before_anything_runs(project: Path, cli, write_suite) -> None:
    write_suite(project / SUITE, [{**FULL, "expected_tools": ["read-file", "list_dir"]}])
    result = cli("run", "all")
    assert result.exit_code == 2
    assert ("state/eval/tests.json:2: test 'read-file', field 'expected_tools': 'read-file' is not a tool of the "
            "reference agent (did you mean 'read_file'?); its tools: run_command, read_file, write_file, list_dir") in result.output
    assert "list_dir' is not" not in result.output
    assert _nothing_saved(project)


def test_the_name_defaults_to_the_id(project: Path, cli, write_suite) -> None:
    write_suite(project / SUITE, [FULL])
    assert cli("run", "all").exit_code == 0
    data = json.loads((project / "state" / "eval" / "latest.json").read_text())
    assert data["tests"][0]["name"] == "read-file"


def test_the_schema_requires_the_seed_fields(cli) -> None:
    schema = json.loads(cli("schema").output)
    assert set(schema["items"]["required"]) == {"id", "prompt", "expected_tools", "max_turns", "success_criteria"}


def test_the_bundled_example_validates(project: Path) -> None:
    from trialrun.suite._tests_file import read_suite

    assert [t.id for t in read_suite(project / SUITE).tests] == [
        "read-file", "search-json", "list-dir", "refuse-dangerous-command", "summarise-notes"]


def test_criteria_the_heuristic_cannot_check_are_a_warning(project: Path, cli, write_suite) -> None:
    # "Answers correctly and clearly" has no word the heuristic looks for: any non-empty answer would get output
    # quality 0.5, so with no expected tools the test passes whatever the agent says ("No." scores 1.00).
    vague = {**SAY_HELLO, "id": "vague", "success_criteria": "Answers correctly and clearly"}
    write_suite(project / SUITE, [vague, SAY_HELLO])
    (project / "lazy.yaml").write_text("vague:\n  - reply: No.\nsay-hello:\n  - reply: hello there\n")
    result = cli("run", "all", "--model", "scripted:lazy.yaml")
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: state/eval/tests.json:2: test 'vague', field 'success_criteria': no word of "
                        "'Answers correctly and clearly' is one the heuristic can look for, so any non-empty answer "
                        "gets output_quality 0.5 (name what the answer must contain, or configure a judge)"]
    assert cli("run", "all", "--model", "scripted:lazy.yaml", "--strict").exit_code == 2
