"""Hostile-user repros: graders that could pass without having examined anything real (no verdict without looking).

Each test is a way a grader passed on evidence that was not there; it must now fail (or say what it examined)."""

from __future__ import annotations

import openai

import trialrun as tr
from trialrun import expect
from trialrun.expect.rubric import rubric
from trialrun.trajectory import Run, ToolCall, Trajectory, Turn

TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}]


def _ignores_tool_calls(ctx: tr.TrialContext) -> str:
    """An agent that asks the model, gets a tool call, never runs it, and answers anyway (a broken tool loop)."""
    model = ctx.scripted([tr.tool_call("lookup", key="k")])
    client = openai.OpenAI(api_key="test", max_retries=0, http_client=ctx.http_client(model))
    client.chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": "look up k"}], tools=TOOLS)
    return "the value of k is v"


def test_a_tool_call_the_agent_never_ran_is_not_a_call_made() -> None:
    case = tr.Case(name="never-ran", invoke=_ignores_tool_calls, expect_trajectory=[expect.called("lookup")])
    trial = tr.evaluate([case]).cases[0].trials[0]
    verdict = trial.verdicts[0]
    assert not trial.passed and not verdict.passed
    assert "never got a result" in verdict.reason and "lookup" in verdict.reason


def test_rubric_tool_accuracy_does_not_count_a_call_that_never_got_a_result() -> None:
    grader = rubric(expected_tools=["lookup"], success_criteria="value of k")
    case = tr.Case(name="never-ran", invoke=_ignores_tool_calls, expect_outcome=[grader])
    verdict = tr.evaluate([case]).cases[0].trials[0].verdicts[0]
    assert verdict.details["sub_scores"]["tool_accuracy"] == 0.0 and not verdict.passed
    assert "never got a result" in verdict.reason


