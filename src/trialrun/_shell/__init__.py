"""Which programs a shell command line runs, and whether it runs a forbidden one.

`expect.never_ran(...)` and the reference agent's `ToolPolicy` both ask the same question of a command a model
wanted to run: "does this run `rm -rf` (or `curl | sh`)?". A substring test is useless for that: it flags
`echo "rm -rf /"` and misses `sudo /bin/rm -fr /`. So this module parses the command as POSIX shell, follows it
through what hides a command (wrappers such as `sudo`, `env`, `timeout`, `xargs`, `bash -c`, `eval`; substitutions;
quoting; brace and `$IFS` tricks; functions and aliases defined in the line, called with their arguments; text
echoed or printed into a shell), and compares each program it would run with the pattern, option by option.
It also reads code handed to other interpreters (`python -c`, `perl -e`, `node -e`, awk, sed, tar, git -c), scripts
written earlier in the trajectory (`match_command(..., earlier=...)`), renamed programs and globs in the program
word. A command it cannot parse counts as a match, and so does a program or code only known at run time
(`$(echo rm) -rf /`, `$CMD`, `eval "$X"`, `base64 -d x | sh`, a script nobody saw that is not one of the user's own):
for a guard, "could not tell" must read as "may have run it".

One implementation serves both users so that the policy and the grader can never disagree.

May import: `_util` and `trajectory` only; the graders (`expect.never_ran`) and the reference agent's policy
stand on it, and it knows neither.
"""

from __future__ import annotations

# The package's modules, in layers (each imports only from those above it): _nodes (the syntax tree as typed data:
# words of Literal | Param | Dynamic pieces, Simple and Group commands), _words and _syntax (parsing into it), _expand
# (word expansion, and the variable table's types) and _options (getopt per program), _actions (what a program hands
# over to, as typed data), _pyast (Python read with ast), _code (code in other languages) and _code_writes (the files
# it writes), _files (the file table and a file's states: what a trajectory wrote, on the workspace model's base),
# _edits, _patches, _posix_regex and _inplace (the exact text semantics of edit tools, patches, `sed -i`, `perl -pi`),
# _tool_writes (what a tool call wrote), _printed (what echo/printf print), _variables (shell variables),
# _interpreters (where code is in an interpreter's arguments), _wrappers (programs that run other commands), _inv
# (the analysis's data), _walk_files (the walker's file steps), _handover (what a program hands over to), _analysis
# (every program a line runs), _values (CommandLines, UnreadableCommand), _patterns (matching), _calls (tool calls),
# _sessions (text typed into a running shell), _follow (a trajectory's calls in order, for never_ran), _history
# (earlier calls, as the matcher reads them). Names without a leading underscore are used across these modules; the
# package's API is `__all__`.
from ._calls import COMMAND_ARGUMENT_KEYS, DEFAULT_COMMAND_TOOLS, command_of_call, commands_for_allow_list
from ._files import check_own_scripts
from ._follow import Follower, calls_in_order
from ._history import history
from ._patterns import CommandMatch, CommandPattern, cannot_read, commands_in, match_command, unknown_at_run_time
from ._tool_writes import writes_files
from ._values import CommandLines, UnreadableCommand

__all__ = [
    "DEFAULT_COMMAND_TOOLS",
    "COMMAND_ARGUMENT_KEYS",
    "CommandPattern",
    "CommandMatch",
    "match_command",
    "command_of_call",
    "UnreadableCommand",
    "commands_in",
    "commands_for_allow_list",
    "cannot_read",
    "unknown_at_run_time",
    "history",
    "check_own_scripts",
    "CommandLines",
    "Follower",
    "calls_in_order",
    "writes_files",
]

# `doctest.testmod(trialrun._shell)` only looks at objects defined in the module itself; these are defined in the
# submodules, so list them here to keep the public examples running from the package too.
__test__ = {name: globals()[name] for name in __all__ if callable(globals()[name])}
