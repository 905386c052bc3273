"""The scripted model: answers model requests from a script of neutral steps, in whatever wire format was asked.

The script is provider-neutral (`tool_call`, `reply`, `fail`); the wire codec picked from the request path renders
each step as Chat Completions, Responses, Anthropic Messages or Gemini JSON, or as the SSE stream the official SDKs'
streaming helpers accept when the request says `stream: true`. So one script drives any agent built on httpx.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..trajectory import ToolCall, Usage
from ..wire import codec_for
from ..wire._codec import Codec, json_body
from ..wire._threads import Thread, Threader
from ..wire._types import ModelRequest, ModelResponse, ProviderError, Step, WireError
from ._base import ModelKind, ModelTransport, build_response
from ._portable import SHELL_TOOL, SUBAGENT_TOOL, portable, resolve

__all__ = ["ScriptedModel", "tool_call", "tool_calls", "reply", "fail", "shell", "subagent", "when", "When",
           "StepLike", "Script", "DEFAULT_SIDE_REPLY"]

#: What a side request (one that offers no tools, beside a main loop: a title, a summary) gets by default.
DEFAULT_SIDE_REPLY = "OK"

# What a script entry or a reactive function may give: a step, a provider error, a bare string (a final reply),
# or None from a function (nothing left to say: the script is exhausted).
StepLike = Step | ProviderError | str
ScriptEntry = StepLike | Callable[[ModelRequest], StepLike | None]
Script = Sequence[ScriptEntry] | Callable[[ModelRequest], StepLike | None]

_NO_RETRY = {"x-should-retry": "false"}  # the SDKs obey it: a scripting mistake must not be retried into noise


def tool_call(name: str, arguments: dict[str, Any] | None = None, /, *, namespace: str | None = None,
              **kwargs: Any) -> Step:
    """A step in which the model calls one tool: `tool_call("read_file", path="notes.txt")`.

    Arguments come as a dict, as keywords, or both (keywords win). `name` is positional-only, so a tool argument
    may itself be called `name`. Also usable inside `tool_calls(...)` for parallel calls.

    `namespace` names the tool namespace the tool lives in (OpenAI Responses only: Codex's sub-agent tools are
    `tool_call("spawn_agent", message="...", namespace="multi_agent_v1")`); a tool ARGUMENT called namespace goes
    in the dict: `tool_call("kubectl", {"namespace": "prod"})`.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"tool_call: the tool name must be a non-empty string, got {name!r}")
    if arguments is not None and not isinstance(arguments, dict):
        raise TypeError(f"tool_call({name!r}): arguments must be a dict, got {type(arguments).__name__}")
    if namespace is not None and (not isinstance(namespace, str) or not namespace):
        raise TypeError(f"tool_call({name!r}): namespace must be a non-empty string, got {namespace!r}")
    return Step(tool_calls=[ToolCall(name, {**(arguments or {}), **kwargs}, namespace=namespace)])


def tool_calls(*calls: Step | ToolCall, text: str = "", usage: Usage | None = None) -> Step:
    """A step with several tool calls in one response (parallel calls): `tool_calls(tool_call("a"), tool_call("b"))`."""
    if not calls:
        raise ValueError("tool_calls() needs at least one tool_call(...)")
    flat: list[ToolCall] = []
    for number, call in enumerate(calls, start=1):
        if isinstance(call, ToolCall):
            flat.append(call)
        elif isinstance(call, Step) and call.tool_calls and not call.text and call.error is None:
            flat.extend(call.tool_calls)
        else:
            raise TypeError(f"tool_calls(): argument {number} is {call!r}; expected tool_call(...) or a ToolCall")
    return Step(text=text, tool_calls=flat, usage=usage)


def reply(text: str, usage: Usage | None = None) -> Step:
    """A step in which the model answers with text and no tool calls (usually the last one)."""
    if not isinstance(text, str):
        raise TypeError(f"reply(): text must be a string, got {type(text).__name__}")
    return Step(text=text, usage=usage)


def shell(command: str) -> Step:
    """A step in which the model runs `command` through whatever shell tool the request offers (`bash`, `Bash`,
    `exec_command`, `run_command`, `shell`, ...), with that tool's own argument shape found from its schema
    (`{"command": ...}`, `{"cmd": ...}`, an argv array `["bash", "-lc", ...]`, a required `description`).

    So one script drives any coding agent: `ScriptedModel([shell("echo hi > marker.txt"), reply("done")])`.
    A request that offers no tool able to run it is answered with an error naming the offered tools.
    """
    if not isinstance(command, str) or not command.strip():
        raise TypeError(f"shell(): the command must be a non-empty string, got {command!r}")
    return Step(tool_calls=[ToolCall(SHELL_TOOL, {"command": command})])


