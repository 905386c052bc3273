"""The eval skill's rubric (seed 002, "Score Each Test"): tool accuracy, turn efficiency, the output-quality
heuristic's levels, the clamp, and the pass threshold."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

import trialrun as tr
from trialrun.expect import check
from trialrun.expect.rubric import combine, heuristic_quality, key_terms, passes, rubric, score_parts
from trialrun.trajectory import Run, ToolCall, Trajectory, Turn

NOTES = "Mentions the meeting with Sam on Tuesday and buying milk"  # key terms: meeting, sam, tuesday, buying, milk


def _run(output: str, tools: Sequence[str] = (), turns: int = 1, status: str | None = "completed",
         error: str | None = None) -> Run:
    """A run of `turns` model responses; the first calls `tools`, the last says `output`."""
    made = [Turn() for _ in range(turns - 1)] + [Turn(text=output)]
    made[0].tool_calls = [ToolCall(name, {}, id=f"c{i}") for i, name in enumerate(tools)]
    return Run(output=output, trajectory=Trajectory(turns=made), status=status, error=error)


# -- tool accuracy ------------------------------------------------------------------------------------------
def test_extra_tools_do_not_lower_tool_accuracy() -> None:
    accuracy, _ = score_parts(["read_file"], ["list_dir", "read_file", "run_command", "write_file"], 5, 2)
    assert accuracy == 1.0


def test_tool_accuracy_is_the_share_of_expected_tools_used() -> None:
    assert score_parts(["read_file", "list_dir"], ["read_file", "run_command"], None, 1)[0] == 0.5
    assert score_parts(["read_file", "list_dir", "run_command"], ["list_dir"], None, 1)[0] == pytest.approx(1 / 3)
    assert score_parts(["read_file"], [], None, 1)[0] == 0.0
    # a tool used twice counts once: it is a set intersection
    assert score_parts(["read_file", "list_dir"], ["read_file", "read_file"], None, 1)[0] == 0.5


def test_empty_expected_tools_gives_full_tool_accuracy() -> None:
    assert score_parts([], [], 2, 1)[0] == 1.0
    assert score_parts([], ["run_command"], 2, 1)[0] == 1.0


# -- turn efficiency and the total --------------------------------------------------------------------------
@pytest.mark.parametrize("max_turns, turns, efficiency", [(3, 1, 1.0), (3, 3, 1.0), (3, 4, 0.75), (2, 5, 0.4), (None, 40, 1.0)])
def test_turn_efficiency(max_turns: int | None, turns: int, efficiency: float) -> None:
    assert score_parts([], [], max_turns, turns)[1] == pytest.approx(efficiency)


def test_the_skill_rubric_is_the_sum_clamped_to_one() -> None:
    assert combine(1.0, 1.0, 0.5, "skill") == 1.0
    assert combine(0.0, 0.5, 0.25, "skill") == 0.75
    assert combine(0.0, 0.0, 0.0, "skill") == 0.0


@pytest.mark.parametrize("accuracy, efficiency, quality, total", [
    (0.0, 1.0, 0.0, 1 / 3),      # the lazy "No." agent: no tool, one turn, nothing relevant said
    (1.0, 1.0, 0.0, 2 / 3),      # the right tools within budget, output quality 0
    (1.0, 0.5, 0.5, 5 / 6),      # everything right, twice over the turn budget
    (1.0, 1.0, 0.5, 1.0),
    (1.0, 1.0, 0.25, 5 / 6),
    (0.5, 1.0, 0.25, 2 / 3),
    (0.0, 0.0, 0.0, 0.0),
    (0.6, 1.0, 0.25, 0.7),       # exactly the pass mark on paper
])
def test_the_balanced_rubric_counts_each_part_a_third(accuracy: float, efficiency: float, quality: float, total: float) -> None:
    assert combine(accuracy, efficiency, quality) == pytest.approx(total)
    assert combine(accuracy, efficiency, quality, "balanced") == combine(accuracy, efficiency, quality)
    assert passes(combine(accuracy, efficiency, quality), 0.7) is (round(total, 9) >= 0.7)


def test_an_unknown_rubric_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown rubric 'lenient'; known: balanced, skill"):
        rubric(formula="lenient")
    with pytest.raises(ValueError, match="unknown rubric"):
        combine(1.0, 1.0, 0.5, "lenient")


LAZY = "No."


@pytest.mark.parametrize("formula, score, passed", [("balanced", 1 / 3, False), ("skill", 1.0, True)])
def test_the_lazy_agent_fails_under_balanced_and_passes_under_skill(formula: str, score: float, passed: bool) -> None:
    grader = rubric(expected_tools=["read_file"], max_turns=2, success_criteria=NOTES, formula=formula)
    [verdict] = check([grader], _run(LAZY))  # one turn, no tool call
    assert verdict.score == pytest.approx(score) and verdict.passed is passed
    assert verdict.details["rubric"] == formula
    assert f"score {score:.2f}" in verdict.reason and "never used: read_file" in verdict.reason


def test_the_readme_worked_numbers_under_the_balanced_rubric() -> None:
    grader = rubric(expected_tools=["read_file"], max_turns=2, success_criteria=NOTES)
    right = "Meeting with Sam on Tuesday; buying milk."
    [lazy] = check([grader], _run(LAZY))
    [useless] = check([grader], _run("I read it.", tools=["read_file"], turns=2))
    [slow] = check([grader], _run(right, tools=["read_file"], turns=4))
    assert [round(v.score, 2) for v in (lazy, useless, slow)] == [0.33, 0.67, 0.83]
    assert [v.passed for v in (lazy, useless, slow)] == [False, False, True]


def test_a_custom_agent_returning_none_fails() -> None:
    [verdict] = check([rubric(success_criteria=NOTES)], Run(output=None))
    assert not verdict.passed and verdict.score == pytest.approx(2 / 3) and "the response is empty" in verdict.reason


def test_an_expected_tool_never_offered_is_said_to_be_a_mistake() -> None:
    run = _run("done", tools=["read_file"])
    run.trajectory.offered_tools = ["read_file", "list_dir"]
    grader = rubric(expected_tools=["read-file", "list_dir"], success_criteria=NOTES)
    [verdict] = check([grader], run)
    assert ("tool_accuracy 0.00 (never used: list_dir; 'read-file' was never offered to the model (offered: "
            "read_file, list_dir))") in verdict.reason
    # nothing observed on the wire: what was offered is unknown, so nothing is claimed about it
    [unknown] = check([grader], Run(output="done"))
    assert "never offered" not in unknown.reason and "never used: list_dir, read-file" in unknown.reason


# -- output quality: the heuristic's levels -----------------------------------------------------------------
def test_key_terms_drop_stopwords_and_short_words() -> None:
    assert key_terms(NOTES) == ["meeting", "sam", "tuesday", "buying", "milk"]


@pytest.mark.parametrize(
    "response, level",
    [
        ("Meeting with Sam on Tuesday; buying milk.", 0.5),  # 5/5
        ("Meeting with Sam on Tuesday.", 0.5),  # 3/5 = 60%: the boundary is included
        ("You have a meeting with Sam.", 0.25),  # 2/5 = 40%
        ("Something about milk.", 0.0),  # 1/5 = 20%
        ("I could not find any notes.", 0.0),  # 0/5
    ],
)
def test_heuristic_levels_follow_the_share_of_key_terms(response: str, level: float) -> None:
    quality, why = heuristic_quality(NOTES, response)
    assert quality == level
    assert "criteria terms found" in why


def test_heuristic_quarter_boundary_and_prefix_matching() -> None:
    criteria = "Names Ada, Grace, Linus and Ken"  # 5 terms: names ada grace linus ken
    assert heuristic_quality("Ada", "ada")[0] == 0.5  # 1/1
    assert heuristic_quality("alpha beta gamma delta", "beta")[0] == 0.25  # 1/4 = 25%: included
    assert heuristic_quality(criteria, "Ada")[0] == 0.0  # 1/5 = 20%
    # a term counts when a word starts with its first five letters: "summarise" finds "summary"
    assert heuristic_quality("summarise notes", "A summary of the notes")[0] == 0.5


def test_without_criteria_any_non_empty_response_is_fully_correct() -> None:
    assert heuristic_quality("", "anything")[0] == 0.5


@pytest.mark.parametrize("response", ["", "   \n"])
def test_an_empty_response_gives_zero(response: str) -> None:
    quality, why = heuristic_quality(NOTES, response)
    assert quality == 0.0 and why == "the response is empty"


def test_a_run_that_ended_in_an_error_gives_zero_even_with_the_right_words() -> None:
    run = _run("Meeting with Sam on Tuesday; buying milk.", status="error", error="provider answered HTTP 500")
    quality, why = heuristic_quality(NOTES, "Meeting with Sam on Tuesday; buying milk.", run)
    assert quality == 0.0 and "provider answered HTTP 500" in why
    [verdict] = check([rubric(success_criteria=NOTES)], run)
    assert verdict.details["sub_scores"]["output_quality"] == 0.0


def test_a_judge_is_not_asked_about_an_empty_or_errored_run() -> None:
    asked: list[str] = []

    def judge(criteria: str, response: str, run: Run) -> float:
        asked.append(response)
        return 0.5

    grader = rubric(success_criteria=NOTES, judge=judge)
    [empty] = check([grader], _run(""))
    [errored] = check([grader], _run("milk", status="error", error="boom"))
    [answered] = check([grader], _run("milk"))
    assert empty.details["sub_scores"]["output_quality"] == 0.0 and "empty" in empty.reason
    assert errored.details["sub_scores"]["output_quality"] == 0.0 and "boom" in errored.reason
    assert answered.details["sub_scores"]["output_quality"] == 0.5
    assert asked == ["milk"]


# -- the rubric as a grader, and the pass threshold ---------------------------------------------------------
def test_rubric_verdict_carries_total_and_sub_scores() -> None:
    run = _run("You have a meeting with Sam.", tools=["list_dir"], turns=3)  # acc 0, eff 2/3, quality 0.25
    [verdict] = check([rubric(expected_tools=["read_file"], max_turns=2, success_criteria=NOTES, formula="skill")], run)
    assert verdict.details["sub_scores"] == {"tool_accuracy": 0.0, "turn_efficiency": pytest.approx(2 / 3), "output_quality": 0.25}
    assert verdict.score == pytest.approx(2 / 3 + 0.25)
    assert verdict.passed  # 0.92 >= 0.7 under the skill's sum
    [balanced] = check([rubric(expected_tools=["read_file"], max_turns=2, success_criteria=NOTES)], run)
    assert balanced.details["sub_scores"] == verdict.details["sub_scores"]  # the sub-scores are the skill's under both
    assert balanced.score == pytest.approx((2 / 3 + 0.5) / 3) and not balanced.passed
    assert "never used: read_file" in verdict.reason and "3 turns, budget 2" in verdict.reason


@pytest.mark.parametrize("threshold, passed", [(0.7, True), (0.75, True), (0.8, False), (1.0, False)])
def test_pass_threshold_decides_pass_or_fail(threshold: float, passed: bool) -> None:
    run = _run("Something about milk.", tools=["list_dir"], turns=4)  # acc 0, eff 0.75, quality 0: total 0.75
    [verdict] = check([rubric(expected_tools=["read_file"], max_turns=3, success_criteria=NOTES, threshold=threshold,
                              formula="skill")], run)
    assert verdict.score == pytest.approx(0.75)
    assert verdict.passed is passed
    assert (">=" if passed else "<") + f" {threshold:g}" in verdict.reason


def test_every_trial_is_scored_and_one_that_crashed_counts_zero() -> None:
    def invoke(ctx: tr.TrialContext) -> str:
        if ctx.trial == 2:
            raise RuntimeError("the agent crashed")
        return "Meeting with Sam on Tuesday; buying milk."

    case = tr.Case(name="notes", invoke=invoke, expect_outcome=[rubric(success_criteria=NOTES)])
    result = tr.evaluate([case], trials=2).case("notes")
    assert [t.score for t in result.trials] == [1.0, None]
    assert result.trials[1].error is not None
    assert result.score == 0.5  # mean of 1.0 and 0: the crash is not left out of the mean
    assert result.passed is False


# -- what docs/cli.md and the eval skill say about the heuristic -----------------------------------------------
def test_the_documented_worked_example_holds() -> None:
    """docs/cli.md's paragraph on the heuristic (once README's), checked: terms, five-letter prefixes, and the 60% /
    25% cut-offs."""
    assert key_terms(NOTES) == ["meeting", "sam", "tuesday", "buying", "milk"]
    assert heuristic_quality(NOTES, "Meeting with Sam; buy milk.")[0] == 0.5       # 3/5 = 60%: "buy" misses "buying"
    assert heuristic_quality(NOTES, "Meetings with Sam.")[0] == 0.25               # 2/5 = 40%
    assert heuristic_quality(NOTES, "Sam called.")[0] == 0.0                       # 1/5 = 20%, under 25%
    assert heuristic_quality("Summarise the notes", "A summary of your notes.")[0] == 0.5  # summa- finds summary
    assert heuristic_quality("The response should say it", "anything")[0] == 0.5  # no key terms: any answer
    assert heuristic_quality(NOTES, "   ")[0] == 0.0
    assert heuristic_quality(NOTES, "Meeting with Sam on Tuesday, buying milk.", _run("x", status="error", error="boom"))[0] == 0.0


@pytest.mark.parametrize("answer", [7, 1.0, True, -1, float("nan"), "0.5", None])
def test_a_judge_function_answering_off_the_scale_fails_saying_so(answer: object) -> None:
    # A judge on another scale (7 of 10, 1 for "yes") used to round to full marks: that invents a grade, as
    # parse_quality already refuses for an LLM judge's reply.
    grader = rubric(success_criteria=NOTES, judge=lambda criteria, response, run: answer)
    [verdict] = check([grader], _run("milk"))
    assert not verdict.passed and "expected 0, 0.25 or 0.5" in verdict.reason


def test_a_judge_function_on_the_scale_still_grades() -> None:
    for answer, level in ((0.5, 0.5), (0.25, 0.25), (0, 0.0), (0.3, 0.25)):
        [verdict] = check([rubric(success_criteria=NOTES, judge=lambda c, r, run, a=answer: a)], _run("milk"))
        assert verdict.details["sub_scores"]["output_quality"] == level
