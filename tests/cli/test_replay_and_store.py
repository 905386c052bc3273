"""Replaying recorded cassettes through the CLI, and the store's atomic writes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import trialrun as tr
from trialrun.models._cassette_io import save_exchanges
from trialrun.report.store import ResultsStore, load_report


def test_run_with_replay_cassettes(project: Path, cli) -> None:
    # Record what the v2 scripted model says for read-file into a cassette, as `record:DIR` would from a provider.
    model = tr.ScriptedModel([tr.tool_call("read_file", path="notes.txt"), tr.reply("Meeting with Sam on Tuesday; buy milk.")])
    workspace = project / "workspace"
    agent = tr.Agent(model, api="openai-chat", model_name="gpt-4.1-mini", tools=tr.shell_tools(workspace),
                     system="You are a careful shell pilot. Use the tools to answer from the user's files.",
                     policy=tr.ToolPolicy(deny_commands=["rm -rf", "curl | sh"]), max_turns=25)
    agent.run("What do my notes say?")
    save_exchanges(project / "cassettes" / "read-file.yaml", model.exchanges)

    result = cli("run", "read-file", "--model", "replay:cassettes")
    assert result.exit_code == 0, result.output
    data = json.loads((project / "state" / "eval" / "latest.json").read_text())
    assert data["tests"][0]["tools_used"] == ["read_file"] and data["tests"][0]["passed"] is True

    # A prompt that no longer matches the recording fails with the cassette's message, naming how to re-record.
    suite = json.loads((project / "state" / "eval" / "tests.json").read_text())
    suite[0]["prompt"] = "What do my notes say now?"
    (project / "state" / "eval" / "tests.json").write_text(json.dumps(suite))
    result = cli("run", "read-file", "--model", "replay:cassettes")
    assert result.exit_code == 1
    trial = json.loads((project / "state" / "eval" / "latest.json").read_text())["cases"][0]["trials"][0]
    assert trial["error"]["phase"] == "model"
    assert "read-file.yaml" in trial["error"]["message"] and "record" in trial["error"]["message"]


def test_a_failed_write_leaves_the_previous_run_and_latest_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ResultsStore(tmp_path)
    report = tr.evaluate([tr.Case(name="a", invoke=lambda ctx: "x", expect_outcome=[tr.expect.equals("x")])], run_id="eval_1")
    first = store.save(report)

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    monkeypatch.setattr(os, "link", broken_replace)  # a new result file is linked into place (never replacing one)
    second = tr.evaluate([tr.Case(name="b", invoke=lambda ctx: "y", expect_outcome=[tr.expect.equals("y")])], run_id="eval_2")
    with pytest.raises(OSError, match="disk full"):
        store.save(second)
    monkeypatch.undo()
    assert store.latest_path() == first.resolve() or store.latest_path() == first
    assert load_report(store.latest_path()).case("a")
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    assert sorted(p.name for p in store.files()) == [first.name]


def test_run_ids_get_a_suffix_when_taken(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    from datetime import datetime, timezone

    report = tr.evaluate([tr.Case(name="a", invoke=lambda ctx: "x", expect_outcome=[tr.expect.equals("x")])])
    report.started_at = datetime(2026, 7, 31, 14, 0, 0, tzinfo=timezone.utc)
    paths = [store.save(report.model_copy()) for _ in range(3)]
    assert [p.name for p in paths] == ["results_20260731_140000.json", "results_20260731_140000_2.json", "results_20260731_140000_3.json"]
    assert [load_report(p).run_id for p in paths] == ["eval_20260731_140000", "eval_20260731_140000_2", "eval_20260731_140000_3"]
    assert store.latest_path().name == "results_20260731_140000_3.json"
