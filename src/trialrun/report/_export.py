"""`trialrun export`: a run's trajectories in formats other tools read.

- `otel`: OpenTelemetry GenAI spans as OTLP JSON (`{"resourceSpans": [...]}`, the protobuf JSON mapping of
  `opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest`, which `otel-cli`, the Collector's `otlpjson`
  receivers and most backends import). One trace per trial: an `invoke_agent {agent}` span (INTERNAL), under it a
  `chat {model}` span (CLIENT) per model turn of every conversation, and under each turn an `execute_tool {tool}`
  span (INTERNAL) per tool call, with the `gen_ai.*` attributes of the GenAI semantic conventions (model/gen-ai
  spans.yaml and registry.yaml of open-telemetry/semantic-conventions) and the opt-in content attributes
  (`gen_ai.output.messages`, `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`): this is a test run's record.
  A run records no time per turn, only each trial's duration: every span of a trial starts at the run's start and
  lasts the trial's duration, and the root span says so (`trialrun.timing`), rather than times nobody measured.
- `atif`: Harbor's Agent Trajectory Interchange Format (ATIF-v1.4, docs/rfcs/0001-trajectory-format.md of
  laude-institute/harbor), one trajectory a line (JSON Lines): a `user` step with the prompt, then an `agent` step
  per turn of the main conversation with its tool calls, their results as the observation and its token counts.
  A sub-agent's conversation is a trajectory of its own on the next line, named in its parent's `extra`. What
  ATIF has no field for (the verdicts, tool errors, refusals) is in the `extra` objects the format provides.

Both carry the files the trial left in its workdir (`TrialResult.files`): on the OTel root span as
`trialrun.files.summary`, `trialrun.files.changed` ("change path" each) and `trialrun.files.diff` (the unified diff,
bounded as the result keeps it); in ATIF under `extra.trialrun.files` (`summary`, `changed`, `diff`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..trajectory import Conversation, ToolCall, ToolResult, Turn
from .results import RunReport, TrialResult

__all__ = ["export_text", "otel_traces", "atif_trajectories", "ATIF_VERSION", "PROVIDERS"]

ATIF_VERSION = "ATIF-v1.4"
#: `gen_ai.provider.name` of each wire API (the registry's well-known values).
PROVIDERS = {"openai-chat": "openai", "openai-responses": "openai", "anthropic": "anthropic", "gemini": "gcp.gemini"}
_INTERNAL, _SERVER, _CLIENT = 1, 2, 3  # opentelemetry.proto.trace.v1.Span.SpanKind
_STATUS_ERROR = 2  # opentelemetry.proto.trace.v1.Status.StatusCode


def export_text(report: RunReport, fmt: str, sidecar: Path | None = None) -> tuple[str, int]:
    """The run in `fmt` ("otel" or "atif") as text, scrubbed as every file trialrun writes; and the trials in it.
    `sidecar`: the run's stored exchanges, where the spans read each turn's API and requested model."""
    from .._scrub import scrub_text

    trials = sum(len(case.trials) for case in report.cases)
    if fmt == "otel":
        text = json.dumps(otel_traces(report, sidecar), ensure_ascii=False, separators=(",", ":")) + "\n"
    elif fmt == "atif":
        text = "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in atif_trajectories(report))
    else:
        raise ValueError(f"unknown export format {fmt!r}; expected otel or atif")
    return scrub_text(text), trials


def _session(report: RunReport, case: str, trial: TrialResult) -> str:
    return f"{report.run_id}/{case}/{trial.trial}"


def _pairs(turn: Turn) -> list[tuple[ToolCall, ToolResult | None, str]]:
    """Each tool call of a turn with its result and an id: its own, or (a wire without ids) one made from its
    place, paired with the results in order."""
    by_id = {r.call_id: r for r in turn.tool_results if r.call_id}
    unnamed = [r for r in turn.tool_results if not r.call_id]
    pairs = []
    for index, call in enumerate(turn.tool_calls):
        result = by_id.get(call.id) if call.id else (unnamed.pop(0) if unnamed else None)
        pairs.append((call, result, call.id or f"call_{index + 1}"))
    return pairs


# -- OpenTelemetry ------------------------------------------------------------------------------------------
def _value(value: Any) -> dict[str, Any]:
    """An OTLP AnyValue (JSON mapping: 64-bit integers as strings)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_value(v) for v in value]}}
    return {"stringValue": str(value)}


