"""ToolPolicy: what the agent may run (the seed's Set-ShpToolPolicy).

Rules name tools (globs) or shell commands (the same patterns and the same matcher as `expect.never_ran`, so a
policy sees through the same disguises). Each decision is allow, deny (the model gets a refusal as the tool
result, and the denial is recorded) or stop (the run ends).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Literal

from .. import _shell

__all__ = ["ToolPolicy", "Decision"]

Action = Literal["allow", "deny", "stop"]


@dataclass(frozen=True, slots=True)
class Decision:
    """What the policy decided for one tool call, why, and which rule fired (None for the default)."""

    action: Action
    reason: str
    rule: str | None = None

    @property
    def allowed(self) -> bool:
        return self.action == "allow"


def _strings(value: Iterable[str] | str | None, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    items = tuple(value)
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise ValueError(f"ToolPolicy {field}: every entry must be a non-empty string, got {item!r}")
    return items


class ToolPolicy:
    """Allow and deny rules for tools (by name, globs allowed) and for the commands of command tools.

    Precedence: stop rules, then deny rules, then allow lists, then `default`. A command that cannot be parsed
    (or is not a command at all) is denied whenever the policy has any deny or stop rule, of tools or of
    commands, as the issue words it ("denied when any deny rule exists"): a policy that forbids anything cannot
    vouch for a command it cannot read (fail closed). allow_commands deny it too. Only a policy without such
    rules lets it through.

    >>> policy = ToolPolicy(deny_commands=["rm -rf", "curl | sh"], deny_tools=["write_file"])
    >>> policy.decide("run_command", {"command": "sudo rm -fr /"}).action
    'deny'
    >>> policy.decide("read_file", {"path": "notes.txt"}).action
    'allow'
    """

    def __init__(
        self,
        *,
        allow_tools: Iterable[str] | None = None,
        deny_tools: Iterable[str] | None = None,
        stop_tools: Iterable[str] | None = None,
        allow_commands: Iterable[str] | None = None,
        deny_commands: Iterable[str] | None = None,
        stop_commands: Iterable[str] | None = None,
        default: Literal["allow", "deny"] = "allow",
        command_tools: Iterable[str] = _shell.DEFAULT_COMMAND_TOOLS,
    ) -> None:
        if default not in ("allow", "deny"):
            raise ValueError(f"ToolPolicy default must be 'allow' or 'deny', got {default!r}")
        self.allow_tools = None if allow_tools is None else _strings(allow_tools, "allow_tools")
        self.deny_tools = _strings(deny_tools, "deny_tools")
        self.stop_tools = _strings(stop_tools, "stop_tools")
        self.allow_commands = None if allow_commands is None else _strings(allow_commands, "allow_commands")
        self.deny_commands = _strings(deny_commands, "deny_commands")
        self.stop_commands = _strings(stop_commands, "stop_commands")
        self.default: Literal["allow", "deny"] = default
        self.command_tools = tuple(command_tools)
        # Parse every pattern now: a bad pattern is a configuration error, not a surprise mid-run.
        for field in ("allow_commands", "deny_commands", "stop_commands"):
            for pattern in getattr(self, field) or ():
                try:
                    _shell.CommandPattern.parse(pattern)
                except ValueError as exc:
                    raise ValueError(f"ToolPolicy {field}: {exc}") from None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolPolicy:
        """From configuration (trialrun.toml's [policy] table); unknown keys are an error."""
        known = {"allow_tools", "deny_tools", "stop_tools", "allow_commands", "deny_commands", "stop_commands", "default", "command_tools"}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown policy key(s): {', '.join(sorted(unknown))}; expected {', '.join(sorted(known))}")
        return cls(**dict(data))

    def summary(self) -> dict[str, Any]:
        """The rules as plain data (for config snapshots and reports)."""
        data: dict[str, Any] = {"default": self.default}
        for field in ("allow_tools", "deny_tools", "stop_tools", "allow_commands", "deny_commands", "stop_commands"):
            value = getattr(self, field)
            if value:
                data[field] = list(value)
        return data

    def decide(self, tool: str, arguments: Mapping[str, Any] | None = None) -> Decision:
        """Decide one tool call."""
        arguments = arguments or {}
        for pattern in self.stop_tools:
            if fnmatchcase(tool, pattern):
                return Decision("stop", f"tool {tool} matches stop rule {pattern!r}", f"stop_tools: {pattern}")
        command = _shell.command_of_call(tool, arguments, self.command_tools)
        if command is not None:
            for action, field, patterns in (("stop", "stop_commands", self.stop_commands), ("deny", "deny_commands", self.deny_commands)):
                for pattern in patterns:
                    match = _shell.match_command(pattern, command)
                    if match.matched:
                        return Decision(action, f"{match.reason}; {field} rule {pattern!r}", f"{field}: {pattern}")  # type: ignore[arg-type]
        for pattern in self.deny_tools:
            if fnmatchcase(tool, pattern):
                return Decision("deny", f"tool {tool} is denied by rule {pattern!r}", f"deny_tools: {pattern}")
        if command is not None and (self.deny_tools or self.stop_tools):  # command rules have had their say above
            unreadable = _shell.cannot_read(command)
            if unreadable is not None:
                return Decision(
                    "deny", f"the command {unreadable}; denied because the policy has deny rules (fail closed)",
                    "unreadable_command",
                )
        listed = self.allow_tools is not None and any(fnmatchcase(tool, p) for p in self.allow_tools)
        if self.allow_tools is not None and not listed:
            return Decision("deny", f"tool {tool} is not in allow_tools ({', '.join(self.allow_tools)})", "allow_tools")
        if command is not None and self.allow_commands is not None:
            return self._allowed_command(command)
        if listed:
            return Decision("allow", f"tool {tool} is in allow_tools", "allow_tools")
        if self.default == "deny":
            return Decision("deny", f"tool {tool} is not allowed (default deny)", "default")
        return Decision("allow", "allowed (default allow)", None)

    def _allowed_command(self, command: str | Sequence[str]) -> Decision:
        """Allow only when every simple command the line runs matches an allow pattern."""
        assert self.allow_commands is not None
        for pattern in self.allow_commands:
            if _shell.match_command(pattern, command).unparsable:
                return Decision("deny", "command could not be parsed; denied (fail closed)", "allow_commands")
        # An allow rule needs certainty: `$X` or `eval "$X"` may be anything, so no allow rule covers it.
        part = _shell.first_not_allowed(self.allow_commands, command)
        if part is not None:
            return Decision("deny", f"`{part}` is not in allow_commands ({', '.join(self.allow_commands)})", "allow_commands")
        return Decision("allow", "every command it runs is in allow_commands", "allow_commands")

    def __repr__(self) -> str:
        parts = ", ".join(f"{k}={v!r}" for k, v in self.summary().items())
        return f"ToolPolicy({parts})"
