"""`scripted:FILE` models (every step kind, and a message for every way a file can be wrong), and what
trialrun.toml's `turn_limit` and `pass_threshold` do to a run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTES = "Meeting with Sam on Tuesday; buy milk."


def _latest(project: Path) -> dict:
    return json.loads((project / "state" / "eval" / "latest.json").read_text())


def _script(project: Path, steps: dict[str, list]) -> str:
    (project / "script.json").write_text(json.dumps(steps))
    return "scripted:script.json"


# -- step kinds ---------------------------------------------------------------------------------------------
def test_tool_calls_step_makes_several_calls_in_one_turn(project: Path, cli) -> None:
    model = _script(project, {"read-file": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}, {"name": "list_dir", "arguments": {}}],
         "text": "Looking."},
        {"reply": NOTES},
    ]})
    result = cli("run", "read-file", "--model", model)
    assert result.exit_code == 0, result.output
    case = _latest(project)["cases"][0]
    first_turn = case["trials"][0]["trajectory"]["turns"][0]
    assert [c["name"] for c in first_turn["tool_calls"]] == ["read_file", "list_dir"]
    assert first_turn["text"] == "Looking."
    assert "Sam" in first_turn["tool_results"][0]["content"]  # the tool really ran in the workspace copy
    assert case["tools_used"] == ["read_file", "list_dir"] and case["turns"] == 2


def test_a_429_step_is_retried_by_the_agent(project: Path, cli) -> None:
    model = _script(project, {"read-file": [
        {"error": {"status": 429, "retry_after": 0}},
        {"tool_call": {"name": "read_file", "arguments": {"path": "notes.txt"}}},
        {"reply": NOTES},
    ]})
    result = cli("run", "read-file", "--model", model)
    assert result.exit_code == 0, result.output
    trial = _latest(project)["cases"][0]["trials"][0]
    assert trial["status"] == "completed" and trial["output"] == NOTES and trial["error"] is None
    assert len(trial["trajectory"]["turns"]) == 2  # the refused request is not a turn


def test_an_error_step_the_agent_cannot_retry_fails_the_test(project: Path, cli) -> None:
    model = _script(project, {"read-file": [{"error": {"status": 400, "message": "bad tool schema"}}]})
    result = cli("run", "read-file", "--model", model)
    assert result.exit_code == 1
    trial = _latest(project)["cases"][0]["trials"][0]
    assert trial["status"] == "error" and trial["error"]["phase"] == "model"
    assert "HTTP 400" in trial["error"]["message"] and "bad tool schema" in trial["error"]["message"]
    assert "bad tool schema" in result.output  # the table says why it failed


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "the scripted model file is empty; it maps test ids to lists of steps"),
        ("[1, 2]\n", "a scripted model file maps test ids to lists of steps, e.g. {read-file: [{reply: hi}]} (got list)"),
        ("read-file: [\n", "bad.yaml:2:1: not valid YAML/JSON"),
        ("read-file: hi\n", "test 'read-file': expected a list of steps"),
        ("read-file:\n  - hi\n", "test 'read-file', step 1: a step is a mapping such as {reply: ...}, got str"),
        ("read-file:\n  - {rply: hi}\n", "step 1: a step has exactly one of tool_call, tool_calls, reply, error, shell, subagent (unknown key(s): rply)"),
        ("read-file:\n  - {reply: hi, error: 429}\n", "step 1: a step has exactly one of tool_call, tool_calls, reply, error, shell, subagent (got ['error', 'reply'])"),
        ("read-file:\n  - {reply: 3}\n", "step 1: reply must be text"),
        ("read-file:\n  - {tool_calls: []}\n", "step 1: tool_calls must be a non-empty list"),
        ("read-file:\n  - {tool_call: {arguments: {}}}\n", "step 1: tool call 1 needs a name, e.g. {name: read_file"),
        ("read-file:\n  - {tool_calls: [{name: a}, {name: b, arguments: [1]}]}\n", "step 1: tool call 2: arguments must be a mapping"),
        ("read-file:\n  - {reply: hi}\n  - {error: {status: 200}}\n",
         "step 2: error needs an HTTP error status from 400 to 599, e.g. {error: {status: 429}} (got 200)"),
        ("read-file:\n  - {error: {status: '429'}}\n", "error needs an HTTP error status from 400 to 599"),
        ("read-file:\n  - {error: {status: 429, retry_after: soon}}\n", "error: retry_after is seconds, a number >= 0 (got 'soon')"),
        ("read-file:\n  - {error: {status: 429, retry: 1}}\n", "error: unknown key(s) retry (known: status, message, retry_after)"),
        ("read-file:\n  - {reply: hi, usage: {input_tokens: 3}}\n", "step 1: usage needs input_tokens and output_tokens"),
    ],
)
def test_scripted_model_file_errors_name_file_test_and_step(project: Path, cli, text: str, message: str) -> None:
    (project / "bad.yaml").write_text(text)
    result = cli("run", "read-file", "--model", "scripted:bad.yaml")
    assert result.exit_code == 2
    assert "bad.yaml" in result.output and message in result.output, result.output
    assert "Traceback" not in result.output


def test_error_shorthand_with_a_bare_status(project: Path, cli) -> None:
    (project / "s.yaml").write_text("read-file:\n  - {error: 404}\n")
    result = cli("run", "read-file", "--model", "scripted:s.yaml")
    assert result.exit_code == 1
    error = _latest(project)["cases"][0]["trials"][0]["error"]
    assert error["phase"] == "model" and "HTTP 404" in error["message"]


# -- trialrun.toml ------------------------------------------------------------------------------------------
def test_turn_limit_from_trialrun_toml_stops_the_agent(project: Path, cli, write_suite) -> None:
    config = project / "trialrun.toml"
    config.write_text(config.read_text().replace("skills = [", "turn_limit = 3\nskills = ["))
    write_suite(project / "state" / "eval" / "tests.json", [
        {"id": "loop", "prompt": "List forever", "expected_tools": ["list_dir"], "max_turns": 10,
         "success_criteria": "Lists the workspace"},
    ])
    model = _script(project, {"loop": [{"tool_call": {"name": "list_dir", "arguments": {}}}] * 6 + [{"reply": "done"}]})
    cli("run", "loop", "--model", model)
    data = _latest(project)
    trial = data["cases"][0]["trials"][0]
    assert trial["status"] == "max_turns"  # stopped by the hard limit, not by the test's budget of 10
    assert len(trial["trajectory"]["turns"]) == 3 and data["tests"][0]["turns"] == 3
    assert data["config_snapshot"]["turn_limit"] == 3

    config.write_text(config.read_text().replace("turn_limit = 3\n", ""))
    cli("run", "loop", "--model", model)
    trial = _latest(project)["cases"][0]["trials"][0]
    assert trial["status"] == "completed" and len(trial["trajectory"]["turns"]) == 7  # default limit 25


def test_pass_threshold_from_trialrun_toml_decides_pass_or_fail(project: Path, cli, write_suite) -> None:
    # tool_accuracy 1, turn_efficiency 4/5, output_quality 0.25 (1 of 2 terms): (1 + 0.8 + 2 * 0.25) / 3 = 0.77
    write_suite(project / "state" / "eval" / "tests.json", [
        {"id": "t", "prompt": "p", "expected_tools": ["list_dir"], "max_turns": 4, "success_criteria": "zebra lion"},
    ])
    model = _script(project, {"t": [{"tool_call": {"name": "list_dir", "arguments": {}}}] * 4 + [{"reply": "zebra"}]})
    assert cli("run", "t", "--model", model).exit_code == 0  # 0.77 >= 0.7, the default
    assert _latest(project)["tests"][0]["score"] == pytest.approx(2.3 / 3)

    config = project / "trialrun.toml"
    config.write_text(config.read_text().replace("skills = [", "pass_threshold = 0.85\nskills = ["))
    result = cli("run", "t", "--model", model)
    assert result.exit_code == 1 and "score 0.77 (< 0.85)" in result.output
    data = _latest(project)
    assert data["tests"][0]["passed"] is False and data["config_snapshot"]["pass_threshold"] == 0.85


def test_a_shell_step_and_a_script_mapping_with_side_reply(project: Path, cli) -> None:
    """`{shell: ...}` calls whatever shell tool the agent offers (the reference agent's run_command); a test's
    script may be a mapping with steps and side_reply."""
    model = _script(project, {"read-file": {"steps": [{"shell": "cat notes.txt"}, {"reply": NOTES}],
                                            "side_reply": "Notes"}})
    result = cli("run", "read-file", "--model", model)
    assert result.exit_code in (0, 1) and "Traceback" not in result.output, result.output  # (read_file was expected)
    turn = _latest(project)["cases"][0]["trials"][0]["trajectory"]["turns"][0]
    assert turn["tool_calls"][0]["name"] == "run_command"
    assert turn["tool_calls"][0]["arguments"] == {"command": "cat notes.txt"}
    assert "Sam" in turn["tool_results"][0]["content"]


@pytest.mark.parametrize("value, message", [
    ({"steps": [{"shell": ""}]}, "shell is the command to run through the agent's shell tool"),
    ({"steps": [{"reply": "x"}], "side_reply": 3}, "side_reply must be text"),
    ({"steps": [{"reply": "x"}], "sidereply": "x"}, "unknown key(s): sidereply"),
    ({"side_reply": "x"}, "(no steps)"),
    ({"steps": [{"reply": "x"}], "subagents": {"Explore": {"reply": "x"}}}, "subagent 'Explore': expected a list of steps"),
])
def test_script_mapping_errors_name_the_test_and_field(project: Path, cli, value: dict, message: str) -> None:
    model = _script(project, {"read-file": value})
    result = cli("run", "read-file", "--model", model)
    assert result.exit_code == 2 and message in result.output and "test 'read-file'" in result.output, result.output
