"""The trial context's observed clients work with the official SDKs, and their trajectory becomes the run's."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import openai

import trialrun as tr
from trialrun import expect
from trialrun.models._cassette_io import load_exchanges


def test_openai_through_ctx_http_client() -> None:
    def invoke(ctx: tr.TrialContext) -> str:
        model = ctx.scripted([tr.tool_call("lookup", key="k"), tr.reply("value")])
        client = openai.OpenAI(api_key="test", http_client=ctx.http_client(model))
        first = client.chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": "go"}],
                                               tools=[{"type": "function", "function": {"name": "lookup", "parameters": {}}}])
        call = first.choices[0].message.tool_calls[0]
        second = client.chat.completions.create(model="gpt-4.1-mini", messages=[
            {"role": "user", "content": "go"}, first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "v"}])
        return second.choices[0].message.content

    case = tr.Case(name="sdk", invoke=invoke, expect_outcome=[expect.equals("value")],
                   expect_trajectory=[expect.called("lookup", args={"key": "k"}), expect.max_turns(2)])
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert trial.passed, trial.verdicts
    assert trial.trajectory.tool_results[0].content == "v"
    assert trial.cost_usd is not None  # priced from the observed usage


def test_anthropic_through_an_httpx2_client() -> None:
    async def invoke(ctx: tr.TrialContext) -> str:
        model = ctx.scripted([tr.reply("hello from claude")])
        client = anthropic.AsyncAnthropic(api_key="test", http_client=ctx.async_http_client(model, httpx2=True))
        message = await client.messages.create(model="claude-haiku-4-5", max_tokens=64,
                                               messages=[{"role": "user", "content": "hi"}])
        return message.content[0].text

    case = tr.Case(name="anthropic", invoke=invoke, expect_outcome=[expect.equals("hello from claude")],
                   expect_trajectory=[expect.max_turns(1)])
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert trial.passed, trial.verdicts
    assert trial.trajectory.turns[0].model == "claude-haiku-4-5"


def test_a_deterministic_case_that_reaches_for_the_network_fails_loudly() -> None:
    def invoke(ctx: tr.TrialContext) -> str:
        client = openai.OpenAI(api_key="sk-real-looking", max_retries=0)
        try:
            client.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "hi"}])
        except Exception:  # noqa: BLE001 - an agent that swallows the error must not pass
            pass
        return "fine"

    case = tr.Case(name="sneaky", invoke=invoke, expect_outcome=[expect.equals("fine")])
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert not trial.passed
    assert trial.error.type == "NetworkBlockedError"
    assert "api.openai.com:443" in trial.error.message and "live_canary" in trial.error.message


def test_teardown_is_guarded_too() -> None:
    import httpx

    def teardown(ctx: tr.TrialContext) -> None:
        try:
            httpx.get("https://example.com/cleanup")
        except Exception:  # noqa: BLE001
            pass

    case = tr.Case(name="tidy", invoke=lambda ctx: "ok", teardown=teardown, expect_outcome=[expect.equals("ok")])
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert not trial.passed and trial.outcome_passed  # the reach for the network fails the trial; the grade stands
    assert trial.teardown_error.type == "NetworkBlockedError" and "example.com:443" in trial.teardown_error.message


def test_a_context_made_by_hand_closes_its_clients_and_workdir() -> None:
    case = tr.Case(name="x", invoke=lambda ctx: 1, max_cost_usd=1)
    ctx = tr.TrialContext(case, 1)
    client = ctx.async_http_client(tr.ScriptedModel([tr.reply("hi")]))
    folder = ctx.workdir
    ctx.close()
    assert client.is_closed and not folder.exists()


def test_an_exhausted_script_fails_the_trial_with_that_reason_even_if_the_agent_swallows_it() -> None:
    def invoke(ctx: tr.TrialContext) -> str:
        client = openai.OpenAI(api_key="test", http_client=ctx.http_client(ctx.scripted([tr.reply("one")])), max_retries=0)
        for _ in range(2):
            try:
                client.chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": "hi"}])
            except openai.APIError:
                pass  # an agent that hides the second, failed call
        return "one"

    case = tr.Case(name="greedy", invoke=invoke, expect_outcome=[expect.equals("one")])
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert not trial.passed and trial.outcome_passed is True
    assert trial.error.phase == "model" and "script exhausted after 1 responses" in trial.error.message


def test_a_returned_run_with_its_own_trajectory_wins_over_the_observed_one() -> None:
    own = tr.Trajectory(turns=[tr.Turn(text="mine")])

    def invoke(ctx: tr.TrialContext) -> tr.Run:
        model = ctx.scripted([tr.reply("observed")])
        openai.OpenAI(api_key="t", http_client=ctx.http_client(model)).chat.completions.create(
            model="gpt-4.1-mini", messages=[{"role": "user", "content": "hi"}])
        return tr.Run(output="x", trajectory=own)

    trial = tr.evaluate([tr.Case(name="own", invoke=invoke, expect_outcome=[expect.equals("x")])]).cases[0].trials[0]
    assert trial.trajectory.final_text == "mine"


# -- ctx.cassette ------------------------------------------------------------------------------------------------

# A real streamed tool loop (3 turns, 4 tool calls) recorded by pydantic-ai against the OpenAI Chat Completions API.
RECORDED_CHAT_STREAM = (Path(__file__).resolve().parents[1] / "fixtures" / "provider-traffic" / "openai-chat-stream"
                        / "test_temporal__test_complex_agent_run.yaml")


def test_a_recorded_cassette_replays_through_ctx_cassette_and_its_trajectory_becomes_the_trials() -> None:
    fixture = RECORDED_CHAT_STREAM
    recorded_requests = [json.loads(exchange.request_body) for exchange in load_exchanges(fixture)]
    expected = tr.read_trajectory(fixture)
    assert len(expected.turns) == 3 and len(expected.tool_calls) == 4  # a real streamed tool loop

    def invoke(ctx: tr.TrialContext) -> str:
        # The agent sends what the recorded agent sent, through the official SDK, streaming.
        client = openai.OpenAI(api_key="test", http_client=ctx.http_client(ctx.cassette(fixture)), max_retries=0)
        text = ""
        for body in recorded_requests:
            text = "".join(chunk.choices[0].delta.content or "" for chunk in client.chat.completions.create(**body)
                           if chunk.choices)
        return text

    case = tr.Case(name="replayed", invoke=invoke, expect_outcome=[expect.equals(expected.final_text)],
                   expect_trajectory=[expect.max_turns(3)])
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert trial.passed, (trial.verdicts, trial.error)
    assert trial.trajectory == expected


def test_a_cassette_miss_fails_the_trial_with_the_cassettes_message_even_if_the_agent_swallows_it() -> None:
    fixture = RECORDED_CHAT_STREAM

    def invoke(ctx: tr.TrialContext) -> str:
        client = openai.OpenAI(api_key="test", http_client=ctx.http_client(ctx.cassette(fixture)), max_retries=0)
        try:
            client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "something new"}])
        except openai.APIError:
            pass  # an agent that hides the failed call
        return "fine"

    case = tr.Case(name="drifted", invoke=invoke, expect_outcome=[expect.equals("fine")])
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert not trial.passed and trial.outcome_passed is True
    assert trial.error.phase == "model"
    assert trial.error.message.startswith(f"cassette {fixture}: request 1 (POST /v1/chat/completions) matches no recording")
    assert "nearest unused recording is exchange 1: body." in trial.error.message
    assert 'mode="record"' in trial.error.message


# -- an error from inside an SDK keeps the user's frames ---------------------------------------------------------
def _ask_the_model(client: openai.OpenAI) -> str:
    answer = client.chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": "go"}])
    return answer.choices[0].message.content or ""


def _sdk_agent(steps: list[object]) -> object:
    def invoke(ctx: tr.TrialContext) -> str:
        client = openai.OpenAI(api_key="test", max_retries=0, http_client=ctx.http_client(ctx.scripted(steps)))
        _ask_the_model(client)
        return _ask_the_model(client)

    return invoke


def test_an_sdk_error_keeps_the_users_frames_in_the_stored_traceback_and_the_rendered_failure() -> None:
    from trialrun.render.text import case_failure_text

    cases = [
        tr.Case(name="exhausted", invoke=_sdk_agent([tr.reply("one")]), expect_outcome=[expect.contains("two")]),
        tr.Case(name="rate limited", invoke=_sdk_agent([tr.reply("one"), tr.fail(429)]),
                expect_outcome=[expect.contains("two")]),
    ]
    report = tr.evaluate(cases)
    this_file = Path(__file__).name
    for case, error_type in zip(report.cases, ("InternalServerError", "RateLimitError")):
        error = case.trials[0].error
        assert error is not None and error.type == error_type and error.phase == "invoke"
        # The whole traceback: the test's own frames, the SDK's frames below them, up to the raise.
        assert f'{this_file}", line' in error.traceback
        assert "in invoke\n" in error.traceback and "in _ask_the_model\n" in error.traceback
        assert "openai/_base_client.py" in error.traceback.replace("\\", "/")
        assert error.traceback.rstrip().endswith(f"{error_type}: {error.message}")

        lines = case_failure_text(case, width=200).splitlines()
        start = lines.index("      traceback (most recent call last):")
        shown = [line.strip() for line in lines[start + 1:]]
        # The user's frames (invoke, then its helper), then the one SDK frame that raised; no runner frames.
        assert [line.split(", in ")[-1] for line in shown if line.startswith('File "')] == ["invoke", "_ask_the_model", "request"]
        assert shown[0].startswith('File "') and this_file in shown[0]
        assert shown[1] == "return _ask_the_model(client)"  # the second call is the one that failed
        assert shown[4].startswith('File "openai/_base_client.py", line ')  # the SDK's path, shortened
        assert "runner.py" not in "\n".join(lines)


def test_a_huge_traceback_keeps_its_head_and_its_tail() -> None:
    def deep(n: int) -> None:
        if n:
            deep(n - 1)
        raise ValueError("end of the story " + "x" * 30_000 + " THE END")

    def invoke(ctx: tr.TrialContext) -> None:
        deep(3)

    error = tr.evaluate([tr.Case(name="huge", invoke=invoke, expect_outcome=[expect.contains("x")])]).cases[0].trials[0].error
    assert error is not None
    text = error.traceback
    assert len(text) < 20_200
    assert text.startswith("Traceback (most recent call last):\n")
    assert f'{Path(__file__).name}", line' in text.split("characters of the traceback omitted")[0]  # the head
    assert text.count("characters of the traceback omitted") == 1
    assert text.rstrip().endswith("x THE END")


def test_a_transport_behind_another_is_not_counted_twice(tmp_path: Path) -> None:
    def invoke(ctx: tr.TrialContext) -> str:
        upstream = ctx.scripted([tr.reply("Hello.", usage=tr.Usage(10, 2))])
        recorder = ctx.cassette(tmp_path / "rec.yaml", mode="record", upstream=upstream)
        with ctx.http_client(recorder) as client:
            client.post("https://api.openai.com/v1/chat/completions",
                        json={"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hi"}]})
        return "done"

    case = tr.Case(name="chained", invoke=invoke, expect_trajectory=[expect.max_turns(1)])
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert trial.passed, trial.verdicts
    assert len(trial.trajectory.turns) == 1 and trial.usage == tr.Usage(10, 2)
