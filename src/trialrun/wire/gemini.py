"""Google Gemini `generateContent` / `streamGenerateContent` (REST, `?alt=sse` streams), both directions.

Neutral conventions this codec keeps:

- The model name is in the path (`/v1beta/models/{model}:generateContent`); streaming is the
  `streamGenerateContent` method. Streams are SSE (`?alt=sse`); a JSON array of chunks (no `alt=sse`) is read too.
- A `user` (or legacy `function`) content's `functionResponse` parts become ONE `Message(role="tool")`; its text
  parts follow as a `Message(role="user")`. `model` contents are assistant messages.
- Tool-call ids: Gemini sends `functionCall.id` only on some models; without one the call's id is None and results
  are matched by order. A result's `call_id` is the `functionResponse.id` if present, else None.
- Tool-result content: `functionResponse.response` is an object. The common single-key wrappers are unwrapped when
  their value is a string (`{"output": s}`, `{"result": s}`, `{"return_value": s}`, `{"content": s}` -> s), and
  `{"error": ...}` alone marks the result `is_error` (Google's documented convention, used by `encode_request`).
  Anything else is the compact JSON of the response object.
- `thought: true` parts are the model's reasoning, not its answer: skipped. Text parts are joined with "" in
  model messages and responses (stream chunks concatenate), with "\\n" in user content and system instructions.
- Field names: the REST API accepts both JSON spellings of its proto fields, camelCase (`functionCall`,
  `usageMetadata`) and the proto names (`function_call`, `function_response`, `inline_data`, `usage_metadata`), which
  clients such as llm-gemini and LiteLLM send; both are read, in requests and responses. Rendering uses camelCase.
- Built-in tools (`googleSearch`, `codeExecution`, ...) have no function name and are not in `ModelRequest.tools`.
- Usage: `input_tokens` = promptTokenCount + toolUsePromptTokenCount (the cached part included, as Gemini counts
  it), `cached_input_tokens` = cachedContentTokenCount, `output_tokens` = candidatesTokenCount +
  thoughtsTokenCount (thinking is billed as output, and Anthropic's output_tokens include it too).
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from typing import Any

from ..trajectory import ToolCall, ToolResult, Usage
from ._codec import Codec, Outgoing, decode_call, default_usage, json_body, parse_json, retry_after_value, split_evenly
from ._sse import parse_sse, render_sse
from ._types import EncodedResponse, Message, ModelRequest, ModelResponse, ProviderError, Step, ToolSpec, WireError
from ._user_turns import Gathered, TurnWriter, read_messages, tool_list, tool_spec

__all__ = ["GeminiCodec"]

_PATH = re.compile(r"/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)$")

_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

_ERROR_MESSAGES = {
    "RESOURCE_EXHAUSTED": "Resource has been exhausted (e.g. check quota).",
    "UNAVAILABLE": "The model is overloaded. Please try again later.",
}

_RESULT_WRAPPERS = ("output", "result", "return_value", "content")


class GeminiCodec(Codec):
    """Reads and writes Gemini generateContent traffic; see the module docstring for the neutral conventions."""

    api = "gemini"
    title = "Gemini"
    error_flag = True

    def handles(self, path: str) -> bool:
        return _PATH.search(path) is not None

    def request_path(self, model: str) -> str:
        return f"/v1beta/models/{model}:generateContent"

    # ----------------------------------------------------------------------------------------------- requests

    def decode_request(self, body: dict[str, Any], path: str = "") -> ModelRequest:
        messages = read_messages(body, "contents", _decode_content)
        tools = _decode_tools(body.get("tools"))
        system = _decode_system(body.get("systemInstruction", body.get("system_instruction")))
        request = self._request(body, path, messages, tools, system)
        # The model and whether it streams are in the path (`models/{model}:streamGenerateContent`), not the body.
        match = _PATH.search(path)
        request.model = match.group("model") if match else None
        request.stream = bool(match and match.group("method") == "streamGenerateContent")
        return request

    def _encode_request(self, out: Outgoing) -> dict[str, Any]:
        system, contents = _Writer().write(out.messages, out.system)
        body: dict[str, Any] = {"contents": contents}
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        if out.tools:
            body["tools"] = [{"functionDeclarations": [_declaration_json(tool) for tool in out.tools]}]
        if out.max_tokens:
            body["generationConfig"] = {"maxOutputTokens": out.max_tokens}
        return body

    # ---------------------------------------------------------------------------------------------- responses

    def decode_response(self, body: bytes, streamed: bool) -> ModelResponse:
        head = body.lstrip()[:1]
        if head == b"[":
            chunks = parse_json(body, "response stream (JSON array)")
            return _decode_chunks(chunks if isinstance(chunks, list) else [chunks], streamed=True)
        if head == b"{" or (not streamed and not body.lstrip().startswith((b"data:", b"event:", b":"))):
            return _decode_chunks([parse_json(body, "response body")], streamed=False)
        events = parse_sse(body)
        if not events:
            raise WireError("response stream has no events (empty or truncated)")
        chunks = [event.json(f"stream event {number}") for number, event in enumerate(events, start=1)]
        return _decode_chunks(chunks, streamed=True)

    def encode_response(self, step: Step, request: ModelRequest) -> EncodedResponse:
        if step.error is not None:
            return self.encode_error(step.error)
        usage = default_usage(step, request)
        model = step.model or request.model or "gemini-scripted"
        response_id = _response_id(len(request.messages), step, model)
        calls = [{"functionCall": _function_call_json(call)} for call in step.tool_calls]
        if not request.stream:
            parts = ([{"text": step.text}] if step.text or not calls else []) + calls
            body = _chunk(parts, model, response_id, _usage_json(usage), finish=True)
            return EncodedResponse(200, {"content-type": "application/json; charset=UTF-8"}, json_body(body))
        # A stream: the text in a few chunks, function calls whole (Gemini never splits them), usage on the last.
        pieces = split_evenly(step.text, 3)
        prompt_only = {"promptTokenCount": usage.input_tokens, "totalTokenCount": usage.input_tokens}
        chunks = [_chunk([{"text": piece}], model, response_id, prompt_only) for piece in pieces[:-1]]
        last_parts = ([{"text": pieces[-1]}] if pieces else []) + calls
        chunks.append(_chunk(last_parts or [{"text": ""}], model, response_id, _usage_json(usage), finish=True))
        stream = render_sse([(None, chunk) for chunk in chunks])
        return EncodedResponse(200, {"content-type": "text/event-stream"}, stream)

    def encode_error(self, error: ProviderError) -> EncodedResponse:
        fallback = "INTERNAL" if error.status >= 500 else "INVALID_ARGUMENT"
        status = error.type or _STATUSES.get(error.status) or fallback
        message = error.message or _ERROR_MESSAGES.get(status, status.replace("_", " ").lower())
        payload: dict[str, Any] = {"code": error.status, "message": message, "status": status}
        headers = {"content-type": "application/json; charset=UTF-8"}
        if error.retry_after is not None:
            seconds = retry_after_value(error.retry_after)
            headers["retry-after"] = seconds
            payload["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{seconds}s"}]
        return EncodedResponse(error.status, headers, json_body({"error": payload}))


# ------------------------------------------------------------------------------------------ request decoding


@lru_cache(maxsize=64)
def _snake(name: str) -> str:
    """The proto field name of a camelCase JSON name: functionCall -> function_call."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _has(data: dict[str, Any], name: str) -> bool:
    """Whether `data` has the field `name` (camelCase) in either JSON spelling the API accepts."""
    return name in data or _snake(name) in data


