"""The loop's details: which provider errors are retried, time limits (what None and 0 mean, async tools under the
sync driver), and prompt-cache writes priced at their own rate."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import httpx
import pytest
from pydantic import TypeAdapter

import trialrun as tr
from trialrun.agent.pricing import Price
from trialrun.models._cassette_io import load_exchanges
from trialrun.wire import decode_trajectory


@tr.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _reply(text: str = "ok") -> dict:
    return {"model": "gpt-4.1-mini", "usage": {"prompt_tokens": 10, "completion_tokens": 2},
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}


class _Answers:
    """A transport answering (status, headers, body) in turn, counting the requests."""

    def __init__(self, *answers: tuple[int, dict[str, str], dict]) -> None:
        self.answers = list(answers)
        self.calls = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        status, headers, body = self.answers.pop(0)
        return httpx.Response(status, headers=headers, json=body)


_ERROR = {"error": {"message": "nope", "type": "x"}}


@pytest.mark.parametrize(
    "first, retried",
    [
        ((429, {"x-should-retry": "false"}, _ERROR), False),  # the provider said no: not even a 429 is retried
        ((400, {"x-should-retry": "true"}, _ERROR), True),  # the provider said yes: even a 400 is retried
        ((503, {}, _ERROR), True),
        ((501, {}, _ERROR), True),  # every 5xx, as the SDKs do
        ((404, {}, _ERROR), False),
    ],
)
def test_retries_follow_the_provider(first: tuple, retried: bool) -> None:
    answers = _Answers(first, (200, {}, _reply("done")))
    run = tr.Agent(httpx.MockTransport(answers), max_retry_wait=0.0).run("hi")
    assert answers.calls == (2 if retried else 1)
    if retried:
        assert run.status == "completed" and run.output == "done"
    else:
        assert run.status == "error" and run.error == f"provider answered HTTP {first[0]}: nope"


def test_an_exhausted_script_is_not_retried() -> None:
    model = tr.ScriptedModel([tr.tool_call("add", a=1, b=2)])
    started = time.monotonic()
    run = tr.Agent(model, tools=[add], max_retries=3).run("hi")
    assert time.monotonic() - started < 0.4  # no backoff sleeps (0.5 s and up)
    assert model.calls == 2  # the tool call, then one refusal: never asked again
    assert run.status == "error" and "script exhausted after 1 responses" in run.error


def test_an_async_tool_timing_out_under_the_sync_driver_says_so() -> None:
    @tr.tool
    async def slow() -> str:
        """Take a while."""
        await asyncio.sleep(5)
        return "late"

    model = tr.ScriptedModel([tr.tool_call("slow"), tr.reply("ok")])
    started = time.monotonic()
    run = tr.Agent(model, tools=[slow], tool_timeout_s=0.1).run("hi")
    assert time.monotonic() - started < 2
    [result] = run.trajectory.tool_results
    assert (result.content, result.is_error) == ("slow timed out after 0.1s", True)


def test_a_tools_own_timeout_error_is_not_reported_as_its_time_limit() -> None:
    @tr.tool
    def flaky() -> str:
        """Fail with a TimeoutError of its own."""
        raise TimeoutError("upstream took too long")

    for tool_timeout_s in (None, 5.0):
        model = tr.ScriptedModel([tr.tool_call("flaky"), tr.reply("ok")])
        for driver in ("run", "arun"):
            agent = tr.Agent(model, tools=[flaky], tool_timeout_s=tool_timeout_s)
            run = agent.run("hi") if driver == "run" else asyncio.run(agent.arun("hi"))
            [result] = run.trajectory.tool_results
            assert result.content == "flaky raised TimeoutError: upstream took too long", (tool_timeout_s, driver)
            model = tr.ScriptedModel([tr.tool_call("flaky"), tr.reply("ok")])


@pytest.mark.parametrize("value", [0, -1, 0.0, float("nan"), float("inf"), True, "30"])
def test_a_time_limit_must_be_positive_or_none(value: object) -> None:
    with pytest.raises(ValueError, match=r"Agent tool_timeout_s must be a positive number of seconds, or None for no limit"):
        tr.Agent(tr.ScriptedModel([tr.reply("x")]), tool_timeout_s=value)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"timeout_s of tool add must be a positive number"):
        tr.Tool(add.fn, timeout_s=value)  # type: ignore[arg-type]


def test_no_time_limit_means_none() -> None:
    @tr.tool
    def nap() -> str:
        """Sleep a little."""
        time.sleep(0.2)
        return "rested"

    run = tr.Agent(tr.ScriptedModel([tr.tool_call("nap"), tr.reply("ok")]), tools=[nap], tool_timeout_s=None).run("hi")
    assert run.trajectory.tool_results[0].content == "rested"


def test_a_negative_cost_ceiling_is_refused() -> None:
    with pytest.raises(ValueError, match="max_cost_usd must be a non-negative number"):
        tr.Agent(tr.ScriptedModel([tr.reply("x")]), max_cost_usd=-1)


# -- prompt-cache writes ------------------------------------------------------------------------------------------


def test_cache_writes_are_priced_at_their_own_rate() -> None:
    price = Price(input=3.0, output=15.0, cached_input=0.30, cache_write_input=3.75)
    usage = tr.Usage(1_000_000, 0, cached_input_tokens=200_000, cache_write_input_tokens=300_000)
    assert price.cost(usage) == pytest.approx(0.5 * 3.0 + 0.2 * 0.30 + 0.3 * 3.75)
    assert Price(3.0, 15.0).cost(usage) == pytest.approx(3.0)  # no write rate: the input rate
    assert tr.prices.get("claude-sonnet-4-5").cache_write_input == pytest.approx(1.25 * 3.0)
    assert tr.prices.get("gpt-4.1").cache_write_input is None  # OpenAI charges no cache writes


def test_usage_sums_cache_writes_and_old_usage_still_loads() -> None:
    total = tr.Usage(10, 1, 2, 3) + tr.Usage(5, 1, 0, 4)
    assert (total.input_tokens, total.cached_input_tokens, total.cache_write_input_tokens) == (15, 2, 7)
    old = TypeAdapter(tr.Usage).validate_python({"input_tokens": 10, "output_tokens": 1, "cached_input_tokens": 2})
    assert old.cache_write_input_tokens == 0


def test_price_files_and_set_take_a_cache_write_rate(tmp_path: Path) -> None:
    table = tr.agent.PriceTable()
    (tmp_path / "p.json").write_text(json.dumps({"acme": {"input": 1, "output": 2, "cache_write_input": 1.5}}))
    table.load(tmp_path / "p.json")
    assert table.get("acme") == Price(1.0, 2.0, None, 1.5)
    with pytest.raises(ValueError, match="cache_write_input for 'x' must be a non-negative number"):
        table.set("x", input=1, output=1, cache_write_input=-2)


def test_the_anthropic_codec_reads_cache_writes(provider_traffic: Path) -> None:
    exchanges = load_exchanges(provider_traffic / "anthropic" / (
        "test_code_execution_files_vcr__test_anthropic_code_execution_files_cache_prefix_stable_messages-sonnet-4-6_.yaml"))
    first = decode_trajectory(exchanges).turns[0].usage
    # recorded: input_tokens 10, cache_creation_input_tokens 4513, cache_read_input_tokens 4332
    assert (first.input_tokens, first.cached_input_tokens, first.cache_write_input_tokens) == (10 + 4513 + 4332, 4332, 4513)


def test_the_agent_prices_anthropic_cache_writes() -> None:
    body = {"type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "stop_reason": "end_turn",
            "content": [{"type": "text", "text": "hi"}],
            "usage": {"input_tokens": 1000, "cache_creation_input_tokens": 100_000, "cache_read_input_tokens": 0,
                      "output_tokens": 10}}
    model = httpx.MockTransport(lambda request: httpx.Response(200, json=body))
    run = tr.Agent(model, api="anthropic", model_name="claude-sonnet-4-5").run("hi")
    assert run.cost_usd == pytest.approx((1000 * 3.0 + 100_000 * 3.75 + 10 * 15.0) / 1e6)
