"""DESIGN's `compare(RunReport, RunReport) -> Comparison` is public as `trialrun.compare(...)` too."""

from __future__ import annotations

import trialrun as tr
import trialrun.report.compare as compare_module
from trialrun import expect


def test_compare_is_the_function_from_the_package() -> None:
    case = tr.Case(name="a", invoke=lambda ctx: "x", expect_outcome=[expect.contains("x")])
    before, after = tr.evaluate([case]), tr.evaluate([case])
    comparison = tr.compare(before, after)
    assert isinstance(comparison, tr.Comparison) and comparison.regressions == []
    assert tr.compare is compare_module.compare and tr.compare(before, after, threshold=0.2).threshold == 0.2
    assert isinstance(comparison.cases[0], tr.CaseDelta)
