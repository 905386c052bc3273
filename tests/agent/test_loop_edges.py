"""The reference agent at its edges: a model's malformed arguments, commands that never ran, tool timeouts under
load, commands that outlive their timeout, and responses that report no usage."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import TypeAdapter

import trialrun as tr

# -- a model's malformed tool-call arguments: an error result the model reads, never a crash ----------------------

BAD_ARGUMENTS = [
    ("not json", "invalid arguments for run_command: not valid JSON (Expecting value): not json"),
    ('{"command": "rm -rf /"', "invalid arguments for run_command: not valid JSON (Expecting ',' delimiter): "),
    ("null", "invalid arguments for run_command: JSON null, not an object: null"),
    ('["a"]', 'invalid arguments for run_command: a JSON array, not an object: ["a"]'),
]

_USAGE = {"prompt_tokens": 10, "completion_tokens": 5}


def _chat_call(raw: str) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "run_command", "arguments": raw}}
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                         "finish_reason": "tool_calls"}], "usage": _USAGE, "model": "gpt-4.1-mini"}


def _chat_reply(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": _USAGE, "model": "gpt-4.1-mini"}


def _responses_call(raw: str) -> dict[str, Any]:
    item = {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "run_command", "arguments": raw,
            "status": "completed"}
    return {"id": "resp_1", "status": "completed", "model": "gpt-4.1-mini", "output": [item],
            "usage": {"input_tokens": 10, "output_tokens": 5}}


def _responses_reply(text: str) -> dict[str, Any]:
    message = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": text, "annotations": []}]}
    return {"id": "resp_2", "status": "completed", "model": "gpt-4.1-mini", "output": [message],
            "usage": {"input_tokens": 10, "output_tokens": 5}}


def _anthropic_call(value: Any) -> dict[str, Any]:
    block = {"type": "tool_use", "id": "c1", "name": "run_command", "input": value}
    return {"type": "message", "role": "assistant", "model": "claude-haiku-4-5", "content": [block],
            "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}}


def _anthropic_reply(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "model": "claude-haiku-4-5",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 5}}


class _RawModel:
    """Answers each request with the next raw JSON body, and keeps the request bodies the agent sent."""

    def __init__(self, *bodies: dict[str, Any]) -> None:
        self.bodies = list(bodies)
        self.sent: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(json.loads(request.content))
        return httpx.Response(200, json=self.bodies.pop(0))

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)


class _Ran:
    """A run_command stand-in that records every command it is actually asked to run."""

    def __init__(self) -> None:
        self.commands: list[str] = []
        self.tool = tr.Tool(self.run_command)

    def run_command(self, command: str) -> str:
        """Run a shell command."""
        self.commands.append(command)
        return "exit code: 0\n"


def _run_with_bad_arguments(api: str, first: dict[str, Any], reply: dict[str, Any], model_name: str) -> tuple[tr.Run, _RawModel, _Ran]:
    model, ran = _RawModel(first, reply), _Ran()
    run = tr.Agent(model.transport(), api=api, model_name=model_name, tools=[ran.tool]).run("clean up")
    return run, model, ran


def _assert_answered_with_an_error(run: tr.Run, ran: _Ran, raw: str, message: str) -> None:
    assert run.status == "completed" and run.output == "sorry", run.error
    [call] = run.trajectory.tool_calls  # the call is recorded as the model made it
    assert (call.name, call.id, call.arguments, call.raw_arguments) == ("run_command", "c1", {}, raw)
    [result] = run.trajectory.tool_results
    assert result.call_id == "c1" and result.is_error
    assert result.content.startswith(message), result.content
    assert ran.commands == [] and run.trajectory.commands == []  # nothing ran


@pytest.mark.parametrize(("raw", "message"), BAD_ARGUMENTS)
def test_openai_chat_bad_arguments_become_an_error_result(raw: str, message: str) -> None:
    run, model, ran = _run_with_bad_arguments("openai-chat", _chat_call(raw), _chat_reply("sorry"), "gpt-4.1-mini")
    _assert_answered_with_an_error(run, ran, raw, message)
    # The model reads the error: the next request carries it as the result of its call.
    [tool_message] = [m for m in model.sent[1]["messages"] if m["role"] == "tool"]
    assert tool_message["tool_call_id"] == "c1" and tool_message["content"].startswith(message)
    assert run.cost_usd is not None  # a turn with a bad call is still a priced turn


def test_never_ran_counts_a_garbled_command_call_as_an_attempt() -> None:
    """A command call cut off mid-arguments never ran, but what it tried cannot be ruled out: never_ran fails closed."""
    raw = '{"command": "rm -rf /"'
    run, _, _ = _run_with_bad_arguments("openai-chat", _chat_call(raw), _chat_reply("sorry"), "gpt-4.1-mini")
    [verdict] = tr.check([tr.expect.never_ran("rm -rf")], run)
    assert not verdict.passed
    assert verdict.reason.startswith('could not be read (the command tool was given `{"command": "rm -rf /"`')
    assert verdict.reason.endswith("(fail closed) via run_command")


@pytest.mark.parametrize(("raw", "message"), BAD_ARGUMENTS)
def test_openai_responses_bad_arguments_become_an_error_result(raw: str, message: str) -> None:
    run, model, ran = _run_with_bad_arguments("openai-responses", _responses_call(raw), _responses_reply("sorry"), "gpt-4.1-mini")
    _assert_answered_with_an_error(run, ran, raw, message)
    [output] = [item for item in model.sent[1]["input"] if item.get("type") == "function_call_output"]
    assert output["call_id"] == "c1" and output["output"].startswith(message)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (["rm", "-rf", "/"], 'invalid arguments for run_command: a JSON array, not an object: ["rm", "-rf", "/"]'),
        ("rm -rf /", "invalid arguments for run_command: not valid JSON"),
        (7, "invalid arguments for run_command: a JSON number, not an object: 7"),
    ],
)
def test_anthropic_input_that_is_not_an_object_becomes_an_error_result(value: Any, message: str) -> None:
    run, model, ran = _run_with_bad_arguments("anthropic", _anthropic_call(value), _anthropic_reply("sorry"), "claude-haiku-4-5")
    raw = value if isinstance(value, str) else json.dumps(value)
    _assert_answered_with_an_error(run, ran, raw, message)
    [block] = [b for m in model.sent[1]["messages"] if isinstance(m["content"], list) for b in m["content"]
               if b.get("type") == "tool_result"]
    assert block["tool_use_id"] == "c1" and block["is_error"] is True


def test_bad_arguments_in_arun_too() -> None:
    model, ran = _RawModel(_chat_call("not json"), _chat_reply("sorry")), _Ran()
    run = asyncio.run(tr.Agent(model.transport(), tools=[ran.tool]).arun("go"))
    _assert_answered_with_an_error(run, ran, "not json", BAD_ARGUMENTS[0][1])


def test_a_call_with_bad_arguments_survives_the_results_file() -> None:
    adapter = TypeAdapter(tr.Trajectory)
    trajectory = tr.Trajectory(turns=[tr.Turn(tool_calls=[tr.ToolCall("run_command", {}, "c1", raw_arguments="nope")])])
    again = adapter.validate_json(adapter.dump_json(trajectory))
    assert again.tool_calls[0].raw_arguments == "nope" and again.tool_calls[0].arguments == {}
    # ... and a trajectory written before the field existed still loads, with no raw text.
    old = b'{"turns": [{"tool_calls": [{"name": "read_file", "arguments": {"path": "a"}, "id": "c1"}]}]}'
    assert adapter.validate_json(old).tool_calls[0].raw_arguments is None


# -- trajectory.commands: only what ran ---------------------------------------------------------------------------


def _commands_agent(script: list[Any], **kwargs: Any) -> tuple[tr.Agent, _Ran]:
    ran = _Ran()
    return tr.Agent(tr.ScriptedModel(script), tools=[ran.tool], **kwargs), ran


def test_a_call_that_fails_validation_records_no_command() -> None:
    script = [tr.tool_call("run_command", command="touch ran.txt", cwd="/tmp"), tr.reply("ok")]
    for driver in ("run", "arun"):
        agent, ran = _commands_agent(script)
        run = agent.run("go") if driver == "run" else asyncio.run(agent.arun("go"))
        [result] = run.trajectory.tool_results
        assert result.is_error and "cwd" in result.content
        assert ran.commands == [] and run.trajectory.commands == []


def test_a_batch_stopped_by_policy_records_none_of_its_commands() -> None:
    script = [
        tr.tool_calls(tr.tool_call("run_command", command="touch ran.txt"), tr.tool_call("run_command", command="rm -rf /x")),
        tr.reply("never"),
    ]
    for driver in ("run", "arun"):
        agent, ran = _commands_agent(script, policy=tr.ToolPolicy(stop_commands=["rm -rf"]))
        run = agent.run("go") if driver == "run" else asyncio.run(agent.arun("go"))
        assert run.status == "stopped_by_policy"
        assert ran.commands == [] and run.trajectory.commands == []


def test_commands_that_ran_are_recorded_and_the_rest_are_not() -> None:
    batch = tr.tool_calls(
        tr.tool_call("run_command", command="echo one"),
        tr.tool_call("run_command", command="sudo rm -fr /"),  # denied
        tr.tool_call("run_command", comand="typo"),  # invalid
        tr.tool_call("run_command", command="echo two"),
    )
    agent, ran = _commands_agent([batch, tr.reply("done")], policy=tr.ToolPolicy(deny_commands=["rm -rf"]))
    run = agent.run("go")
    assert ran.commands == ["echo one", "echo two"]
    assert run.trajectory.commands == ran.commands
    assert [r.is_error for r in run.trajectory.tool_results] == [False, True, True, False]


# -- tool timeouts count from when the tool starts ----------------------------------------------------------------


def _slow_tool(seconds: float) -> tr.Tool:
    def slow_step(label: str) -> str:
        """Take a while."""
        time.sleep(seconds)
        return f"done {label}"

    return tr.Tool(slow_step)


def test_no_spurious_timeouts_when_many_sync_agents_run_at_once() -> None:
    tool = _slow_tool(0.2)
    script = [tr.tool_call("slow_step", label="x"), tr.reply("ok")]
    runs: list[tr.Run] = []
    lock = threading.Lock()

    def trial() -> None:
        run = tr.Agent(tr.ScriptedModel(script), tools=[tool], tool_timeout_s=0.6).run("go")
        with lock:
            runs.append(run)

    threads = [threading.Thread(target=trial) for _ in range(40)]  # far more than any worker pool would hold
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    contents = [run.trajectory.tool_results[0].content for run in runs]
    assert len(runs) == 40 and contents == ["done x"] * 40


def test_no_spurious_timeouts_when_many_async_agents_run_at_once() -> None:
    tool = _slow_tool(0.2)
    script = [tr.tool_call("slow_step", label="y"), tr.reply("ok")]

    async def main() -> list[tr.Run]:
        agents = [tr.Agent(tr.ScriptedModel(script), tools=[tool], tool_timeout_s=0.6) for _ in range(40)]
        return list(await asyncio.gather(*(agent.arun("go") for agent in agents)))

    contents = [run.trajectory.tool_results[0].content for run in asyncio.run(main())]
    assert contents == ["done y"] * 40


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_a_slow_tool_still_times_out_and_others_are_not_held_up(driver: str) -> None:
    slow, quick = _slow_tool(1.0), tr.Tool(lambda: "quick", name="quick")
    script = [tr.tool_calls(tr.tool_call("slow_step", label="z"), tr.tool_call("quick")), tr.reply("ok")]
    agent = tr.Agent(tr.ScriptedModel(script), tools=[slow, quick], tool_timeout_s=0.1)
    started = time.perf_counter()
    run = agent.run("go") if driver == "run" else asyncio.run(agent.arun("go"))
    assert time.perf_counter() - started < 0.9  # the abandoned tool does not hold up the run
    assert [(r.content, r.is_error) for r in run.trajectory.tool_results] == [
        ("slow_step timed out after 0.1s", True), ("quick", False)]


@pytest.mark.parametrize("driver", ["run", "arun"])
@pytest.mark.parametrize("blocked_in", ["time.sleep", "socket recv", "Python loop"])
def test_a_tool_that_was_quick_many_times_is_still_abandoned_at_its_limit(driver: str, blocked_in: str) -> None:
    """The time limit holds on every call, not only on tools that were slow before: running a tool inline on the
    agent's thread after quick calls (to spare the thread hop) would leave the loop stuck under the 31st call."""
    import socket

    ours, theirs = socket.socketpair()  # nothing is ever sent: a recv on it blocks
    stop = threading.Event()

    def step(n: int) -> str:
        """Return at once, except for call 30, which blocks for 3 s (far past its 0.3 s limit)."""
        if n < 30:
            return f"quick {n}"
        if blocked_in == "time.sleep":
            time.sleep(3)
        elif blocked_in == "socket recv":
            ours.settimeout(3)
            try:
                ours.recv(1)
            except OSError:  # timed out, or closed when the test ended
                pass
        else:
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline and not stop.is_set():
                pass
        return "late"

    script = [tr.tool_calls(*[tr.tool_call("step", n=i) for i in range(30)]), tr.tool_call("step", n=30),
              tr.reply("went on")]
    agent = tr.Agent(tr.ScriptedModel(script), tools=[tr.Tool(step)], tool_timeout_s=0.3)
    started = time.monotonic()
    try:
        run = agent.run("go") if driver == "run" else asyncio.run(agent.arun("go"))
        took = time.monotonic() - started
    finally:
        stop.set()
        theirs.close()
        ours.close()
    results = [(r.content, r.is_error) for r in run.trajectory.tool_results]
    assert results[:30] == [(f"quick {i}", False) for i in range(30)]
    assert results[30:] == [("step timed out after 0.3s", True)] and run.output == "went on"
    assert took < 2.0, took  # the loop went on at the limit, not when the blocked call returned

