"""trialrun: test tool-calling LLM agents the way unit tests test code.

Grade what the caller got back (outcome) separately from what the agent did to get there (trajectory), run each
case k times, and report pass@1 and pass^k.
"""

from . import expect
from ._version import __version__
from .agent import Agent, Decision, Price, PriceTable, Tool, ToolError, ToolPolicy, prices, shell_tools, tool
from .case import Case, CaseError, Problem, TrialContext, case
from .expect import Verdict, check
from .models import (
    Cassette,
    LiveModel,
    ModelTransport,
    NetworkBlockedError,
    ObservedTransport,
    ScriptedModel,
    fail,
    read_trajectory,
    reply,
    tool_call,
    tool_calls,
)
from .results import CaseResult, RunReport, SkippedCase, TrialError, TrialResult
from .runner import EvaluationInterrupted, aevaluate, evaluate
from .trajectory import Denial, Run, ToolCall, ToolResult, Trajectory, Turn, Usage

__all__ = [
    "__version__",
    "expect",
    "Case",
    "case",
    "CaseError",
    "Problem",
    "TrialContext",
    "evaluate",
    "aevaluate",
    "EvaluationInterrupted",
    "check",
    "Verdict",
    "RunReport",
    "CaseResult",
    "TrialResult",
    "TrialError",
    "SkippedCase",
    "Run",
    "Trajectory",
    "Turn",
    "ToolCall",
    "ToolResult",
    "Usage",
    "Denial",
    # the model seam
    "ModelTransport",
    "ScriptedModel",
    "tool_call",
    "tool_calls",
    "reply",
    "fail",
    "Cassette",
    "LiveModel",
    "ObservedTransport",
    "NetworkBlockedError",
    "read_trajectory",
    # the reference agent
    "Agent",
    "Tool",
    "ToolError",
    "tool",
    "shell_tools",
    "ToolPolicy",
    "Decision",
    "prices",
    "Price",
    "PriceTable",
]