def _field(data: dict[str, Any], name: str, default: Any = None) -> Any:
    """The field `name` (camelCase) of `data`, in either spelling: camelCase wins when both are present."""
    if name in data:
        return data[name]
    return data.get(_snake(name), default)


def _parts(content: dict[str, Any], where: str) -> list[dict[str, Any]]:
    parts = content.get("parts", [])
    if not isinstance(parts, list) or not all(isinstance(part, dict) for part in parts):
        raise WireError(f"{where}.parts is not a list of part objects")
    return parts


def _decode_content(content: Any, where: str) -> list[Message]:
    if not isinstance(content, dict):
        raise WireError(f"{where} is a {type(content).__name__}, expected an object with 'role' and 'parts'")
    role = content.get("role", "user")
    if role not in ("user", "model", "function"):
        raise WireError(f"{where}.role is {role!r}, expected 'user' or 'model'")
    gathered = Gathered()
    for number, part in enumerate(_parts(content, where)):
        here = f"{where}.parts[{number}]"
        if "text" in part:
            if not part.get("thought"):
                gathered.texts.append(_text(part, here))
        elif _has(part, "functionCall") and role == "model":
            gathered.calls.append(_function_call(_field(part, "functionCall"), here))
        elif _has(part, "functionResponse"):
            gathered.results.append(_function_response(_field(part, "functionResponse"), here))
        # inlineData, fileData, executableCode, codeExecutionResult (either spelling): not the agent's tool traffic.
    return gathered.messages("assistant" if role == "model" else "user")


