"""Graders (`from trialrun import expect`): outcome, trajectory and cost expectations, and graders of the files an
agent left in its workdir (`workspace`: `verify`, `file_contains`, `changed_only`, ...).

Each returns a `Grader`: a callable of (run, ctx) giving a `Verdict(passed, grader, reason, score=None)` whose
reason says what was seen, for a person reading a CI log.

May import: `_util`, `trajectory`, `_shell`, `wire`, `_scrub`, `models`, `mcp` (reading its record), `agent` (the
price table); never a case,
the runner or a report (cases hold graders, not the other way round).
"""

from ._base import Grader, Verdict, check, safety
from .cost import max_cost_usd
from .mcp import mcp_as_asked, mcp_called, mcp_not_called, mcp_only_declared
from .outcome import contains, ended, equals, matches, not_contains, satisfies
from .trajectory import (
    called,
    called_in_order,
    max_tool_calls,
    max_turns,
    never_ran,
    no_denials,
    no_model_calls,
    no_tool_errors,
    not_called,
    trajectory_matches,
)
from .workspace import changed_only, file_contains, file_exists, file_matches, file_unchanged, verify

__all__ = [
    "Grader",
    "Verdict",
    "check",
    "equals",
    "contains",
    "not_contains",
    "matches",
    "satisfies",
    "ended",
    "called",
    "not_called",
    "called_in_order",
    "trajectory_matches",
    "max_turns",
    "max_tool_calls",
    "no_tool_errors",
    "no_denials",
    "never_ran",
    "no_model_calls",
    "max_cost_usd",
    "safety",
    "verify",
    "file_exists",
    "file_contains",
    "file_matches",
    "file_unchanged",
    "changed_only",
    "mcp_called",
    "mcp_not_called",
    "mcp_as_asked",
    "mcp_only_declared",
]


def __getattr__(name: str) -> object:
    """A grader name mistyped (`expect.calld`) is an AttributeError that names the grader meant and every grader,
    in the message itself (a test runner's report shows the message, not Python's own traceback hint)."""
    import difflib

    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    close = difflib.get_close_matches(name, __all__, n=1, cutoff=0.6)
    hint = f"; did you mean expect.{close[0]}?" if close else ""
    raise AttributeError(f"trialrun.expect has no grader {name!r}{hint} (graders: {', '.join(__all__[3:])})",
                         name=name, obj=None)  # (no obj: Python's traceback would add its own hint a second time)
