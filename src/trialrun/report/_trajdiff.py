"""Aligning two trajectories of one test by what the agent did, and finding where they first diverge.

A trajectory diff answers "what did the agent do differently?". Pairing turns by position fails as soon as one run
takes one extra step: every row after it differs, even the same `python3 test_app.py` run at turn 3 in one and
turn 2 in the other. So the steps of each main conversation (every tool call with its result, and every reply
text) are aligned by CONTENT, by an edit-distance alignment (`align_steps`): the same call (tool and arguments)
pairs at no cost, the same tool with other arguments (or another reply text) pairs as a change, and anything else
is a call one run made and the other did not. Each aligned row is then one of:

- ``same``: the same call with the same result (or the same reply text);
- ``result``: the same call got a different result (content or error flag);
- ``arguments``: the same tool with other arguments;
- ``text``: a reply text that differs;
- ``removed``: a call (or text) only the first trajectory has; ``inserted``: one only the second has.

The FIRST row that is not the same is the first divergence (everything after it follows from it).
`verdict_flips` says which graders' verdicts differ between the two trials. Pure functions of `Trajectory` and
`TrialResult` values: no I/O, no rendering.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import Literal

from ..trajectory import ToolCall, ToolResult, Trajectory, Turn
from .results import TrialResult

__all__ = ["Step", "AlignedStep", "TrajectoryDiff", "Flip", "align", "align_steps", "steps", "verdict_flips",
           "Divergence", "MAX_CELLS"]

Divergence = Literal["result", "arguments", "text", "removed", "inserted"]
#: The largest alignment table (steps x steps) computed exactly; beyond it difflib's matcher aligns (same rows,
#: found greedily), so that two runs of thousands of calls still open at once.
MAX_CELLS = 250_000


@dataclass(frozen=True)
class Step:
    """One tool call with the result the agent returned for it (None when there was none), or, with `call` None,
    a reply text; `turn` is the 1-based turn of the main conversation it belongs to."""

    call: ToolCall | None
    result: ToolResult | None
    turn: int = 0
    text: str = ""

    @property
    def key(self) -> tuple[str, str]:
        """What makes two steps "the same call": the tool and its arguments (for a reply, its text)."""
        if self.call is None:
            return ("\0reply", self.text.strip())
        return (self.call.name, _arguments_key(self.call))

    @property
    def kind(self) -> str:
        """The tool's name, or "\\0reply": two steps of one kind can be paired as a change."""
        return self.key[0]


@dataclass(frozen=True)
class AlignedStep:
    """One row of the diff: a step of each trajectory (None where it has none), how the two differ (None: the
    same), and the row's 0-based index."""

    index: int
    before: Step | None
    after: Step | None
    divergence: Divergence | None = None

    @property
    def same(self) -> bool:
        return self.divergence is None


@dataclass(frozen=True)
class Flip:
    """A grader whose verdict differs between the two trials (None: that trial has no such verdict)."""

    grader: str
    before: bool | None
    after: bool | None
    reason_before: str = ""
    reason_after: str = ""


@dataclass(frozen=True)
class TrajectoryDiff:
    """The aligned steps and the first one where the trajectories diverge (None when they did the same thing)."""

    steps: list[AlignedStep] = field(default_factory=list)

    @property
    def first(self) -> AlignedStep | None:
        return next((s for s in self.steps if not s.same), None)

    def counts(self) -> dict[str, int]:
        """How many rows of each kind ("same" included)."""
        found: dict[str, int] = {}
        for row in self.steps:
            found[row.divergence or "same"] = found.get(row.divergence or "same", 0) + 1
        return found

    def describe(self) -> str:
        """One sentence: where and how the trajectories first diverge."""
        first = self.first
        calls = len([row for row in self.steps if any(s is not None and s.call is not None for s in (row.before, row.after))])
        if first is None:
            return f"The two trials did the same {calls} call(s) with the same results and replies."
        where = " / ".join(f"{side} turn {step.turn}" for side, step in (("before", first.before), ("after", first.after))
                           if step is not None)
        what = {
            "result": "the same call got a different result",
            "arguments": "the same tool was called with other arguments",
            "text": "a different reply text",
            "removed": "a call only the before trial made",
            "inserted": "a call only the after trial made",
        }[first.divergence or "removed"]
        only = first.before or first.after
        if first.divergence in ("removed", "inserted") and only is not None and only.call is None:
            what = what.replace("a call", "a reply")
        counts = self.counts()
        tally = ", ".join(f"{counts[k]} {k}" for k in ("same", "arguments", "result", "text", "removed", "inserted")
                          if counts.get(k))
        return f"First divergence at step {first.index + 1} ({where}): {what}. Steps: {tally}."


def _arguments_key(call: ToolCall) -> str:
    value: object = call.arguments if call.arguments or call.raw_arguments is None else call.raw_arguments
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def turn_steps(turn: Turn, number: int = 0) -> list[Step]:
    """A turn's calls paired with their results (by call id, else by position), then its reply text if any."""
    by_id = {r.call_id: r for r in turn.tool_results if r.call_id is not None}
    out = []
    for position, call in enumerate(turn.tool_calls):
        result = by_id.get(call.id) if call.id is not None else None
        if result is None and call.id is None and position < len(turn.tool_results):
            result = turn.tool_results[position]
        out.append(Step(call, result, number))
    if turn.text.strip():
        out.append(Step(None, None, number, turn.text))
    return out


