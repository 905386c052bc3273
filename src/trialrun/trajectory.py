"""What an agent did: turns, tool calls, tool results, commands, denials and usage.

These are plain dataclasses (cheap to build, positional arguments, slots) rather than pydantic models, because
every trial makes many of them; pydantic still validates and serialises them where they sit inside a
`RunReport`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ._util.workspace_diff import WorkspaceDiff

__all__ = ["Usage", "ToolCall", "ToolResult", "Turn", "Denial", "Conversation", "Trajectory", "Run", "RunStatus",
           "Outcome", "CallOutcome", "McpCall", "McpServerSeen", "observed_nothing", "killed_text"]


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

    `namespace` is the tool namespace the called tool lives in, on APIs that have them (an OpenAI Responses
    `namespace` tool, e.g. Codex's `multi_agent_v1` holding `spawn_agent`); None for a plain tool.
    """

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str | None = None
    raw_arguments: str | None = None
    namespace: str | None = None


@dataclass(slots=True)
class ToolResult:
    """What the agent sent back for a tool call (`call_id` links it to its `ToolCall.id`)."""

    call_id: str | None
    content: str
    is_error: bool = False


@dataclass(slots=True)
class Turn:
    """One model response: its text, the tool calls it asked for, and the results the agent returned for them.

    `exchange` is the 1-based number, in arrival order, of the HTTP exchange of the trial the turn was read from
    (the number observer notes use: "exchange 3 (POST /v1/messages)"); the raw exchange itself is kept beside the
    result file (`results_<stamp>.exchanges.ndjson`) and shown by `trialrun view`. None when nobody observed it.
    """

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)
    usage: Usage | None = None
    model: str | None = None
    exchange: int | None = field(default=None, compare=False)

    def unnamed_results(self) -> list[ToolResult]:
        """The results that answer none of this turn's calls by id, in order: those the id-less calls (Gemini) take
        by position. A client may number the results of calls that came without ids (Gemini CLI, pydantic-ai):
        such an id answers no call, so the result counts as unnamed too."""
        ids = {call.id for call in self.tool_calls if call.id is not None}
        return [result for result in self.tool_results if result.call_id is None or result.call_id not in ids]


@dataclass(slots=True)
class Denial:
    """A tool call that was refused, and the rule that refused it.

    `source` says who refused: "policy" (trialrun's reference agent and its ToolPolicy), "agent" (a real
    agent's own permission system, read from the refusal it sent back as the tool's result) or "sandbox".
    `call_id` names the refused call; a denial without one is matched to a call by tool and arguments.
    """

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    rule: str | None = None
    call_id: str | None = None
    source: str = "policy"


#: What became of a tool call (`Trajectory.outcomes`): it "ran" (a result came back and no refusal names it), was
#: "refused" (a `Denial` names it: by the policy, the agent's own permissions or a sandbox), went "unanswered"
#: (observed traffic shows no result for its id) or is "unknown" (no id, and no result it could be paired with).
Outcome = Literal["ran", "refused", "unanswered", "unknown"]


@dataclass(slots=True)
class CallOutcome:
    """One tool call and what became of it: the one place that decides tried / refused / ran (made afresh by every
    `Trajectory.outcomes` call, so changing one changes nothing else).

    `result` is the tool result matched to the call (a refusal's error result too), `denial` the refusal that names
    it (its `source` says who refused), `role` the role of the conversation the call was made in.
    """

    call: ToolCall
    outcome: Outcome
    result: ToolResult | None = None
    denial: Denial | None = None
    role: str = "main"


