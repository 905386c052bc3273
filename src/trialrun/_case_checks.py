"""The checks `Case()` makes of its arguments, one function per group of fields.

Each reports what is wrong through `bad(field, message)` instead of raising, so that `Case()` can list every
problem of a case at once (a CaseError), and returns the field's value as the case keeps it. Kept out of `case`
so that the class reads as what a case is, not as the long list of what it must not be.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .expect._base import Grader, as_grader
from .expect.cost import max_cost_usd as _max_cost_grader

#: Reports one problem: the field it is in, and what is wrong.
Bad = Callable[[str, str], None]

_MODE_SPELLINGS = {"deterministic": "deterministic", "livecanary": "live_canary", "live_canary": "live_canary", "live-canary": "live_canary", "live": "live_canary"}


def _takes_one_argument(fn: Callable[..., Any]) -> str | None:
    """Why `fn` cannot be called with the trial context alone, or None when it can (or cannot be inspected)."""
    import inspect  # imported where used: `import trialrun` imports this module

    try:
        inspect.signature(fn).bind(object())
    except TypeError as exc:
        return f"must take one argument, the trial context (ctx); calling it with one fails: {exc}"
    except ValueError:  # a builtin without a signature: it will say so when called
        return None
    return None


def check_callables(name: Any, invoke: Any, setup: Any, teardown: Any, bad: Bad) -> None:
    """The name and the callables: name and invoke are required, and every callable takes the trial context."""
    if name is None or (isinstance(name, str) and not name.strip()):
        bad("name", "a case needs a non-empty name (its unique key)")
    elif not isinstance(name, str):
        bad("name", f"must be a string, got {type(name).__name__}")
    if invoke is None:
        bad("invoke", "a case needs an invoke (a callable taking the trial context)")
    elif not callable(invoke):
        bad("invoke", f"must be callable, got {type(invoke).__name__}")
    elif (problem := _takes_one_argument(invoke)) is not None:
        bad("invoke", problem)
    for field, hook in (("setup", setup), ("teardown", teardown)):
        if hook is not None and not callable(hook):
            bad(field, f"must be callable or None, got {type(hook).__name__}")
        elif hook is not None and (problem := _takes_one_argument(hook)) is not None:
            bad(field, problem)


def check_tags(tags: Any, bad: Bad) -> tuple[str, ...]:
    """The tags, a list of non-empty strings (one string on its own is one tag)."""
    if isinstance(tags, str):
        tags = [tags]
    if not isinstance(tags, Iterable):
        bad("tags", f"must be a list of strings, got {type(tags).__name__}")
        return ()
    tag_list: list[str] = []
    for tag in tags:
        if isinstance(tag, str) and tag:
            tag_list.append(tag)
        else:
            bad("tags", f"every tag must be a non-empty string, got {tag!r}")
    return tuple(tag_list)


def check_mode(mode: Any, bad: Bad) -> str | None:
    """The mode in its one spelling ("live canary" and "Live" are "live_canary"), or None when it is not one."""
    normal_mode = _MODE_SPELLINGS.get(mode.replace(" ", "").lower()) if isinstance(mode, str) else None
    if normal_mode is None:
        bad("mode", f"{mode!r} is not a mode; expected 'deterministic' or 'live_canary'")
    return normal_mode


def check_graders(expect_outcome: Any, expect_trajectory: Any, max_cost_usd: Any, bad: Bad) -> list[Grader]:
    """Every grader the case runs: its outcome and trajectory expectations, then its cost limit. A case with none
    is a problem too (a case that grades nothing cannot fail), unless a problem with one of them already says so."""
    flagged = False

    def bad_expectation(field: str, message: str) -> None:
        nonlocal flagged
        flagged = True
        bad(field, message)

    graders: list[Grader] = []
    for field, items, kind in (
        ("expect_outcome", expect_outcome, "outcome"),
        ("expect_trajectory", expect_trajectory, "trajectory"),
    ):
        graders.extend(_graders_of(field, items, kind, bad_expectation))
    if max_cost_usd is not None:
        if isinstance(max_cost_usd, bool) or not isinstance(max_cost_usd, (int, float)):
            bad_expectation("max_cost_usd", f"must be a number of US dollars, got {type(max_cost_usd).__name__}")
        elif not max_cost_usd >= 0:  # negative, or NaN (which compares false with everything)
            bad_expectation("max_cost_usd", f"must be 0 or more US dollars, got {max_cost_usd}")
        else:
            graders.append(_max_cost_grader(float(max_cost_usd)))
    if not graders and not flagged:
        bad(
            "expect_outcome",
            "no expectation: give at least one of expect_outcome, expect_trajectory or max_cost_usd "
            "(a case that grades nothing cannot fail)",
        )
    return graders


def _graders_of(field: str, items: Any, kind: str, bad: Bad) -> list[Grader]:
    """One expectation list's graders: None, one grader on its own, or a list of graders and plain callables."""
    if items is None:
        return []
    if callable(items) and not isinstance(items, (list, tuple)):
        items = [items]
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        bad(field, f"must be a list of graders, got {type(items).__name__}")
        return []
    graders: list[Grader] = []
    for position, item in enumerate(items, start=1):
        try:
            # trialrun's graders know what they grade (expect.called is a trajectory grader wherever it is
            # listed); a plain callable grades what its list says.
            graders.append(as_grader(item, kind))
        except TypeError as exc:
            bad(field, f"item {position}: {exc}")
    return graders


def check_limits_and_text(timeout_s: Any, trials: Any, title: Any, description: Any, metadata: Any, bad: Bad) -> None:
    """The optional fields: the time limit and trial count, the title and description, and the metadata."""
    if timeout_s is not None and (
        isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 0 < timeout_s < float("inf")
    ):
        bad("timeout_s", f"must be a positive number of seconds, got {timeout_s!r}")
    if trials is not None and (isinstance(trials, bool) or not isinstance(trials, int) or trials < 1):
        bad("trials", f"must be a positive integer, got {trials!r}")
    for field, text in (("title", title), ("description", description)):
        if text is not None and not isinstance(text, str):
            bad(field, f"must be a string, got {type(text).__name__}")
    if metadata is not None and not isinstance(metadata, Mapping):
        bad("metadata", f"must be a mapping, got {type(metadata).__name__}")
