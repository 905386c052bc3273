"""compare between live runs, end to end through the real CLI: a model trialrun reaches as a live one (an
OpenAI-compatible server on loopback, `tests/_coin_model.py`) that answers right with a known probability, so the
truth is known. A suite-wide drop from 0.9 to 0.55 over 10 tests x 5 trials fails the gate on the evidence pooled
over the tests (before: every test alone was "not significant" and the gate passed); two runs of the same model pass
it, and fail it only with --require-power (cannot tell); a safety claim that held 5/5 and fails 1/5 fails it
whatever the counts (before: "not significant (Fisher p=1.00)", passed); the same drop of an ordinary test cannot
tell, unless --any-drop. The trials' pass counts are checked against the answers the server itself gave."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from _coin_model import coin_model
from click.testing import Result


def _suite(project: Path, tests: int, expect: object = None, tags: list[str] | None = None) -> None:
    (project / "state" / "eval").mkdir(parents=True, exist_ok=True)
    (project / "state" / "eval" / "tests.json").write_text(json.dumps([
        {"id": f"t{i}", "prompt": f"What should I buy? ({i})", "expected_tools": [], "max_turns": 1,
         "success_criteria": "Mentions milk", "expect": expect if expect is not None else {"contains": "milk"},
         "tags": tags or []} for i in range(tests)]))
    (project / "trialrun.toml").write_text('suite = "state/eval/tests.json"\nrubric = "balanced"\n')


def _run(cli: Callable[..., Result], project: Path, rate: float, seed: int, trials: int = 5) -> None:
    """One run on the coin model; its passed trials must be the right answers the server gave."""
    with coin_model(lambda prompt: rate, seed=seed) as coin:
        result = cli("run", "all", "-k", str(trials), "--model", coin.spec)
    assert result.exit_code in (0, 1), result.output
    report = json.loads((project / "state" / "eval" / "latest.json").read_text())
    assert sum(t["passed"] for c in report["cases"] for t in c["trials"]) == coin.right
    assert all(t["models"] == ["live"] for c in report["cases"] for t in c["trials"])  # it looked: a live model


def _seed(rate: float, wrong: int, draws: int = 5) -> int:
    """A seed whose first `draws` answers hold exactly `wrong` wrong ones at `rate`."""
    return next(s for s in range(10_000)
                if sum(not (r.random() < rate) for r in [random.Random(s)] for _ in range(draws)) == wrong)


def test_a_suite_wide_drop_fails_the_gate_on_the_pooled_evidence(project: Path, cli: Callable[..., Result]) -> None:
    _suite(project, 10)
    _run(cli, project, 0.9, seed=1)
    _run(cli, project, 0.55, seed=2)
    result = cli("compare", "--fail-on-regression")
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert [line for line in lines if line.startswith("Live runs: each change is weighed against chance")]
    [run] = [line for line in lines if line.startswith("  the run:")]
    assert "worse:" in run and "exact test stratified by test (CMH)" in run and "pass@1 change" in run
    assert lines[-1].startswith("gate: fails: ")
    data = json.loads(cli("compare", "--json").output)
    assert data["pairing"] == "live" and data["run"]["word"] == "worse"
    low, high = data["run"]["chance"]["change"][1:]
    assert low <= -0.35 <= high  # the interval holds the true change of the pass rate


def test_two_runs_of_the_same_live_model_pass_unless_power_is_required(project: Path,
                                                                        cli: Callable[..., Result]) -> None:
    _suite(project, 10)
    _run(cli, project, 0.9, seed=3)
    _run(cli, project, 0.9, seed=4)
    result = cli("compare", "--fail-on-regression")
    assert result.exit_code == 0, result.output
    data = json.loads(cli("compare", "--json").output)
    assert data["run"]["word"] == "cannot tell" and data["worse"] == []
    assert data["run"]["chance"]["trials_to_tell"] > 5  # what would tell a drop of 0.10
    strict = cli("compare", "--fail-on-regression", "--require-power")
    assert strict.exit_code == 1 and "(--require-power)" in strict.output.splitlines()[-1]


@pytest.mark.parametrize("marked", ["grader", "tag"])
def test_a_safety_claim_that_held_5_of_5_and_fails_1_of_5_fails_the_gate(project: Path, cli: Callable[..., Result],
                                                                          marked: str) -> None:
    if marked == "grader":
        _suite(project, 1, expect=[{"safety": {"not_contains": "bread"}}])
    else:
        _suite(project, 1, expect={"contains": "milk"}, tags=["safety"])
    _run(cli, project, 1.0, seed=5)
    _run(cli, project, 0.8, seed=_seed(0.8, wrong=1))
    result = cli("compare", "--fail-on-regression")
    assert result.exit_code == 1, result.output
    [line] = [line for line in result.output.splitlines() if line.startswith("  t0:")]
    claim = "not_contains('bread')" if marked == "grader" else "the test (tagged safety)"
    assert f"worse: safety: {claim} held in 5/5 trials before; failed in trial " in line and "(1 of 5)" in line
    assert "bread" in line  # what the failing verdict saw


def test_the_same_drop_of_an_ordinary_test_cannot_tell_unless_any_drop(project: Path,
                                                                       cli: Callable[..., Result]) -> None:
    _suite(project, 1)
    _run(cli, project, 1.0, seed=5)
    _run(cli, project, 0.8, seed=_seed(0.8, wrong=1))
    result = cli("compare", "--fail-on-regression")
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.output.splitlines() if line.startswith("  t0:")]
    assert line.startswith("  t0:       cannot tell: 5/5 -> 4/5 trials passed; one-sided Fisher p=0.50")
    assert "would tell 0.10" in line
    strict = cli("compare", "--fail-on-regression", "--any-drop")
    assert strict.exit_code == 1
    assert "worse: 5/5 -> 4/5 trials passed; --any-drop: every drop counts" in strict.output


def test_a_scripted_run_against_a_live_one_is_mixed_and_judged_as_live(project: Path,
                                                                       cli: Callable[..., Result]) -> None:
    _suite(project, 2)
    (project / "s.yaml").write_text("t0: [{reply: Buy milk.}]\nt1: [{reply: Buy milk.}]\n")
    assert cli("run", "all", "-k", "5", "--model", "scripted:s.yaml").exit_code == 0
    _run(cli, project, 0.9, seed=6)
    output = cli("compare").output
    [said] = [line for line in output.splitlines() if line.startswith("Mixed runs")]
    assert "judged as live runs" in said and "deterministic: scripted model in 10 of 10 trials" in said
    assert "live: live model in 10 of 10 trials" in said
    assert "one-sided Fisher" in output  # weighed against chance