def subagent(prompt: str, *, description: str = "Delegated task", agent_type: str | None = None) -> Step:
    """A step in which the model starts a sub-agent on `prompt` through whatever sub-agent tool the request
    offers: Claude Code's `Agent` (or `Task`), opencode's `task`, Codex's `spawn_agent` (namespace
    `multi_agent_v1`), each in its own argument shape (`description` and the agent type where the tool takes
    them; the type defaults to each agent's general-purpose one).

    Script the sub-agent's own conversation with `ScriptedModel(..., subagents={prompt: [steps]})`.
    """
    if not isinstance(prompt, str) or not prompt.strip():
        raise TypeError(f"subagent(): the prompt must be a non-empty string, got {prompt!r}")
    if not isinstance(description, str):
        raise TypeError(f"subagent(): description must be text, got {description!r}")
    if agent_type is not None and (not isinstance(agent_type, str) or not agent_type):
        raise TypeError(f"subagent(): agent_type must be a non-empty string, got {agent_type!r}")
    return Step(tool_calls=[ToolCall(SUBAGENT_TOOL, {"prompt": prompt, "description": description,
                                                     "agent_type": agent_type})])


@dataclass(frozen=True, slots=True)
class When:
    """Which conversations a sub-script serves (see `when`)."""

    text: str | None = None
    system: str | None = None
    user: str | None = None
    tools: tuple[str, ...] = ()

    def matches(self, request: ModelRequest) -> bool:
        system = request.system or ""
        user = "\n".join(_opening_user_texts(request))
        return ((self.text is None or self.text in system or self.text in user)
                and (self.system is None or self.system in system)
                and (self.user is None or self.user in user)
                and all(name in request.tool_names for name in self.tools))

    def __str__(self) -> str:
        parts = [f"{k}={v!r}" for k, v in (("text", self.text), ("system", self.system), ("user", self.user)) if v]
        if self.tools:
            parts.append(f"tools={list(self.tools)!r}")
        return f"when({', '.join(parts)})"


def _opening_user_texts(request: ModelRequest) -> list[str]:
    """The user messages a conversation opens with, before the model's first answer: its first user text, which
    some agents split (Codex sends an <environment_context> message, then the task)."""
    texts = []
    for message in request.messages:
        if message.role == "assistant" or message.tool_results:
            break
        if message.role == "user":
            texts.append(message.text)
    return texts


def when(text: str | None = None, *, system: str | None = None, user: str | None = None,
         tools: Sequence[str] = ()) -> When:
    """A matcher for a conversation other than the main loop (a sub-agent), used as a key of
    `ScriptedModel(..., subagents={when(...): [steps]})`: its first request's system prompt or first user text
    (the user messages it opens with) contains `text`; its system prompt contains `system`; its first user text
    contains `user`; it offers every
    tool in `tools`. A plain string key means `when(text)`."""
    if all(v is None for v in (text, system, user)) and not tools:
        raise ValueError("when(): give text, system, user or tools; a matcher that matches every conversation "
                         "would take the main loop's requests")
    for name, value in (("text", text), ("system", system), ("user", user)):
        if value is not None and (not isinstance(value, str) or not value):
            raise TypeError(f"when(): {name} must be a non-empty string, got {value!r}")
    if isinstance(tools, str):
        tools = [tools]
    return When(text, system, user, tuple(tools))


def fail(status: int = 429, retry_after: float | None = None, message: str | None = None) -> ProviderError:
    """A step in which the provider answers with an error (rate limit by default), in the API's own error format.

    `retry_after` (seconds) becomes the Retry-After header, which the SDKs honour when they retry. Without a
    `message`, the codec uses the provider's own wording for that status.
    """
    if not 400 <= int(status) <= 599:
        raise ValueError(f"fail(): status must be an HTTP error status (400-599), got {status}")
    if retry_after is not None and retry_after < 0:
        raise ValueError(f"fail(): retry_after must be >= 0 seconds, got {retry_after}")
    return ProviderError(status=int(status), message=message or "", retry_after=retry_after)


def _as_step(value: Any, where: str) -> Step | ProviderError:
    if isinstance(value, (Step, ProviderError)):
        return value
    if isinstance(value, str):
        return Step(text=value)
    raise TypeError(f"{where} is a {type(value).__name__}; expected tool_call(...), tool_calls(...), reply(...), "
                    "fail(...) or a string")


