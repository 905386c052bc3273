"""trialrun: test tool-calling LLM agents the way unit tests test code.

Grade what the caller got back (outcome) separately from what the agent did to get there (trajectory), run each
case k times, and report pass@1 and pass^k.

Names are imported on first use, so `import trialrun` (and the pytest plugin, loaded in every pytest session)
stays cheap; `from trialrun import X` and `trialrun.X` work as usual.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

# Imported eagerly: `case` is both a submodule and the decorator, and importing the submodule binds its name on the
# package, so the decorator must be bound after it. (The core is light: no httpx, no pydantic.)
from .case import Case, CaseError, Problem, TrialContext, case

# public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    # cases and running
    "evaluate": "run.runner", "aevaluate": "run.runner", "EvaluationInterrupted": "run.runner",
    "RayExecutor": "run.executor",
    "evaluate_arms": "run.arms", "aevaluate_arms": "run.arms", "ArmsRun": "run.arms", "ArmsInterrupted": "run.arms",
    "check": "expect", "Verdict": "expect",
    # results
    "RunReport": "report.results", "CaseResult": "report.results", "TrialResult": "report.results",
    "TrialError": "report.results", "SkippedCase": "report.results",
    "compare": "report.compare", "Comparison": "report.compare", "CaseDelta": "report.compare",
    # what an agent did
    "Run": "trajectory", "Trajectory": "trajectory", "Turn": "trajectory", "ToolCall": "trajectory",
    "ToolResult": "trajectory", "Usage": "trajectory", "Denial": "trajectory", "Conversation": "trajectory",
    "CallOutcome": "trajectory", "McpCall": "trajectory", "McpServerSeen": "trajectory",
    # the model seam
    "ModelTransport": "models", "ScriptedModel": "models", "tool_call": "models", "tool_calls": "models",
    "reply": "models", "fail": "models", "shell": "models", "subagent": "models", "when": "models", "Cassette": "models", "LiveModel": "models", "RateLimit": "models", "ObservedTransport": "models",
    "NetworkBlockedError": "models", "read_trajectory": "models", "serve": "endpoint", "ModelEndpoint": "endpoint",
    # the reference agent
    "Agent": "agent", "Tool": "agent", "ToolError": "agent", "tool": "agent", "shell_tools": "agent",
    "ToolPolicy": "agent", "Decision": "agent", "prices": "agent", "Price": "agent", "PriceTable": "agent",
    "mcp_tools": "agent", "amcp_tools": "agent",
    # the second seam: MCP servers for a trial
    "ScriptedMCPServer": "mcp", "McpEndpoint": "mcp", "McpCassette": "mcp",
    # agents in another process (CLI coding agents)
    "ProcessAgent": "agents",
}
# the public subpackages and modules, by stage (suite files -> cases -> run -> report -> render)
_SUBMODULES = frozenset({"suite", "models", "wire", "trajectory", "endpoint", "expect", "agent", "agents",
                         "run", "report", "render", "mcp"})

__all__ = ["__version__", "expect", "Case", "case", "CaseError", "Problem", "TrialContext", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'trialrun' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(__all__) | _SUBMODULES)


if TYPE_CHECKING:  # for type checkers and editors: the same names, imported eagerly (`X as X`: re-exported)
    from . import (
        agent as agent,
        agents as agents,
        endpoint as endpoint,
        expect as expect,
        mcp as mcp,
        models as models,
        render as render,
        report as report,
        run as run,
        suite as suite,
        trajectory as trajectory,
        wire as wire,
    )
    from .agent import (
        Agent as Agent,
        Decision as Decision,
        Price as Price,
        PriceTable as PriceTable,
        Tool as Tool,
        ToolError as ToolError,
        ToolPolicy as ToolPolicy,
        amcp_tools as amcp_tools,
        mcp_tools as mcp_tools,
        prices as prices,
        shell_tools as shell_tools,
        tool as tool,
    )
    from .agents import ProcessAgent as ProcessAgent
    from .endpoint import ModelEndpoint as ModelEndpoint, serve as serve
    from .expect import Verdict as Verdict, check as check
    from .mcp import McpCassette as McpCassette, McpEndpoint as McpEndpoint, ScriptedMCPServer as ScriptedMCPServer
    from .models import (
        Cassette as Cassette,
        LiveModel as LiveModel,
        ModelTransport as ModelTransport,
        NetworkBlockedError as NetworkBlockedError,
        ObservedTransport as ObservedTransport,
        RateLimit as RateLimit,
        ScriptedModel as ScriptedModel,
        fail as fail,
        read_trajectory as read_trajectory,
        reply as reply,
        shell as shell,
        subagent as subagent,
        tool_call as tool_call,
        tool_calls as tool_calls,
        when as when,
    )
    from .report.compare import CaseDelta as CaseDelta, Comparison as Comparison, compare as compare
    from .report.results import (
        CaseResult as CaseResult,
        RunReport as RunReport,
        SkippedCase as SkippedCase,
        TrialError as TrialError,
        TrialResult as TrialResult,
    )
    from .run.executor import RayExecutor as RayExecutor
    from .run.runner import EvaluationInterrupted as EvaluationInterrupted, aevaluate as aevaluate, evaluate as evaluate
    from .trajectory import (
        CallOutcome as CallOutcome,
        Conversation as Conversation,
        Denial as Denial,
        McpCall as McpCall,
        McpServerSeen as McpServerSeen,
        Run as Run,
        ToolCall as ToolCall,
        ToolResult as ToolResult,
        Trajectory as Trajectory,
        Turn as Turn,
        Usage as Usage,
    )