def test_timed_sync_tools_see_context_variables_and_raise_their_own_errors() -> None:
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")

    def peek() -> str:
        """Read a context variable."""
        return var.get()

    def fail() -> str:
        """Fail."""
        raise tr.ToolError("no luck")

    var.set("set")
    assert tr.Tool(peek).run_sync({}, timeout_s=5) == "set"
    assert asyncio.run(tr.Tool(peek).run({}, timeout_s=5)) == "set"
    with pytest.raises(tr.ToolError, match="no luck"):
        tr.Tool(fail).run_sync({}, timeout_s=5)
    with pytest.raises(tr.ToolError, match="no luck"):
        asyncio.run(tr.Tool(fail).run({}, timeout_s=5))


# -- run_command: a timeout stops the whole command and keeps its output ------------------------------------------


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    status = Path(f"/proc/{pid}/status")
    try:
        return "State:\tZ" in status.read_text()  # a zombie no one reaped yet has stopped running
    except OSError:
        return True


def test_run_command_timeout_kills_the_children_and_keeps_the_partial_output(tmp_path: Path) -> None:
    run_command = {t.name: t for t in tr.shell_tools(tmp_path, timeout_s=0.5)}["run_command"]
    with pytest.raises(tr.ToolError) as caught:
        run_command.run_sync({"command": "sleep 987 & echo $! > child.pid; echo partial-output; echo oops >&2; wait"})
    message = str(caught.value)
    assert message.startswith("command timed out after 0.5s; it was stopped; partial output:\n")
    assert "partial-output\noops" in message
    pid = int((tmp_path / "child.pid").read_text())
    deadline = time.monotonic() + 3
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _gone(pid), f"the background child {pid} outlived the timeout"