def _attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": _value(value)} for key, value in values.items() if value is not None]


def _id(*parts: object, size: int) -> str:
    """A trace or span id (hex, `size` bytes) made from what it names, so an export is the same every time."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[: size * 2]


def _requests(index: Any, case: str, trial: int) -> dict[int, tuple[str, str | None]]:
    """Each stored exchange of a trial that is a model request: its wire API and the model it asked for (the
    result file keeps neither per turn), by exchange number; empty when the exchanges are not there."""
    from ..models._cassette_io import exchange_from_dict
    from ..wire import WireError, codec_for

    found: dict[int, tuple[str, str | None]] = {}
    if index is None:
        return found
    for record in index.read(case, trial).exchanges:
        try:
            exchange = exchange_from_dict(record)
            codec = codec_for(exchange.path)
            body = json.loads(exchange.request_body) if codec is not None and exchange.request_body else None
            if codec is not None and isinstance(body, dict):
                request = codec.decode_request(body, exchange.path)
                found[int(record["n"])] = (request.api, request.model)
        except (ValueError, TypeError, KeyError, WireError):
            continue  # a body cut when stored, or not a model request: the run's configuration says instead
    return found


def otel_traces(report: RunReport, sidecar: Path | None = None) -> dict[str, Any]:
    """The run as an OTLP JSON ExportTraceServiceRequest: one trace per trial."""
    from .._version import __version__
    from .exchanges import SidecarIndex

    index = SidecarIndex.scan(sidecar) if sidecar is not None and sidecar.is_file() else None
    spans: list[dict[str, Any]] = []
    for case in report.cases:
        for trial in case.trials:
            spans.extend(_trial_spans(report, case.name, trial, _requests(index, case.name, trial.trial)))
    resource = _attributes({"service.name": "trialrun", "trialrun.run_id": report.run_id,
                            "trialrun.regraded_from": report.regraded_from})
    return {"resourceSpans": [{"resource": {"attributes": resource},
                               "scopeSpans": [{"scope": {"name": "trialrun", "version": __version__}, "spans": spans}]}]}


def _trial_spans(report: RunReport, case: str, trial: TrialResult,
                 requests: dict[int, tuple[str, str | None]]) -> list[dict[str, Any]]:
    snapshot = report.config_snapshot
    agent = str(snapshot.get("agent") or "agent")
    first = requests.get(trial.trajectory.turns[0].exchange or 0) if trial.trajectory.turns else None
    api, model = first or (snapshot.get("api"), snapshot.get("model_name"))
    provider = PROVIDERS.get(str(api), "unknown")
    start = int(report.started_at.timestamp() * 1e9)
    timing = {"startTimeUnixNano": str(start), "endTimeUnixNano": str(start + int(trial.duration_s * 1e9))}
    trace = _id(report.run_id, case, trial.trial, size=16)
    root = _id(trace, "root", size=8)
    usage = trial.usage
    spans = [{
        "traceId": trace, "spanId": root, "name": f"invoke_agent {agent}", "kind": _INTERNAL, **timing,
        "attributes": _attributes({
            "gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": provider, "gen_ai.agent.name": agent,
            "gen_ai.request.model": model, "gen_ai.conversation.id": _session(report, case, trial),
            "gen_ai.usage.input_tokens": usage.input_tokens if usage else None,
            "gen_ai.usage.output_tokens": usage.output_tokens if usage else None,
            "error.type": trial.error.type if trial.error else None,
            "trialrun.case": case, "trialrun.trial": trial.trial, "trialrun.passed": trial.passed,
            "trialrun.score": trial.score, "trialrun.cost_usd": trial.cost_usd, "trialrun.status": trial.status,
            "trialrun.timing": "turn times are not recorded: every span of the trial covers the trial's duration "
                               "from the run's start", **_files_attributes(trial)}),
        "status": {"code": _STATUS_ERROR, "message": str(trial.error)} if trial.error else {},
    }]
    for place, conversation in enumerate(trial.trajectory.conversations):
        for number, turn in enumerate(conversation.turns, start=1):
            api, asked = requests.get(turn.exchange or 0, (None, None))
            spans.extend(_turn_spans(trace, root, (place, conversation), number, turn,
                                     PROVIDERS.get(str(api), provider), asked or model, timing))
    return spans + _mcp_spans(trace, root, trial, timing)


def _mcp_spans(trace: str, root: str, trial: TrialResult, timing: dict[str, str]) -> list[dict[str, Any]]:
    """A server-side span for each tool call an MCP server of the trial received (`Trajectory.mcp_calls`)."""
    spans = []
    for index, call in enumerate(trial.trajectory.mcp_calls):
        failed = call.is_error or call.error is not None or not call.answered
        spans.append({
            "traceId": trace, "spanId": _id(trace, "mcp", index, size=8), "parentSpanId": root,
            "name": f"tools/call {call.tool}", "kind": _SERVER, **timing,
            "attributes": _attributes({
                "mcp.method.name": "tools/call", "gen_ai.tool.name": call.tool, "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.call.arguments": json.dumps(call.arguments, ensure_ascii=False),
                "gen_ai.tool.call.result": call.content, "gen_ai.tool.call.id": call.call_id,
                "error.type": "tool_error" if call.is_error else "protocol_error" if call.error else None,
                "trialrun.mcp.server": call.server, "trialrun.mcp.joined": call.joined,
                "trialrun.mcp.model_name": call.model_name, "trialrun.exchange": call.exchange}),
            "status": {"code": _STATUS_ERROR, "message": call.error or "the tool's result is an error"} if failed else {},
        })
    return spans


def _files_attributes(trial: TrialResult) -> dict[str, Any]:
    """The files the trial left, as root-span attributes (none for a trial without a workdir)."""
    diff = trial.files
    if diff is None:
        return {}
    return {"trialrun.files.summary": diff.summary(),
            "trialrun.files.changed": [f"{item.change} {item.path}" for item in diff.files] or None,
            "trialrun.files.diff": diff.unified() or None}


def _files_extra(trial: TrialResult) -> dict[str, Any] | None:
    diff = trial.files
    if diff is None:
        return None
    return {"summary": diff.summary(), "diff": diff.unified(),
            "changed": [{"path": item.path, "change": item.change, "kind": item.kind, "note": item.note}
                        for item in diff.files],
            "not_examined": diff.not_examined}


def _turn_spans(trace: str, root: str, placed: tuple[int, Conversation], number: int, turn: Turn, provider: str,
                model: Any, timing: dict[str, str]) -> list[dict[str, Any]]:
    """A turn's `chat` span and an `execute_tool` span under it for each of its tool calls (`placed`: the
    conversation and its place among the trajectory's)."""
    place, conversation = placed
    chat = _id(trace, "chat", place, number, size=8)
    usage = turn.usage
    parts: list[dict[str, Any]] = [{"type": "text", "content": turn.text}] if turn.text else []
    parts += [{"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}
              for call in turn.tool_calls]
    spans = [{
        "traceId": trace, "spanId": chat, "parentSpanId": root, "name": f"chat {model}" if model else "chat",
        "kind": _CLIENT, **timing,
        "attributes": _attributes({
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": provider, "gen_ai.request.model": model,
            "gen_ai.response.model": turn.model,
            "gen_ai.usage.input_tokens": usage.input_tokens if usage else None,
            "gen_ai.usage.output_tokens": usage.output_tokens if usage else None,
            "gen_ai.usage.cache_read.input_tokens": usage.cached_input_tokens if usage else None,
            "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_input_tokens if usage else None,
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}], ensure_ascii=False),
            "trialrun.conversation": conversation.role, "trialrun.turn": number, "trialrun.exchange": turn.exchange}),
    }]
    for index, (call, result, call_id) in enumerate(_pairs(turn)):
        failed = result is not None and result.is_error
        spans.append({
            "traceId": trace, "spanId": _id(chat, "tool", index, size=8), "parentSpanId": chat,
            "name": f"execute_tool {call.name}", "kind": _INTERNAL, **timing,
            "attributes": _attributes({
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.name, "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.type": "function",
                "gen_ai.tool.call.arguments": call.raw_arguments or json.dumps(call.arguments, ensure_ascii=False),
                "gen_ai.tool.call.result": result.content if result is not None else None,
                "error.type": "tool_error" if failed else None,
                "trialrun.answered": result is not None}),
            "status": {"code": _STATUS_ERROR, "message": "the tool result is an error"} if failed else {},
        })
    return spans