@dataclass(slots=True)
class _Pending:
    """A decoded request waiting for its script entry's answer."""

    request: Any
    codec: Codec
    model_request: ModelRequest
    entry: Any
    index: int
    slot: int
    where: str
    thread: Thread | None = None
    label: str = ""


@dataclass(slots=True)
class _Cursor:
    """A list of script entries and how far it has been used (the main script's, or a sub-script's)."""

    entries: list[Any]
    label: str
    matcher: When | None = None
    next: int = 0
    has_calls: bool = False

    def take(self) -> tuple[Any, int]:
        if self.next < len(self.entries):
            self.next += 1
            return self.entries[self.next - 1], self.next - 1
        return None, self.next

    def peek_calls(self) -> bool:
        """Whether the next entry is a step with tool calls (a function entry is not known in advance)."""
        entry = self.entries[self.next] if self.next < len(self.entries) else None
        return isinstance(entry, Step) and bool(entry.tool_calls)


_SIDE = "side"  # Thread.script for a side request: answered with the side reply, no step used


def _script_entries(steps: Any, what: str) -> list[Any]:
    if isinstance(steps, (Step, ProviderError, str)) or not isinstance(steps, Sequence):
        raise TypeError(
            f"{what} takes a list of steps or a function of the request, got {type(steps).__name__} (wrap a single "
            "step in a list: ScriptedModel([reply('hi')]))"
        )
    entries = []
    for number, entry in enumerate(steps, start=1):
        if not callable(entry):
            _as_step(entry, f"{what}: script step {number}")
        entries.append(entry)
    return entries


