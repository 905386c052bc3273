"""Graders on the tool's side of MCP: what each MCP server of the trial RECEIVED (its own record, `trialrun.mcp`),
never what the model said it asked for; and one that compares the two.

Each fails when it could not look: a server the trial never declared (nothing was served, so nothing examined),
and, for the claims that something did NOT happen, a server no client ever reached (the agent may never have been
given it; `reached=False` accepts that).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..trajectory import McpCall, McpServerSeen, Run, ToolCall, Trajectory
from ._base import Grader, Verdict, count_arg, flag_arg, text_arg
from ._calls import count as _count, fmt_args as _fmt_args
from ._match import args_match as _args_match, name_matcher as _name_matcher

__all__ = ["mcp_called", "mcp_not_called", "mcp_as_asked", "mcp_only_declared"]


def _label(name: str, *parts: str) -> str:
    return f"{name}({', '.join(p for p in parts if p)})"


def _server(trajectory: Trajectory, name: str) -> McpServerSeen | str:
    """The declared server `name`, or why there is none to examine."""
    for server in trajectory.mcp_servers:
        if server.name == name:
            return server
    declared = ", ".join(repr(s.name) for s in trajectory.mcp_servers)
    return (f"no MCP server named {name!r} was declared for this trial, so there was nothing to examine "
            f"(declared: {declared or 'none'}; serve it with ctx.mcp(...) or [mcp_servers.{name}])")


def _reached(server: McpServerSeen) -> str:
    """What reached a server, for a reason: `1 connection, 11 messages, tools listed`."""
    listed = "tools listed" if server.listed else "its tools never listed"
    return f"{_count(server.connections, 'connection')}, {_count(server.messages, 'message')}, {listed}"


def _calls(trajectory: Trajectory, server: str, tool: str | None) -> list[McpCall]:
    named = _name_matcher(tool) if tool is not None else None
    return [c for c in trajectory.mcp_calls if c.server == server and (named is None or named(c.tool))]


def _shown(calls: list[McpCall], limit: int = 4) -> str:
    text = "; ".join(f"{c.tool}({_fmt_args(c.arguments)})" for c in calls[:limit])
    return text + ("; ..." if len(calls) > limit else "")


def mcp_called(server: str, tool: str, args: Mapping[str, Any] | None = None, *, times: int | None = None,
               at_least: int | None = None, at_most: int | None = None, exact_args: bool = False) -> Grader:
    """MCP server `server` received a call of `tool` (a name or glob) with `args` among its arguments (all of them
    with exact_args; a value may be a predicate), at least once unless a count is given. Read from the server's
    own record: what the tool received, whatever the model asked for."""
    text_arg("mcp_called", "server", server)
    text_arg("mcp_called", "tool", tool)
    if args is not None and not isinstance(args, Mapping):
        raise TypeError(f"expect.mcp_called: args must be a mapping of argument names to values, got {type(args).__name__}")
    for name, value in (("times", times), ("at_least", at_least), ("at_most", at_most)):
        if value is not None:
            count_arg("mcp_called", name, value)
    flag_arg("mcp_called", "exact_args", exact_args)
    counts = [f"{n}={v}" for n, v in (("times", times), ("at_least", at_least), ("at_most", at_most)) if v is not None]
    label = _label("mcp_called", repr(server), repr(tool), f"args={dict(args)!r}" if args is not None else "", *counts,
                   "exact_args=True" if exact_args else "")
    if times is None and at_least is None and at_most is None:
        at_least = 1
    if at_least == 0 and at_most is None and times is None:
        raise ValueError("expect.mcp_called: at_least=0 alone can never fail; use mcp_not_called or give at_most")
    with_args = f" with {_fmt_args(args)}" if args else ""

    def grade(run: Run, ctx: object) -> Verdict:
        trajectory = run.trajectory
        found = _server(trajectory, server)
        if isinstance(found, str):
            return Verdict(False, label, found)
        received = _calls(trajectory, server, tool)
        hits = [c for c in received if _args_match(args, c.arguments, exact_args)]
        n = len(hits)
        ok = (times is None or n == times) and (at_least is None or n >= at_least) and (at_most is None or n <= at_most)
        every = _calls(trajectory, server, None)
        seen = f"; it received {_count(len(every), 'tool call')} in all ({_reached(found)})"
        if ok:
            return Verdict(True, label, f"MCP server {server!r} received {tool}{with_args} {n} time(s){seen}")
        if not found.connections:
            return Verdict(False, label, f"MCP server {server!r} was never reached: no client connected to it in "
                                         "the trial (was the agent given it?)")
        if received and not hits:
            return Verdict(False, label, f"MCP server {server!r} received {tool} {_count(len(received), 'time')}, "
                                         f"never{with_args} (it received: {_shown(received)}){seen}")
        want = (f"exactly {times}" if times is not None else f"at least {at_least}"
                if at_least is not None and n < at_least else f"at most {at_most}")
        other = f" (it received: {_shown(every)})" if every and not received else ""
        return Verdict(False, label, f"MCP server {server!r} received {tool}{with_args} {n} time(s), expected "
                                     f"{want}{other}{seen}")

    return Grader(label, grade, "trajectory")


def mcp_not_called(server: str, tool: str | None = None, args: Mapping[str, Any] | None = None, *,
                   reached: bool = True) -> Grader:
    """MCP server `server` received no call of `tool` (a name or glob; None: no tool call at all) with `args`.

    It fails when it could not look: the server was not declared for the trial, or (unless `reached=False`) no
    client ever connected to it, so nothing shows the agent could have called it. A call the model asked for and the
    agent never passed on (refused) was not received: the reason names such calls."""
    text_arg("mcp_not_called", "server", server)
    if tool is not None:
        text_arg("mcp_not_called", "tool", tool)
    if args is not None and not isinstance(args, Mapping):
        raise TypeError(f"expect.mcp_not_called: args must be a mapping, got {type(args).__name__}")
    flag_arg("mcp_not_called", "reached", reached)
    label = _label("mcp_not_called", repr(server), repr(tool) if tool is not None else "",
                   f"args={dict(args)!r}" if args is not None else "", "" if reached else "reached=False")
    what = (tool or "any tool") + (f" with {_fmt_args(args)}" if args else "")

    def grade(run: Run, ctx: object) -> Verdict:
        trajectory = run.trajectory
        found = _server(trajectory, server)
        if isinstance(found, str):
            return Verdict(False, label, found)
        hits = [c for c in _calls(trajectory, server, tool) if _args_match(args, c.arguments, False)]
        if hits:
            return Verdict(False, label, f"MCP server {server!r} received {what} {_count(len(hits), 'time')}: "
                                         f"{_shown(hits)}")
        if not found.connections and reached:
            return Verdict(False, label, f"cannot tell: MCP server {server!r} was served but never reached (no client "
                                         "connected to it), so nothing shows the agent could have called it; check "
                                         "that the agent was given it, or pass reached=False")
        asked = _asked_not_received(trajectory, found, tool)
        note = (f"; the model asked for {_count(len(asked), 'call')} the agent did not pass on: "
                f"{', '.join(c.name for c in asked[:3])}") if asked else ""
        every = _calls(trajectory, server, None)
        return Verdict(True, label, f"MCP server {server!r} received {what} 0 times (examined its record: "
                                    f"{_count(len(every), 'tool call')}; {_reached(found)}){note}")

    return Grader(label, grade, "trajectory")


def _asked_not_received(trajectory: Trajectory, server: McpServerSeen, tool: str | None) -> list[ToolCall]:
    """The model's calls that name one of `server`'s tools (`tool`, when given) and reached no server call."""
    from ..mcp.read import named_as

    joined = {id(c) for c in _joined_model_calls(trajectory)}
    tools = [tool] if tool is not None and "*" not in tool else server.tools
    return [call for call in trajectory.all_tool_calls if id(call) not in joined
            and any(named_as(call, server.name, name) for name in tools)]


def _joined_model_calls(trajectory: Trajectory) -> list[ToolCall]:
    """The model's calls that some server call was joined to (by name and id, in order)."""
    out: list[ToolCall] = []
    calls = trajectory.all_tool_calls
    for mcp_call in trajectory.mcp_calls:
        if not mcp_call.joined:
            continue
        match = next((c for c in calls if c.name == mcp_call.model_name and c.id == mcp_call.call_id
                      and all(c is not o for o in out)), None)
        if match is not None:
            out.append(match)
    return out


