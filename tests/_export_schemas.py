"""The published formats `trialrun export` writes, as checks written down from their specifications (neither
publishes a JSON Schema file, so these are derived from the specification text, as data, each citing where).

OTLP JSON: the protobuf JSON mapping of `ExportTraceServiceRequest` (opentelemetry-proto:
opentelemetry/proto/trace/v1/trace.proto, common/v1/common.proto, resource/v1/resource.proto) under the OTLP
specification's JSON encoding rules: lowerCamelCase field names, trace and span ids as hex (16 and 8 bytes), enums
as integers (SpanKind 0-5, StatusCode 0-2), 64-bit integers (times, intValue) as decimal strings.

GenAI spans: open-telemetry/semantic-conventions model/gen-ai/spans.yaml and registry.yaml at c9e48b1d1^ (the
last commit before they moved to semantic-conventions-genai): span kinds, required attributes, span names, the
`gen_ai.operation.name` and `gen_ai.provider.name` values and attribute types.

ATIF: laude-institute/harbor docs/rfcs/0001-trajectory-format.md, ATIF-v1.4 (its tables of required and optional
fields and types), with the validators of Harbor's pydantic models the RFC names (extra fields forbidden, step ids
sequential from 1, an observation's source_call_id naming a tool call of the same step, agent-only fields only on
agent steps).
"""

from __future__ import annotations

from typing import Any

_HEX = {"type": "string", "pattern": "^[0-9a-f]+$"}
_INT64 = {"type": "string", "pattern": "^[0-9]+$"}
_ANY_VALUE: dict[str, Any] = {
    "type": "object", "minProperties": 1, "maxProperties": 1, "additionalProperties": False,
    "properties": {"stringValue": {"type": "string"}, "boolValue": {"type": "boolean"},
                   "intValue": {"type": "string", "pattern": "^-?[0-9]+$"}, "doubleValue": {"type": "number"},
                   "arrayValue": {"type": "object", "properties": {"values": {"type": "array", "items": {"$ref": "#/$defs/anyValue"}}}},
                   "kvlistValue": {"type": "object"}, "bytesValue": {"type": "string"}},
}
_KEY_VALUES = {"type": "array", "items": {"type": "object", "required": ["key", "value"], "additionalProperties": False,
                                          "properties": {"key": {"type": "string"}, "value": {"$ref": "#/$defs/anyValue"}}}}
_SPAN = {
    "type": "object", "required": ["traceId", "spanId", "name", "kind", "startTimeUnixNano", "endTimeUnixNano"],
    "additionalProperties": False,
    "properties": {
        "traceId": {**_HEX, "minLength": 32, "maxLength": 32}, "spanId": {**_HEX, "minLength": 16, "maxLength": 16},
        "parentSpanId": {**_HEX, "minLength": 16, "maxLength": 16}, "traceState": {"type": "string"},
        "flags": {"type": "integer"}, "name": {"type": "string", "minLength": 1},
        "kind": {"type": "integer", "minimum": 0, "maximum": 5},
        "startTimeUnixNano": _INT64, "endTimeUnixNano": _INT64, "attributes": _KEY_VALUES,
        "droppedAttributesCount": {"type": "integer"}, "events": {"type": "array"}, "droppedEventsCount": {"type": "integer"},
        "links": {"type": "array"}, "droppedLinksCount": {"type": "integer"},
        "status": {"type": "object", "additionalProperties": False,
                   "properties": {"message": {"type": "string"}, "code": {"type": "integer", "minimum": 0, "maximum": 2}}},
    },
}
OTLP_TRACES: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$defs": {"anyValue": _ANY_VALUE},
    "type": "object", "required": ["resourceSpans"], "additionalProperties": False,
    "properties": {"resourceSpans": {"type": "array", "items": {
        "type": "object", "additionalProperties": False,
        "properties": {
            "resource": {"type": "object", "properties": {"attributes": _KEY_VALUES}},
            "schemaUrl": {"type": "string"},
            "scopeSpans": {"type": "array", "items": {
                "type": "object", "additionalProperties": False,
                "properties": {"scope": {"type": "object", "required": ["name"],
                                         "properties": {"name": {"type": "string"}, "version": {"type": "string"}}},
                               "schemaUrl": {"type": "string"},
                               "spans": {"type": "array", "items": _SPAN}}}}}}}},
}

