"""The reference agent: a real tool-calling loop over HTTP (the seed's Invoke-Shp).

The loop itself is written once, without I/O (a generator that yields what it needs done: a model request, a
batch of tool calls, a pause before a retry). `Agent.run` drives it synchronously and `Agent.arun` with asyncio,
so both behave identically and the sync path needs no event loop.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx

from .._scrub import add_header_credentials
from .._util.command_tools import KNOWN_COMMAND_TOOLS, command_argument, is_command_tool
from .._util.retry import retry_delay, retryable
from ..trajectory import Denial, Run, RunStatus, ToolCall, ToolResult, Trajectory, Turn
from ..wire import Codec, Message, ToolSpec, WireError, codec_named
from ..wire._codec import arguments_problem
from .policy import Decision, ToolPolicy
from .pricing import PriceTable, prices
from .tools import Tool, ToolError, _check_timeout

__all__ = ["Agent", "RunStatus", "DEFAULT_BASE_URLS"]


DEFAULT_BASE_URLS = {
    "openai-chat": "https://api.openai.com/v1",
    "openai-responses": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
}




# -- what the loop asks its driver to do -------------------------------------------------------------------
@dataclass(slots=True)
class _Post:
    url: str
    body: dict[str, Any]
    headers: dict[str, str]


@dataclass(slots=True)
class _Reply:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass(slots=True)
class _RunTools:
    calls: list[tuple[Tool, ToolCall]]


@dataclass(slots=True)
class _Sleep:
    seconds: float


@dataclass(slots=True)
class _ToolOutcome:
    content: str
    is_error: bool


@dataclass
class _State:
    trajectory: Trajectory = field(default_factory=Trajectory)
    cost: float | None = 0.0
    status: RunStatus = "completed"
    error: str | None = None


class Agent:
    """A small, real tool-calling agent: send the conversation and tool schemas, run the tool calls the model
    asks for (checked by the policy), send the results back, until the model answers without tool calls or a
    limit ends the run. The returned `Run` carries the trajectory the agent recorded and how it ended (`status`).
    """

    def __init__(
        self,
        model: httpx.BaseTransport | httpx.AsyncBaseTransport,
        *,
        api: str = "openai-chat",
        model_name: str = "gpt-4.1-mini",
        tools: Iterable[Tool | Any] = (),
        policy: ToolPolicy | None = None,
        system: str | None = None,
        max_turns: int = 10,
        max_cost_usd: float | None = None,
        tool_timeout_s: float | None = 30.0,
        max_tokens: int | None = None,
        base_url: str | None = None,
        headers: dict[str, str] | None = None,
        max_retries: int = 2,
        max_retry_wait: float = 30.0,
        price_table: PriceTable | None = None,
        command_tools: Iterable[str] = KNOWN_COMMAND_TOOLS,
        request_timeout_s: float = 120.0,
    ) -> None:
        self.codec: Codec = codec_named(api)
        self.api = api
        self.model = model
        self.model_name = model_name
        self.tools: dict[str, Tool] = {}
        for item in tools:
            tool_obj = item if isinstance(item, Tool) else Tool(item)
            if tool_obj.name in self.tools:
                raise ValueError(f"two tools are named {tool_obj.name!r}")
            self.tools[tool_obj.name] = tool_obj
        self.policy = policy
        self.system = system
        if max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {max_turns}")
        self.max_turns = max_turns
        if max_cost_usd is not None and (
            isinstance(max_cost_usd, bool) or not isinstance(max_cost_usd, (int, float)) or not max_cost_usd >= 0
        ):
            raise ValueError(f"max_cost_usd must be a non-negative number of US dollars or None, got {max_cost_usd!r}")
        self.max_cost_usd = max_cost_usd
        # None means no limit; 0 or less is refused rather than guessed at (see _check_timeout).
        self.tool_timeout_s = _check_timeout(tool_timeout_s, "Agent tool_timeout_s")
        self.max_tokens = max_tokens
        self.base_url = (base_url or DEFAULT_BASE_URLS[api]).rstrip("/")
        self.headers = {"content-type": "application/json", **(headers or {})}
        if headers:  # its credentials are scrubbed wherever they are echoed, even past a transport that records none
            add_header_credentials(headers, source="Agent(headers=...)")
        if api == "anthropic":
            self.headers.setdefault("anthropic-version", "2023-06-01")
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self.prices = price_table or prices
        self.command_tools = tuple(command_tools)
        self._timeout = httpx.Timeout(request_timeout_s).as_dict()

    # -- the loop, once ----------------------------------------------------------------------------------
    def _loop(self, prompt: str, state: _State) -> Generator[Any, Any, Run]:
        specs = self._offer(prompt, state.trajectory)
        messages = [Message("user", prompt)]
        url = self.base_url + self.codec.request_path(self.model_name)
        # The calls let through so far, as (tool, arguments): the policy reads what they wrote (`sh x.sh` after a
        # `write_file` of x.sh). A call of this turn counts for the later ones: they may run after it.
        passed: list[tuple[str, Any]] = []
        unenforceable = self._unenforceable_ceiling(self.model_name, state)
        if unenforceable:  # before spending anything: a ceiling that cannot be checked must not be trusted
            return self._end(state, "error", unenforceable)
        while True:
            body = self.codec.encode_request(
                model=self.model_name, messages=messages, tools=specs, system=self.system, max_tokens=self.max_tokens
            )
            reply = yield from self._ask(_Post(url, body, self.headers), state)
            if isinstance(reply, Run):
                return reply
            turn = self._take_turn(reply, state)
            if isinstance(turn, Run):
                return turn
            if not turn.tool_calls:
                return self._end(state, "completed")
            unenforceable = self._unenforceable_ceiling(turn.model, state, turn)
            if unenforceable:  # the model answered as another (unpriced) model, or without usage
                return self._end(state, "error", unenforceable)

            messages.append(Message("assistant", turn.text, tool_calls=list(turn.tool_calls)))
            screened = self._screen(turn, passed, state)
            if isinstance(screened, Run):
                return screened
            runnable, decided = screened
            self._record_commands(runnable, state.trajectory)
            outcomes: list[_ToolOutcome] = (yield _RunTools(runnable)) if runnable else []
            turn.tool_results = _in_order(turn, decided, runnable, outcomes)
            messages.append(Message("tool", tool_results=list(turn.tool_results)))

            limit = self._limit_reached(state)
            if limit is not None:
                return limit

    def _offer(self, prompt: str, trajectory: Trajectory) -> list[ToolSpec]:
        """The tool schemas every request offers, noted in the trajectory first: only these can be called (no
        phantom calls), and those taking a command are known for the policy and the command record."""
        specs = [tool_obj.spec() for tool_obj in self.tools.values()]
        trajectory.prompt = prompt
        trajectory.offered_tools = [spec.name for spec in specs]
        for spec in specs:
            key = command_argument(spec.name, spec.parameters, spec.description)
            if key is not None:
                trajectory.command_tools[spec.name] = key
        return specs

    def _ask(self, post: _Post, state: _State) -> Generator[Any, Any, _Reply | Run]:
        """One model request, retried (after a pause) while the provider answers with a retryable error; the
        ended run if it keeps failing. Every attempt counts as a model call."""
        for attempt in range(self.max_retries + 1):
            reply: _Reply = yield post
            state.trajectory.model_calls += 1
            if reply.status < 400:
                return reply
            if not retryable(reply.status, reply.headers) or attempt == self.max_retries:
                return self._end(state, "error", f"provider answered HTTP {reply.status}: {_error_text(reply.body)}")
            yield _Sleep(retry_delay(reply.headers, attempt, cap=self.max_retry_wait))
        raise AssertionError("the last attempt always returns")  # pragma: no cover - max_retries + 1 >= 1

    def _take_turn(self, reply: _Reply, state: _State) -> Turn | Run:
        """The model's answer as a recorded turn, its cost added; the ended run if it cannot be read."""
        try:
            response = self.codec.decode_response(reply.body, False)
        except WireError as exc:
            return self._end(state, "error", f"could not read the model's response: {exc}")
        turn = Turn(text=response.text, tool_calls=response.tool_calls, usage=response.usage,
                    model=response.model or self.model_name)
        state.trajectory.turns.append(turn)
        if state.cost is not None:  # a response without usage has an unknown cost, as an unpriced model does
            cost = self.prices.cost(turn.model, turn.usage)
            state.cost = None if cost is None else state.cost + cost
        return turn

    def _screen(
        self, turn: Turn, passed: list[tuple[str, Any]], state: _State
    ) -> tuple[list[tuple[Tool, ToolCall]], dict[int, ToolResult]] | Run:
        """The turn's calls split into those that run and those answered without running (refused by the policy,
        an unknown tool, bad arguments), by position; the ended run if the policy stops it."""
        runnable: list[tuple[Tool, ToolCall]] = []
        decided: dict[int, ToolResult] = {}
        for position, call in enumerate(turn.tool_calls):
            verdict = self._screen_call(call, passed, state)
            if isinstance(verdict, Run):
                return verdict
            if isinstance(verdict, ToolResult):
                decided[position] = verdict
            else:
                runnable.append((verdict, call))
        return runnable, decided

    def _screen_call(self, call: ToolCall, passed: list[tuple[str, Any]], state: _State) -> Tool | ToolResult | Run:
        """The tool one call runs, or the error result it gets instead, or the ended run if the policy stops it."""
        trajectory = state.trajectory
        decision = (self.policy.decide(call.name, call.arguments, earlier=passed,
                                       schema_tools=trajectory.command_tools) if self.policy else None)
        if decision is None or decision.action == "allow":
            passed.append((call.name, call.arguments))
        if decision is not None and decision.action != "allow":
            trajectory.denials.append(Denial(call.name, dict(call.arguments), decision.reason, decision.rule, call.id))
            if decision.action == "stop":
                return self._end(state, "stopped_by_policy", f"policy stopped the run at {call.name}: {decision.reason}")
            return ToolResult(call.id, _refusal(decision), is_error=True)
        tool_obj = self.tools.get(call.name)
        if tool_obj is None:
            available = ", ".join(self.tools) or "none"
            return ToolResult(call.id, f"unknown tool {call.name!r}; available tools: {available}", is_error=True)
        problem = _argument_problem(tool_obj, call)
        if problem is not None:
            return ToolResult(call.id, problem, is_error=True)
        return tool_obj

    def _record_commands(self, runnable: list[tuple[Tool, ToolCall]], trajectory: Trajectory) -> None:
        """Note the commands that will run. Only with the whole batch past the policy and every call's arguments
        valid is it certain which commands run: `trajectory.commands` records those and nothing the model merely
        asked for."""
        for _, call in runnable:
            tools = self.command_tools + tuple(trajectory.command_tools)
            if not is_command_tool(call.name, tools):
                continue
            from .. import _shell  # the shell analysis, only for an agent whose tools run commands

            command = _shell.command_of_call(call.name, call.arguments, tools,
                                             tuple(dict.fromkeys(trajectory.command_tools.values())))
            if command is not None:
                trajectory.commands.append(command if isinstance(command, str) else " ".join(command))

    def _limit_reached(self, state: _State) -> Run | None:
        """The ended run if the cost ceiling or the turn limit is reached after a turn, else None."""
        if self.max_cost_usd is not None and state.cost is not None and state.cost >= self.max_cost_usd:
            return self._end(state, "cost_limit", f"spent ${state.cost:.6f}, limit ${self.max_cost_usd:g}")
        if len(state.trajectory.turns) >= self.max_turns:
            return self._end(state, "max_turns", f"stopped after {self.max_turns} turns")
        return None

    def _unenforceable_ceiling(self, model: str | None, state: _State, turn: Turn | None = None) -> str | None:
        """Why `max_cost_usd` cannot be enforced (no price for the model, a response without usage), or None."""
        if self.max_cost_usd is None or (turn is not None and state.cost is not None):
            return None
        if model is None or model not in self.prices:
            return (
                f"max_cost_usd={self.max_cost_usd:g} cannot be enforced for model {model!r}: no price is known for "
                f"it; add one with trialrun.prices.set({model!r}, input=..., output=...) or a price file"
            )
        if turn is not None and turn.usage is None:
            return (
                f"max_cost_usd={self.max_cost_usd:g} cannot be enforced: the response to model call "
                f"{len(state.trajectory.turns)} reported no token usage"
            )
        return None

    def _end(self, state: _State, status: RunStatus, error: str | None = None) -> Run:
        trajectory = state.trajectory
        return Run(
            output=trajectory.final_text if status == "completed" else (trajectory.turns[-1].text if trajectory.turns else ""),
            trajectory=trajectory,
            cost_usd=state.cost if trajectory.turns else None,
            status=status,
            error=error if status != "completed" else None,
        )

    # -- drivers -----------------------------------------------------------------------------------------
    def run(self, prompt: str) -> Run:
        """Run the agent on one prompt, synchronously (no event loop needed)."""
        state = _State()
        loop = self._loop(prompt, state)
        try:
            action = next(loop)
            while True:
                if isinstance(action, _Post):
                    action = loop.send(self._post_sync(action))
                elif isinstance(action, _RunTools):
                    action = loop.send([self._tool_sync(t, c) for t, c in action.calls])
                else:
                    time.sleep(action.seconds)
                    action = next(loop)
        except StopIteration as done:
            finished: Run = done.value
            return finished
        except _TransportFailure as exc:
            return self._end(state, "error", str(exc))

    async def arun(self, prompt: str) -> Run:
        """Run the agent on one prompt with asyncio; a batch of tool calls runs concurrently."""
        state = _State()
        loop = self._loop(prompt, state)
        try:
            action = next(loop)
            while True:
                if isinstance(action, _Post):
                    action = loop.send(await self._post_async(action))
                elif isinstance(action, _RunTools):
                    # A lone sync tool needs no task of its own (a gather waits its turn twice on a busy loop): it
                    # runs on a worker, in a copy of the context. An async tool keeps its task, so the context
                    # variables it sets stay its own, as before.
                    if len(action.calls) == 1 and not action.calls[0][0].is_async:
                        outcomes = [await self._tool_async(*action.calls[0])]
                    else:
                        outcomes = list(await asyncio.gather(*(self._tool_async(t, c) for t, c in action.calls)))
                    action = loop.send(outcomes)
                else:
                    await asyncio.sleep(action.seconds)
                    action = next(loop)
        except StopIteration as done:
            finished: Run = done.value
            return finished
        except _TransportFailure as exc:
            return self._end(state, "error", str(exc))

    # The agent speaks to its transport directly (httpx's transport API): it needs no cookies, redirects or auth
    # flows, and skipping the client halves the per-call cost of the loop.
    # A request's URL and headers are the same on every call: httpx's own constructor makes them once per URL and
    # header set (Host and encodings by its rules) and later requests, of any agent, reuse them; re-parsing the URL
    # string was a fifth of the agent's cost per model call.
    def _request(self, post: _Post) -> httpx.Request:
        content = json.dumps(post.body).encode()
        key = (post.url, tuple(post.headers.items()))
        made = _MADE.get(key)
        if made is None:
            first = httpx.Request("POST", post.url, content=content, headers=post.headers,
                                  extensions={"timeout": self._timeout})
            if len(_MADE) >= 64:
                _MADE.clear()
            _MADE[key] = (first.url, [(k, v) for k, v in first.headers.raw if k.lower() != b"content-length"])
            return first
        url, raw = made
        request = httpx.Request("POST", url, headers=httpx.Headers([*raw, (b"Content-Length", str(len(content)).encode())]),
                                stream=httpx.ByteStream(content), extensions={"timeout": self._timeout})
        request.read()  # as `content=` does: a transport may read `request.content` at once
        return request

    def _post_sync(self, post: _Post) -> _Reply:
        if not isinstance(self.model, httpx.BaseTransport):
            raise _TransportFailure(f"{type(self.model).__name__} is not a synchronous httpx transport; use arun()")
        try:
            response = self.model.handle_request(self._request(post))
            try:
                body = response.read()
            finally:
                response.close()
        except httpx.HTTPError as exc:
            raise _TransportFailure(f"could not reach the model: {type(exc).__name__}: {exc}") from exc
        return _reply(response, body)

    async def _post_async(self, post: _Post) -> _Reply:
        if not isinstance(self.model, httpx.AsyncBaseTransport):  # a sync-only transport: drive it from a thread
            return await asyncio.to_thread(self._post_sync, post)
        try:
            response = await self.model.handle_async_request(self._request(post))
            try:
                body = await response.aread()
            finally:
                await response.aclose()
        except httpx.HTTPError as exc:
            raise _TransportFailure(f"could not reach the model: {type(exc).__name__}: {exc}") from exc
        return _reply(response, body)

    def _tool_sync(self, tool_obj: Tool, call: ToolCall) -> _ToolOutcome:
        try:
            return _ToolOutcome(tool_obj.run_sync(call.arguments, timeout_s=self.tool_timeout_s), False)
        except ToolError as exc:
            return _ToolOutcome(str(exc), True)
        except Exception as exc:  # noqa: BLE001 - a tool that raises is an error result the model reads
            return _ToolOutcome(f"{call.name} raised {type(exc).__name__}: {exc}", True)

    async def _tool_async(self, tool_obj: Tool, call: ToolCall) -> _ToolOutcome:
        try:
            return _ToolOutcome(await tool_obj.run(call.arguments, timeout_s=self.tool_timeout_s), False)
        except ToolError as exc:
            return _ToolOutcome(str(exc), True)
        except Exception as exc:  # noqa: BLE001
            return _ToolOutcome(f"{call.name} raised {type(exc).__name__}: {exc}", True)