# -- ATIF ---------------------------------------------------------------------------------------------------
def atif_trajectories(report: RunReport) -> list[dict[str, Any]]:
    """One ATIF trajectory per trial (and per sub-agent conversation of it, after its parent)."""
    found: list[dict[str, Any]] = []
    for case in report.cases:
        for trial in case.trials:
            found.extend(_atif_trial(report, case.name, trial))
    return found


def _atif_agent(report: RunReport) -> dict[str, Any]:
    from .._version import __version__

    snapshot = report.config_snapshot
    agent: dict[str, Any] = {"name": str(snapshot.get("agent") or "agent"),
                             "version": str(snapshot.get("agent_version") or f"trialrun {__version__}")}
    if snapshot.get("model_name"):
        agent["model_name"] = str(snapshot["model_name"])
    agent["extra"] = {"trialrun_version": __version__, "model": snapshot.get("model"), "api": snapshot.get("api")}
    return agent


def _atif_trial(report: RunReport, case: str, trial: TrialResult) -> list[dict[str, Any]]:
    session = _session(report, case, trial)
    trajectory = trial.trajectory
    others = [(f"{session}/{c.role}-{n}", c) for n, c in enumerate(trajectory.other_conversations, start=1)]
    main = Conversation("main", trajectory.turns, trajectory.prompt)
    extra = {"trialrun": {
        "run_id": report.run_id, "case": case, "trial": trial.trial, "passed": trial.passed, "score": trial.score,
        "status": trial.status, "error": str(trial.error) if trial.error else None,
        "verdicts": [{"grader": v.grader, "kind": v.kind, "passed": v.passed, "reason": v.reason} for v in trial.verdicts],
        "commands": trajectory.commands, "notes": trajectory.notes,
        "refused": [{"tool": d.tool, "call_id": d.call_id, "by": d.source, "rule": d.rule} for d in trajectory.denials],
        "other_conversations": [name for name, _ in others], "regraded_from": report.regraded_from,
        "files": _files_extra(trial),
        "mcp_servers": [asdict(server) for server in trajectory.mcp_servers],
        "mcp_calls": [asdict(call) for call in trajectory.mcp_calls]}}
    first = _atif_document(report, session, main, trial.cost_usd, extra)
    return [first] + [_atif_document(report, name, c, None, {"trialrun": {"parent_session_id": session,
                                                                          "role": c.role}}) for name, c in others]


