"""Every behaviour sentence of the Invoke-ShpEval page (../shared/seeds/000_*.txt), as a test."""

from __future__ import annotations

import threading

import pytest

import trialrun as tr
from trialrun import expect
from trialrun.report.results import SCHEMA_VERSION


def _case(name: str = "c", invoke=lambda ctx: "hello", **kwargs) -> tr.Case:
    kwargs.setdefault("expect_outcome", [expect.contains("hello")])
    return tr.Case(name=name, invoke=invoke, **kwargs)


def test_runs_what_the_case_gives_it_and_grades_it() -> None:
    # "it runs what the case gives it, records what happened, and grades it"
    seen: list[int] = []
    report = tr.evaluate([_case(invoke=lambda ctx: seen.append(ctx.trial) or "hello")])
    assert seen == [1]
    trial = report.cases[0].trials[0]
    assert trial.output == "hello" and trial.passed
    assert [v.reason for v in trial.verdicts] == ["output contains 'hello'"]


def test_same_inputs_same_outputs_on_every_run() -> None:
    cases = [_case("a"), _case("b", invoke=lambda ctx: "bye")]

    def stable(report: tr.RunReport) -> list:
        return [(c.name, c.passed, [(t.output, [v.reason for v in t.verdicts]) for t in c.trials]) for c in report.cases]

    assert stable(tr.evaluate(cases, trials=3)) == stable(tr.evaluate(cases, trials=3))


def test_outcome_and_trajectory_are_separate_claims() -> None:
    # "An agent that reaches the right answer by running a command it was forbidden has failed, and only the
    # trajectory grade says so."
    def forbidden_route(ctx: tr.TrialContext) -> tr.Run:
        turn = tr.Turn(tool_calls=[tr.ToolCall("run_command", {"command": "sudo rm -rf /tmp/cache"}, id="c1")])
        return tr.Run(output="cache cleared", trajectory=tr.Trajectory(turns=[turn, tr.Turn(text="cache cleared")]))

    case = tr.Case(
        name="clears cache",
        invoke=forbidden_route,
        expect_outcome=[expect.contains("cleared")],
        expect_trajectory=[expect.never_ran("rm -rf")],
    )
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert trial.outcome_passed is True
    assert trial.trajectory_passed is False
    assert trial.passed is False
    failed = trial.failed_verdicts
    assert len(failed) == 1 and failed[0].kind == "trajectory"
    assert "rm" in failed[0].reason


def test_reliability_is_reported_twice() -> None:
    # "A case at 0.8 pass@1 and 0 pass^k is a case that mostly works"
    mostly = _case("mostly", invoke=lambda ctx: "nope" if ctx.trial == 3 else "hello")
    always = _case("always")
    report = tr.evaluate([mostly, always], trials=5)
    m, a = report.case("mostly"), report.case("always")
    assert (m.pass_at_1, m.pass_pow_k, m.passed) == (0.8, 0.0, False)
    assert (a.pass_at_1, a.pass_pow_k, a.passed) == (1.0, 1.0, True)
    assert [t.passed for t in m.trials] == [True, True, False, True, True]
    assert report.pass_at_1 == pytest.approx(0.9)
    assert report.pass_pow_k == 0.5
    assert report.trial_count == 5


def test_trial_default_is_one_and_each_case_runs_k_times() -> None:
    counts: dict[str, int] = {}
    lock = threading.Lock()

    def counting(name: str):
        def invoke(ctx: tr.TrialContext) -> str:
            with lock:
                counts[name] = counts.get(name, 0) + 1
            return "hello"

        return invoke

    tr.evaluate([_case("one", counting("one"))])
    assert counts == {"one": 1}
    tr.evaluate([_case("five", counting("five")), _case("five-b", counting("five-b"))], trials=5)
    assert counts["five"] == 5 and counts["five-b"] == 5


def test_a_case_fails_it_does_not_throw_and_every_case_is_graded() -> None:
    def boom(ctx: tr.TrialContext) -> str:
        raise RuntimeError("disk on fire")

    cases = [_case("first-fails", boom), _case("second-fails", lambda ctx: "nope"), _case("third-passes")]
    report = tr.evaluate(cases)
    assert [c.passed for c in report.cases] == [False, False, True]
    assert report.failed_case_count == 2 and report.passed_case_count == 1
    error = report.case("first-fails").trials[0].error
    assert error is not None
    assert (error.type, error.message, error.phase) == ("RuntimeError", "disk on fire", "invoke")
    assert "disk on fire" in error.traceback and "boom" in error.traceback


