"""A/B runs in the library (`trialrun.evaluate_arms`): rounds interleave the arms (trial i of every arm before
trial i+1 of any, concurrency or not), each round's arm order comes from the recorded seed, every arm gets a
report of its own, `until_decided` stops when decided (one round for deterministic arms) or at a cap, undecided,
and Ctrl-C keeps every arm's finished trials."""

from __future__ import annotations

import asyncio
import random
import threading
import time

import pytest

import trialrun as tr
from trialrun import expect
from trialrun.trajectory import Run, Trajectory, Turn, Usage


def _arm(log: list[tuple[str, str, int, str]] | None, label: str, answers: dict[str, float] | None = None, *,
         tests: tuple[str, ...] = ("a", "b", "c"), live: bool = False, seed: int = 1, sleep: float = 0.0,
         cost: float | None = None, turns: bool = False, scripted: bool = False) -> list[tr.Case]:
    """An arm's cases: each trial logs (arm, test, trial, "start"/"end") and passes with its test's probability.
    `scripted`: the answer comes from a scripted model the trial really calls (so the run is deterministic by what
    its trials did; a coin flipped in the invoke, with no model, is not)."""
    rng = random.Random(f"{label}-{seed}")
    lock = threading.Lock()

    def invoke_for(name: str):
        def invoke(ctx: tr.TrialContext) -> object:
            if log is not None:
                log.append((label, name, ctx.trial, "start"))
            time.sleep(sleep)
            with lock:
                right = rng.random() < (answers or {}).get(name, 1.0)
            if log is not None:
                log.append((label, name, ctx.trial, "end"))
            text = "hello" if right else "bye"
            if scripted:
                with ctx.http_client(ctx.scripted([tr.reply(text)])) as client:
                    answer = client.post("https://api.openai.com/v1/chat/completions",
                                         json={"model": "m", "messages": [{"role": "user", "content": "hi"}]}).json()
                return answer["choices"][0]["message"]["content"]
            if cost is None and not turns:
                return text
            trajectory = Trajectory(turns=[Turn(text=text, usage=Usage(100, 20))]) if turns else Trajectory()
            return Run(output=text, trajectory=trajectory, cost_usd=cost)
        return invoke

    return [tr.Case(name=name, invoke=invoke_for(name), expect_outcome=[expect.contains("hello")],
                    mode="live_canary" if live else "deterministic") for name in tests]


def _starts(log: list[tuple[str, str, int, str]]) -> list[tuple[str, str, int]]:
    return [(arm, test, trial) for arm, test, trial, what in log if what == "start"]


def test_trial_i_of_every_arm_runs_before_trial_i_plus_1_of_any_in_the_seeds_order() -> None:
    log: list[tuple[str, str, int, str]] = []
    run = tr.evaluate_arms({"v1": _arm(log, "v1"), "v2": _arm(log, "v2"), "v3": _arm(log, "v3")}, trials=4, seed=42,
                           concurrency=1)
    expected = [(arm, test, number) for number, order in enumerate(run.round_orders, 1) for test in "abc"
                for arm in order]
    assert _starts(log) == expected
    assert run.seed == 42 and run.rounds == 4 and run.stopped == "trials"
    assert len({tuple(order) for order in run.round_orders}) > 1  # shuffled, not one fixed order
    again = tr.evaluate_arms({"v1": _arm(None, "v1"), "v2": _arm(None, "v2"), "v3": _arm(None, "v3")}, trials=4,
                             seed=42, concurrency=1)
    assert again.round_orders == run.round_orders  # the recorded seed replays the order
    for name, report in run.reports.items():
        assert [c.name for c in report.cases] == ["a", "b", "c"] and report.trial_count == 4, name