def _text(part: dict[str, Any], where: str) -> str:
    text = part.get("text")
    if not isinstance(text, str):
        raise WireError(f"{where}: 'text' is a {type(text).__name__}, expected a string")
    return text


def _function_call(call: Any, where: str) -> ToolCall:
    if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
        raise WireError(f"{where}: functionCall has no 'name'")
    call_id = call.get("id")
    if call_id is not None and not isinstance(call_id, str):
        raise WireError(f"{where}: functionCall 'id' is a {type(call_id).__name__}, expected a string")
    name = call["name"]
    return decode_call(name, call.get("args"), call_id)


def _function_response(response: Any, where: str) -> ToolResult:
    if not isinstance(response, dict):
        raise WireError(f"{where}: functionResponse is not an object")
    call_id = response.get("id")
    if call_id is not None and not isinstance(call_id, str):
        raise WireError(f"{where}: functionResponse 'id' is a {type(call_id).__name__}, expected a string")
    payload = response.get("response", {})
    if not isinstance(payload, dict):
        raise WireError(f"{where}: functionResponse 'response' is a {type(payload).__name__}, expected an object")
    content, is_error = _result_content(payload)
    return ToolResult(call_id=call_id, content=content, is_error=is_error)


def _result_content(payload: dict[str, Any]) -> tuple[str, bool]:
    if len(payload) == 1:
        (key, value), = payload.items()
        if key == "error":
            return (value if isinstance(value, str) else _compact(value)), True
        if key in _RESULT_WRAPPERS and isinstance(value, str):
            return value, False
    return _compact(payload), False


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _decode_system(system: Any) -> str | None:
    if system is None or isinstance(system, str):
        return system
    if not isinstance(system, dict):
        raise WireError(f"'systemInstruction' is a {type(system).__name__}, expected an object with 'parts'")
    parts = _parts(system, "systemInstruction")
    return "\n".join(_text(part, f"systemInstruction.parts[{n}]") for n, part in enumerate(parts) if "text" in part)


def _decode_tools(tools: Any) -> list[ToolSpec]:
    specs: list[ToolSpec] = []
    for number, tool in enumerate(tool_list(tools)):
        if not isinstance(tool, dict):
            raise WireError(f"tools[{number}] is not an object")
        declarations = tool.get("functionDeclarations", tool.get("function_declarations", []))
        if not isinstance(declarations, list):
            raise WireError(f"tools[{number}].functionDeclarations is not a list")
        for index, declaration in enumerate(declarations):
            where = f"tools[{number}].functionDeclarations[{index}]"
            if not isinstance(declaration, dict) or not isinstance(declaration.get("name"), str):
                raise WireError(f"{where} has no string 'name'")
            keys = ("parametersJsonSchema", "parameters_json_schema", "parameters")
            schema = next((declaration[key] for key in keys if key in declaration), None)
            if schema is not None and not isinstance(schema, dict):
                raise WireError(f"{where} ({declaration['name']}): parameters are not an object")
            specs.append(tool_spec(declaration["name"], declaration.get("description"), schema))
    return specs


# ----------------------------------------------------------------------------------------- response decoding


def _decode_chunks(chunks: list[Any], streamed: bool) -> ModelResponse:
    """One response or the chunks of a stream: text concatenated, calls collected, the last usage wins."""
    if not chunks:
        raise WireError("response stream has no chunks")
    gathered = Gathered()
    usage: Usage | None = None
    model = response_id = stop_reason = None
    for number, chunk in enumerate(chunks, start=1):
        where = f"stream chunk {number}" if streamed else "response"
        if not isinstance(chunk, dict):
            raise WireError(f"{where} is a JSON {type(chunk).__name__}, expected a GenerateContentResponse object")
        if "error" in chunk:
            raise WireError(f"{where} is an error: {_error_detail(chunk['error'])}")
        candidates = chunk.get("candidates", [])
        if not isinstance(candidates, list):
            raise WireError(f"{where}: 'candidates' is not a list")
        if "candidates" not in chunk and not _has(chunk, "usageMetadata") and not _has(chunk, "promptFeedback"):
            raise WireError(f"{where} has no 'candidates' (not a GenerateContentResponse)")
        if candidates:
            candidate = candidates[0]
            if not isinstance(candidate, dict):
                raise WireError(f"{where}: candidates[0] is not an object")
            content = candidate.get("content") or {}
            if not isinstance(content, dict):
                raise WireError(f"{where}: candidates[0].content is not an object")
            for index, part in enumerate(_parts(content, f"{where} candidates[0].content")):
                here = f"{where} candidates[0].content.parts[{index}]"
                if "text" in part and not part.get("thought"):
                    gathered.texts.append(_text(part, here))
                elif _has(part, "functionCall"):
                    gathered.calls.append(_function_call(_field(part, "functionCall"), here))
            if isinstance(_field(candidate, "finishReason"), str):
                stop_reason = _field(candidate, "finishReason")
        elif isinstance(feedback := _field(chunk, "promptFeedback"), dict) and _field(feedback, "blockReason"):
            stop_reason = str(_field(feedback, "blockReason"))
        if _has(chunk, "usageMetadata"):
            usage = _usage(_field(chunk, "usageMetadata"), f"{where} usageMetadata")
        model = value if isinstance(value := _field(chunk, "modelVersion"), str) else model
        response_id = value if isinstance(value := _field(chunk, "responseId"), str) else response_id
    return gathered.response(usage=usage, model=model, stop_reason=stop_reason, id=response_id)


