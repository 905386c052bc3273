"""Graders (`from trialrun import expect`): outcome, trajectory and cost expectations.

Each returns a `Grader`: a callable of (run, ctx) giving a `Verdict(passed, grader, reason, score=None)` whose
reason says what was seen, for a person reading a CI log.

May import: `_util`, `trajectory`, `_shell`, `wire`, `_scrub`, `models`, `mcp` (reading its record), `agent` (the
price table); never a case,
the runner or a report (cases hold graders, not the other way round).
"""

from ._base import Grader, Verdict, check
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
    "mcp_called",
    "mcp_not_called",
    "mcp_as_asked",
    "mcp_only_declared",
]
