"""Which tool calls a claim counts, and how its reason names the ones it left out (tried / refused / ran).

What became of each call is decided once, by `Trajectory.outcomes`; this module only says which outcomes a grader
counts. Positive claims (`called`, `called_in_order`, `trajectory_matches`, the rubric's tool accuracy) count the
calls that RAN, and refused ones too with `include_refused=True`; a call that went unanswered or is unknown is never
evidence that a tool ran. Safety claims count every attempt unless told otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..trajectory import CallOutcome, Denial, ToolCall, Trajectory
from ._base import clip, flag_arg

#: Why a call whose tool use was in text cannot be seen (no request offered any tool).
INVISIBLE = "no model request offered any tools, so tool use (if any) was in text not visible on the wire"

#: Who a `Denial.source` is, as a reason names it.
_WHO = {"policy": "the policy", "agent": "the agent", "sandbox": "the sandbox"}


def invisible(trajectory: Trajectory) -> bool:
    """Model traffic was read but no request offered a tool: any tool call the model made could not have run
    natively, and tool use, if any, was in text (a text protocol) that is not visible on the wire."""
    return trajectory.model_calls > 0 and not trajectory.offered_tools


def agent_outcomes(trajectory: Trajectory, *, main_only: bool = False) -> list[CallOutcome]:
    """The outcomes of the calls the agent could have run: the main conversation's and (unless `main_only`) its
    sub-agents' (a side request, which offers no tools, runs none); none when no request offered a tool."""
    if invisible(trajectory):
        return []
    if not trajectory.other_conversations:
        return trajectory.outcomes()
    if main_only:
        return [o for o in trajectory.outcomes() if o.role == "main"]
    return [o for o in trajectory.outcomes() if o.role != "side"]


def split(outcomes: Iterable[CallOutcome], include_refused: bool) -> tuple[list[CallOutcome], list[CallOutcome]]:
    """(counted, left out) for a positive claim: the calls that ran (and those refused, with include_refused)."""
    counted: list[CallOutcome] = []
    left: list[CallOutcome] = []
    for o in outcomes:
        (counted if o.outcome == "ran" or (include_refused and o.outcome == "refused") else left).append(o)
    return counted, left


def refused_by(denial: Denial) -> str:
    """`refused by the agent (claude-code: was blocked)`: who refused, and by which rule."""
    who = _WHO.get(denial.source, f"the {denial.source}")
    return f"refused by {who}" + (f" ({denial.rule})" if denial.rule else "")


def _why(o: CallOutcome) -> str:
    if o.outcome == "refused" and o.denial is not None:
        return refused_by(o.denial)
    if o.outcome == "unanswered":
        return "that never got a result (nothing shows it ran)"
    return "with no id, so no result could be matched to it"


def _groups(outcomes: Sequence[CallOutcome]) -> dict[str, list[CallOutcome]]:
    groups: dict[str, list[CallOutcome]] = {}
    for o in outcomes:
        groups.setdefault(_why(o), []).append(o)
    return groups


def not_counted(left: Sequence[CallOutcome]) -> str:
    """`; not counted: 1 call refused by the agent (claude-code: was blocked): Bash(command='rm -rf x')`: the calls a
    claim left out and why, grouped (empty when none was)."""
    if not left:
        return ""
    parts = []
    for why, group in _groups(left).items():
        shown = ", ".join(f"{o.call.name} (id {o.call.id})" if o.outcome == "unanswered" else call_repr(o.call)
                          for o in group[:3]) + (", ..." if len(group) > 3 else "")
        parts.append(f"{count(len(group), 'call')} {why}: {shown}")
    return "; not counted: " + "; ".join(parts)


def counting(counted: Sequence[CallOutcome]) -> str:
    """`, counting 1 call refused by the policy (deny_commands: rm)`: the refused calls an include_refused claim
    counted (empty when none was)."""
    refused = [o for o in counted if o.outcome == "refused"]
    if not refused:
        return ""
    return ", counting " + " and ".join(f"{count(len(group), 'call')} {why}" for why, group in _groups(refused).items())


def include_refused_arg(grader: str, include_refused: Any, include_denied: Any, default: bool) -> bool:
    """The include_refused option, also given by its older name include_denied (never both at once)."""
    if include_refused is not None and include_denied is not None:
        raise TypeError(f"expect.{grader}: give include_refused or include_denied (its older name), not both")
    if include_denied is not None:
        return flag_arg(grader, "include_denied", include_denied)
    return default if include_refused is None else flag_arg(grader, "include_refused", include_refused)


def fmt_args(args: Mapping[str, Any], keys: Iterable[str] | None = None, *, limit: int | None = 60) -> str:
    """`path='a.txt', mode='w'`: each value's repr, clipped to `limit` (None: whole, as a label needs)."""
    keys = list(args) if keys is None else list(keys)
    return ", ".join((f"{k}={repr(args[k]) if limit is None else clip(repr(args[k]), limit)}" if k in args
                      else f"{k}=<missing>") for k in keys)


def call_repr(call: ToolCall) -> str:
    return f"{call.name}({fmt_args(call.arguments)})"


def count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def in_conversations(trajectory: Trajectory) -> str:
    """` in 3 conversations` where the agent had side or sub conversations beside the main one, else ""."""
    others = len(trajectory.other_conversations)
    return f" in {others + 1} conversations" if others else ""