def steps(trajectory: Trajectory | Turn) -> list[Step]:
    """Every step of a trajectory's main conversation in order (or of one turn)."""
    if isinstance(trajectory, Turn):
        return turn_steps(trajectory)
    return [step for number, turn in enumerate(trajectory.turns, start=1) for step in turn_steps(turn, number)]


def _result(step: Step) -> tuple[str, bool] | None:
    return None if step.result is None else (step.result.content, step.result.is_error)


def _pair(a: Step, b: Step) -> Divergence | None:
    if a.key == b.key:
        return None if a.call is None or _result(a) == _result(b) else "result"
    return "text" if a.call is None else "arguments"


def align_steps(before: list[Step], after: list[Step]) -> list[tuple[Step | None, Step | None]]:
    """The edit-distance alignment of two step lists: a pair of the same call costs 0, a pair of one tool with other
    arguments (or two reply texts) 1, a step of one side alone 1; steps of different tools never pair. Among
    alignments of least cost, the one with the most exact pairs (ties: the earliest). Quadratic; past MAX_CELLS,
    difflib's matcher."""
    n, m = len(before), len(after)
    if n * m > MAX_CELLS:
        return _matcher_alignment(before, after)
    keys_a, keys_b = [s.key for s in before], [s.key for s in after]
    # cost[i][j]: (edits, -exact pairs) of aligning before[i:] with after[j:]
    inf = (n + m + 1, 0)
    cost = [[inf] * (m + 1) for _ in range(n + 1)]
    for i in range(n, -1, -1):
        for j in range(m, -1, -1):
            if i == n and j == m:
                cost[i][j] = (0, 0)
                continue
            options = []
            if i < n and j < m and before[i].kind == after[j].kind:
                exact = keys_a[i] == keys_b[j]
                edits, exacts = cost[i + 1][j + 1]
                options.append((edits + (0 if exact else 1), exacts - (1 if exact else 0)))
            if i < n:
                edits, exacts = cost[i + 1][j]
                options.append((edits + 1, exacts))
            if j < m:
                edits, exacts = cost[i][j + 1]
                options.append((edits + 1, exacts))
            cost[i][j] = min(options)
    pairs: list[tuple[Step | None, Step | None]] = []
    i = j = 0
    while i < n or j < m:
        if i < n and j < m and before[i].kind == after[j].kind:
            exact = keys_a[i] == keys_b[j]
            edits, matched = cost[i + 1][j + 1]
            if cost[i][j] == (edits + (0 if exact else 1), matched - (1 if exact else 0)):
                pairs.append((before[i], after[j]))
                i, j = i + 1, j + 1
                continue
        if i < n and cost[i][j] == (cost[i + 1][j][0] + 1, cost[i + 1][j][1]):
            pairs.append((before[i], None))
            i += 1
        else:
            pairs.append((None, after[j]))
            j += 1
    return pairs


def _matcher_alignment(before: list[Step], after: list[Step]) -> list[tuple[Step | None, Step | None]]:
    matcher = difflib.SequenceMatcher(None, [s.key for s in before], [s.key for s in after], autojunk=False)
    pairs: list[tuple[Step | None, Step | None]] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            pairs.extend(zip(before[i1:i2], after[j1:j2]))
            continue
        left, right = before[i1:i2], after[j1:j2]
        while left and right and left[0].kind == right[0].kind:  # a changed call of the same tool
            pairs.append((left.pop(0), right.pop(0)))
        pairs.extend((step, None) for step in left)
        pairs.extend((None, step) for step in right)
    return pairs


def align(before: Trajectory, after: Trajectory) -> TrajectoryDiff:
    """The main conversations of two trajectories aligned step by step by content, each row marked."""
    rows = []
    for index, (a, b) in enumerate(align_steps(steps(before), steps(after))):
        kind: Divergence | None = "inserted" if a is None else "removed" if b is None else _pair(a, b)
        rows.append(AlignedStep(index, a, b, kind))
    return TrajectoryDiff(rows)


def verdict_flips(before: TrialResult, after: TrialResult) -> list[Flip]:
    """The graders whose verdict differs between two trials (passed in one, failed or absent in the other), in the
    order the graders ran; a grader that ran several times in a trial is paired by its place among its own."""
    def by_grader(trial: TrialResult) -> dict[tuple[str, int], tuple[bool, str]]:
        seen: dict[str, int] = {}
        out = {}
        for verdict in trial.verdicts:
            count = seen[verdict.grader] = seen.get(verdict.grader, 0) + 1
            out[(verdict.grader, count)] = (verdict.passed, verdict.reason)
        return out

    a, b = by_grader(before), by_grader(after)
    flips = []
    for key in [*a, *(k for k in b if k not in a)]:
        one, two = a.get(key), b.get(key)
        if (one and one[0]) != (two and two[0]) or (one is None) != (two is None):
            flips.append(Flip(key[0], None if one is None else one[0], None if two is None else two[0],
                              "" if one is None else one[1], "" if two is None else two[1]))
    return flips
