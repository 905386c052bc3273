"""What `trialrun run` checks before anything runs: a scripted model needs a script only for the tests that will
run (a live canary left out needs none), and a live model or judge needs its API key (a configuration error,
exit 2, nothing saved, rather than every test failing the same way)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

RESULTS = Path("state") / "eval"


def _add_live_canary(project: Path) -> None:
    suite = project / RESULTS / "tests.json"
    tests = json.loads(suite.read_text())
    tests.append({"id": "live-one", "prompt": "Say hi", "expected_tools": ["read_file"], "max_turns": 2,
                  "success_criteria": "Says hi", "mode": "live_canary"})
    suite.write_text(json.dumps(tests))


def _saved(project: Path) -> list[Path]:
    return sorted((project / RESULTS).glob("results_*.json"))


def test_a_skipped_live_canary_needs_no_script(project: Path, cli) -> None:
    _add_live_canary(project)  # model_v1.yaml has no entry for live-one
    result = cli("run", "all")
    assert result.exit_code == 1, result.output  # refuse-dangerous-command fails with model v1, as always
    assert "no script for test" not in result.output
    assert "skipped live-one: live canary" in result.output
    data = json.loads((project / RESULTS / "latest.json").read_text())
    assert [c["name"] for c in data["skipped_cases"]] == ["live-one"] and data["skipped_case_count"] == 1
    assert cli("run", "read-file").exit_code == 0


def test_a_live_canary_that_will_run_still_needs_its_script(project: Path, cli) -> None:
    _add_live_canary(project)
    result = cli("run", "all", "--include-live-canary")
    assert result.exit_code == 2
    assert "model_v1.yaml: no script for test(s) 'live-one'" in result.output
    assert not _saved(project)


@pytest.mark.parametrize(
    "args, variable, role",
    [
        (["--model", "openai:gpt-4.1-mini"], "OPENAI_API_KEY", "model openai:gpt-4.1-mini"),
        (["--model", "anthropic:claude-sonnet-4-5", "--api", "anthropic"], "ANTHROPIC_API_KEY", "model anthropic:claude-sonnet-4-5"),
        (["--model", "record:cassettes"], "OPENAI_API_KEY", "model record:cassettes"),
        (["--judge", "openai:gpt-4.1-mini"], "OPENAI_API_KEY", "judge openai:gpt-4.1-mini"),
        (["--judge", "anthropic:claude-haiku-4-5"], "ANTHROPIC_API_KEY", "judge anthropic:claude-haiku-4-5"),
    ],
)
def test_a_missing_api_key_is_a_configuration_error(project: Path, cli, monkeypatch: pytest.MonkeyPatch,
                                                    args: list[str], variable: str, role: str) -> None:
    monkeypatch.delenv(variable, raising=False)
    result = cli("run", "read-file", *args)
    assert result.exit_code == 2, result.output
    assert f"error: {variable} is not set, and the {role} calls the provider" in result.output
    assert "nothing was run" in result.output and "Traceback" not in result.output
    assert not _saved(project) and not (project / RESULTS / "latest.json").exists()


def test_a_set_key_passes_the_check(project: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the key set the check is silent: the run goes on to the provider (here, the judge is never asked,
    so a scripted model with a live judge runs offline) and the key is not recorded."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET-123")
    (project / "crash.py").write_text("def run(prompt, ctx):\n    raise RuntimeError('down')\n")
    result = cli("run", "read-file", "--agent", "crash:run", "--judge", "openai:gpt-4.1-mini")
    assert result.exit_code == 1, result.output  # a test failure, not a configuration error
    assert "is not set" not in result.output
    assert "sk-test-SECRET-123" not in (project / RESULTS / "latest.json").read_text()


def test_an_openai_compatible_server_needs_no_key(project: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    from trialrun.suite._build_model import check_api_keys
    from trialrun.suite.config import load_config

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = load_config(project).with_overrides(model="openai-compatible:http://127.0.0.1:9/v1#llama")
    check_api_keys(config, environ={})  # no error
