"""One trial's MCP servers (`TrialContext.mcp`): each served by the process's host for the trial's length, reached
over stdio (a relay command the agent starts) or streamable HTTP (a loopback URL), every message recorded in the
trial's one log; and what the trial keeps of them (their exchanges, problems, and what reached each server).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..trajectory import McpServerSeen, Trajectory
from ..wire._types import Exchange
from ._check import ScriptError
from ._passage import MCP_PATH
from ._record import McpLog
from ._script import ScriptedMCPServer, ScriptState

__all__ = ["McpEndpoint", "TrialMcp", "TRANSPORTS"]

TRANSPORTS = ("stdio", "http")


class McpEndpoint:
    """A server of the trial, as an agent reaches it: `command` (an argv list: `command[0]` and its `args`) for
    stdio, `url` for streamable HTTP; `config()` is the entry for an `mcpServers` configuration."""

    def __init__(self, name: str, transport: str, kind: str, token: str, *, command: list[str] | None = None,
                 url: str | None = None, state: ScriptState | None = None) -> None:
        self.name = name
        self.transport = transport
        self.kind = kind
        self.token = token
        self._command = command
        self._url = url
        self.state = state

    def __repr__(self) -> str:
        where = self._url if self.transport == "http" else "stdio"
        return f"McpEndpoint({self.name!r}, {self.kind}, {where})"

    @property
    def url(self) -> str:
        """The server's streamable HTTP URL; a server served over stdio has none (AttributeError saying so)."""
        if self._url is None:
            raise AttributeError(f"{self!r} is served over stdio: start it with .command and .args (or serve it with "
                             "transport='http' for a URL)")
        return self._url

    @property
    def command(self) -> list[str]:
        """The argv that starts the server over stdio (`command[0]` and `args`); an HTTP server has none."""
        if self._command is None:
            raise AttributeError(f"{self!r} is served over streamable HTTP: reach it at .url (or serve it with "
                             "transport='stdio' for a command)")
        return list(self._command)

    @property
    def args(self) -> list[str]:
        return self.command[1:]

    def through(self, endpoint: Any) -> McpEndpoint:
        """This server as an agent in a sandbox reaches it, through the model endpoint (its one way out, which is
        told to pass MCP traffic on: `ModelEndpoint.pass_mcp`): the same server, the same record."""
        from ._host import host
        from ._relay import relay_command

        served = host()
        if self.transport == "http":
            served.http_url(self.token)  # (the host's HTTP side started: the passage forwards to it)
        endpoint.pass_mcp(lambda: (served.http_port, served.relay_port))
        address = endpoint.url.removeprefix("http://")
        if self.transport == "http":
            return McpEndpoint(self.name, "http", self.kind, self.token, url=f"{endpoint.url}{MCP_PATH}{self.token}",
                               state=self.state)
        return McpEndpoint(self.name, "stdio", self.kind, self.token, state=self.state,
                           command=relay_command(address, self.token, f"{MCP_PATH}relay"))

    def config(self) -> dict[str, Any]:
        """`{"command": ..., "args": [...]}` or `{"type": "http", "url": ...}` (the `mcpServers` form most agents
        read; a preset writes its own agent's form)."""
        if self.transport == "http":
            return {"type": "http", "url": self.url}
        return {"command": self.command[0], "args": self.args}


