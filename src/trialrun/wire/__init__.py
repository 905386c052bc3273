"""Wire codecs: one per model API, JSON and server-sent events, both directions.

`decode_trajectory(exchanges)` reads an agent's `Trajectory` out of recorded HTTP exchanges whatever API they
speak: one turn per successful model response, tool results from the request that follows it.

May import: `_util` and `trajectory` only; the transports, the scrubber and
everything above stand on the codecs, and they know none of it.
"""

from __future__ import annotations

import json

from .._util.command_tools import command_argument
from ..trajectory import Conversation, Trajectory, Turn
from ._codec import Codec
from ._encoding import readable_body
from ._threads import Thread, Threader, user_prompt
from ._types import (
    EncodedResponse,
    Exchange,
    Message,
    ModelRequest,
    ModelResponse,
    ProviderError,
    Step,
    ToolSpec,
    WireError,
)
from .anthropic import AnthropicCodec
from .gemini import GeminiCodec
from .openai_chat import OpenAIChatCodec
from .openai_responses import OpenAIResponsesCodec

__all__ = [
    "Codec",
    "CODECS",
    "codec_for",
    "codec_named",
    "decode_trajectory",
    "first_prompt",
    "decode_exchange",
    "EncodedResponse",
    "Exchange",
    "Message",
    "ModelRequest",
    "ModelResponse",
    "ProviderError",
    "Step",
    "ToolSpec",
    "WireError",
]

CODECS: dict[str, Codec] = {
    codec.api: codec
    for codec in (OpenAIChatCodec(), OpenAIResponsesCodec(), AnthropicCodec(), GeminiCodec())
}


def codec_named(api: str) -> Codec:
    """The codec for an API name ("openai-chat", "openai-responses", "anthropic", "gemini")."""
    try:
        return CODECS[api]
    except KeyError:
        raise ValueError(f"unknown api {api!r}; expected one of {', '.join(CODECS)}") from None


def codec_for(path: str) -> Codec | None:
    """The codec whose API owns this request path, or None for traffic that is not a model call."""
    for codec in CODECS.values():
        if codec.handles(path):
            return codec
    return None


def decode_exchange(exchange: Exchange, number: int) -> tuple[ModelRequest | None, ModelResponse | None]:
    """Decode one exchange's request and (successful) response; raise WireError naming the exchange."""
    codec = codec_for(exchange.path)
    if codec is None:
        return None, None
    where = f"exchange {number} ({exchange.method} {exchange.path})"
    try:
        raw = readable_body(exchange.request_headers, exchange.request_body, "request body")
        body = json.loads(raw) if raw else {}
    except WireError as exc:
        raise WireError(f"{where}: {exc}") from None
    except ValueError as exc:
        raise WireError(f"{where}: request body is not valid JSON ({exc})") from None
    if not isinstance(body, dict):
        raise WireError(f"{where}: request body is JSON but not an object")
    try:
        request = codec.decode_request(body, exchange.path)
        response = None
        if 200 <= exchange.status < 300:
            streamed = exchange.streamed or bool(body.get("stream")) or "streamGenerateContent" in exchange.path
            raw = readable_body(exchange.response_headers, exchange.response_body, "response body")
            response = codec.decode_response(raw, streamed)
    except WireError as exc:
        raise WireError(f"{where}: {exc}") from None
    return request, response


