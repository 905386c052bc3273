"""Programs that run another command or shell code given in their arguments (`sudo`, `env`, `bash -c`,
`find -exec`, `ssh`...): each has a handler saying what it hands over to."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from ._options import _GENERIC, _SPECS, _getopt, _normalise, _Opts, _opts
from ._syntax import _ASSIGN_RE

# --------------------------------------------------------------------------------------------------------------
# Wrappers: programs that run another command (or shell code) given in their arguments.
# A handler gets the words after the wrapper's name and returns actions:
#   ("argv", start, end)  the words[start:end] are a command line (argv) it runs
#   ("text", code[, k])   it runs this text as shell code (in a new shell whose `$@` are words[k:], given k)
#   ("stdin", k)          it is a shell reading its script from standard input (`$@`: words[k:]; None: this shell's)
#   ("script", k)         it runs the script file words[k]
# --------------------------------------------------------------------------------------------------------------

_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "rbash", "lksh", "fish"})
_SHELL_CODE_RUNNERS = frozenset({"eval", "source", "."})  # run shell code they are fed, like a shell does
_CODE_RUNNERS = _SHELLS | _SHELL_CODE_RUNNERS

_Action = tuple
_Handler = Any  # Callable[[Sequence[str]], list[_Action]]


def _argv_after(words: Sequence[str], j: int) -> list[_Action]:
    n = len(words)
    while j < n and _ASSIGN_RE.match(words[j]):  # `sudo FOO=1 rm`, `env A=1 B=2 rm`
        j += 1
    return [("argv", j, n)] if j < n else []


def _simple_wrapper(opts: _Opts, skip_operands: int = 0, stop_on: str = "") -> _Handler:
    def handle(words: Sequence[str]) -> list[_Action]:
        j, seen = _getopt(words, 0, opts)
        if stop_on and any(k in seen for k in stop_on):
            return []
        return _argv_after(words, j + skip_operands) if j + skip_operands < len(words) else []

    return handle


# Script paths that are the shell's own standard input (`curl x | bash /dev/stdin`).
_STDIN_PATHS = frozenset({"-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})


def _shell_handler(words: Sequence[str]) -> list[_Action]:
    j, seen = _getopt(words, 0, _SHELL_OPTS)
    if "c" in seen:  # `bash -c CODE NAME ARGS...`: ARGS are the code's `$1`, `$@`...
        return [("text", words[j], j + 2)] if j < len(words) else []
    if "s" in seen:  # `sh -s ARGS...`: reads its script from standard input, ARGS are its `$@`
        return [("stdin", j)]
    if j >= len(words) or words[j] in _STDIN_PATHS:
        return [("stdin", j + 1)]
    return [("script", j)]  # runs a script file


def _source_handler(words: Sequence[str]) -> list[_Action]:
    """`source FILE` / `. FILE`: runs the file's code in this shell; `/dev/stdin` is the shell's input."""
    start = 1 if words and words[0] == "--" else 0
    if start >= len(words):
        return []
    return [("stdin", None)] if words[start] in _STDIN_PATHS else [("script", start)]


def _eval_handler(words: Sequence[str]) -> list[_Action]:
    start = 1 if words and words[0] == "--" else 0
    return [("text", " ".join(words[start:]))] if len(words) > start else []


def _trap_handler(words: Sequence[str]) -> list[_Action]:
    if not words or words[0].startswith("-"):
        return []
    return [("text", words[0])]


def _env_handler(words: Sequence[str]) -> list[_Action]:
    j, seen = _getopt(words, 0, _ENV_OPTS)
    split = seen.get("S")
    if split:
        rest = " ".join(shlex.quote(w) for w in words[j:])
        return [("text", split + (" " + rest if rest else ""))]
    return _argv_after(words, j)


def _su_handler(words: Sequence[str]) -> list[_Action]:
    parsed = _normalise("su", tuple(words))
    code = [v for k, v in parsed.values if k == "c"]
    if code:
        return [("text", code[0])]
    if "u" in parsed.flags and "--" in words:  # runuser -u USER -- COMMAND...
        return _argv_after(words, list(words).index("--") + 1)
    return []


def _find_handler(words: Sequence[str]) -> list[_Action]:
    actions: list[_Action] = []
    i, n = 0, len(words)
    while i < n:
        if words[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            end = i + 1
            while end < n and words[end] not in (";", "+"):
                end += 1
            actions.append(("argv", i + 1, end))
            i = end
        i += 1
    return actions


def _watch_handler(words: Sequence[str]) -> list[_Action]:
    j, seen = _getopt(words, 0, _WATCH_OPTS)
    if j >= len(words):
        return []
    if "x" in seen:
        return [("argv", j, len(words))]
    return [("text", " ".join(words[j:]))]


def _ssh_handler(words: Sequence[str]) -> list[_Action]:
    j, _ = _getopt(words, 0, _SSH_OPTS)
    return [("text", " ".join(words[j + 1:]))] if j + 1 < len(words) else []


_SHELL_OPTS = _opts(values="oO", plus=True, longs={"login": "l"}, long_values=("rcfile", "init-file"))
_ENV_OPTS = _opts(
    values="uCSP",
    longs={"unset": "u", "chdir": "C", "split-string": "S", "ignore-environment": "i", "null": "0", "debug": "v"},
    dash_is_option=True,
)
_WATCH_OPTS = _opts(values="nq", longs={"interval": "n", "exec": "x", "differences": None, "no-title": "t"})
_SSH_OPTS = _opts(values="BbcDEeFIiJLlmOopQRSWw")
_SPECS["su"] = _opts(
    values="cgGswu",
    longs={"command": "c", "session-command": "c", "shell": "s", "group": "g", "supp-group": "G", "login": "l",
           "preserve-environment": "m", "whitelist-environment": "w", "pty": "P", "user": "u"},
)

_WRAPPERS: dict[str, _Handler] = {
    "sudo": _simple_wrapper(
        _opts(
            values="ugChDprtTUR",
            longs={"user": "u", "group": "g", "host": "h", "close-from": "C", "chdir": "D", "prompt": "p",
                   "role": "r", "type": "t", "command-timeout": "T", "other-user": "U", "chroot": "R",
                   "login": "i", "shell": "s", "edit": "e", "list": "l", "non-interactive": "n", "stdin": "S",
                   "background": "b", "validate": "v", "version": "V", "reset-timestamp": "k",
                   "remove-timestamp": "K", "askpass": "A", "preserve-groups": "P", "set-home": "H",
                   "preserve-env": None, "help": None},
        ),
        stop_on="elVK",
    ),
    "doas": _simple_wrapper(_opts(values="uC")),
    "pkexec": _simple_wrapper(_opts(long_values=("user",))),
    "env": _env_handler,
    "nohup": _simple_wrapper(_GENERIC),
    "timeout": _simple_wrapper(
        _opts(values="sk", longs={"signal": "s", "kill-after": "k", "verbose": "v", "preserve-status": None,
                                  "foreground": None}),
        skip_operands=1,
    ),
    "nice": _simple_wrapper(_opts(values="n", longs={"adjustment": "n"})),
    "ionice": _simple_wrapper(_opts(values="cnpPu", longs={"class": "c", "classdata": "n"}), stop_on="pPu"),
    "stdbuf": _simple_wrapper(_opts(values="ioe", longs={"input": "i", "output": "o", "error": "e"})),
    "time": _simple_wrapper(
        _opts(values="fo", longs={"format": "f", "output": "o", "append": "a", "verbose": "v", "portability": "p"})
    ),
    "command": _simple_wrapper(_GENERIC, stop_on="vV"),
    "builtin": _simple_wrapper(_GENERIC),
    "exec": _simple_wrapper(_opts(values="a")),
    "setsid": _simple_wrapper(_opts(longs={"ctty": "c", "fork": "f", "wait": "w"})),
    "unbuffer": _simple_wrapper(_GENERIC),
    "chroot": _simple_wrapper(_opts(long_values=("userspec", "groups")), skip_operands=1),
    "busybox": _simple_wrapper(_GENERIC),
    "toybox": _simple_wrapper(_GENERIC),
    "xargs": _simple_wrapper(
        _opts(
            values="adEILnPsJRS",
            optional="eil",
            longs={"arg-file": "a", "delimiter": "d", "eof": "e", "replace": "i", "max-lines": "l",
                   "max-args": "n", "max-procs": "P", "max-chars": "s", "null": "0", "no-run-if-empty": "r",
                   "verbose": "t", "interactive": "p", "exit": "x", "open-tty": "o", "show-limits": None},
            long_values=("process-slot-var",),
        )
    ),
    "eval": _eval_handler,
    "trap": _trap_handler,
    "su": _su_handler,
    "runuser": _su_handler,
    "find": _find_handler,
    "watch": _watch_handler,
    "ssh": _ssh_handler,
}
for _name in _SHELLS:
    _WRAPPERS[_name] = _shell_handler
_WRAPPERS["source"] = _WRAPPERS["."] = _source_handler
