"""Searching what the agents DID across a results folder, for the viewer's search page: the commands they ran, the
tool calls and their arguments, what came back (tool results, the final output, replies), and why trials failed
(failed verdicts' reasons, errors). A hit names the run, the test, the trial and where in it the text was found.

Case-insensitive substring search: what a person types into a box (`rm -rf`, `wc -l notes.txt`, a reason's words)
is found as it appears. Filters narrow it to failed trials, one test, one run or one tag. Pure functions of the
loaded History: no I/O, no rendering.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field

from .._util.command_tools import command_argument
from ..trajectory import Trajectory
from ._history import History, RunEntry
from .results import CaseResult, TrialResult

__all__ = ["Filters", "Found", "TrialHits", "search_trials", "MAX_TRIALS", "WHERE"]

#: The most trials a search lists (the page says when there were more).
MAX_TRIALS = 200
#: Where a hit can be, in the order a trial's hits are listed (why it failed first, then what it did).
WHERE = ("failure reason", "command", "tool call", "tool result", "output", "reply")


@dataclass(frozen=True)
class Filters:
    """What narrows a search: failed trials only, one test (its id), one run (its stem), one tag ("" for any)."""

    failed: bool = False
    test: str = ""
    run: str = ""
    tag: str = ""


@dataclass(frozen=True)
class Found:
    """One place a trial holds the text: `where` (one of WHERE) and the whole text it was found in."""

    where: str
    text: str


@dataclass
class TrialHits:
    """A trial that holds the text, with every place it does (each distinct text once, where it is first found)."""

    entry: RunEntry
    case: CaseResult
    trial: TrialResult
    found: list[Found] = field(default_factory=list)


def _command_of(name: str, arguments: object, trajectory: Trajectory) -> str | None:
    """The command a call of a command tool ran, as the model sent it (an argv list joined), or None."""
    key = trajectory.command_tools.get(name) or command_argument(name)
    value = arguments.get(key) if key and isinstance(arguments, dict) else None
    if isinstance(value, list) and all(isinstance(word, str) for word in value):
        return " ".join(value)
    return value if isinstance(value, str) else None


def _texts(trial: TrialResult) -> Iterator[Found]:
    """Every searchable text of a trial, by where it is."""
    for verdict in trial.verdicts:
        if not verdict.passed:
            yield Found("failure reason", f"{verdict.grader}: {verdict.reason}")
    for error in (trial.error, trial.teardown_error):
        if error is not None:
            yield Found("failure reason", f"{error.phase}: {error.type}: {error.message}")
    trajectory = trial.trajectory
    for command in trajectory.commands:
        yield Found("command", command)
    for call in trajectory.all_tool_calls:
        arguments: object = call.arguments if call.arguments or call.raw_arguments is None else call.raw_arguments
        ran = _command_of(call.name, arguments, trajectory)
        if ran is not None:
            yield Found("command", ran)
        shown = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False, sort_keys=True)
        yield Found("tool call", f"{call.name}({shown})")
    for result in trajectory.all_tool_results:
        yield Found("tool result", result.content)
    if trial.output is not None:
        yield Found("output", trial.output if isinstance(trial.output, str) else json.dumps(trial.output, default=str))
    for turn in trajectory.all_turns:
        if turn.text:
            yield Found("reply", turn.text)


def _wanted(entry: RunEntry, case: CaseResult, filters: Filters) -> bool:
    return ((not filters.run or entry.stem == filters.run) and (not filters.test or case.name == filters.test)
            and (not filters.tag or filters.tag in case.tags))


def search_trials(history: History, query: str, filters: Filters = Filters(),
                  limit: int = MAX_TRIALS) -> tuple[list[TrialHits], bool]:
    """The trials (newest run first) whose texts hold `query` (case-insensitive), each with where; and whether
    there were more than `limit` (the rest not listed). An empty query finds nothing."""
    needle = query.strip().casefold()
    if not needle:
        return [], False
    hits: list[TrialHits] = []
    for entry in reversed(history.runs):
        for case in entry.report.cases:
            if not _wanted(entry, case, filters):
                continue
            for trial in case.trials:
                if filters.failed and trial.passed:
                    continue
                seen: set[str] = set()  # a text once, where it is first found (an output is also the last reply)
                found = []
                for item in _texts(trial):
                    if needle in item.text.casefold() and item.text not in seen:
                        seen.add(item.text)
                        found.append(item)
                if found:
                    if len(hits) == limit:
                        return hits, True
                    found.sort(key=lambda item: WHERE.index(item.where))
                    hits.append(TrialHits(entry, case, trial, found))
    return hits, False