def test_rounds_are_kept_apart_with_trials_in_flight_at_once() -> None:
    log: list[tuple[str, str, int, str]] = []
    tr.evaluate_arms({"v1": _arm(log, "v1", sleep=0.02), "v2": _arm(log, "v2", sleep=0.02)}, trials=3, seed=1,
                     concurrency=4)
    position = {entry: n for n, entry in enumerate(log)}
    for number in (1, 2):
        last_end = max(position[e] for e in log if e[2] == number and e[3] == "end")
        first_start = min(position[e] for e in log if e[2] == number + 1 and e[3] == "start")
        assert last_end < first_start
    in_flight = peak = 0
    for entry in log:
        in_flight += 1 if entry[3] == "start" else -1
        peak = max(peak, in_flight)
    assert peak > 1  # concurrency still applies within a round


def test_until_decided_with_deterministic_arms_runs_one_round() -> None:
    run = tr.evaluate_arms({"v1": _arm(None, "v1", scripted=True), "v2": _arm(None, "v2", {"a": 0.0}, scripted=True)},
                           until_decided=True, seed=3)
    assert run.rounds == 1 and run.stopped == "deterministic" and run.deterministic
    assert run.sequential == {}  # no chance statistics between deterministic arms
    assert run.reports["v2"].cases[0].passed is False and run.reports["v2"].trial_count == 1


def test_arms_whose_trials_talked_to_no_model_are_not_taken_for_deterministic() -> None:
    """Determinism is decided from what the first round's trials did: cases marked deterministic whose invoke flips
    a coin without any observed model are judged as live (the sequential test runs), never stopped after a round."""
    run = tr.evaluate_arms({"v1": _arm(None, "v1"), "v2": _arm(None, "v2", {"a": 0.0})}, until_decided=True, seed=3,
                           max_trials=4)
    assert not run.deterministic and run.stopped != "deterministic" and run.rounds > 1
    assert set(run.sequential) == {"v2"}


def test_until_decided_stops_early_on_a_decisive_drop() -> None:
    rates = {name: 0.95 for name in "abcdefgh"}
    run = tr.evaluate_arms({"v1": _arm(None, "v1", rates, tests=tuple(rates), live=True),
                            "v2": _arm(None, "v2", dict.fromkeys(rates, 0.2), tests=tuple(rates), live=True)},
                           include_live_canary=True, until_decided=True, max_trials=30, seed=9)
    verdict = run.sequential["v2"]
    assert run.stopped == "decided" and verdict.verdict == "worse" and verdict.high < 0
    assert run.rounds < 10 and verdict.decided_at == run.rounds
    for report in run.reports.values():  # every arm ran the same rounds, and its report says so
        assert report.trial_count == run.rounds and report.status == "completed"
        assert all(len(c.trials) == run.rounds and c.unfinished_trials == 0 for c in report.cases)


def test_a_cap_stops_it_undecided() -> None:
    rates = {"a": 0.5, "b": 0.5}
    run = tr.evaluate_arms({"v1": _arm(None, "v1", rates, tests=("a", "b"), live=True),
                            "v2": _arm(None, "v2", rates, tests=("a", "b"), live=True)},
                           include_live_canary=True, until_decided=True, max_trials=3, seed=2)
    assert run.stopped == "max_trials" and run.rounds == 3
    assert run.sequential["v2"].verdict == "cannot tell"
    low, high = run.sequential["v2"].low, run.sequential["v2"].high
    assert low < -0.10 and high > 0  # both a drop past the threshold and no drop are still possible


def test_the_cost_cap_starts_no_round_that_would_pass_it() -> None:
    run = tr.evaluate_arms({"v1": _arm(None, "v1", tests=("a", "b"), live=True, cost=0.01),
                            "v2": _arm(None, "v2", tests=("a", "b"), live=True, cost=0.01)},
                           include_live_canary=True, until_decided=True, max_cost_usd=0.07, seed=2)
    # a round costs 0.04: after round 1 (0.04) another would reach 0.08 > 0.07
    assert run.stopped == "max_cost" and run.rounds == 1 and run.cost_usd == pytest.approx(0.04)
    fixed = tr.evaluate_arms({"v1": _arm(None, "v1", tests=("a",), cost=0.01), "v2": _arm(None, "v2", tests=("a",), cost=0.01)},
                             trials=5, max_cost_usd=0.05, seed=2)
    assert fixed.stopped == "max_cost" and fixed.rounds == 2 and fixed.reports["v1"].trial_count == 2


