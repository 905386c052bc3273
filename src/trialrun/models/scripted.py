"""The scripted model: answers model requests from a script of neutral steps, in whatever wire format was asked.

The script is provider-neutral (`tool_call`, `reply`, `fail`); the wire codec picked from the request path renders
each step as Chat Completions, Responses, Anthropic Messages or Gemini JSON, or as the SSE stream the official SDKs'
streaming helpers accept when the request says `stream: true`. So one script drives any agent built on httpx.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Union

from ..trajectory import ToolCall, Usage
from ..wire import codec_for
from ..wire._codec import Codec, json_body
from ..wire._types import ModelRequest, ProviderError, Step, WireError
from ._base import ModelTransport, build_response

__all__ = ["ScriptedModel", "tool_call", "tool_calls", "reply", "fail", "StepLike", "Script"]

# What a script entry or a reactive function may give: a step, a provider error, a bare string (a final reply),
# or None from a function (nothing left to say: the script is exhausted).
StepLike = Union[Step, ProviderError, str]
ScriptEntry = Union[StepLike, Callable[[ModelRequest], Union[StepLike, None]]]
Script = Union[Sequence[ScriptEntry], Callable[[ModelRequest], Union[StepLike, None]]]

_NO_RETRY = {"x-should-retry": "false"}  # the SDKs obey it: a scripting mistake must not be retried into noise


def tool_call(name: str, arguments: dict[str, Any] | None = None, /, **kwargs: Any) -> Step:
    """A step in which the model calls one tool: `tool_call("read_file", path="notes.txt")`.

    Arguments come as a dict, as keywords, or both (keywords win). `name` is positional-only, so a tool argument
    may itself be called `name`. Also usable inside `tool_calls(...)` for parallel calls.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"tool_call: the tool name must be a non-empty string, got {name!r}")
    if arguments is not None and not isinstance(arguments, dict):
        raise TypeError(f"tool_call({name!r}): arguments must be a dict, got {type(arguments).__name__}")
    return Step(tool_calls=[ToolCall(name, {**(arguments or {}), **kwargs})])


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

    `model=` names the model in responses (default: the model the request asked for).
    """

    def __init__(self, steps_or_function: Script, *, model: str | None = None) -> None:
        super().__init__()
        self._model = model
        self._function: Callable[[ModelRequest], StepLike | None] | None = None
        self._steps: list[ScriptEntry] = []
        if callable(steps_or_function) and not isinstance(steps_or_function, (Step, ProviderError)):
            self._function = steps_or_function
        elif isinstance(steps_or_function, (Step, ProviderError, str)) or not isinstance(steps_or_function, Sequence):
            raise TypeError(
                "ScriptedModel takes a list of steps or a function of the request, got "
                f"{type(steps_or_function).__name__} (wrap a single step in a list: ScriptedModel([reply('hi')]))"
            )
        else:
            for number, entry in enumerate(steps_or_function, start=1):
                if not callable(entry):
                    _as_step(entry, f"ScriptedModel: script step {number}")
                self._steps.append(entry)
        self._next = 0
        self._calls = 0
        self._answered = 0

    # -- introspection --------------------------------------------------------------------------------------------

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
        """Steps not yet used; None for a function script, which has no fixed length."""
        if self._function is not None:
            return None
        with self._lock:
            return len(self._steps) - self._next

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
        with self._lock:
            if self._function is not None:
                entry = self._function
                index = self._next
                self._next += 1
            elif self._next < len(self._steps):
                entry = self._steps[self._next]
                index = self._next
                self._next += 1
            else:
                entry = None
                index = self._next
            slot = self._reserve_locked()

        if entry is None:
            return self._exhausted(slot, request, codec, where)
        return _Pending(request, codec, model_request, entry, index, slot, where)

    def _failed_entry(self, pending: _Pending, exc: Exception) -> Any:
        """A bug in the test's script: fail the trial loudly, never retry it."""
        label = "script function" if self._function is not None else f"script step {pending.index + 1}"
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
            if inspect.isawaitable(value):  # an async script function (e.g. one that simulates latency)
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
        self._record(slot, request, encoded.status, encoded.headers, encoded.body)
        return build_response(request, encoded.status, encoded.headers, encoded.body)

    def _exhausted(self, slot: int, request: Any, codec: Codec, where: str) -> Any:
        with self._lock:
            answered = self._answered
        if self._function is not None:
            reason = f"the script function returned None for {where}"
        else:
            reason = f"{where} found no step left"
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
