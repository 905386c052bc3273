"""ToolPolicy: what the agent may run (the seed's Set-ShpToolPolicy).

Rules name tools (globs) or shell commands (the same patterns and the same matcher as `expect.never_ran`, so a
policy sees through the same disguises). Each decision is allow, deny (the model gets a refusal as the tool
result, and the denial is recorded) or stop (the run ends).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Literal

from .._util.command_tools import KNOWN_COMMAND_TOOLS

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
    if not isinstance(value, Iterable) or isinstance(value, Mapping):  # `deny_commands = 1` in trialrun.toml
        raise ValueError(f"ToolPolicy {field}: must be a list of strings, got {value!r}")
    items = tuple(value)
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise ValueError(f"ToolPolicy {field}: every entry must be a non-empty string, got {item!r}")
    return items


class ToolPolicy:
    """Allow and deny rules for tools (by name, globs allowed) and for the commands of command tools.

    Precedence: stop rules, then deny rules, then allow lists, then `default`. A command that cannot be parsed
    (or is not a command at all), and a command known only at run time (a command word like `$CMD` or
    `$(cat c.txt)`, code handed to a shell or another interpreter that nobody can read, a script the trajectory
    never showed and that is not one of `own_scripts`), is denied whenever the policy has any deny or stop rule,
    of tools or of commands, as the issue words it ("denied when any deny rule exists"): a policy that forbids
    anything cannot vouch for a command it cannot read (fail closed). allow_commands deny it too. Only a policy
    without such rules lets it through.

    `own_scripts` says which scripts the trajectory never showed being written are the user's own, run without
    being read: "workspace" (default: any relative path inside the workspace), "none", or a list of globs
    (`["scripts/*.sh", "./configure"]`). `decide(..., earlier=...)` takes the calls that ran before (as
    (tool, arguments)), so that `sh x.sh` is judged by what an earlier `write_file` or `echo ... > x.sh` put there.

    Deny and stop rules match when the command runs the pattern's program with ALL the pattern's words, in any
    order (`rm -rf` catches `sudo rm -f -r /`). Allow rules are exact instead, because "allowed" must not stretch
    to what the rule's author never saw:

    - every program the command runs must be allowed, wrappers included (`sudo ls` needs `sudo` too);
    - a rule that is just a program (`ls`) allows it with any arguments;
    - a rule with arguments allows exactly those words, in that order (`git status` allows `git status`, not
      `git -c core.fsmonitor=... status`; `cat notes.txt` does not allow `cat /etc/shadow notes.txt`), unless it
      ends with ` *`, which allows more arguments after them (`git log *`); such a rule allows no variable
      assignment in front of the command either (`GIT_DIR=x git status`);
    - the program is compared as written: `ls` allows `ls`, not `./ls` or `/tmp/x/ls` (write `/bin/ls` to allow
      that path); a program or argument only known at run time (`$X`, `$(...)`) never matches a word;
    - assigning PATH, IFS, ENV, BASH_ENV, PYTHONPATH, PYTHONSTARTUP or any LD_* or DYLD_* variable anywhere in
      the line (`PATH=. ls`, `export LD_PRELOAD=x.so`, `env PATH=. ls`) is never allowed: it changes which
      program a name runs, or what a program loads;
    - a pipeline is not a rule: each command of a pipeline is judged on its own.

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
        command_tools: Iterable[str] = KNOWN_COMMAND_TOOLS,
        own_scripts: str | Iterable[str] = "workspace",
    ) -> None:
        from .. import _shell  # the shell analysis is imported by the first policy, not by `import trialrun.agent`

        if default not in ("allow", "deny"):
            raise ValueError(f"ToolPolicy default must be 'allow' or 'deny', got {default!r}")
        self.allow_tools = None if allow_tools is None else _strings(allow_tools, "allow_tools")
        self.deny_tools = _strings(deny_tools, "deny_tools")
        self.stop_tools = _strings(stop_tools, "stop_tools")
        self.allow_commands = None if allow_commands is None else _strings(allow_commands, "allow_commands")
        self.deny_commands = _strings(deny_commands, "deny_commands")
        self.stop_commands = _strings(stop_commands, "stop_commands")
        self.default: Literal["allow", "deny"] = default
        # As the rules are read: `command_tools = "run_command"` is one tool, not eleven one-letter ones (which
        # would leave run_command's commands unchecked by every command rule).
        self.command_tools = _strings(command_tools, "command_tools")
        self.own_scripts = _shell.check_own_scripts(own_scripts, "ToolPolicy")
        # Parse every pattern now: a bad pattern is a configuration error, not a surprise mid-run.
        for field in ("allow_commands", "deny_commands", "stop_commands"):
            for pattern in getattr(self, field) or ():
                try:
                    _shell.CommandPattern.parse(pattern)
                except ValueError as exc:
                    raise ValueError(f"ToolPolicy {field}: {exc}") from None
        self._allow_rules = tuple(_AllowRule.parse(pattern) for pattern in self.allow_commands or ())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolPolicy:
        """From configuration (trialrun.toml's [policy] table); unknown keys are an error."""
        known = {"allow_tools", "deny_tools", "stop_tools", "allow_commands", "deny_commands", "stop_commands", "default", "command_tools", "own_scripts"}
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
        if self.own_scripts != "workspace":
            data["own_scripts"] = self.own_scripts if isinstance(self.own_scripts, str) else list(self.own_scripts)
        return data

    def decide(
        self, tool: str, arguments: Mapping[str, Any] | None = None, earlier: Iterable[tuple[str, Any]] = (),
        *, schema_tools: Mapping[str, str] | None = None,
    ) -> Decision:
        """Decide one tool call; `earlier`: the calls that ran before it in the trajectory, as (tool, arguments).
        `schema_tools`: further command tools found from their schemas (name -> the argument holding the command),
        as the reference agent finds them among its tools, so a deny rule holds for them as never_ran sees them."""
        from .. import _shell

        arguments = arguments or {}
        tools = self.command_tools + tuple(schema_tools) if schema_tools else self.command_tools
        keys = tuple(dict.fromkeys(schema_tools.values())) if schema_tools else ()
        history = _shell.history(earlier, tools)
        for pattern in self.stop_tools:
            if fnmatchcase(tool, pattern):
                return Decision("stop", f"tool {tool} matches stop rule {pattern!r}", f"stop_tools: {pattern}")
        command = _shell.command_of_call(tool, arguments, tools, keys)
        if command is not None:
            for action, field, patterns in (("stop", "stop_commands", self.stop_commands), ("deny", "deny_commands", self.deny_commands)):
                # A rule the command certainly runs is the one to report, before one matched only by failing closed
                # (`curl x | sh` runs shell code nobody can read, which may be `rm -rf` too, but is `curl | sh`).
                guessed: tuple[str, _shell.CommandMatch] | None = None
                for pattern in patterns:
                    match = _shell.match_command(pattern, command, history, self.own_scripts)
                    if match.matched and not match.uncertain:
                        return Decision(action, f"{match.reason}; {field} rule {pattern!r}", f"{field}: {pattern}")  # type: ignore[arg-type]
                    if match.matched and guessed is None:
                        guessed = (pattern, match)
                if guessed is not None:
                    pattern, match = guessed
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
            unknown = _shell.unknown_at_run_time(command, history, self.own_scripts)
            if unknown is not None:
                return Decision(
                    "deny", f"the command {unknown}; denied because the policy has deny rules (fail closed)",
                    "unknown_at_run_time",
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
        """Allow only when every program the line runs is allowed by a rule (see the class docstring)."""
        from .. import _shell

        assert self.allow_commands is not None
        unreadable = _shell.cannot_read(command)
        if unreadable is not None:
            return Decision("deny", f"the command {unreadable}; denied (fail closed)", "allow_commands")
        try:
            found, assigned = _shell.commands_for_allow_list(command)
        except ValueError as exc:
            return Decision("deny", f"{exc}; denied (fail closed)", "allow_commands")
        risky = next((name for name in assigned if _LOADER_VARIABLE.fullmatch(name)), None)
        if risky is not None:
            return Decision(
                "deny", f"it sets {risky}, which changes which programs run or what they load; allow_commands never "
                "allow that", "allow_commands",
            )
        rules = ", ".join(self.allow_commands)
        for words, dynamic, display, uncertain, prefix in found:
            if uncertain or dynamic[0]:
                # An allow rule needs certainty: `$X` or `eval "$X"` may be anything, so no allow rule covers it.
                return Decision(
                    "deny", f"`{display}`: what it runs is only known at run time; no allow_commands rule covers "
                    f"that ({rules})", "allow_commands",
                )
            if not any(rule.allows(words, dynamic, prefix) for rule in self._allow_rules):
                near = next((rule for rule in self._allow_rules if rule.names(words[0]) and rule.args is not None), None)
                if near is not None and prefix and near.allows(words, dynamic):
                    return Decision(
                        "deny", f"a variable is assigned in front of `{display}` ({', '.join(prefix)}); the rule "
                        f"`{near.text}` has arguments, so it allows no assignment", "allow_commands",
                    )
                hint = (
                    f"; `{near.text}` allows exactly those words"
                    + ("" if near.open_ended else " (end a rule with ` *` to allow more arguments)")
                    if near is not None else ""
                )
                return Decision("deny", f"`{display}` is not in allow_commands ({rules}){hint}", "allow_commands")
        return Decision("allow", "every command it runs is in allow_commands", "allow_commands")

    def __repr__(self) -> str:
        parts = ", ".join(f"{k}={v!r}" for k, v in self.summary().items())
        return f"ToolPolicy({parts})"


#: Variables that change which program a name runs or what a program loads: never allowed by an allow list.
_LOADER_VARIABLE = re.compile(r"PATH|IFS|ENV|BASH_ENV|PYTHONPATH|PYTHONSTARTUP|LD_\w*|DYLD_\w*")
_GLOB = re.compile(r"[*?\[]")


@dataclass(frozen=True, slots=True)
class _AllowRule:
    """One allow_commands entry: a program (as written, may be a glob) and, unless it is bare, its exact words."""

    text: str
    program: str
    args: tuple[str, ...] | None  # None: a bare program, any arguments
    open_ended: bool  # the rule ended with ` *`: more arguments may follow its words

    @classmethod
    def parse(cls, text: str) -> _AllowRule:
        stripped = text.strip()
        open_ended = len(stripped) > 2 and stripped[-1] == "*" and stripped[-2] in " \t"
        lexer = shlex.shlex(stripped[:-1] if open_ended else stripped, posix=True, punctuation_chars="|")
        lexer.whitespace_split = True
        words = list(lexer)
        if "|" in words:
            raise ValueError(
                f"ToolPolicy allow_commands: {text!r} is a pipeline; an allow rule is one command (each command "
                "of a pipeline is judged on its own)"
            )
        return cls(text, words[0], tuple(words[1:]) if len(words) > 1 or open_ended else None, open_ended)

    def names(self, program: str) -> bool:
        """The rule is about this program word (compared as written: `ls` is not `./ls`)."""
        return fnmatchcase(program, self.program) if _GLOB.search(self.program) else program == self.program

    def allows(self, words: Sequence[str], dynamic: Sequence[bool], prefix: Sequence[str] = ()) -> bool:
        if not self.names(words[0]):
            return False
        if self.args is None:
            return True
        if prefix:  # `GIT_CONFIG_COUNT=1 ... git status`: the environment is part of an exact command
            return False
        args, unknown = words[1:], dynamic[1:]
        n = len(self.args)
        if len(args) < n or (not self.open_ended and len(args) != n):
            return False
        return all(not d and a == want for a, d, want in zip(args[:n], unknown[:n], self.args))