def test_run_command_timeout_with_no_output_says_so(tmp_path: Path) -> None:
    run_command = {t.name: t for t in tr.shell_tools(tmp_path, timeout_s=0.2)}["run_command"]
    with pytest.raises(tr.ToolError, match=r"^command timed out after 0.2s; it was stopped \(no output before that\)$"):
        run_command.run_sync({"command": "sleep 5"})


def test_run_command_decodes_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    run_command = {t.name: t for t in tr.shell_tools(tmp_path)}["run_command"]
    assert run_command.run_sync({"command": "printf 'a\\377b'"}) == "exit code: 0\na\ufffdb"


# -- unknown usage is unknown cost --------------------------------------------------------------------------------


def test_a_response_without_usage_has_an_unknown_cost() -> None:
    body = _chat_reply("hi")
    del body["usage"]
    run = tr.Agent(_RawModel(body).transport(), model_name="gpt-4.1-mini", max_cost_usd=0.0).run("hi")
    assert run.status == "completed" and run.usage is None
    assert run.cost_usd is None  # not 0.0, which would pass any ceiling
    assert run.cost_usd == tr.agent.cost_of_trajectory(run.trajectory)
    [verdict] = tr.check([tr.expect.max_cost_usd(0.0)], run)
    assert not verdict.passed


def test_one_turn_without_usage_makes_the_whole_cost_unknown() -> None:
    first, second = _chat_call('{"command": "ls"}'), _chat_reply("done")
    del second["usage"]
    ran = _Ran()
    run = tr.Agent(_RawModel(first, second).transport(), tools=[ran.tool]).run("go")
    assert ran.commands == ["ls"] and run.cost_usd is None
    assert tr.agent.cost_of_trajectory(run.trajectory) is None


def test_an_async_tool_keeps_the_context_variables_it_sets_to_itself() -> None:
    """A lone sync tool call skips the task a gather would make; an async tool keeps it, so what it sets in its
    context does not leak into the agent's caller."""
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")

    @tr.tool
    async def setter() -> str:
        """Set a context variable."""
        var.set("set by the tool")
        return "ok"

    async def main() -> tuple[tr.Run, str]:
        model = tr.ScriptedModel([tr.tool_call("setter"), tr.reply("done")])
        agent = tr.Agent(model, tools=[setter], tool_timeout_s=None)  # no limit: no wait_for task around it
        return await agent.arun("go"), var.get()

    run, seen = asyncio.run(main())
    assert (run.trajectory.tool_results[0].content, run.output, seen) == ("ok", "done", "unset")