def _error_detail(error: Any) -> str:
    if isinstance(error, dict):
        return f"{error.get('status', '')} {error.get('message', '')}".strip()
    return str(error)


def _usage(raw: Any, where: str) -> Usage:
    if not isinstance(raw, dict):
        raise WireError(f"{where} is a {type(raw).__name__}, expected an object")

    def count(key: str) -> int:
        value = _field(raw, key) or 0
        if not isinstance(value, int) or isinstance(value, bool):
            raise WireError(f"{where}.{key} is {value!r}, expected an integer")
        return value

    return Usage(
        input_tokens=count("promptTokenCount") + count("toolUsePromptTokenCount"),
        output_tokens=count("candidatesTokenCount") + count("thoughtsTokenCount"),
        cached_input_tokens=count("cachedContentTokenCount"),
    )


# ------------------------------------------------------------------------------------------------- encoding


def _response_id(position: int, step: Step, model: str) -> str:
    """Derived from the conversation position and the answer, never random, so reruns render identical bytes."""
    calls = [(call.name, call.arguments, call.id) for call in step.tool_calls]
    raw = json.dumps([position, step.text, calls, model], sort_keys=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:22]


def _usage_json(usage: Usage) -> dict[str, int]:
    data = {
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": usage.output_tokens,
        "totalTokenCount": usage.input_tokens + usage.output_tokens,
    }
    if usage.cached_input_tokens:
        data["cachedContentTokenCount"] = usage.cached_input_tokens
    return data


def _chunk(
    parts: list[dict[str, Any]], model: str, response_id: str, usage: dict[str, int], finish: bool = False
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": model, "responseId": response_id}



def _function_call_json(call: ToolCall) -> dict[str, Any]:
    data: dict[str, Any] = {"name": call.name, "args": call.arguments}
    if call.id is not None:
        data["id"] = call.id
    return data


class _Writer(TurnWriter):
    """Contents as `encode_request` sends them. A `functionResponse` needs the function's name, which a neutral
    ToolResult does not carry: it is found from the result's call (by id, else the earliest unanswered call of the
    preceding model message)."""

    key = "parts"
    model_role = "model"

    def __init__(self) -> None:
        self._by_id: dict[str, str] = {}
        self._open: list[ToolCall] = []

    def assistant(self, message: Message) -> list[dict[str, Any]]:
        calls = message.tool_calls
        self._open = list(calls)
        self._by_id.update({call.id: call.name for call in calls if call.id})
        parts = [self.text(message.text)] if message.text or not calls else []
        return parts + [{"functionCall": _function_call_json(call)} for call in calls]

    def result(self, result: ToolResult) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self._name_for(result)}
        if result.call_id is not None:
            data["id"] = result.call_id
        data["response"] = {"error" if result.is_error else "output": result.content}
        return {"functionResponse": data}

    def is_result(self, block: dict[str, Any]) -> bool:
        return "functionResponse" in block

    def text(self, text: str) -> dict[str, Any]:
        return {"text": text}

    def _name_for(self, result: ToolResult) -> str:
        if result.call_id in self._by_id:
            self._open = [call for call in self._open if call.id != result.call_id]
            return self._by_id[result.call_id]
        if not self._open:
            raise ValueError(f"tool result (call id {result.call_id!r}) answers no tool call of an earlier message")
        return self._open.pop(0).name


def _declaration_json(tool: ToolSpec) -> dict[str, Any]:
    data: dict[str, Any] = {"name": tool.name, "description": tool.description}
    if tool.parameters:
        data["parametersJsonSchema"] = tool.parameters
    return data