SPAN_KIND = {"INTERNAL": 1, "CLIENT": 3}
#: registry.yaml: the well-known values (both enums are open: other values are allowed, these are the listed ones)
OPERATION_NAMES = {"chat", "generate_content", "text_completion", "embeddings", "retrieval", "create_agent",
                   "invoke_agent", "execute_tool", "invoke_workflow"}
PROVIDER_NAMES = {"openai", "gcp.gen_ai", "gcp.vertex_ai", "gcp.gemini", "anthropic", "cohere", "azure.ai.inference",
                  "azure.ai.openai", "ibm.watsonx.ai", "aws.bedrock", "perplexity", "x_ai", "deepseek", "groq",
                  "mistral_ai"}
#: spans.yaml: per operation, the span kind, the required attributes and how the name is made
GENAI_SPANS: dict[str, dict[str, Any]] = {
    "chat": {"kind": SPAN_KIND["CLIENT"], "required": {"gen_ai.operation.name", "gen_ai.provider.name"},
             "name": ("gen_ai.operation.name", "gen_ai.request.model")},  # span.gen_ai.inference.client
    "invoke_agent": {"kind": SPAN_KIND["INTERNAL"], "required": {"gen_ai.operation.name", "gen_ai.provider.name"},
                     "name": ("gen_ai.operation.name", "gen_ai.agent.name")},  # span.gen_ai.invoke_agent.internal
    "execute_tool": {"kind": SPAN_KIND["INTERNAL"], "required": {"gen_ai.operation.name", "gen_ai.tool.name"},
                     "name": ("gen_ai.operation.name", "gen_ai.tool.name")},  # span.gen_ai.execute_tool.internal
}
#: registry.yaml: attribute types (int: an OTLP intValue; string: a stringValue)
GENAI_TYPES = {"gen_ai.usage.input_tokens": "intValue", "gen_ai.usage.output_tokens": "intValue",
               "gen_ai.usage.cache_read.input_tokens": "intValue", "gen_ai.usage.cache_creation.input_tokens": "intValue",
               "gen_ai.request.model": "stringValue", "gen_ai.response.model": "stringValue",
               "gen_ai.conversation.id": "stringValue", "gen_ai.agent.name": "stringValue",
               "gen_ai.tool.name": "stringValue", "gen_ai.tool.call.id": "stringValue", "gen_ai.tool.type": "stringValue"}

_EXTRA = {"type": "object"}
_ATIF_METRICS = {"type": "object", "additionalProperties": False, "properties": {
    "prompt_tokens": {"type": "integer"}, "completion_tokens": {"type": "integer"}, "cached_tokens": {"type": "integer"},
    "cost_usd": {"type": "number"}, "prompt_token_ids": {"type": "array", "items": {"type": "integer"}},
    "completion_token_ids": {"type": "array", "items": {"type": "integer"}}, "logprobs": {"type": "array"},
    "extra": _EXTRA}}
