from __future__ import annotations

import pytest

import trialrun as tr
from trialrun import expect


@pytest.mark.parametrize(
    "run, passed, reason",
    [
        (tr.Run("x", cost_usd=0.01), True, "cost $0.010000 within $0.05"),
        (tr.Run("x", cost_usd=0.05), True, "cost $0.050000 within $0.05"),
        (tr.Run("x", cost_usd=0.0501), False, "cost $0.050100 exceeds $0.05"),
        (tr.Run("x"), False, "cost could not be determined: the run reported neither cost_usd nor token usage"),
        (
            tr.Run("x", trajectory=tr.Trajectory(turns=[tr.Turn(usage=tr.Usage(100, 5), model="mystery-1")])),
            False,
            "cost could not be determined: the run reported usage (100 input, 5 output tokens) but no price is known for "
            "model 'mystery-1' (add one with trialrun.prices.set or a price file)",
        ),
    ],
)
def test_max_cost_usd(run: tr.Run, passed: bool, reason: str) -> None:
    [verdict] = tr.check([expect.max_cost_usd(0.05)], run)
    assert (verdict.passed, verdict.reason, verdict.kind) == (passed, reason, "cost")
