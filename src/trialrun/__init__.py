"""trialrun: test tool-calling LLM agents the way unit tests test code."""

from ._version import __version__
from .trajectory import Denial, Run, ToolCall, ToolResult, Trajectory, Turn, Usage

__all__ = ["__version__", "Denial", "Run", "ToolCall", "ToolResult", "Trajectory", "Turn", "Usage"]
