"""pass@k and pass^k estimators, the Wilson interval, and the report's JSON round trip."""

from __future__ import annotations

import math

import pytest

import trialrun as tr
from trialrun import expect
from trialrun.report import metrics


@pytest.mark.parametrize(
    "n, c, k, at, pow_",
    [
        (5, 5, 1, 1.0, 1.0),
        (5, 0, 1, 0.0, 0.0),
        (5, 4, 1, 0.8, 0.8),
        (5, 4, 2, 1.0, 0.6),  # pass@2: 1 - C(1,2)/C(5,2) = 1; pass^2: C(4,2)/C(5,2) = 6/10
        (10, 3, 3, 1 - math.comb(7, 3) / math.comb(10, 3), math.comb(3, 3) / math.comb(10, 3)),
        (10, 7, 10, 1.0, 0.0),
    ],
)
def test_estimators(n: int, c: int, k: int, at: float, pow_: float) -> None:
    assert metrics.pass_at_k(n, c, k) == pytest.approx(at)
    assert metrics.pass_pow_k(n, c, k) == pytest.approx(pow_)


@pytest.mark.parametrize("n, c, k", [(5, 6, 1), (5, 2, 0), (5, 2, 6), (0, 0, 1)])
def test_estimators_reject_impossible_inputs(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        metrics.pass_at_k(n, c, k)


def test_wilson_interval() -> None:
    low, high = metrics.wilson_interval(4, 5)
    assert (round(low, 3), round(high, 3)) == (0.376, 0.964)
    assert metrics.wilson_interval(0, 10)[0] == 0.0 and metrics.wilson_interval(10, 10)[1] == pytest.approx(1.0)
    assert metrics.wilson_interval(0, 0) == (0.0, 1.0)


def test_case_result_estimators_and_interval() -> None:
    case = tr.Case(name="m", invoke=lambda ctx: "ok" if ctx.trial != 2 else "no", expect_outcome=[expect.equals("ok")])
    result = tr.evaluate([case], trials=5).cases[0]
    assert result.passed_trials == 4
    assert result.pass_at(1) == pytest.approx(0.8) and result.pass_at(2) == 1.0
    assert result.pass_pow(2) == pytest.approx(0.6) and result.pass_pow(5) == 0.0
    assert result.pass_at_1_interval == pytest.approx(metrics.wilson_interval(4, 5))
    with pytest.raises(ValueError, match="k must be between 1 and the number of trials"):
        result.pass_at(6)


def test_report_json_round_trip_is_exact() -> None:
    def invoke(ctx: tr.TrialContext) -> tr.Run:
        call = tr.ToolCall("read_file", {"path": "notes.txt", "n": [1, 2.5, None]}, id="call_1")
        turns = [
            tr.Turn(text="", tool_calls=[call], tool_results=[tr.ToolResult("call_1", "hello", is_error=False)],
                    usage=tr.Usage(100, 10, 20), model="gpt-4.1-mini"),
            tr.Turn(text="The notes say hello. ✓", usage=tr.Usage(120, 9)),
        ]
        trajectory = tr.Trajectory(turns=turns, commands=["ls -la"], denials=[tr.Denial("run_command", {"command": "rm -rf /"}, "denied", "rm -rf", "call_9")], notes=["n"])
        return tr.Run(output={"text": "hello", "n": 1}, trajectory=trajectory, cost_usd=0.0012)

    cases = [
        tr.Case(name="full", invoke=invoke, tags=["files"], expect_outcome=[expect.contains("hello")],
                expect_trajectory=[expect.called("read_file")], max_cost_usd=0.01, description="d", metadata={"k": [1]}),
        tr.Case(name="broken", invoke=lambda ctx: 1 / 0, max_cost_usd=1),
        tr.Case(name="canary", invoke=invoke, mode="live_canary", max_cost_usd=1),
    ]
    report = tr.evaluate(cases, trials=2, run_id="eval_1", config_snapshot={"model": "m"})
    text = report.model_dump_json()
    again = tr.RunReport.model_validate_json(text)
    assert again == report
    assert again.model_dump_json() == text
    assert again.cases[0].trials[0].trajectory.tool_calls[0].arguments == {"path": "notes.txt", "n": [1, 2.5, None]}
    assert isinstance(again.cases[0].trials[0].trajectory.turns[0].usage, tr.Usage)