def _atif_document(report: RunReport, session: str, conversation: Conversation, cost: float | None,
                   extra: dict[str, Any]) -> dict[str, Any]:
    steps: list[dict[str, Any]] = []
    if conversation.prompt:
        steps.append({"step_id": 1, "source": "user", "message": conversation.prompt})
    for turn in conversation.turns:
        steps.append(_atif_step(len(steps) + 1, turn))
    usages = [turn.usage for turn in conversation.turns if turn.usage is not None]
    metrics: dict[str, Any] = {"total_steps": len(steps)}
    if usages:
        metrics.update(total_prompt_tokens=sum(u.input_tokens for u in usages),
                       total_completion_tokens=sum(u.output_tokens for u in usages),
                       total_cached_tokens=sum(u.cached_input_tokens for u in usages))
    if cost is not None:
        metrics["total_cost_usd"] = cost
    return {"schema_version": ATIF_VERSION, "session_id": session, "agent": _atif_agent(report), "steps": steps,
            "final_metrics": metrics, "extra": extra}


def _atif_step(number: int, turn: Turn) -> dict[str, Any]:
    step: dict[str, Any] = {"step_id": number, "source": "agent", "message": turn.text}
    if turn.model:
        step["model_name"] = turn.model
    pairs = _pairs(turn)
    if pairs:
        step["tool_calls"] = [{"tool_call_id": call_id, "function_name": call.name, "arguments": call.arguments}
                              for call, _, call_id in pairs]
        results = [{"source_call_id": call_id, "content": result.content} for _, result, call_id in pairs if result]
        if results:
            step["observation"] = {"results": results}
    if turn.usage is not None:
        step["metrics"] = {"prompt_tokens": turn.usage.input_tokens, "completion_tokens": turn.usage.output_tokens,
                           "cached_tokens": turn.usage.cached_input_tokens,
                           "extra": {"cache_creation_input_tokens": turn.usage.cache_write_input_tokens}}
    extra: dict[str, Any] = {"exchange": turn.exchange}
    errors = [call_id for _, result, call_id in pairs if result is not None and result.is_error]
    if errors:
        extra["tool_errors"] = errors
    raw = {call_id: call.raw_arguments for call, _, call_id in pairs if call.raw_arguments is not None}
    if raw:
        extra["raw_arguments"] = raw
    step["extra"] = extra
    return step
