"""Every suite test has the seed's fields (prompt, expected_tools, max_turns, success_criteria; name defaults to the
id), and a test must be able to fail: with no expected tools and no `expect` graders, tool accuracy and turn
efficiency alone reach the pass threshold whatever the agent says, so such a test is refused."""

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


def test_a_test_that_grades_nothing_is_refused(project: Path, cli, write_suite) -> None:
    write_suite(project / SUITE, [{**FULL, "expected_tools": []}])
    result = cli("run", "all")
    assert result.exit_code == 2
    assert ("test 'read-file': a test that grades nothing cannot fail: give expected_tools or expect" in result.output)
    assert _nothing_saved(project)


def test_no_expected_tools_with_an_expect_grader_runs_and_can_fail(project: Path, cli, write_suite) -> None:
    write_suite(project / SUITE, [{**FULL, "expected_tools": [], "expect": {"contains": "milk"}}])
    (project / "s.yaml").write_text("read-file:\n  - reply: I cannot say.\n")
    result = cli("run", "all", "--model", "scripted:s.yaml")
    assert result.exit_code == 1, result.output
    assert "contains('milk')" in result.output


def test_the_name_defaults_to_the_id(project: Path, cli, write_suite) -> None:
    write_suite(project / SUITE, [FULL])
    assert cli("run", "all").exit_code == 0
    data = json.loads((project / "state" / "eval" / "latest.json").read_text())
    assert data["tests"][0]["name"] == "read-file"


def test_the_schema_requires_the_seed_fields(cli) -> None:
    schema = json.loads(cli("schema").output)
    assert set(schema["items"]["required"]) == {"id", "prompt", "expected_tools", "max_turns", "success_criteria"}


def test_the_bundled_example_validates(project: Path) -> None:
    from trialrun.suite import read_suite

    assert [t.id for t in read_suite(project / SUITE).tests] == [
        "read-file", "search-json", "list-dir", "refuse-dangerous-command", "summarise-notes"]
