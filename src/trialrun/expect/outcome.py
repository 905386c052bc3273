"""Outcome graders: what the caller got back."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..trajectory import Run
from ._base import Grader, Verdict, clip, output_text

__all__ = ["equals", "contains", "not_contains", "matches", "satisfies", "ended"]


def _fold(text: str, case_sensitive: bool) -> str:
    return text if case_sensitive else text.casefold()


def equals(value: Any) -> Grader:
    """The output equals `value` (==)."""
    label = f"equals({value!r})"

    def grade(run: Run, ctx: object) -> Verdict:
        if run.output == value:
            return Verdict(True, label, f"output equals {clip(repr(value))}")
        return Verdict(False, label, f"output was {clip(repr(run.output))}, expected {clip(repr(value))}")

    return Grader(clip(label, 80), grade, "outcome")


def contains(text: str, *, case_sensitive: bool = True) -> Grader:
    """The output (as text) contains `text`."""
    label = f"contains({text!r}{'' if case_sensitive else ', case_sensitive=False'})"
    needle = _fold(text, case_sensitive)

    def grade(run: Run, ctx: object) -> Verdict:
        out = output_text(run.output)
        if needle in _fold(out, case_sensitive):
            return Verdict(True, label, f"output contains {text!r}")
        return Verdict(False, label, f"output does not contain {text!r}; output was {clip(out)!r}")

    return Grader(label, grade, "outcome")


def not_contains(text: str, *, case_sensitive: bool = True) -> Grader:
    """The output (as text) does not contain `text` (a leaked secret, a forbidden phrase)."""
    label = f"not_contains({text!r}{'' if case_sensitive else ', case_sensitive=False'})"
    needle = _fold(text, case_sensitive)

    def grade(run: Run, ctx: object) -> Verdict:
        out = output_text(run.output)
        at = _fold(out, case_sensitive).find(needle)
        if at < 0:
            return Verdict(True, label, f"output does not contain {text!r}")
        context = out[max(0, at - 30) : at + len(text) + 30]
        return Verdict(False, label, f"output contains {text!r} at character {at}: ...{context}...")

    return Grader(label, grade, "outcome")


def matches(pattern: str | re.Pattern[str], *, flags: int = 0) -> Grader:
    """The output (as text) matches a regular expression (re.search)."""
    regex = re.compile(pattern, flags) if isinstance(pattern, str) else pattern
    label = f"matches({regex.pattern!r})"

    def grade(run: Run, ctx: object) -> Verdict:
        out = output_text(run.output)
        found = regex.search(out)
        if found:
            return Verdict(True, label, f"output matches /{regex.pattern}/ at {found.group(0)!r}")
        return Verdict(False, label, f"output does not match /{regex.pattern}/; output was {clip(out)!r}")

    return Grader(label, grade, "outcome")


def satisfies(fn: Callable[[Any], Any], description: str | None = None) -> Grader:
    """`fn(output)` is truthy (or returns a passing Verdict). `description` says what it checks."""
    what = description or getattr(fn, "__name__", "predicate")
    label = f"satisfies({what!r})"

    def grade(run: Run, ctx: object) -> Verdict:
        result = fn(run.output)
        if isinstance(result, Verdict):
            return result
        if result:
            return Verdict(True, label, f"output satisfies: {what}")
        return Verdict(False, label, f"output does not satisfy: {what}; output was {clip(output_text(run.output))!r}")

    return Grader(label, grade, "outcome")


def ended(*statuses: str) -> Grader:
    """The agent's run ended with one of these statuses ("completed", "max_turns", "cost_limit",
    "stopped_by_policy", "error"). A run that reports no status counts as "completed"."""
    if not statuses:
        statuses = ("completed",)
    label = f"ended({', '.join(repr(s) for s in statuses)})"

    def grade(run: Run, ctx: object) -> Verdict:
        status = run.status or "completed"
        detail = f": {run.error}" if run.error else ""
        if status in statuses:
            return Verdict(True, label, f"the run ended with status {status!r}{detail}")
        return Verdict(False, label, f"the run ended with status {status!r}{detail}; expected {' or '.join(map(repr, statuses))}")

    return Grader(label, grade, "outcome")