_ATIF_STEP = {
    "type": "object", "required": ["step_id", "source", "message"], "additionalProperties": False,
    "properties": {
        "step_id": {"type": "integer", "minimum": 1}, "timestamp": {"type": "string"},
        "source": {"enum": ["system", "user", "agent"]}, "model_name": {"type": "string"},
        "reasoning_effort": {"type": ["string", "number"]}, "message": {"type": "string"},
        "reasoning_content": {"type": "string"},
        "tool_calls": {"type": "array", "items": {
            "type": "object", "required": ["tool_call_id", "function_name", "arguments"], "additionalProperties": False,
            "properties": {"tool_call_id": {"type": "string"}, "function_name": {"type": "string"},
                           "arguments": {"type": "object"}}}},
        "observation": {"type": "object", "required": ["results"], "additionalProperties": False, "properties": {
            "results": {"type": "array", "items": {"type": "object", "additionalProperties": False, "properties": {
                "source_call_id": {"type": ["string", "null"]}, "content": {"type": ["string", "null"]},
                "subagent_trajectory_ref": {"type": "array"}}}}}},
        "metrics": _ATIF_METRICS, "extra": _EXTRA,
    },
    # agent-only fields (the RFC: "Only applicable when source is agent")
    "if": {"properties": {"source": {"const": "agent"}}},
    "else": {"not": {"anyOf": [{"required": [name]} for name in
                               ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")]}},
}
ATIF_V1_4: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object", "required": ["schema_version", "session_id", "agent", "steps"], "additionalProperties": False,
    "properties": {
        "schema_version": {"const": "ATIF-v1.4"}, "session_id": {"type": "string", "minLength": 1},
        "agent": {"type": "object", "required": ["name", "version"], "additionalProperties": False, "properties": {
            "name": {"type": "string"}, "version": {"type": "string"}, "model_name": {"type": "string"}, "extra": _EXTRA}},
        "steps": {"type": "array", "items": _ATIF_STEP}, "notes": {"type": "string"},
        "final_metrics": {"type": "object", "additionalProperties": False, "properties": {
            "total_prompt_tokens": {"type": "integer"}, "total_completion_tokens": {"type": "integer"},
            "total_cached_tokens": {"type": "integer"}, "total_cost_usd": {"type": "number"},
            "total_steps": {"type": "integer"}, "extra": _EXTRA}},
        "extra": _EXTRA,
    },
}


def atif_problems(trajectory: dict[str, Any]) -> list[str]:
    """What Harbor's model validators say beyond the field types: step ids sequential from 1, and every
    observation result's source_call_id naming a tool call of its own step."""
    problems = []
    for index, step in enumerate(trajectory["steps"]):
        if step["step_id"] != index + 1:
            problems.append(f"steps[{index}].step_id: expected {index + 1}, got {step['step_id']}")
        ids = {call["tool_call_id"] for call in step.get("tool_calls", [])}
        if len(ids) != len(step.get("tool_calls", [])):
            problems.append(f"step {step['step_id']}: duplicate tool_call_id")
        for result in step.get("observation", {}).get("results", []):
            if result.get("source_call_id") is not None and result["source_call_id"] not in ids:
                problems.append(f"step {step['step_id']}: source_call_id {result['source_call_id']!r} is not a tool call of it")
    return problems


def attributes(span: dict[str, Any]) -> dict[str, Any]:
    """A span's attributes as {key: the one-key AnyValue}."""
    return {item["key"]: item["value"] for item in span.get("attributes", [])}


def genai_problems(span: dict[str, Any]) -> list[str]:
    """What the GenAI conventions require of a span (by its gen_ai.operation.name)."""
    attrs = attributes(span)
    operation = attrs.get("gen_ai.operation.name", {}).get("stringValue")
    if operation not in GENAI_SPANS:
        return [f"{span['name']}: gen_ai.operation.name {operation!r} is not one trialrun writes"]
    rule = GENAI_SPANS[operation]
    problems = [f"{span['name']}: kind {span['kind']}, expected {rule['kind']}"] if span["kind"] != rule["kind"] else []
    problems += [f"{span['name']}: required attribute {key} missing" for key in rule["required"] - set(attrs)]
    first, second = rule["name"]
    named = " ".join(str(attrs[key]["stringValue"]) for key in (first, second) if key in attrs)
    if span["name"] != named:
        problems.append(f"span name {span['name']!r}, expected {named!r}")
    if operation not in OPERATION_NAMES:
        problems.append(f"{span['name']}: operation {operation!r}")
    provider = attrs.get("gen_ai.provider.name", {}).get("stringValue")
    if provider is not None and provider not in PROVIDER_NAMES:
        problems.append(f"{span['name']}: provider {provider!r} is not a registry value")
    for key, kind in GENAI_TYPES.items():
        if key in attrs and kind not in attrs[key]:
            problems.append(f"{span['name']}: {key} is {attrs[key]}, expected a {kind}")
    return problems
