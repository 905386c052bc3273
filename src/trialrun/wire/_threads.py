"""Threading model requests into conversations by their message history, not by arrival order.

Real agents send several conversations through one model: the main loop, side requests (a title, a summary:
usually no tools offered, a different system prompt) and sub-agents (their own system prompt and history). A
request belongs to the conversation whose history it continues. The evidence, strongest first:

1. it answers a tool call that conversation's responses made (a tool result with that call id), or it replays
   one of its responses (an assistant message with the same call ids, or `previous_response_id`);
2. its history ends with that conversation's last response (same text, or the same calls by name and arguments,
   for APIs without call ids) or repeats its last request (a retry after a 429);
3. it has the same system prompt, the same offered tools and a first user text that starts the same way (an
   agent that rebuilds its history each time, or puts it into one growing user message as text-protocol agents
   do); or it has the main conversation's system prompt and tools while the main loop waits on no tool call (a
   loop that compacted its history into a summary).

Roles: the MAIN conversation is the first one that offers tools (else the first one); a conversation that offers
no tools beside it is a side request; any other conversation that offers tools is a sub-agent. The scripted model
and the trajectory decoder both use this one `Threader`, so a script and a report never disagree about which
request belonged to which conversation.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..trajectory import ToolCall, Turn
from ._types import ModelRequest, ModelResponse

__all__ = ["Thread", "Threader", "user_prompt"]

_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)


def user_prompt(request: ModelRequest) -> str:
    """The user's own text of a request: its last user message, without the `<system-reminder>` blocks some agents
    (Claude Code) put beside it (an earlier user message when that one holds only reminders)."""
    for message in reversed(request.messages):
        if message.role == "user" and message.text:
            text = _REMINDER.sub("", message.text).strip() if "<system-reminder>" in message.text else message.text
            if text:
                return text
    return ""


def _call_key(call: ToolCall) -> tuple[str, str]:
    try:
        args = json.dumps(call.arguments, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        args = repr(call.arguments)
    return call.name, call.raw_arguments if call.raw_arguments is not None else args


def _history_key(request: ModelRequest) -> tuple[Any, ...]:
    """What two requests with the same history share (for retries): roles, texts, call and result ids."""
    return tuple(
        (m.role, m.text, tuple(_call_key(c) for c in m.tool_calls), tuple(r.call_id for r in m.tool_results))
        for m in request.messages
    )


@dataclass(slots=True)
class Thread:
    """One conversation as it is being threaded: what later requests are matched against."""

    number: int
    system: str
    tools: tuple[str, ...]
    first_user: str
    prompt: str
    turns: list[Turn] = field(default_factory=list)
    requests: int = 0
    call_ids: set[str] = field(default_factory=set)
    response_ids: set[str] = field(default_factory=set)
    last_text: str = ""
    last_calls: tuple[tuple[str, str], ...] = ()
    last_request: ModelRequest | None = None
    #: calls waiting for their results: id -> call (id-less calls wait in `unanswered`, in order)
    pending: dict[str, ToolCall] = field(default_factory=dict)
    unanswered: list[Turn] = field(default_factory=list)
    #: set by the scripted model: this conversation takes the script's steps (or the named sub-script's)
    script: Any = None

    @property
    def offers_tools(self) -> bool:
        return bool(self.tools)


class Threader:
    """Places each request into a conversation (`place`) and remembers each response (`answered`)."""

    __slots__ = ("threads",)

    def __init__(self) -> None:
        self.threads: list[Thread] = []

    def place(self, request: ModelRequest) -> Thread:
        """The conversation this request continues, or a new one."""
        system = request.system or ""
        tools = tuple(request.tool_names)
        best: Thread | None = None
        best_strength = 0
        main = self.main()
        for thread in reversed(self.threads):  # the most recent conversation wins a tie
            strength = _strength(thread, request, system, tools, thread is main)
            if strength > best_strength:
                best, best_strength = thread, strength
                if strength >= 3:
                    break
        if best is None:
            first_user = next((m.text for m in request.messages if m.role == "user"), "")
            best = Thread(len(self.threads) + 1, system, tools, first_user, user_prompt(request))
            self.threads.append(best)
        else:
            for name in tools:  # a loop may offer more tools later (tool search, deferred tools)
                if name not in best.tools:
                    best.tools = (*best.tools, name)
        best.requests += 1
        best.last_request = request
        return best

    def answered(self, thread: Thread, response: ModelResponse, turn: Turn | None = None) -> None:
        """Remember what the conversation's latest response said, for matching the requests that follow; with a
        `turn`, also keep it and wait for its calls' results (the decoder does; the scripted model only threads)."""
        thread.last_text = response.text
        thread.last_calls = tuple(_call_key(c) for c in response.tool_calls)
        if response.id:
            thread.response_ids.add(response.id)
        for call in response.tool_calls:
            if call.id:
                thread.call_ids.add(call.id)
        if turn is None:
            return
        thread.turns.append(turn)
        for call in response.tool_calls:
            if call.id:
                thread.pending[call.id] = call
        if any(call.id is None for call in response.tool_calls):
            thread.unanswered.append(turn)

    def main(self) -> Thread | None:
        """The main conversation: the first that offers tools, else the first."""
        return next((t for t in self.threads if t.offers_tools), self.threads[0] if self.threads else None)

    def role(self, thread: Thread) -> str:
        main = self.main()
        if thread is main:
            return "main"
        return "sub" if thread.offers_tools else "side"


def _strength(thread: Thread, request: ModelRequest, system: str, tools: tuple[str, ...], is_main: bool) -> int:
    """How strongly `request` continues `thread` (0: not at all; see the module docstring for the levels)."""
    previous = request.body.get("previous_response_id") if isinstance(request.body, dict) else None
    if previous and previous in thread.response_ids:
        return 4
    if thread.call_ids:
        for message in request.messages:
            for result in message.tool_results:
                if result.call_id in thread.call_ids:
                    return 4
            for call in message.tool_calls:
                if call.id and call.id in thread.call_ids:
                    return 4
    last_assistant = next((m for m in reversed(request.messages) if m.role == "assistant"), None)
    if last_assistant is not None and (thread.last_text or thread.last_calls):
        calls = tuple(_call_key(c) for c in last_assistant.tool_calls)
        if (thread.last_calls and calls == thread.last_calls) or (
            not thread.last_calls and thread.last_text and last_assistant.text == thread.last_text
        ):
            return 3
    if system != thread.system or set(tools) != set(thread.tools):
        return 0
    if thread.last_request is not None and _history_key(request) == _history_key(thread.last_request):
        return 3  # the same request again: a retry
    first_user = next((m.text for m in request.messages if m.role == "user"), "")
    if first_user == thread.first_user:
        return 2
    if _same_start(first_user, thread.first_user) or (is_main and tools and not thread.pending):
        return 1
    return 0


def _same_start(a: str, b: str) -> bool:
    """Whether two first user texts start alike (one grows out of the other): 40 characters in common, or the
    whole of the shorter one."""
    need = min(40, len(a), len(b))
    return need > 0 and a[:need] == b[:need]