def _reply(response: Any, body: bytes) -> _Reply:
    """The loop reads the headers of an error only (Retry-After, x-should-retry): copying them for every success
    cost about 4 µs a model call for nothing."""
    status = response.status_code
    return _Reply(status, dict(response.headers) if status >= 400 else {}, body)


#: (url, headers) -> the parsed URL and the raw headers without Content-Length (bounded: cleared past 64 entries)
_MADE: dict[tuple[Any, ...], tuple[httpx.URL, list[tuple[bytes, bytes]]]] = {}


class _TransportFailure(Exception):
    """The model could not be reached at all (connection refused, blocked network)."""


def _argument_problem(tool_obj: Tool, call: ToolCall) -> str | None:
    """Why a call's arguments cannot run the tool (not a JSON object, or not what its schema asks), or None."""
    if call.raw_arguments is not None:
        return f"invalid arguments for {call.name}: {arguments_problem(call.raw_arguments)}"
    try:
        tool_obj.validate(call.arguments)
    except ToolError as exc:
        return str(exc)
    return None


def _in_order(
    turn: Turn, decided: dict[int, ToolResult], runnable: list[tuple[Tool, ToolCall]], outcomes: list[_ToolOutcome]
) -> list[ToolResult]:
    """The turn's results in the order of its calls: the model matches them to its calls by position too."""
    ran = iter(zip(runnable, outcomes))
    results = []
    for position in range(len(turn.tool_calls)):
        if position in decided:
            results.append(decided[position])
        else:
            (_, ran_call), outcome = next(ran)
            results.append(ToolResult(ran_call.id, outcome.content, outcome.is_error))
    return results


def _refusal(decision: Decision) -> str:
    return f"Refused by policy ({decision.rule or 'default'}): {decision.reason}. Do not retry this call."


def _error_text(body: bytes) -> str:
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        return text[:300]
    error = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:300]
    return text[:300]

