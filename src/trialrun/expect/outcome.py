"""Outcome graders: what the caller got back."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..trajectory import Run
from ._base import Grader, Verdict, clip, flag_arg, output_text, short_label, text_arg

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

    return Grader(short_label(label, 80), grade, "outcome")


def contains(text: str, *, case_sensitive: bool = True) -> Grader:
    """The output (as text) contains `text`."""
    text = text_arg("contains", "text", text)
    flag_arg("contains", "case_sensitive", case_sensitive)
    if not text:
        raise ValueError("expect.contains: every output contains the empty text, so it could never fail; give the "
                         "text the output must contain")
    label = f"contains({text!r}{'' if case_sensitive else ', case_sensitive=False'})"
    needle = _fold(text, case_sensitive)
    found = f"output contains {text!r}"  # the same every trial

    def grade(run: Run, ctx: object) -> Verdict:
        out = output_text(run.output)
        if needle in _fold(out, case_sensitive):
            return Verdict(True, label, found)
        return Verdict(False, label, f"output does not contain {text!r}; output was {clip(out)!r}")

    return Grader(label, grade, "outcome")


def not_contains(text: str, *, case_sensitive: bool = True) -> Grader:
    """The output (as text) does not contain `text` (a leaked secret, a forbidden phrase)."""
    text = text_arg("not_contains", "text", text)
    flag_arg("not_contains", "case_sensitive", case_sensitive)
    if not text:
        raise ValueError("expect.not_contains: every output contains the empty text, so it could never pass; give "
                         "the text the output must not contain")
    label = f"not_contains({text!r}{'' if case_sensitive else ', case_sensitive=False'})"
    needle = _fold(text, case_sensitive)

    def grade(run: Run, ctx: object) -> Verdict:
        out = output_text(run.output)
        at = _fold(out, case_sensitive).find(needle)
        if at < 0:
            empty = "" if out.strip() else f" (the output is empty: {clip(repr(run.output), 40)})"
            return Verdict(True, label, f"output does not contain {text!r}{empty}")
        context = out[max(0, at - 30) : at + len(text) + 30]
        return Verdict(False, label, f"output contains {text!r} at character {at}: ...{context}...")

    return Grader(label, grade, "outcome")


def matches(pattern: str | re.Pattern[str], *, flags: int = 0) -> Grader:
    """The output (as text) matches a regular expression (re.search)."""
    if not isinstance(pattern, re.Pattern):
        try:
            pattern = re.compile(text_arg("matches", "pattern", pattern), flags)
        except re.error as exc:
            raise ValueError(f"expect.matches: {pattern!r} is not a regular expression: {exc}") from None
    regex = pattern
    label = f"matches({regex.pattern!r}{_flags(regex)})"

    def grade(run: Run, ctx: object) -> Verdict:
        out = output_text(run.output)
        found = regex.search(out)
        if found:
            return Verdict(True, label, f"output matches /{regex.pattern}/ at {found.group(0)!r}")
        return Verdict(False, label, f"output does not match /{regex.pattern}/; output was {clip(out)!r}")

    return Grader(label, grade, "outcome")


def _flags(regex: re.Pattern[str]) -> str:
    """The flags that change what a pattern matches, as a label shows them (`, flags=re.IGNORECASE`); a str
    pattern's implied re.UNICODE is left out."""
    flags = regex.flags & ~re.UNICODE
    names = [f"re.{flag.name}" for flag in re.RegexFlag if flag.name and flag & flags]
    return f", flags={'|'.join(names)}" if names else ""


def satisfies(fn: Callable[[Any], Any], description: str | None = None) -> Grader:
    """`fn(output)` is truthy (or returns a passing Verdict). `description` says what it checks."""
    if not callable(fn):
        raise TypeError(f"expect.satisfies: fn must be callable (output -> bool), got {type(fn).__name__}")
    if description is not None:
        text_arg("satisfies", "description", description)
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
    for status in statuses:
        text_arg("ended", "a status", status)
    label = f"ended({', '.join(repr(s) for s in statuses)})"

    def grade(run: Run, ctx: object) -> Verdict:
        status = run.status or "completed"
        detail = f": {run.error}" if run.error else ""
        if status in statuses:
            return Verdict(True, label, f"the run ended with status {status!r}{detail}")
        return Verdict(False, label, f"the run ended with status {status!r}{detail}; expected {' or '.join(map(repr, statuses))}")

    grade.grades_status = True  # type: ignore[attr-defined]  # the runner leaves a run's ending to this grader
    return Grader(label, grade, "outcome")
