"""An A/B run decides only on what it looked at:

- "deterministic arms: one round decides" was decided over an arm's trials pooled across its tests, so one scripted
  test beside a test that flips a coin without a model (0.9 in one arm, 0.5 in the other) stopped the run after one
  round, and compare then could not tell the coin test (1/1 -> 1/1): the drop was never looked for.
- the gate of an `--until-decided` run of live arms was its pooled sequential test, safety breaches and lost tests
  only: a test deterministic in both arms that fails every trial in one (a real change, no statistic) passed the
  gate whenever the pooled test reached "not worse" first.
What each trial talked to is read from the trial itself (a scripted model it really called, or a mock transport
that trialrun records as "other", i.e. live); the gate is the CLI's own function on the run the library made.
"""

from __future__ import annotations

import random
import threading

import httpx

import trialrun as tr
from trialrun import expect
from trialrun.cli._arms_run import _gate_problems
from trialrun.report.compare import compare

ASK = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
URL = "https://api.openai.com/v1/chat/completions"


def _answer(text: str) -> httpx.Response:
    return httpx.Response(200, json={"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})


def _arm(label: str, *, scripted: str, coin: float, coins: int, through_a_model: bool) -> list[tr.Case]:
    """One scripted test that answers `scripted`, and `coins` tests that answer right with probability `coin`:
    through a mock transport (a model trialrun cannot name: live) or with no model at all."""
    rng = random.Random(label)
    lock = threading.Lock()

    def flip() -> str:
        with lock:
            return "hello" if rng.random() < coin else "bye"

    def scripted_invoke(ctx: tr.TrialContext) -> str:
        with ctx.http_client(ctx.scripted([tr.reply(scripted)])) as client:
            return str(client.post(URL, json=ASK).json()["choices"][0]["message"]["content"])

    def coin_invoke(ctx: tr.TrialContext) -> str:
        if not through_a_model:
            return flip()
        with ctx.http_client(httpx.MockTransport(lambda request: _answer(flip()))) as client:
            return str(client.post(URL, json=ASK).json()["choices"][0]["message"]["content"])

    return [tr.Case(name="scripted", invoke=scripted_invoke, expect_outcome=[expect.contains("hello")]),
            *[tr.Case(name=f"coin{i}", invoke=coin_invoke, expect_outcome=[expect.contains("hello")])
              for i in range(coins)]]


def test_one_scripted_test_beside_a_coin_without_a_model_does_not_make_the_arms_deterministic() -> None:
    run = tr.evaluate_arms({"A": _arm("A", scripted="hello", coin=0.9, coins=1, through_a_model=False),
                            "B": _arm("B", scripted="hello", coin=0.5, coins=1, through_a_model=False)},
                           until_decided=True, max_trials=12, seed=3)
    assert not run.deterministic and run.stopped != "deterministic" and run.rounds > 1  # was: 1 round, deterministic
    assert set(run.sequential) == {"B"}


def test_an_until_decided_gate_fails_on_a_deterministic_drop_beside_live_tests() -> None:
    """40 live tests alike in both arms, and a scripted test B fails every trial: the pooled change (-1/41 a round)
    is inside the threshold, so the sequential test may say "not worse"; the scripted test is worse whatever it
    says."""
    run = tr.evaluate_arms({"A": _arm("A", scripted="hello", coin=0.7, coins=40, through_a_model=True),
                            "B": _arm("B", scripted="bye", coin=0.7, coins=40, through_a_model=True)},
                           until_decided=True, max_trials=30, seed=3)
    assert not run.deterministic
    comparison = compare(run.reports["A"], run.reports["B"])
    [scripted] = [d for d in comparison.cases if d.name == "scripted"]
    assert (scripted.word, scripted.basis) == ("worse", "deterministic")
    problems = _gate_problems(run, "B", comparison)
    assert any(p.startswith("scripted: worse (deterministic: ") for p in problems), (run.sequential, problems)
