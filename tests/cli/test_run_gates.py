"""Configuration problems stop `trialrun run` before anything runs (exit 2, nothing saved) instead of failing every
test; compare's --threshold is checked; the config snapshot describes only what the agent under test receives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trialrun.report.compare import compare
from trialrun.report.results import RunReport
from trialrun.report.store import load_report
from trialrun.suite._build import REFERENCE_AGENT_KEYS

RESULTS = Path("state") / "eval"


def _saved(project: Path) -> list[Path]:
    return sorted((project / RESULTS).glob("results_*.json"))


def _latest(project: Path) -> dict:
    return json.loads((project / RESULTS / "latest.json").read_text())


# -- compare --threshold ------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["0", "-1", "-0.1"])
def test_compare_refuses_a_threshold_that_is_not_above_zero(project: Path, cli, value: str) -> None:
    cli("run", "all")
    cli("run", "all", "--model", "scripted:model_v2.yaml")
    result = cli("compare", "--threshold", value)
    assert result.exit_code == 2, result.output  # -1 would flag improvements, 0 unchanged tests
    assert f"Invalid value for '--threshold': {float(value)} is not in the range 0<x<1" in result.output


def test_compare_flags_only_drops_whatever_the_threshold(project: Path, cli) -> None:
    cli("run", "all")
    cli("run", "all")  # the same run again: nothing changed, so nothing regressed, even at a tiny threshold
    data = json.loads(cli("compare", "--threshold", "0.001", "--json").output)
    assert data["regressions"] == [] and {c["status"] for c in data["cases"]} == {"unchanged"}
    with pytest.raises(ValueError, match="greater than 0"):
        compare(_load(project, 0), _load(project, 1), threshold=0)


def _load(project: Path, index: int) -> RunReport:
    return load_report(_saved(project)[index])


# -- the agent's signature ----------------------------------------------------------------------------------
@pytest.mark.parametrize("source", ["def one(prompt):\n    return 'hi'\n",
                                    "def one(prompt, ctx, extra):\n    return 'hi'\n",
                                    "def one():\n    return 'hi'\n"])
def test_an_agent_with_the_wrong_signature_is_a_configuration_error(project: Path, cli, source: str) -> None:
    (project / "bad_agent.py").write_text(source)
    result = cli("run", "all", "--agent", "bad_agent:one")
    assert result.exit_code == 2, result.output
    assert "agent 'bad_agent:one'" in result.output and "the expected signature is (prompt, ctx)" in result.output
    assert "nothing was run" in result.output and "Traceback" not in result.output
    assert not _saved(project)


@pytest.mark.parametrize("source", ["def run(prompt, ctx):\n    return 'hi'\n",
                                    "def run(*args, **kwargs):\n    return 'hi'\n",
                                    "def run(prompt, ctx, extra=None):\n    return 'hi'\n",
                                    "async def run(prompt, ctx):\n    return 'hi'\n"])
def test_an_agent_taking_prompt_and_ctx_runs(project: Path, cli, source: str) -> None:
    (project / "good_agent.py").write_text(source)
    result = cli("run", "read-file", "--agent", "good_agent:run")
    assert result.exit_code in (0, 1), result.output
    assert _latest(project)["cases"][0]["trials"][0]["error"] is None


# -- replay cassettes ---------------------------------------------------------------------------------------
def test_replay_without_a_cassette_for_a_test_that_will_run_is_a_configuration_error(project: Path, cli) -> None:
    (project / "cassettes").mkdir()
    (project / "cassettes" / "read-file.yaml").write_text("interactions: []\n")
    result = cli("run", "read-file", "list-dir", "search-json", "--model", "replay:cassettes")
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.split())
    assert "no cassette for 2 test(s) that will run" in message
    assert "list-dir.yaml" in message and "search-json.yaml" in message and "read-file.yaml" not in message
    assert "nothing was run" in message and not _saved(project)


def test_replay_needs_no_cassette_for_a_skipped_live_canary(project: Path, cli) -> None:
    suite = project / RESULTS / "tests.json"
    tests = json.loads(suite.read_text())
    tests[1]["mode"] = "live_canary"  # search-json: skipped, so no recording is needed
    suite.write_text(json.dumps(tests))
    (project / "cassettes").mkdir()
    result = cli("run", "read-file", "search-json", "--model", "replay:cassettes")
    assert result.exit_code == 2
    assert "read-file.yaml" in result.output and "search-json.yaml" not in result.output


# -- nothing left to grade after the live-canary gate -------------------------------------------------------
def test_running_only_skipped_live_canaries_is_a_usage_error(project: Path, cli) -> None:
    cli("run", "all")
    before = _latest(project)["run_id"]
    suite = project / RESULTS / "tests.json"
    tests = json.loads(suite.read_text())
    for test in tests[:2]:
        test["mode"] = "live_canary"
    suite.write_text(json.dumps(tests))
    result = cli("run", "read-file", "search-json")
    assert result.exit_code == 2, result.output
    assert "'read-file', 'search-json' are live canaries" in result.output
    assert "--include-live-canary" in result.output and "nothing was run or saved" in result.output
    assert len(_saved(project)) == 1 and _latest(project)["run_id"] == before  # latest is still the real run
    # With the flag they run (and with a canary and a plain test selected, the plain one runs as before).
    assert cli("run", "read-file", "--include-live-canary").exit_code == 0
    assert cli("run", "read-file", "list-dir").exit_code == 0


# -- the selection message ----------------------------------------------------------------------------------
def test_an_empty_selection_names_every_filter(project: Path, cli) -> None:
    result = cli("run", "read-file", "--tag", "safety", "--name", "list-dir")
    assert result.exit_code == 2
    assert "no test matches the selection (ids: read-file; names: list-dir; tags: safety)" in result.output


def test_an_unknown_tag_lists_the_tags_and_the_likely_one(project: Path, cli) -> None:
    """A tag no test has is a typo until shown otherwise: named, with the closest tag and every tag the suite has,
    as an unknown test id is."""
    result = cli("run", "--tag", "saftey")
    assert result.exit_code == 2 and result.output.splitlines()[-1] == (
        f"error: no test in {project / 'state' / 'eval' / 'tests.json'} has the tag 'saftey'; did you mean "
        "'safety'? (tags: safety)")
    result = cli("run", "--tag", "weather", "--tag", "maps")
    assert "has the tag 'weather', 'maps' (tags: safety)" in result.output and _saved(project) == []


# -- the config snapshot of a custom agent ------------------------------------------------------------------
def test_a_custom_agents_snapshot_leaves_out_what_it_never_receives(project: Path, cli) -> None:
    (project / "mymod.py").write_text("def run(prompt, ctx):\n    return 'Meeting with Sam on Tuesday; buy milk.'\n")
    result = cli("run", "read-file", "--agent", "mymod:run")
    snapshot = _latest(project)["config_snapshot"]
    assert snapshot["agent"] == "mymod:run"
    assert not set(REFERENCE_AGENT_KEYS) & set(snapshot)
    assert {"tools", "policy", "system_prompt_sha256", "system_prompt"} == set(REFERENCE_AGENT_KEYS)
    # what does reach it (ctx.model_name, ctx.api) is recorded: a changed model name changes what it sends
    assert (snapshot["model_name"], snapshot["api"]) == ("gpt-4.1-mini", "openai-chat")
    assert snapshot["model"] == "scripted:model_v1.yaml" and snapshot["trials"] == 1
    # The quickstart's trialrun.toml sets a policy and a system prompt, which a custom agent ignores: say so.
    assert "warning: agent 'mymod:run' is a custom agent: it does not receive policy, system" in result.output

    cli("run", "read-file")  # the reference agent: everything it receives is recorded
    reference = _latest(project)["config_snapshot"]
    assert set(REFERENCE_AGENT_KEYS) <= set(reference)
    assert reference["tools"] == ["run_command", "read_file", "write_file", "list_dir"]
    assert reference["policy"] and reference["system_prompt_sha256"]


def test_the_cli_snapshot_records_trials_as_the_pytest_plugin_does(project: Path, cli) -> None:
    cli("run", "read-file", "-k", "3")
    assert _latest(project)["config_snapshot"]["trials"] == 3
    cli("run", "read-file", "-k", "3")
    changes = json.loads(cli("compare", "--json").output)["config_changes"]
    assert not [c for c in changes if c["key"] == "trials"]  # same trials: no spurious change


def test_no_warning_for_a_custom_agent_when_nothing_is_ignored(project: Path, cli) -> None:
    (project / "trialrun.toml").write_text('suite = "state/eval/tests.json"\nmodel = "scripted:model_v1.yaml"\n'
                                           'workspace = "workspace"\nagent = "mymod:run"\n')
    (project / "mymod.py").write_text("def run(prompt, ctx):\n    return 'Meeting with Sam on Tuesday; buy milk.'\n")
    result = cli("run", "read-file")
    assert result.exit_code == 1, result.output  # it answers without reading the file: 0.67 under the balanced rubric
    assert "warning:" not in result.output