@dataclass(slots=True)
class McpCall:
    """One `tools/call` an MCP server received, and what it answered: the tool's side of a tool call (trialrun read
    it off the server's own traffic, `trialrun.mcp`).

    `server` is the name the trial declared the server under; `tool` and `arguments` are what the server RECEIVED.
    `content` is the result's text (its text blocks joined; other blocks named), `is_error` the result's isError,
    `error` the JSON-RPC error the server answered instead of a result (a protocol error), `answered` whether any
    answer came back. `exchange` numbers its MCP exchange among the trial's exchanges (after the model's).
    When the call is joined to the model's tool call it answers (`trialrun.mcp.join`): `joined` is True,
    `model_name` is that call's name in the agent's naming (`mcp__notes__search_notes`), `call_id` its id (None
    on a wire without ids) and `model_arguments` what the MODEL asked for, which an agent may have rewritten.
    """

    server: str
    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    content: str = ""
    is_error: bool = False
    error: str | None = None
    answered: bool = True
    exchange: int | None = None
    joined: bool = False
    model_name: str | None = None
    call_id: str | None = None
    model_arguments: dict[str, Any] | None = None


@dataclass(slots=True)
class McpServerSeen:
    """An MCP server a trial declared, and what reached it: `transport` ("stdio" | "http"), `kind` ("scripted",
    "proxy": a real server behind the recording proxy, "replay": a cassette), `connections` (sessions a client
    opened), `messages` (JSON-RPC messages both ways), `listed` (a client asked for its tools) and `tools` (the tools
    it offered). A server nobody connected to has `connections == 0`: graders on its calls say so."""

    name: str
    transport: str = "stdio"
    kind: str = "scripted"
    connections: int = 0
    messages: int = 0
    listed: bool = False
    tools: list[str] = field(default_factory=list)


#: The roles a conversation can have (see `Conversation`).
ROLES = ("main", "side", "sub")


@dataclass(slots=True)
class Conversation:
    """One conversation an agent held with the model.

    Real agents send more than one conversation through the same model: the main loop, side requests (a title,
    a summary: usually no tools offered) and sub-agents (their own system prompt and history). Requests are
    threaded into conversations by their message history, not by arrival order.

    - `role`: "main" (the agent's loop: its turns are `Trajectory.turns`), "side" (a request that offers no tools
      beside a main loop that does; never counted as turns) or "sub" (another conversation that offers tools:
      a sub-agent).
    - `prompt`: the user's text of its first request; `system`: the start of its system prompt;
      `tools`: the tool names its requests offered; `requests`: how many model requests it sent.
    """

    role: str = "main"
    turns: list[Turn] = field(default_factory=list)
    prompt: str | None = None
    system: str | None = None
    tools: list[str] = field(default_factory=list)
    requests: int = 0

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [call for turn in self.turns for call in turn.tool_calls]