class ScriptedModel(ModelTransport):
    """A model that answers from a script: a list of steps, or a function of the request.

    ```python
    model = ScriptedModel([tool_call("read_file", path="notes.txt"), reply("The notes say hello.")])
    client = openai.OpenAI(api_key="test", http_client=httpx.Client(transport=model))
    ```

    A list entry may itself be a function `request -> step` (reactive at that point of the script). A whole-script
    function is called for every request; returning None means it has nothing more to say. When the script runs
    out, the model answers HTTP 500 "script exhausted after N responses" and records that as a problem, so the
    trial fails even if the agent swallows the error.

    A list script follows the conversation, not the arrival order: requests are threaded into conversations by
    their history (as the trajectory is), and the steps go to the MAIN loop. A request that offers no tools while
    the script holds tool calls (a title or summary request, sent before or between the main loop's requests) is
    a side request: it gets `side_reply` and uses no step. Sub-agents can have scripts of their own:
    `subagents={"Explore": [...], when(tools=["Grep"]): [...]}` (a string matches the system prompt or first user
    text of the conversation's first request); a conversation no sub-script matches takes the main script's next
    steps, in arrival order. A tool-call step is never given to a request that offers no tools (an agent that
    cannot run a native call would show a phantom call): it is an error the trial sees.

    `model=` names the model in responses (default: the model the request asked for).
    """

    def __init__(
        self,
        steps_or_function: Script,
        *,
        model: str | None = None,
        side_reply: str = DEFAULT_SIDE_REPLY,
        subagents: Mapping[str | When, Sequence[ScriptEntry]] | None = None,
    ) -> None:
        super().__init__()
        self._model = model
        self._function: Callable[[ModelRequest], StepLike | None] | None = None
        if not isinstance(side_reply, str):
            raise TypeError(f"ScriptedModel: side_reply must be text, got {type(side_reply).__name__}")
        self._side_reply = side_reply
        if callable(steps_or_function) and not isinstance(steps_or_function, (Step, ProviderError)):
            self._function = steps_or_function
            self._main = _Cursor([], "script")
        else:
            self._main = _Cursor(_script_entries(steps_or_function, "ScriptedModel"), "script")
        self._main.has_calls = _has_calls(self._main.entries)
        self._subs: list[_Cursor] = []
        for key, steps in (subagents or {}).items():
            matcher = when(key) if isinstance(key, str) else key
            if not isinstance(matcher, When):
                raise TypeError(f"ScriptedModel: subagents keys are text or when(...), got {type(key).__name__}")
            cursor = _Cursor(_script_entries(steps, f"ScriptedModel: subagents[{key!r}]"), f"sub-script {matcher}", matcher)
            self._subs.append(cursor)
        self._threader = Threader()
        self._tools_seen = False
        self._side_requests = 0
        self._calls = 0
        self._answered = 0

    # -- introspection --------------------------------------------------------------------------------------------

    @property
    def model_kind(self) -> ModelKind:
        """A script: the same request gets the same answer in every run."""
        return "scripted"

    @property
    def requests(self) -> list[ModelRequest]:
        """The decoded model requests received, in arrival order (decoded again from the recorded exchanges, so a
        long-lived model does not keep every request's object tree alive)."""
        requests: list[ModelRequest] = []
        for exchange in self.exchanges:
            codec = codec_for(exchange.path)
            if codec is None:
                continue
            try:
                body = json.loads(exchange.request_body) if exchange.request_body else {}
                requests.append(codec.decode_request(body, exchange.path))
            except (ValueError, WireError):
                continue
        return requests

    @property
    def calls(self) -> int:
        """How many requests reached the model (including ones answered with an error)."""
        with self._lock:
            return self._calls

    @property
    def remaining(self) -> int | None:
        """Steps of the main script not yet used; None for a function script, which has no fixed length."""
        if self._function is not None:
            return None
        with self._lock:
            return len(self._main.entries) - self._main.next

    @property
    def side_requests(self) -> int:
        """How many requests were answered as side requests (with `side_reply`, using no step)."""
        with self._lock:
            return self._side_requests

    @property
    def problems(self) -> list[str]:
        problems = super().problems
        with self._lock:
            stuck = (self._function is None and not self._tools_seen and self._side_requests
                     and self._main.peek_calls())
            if stuck:
                step = self._main.entries[self._main.next]
                names = ", ".join(call.name for call in step.tool_calls)
                problems.append(
                    f"ScriptedModel: script step {self._main.next + 1} calls {names}, but none of the "
                    f"{self._calls} request(s) offered any tools, so the step was never given (an agent that offers "
                    "no tools cannot run a native tool call; a text-protocol agent needs text replies)"
                )
        return problems

    # -- serving --------------------------------------------------------------------------------------------------

    def _begin(self, request: Any) -> Any:
        """Decode the request and take the script entry for it: a `_Pending`, or an error response already made."""
        path = request.url.path
        codec = codec_for(path)
        with self._lock:
            self._calls += 1
            number = self._calls
        where = f"request {number} ({request.method} {path})"
        if codec is None:
            return self._refuse(
                request, 404, None,
                f"ScriptedModel: {where} is not a model API this model speaks (expected an OpenAI "
                "/chat/completions or /responses, Anthropic /v1/messages or Gemini :generateContent path)",
            )
        try:
            body = json.loads(request.content) if request.content else {}
            if not isinstance(body, dict):
                raise WireError("the request body is JSON but not an object")
            model_request = codec.decode_request(body, path)
            model_request.size = len(request.content)  # usage defaults from the size, not a re-dump of the body
        except (ValueError, WireError) as exc:
            return self._refuse(request, 400, codec, f"ScriptedModel: {where}: cannot decode the request: {exc}")

        entry: ScriptEntry | None
        thread: Thread | None = None
        label = "script"
        with self._lock:
            if model_request.tools:
                self._tools_seen = True
            if self._function is not None:
                entry = self._function
                index = self._main.next
                self._main.next += 1
            else:
                thread = self._threader.place(model_request)
                cursor = self._cursor_for(thread, model_request)
                if cursor is None:
                    self._side_requests += 1
                    entry, index = Step(text=self._side_reply), -1
                else:
                    entry, index = cursor.take()
                    label = cursor.label
            slot = self._reserve_locked()

        if entry is None:
            return self._exhausted(slot, request, codec, where, label)
        return _Pending(request, codec, model_request, entry, index, slot, where, thread, label)

    def _cursor_for(self, thread: Thread, request: ModelRequest) -> _Cursor | None:
        """The script that answers this conversation (None: a side request). Decided at its first request."""
        if thread.script is None:
            sub = next((c for c in self._subs if c.matcher is not None and c.matcher.matches(request)), None)
            if sub is not None:
                thread.script = sub
            elif request.tools:
                thread.script = self._main
            else:  # offers no tools: a side request beside a loop that does, or a tool-less agent's own loop
                main = self._threader.main()
                beside_tools = main is not None and main.offers_tools
                thread.script = _SIDE if self._main.has_calls or beside_tools else self._main
        return None if thread.script is _SIDE else thread.script

    def _failed_entry(self, pending: _Pending, exc: Exception) -> Any:
        """A bug in the test's script: fail the trial loudly, never retry it."""
        label = "script function" if self._function is not None else f"{pending.label} step {pending.index + 1}"
        return self._refuse(pending.request, 500, pending.codec,
                            f"ScriptedModel: {pending.where}: the {label} raised {type(exc).__name__}: {exc}", pending.slot)

    def _handle(self, request: Any) -> Any:
        pending = self._begin(request)
        if not isinstance(pending, _Pending):
            return pending
        try:
            value = pending.entry(pending.model_request) if callable(pending.entry) else pending.entry
            if inspect.isawaitable(value):
                if inspect.iscoroutine(value):
                    value.close()
                raise TypeError("it is async; use an async client (httpx.AsyncClient) with an async script function")
        except Exception as exc:
            return self._failed_entry(pending, exc)
        return self._finish(pending, value)

    async def _ahandle(self, request: Any) -> Any:
        pending = self._begin(request)
        if not isinstance(pending, _Pending):
            return pending
        try:
            value = pending.entry(pending.model_request) if callable(pending.entry) else pending.entry
            # An async script function (one that simulates latency): a Step is the usual answer, and is told apart
            # without `isawaitable`'s ABC check.
            if type(value) is not Step and inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            return self._failed_entry(pending, exc)
        return self._finish(pending, value)

    def _finish(self, pending: _Pending, value: Any) -> Any:
        request, codec, model_request, slot, where = pending.request, pending.codec, pending.model_request, pending.slot, pending.where
        if value is None:
            return self._exhausted(slot, request, codec, where)
        try:
            step = _as_step(value, f"ScriptedModel: {where}: the script gave a value that")
        except TypeError as exc:
            return self._refuse(request, 500, codec, str(exc), slot)

        if isinstance(step, ProviderError) or step.error is not None:
            encoded = codec.encode_error(step if isinstance(step, ProviderError) else step.error)  # type: ignore[arg-type]
        else:
            if step.tool_calls:
                if not model_request.tools:
                    names = ", ".join(call.name for call in step.tool_calls)
                    source = "the script function" if self._function is not None else f"{pending.label} step {pending.index + 1}"
                    return self._refuse(request, 500, codec, f"ScriptedModel: {where}: {source} calls {names}, but the "
                                        "request offers no tools (a phantom call: the agent cannot run it)", slot)
                if portable(step):
                    resolved = resolve(step, model_request)
                    if isinstance(resolved, str):
                        return self._refuse(request, 500, codec, f"ScriptedModel: {where}: {resolved}", slot)
                    step = resolved
                spaced = [f"{call.namespace}.{call.name}" for call in step.tool_calls if call.namespace]
                if spaced and not codec.namespaces:
                    return self._refuse(request, 500, codec, f"ScriptedModel: {where}: the step calls "
                                        f"{', '.join(spaced)} in a tool namespace, which {codec.api} does not have "
                                        "(only OpenAI Responses has tool namespaces)", slot)
            if self._model is not None and step.model is None:
                step = replace(step, model=self._model)
            try:
                encoded = codec.encode_response(step, model_request)
            except Exception as exc:
                return self._refuse(
                    request, 500, codec, f"ScriptedModel: {where}: cannot render the step as {codec.api}: {exc}", slot
                )
        with self._lock:
            self._answered += 1  # scripted answers, provider errors included: "exhausted after N responses"
            if pending.thread is not None and isinstance(step, Step) and step.error is None:
                self._threader.answered(pending.thread, ModelResponse(step.text, step.tool_calls))
        self._record(slot, request, encoded.status, encoded.headers, encoded.body)
        return build_response(request, encoded.status, encoded.headers, encoded.body)

    def _exhausted(self, slot: int, request: Any, codec: Codec, where: str, label: str = "script") -> Any:
        with self._lock:
            answered = self._answered
        if self._function is not None:
            reason = f"the script function returned None for {where}"
        else:
            reason = f"{where} found no step left" + ("" if label == "script" else f" in the {label}")
        message = f"ScriptedModel: script exhausted after {answered} responses: {reason}"
        return self._refuse(request, 500, codec, message, slot, kind="script_exhausted")

    def _refuse(
        self,
        request: Any,
        status: int,
        codec: Codec | None,
        message: str,
        slot: int | None = None,
        kind: str = "scripted_model_error",
    ) -> Any:
        """Answer with an error the agent sees AND a problem the trial sees (agents often swallow HTTP errors)."""
        self._problem(message)
        if codec is not None:
            encoded = codec.encode_error(ProviderError(status=status, message=message, type=kind))
            status, headers, body = encoded.status, {**encoded.headers, **_NO_RETRY}, encoded.body
        else:
            headers = {"content-type": "application/json", **_NO_RETRY}
            body = json_body({"error": {"message": message, "type": kind}})
        if slot is None:
            slot = self._reserve()
        self._record(slot, request, status, headers, body)
        return build_response(request, status, headers, body)



def _has_calls(entries: list[Any]) -> bool:
    return any(isinstance(e, Step) and e.tool_calls for e in entries)
