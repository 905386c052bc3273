"""Model transports: httpx transports that stand where an agent's model traffic goes.

Every one of them records the exchanges passing through it, so a `Trajectory` can be read from any agent built on
httpx (the official SDKs, pydantic-ai, the OpenAI Agents SDK, LangChain, trialrun's own agent):

- `ScriptedModel`: answers from a script of neutral steps (`tool_call`, `tool_calls`, `reply`, `fail`, `shell`, `subagent`), no network.
- `Cassette`: replays recorded traffic (no network), or records it from a live model with credentials scrubbed.
- `LiveModel`: the real provider, with the key from the environment, timeouts and retries.
- `RateLimit`: a provider's rate limit for LiveModel, shared by every LiveModel of one endpoint and key.
- `ObservedTransport`: records the traffic of any other httpx transport.
- `guard`: the no-network guard for deterministic runs.

May import: `_util`, `_contain`, `trajectory`, `_shell`, `wire` and `_scrub`: a transport knows the wire, never
a case, the runner or a report.
"""

from __future__ import annotations

from . import guard
from ._base import ModelTransport
from .cassette import Cassette, read_trajectory
from .guard import NetworkBlockedError
from .live import LiveModel
from .observe import ObservedTransport, observe
from .ratelimit import RateLimit
from .scripted import ScriptedModel, When, fail, reply, shell, subagent, tool_call, tool_calls, when

__all__ = [
    "ModelTransport",
    "ScriptedModel",
    "tool_call",
    "tool_calls",
    "reply",
    "fail",
    "shell",
    "subagent",
    "when",
    "When",
    "Cassette",
    "read_trajectory",
    "LiveModel",
    "RateLimit",
    "ObservedTransport",
    "observe",
    "NetworkBlockedError",
    "guard",
]
