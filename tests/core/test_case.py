"""Case construction and validation: every problem listed at once, before anything runs."""

from __future__ import annotations

import pytest

import trialrun as tr
from trialrun import expect

OK = {"name": "n", "invoke": lambda ctx: "x", "expect_outcome": [expect.contains("x")]}


def problems(**overrides) -> list[str]:
    data = {**OK, **overrides}
    with pytest.raises(tr.CaseError) as info:
        tr.Case.from_dict({k: v for k, v in data.items() if v is not ...})
    return [str(p) for p in info.value.problems]


@pytest.mark.parametrize(
    "overrides, expected",
    [
        ({"name": ...}, "field 'name': a case needs a non-empty name"),
        ({"name": "  "}, "field 'name': a case needs a non-empty name"),
        ({"name": 3}, "field 'name': must be a string, got int"),
        ({"invoke": ...}, "case 'n', field 'invoke': a case needs an invoke"),
        ({"invoke": "run it"}, "case 'n', field 'invoke': must be callable, got str"),
        ({"setup": 5}, "case 'n', field 'setup': must be callable or None, got int"),
        ({"teardown": "x"}, "case 'n', field 'teardown': must be callable or None, got str"),
        ({"expect_outcome": ...}, "a case that grades nothing cannot fail"),
        ({"expect_outcome": [42]}, "field 'expect_outcome': item 1: 42 is not a grader"),
        ({"expect_outcome": "hello"}, "field 'expect_outcome': must be a list of graders, got str"),
        ({"mode": "fast"}, "field 'mode': 'fast' is not a mode; expected 'deterministic' or 'live_canary'"),
        ({"max_cost_usd": -1}, "field 'max_cost_usd': must be 0 or more US dollars, got -1"),
        ({"max_cost_usd": "cheap"}, "field 'max_cost_usd': must be a number of US dollars, got str"),
        ({"timeout_s": 0}, "field 'timeout_s': must be a positive number of seconds"),
        ({"timeout_s": float("nan")}, "field 'timeout_s': must be a positive number of seconds, got nan"),
        ({"timeout_s": float("inf")}, "field 'timeout_s': must be a positive number of seconds, got inf"),
        ({"max_cost_usd": float("nan")}, "field 'max_cost_usd': must be 0 or more US dollars, got nan"),
        ({"invoke": lambda: "hi"}, "field 'invoke': must take one argument, the trial context (ctx); calling it "
                                   "with one fails: too many positional arguments"),
        ({"teardown": lambda ctx, extra: None}, "field 'teardown': must take one argument, the trial context (ctx); "
                                                "calling it with one fails: missing a required argument: 'extra'"),
        ({"trials": 0}, "field 'trials': must be a positive integer"),
        ({"tags": [1]}, "field 'tags': every tag must be a non-empty string, got 1"),
        ({"expect_outcom": []}, "field 'expect_outcom': unknown key (did you mean 'expect_outcome'?)"),
        ({"colour": "red"}, "field 'colour': unknown key"),
    ],
)
def test_each_problem_is_named(overrides: dict, expected: str) -> None:
    assert any(expected in p for p in problems(**overrides)), problems(**overrides)


def test_every_problem_is_listed_not_only_the_first() -> None:
    found = problems(name=..., invoke=7, mode="sometimes", max_cost_usd=-2, expect_outcom=[])
    assert len(found) == 5
    assert "5 problems" in str(tr.CaseError([tr.Problem(p) for p in found]))


def test_case_error_from_constructor_too() -> None:
    with pytest.raises(tr.CaseError, match="a case that grades nothing cannot fail"):
        tr.Case(name="x", invoke=lambda ctx: 1)


def test_the_constructor_lists_every_problem_as_a_case_error() -> None:
    with pytest.raises(tr.CaseError) as caught:
        tr.Case(expect_outcom=[expect.contains("a")], max_cost=1, ExpectOutcome=[expect.contains("a")])
    assert [(p.field, p.message) for p in caught.value.problems] == [
        ("expect_outcom", "unknown argument (did you mean 'expect_outcome'?)"),
        ("max_cost", "unknown argument (did you mean 'max_cost_usd'?)"),
        ("ExpectOutcome", "unknown argument (did you mean 'expect_outcome'?)"),
        ("name", "a case needs a non-empty name (its unique key)"),
        ("invoke", "a case needs an invoke (a callable taking the trial context)"),
        ("expect_outcome", "no expectation: give at least one of expect_outcome, expect_trajectory or max_cost_usd "
         "(a case that grades nothing cannot fail)"),
    ]


def test_a_single_grader_needs_no_list() -> None:
    case = tr.Case(name="x", invoke=lambda ctx: tr.Run("a", tr.Trajectory(turns=[tr.Turn(text="a")])),
                   expect_outcome=expect.contains("a"), expect_trajectory=expect.max_turns(3))
    assert len(case.expect_outcome) == len(case.expect_trajectory) == 1 and len(case.graders) == 2
    assert tr.evaluate([case]).passed_case_count == 1


def test_max_cost_alone_is_an_expectation() -> None:
    case = tr.Case(name="x", invoke=lambda ctx: 1, max_cost_usd=0.5)
    assert [g.label for g in case.graders] == ["max_cost_usd(0.5)"]


def test_seed_spellings_are_accepted() -> None:
    case = tr.Case.from_dict(
        {"Name": "seed", "Invoke": lambda ctx: "x", "Tag": "files", "Mode": "LiveCanary",
         "ExpectOutcome": [expect.contains("x")], "MaxCostUSD": 0.1}
    )
    assert (case.name, case.tags, case.mode, case.max_cost_usd) == ("seed", ("files",), "live_canary", 0.1)


def test_duplicate_names_in_one_run() -> None:
    with pytest.raises(tr.CaseError, match="duplicate name: cases #1 and #3 are both named 'a'"):
        tr.evaluate([tr.Case(**OK | {"name": "a"}), tr.Case(**OK | {"name": "b"}), OK | {"name": "a"}])


def test_problems_across_several_dict_cases_are_collected() -> None:
    with pytest.raises(tr.CaseError) as info:
        tr.evaluate([{"name": "a"}, {"invoke": lambda ctx: 1, "max_cost_usd": 1}])
    text = str(info.value)
    assert "case 'a', field 'invoke'" in text and "case #2, field 'name'" in text


def test_graders_may_be_plain_callables() -> None:
    case = tr.Case(
        name="plain",
        invoke=lambda ctx: "hello",
        expect_outcome=[lambda run: run.output == "hello", lambda run, ctx: tr.Verdict(True, "custom", "fine")],
    )
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert trial.passed and [v.reason for v in trial.verdicts] == ["returned True", "fine"]


def test_a_grader_with_too_many_parameters_is_rejected() -> None:
    with pytest.raises(tr.CaseError, match="takes 3 arguments"):
        tr.Case(name="x", invoke=lambda ctx: 1, expect_outcome=[lambda a, b, c: True])