@dataclass(slots=True)
class Trajectory:
    """The ordered record of what an agent did to produce its output.

    `turns` are the MAIN conversation's model responses (`len(trajectory.turns)` is what turn limits and turn
    efficiency count); `other_conversations` keeps the side requests and sub-agents seen beside it, and
    `conversations` gives all of them, main first. `tool_calls` and `final_text` are the main conversation's;
    `all_tool_calls` and `all_tool_results` span every conversation (what safety graders examine: a sub-agent
    that runs `rm -rf` is the agent running it).

    `notes` carries what an observer noticed but did not treat as fatal (a tool the request did not offer, a body
    it could not decode, a tool call that never got a result). `prompt` is what the agent was asked (the user's
    text of the main conversation's first request, when observed). `model_calls` counts the model requests that
    were observed (0 for a trajectory nobody observed: graders then refuse to pass, as they saw nothing).
    `offered_tools` are the tool names the requests offered (in first-seen order) and `command_tools` the offered
    tools that run shell commands, found from their schemas (name -> the argument holding the command); a preset adds
    its agent's own (its contract's), and names in `quiet_tools` the tools its contract says run no command.

    `mcp_servers` are the MCP servers the trial declared (what reached each), `mcp_calls` the tool calls they
    received, in order, each joined to the model's call it answers where one matches (`trialrun.mcp`).

    `error_flags_unknown` names the tool results whose `is_error` says nothing (call id -> why): the wire
    decoders add every result that came over an API without an error flag (OpenAI Chat Completions and
    Responses); a preset that reads its agent's own result format (exit codes, error shapes, its JSON events)
    sets `is_error` and takes the results it could read out. `no_tool_errors` fails closed on what is left.
    Empty: every flag was set by something that could tell (Anthropic `is_error`, Gemini `error`, the reference
    agent, a preset, or the code that built the trajectory).
    """

    turns: list[Turn] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    denials: list[Denial] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    prompt: str | None = None
    other_conversations: list[Conversation] = field(default_factory=list)
    model_calls: int = 0
    offered_tools: list[str] = field(default_factory=list)
    command_tools: dict[str, str] = field(default_factory=dict)
    quiet_tools: list[str] = field(default_factory=list)
    error_flags_unknown: dict[str, str] = field(default_factory=dict)
    mcp_servers: list[McpServerSeen] = field(default_factory=list)
    mcp_calls: list[McpCall] = field(default_factory=list)

    @property
    def conversations(self) -> list[Conversation]:
        """Every conversation, the main one first (its turns are `turns`)."""
        main = Conversation("main", self.turns, self.prompt, None, [], self.model_calls - sum(
            c.requests for c in self.other_conversations) if self.model_calls else len(self.turns))
        return [main, *self.other_conversations]

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Every tool call of the main conversation, flat, in the order the model asked for them."""
        return [call for turn in self.turns for call in turn.tool_calls]

    @property
    def all_turns(self) -> list[Turn]:
        """The turns of every conversation: the main one's, then each other conversation's."""
        if not self.other_conversations:
            return self.turns
        return [*self.turns, *(turn for c in self.other_conversations for turn in c.turns)]

    @property
    def all_tool_calls(self) -> list[ToolCall]:
        """Every tool call of every conversation (main, side and sub-agents)."""
        turns = self.all_turns if self.other_conversations else self.turns
        return [call for turn in turns for call in turn.tool_calls]

    @property
    def tool_results(self) -> list[ToolResult]:
        return [result for turn in self.turns for result in turn.tool_results]

    @property
    def all_tool_results(self) -> list[ToolResult]:
        return [result for turn in self.all_turns for result in turn.tool_results]

    @property
    def tools_used(self) -> list[str]:
        """Distinct tool names in first-use order, across every conversation (a sub-agent's tools are the agent's),
        of the calls that were not refused: a tool the agent only tried, and was refused, was not used."""
        return list(dict.fromkeys(o.call.name for o in self.outcomes() if o.outcome != "refused"))

    @property
    def usage(self) -> Usage | None:
        """Summed usage of every turn that reports it, in every conversation (all of it was paid for); None when
        none does."""
        total: Usage | None = None
        for turn in self.all_turns:
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

    def outcomes(self) -> list[CallOutcome]:
        """What became of every tool call of every conversation (the main one's first, then each other's), in order.

        A refusal decides first: a `Denial` whose `call_id` is the call's, or one without an id that has the call's
        tool and arguments (the first such call not answered by a success). Else a result decides: matched by call
        id in any conversation, or, for a call without an id (Gemini), the turn's results without ids in order.
        Else, on observed traffic (`model_calls`), the call went "unanswered" (it has an id) or is "unknown" (it has
        none). A trajectory nobody observed (built by hand, or by an agent that records its own calls) states what
        its agent did: its calls ran unless a denial names them.
        """
        results: dict[str, ToolResult] = {}
        for turn in self.all_turns:
            for result in turn.tool_results:
                if result.call_id is not None:
                    results.setdefault(result.call_id, result)
        by_id: dict[str, Denial] = {}
        loose: list[Denial] = []
        for denial in self.denials:  # (usually none)
            if denial.call_id is None:
                loose.append(denial)
            else:
                by_id.setdefault(denial.call_id, denial)
        observed = self.model_calls > 0
        found: list[CallOutcome] = []
        threads = [("main", self.turns), *((c.role, c.turns) for c in self.other_conversations)]
        for role, turns in threads:
            for turn in turns:
                unnamed: list[ToolResult] | None = None  # the turn's results without ids, made when first needed
                for call in turn.tool_calls:
                    answer: ToolResult | None
                    refusal: Denial | None
                    if call.id is not None:
                        answer, refusal = results.get(call.id), by_id.get(call.id)
                    else:
                        if unnamed is None:
                            unnamed = turn.unnamed_results()
                        answer, refusal = (unnamed.pop(0) if unnamed else None), None
                    if refusal is None and loose and (answer is None or answer.is_error):
                        refusal = next((d for d in loose if d.tool == call.name and d.arguments == call.arguments), None)
                        if refusal is not None:
                            loose.remove(refusal)
                    outcome: Outcome = (
                        "refused" if refusal is not None
                        else "ran" if answer is not None or not observed
                        else "unanswered" if call.id is not None
                        else "unknown")
                    found.append(CallOutcome(call, outcome, answer, refusal, role))
        return found

    def outcome(self, call: ToolCall) -> Outcome:
        """What became of one of this trajectory's tool calls (see `outcomes`)."""
        outcomes = self.outcomes()
        match = next((o for o in outcomes if o.call is call), None) or next((o for o in outcomes if o.call == call), None)
        if match is None:
            raise ValueError(f"{call.name} (id {call.id}) is not a call of this trajectory")
        return match.outcome

    def result_for(self, call: ToolCall) -> ToolResult | None:
        """The tool result returned for `call`, matched by id (in any conversation)."""
        if call.id is None:
            return None
        for result in self.all_tool_results:
            if result.call_id == call.id:
                return result
        return None