def test_a_cost_cap_over_trials_it_cannot_price_stops_saying_so() -> None:
    run = tr.evaluate_arms({"v1": _arm(None, "v1", tests=("a",), live=True, turns=True),
                            "v2": _arm(None, "v2", tests=("a",), live=True, turns=True)},
                           include_live_canary=True, until_decided=True, max_cost_usd=1.0, seed=2)
    assert run.stopped == "cost_unknown" and run.rounds == 1


def test_arms_that_would_run_other_tests_are_refused_before_anything_runs() -> None:
    log: list[tuple[str, str, int, str]] = []
    with pytest.raises(tr.CaseError, match="arm 'v2' would run other tests than the baseline 'v1'.*not: c"):
        tr.evaluate_arms({"v1": _arm(log, "v1"), "v2": _arm(log, "v2", tests=("a", "b"))})
    with pytest.raises(tr.CaseError, match="two or more arms"):
        tr.evaluate_arms({"v1": _arm(log, "v1")})
    with pytest.raises(tr.CaseError, match="the baseline 'v9' is not an arm"):
        tr.evaluate_arms({"v1": _arm(log, "v1"), "v2": _arm(log, "v2")}, baseline="v9")
    with pytest.raises(ValueError, match="max_trials caps an until_decided run"):
        tr.evaluate_arms({"v1": _arm(log, "v1"), "v2": _arm(log, "v2")}, max_trials=3)
    assert log == []


def test_the_baseline_can_be_another_arm() -> None:
    run = tr.evaluate_arms({"new": _arm(None, "new", {"a": 0.0}), "old": _arm(None, "old")}, baseline="old",
                           until_decided=True, seed=1)
    assert run.baseline == "old" and list(run.reports) == ["new", "old"]


def test_ctrl_c_keeps_every_arms_finished_trials() -> None:
    started = threading.Event()

    def arm(label: str) -> list[tr.Case]:
        async def invoke(ctx: tr.TrialContext) -> str:
            if ctx.trial == 2:
                started.set()
                await asyncio.sleep(30)
            return "hello"
        return [tr.Case(name=name, invoke=invoke, expect_outcome=[expect.contains("hello")]) for name in ("a", "b")]

    async def main() -> tr.ArmsInterrupted:
        task = asyncio.ensure_future(tr.aevaluate_arms({"v1": arm("v1"), "v2": arm("v2")}, trials=3, seed=4))
        while not started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        try:
            await task
        except tr.ArmsInterrupted as stopped:
            return stopped
        raise AssertionError("not interrupted")

    stopped = asyncio.run(main())
    assert set(stopped.reports) == {"v1", "v2"} and stopped.report is stopped.reports["v1"]
    for report in stopped.reports.values():
        assert report.status == "interrupted"
        assert all(len(c.trials) == 1 and c.unfinished_trials == 2 for c in report.cases)


def test_an_arm_decided_early_rests_while_the_others_go_on() -> None:
    log: list[tuple[str, str, int, str]] = []
    tests = tuple("abcdefgh")
    run = tr.evaluate_arms({"base": _arm(log, "base", dict.fromkeys(tests, 0.9), tests=tests, live=True),
                            "bad": _arm(log, "bad", dict.fromkeys(tests, 0.1), tests=tests, live=True),
                            "same": _arm(log, "same", dict.fromkeys(tests, 0.9), tests=tests, live=True)},
                           include_live_canary=True, until_decided=True, max_trials=8, seed=5)
    bad = run.sequential["bad"]
    assert bad.verdict == "worse" and bad.decided_at is not None and bad.decided_at < run.rounds
    ran = {arm: max(trial for a, _, trial, _ in log if a == arm) for arm in ("base", "bad", "same")}
    assert ran == {"base": run.rounds, "bad": bad.decided_at, "same": run.rounds}  # as the trials themselves ran
    assert all("bad" not in order for order in run.round_orders[bad.decided_at:])
    assert run.reports["bad"].trial_count == bad.decided_at and run.reports["base"].trial_count == run.rounds
    assert all(c.unfinished_trials == 0 for r in run.reports.values() for c in r.cases)
