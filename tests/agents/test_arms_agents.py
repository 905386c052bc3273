"""An A/B run through a real CLI agent (pi): two arms that differ only by the instructions file pi is given
(`agent_options.instructions`: AGENTS.v1.md and AGENTS.v2.md, which pi appends to its system prompt), a live-like
model (`_coin_provider` on loopback, reached as an openai-compatible live model, answering right with a known
probability per instructions version), `--until-decided` stopping early on the decisive drop.

Checked outside trialrun: the order the provider saw pi's requests in (trial i of every arm before trial i+1 of
any), that pi's requests carried each arm's own instructions, and that every trial's verdict is the provider's
answer."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from _coin_provider import CoinProvider
from click.testing import CliRunner

from trialrun.cli import main
from trialrun.report.store import load_report

TESTS = ["q1", "q2", "q3"]


def test_pi_ab_run_until_decided_on_an_instructions_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           agent_path: Callable[[str], str]) -> None:
    (tmp_path / "state" / "eval").mkdir(parents=True)
    suite = [{"id": t, "name": t, "prompt": f"{t.upper()}: what is six times seven? Answer in one line.",
              "expected_tools": [], "max_turns": 1, "success_criteria": "Says 42", "expect": [{"contains": "42"}]}
             for t in TESTS]
    (tmp_path / "state" / "eval" / "tests.json").write_text(json.dumps(suite, indent=2))
    for version in ("v1", "v2"):
        (tmp_path / f"AGENTS.{version}.md").write_text(f"# House rules RULES-{version}\nAnswer in one line.\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    log = tmp_path / "provider.ndjson"
    with CoinProvider({"v1": 0.9, "v2": 0.1}, seed=21, log=log) as provider:
        (tmp_path / "trialrun.toml").write_text(
            f'agent = "pi"\nmodel = "openai-compatible:{provider.base_url}#coin-model"\napi = "openai-chat"\n'
            f'[agent_options]\npath = {json.dumps(agent_path("pi"))}\ntimeout_s = 120\n'
            '[prices."coin-model"]\ninput = 10.0\noutput = 30.0\n'
            '[arms.v1]\nagent_options = {instructions = "AGENTS.v1.md"}\n'
            '[arms.v2]\nagent_options = {instructions = "AGENTS.v2.md"}\n')
        result = CliRunner().invoke(main, ["run", "--until-decided", "--max-trials", "12", "--seed", "4",
                                           "--fail-on-regression"], catch_exceptions=False)
        seen = provider.requests()
    assert result.exit_code == 1, result.output  # the gate: v2 is worse
    (path,) = (tmp_path / "state" / "eval").glob("ab_*.json")
    summary = json.loads(path.read_text())
    rounds = summary["rounds"]
    assert summary["stopped"] == "decided" and summary["sequential"]["v2"]["verdict"] == "worse", result.output
    assert rounds < 12
    # one request per trial, as pi made them: every trial of round i before any of round i+1
    assert len(seen) == 2 * len(TESTS) * rounds, [r["user"] for r in seen]
    trial_of: dict[tuple[str, str], int] = {}
    numbers = []
    for request in seen:
        key = (request["arm"], request["user"].split(":")[0].lower())
        trial_of[key] = trial_of.get(key, 0) + 1
        numbers.append(trial_of[key])
    assert numbers == sorted(numbers) and set(trial_of.values()) == {rounds}
    for arm in summary["arms"]:  # each trial's verdict is the provider's answer
        report = load_report(tmp_path / arm["file"])
        assert report.config_snapshot["agent"] == "pi" and report.config_snapshot["instructions_sha256"]
        for case in report.cases:
            rights = [r["right"] for r in seen if r["arm"] == arm["name"] and r["user"].lower().startswith(case.name)]
            assert [t.passed for t in case.trials] == rights, (arm["name"], case.name, result.output)
    verdict = summary["sequential"]["v2"]
    print(f"\npi, {len(TESTS)} tests, 0.9 -> 0.1: decided worse after {rounds} trials per test per arm "
          f"({len(seen)} trials, ${summary['cost_usd']:.3f}); change {verdict['change']:+.2f} "
          f"[{verdict['low']:+.2f}, {verdict['high']:+.2f}]")