def decode_trajectory(exchanges: list[Exchange]) -> Trajectory:
    """Read a Trajectory out of recorded exchanges.

    Each successful model response is a turn of the conversation its request belongs to: requests are threaded
    into conversations by their message history (`_threads`), so a title request or a sub-agent sent between the
    main loop's requests is kept as a conversation of its own, never counted as a main turn. A turn's tool results
    are read from the later requests of ITS conversation, matched by call id (in order where the API has no ids);
    a call that never gets a result is noted. Error responses (a 429 that was retried) and exchanges that could
    not be decoded are not turns; they are written to `trajectory.notes` so nothing disappears silently.
    `trajectory.prompt` is what the main conversation was asked.
    """
    trajectory = Trajectory()
    threads = Threader()
    first_unreadable_prompt: str | None = None
    offered: dict[str, None] = {}
    for number, exchange in enumerate(exchanges, start=1):
        try:
            request, response = decode_exchange(exchange, number)
        except WireError as exc:
            trajectory.notes.append(str(exc))
            if first_unreadable_prompt is None:
                first_unreadable_prompt = first_prompt([exchange])  # its response was unreadable, its request not
            continue
        if request is None:
            continue
        trajectory.model_calls += 1
        codec = CODECS[request.api]
        if not codec.error_flag:
            _unflagged(trajectory, request, codec.title)
        thread = threads.place(request)
        if request.tools:
            for spec in request.tools:
                if spec.name not in offered:
                    offered[spec.name] = None
                    key = command_argument(spec.name, spec.parameters, spec.description)
                    if key is not None:
                        trajectory.command_tools[spec.name] = key
        if thread.pending or thread.unanswered:
            _attach_results(thread, request)
        if response is None:
            trajectory.notes.append(
                f"exchange {number} ({exchange.method} {exchange.path}): provider answered HTTP {exchange.status}: "
                + exchange.response_body[:200].decode("utf-8", "replace")
            )
            continue
        offered_here = request.tool_names
        for call in response.tool_calls:
            if call.name not in offered_here:
                trajectory.notes.append(
                    f"exchange {number}: model called tool {call.name!r}, which the request did not offer"
                    + ("" if offered_here else " (it offered no tools)")
                )
        trajectory.notes.extend(f"exchange {number} ({exchange.method} {exchange.path}): {note}" for note in response.notes)
        turn = Turn(text=response.text, tool_calls=response.tool_calls, usage=response.usage, model=response.model,
                    exchange=number)
        threads.answered(thread, response, turn)
    trajectory.offered_tools = list(offered)
    main = threads.main()
    for thread in threads.threads:
        for call in thread.pending.values():
            trajectory.notes.append(f"tool call {call.name!r} (id {call.id}) never got a result"
                                    + ("" if thread is main else f" (in {threads.role(thread)} conversation {thread.number})"))
        if thread is main:
            trajectory.turns = thread.turns
            trajectory.prompt = thread.prompt or None
            continue
        trajectory.other_conversations.append(Conversation(
            threads.role(thread), thread.turns, thread.prompt or None, _clip(thread.system), list(thread.tools),
            thread.requests,
        ))
    if main is None and first_unreadable_prompt is not None:
        trajectory.prompt = first_unreadable_prompt
    if main is not None and not offered and len(main.turns) >= 2:
        trajectory.notes.append(NO_TOOLS_NOTE)  # a loop of model calls without native tools: a text protocol
    return trajectory


#: The note on a trajectory whose main loop made several model calls but never offered a tool: tool use, if any,
#: was not on the wire (a single tool-less call is plain chat and gets no note).
NO_TOOLS_NOTE = ("no model request offered any tools: if this agent uses tools, it does so in text (a text "
                 "protocol such as ReAct) that is not visible on the wire, so no tool call or command was seen")


def _clip(text: str, limit: int = 200) -> str | None:
    if not text:
        return None
    return text if len(text) <= limit else text[: limit - 1] + "…"


def first_prompt(exchanges: list[Exchange]) -> str | None:
    """What the agent was asked: the last user message of its first model request that can be read (later requests
    repeat it under the turns that followed). None when there is no model request or it has no user text (an agent
    driven by its system prompt alone)."""
    for exchange in exchanges:
        codec = codec_for(exchange.path)
        if codec is None or not exchange.request_body:
            continue  # not a model call (a token endpoint, a health check)
        try:
            body = json.loads(exchange.request_body)
            request = codec.decode_request(body, exchange.path) if isinstance(body, dict) else None
        except (ValueError, WireError):
            continue  # decode_trajectory notes the unreadable body; the next request repeats the prompt
        if request is not None:
            return user_prompt(request) or None
    return None


def _unflagged(trajectory: Trajectory, request: ModelRequest, api: str) -> None:
    """Note the tool results of a request over an API without an error flag: their `is_error` says nothing."""
    for message in request.messages:
        for result in message.tool_results:
            if result.call_id is not None:
                trajectory.error_flags_unknown.setdefault(result.call_id, f"the wire ({api}) has no error flag")


def _attach_results(thread: Thread, request: ModelRequest) -> None:
    """Give the conversation's turns the results this request carries for their tool calls: by call id, from
    anywhere in the request's history (an agent may answer a call after another request); id-less calls (Gemini)
    take the results after the request's last assistant message, in order."""
    if thread.pending:
        for message in request.messages:
            for result in message.tool_results:
                call = thread.pending.pop(result.call_id, None) if result.call_id else None
                if call is None:
                    continue
                for turn in reversed(thread.turns):
                    if any(c is call for c in turn.tool_calls):
                        turn.tool_results.append(result)
                        break
    if thread.unanswered:
        results = [r for r in request.last_tool_results if r.call_id is None or r.call_id not in thread.call_ids]
        if results:
            turn = thread.unanswered.pop(0)
            turn.tool_results.extend(results)
