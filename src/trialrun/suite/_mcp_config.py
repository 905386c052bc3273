"""trialrun.toml's `[mcp_servers.NAME]`: the MCP servers each trial of the suite gets, checked before anything runs.

    [mcp_servers.notes]
    script = "notes_mcp.yaml"        # a scripted server (trialrun.ScriptedMCPServer's file)
    transport = "stdio"              # stdio (default for script and command) | http (default for url)

    [mcp_servers.everything]
    command = "npx -y @modelcontextprotocol/server-everything"   # a real server, behind the recording proxy
    args = []                        # more arguments; env = {...}; cwd = "..." (default: the trial's workdir)
    record = "mcp-cassettes/everything"   # keep each test's traffic there (a folder: <test id>.yaml per test)

    [mcp_servers.offline]
    replay = "mcp-cassettes/everything"   # answer from those recordings: no server runs

    [mcp_servers.remote]
    url = "http://127.0.0.1:9000/mcp"     # a real streamable HTTP server; headers = {...}
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["McpServerSpec", "SuiteMcp", "check_mcp_servers", "specs", "server_for", "KEYS"]

KEYS = ("script", "command", "args", "env", "cwd", "url", "headers", "transport", "record", "replay")
_SOURCES = ("script", "command", "url", "replay")


@dataclass(frozen=True)
class McpServerSpec:
    """One `[mcp_servers.NAME]` table, checked: what serves it, how it is reached, where its traffic is kept."""

    name: str
    source: str                          # script | command | url | replay
    transport: str
    table: dict[str, Any] = field(default_factory=dict)


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise ValueError(f"{where} must be non-empty text, got {value!r}")
    return value


def _table(name: str, value: Any) -> McpServerSpec:
    where = f"mcp_servers.{name}"
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be a table ([{where}] with script, command, url or replay), got {value!r}")
    for key in value:
        if key not in KEYS:
            close = difflib.get_close_matches(str(key), KEYS, n=1)
            raise ValueError(f"{where}.{key}: unknown key" + (f" (did you mean {close[0]!r}?)" if close else "")
                             + f"; known: {', '.join(KEYS)}")
    given = [key for key in _SOURCES if key in value]
    if len(given) != 1:
        raise ValueError(f"{where}: give exactly one of script (a scripted server's file), command (a real stdio "
                         f"server), url (a real HTTP server) or replay (recorded traffic); got "
                         f"{', '.join(given) or 'none'}")
    source = given[0]
    for key in ("script", "url", "replay", "record", "cwd"):
        if key in value:
            _text(value[key], f"{where}.{key}")
    if "command" in value and not (isinstance(value["command"], str) and value["command"].strip()
                                   or isinstance(value["command"], list) and value["command"]
                                   and all(isinstance(a, str) for a in value["command"])):
        raise ValueError(f"{where}.command must be a command line (text, or a list of text), got {value['command']!r}")
    if "args" in value and not (isinstance(value["args"], list) and all(isinstance(a, str) for a in value["args"])):
        raise ValueError(f"{where}.args must be a list of text, got {value['args']!r}")
    for key in ("env", "headers"):
        if key in value and not (isinstance(value[key], dict) and all(isinstance(v, str) for v in value[key].values())):
            raise ValueError(f"{where}.{key} must be a table of text values, got {value[key]!r}")
    if "record" in value and source not in ("command", "url"):
        raise ValueError(f"{where}.record: only a real server's traffic is recorded (with command or url)")
    if source != "command" and any(k in value for k in ("args", "env", "cwd")):
        raise ValueError(f"{where}: args, env and cwd go with command")
    if source != "url" and "headers" in value:
        raise ValueError(f"{where}: headers go with url")
    transport = value.get("transport", "http" if source == "url" else "stdio")
    if transport not in ("stdio", "http"):
        raise ValueError(f"{where}.transport must be \"stdio\" or \"http\", got {transport!r}")
    if source == "command" and transport != "stdio" or source == "url" and transport != "http":
        raise ValueError(f"{where}.transport: a {source} server is reached over "
                         f"{'stdio' if source == 'command' else 'http'}")
    return McpServerSpec(name, source, transport, dict(value))


def check_mcp_servers(value: Any) -> dict[str, Any]:
    """`mcp_servers` as written, each table checked (the Config validator); ValueError naming the key otherwise."""
    if not isinstance(value, dict):
        raise ValueError(f"must be tables [mcp_servers.NAME], got {value!r}")
    for name, table in value.items():
        if not isinstance(name, str) or not name or any(ch.isspace() or ch in "/\\" for ch in name):
            raise ValueError(f"mcp_servers: {name!r} is not a server name (no spaces or slashes)")
        _table(name, table)
    return value


def specs(value: dict[str, Any]) -> list[McpServerSpec]:
    return [_table(name, table) for name, table in value.items()]


def server_for(spec: McpServerSpec, test_id: str, resolve: Callable[[str], Path]) -> Any:
    """What `ctx.mcp` serves for `spec` in a trial of test `test_id` (paths resolved beside trialrun.toml)."""
    table = spec.table
    if spec.source == "script":
        from ..mcp import ScriptedMCPServer

        return ScriptedMCPServer.load(resolve(table["script"]), name=spec.name)
    if spec.source == "replay":
        from ..mcp.cassette import McpCassette

        return McpCassette(resolve(table["replay"]), test_id, mode="replay")
    real: dict[str, Any] = {key: table[key] for key in ("command", "args", "env", "cwd", "url", "headers") if key in table}
    if "cwd" in real:
        real["cwd"] = str(resolve(real["cwd"]))
    if "record" in table:
        from ..mcp.cassette import McpCassette

        return McpCassette(resolve(table["record"]), test_id, mode="record", real=real)
    return real


class SuiteMcp:
    """A suite's MCP servers: checked when the cases are built (a script that cannot be read, an agent that cannot
    take MCP servers: a ConfigError before anything runs), then served to every trial."""

    def __init__(self, value: dict[str, Any], resolve: Callable[[str], Path], where: str) -> None:
        from ..mcp import ScriptedMCPServer, ScriptError

        self.specs = specs(value)
        self.resolve = resolve
        self.scripts: dict[str, Any] = {}
        for spec in self.specs:
            if spec.source == "script":
                try:
                    self.scripts[spec.name] = ScriptedMCPServer.load(resolve(spec.table["script"]), name=spec.name)
                except ScriptError as exc:
                    raise ValueError(f"mcp_servers.{spec.name}.script: {exc}") from None
            elif spec.source == "replay" and not resolve(spec.table["replay"]).is_dir():
                raise ValueError(f"mcp_servers.{spec.name}.replay: {str(resolve(spec.table['replay']))!r} is not a "
                                 "folder of recordings (record them first: record = \"...\" with command or url)")

    def tool_names(self) -> list[str] | None:
        """The tools the servers offer, when every one is scripted (a real or replayed one's are known only when it
        runs): what the reference agent will be offered besides its own."""
        if len(self.scripts) != len(self.specs):
            return None
        return [tool.name for script in self.scripts.values() for tool in script.tools]

    def missing_recordings(self, test_ids: list[str]) -> list[str]:
        """The recordings a replayed server lacks for tests that will run (each file named)."""
        from ..mcp.cassette import cassette_file

        return [str(cassette_file(self.resolve(spec.table["replay"]), test_id)) for spec in self.specs
                if spec.source == "replay" for test_id in test_ids
                if not cassette_file(self.resolve(spec.table["replay"]), test_id).is_file()]

    def check_agent(self, agent: Any) -> None:
        """ValueError when the configured process agent cannot be given MCP servers."""
        if self.specs and agent is not None:
            from ..agents._mcp import check_mcp

            check_mcp(agent)

    def serve(self, ctx: Any, test_id: str) -> list[Any]:
        """Every server, for this trial (`ctx.mcp`); their endpoints."""
        return [ctx.mcp(self.scripts.get(spec.name) or server_for(spec, test_id, self.resolve), name=spec.name,
                        transport=spec.transport) for spec in self.specs]
