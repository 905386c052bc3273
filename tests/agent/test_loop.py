"""The reference agent's loop: tools, policy, limits, provider errors, cost; sync and async alike."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest

import trialrun as tr

APIS = ["openai-chat", "openai-responses", "anthropic", "gemini"]


@tr.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tr.tool
def boom(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"exploded: {reason}")


@tr.tool
def nap(seconds: float) -> str:
    """Sleep a while."""
    time.sleep(seconds)
    return "rested"


def agent(script, api: str = "openai-chat", **kwargs) -> tuple[tr.Agent, tr.ScriptedModel]:
    model = tr.ScriptedModel(script)
    kwargs.setdefault("tools", [add, boom, nap])
    return tr.Agent(model, api=api, model_name="gpt-4.1-mini", **kwargs), model


def run_both(make, prompt: str = "go") -> list[tr.Run]:
    """The same scenario through run() and arun(): both drivers must agree."""
    a1, _ = make()
    a2, _ = make()
    return [a1.run(prompt), asyncio.run(a2.arun(prompt))]


def _shape(trajectory: tr.Trajectory) -> list:
    return [
        (t.text, [(c.name, c.arguments) for c in t.tool_calls], [(r.content, r.is_error) for r in t.tool_results], t.usage)
        for t in trajectory.turns
    ]


@pytest.mark.parametrize("api", APIS)
def test_two_step_loop_agrees_with_the_wire(api: str) -> None:
    script = [
        tr.tool_calls(tr.tool_call("add", a=2, b=3), tr.tool_call("add", a=10, b=-1), usage=tr.Usage(50, 12)),
        tr.reply("2+3=5 and 10-1=9", usage=tr.Usage(80, 9)),
    ]
    for driver in ("run", "arun"):
        a, model = agent(script, api)
        run = a.run("add things") if driver == "run" else asyncio.run(a.arun("add things"))
        assert run.status == "completed" and run.output == "2+3=5 and 10-1=9"
        assert [(c.name, c.arguments) for c in run.trajectory.tool_calls] == [("add", {"a": 2, "b": 3}), ("add", {"a": 10, "b": -1})]
        assert [r.content for r in run.trajectory.tool_results] == ["5", "9"]
        assert _shape(run.trajectory) == _shape(model.trajectory())
        assert run.trajectory.prompt == model.trajectory().prompt == "add things"  # what the agent was asked
        assert run.usage == tr.Usage(130, 21)
        assert run.cost_usd == pytest.approx((130 * 0.40 + 21 * 1.60) / 1e6)


def test_the_request_carries_tool_schemas_and_results() -> None:
    seen: list[tr.wire.ModelRequest] = []

    def model(request: tr.wire.ModelRequest) -> tr.wire.Step:
        seen.append(request)
        return tr.tool_call("add", a=1, b=1) if len(seen) == 1 else tr.reply("2")

    a, _ = agent(model, system="Be brief.")
    a.run("1+1?")
    first, second = seen
    assert first.system == "Be brief." and first.last_user_text == "1+1?"
    assert [t.name for t in first.tools] == ["add", "boom", "nap"]
    assert first.tools[0].parameters["required"] == ["a", "b"]
    assert [r.content for r in second.last_tool_results] == ["2"]


@pytest.mark.parametrize(
    "step, content",
    [
        (tr.tool_call("add", a="two", b=3), "invalid arguments for add: a: Input should be a valid integer"),
        (tr.tool_call("add", a=1), "invalid arguments for add: b: Field required"),
        (tr.tool_call("add", a=1, b=2, c=3), "invalid arguments for add: c: Extra inputs are not permitted"),
        (tr.tool_call("boom", reason="x"), "boom raised RuntimeError: exploded: x"),
        (tr.tool_call("teleport", to="mars"), "unknown tool 'teleport'; available tools: add, boom, nap"),
    ],
)
def test_model_mistakes_become_error_results_not_crashes(step, content: str) -> None:
    for run in run_both(lambda: agent([step, tr.reply("sorry")])):
        assert run.status == "completed" and run.output == "sorry"
        [result] = run.trajectory.tool_results
        assert result.is_error and result.content.startswith(content), result.content


def test_tool_timeout() -> None:
    for run in run_both(lambda: agent([tr.tool_call("nap", seconds=2), tr.reply("ok")], tool_timeout_s=0.05)):
        [result] = run.trajectory.tool_results
        assert result.is_error and result.content == "nap timed out after 0.05s"


def test_parallel_calls_run_concurrently_in_arun() -> None:
    a, _ = agent([tr.tool_calls(*[tr.tool_call("nap", seconds=0.2) for _ in range(4)]), tr.reply("done")])
    started = time.perf_counter()
    run = asyncio.run(a.arun("nap"))
    assert time.perf_counter() - started < 0.6
    assert [r.content for r in run.trajectory.tool_results] == ["rested"] * 4


def test_max_turns_ends_the_loop_and_keeps_the_last_results() -> None:
    for run in run_both(lambda: agent(lambda request: tr.tool_call("add", a=1, b=1), max_turns=3)):
        assert run.status == "max_turns" and run.error == "stopped after 3 turns"
        assert len(run.trajectory.turns) == 3
        assert run.trajectory.turns[-1].tool_results[0].content == "2"  # results after the last model call


def test_cost_limit() -> None:
    a, _ = agent(lambda request: tr.tool_calls(tr.tool_call("add", a=1, b=1), usage=tr.Usage(100_000, 1_000)), max_cost_usd=0.1)
    run = a.run("spend")
    assert run.status == "cost_limit"
    per_turn = (100_000 * 0.40 + 1_000 * 1.60) / 1e6
    assert len(run.trajectory.turns) == 3 and run.cost_usd == pytest.approx(3 * per_turn)


def test_unknown_model_has_no_cost_and_a_ceiling_says_why() -> None:
    model = tr.ScriptedModel([tr.reply("hi", usage=tr.Usage(10, 2))])
    run = tr.Agent(model, model_name="acme-llm-7").run("hi")
    assert run.status == "completed" and run.cost_usd is None
    [verdict] = tr.check([tr.expect.max_cost_usd(0.01)], run)
    assert not verdict.passed and "no price is known for model 'acme-llm-7'" in verdict.reason


def test_an_agent_ceiling_on_an_unpriced_model_ends_the_run_before_spending() -> None:
    for driver in ("run", "arun"):
        model = tr.ScriptedModel(lambda request: tr.tool_call("add", a=1, b=1))
        agent = tr.Agent(model, model_name="acme-llm-7", tools=[add], max_cost_usd=0.01)
        run = agent.run("hi") if driver == "run" else asyncio.run(agent.arun("hi"))
        assert run.status == "error" and model.calls == 0  # not silently run to max_turns
        assert run.error.startswith("max_cost_usd=0.01 cannot be enforced for model 'acme-llm-7': no price is known")


@pytest.mark.parametrize("answering_as, usage, why", [
    ("acme-llm-7", {"prompt_tokens": 10, "completion_tokens": 2}, "cannot be enforced for model 'acme-llm-7'"),
    ("gpt-4.1-mini", None, "cannot be enforced: the response to model call 1 reported no token usage"),
])
def test_an_agent_ceiling_ends_the_run_when_a_response_cannot_be_priced(answering_as, usage, why) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 1}'}}
    body = {"model": answering_as, "choices": [{"index": 0, "finish_reason": "tool_calls",
                                                "message": {"role": "assistant", "content": None, "tool_calls": [call]}}]}
    if usage is not None:
        body["usage"] = usage
    model = httpx.MockTransport(lambda request: httpx.Response(200, json=body))
    run = tr.Agent(model, model_name="gpt-4.1-mini", tools=[add], max_cost_usd=1.0).run("hi")
    assert run.status == "error" and why in run.error, run.error
    assert len(run.trajectory.turns) == 1 and run.trajectory.tool_results == []  # stopped before running tools


def test_policy_deny_records_a_denial_and_the_model_reads_a_refusal(tmp_path: Path) -> None:
    policy = tr.ToolPolicy(deny_commands=["rm -rf"])
    script = [tr.tool_call("run_command", command="sudo rm -fr ~"), tr.reply("I won't do that.")]
    for run in run_both(lambda: agent(script, tools=tr.shell_tools(tmp_path), policy=policy)):
        [denial] = run.trajectory.denials
        assert (denial.tool, denial.rule) == ("run_command", "deny_commands: rm -rf")
        [result] = run.trajectory.tool_results
        assert result.is_error and result.content.startswith("Refused by policy (deny_commands: rm -rf)")
        assert run.trajectory.commands == []  # denied commands never ran


def test_policy_stop_ends_the_run(tmp_path: Path) -> None:
    policy = tr.ToolPolicy(stop_commands=["curl | sh"])
    run, _ = run_both(lambda: agent([tr.tool_call("run_command", command="curl x | sh"), tr.reply("never")], tools=tr.shell_tools(tmp_path), policy=policy))
    assert run.status == "stopped_by_policy" and "curl" in run.error
    assert len(run.trajectory.turns) == 1 and run.trajectory.denials[0].rule == "stop_commands: curl | sh"


def test_commands_run_are_recorded(tmp_path: Path) -> None:
    script = [tr.tool_call("run_command", command="echo hi && ls"), tr.reply("done")]
    run = agent(script, tools=tr.shell_tools(tmp_path))[0].run("go")
    assert run.trajectory.commands == ["echo hi && ls"]
    assert run.trajectory.tool_results[0].content.startswith("exit code: 0\nhi")


def test_429_then_success() -> None:
    for run in run_both(lambda: agent([tr.fail(status=429, retry_after=0.01), tr.reply("ok")])):
        assert run.status == "completed" and run.output == "ok"


@pytest.mark.parametrize("status, retried", [(400, False), (500, True), (401, False)])
def test_provider_errors_end_the_run_with_the_message(status: int, retried: bool) -> None:
    a, model = agent([tr.fail(status=status, message="nope, said the provider")] * 3, max_retries=2, max_retry_wait=0.01)
    run = a.run("go")
    assert run.status == "error"
    assert run.error == f"provider answered HTTP {status}: nope, said the provider"
    assert model.calls == (3 if retried else 1)


def test_unreachable_model_is_an_error_run_not_a_crash() -> None:
    import httpx

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    run = tr.Agent(httpx.MockTransport(refuse)).run("hi")
    assert run.status == "error" and "could not reach the model: ConnectError: connection refused" in run.error


def test_tools_must_have_unique_names() -> None:
    with pytest.raises(ValueError, match="two tools are named 'add'"):
        tr.Agent(tr.ScriptedModel([]), tools=[add, add])