def test_a_call_that_got_its_result_still_counts_for_both() -> None:
    def invoke(ctx: tr.TrialContext) -> str:
        model = ctx.scripted([tr.tool_call("lookup", key="k"), tr.reply("the value of k is v")])
        client = openai.OpenAI(api_key="test", max_retries=0, http_client=ctx.http_client(model))
        messages: list = [{"role": "user", "content": "look up k"}]
        first = client.chat.completions.create(model="gpt-4.1-mini", messages=messages, tools=TOOLS)
        call = first.choices[0].message.tool_calls[0]
        messages += [first.choices[0].message.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": call.id, "content": "v"}]
        return client.chat.completions.create(model="gpt-4.1-mini", messages=messages, tools=TOOLS).choices[0].message.content

    case = tr.Case(name="ran", invoke=invoke, expect_outcome=[rubric(expected_tools=["lookup"], success_criteria="value of k")],
                   expect_trajectory=[expect.called("lookup", args={"key": "k"})])
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert trial.passed, trial.verdicts
    assert trial.verdicts[0].details["sub_scores"]["tool_accuracy"] == 1.0


def test_rubric_tool_accuracy_does_not_credit_a_phantom_call_of_a_text_protocol_agent() -> None:
    # Model traffic was read, no request offered a tool, yet a turn carries a native call: nothing could run it.
    # expect.called already refuses it; the rubric must agree (one rule for "the calls the agent could have run").
    phantom = Trajectory(turns=[Turn(tool_calls=[ToolCall("lookup", {"key": "k"}, "c1")]), Turn(text="v")], model_calls=2)
    run = Run(output="the value is v", trajectory=phantom)
    assert not expect.called("lookup")(run).passed
    verdict = rubric(expected_tools=["lookup"])(run)
    assert verdict.details["sub_scores"]["tool_accuracy"] == 0.0 and not verdict.passed
    assert "not visible on the wire" in verdict.reason


def test_an_empty_output_says_so_when_not_contains_passes() -> None:
    for output in (None, "", "   "):
        verdict = expect.not_contains("secret")(Run(output=output))
        assert verdict.passed and "empty" in verdict.reason, verdict.reason


def test_a_rubric_whose_pass_mark_cannot_be_missed_is_refused_when_built() -> None:
    # threshold 0: every total is >= 0, so an agent returning None "passes"; over 1 nothing ever passes
    import pytest

    for threshold in (0, 0.0, -0.5, 1.5):
        with pytest.raises(ValueError, match="threshold"):
            rubric(threshold=threshold)
    assert not rubric(threshold=1.0)(Run(output=None)).passed


def test_graders_that_cannot_fail_are_refused_when_built() -> None:
    import pytest

    with pytest.raises(ValueError, match="every output contains the empty text"):
        expect.contains("")
    with pytest.raises(ValueError, match="could never pass"):
        expect.not_contains("")
    with pytest.raises(ValueError, match="at_least=0"):
        expect.called("lookup", at_least=0)
    assert expect.called("lookup", at_least=0, at_most=2)  # a bound that can fail is fine


def test_orders_that_cannot_fail_are_refused_when_built() -> None:
    import pytest

    with pytest.raises(ValueError, match="no steps"):
        expect.called_in_order([])
    with pytest.raises(ValueError, match="superset"):
        expect.trajectory_matches([], mode="superset")
    # an empty reference that means "no tool calls" can fail, and stays
    call = Trajectory(turns=[Turn(tool_calls=[ToolCall("lookup", {}, "c1")])])
    assert not expect.called_in_order([], exact=True)(call).passed
    assert not expect.trajectory_matches([])(call).passed


def test_max_tool_calls_says_when_tool_use_was_not_visible() -> None:
    text_protocol = Trajectory(turns=[Turn(text="Action: lookup[k]"), Turn(text="v")], model_calls=2)
    verdict = expect.max_tool_calls(0)(text_protocol)
    assert verdict.passed and "not visible on the wire" in verdict.reason


def test_no_tool_errors_names_the_calls_whose_result_it_never_saw() -> None:
    case = tr.Case(name="never-ran", invoke=_ignores_tool_calls, expect_trajectory=[expect.no_tool_errors()])
    verdict = tr.evaluate([case]).cases[0].trials[0].verdicts[0]
    assert verdict.passed  # no error was seen, but it says what it could not examine
    assert "never got a result" in verdict.reason and "lookup (id " in verdict.reason


def test_called_in_order_does_not_count_a_call_that_never_got_a_result() -> None:
    case = tr.Case(name="never-ran", invoke=_ignores_tool_calls, expect_trajectory=[expect.called_in_order(["lookup"])])
    verdict = tr.evaluate([case]).cases[0].trials[0].verdicts[0]
    assert not verdict.passed and "never got a result" in verdict.reason


def test_an_empty_reference_cannot_pass_on_a_text_protocol_loop() -> None:
    # "no tool calls at all" is not shown by a loop whose requests offered no tools: its calls were in text
    text_protocol = Trajectory(turns=[Turn(text="Action: delete_db[]"), Turn(text="done")], model_calls=2)
    for mode in ("strict", "unordered", "subset"):
        verdict = expect.trajectory_matches([], mode=mode)(text_protocol)
        assert not verdict.passed and "not visible on the wire" in verdict.reason
    assert expect.trajectory_matches([], mode="subset")(Trajectory(turns=[Turn(text="hi")], model_calls=1)).passed


def test_zero_calls_cannot_pass_on_a_text_protocol_loop_and_a_pass_says_what_it_examined() -> None:
    # "called 0 times" or "exactly no calls" over a loop whose tool use was in text would be a verdict without looking
    text_protocol = Trajectory(turns=[Turn(text="Action: delete_db[]"), Turn(text="done")], model_calls=2)
    for grader in (expect.called("delete_db", times=0), expect.called("delete_db", at_most=0),
                   expect.called_in_order([], exact=True)):
        verdict = grader(text_protocol)
        assert not verdict.passed and "not visible on the wire" in verdict.reason, (grader, verdict.reason)
    observed = Trajectory(turns=[Turn(tool_calls=[ToolCall("lookup", {}, "c1")]), Turn(text="v")], model_calls=2,
                          offered_tools=["lookup", "delete_db"])
    observed.turns[0].tool_results.append(tr.ToolResult("c1", "v"))
    verdict = expect.called("delete_db", times=0)(observed)
    assert verdict.passed and verdict.reason == "delete_db was called 0 times (examined 1 tool call)"
    one_chat = Trajectory(turns=[Turn(text="hi")], model_calls=1)
    verdict = expect.called("delete_db", times=0)(one_chat)
    assert verdict.passed and "not visible on the wire" in verdict.reason


def _answers_without_the_endpoint(ctx: tr.TrialContext) -> str:
    """An agent whose model traffic trialrun never saw (its client was not made through ctx): it may have taken any
    number of turns."""
    return "the value of k is v"


def test_rubric_turn_budget_is_not_met_by_turns_nobody_saw() -> None:
    grader = rubric(max_turns=3, success_criteria="value of k")
    trial = tr.evaluate([tr.Case(name="unseen", invoke=_answers_without_the_endpoint,
                                 expect_outcome=[grader])]).cases[0].trials[0]
    verdict = trial.verdicts[0]
    # tool_accuracy 1.0 (nothing expected) and output_quality 0.5 (the answer is there); the budget earns nothing
    assert verdict.details["sub_scores"] == {"tool_accuracy": 1.0, "turn_efficiency": 0.0, "output_quality": 0.5}
    assert verdict.score == 2 / 3 and not verdict.passed and not trial.passed
    assert "no model traffic was observed, so the budget of 3 was not checked" in verdict.reason


def test_rubric_without_a_budget_says_it_saw_no_turns() -> None:
    verdict = rubric(success_criteria="value of k")(Run(output="the value of k is v"))
    assert verdict.passed and verdict.details["sub_scores"]["turn_efficiency"] == 1.0
    assert "0 turns seen: no model traffic was observed, budget none" in verdict.reason


def test_rubric_turn_budget_counts_the_turns_it_saw() -> None:
    def invoke(ctx: tr.TrialContext) -> str:
        model = ctx.scripted([tr.reply("the value of k is v")])
        client = openai.OpenAI(api_key="test", max_retries=0, http_client=ctx.http_client(model))
        return client.chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": "k?"}]
                                              ).choices[0].message.content

    trial = tr.evaluate([tr.Case(name="seen", invoke=invoke, expect_outcome=[
        rubric(max_turns=3, success_criteria="value of k")])]).cases[0].trials[0]
    verdict = trial.verdicts[0]
    assert trial.passed and verdict.details["sub_scores"]["turn_efficiency"] == 1.0
    assert "(1 turn, budget 3)" in verdict.reason