def observed_nothing(trajectory: Trajectory) -> bool:
    """True when nothing was observed: no model request, no turn, no command, no denial. A trajectory grader must
    not pass on that (it would be a verdict without looking)."""
    return not (trajectory.model_calls or trajectory.turns or trajectory.other_conversations
                or trajectory.commands or trajectory.denials)


def killed_text(killed: list[str] | None, shown: int = 5) -> str | None:
    """The one wording of what was killed when an agent ended (`Run.killed`, `TrialResult.killed`), for messages and
    reports; None when nothing was."""
    if not killed:
        return None
    more = f"; and {len(killed) - shown} more" if len(killed) > shown else ""
    return f"{len(killed)} process{'es' if len(killed) > 1 else ''} killed: " + "; ".join(killed[:shown]) + more


#: How an agent's loop ended (`Run.status`): the reference agent sets one of these.
RunStatus = Literal["completed", "max_turns", "cost_limit", "stopped_by_policy", "error"]


@dataclass(slots=True)
class Run:
    """What one invoke produced: the output the caller got back and the trajectory that led there.

    `status` and `error` are set by agents that know how their loop ended (the reference agent does). A process
    agent also records its `exit_code`, the tail of its `stderr`, its `duration_s`, and `killed`: every process
    of it that was still alive when it ended (or timed out) and was killed, as "pid N: argv" (empty: nothing was
    left; None: not an agent trialrun ran in a process). `files` is what the agent left in the trial's workdir (files
    added, changed, removed, with their diffs), set by the runner for a trial that had a workdir.
    """

    output: Any = None
    trajectory: Trajectory = field(default_factory=Trajectory)
    usage: Usage | None = None
    cost_usd: float | None = None
    status: RunStatus | None = None
    error: str | None = None
    exit_code: int | None = None
    stderr: str | None = None
    duration_s: float | None = None
    killed: list[str] | None = None
    files: WorkspaceDiff | None = None

    def __post_init__(self) -> None:
        if self.usage is None:
            self.usage = self.trajectory.usage
