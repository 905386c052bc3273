"""Aligning two trajectories of one test turn by turn, and finding where they first diverge.

A trajectory diff answers "what did the agent do differently after the change?". Turns are aligned by position
(turn 1 with turn 1, ...): a model's turn is one response, so the n-th response of each run is what the user
compares. Within a turn, tool calls are compared in order. The FIRST divergence is what matters (everything after
it follows from it), so it is reported with its kind, in this order of precedence inside one turn:

- ``tool``: a different tool was called (or a call is missing on one side);
- ``arguments``: the same tool with different arguments;
- ``result``: the same call got a different result (content or error flag);
- ``text``: the same calls, a different reply text;
- ``missing``: one run has this turn and the other ended before it.

Pure functions of `Trajectory` values: no I/O, no rendering.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..trajectory import ToolCall, ToolResult, Trajectory, Turn

__all__ = ["Step", "AlignedTurn", "TrajectoryDiff", "align", "Divergence"]

Divergence = Literal["tool", "arguments", "result", "text", "missing"]


@dataclass(frozen=True)
class Step:
    """One tool call of a turn with the result the agent returned for it (None when there was none)."""

    call: ToolCall
    result: ToolResult | None


@dataclass(frozen=True)
class AlignedTurn:
    """Turn `index` (0-based) of each run; None where that run had no such turn. `divergence` says how the two
    differ (None when they are the same), `call_index` which call of the turn differs first."""

    index: int
    before: Turn | None
    after: Turn | None
    divergence: Divergence | None = None
    call_index: int | None = None

    @property
    def same(self) -> bool:
        return self.divergence is None


@dataclass(frozen=True)
class TrajectoryDiff:
    """The aligned turns and the first one where the runs diverge (None when they did the same thing)."""

    turns: list[AlignedTurn] = field(default_factory=list)

    @property
    def first(self) -> AlignedTurn | None:
        return next((t for t in self.turns if not t.same), None)

    def describe(self) -> str:
        """One sentence: where and how the runs first diverge."""
        first = self.first
        if first is None:
            return f"The two runs made the same {len(self.turns)} turn(s): same tools, arguments, results and text."
        where = f"turn {first.index + 1}"
        if first.call_index is not None:
            where += f", call {first.call_index + 1}"
        what = {
            "tool": "a different tool was called",
            "arguments": "the same tool was called with different arguments",
            "result": "the same call got a different result",
            "text": "the same calls, but a different reply text",
            "missing": "only one run has this turn",
        }[first.divergence or "missing"]
        return f"First divergence at {where}: {what}."


def steps(turn: Turn) -> list[Step]:
    """A turn's calls paired with their results (by call id, else by position)."""
    by_id = {r.call_id: r for r in turn.tool_results if r.call_id is not None}
    out = []
    for position, call in enumerate(turn.tool_calls):
        result = by_id.get(call.id) if call.id is not None else None
        if result is None and call.id is None and position < len(turn.tool_results):
            result = turn.tool_results[position]
        out.append(Step(call, result))
    return out


def _arguments(call: ToolCall) -> object:
    return call.arguments if call.arguments or call.raw_arguments is None else call.raw_arguments


def _result(step: Step) -> tuple[str, bool] | None:
    return None if step.result is None else (step.result.content, step.result.is_error)


def compare_turns(before: Turn, after: Turn) -> tuple[Divergence | None, int | None]:
    """How two turns differ first (kind and call index), or (None, None) when they are the same."""
    a, b = steps(before), steps(after)
    for i in range(max(len(a), len(b))):
        if i >= len(a) or i >= len(b) or a[i].call.name != b[i].call.name:
            return "tool", i
        if _arguments(a[i].call) != _arguments(b[i].call):
            return "arguments", i
        if _result(a[i]) != _result(b[i]):
            return "result", i
    if before.text.strip() != after.text.strip():
        return "text", None
    return None, None


def align(before: Trajectory, after: Trajectory) -> TrajectoryDiff:
    """The main conversations of two trajectories aligned turn by turn, each pair marked with how it differs."""
    aligned = []
    for i in range(max(len(before.turns), len(after.turns))):
        a = before.turns[i] if i < len(before.turns) else None
        b = after.turns[i] if i < len(after.turns) else None
        if a is None or b is None:
            aligned.append(AlignedTurn(i, a, b, "missing"))
            continue
        kind, call = compare_turns(a, b)
        aligned.append(AlignedTurn(i, a, b, kind, call))
    return TrajectoryDiff(aligned)
