"""An A/B run of a live-like model through a Python agent: `trialrun run --until-decided` with two arms that differ
only by their instructions file (AGENTS.md v1 and v2, copied in by each arm's workspace), an agent written with
the official openai SDK, and a provider on loopback (`_coin_provider`: the standard library's HTTP server, none of
trialrun's wire code) that answers right with a known probability per instructions version.

What is checked is decided outside trialrun: the order the provider itself saw the requests in (trial i of every
arm before trial i+1 of any, each test's arms in the recorded order), which answers it made right (each trial's
verdict must agree), and what it charged."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _coin_provider import CoinProvider
from click.testing import CliRunner, Result

from trialrun.cli import main
from trialrun.report.store import load_report

TESTS = ["q1", "q2", "q3", "q4"]
AGENT = '''\
"""The agent under test: the official openai SDK, with the AGENTS.md of its workdir as its system prompt."""
import openai


def run(prompt, ctx):
    rules = (ctx.workdir / "AGENTS.md").read_text()
    client = openai.OpenAI(api_key="sk-coin-unused", http_client=ctx.http_client(ctx.model, httpx2=True), max_retries=0)
    answer = client.chat.completions.create(
        model="coin-model", messages=[{"role": "system", "content": rules}, {"role": "user", "content": prompt}])
    return answer.choices[0].message.content
'''
PRICE = (1000 * 10.0 + 200 * 30.0) / 1e6  # a trial's cost: the provider's usage at the configured prices


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "state" / "eval").mkdir(parents=True)
    suite = [{"id": t, "name": t, "prompt": f"{t.upper()}: what is six times seven?", "expected_tools": [],
              "max_turns": 1, "success_criteria": "Says 42", "expect": [{"contains": "42"}]} for t in TESTS]
    (tmp_path / "state" / "eval" / "tests.json").write_text(json.dumps(suite, indent=2))
    (tmp_path / "ab_agent.py").write_text(AGENT)
    for version in ("v1", "v2", "v3"):
        (tmp_path / f"ws_{version}").mkdir()
        (tmp_path / f"ws_{version}" / "AGENTS.md").write_text(f"# Instructions RULES-{version}\nAnswer in one line.\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    yield tmp_path
    sys.modules.pop("ab_agent", None)


def _configure(project: Path, base_url: str, arms: tuple[str, ...] = ("v1", "v2")) -> None:
    tables = "".join(f'[arms.{arm}]\nworkspace = "ws_{arm}"\n' for arm in arms)
    (project / "trialrun.toml").write_text(
        f'agent = "ab_agent:run"\nmodel = "openai-compatible:{base_url}#coin-model"\n'
        f'[prices."coin-model"]\ninput = 10.0\noutput = 30.0\n{tables}')


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _summary(project: Path) -> dict:
    (path,) = (project / "state" / "eval").glob("ab_*.json")
    return json.loads(path.read_text())


def _test_of(request: dict) -> str:
    return request["user"].split(":")[0].lower()


def _agree(project: Path, summary: dict, seen: list[dict]) -> None:
    """Each arm's trials passed exactly when the provider answered them right, trial by trial."""
    for arm in summary["arms"]:
        report = load_report(project / arm["file"])
        for case in report.cases:
            rights = [r["right"] for r in seen if r["arm"] == arm["name"] and _test_of(r) == case.name]
            assert [t.passed for t in case.trials] == rights, (arm["name"], case.name)


def test_until_decided_stops_early_on_a_worse_instructions_file(project: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    log = tmp_path_factory.mktemp("provider") / "requests.ndjson"
    with CoinProvider({"v1": 0.9, "v2": 0.2}, seed=3, log=log) as provider:
        _configure(project, provider.base_url)
        result = _cli("run", "--until-decided", "--max-trials", "20", "-j", "1", "--seed", "11", "--fail-on-regression")
        seen = provider.requests()
    assert result.exit_code == 1, result.output  # the gate: v2 is worse
    summary = _summary(project)
    rounds = summary["rounds"]
    verdict = summary["sequential"]["v2"]
    assert summary["stopped"] == "decided" and verdict["verdict"] == "worse" and rounds < 20
    assert "v2 vs v1: worse" in result.output and "round 1 [" in result.output
    # interleaved, as the provider saw it: round by round, each test's arms in the recorded order (one at a time)
    expected = [(arm, test) for order in summary["round_orders"] for test in TESTS for arm in order]
    assert [(r["arm"], _test_of(r)) for r in seen] == expected
    assert len(seen) == 2 * len(TESTS) * rounds
    _agree(project, summary, seen)
    assert summary["cost_usd"] == pytest.approx(PRICE * len(seen))
    print(f"\nPython agent, {len(TESTS)} tests, 0.9 -> 0.2: decided worse after {rounds} trials per test per arm "
          f"({len(seen)} trials, ${summary['cost_usd']:.3f}); interval [{verdict['low']:+.2f}, {verdict['high']:+.2f}]")


def test_interleaving_holds_with_trials_in_flight_at_once(project: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    log = tmp_path_factory.mktemp("provider") / "requests.ndjson"
    with CoinProvider({"v1": 0.8, "v2": 0.8, "v3": 0.8}, seed=5, log=log) as provider:
        _configure(project, provider.base_url, ("v1", "v2", "v3"))
        result = _cli("run", "-k", "3", "-j", "8")
        seen = provider.requests()
    assert result.exit_code in (0, 1), result.output
    trial_of: dict[tuple[str, str], int] = {}
    numbers = []
    for request in seen:  # the k-th request of an arm's test is its trial k
        key = (request["arm"], _test_of(request))
        trial_of[key] = trial_of.get(key, 0) + 1
        numbers.append(trial_of[key])
    assert len(seen) == 3 * 3 * len(TESTS) and numbers == sorted(numbers)  # no trial i+1 before every trial i
    summary = _summary(project)
    assert summary["design"] == "fixed" and summary["rounds"] == 3 and summary["sequential"] == {}
    _agree(project, summary, seen)


def test_a_cap_stops_it_undecided_and_says_so(project: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    log = tmp_path_factory.mktemp("provider") / "requests.ndjson"
    with CoinProvider({"v1": 0.6, "v2": 0.6}, seed=8, log=log) as provider:
        _configure(project, provider.base_url)
        capped = _cli("run", "--until-decided", "--max-trials", "3", "--fail-on-regression")
        assert capped.exit_code == 0, capped.output  # cannot tell is not worse: the gate passes (and says why)
        assert "v2 vs v1: cannot tell after 3 trials per test per arm (the trial cap)" in capped.output
        assert "no difference" not in capped.output.lower()
        for path in (project / "state" / "eval").glob("ab_*.json"):
            path.unlink()
        costly = _cli("run", "--until-decided", "--max-cost-usd", "0.2")
        round_cost = 2 * len(TESTS) * PRICE  # 0.128: a second round would pass $0.20
        assert "Stopped after 1 round: the cost cap" in costly.output, costly.output
        assert "cannot tell after 1 trial per test per arm (the cost cap)" in costly.output
        assert _summary(project)["cost_usd"] == pytest.approx(round_cost)
        config = project / "trialrun.toml"
        config.write_text(config.read_text().replace("#coin-model", "#unpriced-model"))
        unpriced = _cli("run", "--until-decided", "--max-cost-usd", "1")
        assert unpriced.exit_code == 2 and "'unpriced-model' has no price" in unpriced.output, unpriced.output
