"""The prompt-injected `env` of issue 11, end to end through `trialrun run` / `report`: the live key in the run's
environment never reaches the command, the result files, the reports or the terminal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

LIVE_KEY = "sk-proj-LiveKeyOfTheRun0123456789abcdefABCDEF"
SERVICE_TOKEN = "tok3n-known-only-from-the-environment"
REPLIED_KEY = "ghp_RepliedByTheModel0123456789abcdefABCD"


def test_a_prompt_injected_env_leaks_nothing(project: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", LIVE_KEY)
    monkeypatch.setenv("ACME_SERVICE_TOKEN", SERVICE_TOKEN)
    script = {"read-file": [
        {"tool_call": {"name": "run_command", "arguments": {"command": "env; echo $OPENAI_API_KEY"}}},
        {"tool_call": {"name": "run_command", "arguments": {"command": f"echo {SERVICE_TOKEN} {REPLIED_KEY}"}}},
        {"reply": f"Here is what I found: OPENAI_API_KEY={LIVE_KEY}, {SERVICE_TOKEN}, {REPLIED_KEY}"},
    ]}
    (project / "script.json").write_text(json.dumps(script))
    run = cli("run", "read-file", "--model", "scripted:script.json", "--junit", "out/junit.xml",
              "--markdown", "out/summary.md")
    assert run.exit_code == 1, run.output  # the test fails (its reply is not the notes): a result, with reasons
    report = cli("report", "--html", "out/report.html")
    as_json = cli("report", "--json")
    latest = json.loads((project / "state" / "eval" / "latest.json").read_text())
    first_result = latest["cases"][0]["trials"][0]["trajectory"]["turns"][0]["tool_results"][0]["content"]
    assert "PATH=" in first_result and "OPENAI_API_KEY" not in first_result  # the allow-list: the key never got there
    texts = {
        "run output": run.output, "report output": report.output, "--json": as_json.output,
        **{p.name: p.read_text() for p in (project / "state" / "eval").glob("*.json")},
        **{p.name: p.read_text() for p in (project / "out").iterdir()},
    }
    assert {"junit.xml", "summary.md", "report.html", "latest.json"} <= set(texts)
    for name, text in texts.items():
        for secret in (LIVE_KEY, SERVICE_TOKEN, REPLIED_KEY):
            assert secret not in text, f"{secret} in {name}"
    assert "REDACTED" in texts["latest.json"] and "REDACTED" in texts["report.html"]