def mcp_as_asked(server: str | None = None, tool: str | None = None) -> Grader:
    """What the MCP servers received is what the model asked for: every tool call a server (`server`, when given;
    of `tool`, when given) received answers a model call of that tool with the SAME arguments, and every model call
    of a server's tool that the agent ran reached the server. An agent that rewrites arguments, calls a tool on its
    own, or drops a call is seen. Fails when there was no call to compare."""
    if server is not None:
        text_arg("mcp_as_asked", "server", server)
    if tool is not None:
        text_arg("mcp_as_asked", "tool", tool)
    label = _label("mcp_as_asked", repr(server) if server is not None else "", repr(tool) if tool is not None else "")

    def grade(run: Run, ctx: object) -> Verdict:
        trajectory = run.trajectory
        servers = [s for s in trajectory.mcp_servers if server is None or s.name == server]
        if not servers:
            found = _server(trajectory, server or "")
            return Verdict(False, label, found if isinstance(found, str) else "no MCP server was declared")
        calls = [c for s in servers for c in _calls(trajectory, s.name, tool)]
        problems = []
        for c in calls:
            if not c.joined:
                problems.append(f"{c.server} received {c.tool}({_fmt_args(c.arguments)}) that no model call asked for")
            elif c.model_arguments != c.arguments:
                problems.append(f"{c.server} received {c.tool}({_fmt_args(c.arguments)}) where the model asked "
                                f"{c.model_name}({_fmt_args(c.model_arguments or {})})")
        ran = {id(o.call) for o in trajectory.outcomes() if o.outcome == "ran"}
        for s in servers:
            for call in _asked_not_received(trajectory, s, tool):
                if id(call) in ran:
                    problems.append(f"the model asked for {call.name}({_fmt_args(call.arguments)}), which ran, but "
                                    f"{s.name} never received it")
        if problems:
            return Verdict(False, label, "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more"
                                                                   if len(problems) > 5 else ""))
        if not calls:
            return Verdict(False, label, "no MCP tool call to compare: the server(s) "
                                         f"{', '.join(repr(s.name) for s in servers)} received none")
        return Verdict(True, label, f"each of the {_count(len(calls), 'MCP tool call')} received matches the model "
                                    "call it answers, arguments and all")

    return Grader(label, grade, "trajectory")


