"""Wire codecs: one per model API, JSON and server-sent events, both directions.

`decode_trajectory(exchanges)` reads an agent's `Trajectory` out of recorded HTTP exchanges whatever API they
speak: one turn per successful model response, tool results from the request that follows it.
"""

from __future__ import annotations

import json

from ..trajectory import ToolResult, Trajectory, Turn
from ._codec import Codec
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
        body = json.loads(exchange.request_body) if exchange.request_body else {}
    except ValueError as exc:
        raise WireError(f"{where}: request body is not valid JSON ({exc})") from None
    if not isinstance(body, dict):
        raise WireError(f"{where}: request body is JSON but not an object")
    try:
        request = codec.decode_request(body, exchange.path)
        response = None
        if 200 <= exchange.status < 300:
            streamed = exchange.streamed or bool(body.get("stream")) or "streamGenerateContent" in exchange.path
            response = codec.decode_response(exchange.response_body, streamed)
    except WireError as exc:
        raise WireError(f"{where}: {exc}") from None
    return request, response


def decode_trajectory(exchanges: list[Exchange]) -> Trajectory:
    """Read a Trajectory out of recorded exchanges.

    Each successful model response is a turn. The results of a turn's tool calls are read from the NEXT model
    request (tool-role messages, tool_result blocks, function_call_output items), matched by call id. Error
    responses (a 429 that was retried) and exchanges that could not be decoded are not turns; they are written to
    `trajectory.notes` so nothing disappears silently. `trajectory.prompt` is what the agent was asked
    (`first_prompt`), so a report shows it even for a case that names no prompt of its own.
    """
    trajectory = Trajectory()
    prompt_seen = False  # the prompt is the first readable model request's (read once, not parsed twice)
    pending: Turn | None = None
    for number, exchange in enumerate(exchanges, start=1):
        try:
            request, response = decode_exchange(exchange, number)
        except WireError as exc:
            trajectory.notes.append(str(exc))
            if not prompt_seen and (prompt := first_prompt([exchange])) is not None:
                trajectory.prompt, prompt_seen = prompt, True  # its response was unreadable, its request not
            continue
        if request is None:
            continue
        if not prompt_seen:
            trajectory.prompt, prompt_seen = request.last_user_text or None, True
        if pending is not None:
            _attach_results(pending, request)
            pending = None
        if response is None:
            trajectory.notes.append(
                f"exchange {number} ({exchange.method} {exchange.path}): provider answered HTTP {exchange.status}: "
                + exchange.response_body[:200].decode("utf-8", "replace")
            )
            continue
        offered = set(request.tool_names)
        known = trajectory.offered_tools = trajectory.offered_tools or []
        known.extend(name for name in dict.fromkeys(request.tool_names) if name not in known)
        for call in response.tool_calls:
            if request.tools and call.name not in offered:
                trajectory.notes.append(f"exchange {number}: model called tool {call.name!r}, which the request did not offer")
        trajectory.notes.extend(f"exchange {number} ({exchange.method} {exchange.path}): {note}" for note in response.notes)
        turn = Turn(text=response.text, tool_calls=response.tool_calls, usage=response.usage, model=response.model)
        trajectory.turns.append(turn)
        pending = turn if turn.tool_calls else None
    return trajectory


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
            return request.last_user_text or None
    return None


def _attach_results(turn: Turn, request: ModelRequest) -> None:
    """Give `turn` the results that `request` carries for its tool calls (by id; in order when ids are absent)."""
    results = request.last_tool_results
    ids = {call.id for call in turn.tool_calls if call.id}
    if ids:
        matched: list[ToolResult] = [result for result in results if result.call_id in ids]
        if not matched:
            # A stateful API (previous_response_id) or an agent that rewrote ids: fall back to all results.
            by_id = {r.call_id: r for m in request.messages for r in m.tool_results}
            matched = [by_id[i] for i in (c.id for c in turn.tool_calls) if i in by_id]
        turn.tool_results = matched
    else:
        turn.tool_results = list(results)