@pytest.mark.parametrize(
    "bad, needle",
    [
        ({"invoke": lambda ctx: "x", "expect_outcome": [expect.contains("x")]}, "needs a non-empty name"),
        ({"name": "no body", "expect_outcome": [expect.contains("x")]}, "needs an invoke"),
        ({"name": "grades nothing", "invoke": lambda ctx: "x"}, "a case that grades nothing cannot fail"),
        ({"name": "typo", "invoke": lambda ctx: "x", "expect_outcome": [], "expect_outcom": []}, "did you mean 'expect_outcome'"),
    ],
)
def test_a_case_it_cannot_understand_is_an_error_and_nothing_runs(bad: dict, needle: str) -> None:
    ran: list[str] = []
    good = _case("good", invoke=lambda ctx: ran.append("good") or "hello")
    with pytest.raises(tr.CaseError) as info:
        tr.evaluate([good, bad])
    assert needle in str(info.value)
    assert ran == []


def test_live_canaries_are_skipped_and_listed_unless_included() -> None:
    ran: list[str] = []
    canary = _case("canary", invoke=lambda ctx: ran.append("canary") or "hello", mode="live_canary")
    report = tr.evaluate([_case("det"), canary])
    assert ran == []
    assert report.skipped_case_count == 1 and report.case_count == 2
    assert [s.name for s in report.skipped_cases] == ["canary"]
    assert "include_live_canary" in report.skipped_cases[0].reason
    skipped = report.case("canary")
    assert skipped.skipped and skipped.passed is None and skipped.trials == []
    assert report.failed_case_count == 0 and report.passed_case_count == 1

    report = tr.evaluate([_case("det"), canary], include_live_canary=True)
    assert ran == ["canary"] and report.skipped_case_count == 0 and report.passed_case_count == 2


def test_example_2_tag_selection_and_failed_case_count() -> None:
    cases = [
        _case("inj-1", tags=["prompt-injection"], invoke=lambda ctx: "pwned"),
        _case("inj-2", tags=["prompt-injection", "files"]),
        _case("other", tags=["files"], invoke=lambda ctx: "pwned"),
    ]
    report = tr.evaluate(cases, tags=["prompt-injection"])
    assert [c.name for c in report.cases] == ["inj-1", "inj-2"]
    assert report.failed_case_count == 1


def test_name_selection_is_exact() -> None:
    cases = [_case("read"), _case("read-file"), _case("write")]
    report = tr.evaluate(cases, names=["read", "write"])
    assert [c.name for c in report.cases] == ["read", "write"]
    assert tr.evaluate(cases, names="read-file").case_count == 1


def test_setup_runs_before_each_trial_and_teardown_after_even_when_it_failed() -> None:
    log: list[str] = []
    lock = threading.Lock()

    def note(event: str):
        def hook(ctx: tr.TrialContext) -> str:
            with lock:
                log.append(f"{event}{ctx.trial}")
            if event == "invoke" and ctx.trial == 2:
                raise ValueError("trial two breaks")
            return "hello"

        return hook

    case = _case("hooks", invoke=note("invoke"), setup=note("setup"), teardown=note("teardown"))
    report = tr.evaluate([case], trials=3, concurrency=1)
    assert log == ["setup1", "invoke1", "teardown1", "setup2", "invoke2", "teardown2", "setup3", "invoke3", "teardown3"]
    assert [t.passed for t in report.cases[0].trials] == [True, False, True]


def test_max_cost_usd_is_a_spend_ceiling() -> None:
    cheap = tr.Case(name="cheap", invoke=lambda ctx: tr.Run("ok", cost_usd=0.01), max_cost_usd=0.05)
    dear = tr.Case(name="dear", invoke=lambda ctx: tr.Run("ok", cost_usd=0.08), max_cost_usd=0.05)
    report = tr.evaluate([cheap, dear])
    assert report.case("cheap").passed and not report.case("dear").passed
    trial = report.case("dear").trials[0]
    assert trial.cost_passed is False and trial.outcome_passed is None
    assert "exceeds $0.05" in trial.verdicts[0].reason
    assert report.cost_usd == pytest.approx(0.09)


def test_report_has_the_seed_fields() -> None:
    report = tr.evaluate([_case("a"), _case("b", invoke=lambda ctx: "x"), _case("c", mode="live_canary")], trials=2)
    data = report.model_dump()
    for field in (
        "schema_version", "trial_count", "case_count", "passed_case_count", "failed_case_count",
        "skipped_case_count", "skipped_cases", "pass_at_1", "pass_pow_k", "cases",
    ):
        assert field in data
    assert (report.trial_count, report.case_count) == (2, 3)
    assert (report.passed_case_count, report.failed_case_count, report.skipped_case_count) == (1, 1, 1)
    assert report.schema_version == SCHEMA_VERSION