class TrialMcp:
    """A trial's MCP servers and their one record."""

    def __init__(self) -> None:
        self.log = McpLog()
        self.endpoints: list[McpEndpoint] = []
        self._tokens: list[str] = []

    def add(self, server: Any, *, name: str | None = None, transport: str = "stdio",
            base: Path | None = None, workdir: Callable[[], Path] | None = None) -> McpEndpoint:
        """Serve `server` for the trial: a ScriptedMCPServer, a script file's path, a real server (`{"command":
        ...}` or `{"url": ...}`: behind the recording proxy, a command run in `workdir()` unless it says `cwd`) or an
        MCP cassette to replay."""
        if transport not in TRANSPORTS:
            raise ValueError(f"ctx.mcp: transport must be one of {', '.join(TRANSPORTS)}, got {transport!r}")
        if isinstance(server, (str, os.PathLike)):
            path = Path(server)
            server = ScriptedMCPServer.load(path if base is None or path.is_absolute() else base / path, name=name)
        label = name or getattr(server, "name", None)
        if not isinstance(label, str) or not label:
            raise ValueError("ctx.mcp: give the server a name (name=...)")
        if any(e.name == label for e in self.endpoints):
            raise ValueError(f"ctx.mcp: two MCP servers of this trial are named {label!r}")
        from ._host import host

        if isinstance(server, Mapping) and "command" in server and "cwd" not in server and workdir is not None:
            server = {**server, "cwd": str(workdir())}
        target, kind, state = self._target(server, label)
        served = host()
        token = served.register(target)
        self._tokens.append(token)
        if transport == "http":
            endpoint = McpEndpoint(label, transport, kind, token, url=served.http_url(token), state=state)
        else:
            from ._relay import relay_command

            endpoint = McpEndpoint(label, transport, kind, token, command=relay_command(served.relay_address, token),
                                   state=state)
        self.endpoints.append(endpoint)
        return endpoint

    def _target(self, server: Any, label: str) -> tuple[Any, str, ScriptState | None]:
        if isinstance(server, ScriptedMCPServer):
            from ._scripted_target import ScriptedTarget

            state = ScriptState(server, label)
            return ScriptedTarget(label, state, self.log), "scripted", state
        if isinstance(server, Mapping):
            from ._proxy import proxy_target

            return proxy_target(server, label, self.log), "proxy", None
        replay = getattr(server, "replay_target", None)
        if callable(replay):
            return replay(label, self.log), "replay", None
        raise ScriptError(f"ctx.mcp: {label!r}: expected a ScriptedMCPServer, a script file, {{'command': ...}} or "
                          f"{{'url': ...}} (a real server) or an MCP cassette; got {type(server).__name__}")

    def exchanges(self) -> list[Exchange]:
        return self.log.exchanges()

    def problems(self) -> list[str]:
        """What must fail the trial: scripts that had no answer, hostile or broken traffic."""
        from .read import unanswered

        found = list(self.log.problems)
        for endpoint in self.endpoints:
            if endpoint.state is not None:
                found.extend(endpoint.state.problems)
        return found + unanswered(self.exchanges())

    def seen(self, exchanges: list[Exchange]) -> list[McpServerSeen]:
        """What reached each server, from the log's counts and the recorded exchanges."""
        from .read import tools_listed

        listed = tools_listed(exchanges)
        return [McpServerSeen(e.name, e.transport, e.kind, self.log.connections.get(e.name, 0),
                              self.log.messages.get(e.name, 0), e.name in listed, listed.get(e.name, []))
                for e in self.endpoints]

    def attach(self, trajectory: Trajectory, first: int) -> None:
        """Put what the servers received into `trajectory` (its MCP exchanges numbered from `first`, after the
        model's), joined to the model's calls."""
        from .read import calls_of, join

        exchanges = self.exchanges()
        trajectory.mcp_servers = self.seen(exchanges)
        trajectory.mcp_calls = calls_of(exchanges, first)
        join(trajectory)

    async def astop(self) -> None:
        """`close`, off the event loop (the trial's teardown awaits it)."""
        import asyncio

        await asyncio.to_thread(self.close)

    def stop(self) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving the trial's servers (their connections are closed, proxied processes killed)."""
        if not self._tokens:
            return
        from ._host import host

        served = host()
        tokens, self._tokens = self._tokens, []
        for token in tokens:
            try:
                served.unregister(token)
            except Exception:  # noqa: BLE001 - closing is best effort; the host outlives the trial
                pass
