"""The pytest plugin prints ids, reasons and replies as data: escape sequences and bidi overrides from a suite or
a model never reach the terminal raw (issue 11)."""

from __future__ import annotations

import json

import pytest

pytest_plugins = ["pytester"]

ESC = "\x1b"
HOSTILE = f"title {ESC}]0;pwned\x07 [/etc/hosts] \u202e"


def test_hostile_ids_and_replies_are_escaped_in_pytest_output(pytester: pytest.Pytester) -> None:
    pytester.makefile(".toml", trialrun='model = "scripted:model.json"\nworkspace = "workspace"\n')
    (pytester.path / "workspace").mkdir()
    (pytester.path / "workspace" / "notes.txt").write_text("Buy milk.\n")
    steps = [{"tool_call": {"name": "read_file", "arguments": {"path": "notes.txt"}}},
             {"reply": f"milk {ESC}[2J{ESC}]8;;https://evil.example\x07link{ESC}]8;;\x07"}]
    (pytester.path / "model.json").write_text(json.dumps({HOSTILE: steps}))
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "tests.json").write_text(json.dumps([
        {"id": HOSTILE, "prompt": "What do my notes say?", "expected_tools": ["read_file"], "max_turns": 2,
         "success_criteria": "Mentions milk", "expect": [{"contains": "words the reply lacks"}]}]))
    result = pytester.runpytest_inprocess("--trialrun-suite", "evals/tests.json", "-v", "--trialrun-trials", "2")
    result.assert_outcomes(failed=1)
    output = result.stdout.str() + result.stderr.str()
    assert ESC not in output and "\x07" not in output and "\u202e" not in output, repr(output)
    assert "\\x1b]0;pwned\\x07 [/etc/hosts] \\u202e" in output  # the id, shown as what it is
    assert "\\x1b[2J" in output  # the reply, in the failure report