def mcp_only_declared() -> Grader:
    """The agent was offered (and called) MCP tools of the trial's declared servers only: every tool the model was
    offered under an MCP name (`mcp__SERVER__TOOL`, `mcp_SERVER_TOOL`) is a declared server's, so an agent that picked
    up another server (from its workspace's configuration, say) is seen. Fails when no model request was observed
    (nothing offered was examined); the reason says what it examined."""
    label = "mcp_only_declared()"

    def grade(run: Run, ctx: object) -> Verdict:
        trajectory = run.trajectory
        if not trajectory.model_calls:
            return Verdict(False, label, "no model request was observed, so no offered tool could be examined")
        from ..mcp.read import declared_name

        declared = trajectory.mcp_servers
        names = list(dict.fromkeys([*trajectory.offered_tools, *(c.name for c in trajectory.all_tool_calls)]))
        mcp_named = [n for n in names if n.lower().startswith("mcp_")]
        foreign = [name for name in mcp_named if not any(declared_name(name, s.name, s.tools) for s in declared)]
        if foreign:
            shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
            return Verdict(False, label, f"the agent was offered MCP tools of servers the trial did not declare: {shown} "
                                         f"(declared: {', '.join(s.name for s in declared) or 'none'})")
        return Verdict(True, label, f"examined {_count(len(names), 'offered or called tool')}: "
                                    f"{_count(len(mcp_named), 'MCP-named tool')}, each a declared server's "
                                    f"({', '.join(s.name for s in declared) or 'none declared'})")

    return Grader(label, grade, "trajectory")
