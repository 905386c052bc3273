"""What an agent did: turns, tool calls, tool results, commands, denials and usage.

These are plain dataclasses (cheap to build, positional arguments, slots) rather than pydantic models, because
every trial makes many of them; pydantic still validates and serialises them where they sit inside a
`RunReport`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Usage", "ToolCall", "ToolResult", "Turn", "Denial", "Trajectory", "Run"]


@dataclass(slots=True)
class Usage:
    """Token counts of one model response (or a sum of several).

    `input_tokens` counts every prompt token; `cached_input_tokens` (read from a prompt cache) and
    `cache_write_input_tokens` (written to one: Anthropic charges those at a higher rate) are parts of it.
    The cache-write part is left out of `==`, so usages compare by the counts every provider reports.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_input_tokens: int = field(default=0, compare=False)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
            self.cache_write_input_tokens + other.cache_write_input_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(slots=True)
class ToolCall:
    """One tool call a model asked for; `arguments` are already parsed from JSON.

    A model can write anything as arguments. When they are not a JSON object (`'not json'`, a cut-off
    `'{"command": "rm'`, `'null'`, `'["a"]'`), the call is kept as the model made it: `arguments` is empty and
    `raw_arguments` holds the text as sent, so graders still see a mapping and an agent can answer the call
    with an error. `raw_arguments` is None for every call whose arguments could be read.
    """

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str | None = None
    raw_arguments: str | None = None


@dataclass(slots=True)
class ToolResult:
    """What the agent sent back for a tool call (`call_id` links it to its `ToolCall.id`)."""

    call_id: str | None
    content: str
    is_error: bool = False


@dataclass(slots=True)
class Turn:
    """One model response: its text, the tool calls it asked for, and the results the agent returned for them."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)
    usage: Usage | None = None
    model: str | None = None


@dataclass(slots=True)
class Denial:
    """A tool call that was refused, and the rule that refused it.

    `source` says who refused: "policy" (trialrun's reference agent and its ToolPolicy) or "agent" (a real
    agent's own permission system, read from the refusal it sent back as the tool's result).
    """

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    rule: str | None = None
    call_id: str | None = None
    source: str = "policy"


@dataclass(slots=True)
class Trajectory:
    """The ordered record of what an agent did to produce its output.

    `len(trajectory.turns)` is the number of model responses; `notes` carries what an observer noticed but did not
    treat as fatal (a tool the request did not offer, a body it could not decode). `prompt` is what the agent was
    asked (the last user message of its first model request, when observed), so a report can show a timeline
    from its start for a case that has no prompt of its own (a Python case).
    """

    turns: list[Turn] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    denials: list[Denial] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    prompt: str | None = None

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Every tool call, flat, in the order the model asked for them."""
        return [call for turn in self.turns for call in turn.tool_calls]

    @property
    def tool_results(self) -> list[ToolResult]:
        return [result for turn in self.turns for result in turn.tool_results]

    @property
    def tools_used(self) -> list[str]:
        """Distinct tool names in first-use order."""
        return list(dict.fromkeys(call.name for call in self.tool_calls))

    @property
    def usage(self) -> Usage | None:
        """Summed usage of the turns that report it; None when none does."""
        total: Usage | None = None
        for turn in self.turns:
            if turn.usage is not None:
                total = turn.usage if total is None else total + turn.usage
        return total

    @property
    def final_text(self) -> str:
        """Text of the last turn that has any (usually the agent's answer)."""
        for turn in reversed(self.turns):
            if turn.text:
                return turn.text
        return ""

    def result_for(self, call: ToolCall) -> ToolResult | None:
        """The tool result returned for `call`, matched by id."""
        if call.id is None:
            return None
        for result in self.tool_results:
            if result.call_id == call.id:
                return result
        return None


@dataclass(slots=True)
class Run:
    """What one invoke produced: the output the caller got back and the trajectory that led there.

    `status` and `error` are set by agents that know how their loop ended (the reference agent does). A process
    agent also records its `exit_code`, the tail of its `stderr` and its `duration_s`.
    """

    output: Any = None
    trajectory: Trajectory = field(default_factory=Trajectory)
    usage: Usage | None = None
    cost_usd: float | None = None
    status: str | None = None
    error: str | None = None
    exit_code: int | None = None
    stderr: str | None = None
    duration_s: float | None = None

    def __post_init__(self) -> None:
        if self.usage is None:
            self.usage = self.trajectory.usage
