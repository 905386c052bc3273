"""Unique labels (issue 21, point 9): a grader's label shows every option that changes what it means, so two graders
that judge differently never carry the same label (results are matched by label, not by position)."""

from __future__ import annotations

import re
from itertools import combinations

import pytest

import trialrun as tr
from trialrun import expect
from trialrun.expect.rubric import rubric


def _quality(criteria: str, response: str, run: object) -> float:
    return 0.5


def _picky(criteria: str, response: str, run: object) -> float:
    return 0.0


def _long(tail: str) -> str:
    return "x" * 200 + tail


def _is_int(value: object) -> bool:
    return isinstance(value, int)


#: grader name -> graders built with each option that changes what it judges (each a different meaning)
VARIANTS = {
    "equals": [expect.equals(1), expect.equals("1"), expect.equals(1.5), expect.equals(_long("a")),
               expect.equals(_long("b")), expect.equals([_long("a")]), expect.equals([_long("b")])],
    "contains": [expect.contains("a"), expect.contains("a", case_sensitive=False), expect.contains("b")],
    "not_contains": [expect.not_contains("a"), expect.not_contains("a", case_sensitive=False)],
    "matches": [expect.matches("a"), expect.matches("a", flags=re.IGNORECASE),
                expect.matches("a", flags=re.IGNORECASE | re.MULTILINE), expect.matches(re.compile("a", re.DOTALL))],
    "satisfies": [expect.satisfies(_is_int), expect.satisfies(_is_int, "an integer")],
    "ended": [expect.ended(), expect.ended("error"), expect.ended("completed", "error")],
    "called": [expect.called("t"), expect.called("t", {"a": 1}), expect.called("t", times=1),
               expect.called("t", at_least=2), expect.called("t", at_most=2), expect.called("t", at_least=1, at_most=2),
               expect.called("t", {"a": 1}, exact_args=True), expect.called("t", include_refused=True),
               expect.called("t", {"a": _long("a")}), expect.called("t", {"a": _long("b")})],
    "not_called": [expect.not_called("t"), expect.not_called("t", include_refused=False)],
    "called_in_order": [expect.called_in_order(["a", "b"]), expect.called_in_order(["a", "b"], exact=True),
                        expect.called_in_order(["a", "b"], include_refused=True),
                        expect.called_in_order(["a", "b"], exact=True, include_refused=True),
                        expect.called_in_order([("a", {"k": _long("a")})]),
                        expect.called_in_order([("a", {"k": _long("b")})])],
    "trajectory_matches": [
        *(expect.trajectory_matches(["a"], mode=mode, args=args, include_refused=include)
          for mode in ("strict", "unordered", "subset", "superset") for args in ("exact", "ignore", "subset", "superset")
          for include in (False, True)),
        expect.trajectory_matches([("a", {"k": _long("a")})]), expect.trajectory_matches([("a", {"k": _long("b")})]),
    ],
    "max_turns": [expect.max_turns(1), expect.max_turns(2)],
    "max_tool_calls": [expect.max_tool_calls(1), expect.max_tool_calls(2)],
    "no_tool_errors": [expect.no_tool_errors()],
    "no_denials": [expect.no_denials()],
    "no_model_calls": [expect.no_model_calls()],
    "never_ran": [expect.never_ran("rm"), expect.never_ran("rm", include_refused=False),
                  expect.never_ran("rm", own_scripts="none"), expect.never_ran("rm", own_scripts=["scripts/*.sh"]),
                  expect.never_ran("rm", command_tools=["deploy"]),
                  expect.never_ran("rm", include_refused=False, own_scripts="none", command_tools=["deploy"]),
                  expect.never_ran("rm -rf")],
    "max_cost_usd": [expect.max_cost_usd(1), expect.max_cost_usd(0.1234567), expect.max_cost_usd(0.1234568)],
    "verify": [expect.verify("python3 t.py"), expect.verify("python3 u.py"), expect.verify("python3 t.py", timeout_s=5),
               expect.verify("python3 t.py", sandbox="none")],
    "file_exists": [expect.file_exists("a.py"), expect.file_exists("b.py")],
    "file_contains": [expect.file_contains("a.py", "x"), expect.file_contains("a.py", "y"),
                      expect.file_contains("b.py", "x"), expect.file_contains("a.py", "x", max_bytes=10)],
    "file_matches": [expect.file_matches("a.py", "x"), expect.file_matches("a.py", "x", flags=re.IGNORECASE),
                     expect.file_matches("a.py", "x", max_bytes=10)],
    "file_unchanged": [expect.file_unchanged("a.py"), expect.file_unchanged("*.py")],
    "changed_only": [expect.changed_only("a.py"), expect.changed_only(["a.py", "b.py"])],
    "mcp_called": [expect.mcp_called("s", "t"), expect.mcp_called("s", "u"), expect.mcp_called("r", "t"),
                   expect.mcp_called("s", "t", {"a": 1}), expect.mcp_called("s", "t", times=1),
                   expect.mcp_called("s", "t", at_least=2), expect.mcp_called("s", "t", at_most=2),
                   expect.mcp_called("s", "t", {"a": 1}, exact_args=True),
                   expect.mcp_called("s", "t", {"a": _long("a")}), expect.mcp_called("s", "t", {"a": _long("b")})],
    "mcp_not_called": [expect.mcp_not_called("s"), expect.mcp_not_called("s", "t"),
                       expect.mcp_not_called("s", "t", {"a": 1}), expect.mcp_not_called("s", "t", reached=False)],
    "mcp_as_asked": [expect.mcp_as_asked(), expect.mcp_as_asked("s"), expect.mcp_as_asked("s", "t")],
    "mcp_only_declared": [expect.mcp_only_declared()],
    "rubric": [rubric(), rubric(expected_tools=["a"]), rubric(max_turns=3), rubric(threshold=0.8),
               rubric(threshold=0.7000001), rubric(formula="skill"), rubric(success_criteria="says hi"),
               rubric(success_criteria="says bye"), rubric(judge=_quality), rubric(judge=_picky),
               rubric(include_refused=True), rubric(expected_tools=["a"], include_refused=True),
               rubric(quality_from=expect.verify("python3 t.py")), rubric(quality_from=expect.verify("python3 u.py"))],
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_graders_that_judge_differently_have_different_labels(name: str) -> None:
    labels = [grader.label for grader in VARIANTS[name]]
    same = [(a, b) for a, b in combinations(labels, 2) if a == b]
    assert not same, same


def test_every_grader_is_covered() -> None:
    # `safety` marks another grader (its label is that grader's: it judges alike, compare treats it as a safety claim)
    assert set(VARIANTS) == set(expect.__all__) - {"Grader", "Verdict", "check", "safety"} | {"rubric"}


def test_labels_across_graders_are_distinct() -> None:
    labels = [grader.label for graders in VARIANTS.values() for grader in graders]
    assert len(labels) == len(set(labels))


def test_defaults_stay_out_of_the_label() -> None:
    # an option at its default is not shown, so the common labels stay short
    assert expect.never_ran("rm", include_refused=True, own_scripts="workspace").label == "never_ran('rm')"
    assert expect.called("t", include_refused=False).label == "called('t')"
    assert expect.not_called("t", include_refused=True).label == "not_called('t')"
    assert expect.max_cost_usd(0.5).label == "max_cost_usd(0.5)" and expect.max_cost_usd(1).label == "max_cost_usd(1)"
    assert rubric(expected_tools=["a"], max_turns=2).label == "rubric(expected_tools=['a'], max_turns=2, threshold=0.7)"
    assert expect.matches("a", flags=re.IGNORECASE).label == "matches('a', flags=re.IGNORECASE)"
    assert expect.matches(re.compile("a", re.IGNORECASE)).label == "matches('a', flags=re.IGNORECASE)"


def test_two_graders_named_alike_give_verdicts_a_reader_can_tell_apart() -> None:
    # two lambdas were both "satisfies('<lambda>')": a failed one could not be told from the passing one
    case = tr.Case(name="c", invoke=lambda ctx: "hello",
                   expect_outcome=[expect.satisfies(lambda o: "h" in o), expect.satisfies(lambda o: "z" in o),
                                   expect.contains("he"), expect.contains("he")])
    verdicts = tr.evaluate([case]).cases[0].trials[0].verdicts
    assert [(v.grader, v.passed) for v in verdicts] == [
        ("satisfies('<lambda>')", True), ("satisfies('<lambda>') #2", False),
        ("contains('he')", True), ("contains('he') #2", True)]
    assert [g.label for g in case.graders] == [v.grader for v in verdicts]
