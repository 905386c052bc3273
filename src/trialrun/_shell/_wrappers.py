"""Programs that run another command or shell code given in their arguments (`sudo`, `env`, `bash -c`,
`find -exec`, `ssh`...): each has a handler saying what it hands over to."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence

from ._actions import Action, Opaque, ReadsStdin, RunArgv, RunEachItem, RunScript, RunText
from ._code import language_of
from ._interpreters import STDIN_PATHS, interpreter_handler
from ._options import GENERIC, SPECS, Opts, getopt, normalise_args, option_table
from ._syntax import ASSIGN_RE

# --------------------------------------------------------------------------------------------------------------
# Wrappers: programs that run another command (or shell code) given in their arguments. A handler gets the words
# after the wrapper's name and returns what it hands over to (`_actions`).
# --------------------------------------------------------------------------------------------------------------

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "rbash", "lksh", "fish"})
_SHELL_CODE_RUNNERS = frozenset({"eval", "source", "."})  # run shell code they are fed, like a shell does
CODE_RUNNERS = SHELLS | _SHELL_CODE_RUNNERS

_Handler = Callable[[Sequence[str]], list[Action]]


def _argv_after(words: Sequence[str], j: int) -> list[Action]:
    n = len(words)
    while j < n and ASSIGN_RE.match(words[j]):  # `sudo FOO=1 rm`, `env A=1 B=2 rm`
        j += 1
    return [RunArgv(j, n)] if j < n else []


def _simple_wrapper(opts: Opts, skip_operands: int = 0, stop_on: str = "") -> _Handler:
    def handle(words: Sequence[str]) -> list[Action]:
        j, seen = getopt(words, 0, opts)
        if stop_on and any(k in seen for k in stop_on):
            return []
        return _argv_after(words, j + skip_operands) if j + skip_operands < len(words) else []

    return handle


def shell_handler(words: Sequence[str]) -> list[Action]:
    j, seen = getopt(words, 0, _SHELL_OPTS)
    if "c" in seen:  # `bash -c CODE NAME ARGS...`: ARGS are the code's `$1`, `$@`...
        return [RunText(words[j], j + 2)] if j < len(words) else []
    if "s" in seen:  # `sh -s ARGS...`: reads its script from standard input, ARGS are its `$@`
        return [ReadsStdin(j)]
    if j >= len(words) or words[j] in STDIN_PATHS:
        return [ReadsStdin(j + 1)]
    return [RunScript(j)]  # runs a script file


def _source_handler(words: Sequence[str]) -> list[Action]:
    """`source FILE` / `. FILE`: runs the file's code in this shell; `/dev/stdin` is the shell's input."""
    start = 1 if words and words[0] == "--" else 0
    if start >= len(words):
        return []
    return [ReadsStdin(None)] if words[start] in STDIN_PATHS else [RunScript(start)]


def _eval_handler(words: Sequence[str]) -> list[Action]:
    start = 1 if words and words[0] == "--" else 0
    return [RunText(" ".join(words[start:]))] if len(words) > start else []


def _trap_handler(words: Sequence[str]) -> list[Action]:
    if not words or words[0].startswith("-"):
        return []
    return [RunText(words[0])]


def _env_handler(words: Sequence[str]) -> list[Action]:
    j, seen = getopt(words, 0, _ENV_OPTS)
    split = seen.get("S")
    if split:
        rest = " ".join(shlex.quote(w) for w in words[j:])
        return [RunText(split + (" " + rest if rest else ""))]
    return _argv_after(words, j)


def _su_handler(words: Sequence[str]) -> list[Action]:
    parsed = normalise_args("su", tuple(words))
    code = [v for k, v in parsed.values if k == "c"]
    if code:
        return [RunText(code[0])]
    if "u" in parsed.flags and "--" in words:  # runuser -u USER -- COMMAND...
        return _argv_after(words, list(words).index("--") + 1)
    return []


def _find_handler(words: Sequence[str]) -> list[Action]:
    actions: list[Action] = []
    i, n = 0, len(words)
    while i < n:
        if words[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            end = i + 1
            while end < n and words[end] not in (";", "+"):
                end += 1
            actions.append(RunEachItem(i + 1, end, "{}"))  # `{}` is each file found: only known at run time
            i = end
        i += 1
    return actions


def _watch_handler(words: Sequence[str]) -> list[Action]:
    j, seen = getopt(words, 0, _WATCH_OPTS)
    if j >= len(words):
        return []
    if "x" in seen:
        return [RunArgv(j, len(words))]
    return [RunText(" ".join(words[j:]))]


def _ssh_handler(words: Sequence[str]) -> list[Action]:
    j, _ = getopt(words, 0, _SSH_OPTS)
    return [RunText(" ".join(words[j + 1:]))] if j + 1 < len(words) else []


_SHELL_OPTS = option_table(values="oO", plus=True, longs={"login": "l"}, long_values=("rcfile", "init-file"))
_ENV_OPTS = option_table(
    values="uCSP",
    longs={"unset": "u", "chdir": "C", "split-string": "S", "ignore-environment": "i", "null": "0", "debug": "v"},
    dash_is_option=True,
)
_WATCH_OPTS = option_table(values="nq", longs={"interval": "n", "exec": "x", "differences": None, "no-title": "t"})
_SSH_OPTS = option_table(values="BbcDEeFIiJLlmOopQRSWw")
SPECS["su"] = option_table(
    values="cgGswu",
    longs={"command": "c", "session-command": "c", "shell": "s", "group": "g", "supp-group": "G", "login": "l",
           "preserve-environment": "m", "whitelist-environment": "w", "pty": "P", "user": "u"},
)

WRAPPERS: dict[str, _Handler] = {
    "sudo": _simple_wrapper(
        option_table(
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
    "doas": _simple_wrapper(option_table(values="uC")),
    "pkexec": _simple_wrapper(option_table(long_values=("user",))),
    "env": _env_handler,
    "nohup": _simple_wrapper(GENERIC),
    "timeout": _simple_wrapper(
        option_table(values="sk", longs={"signal": "s", "kill-after": "k", "verbose": "v", "preserve-status": None,
                                  "foreground": None}),
        skip_operands=1,
    ),
    "nice": _simple_wrapper(option_table(values="n", longs={"adjustment": "n"})),
    "ionice": _simple_wrapper(option_table(values="cnpPu", longs={"class": "c", "classdata": "n"}), stop_on="pPu"),
    "stdbuf": _simple_wrapper(option_table(values="ioe", longs={"input": "i", "output": "o", "error": "e"})),
    "time": _simple_wrapper(
        option_table(values="fo", longs={"format": "f", "output": "o", "append": "a", "verbose": "v", "portability": "p"})
    ),
    "command": _simple_wrapper(GENERIC, stop_on="vV"),
    "builtin": _simple_wrapper(GENERIC),
    "exec": _simple_wrapper(option_table(values="a")),
    "setsid": _simple_wrapper(option_table(longs={"ctty": "c", "fork": "f", "wait": "w"})),
    "unbuffer": _simple_wrapper(GENERIC),
    "chroot": _simple_wrapper(option_table(long_values=("userspec", "groups")), skip_operands=1),
    "busybox": _simple_wrapper(GENERIC),
    "toybox": _simple_wrapper(GENERIC),
    "eval": _eval_handler,
    "trap": _trap_handler,
    "su": _su_handler,
    "runuser": _su_handler,
    "find": _find_handler,
    "watch": _watch_handler,
    "ssh": _ssh_handler,
}
for _name in SHELLS:
    WRAPPERS[_name] = shell_handler
WRAPPERS["source"] = WRAPPERS["."] = _source_handler


# --------------------------------------------------------------------------------------------------------------
# More wrappers (issue 11): locks, tracers, terminals, schedulers, namespaces. Each hands over to a command.
# --------------------------------------------------------------------------------------------------------------


def _flock_handler(words: Sequence[str]) -> list[Action]:
    """`flock [opts] FILE CMD...`, `flock [opts] FILE -c CODE`, `flock FD` (no command)."""
    opts = option_table(values="wEc", longs={"timeout": "w", "wait": "w", "conflict-exit-code": "E", "command": "c",
                                       "shared": "s", "exclusive": "x", "unlock": "u", "nonblock": "n",
                                       "close": "o", "no-fork": "F", "verbose": None})
    j, seen = getopt(words, 0, opts)
    if (code := seen.get("c")) is not None:
        return [RunText(code)]
    if j + 1 >= len(words):
        return []
    k, seen = getopt(words, j + 1, opts)
    if (code := seen.get("c")) is not None:
        return [RunText(code)]
    return _argv_after(words, k)


def _script_handler(words: Sequence[str]) -> list[Action]:
    parsed = normalise_args("script", tuple(words))
    code = [v for key, v in parsed.values if key == "c"]
    return [RunText(code[0])] if code else []


def _parallel_handler(words: Sequence[str]) -> list[Action]:
    """GNU parallel: `parallel [opts] CMD ::: ARGS` runs CMD (through a shell) per argument; without CMD, each
    input line is a command."""
    j, _ = getopt(words, 0, _PARALLEL_OPTS)
    end = next((k for k in range(j, len(words)) if words[k] in (":::", "::::", ":::+", "::::+")), len(words))
    if j >= end:
        return [ReadsStdin(None)]
    return [RunText(" ".join(words[j:end]).replace("{}", '"$__ITEM__"'))]


def _tmux_handler(words: Sequence[str]) -> list[Action]:
    j, _ = getopt(words, 0, option_table(values="LSfcT"))
    if j >= len(words):
        return []
    sub, rest = words[j], j + 1
    if sub in ("new", "new-session", "new-window", "neww", "split-window", "splitw", "respawn-pane", "respawnp",
               "respawn-window", "respawnw", "display-popup", "popup", "run-shell", "run", "if-shell", "if"):
        k, _ = getopt(words, rest, option_table(values="stcnxyFelpwT"))
        if k >= len(words):
            return []
        return [RunText(" ".join(words[k:]))] if k + 1 == len(words) else [RunArgv(k, len(words))]
    if sub in ("send-keys", "send"):
        k, _ = getopt(words, rest, option_table(values="tNc"))
        keys = ["\n" if w in ("Enter", "C-m", "KPEnter") else w for w in words[k:]]
        return [RunText(" ".join(keys))]
    return []


def _screen_handler(words: Sequence[str]) -> list[Action]:
    j, seen = getopt(words, 0, option_table(values="ScephTtsX", longs={"Logfile": None}))
    if "X" in seen:  # `screen -X stuff 'text'` types text into the session's shell
        k = j
        command = [seen["X"] or "", *words[k:]]
        if command[0] == "stuff":
            return [RunText(" ".join(command[1:]))]
        if command[0] == "exec" or command[0] == "screen":
            return [RunText(" ".join(command[1:]))]
        return []
    return _argv_after(words, j) if j < len(words) else []


def _at_handler(words: Sequence[str]) -> list[Action]:
    """`at TIME` / `batch` read the commands to run from standard input, or from `-f FILE`."""
    parsed = normalise_args("at", tuple(words))
    files = [v for key, v in parsed.values if key == "f"]
    if files:
        return [RunScript(files[0])]
    if parsed.flags & {"l", "r", "d", "c"}:  # list, remove, cat: nothing runs
        return []
    return [ReadsStdin(None)]


def _skip_operand_then_argv(opts: Opts, stop_on: str = "") -> _Handler:
    return _simple_wrapper(opts, skip_operands=1, stop_on=stop_on)




GIT_CODE_KEYS = re.compile(
    r"core\.(?:pager|sshcommand|editor|fsmonitor|askpass|gitproxy)|diff\.external|diff\.[^.]+\.(?:textconv|command)"
    r"|filter\.[^.]+\.(?:clean|smudge|process)|credential\.(?:[^.]+\.)?helper|gpg\.(?:[^.]+\.)?program"
    r"|sequence\.editor|merge\.[^.]+\.driver|(?:merge|diff)tool\.[^.]+\.cmd|pager\.[^.]+"
    r"|uploadpack\.packobjectshook|ssh\.variant|http\.proxy|remote\.[^.]+\.(?:receivepack|uploadpack)"
)


def _git_handler(words: Sequence[str]) -> list[Action]:
    """`git -c KEY=VALUE ...`: aliases starting with `!`, pagers, editors, ssh commands and filters are shell code;
    `core.hooksPath`, `include.path` and `--exec-path` run programs from places not shown here."""
    actions: list[Action] = []
    configs: list[tuple[str, str]] = []
    i, n = 0, len(words)
    while i < n:
        w = words[i]
        if w == "-c" and i + 1 < n:
            key, _, value = words[i + 1].partition("=")
            configs.append((key.lower(), value))
            i += 2
            continue
        if w.startswith("--config-env"):
            actions.append(Opaque("`--config-env` sets git configuration from the environment"))
        elif w.startswith("--exec-path="):
            actions.append(Opaque("`--exec-path` runs git's commands from another folder"))
        if w in ("-C", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix"):
            i += 2
            continue
        if not w.startswith("-"):
            break
        i += 1
    sub = words[i] if i < n else ""
    rest = " ".join(shlex.quote(w) for w in words[i + 1:])
    for key, value in configs:
        if key.startswith("alias.") and key[6:] == sub.lower():
            if value.startswith("!"):
                actions.append(RunText(value[1:] + (" " + rest if rest else "")))
            elif value:
                actions.append(RunText("git " + value + (" " + rest if rest else "")))
        elif GIT_CODE_KEYS.fullmatch(key) and value:
            actions.append(RunText(value.removeprefix("!")))
        elif key in ("core.hookspath", "include.path") or key.startswith("includeif."):
            actions.append(Opaque(f"`{key}` makes git run programs from files not shown here"))
    return actions


def _tar_handler(words: Sequence[str]) -> list[Action]:
    """tar's `--checkpoint-action=exec=CMD`, `--to-command=CMD`, `-I CMD` (`--use-compress-program`) and
    `-F`/`--info-script`/`--new-volume-script`/`--rsh-command` run commands through a shell. Its options are read
    with its table (`--to-com=CMD`, `-cI CMD`), and a first word without a dash as its old-style letters (`tar cIf CMD
    a.tar`: each letter that takes a value takes the next word)."""
    parsed = normalise_args("tar", tuple(_tar_old_style(words)))
    actions: list[Action] = []
    for key, value in sorted(parsed.values):
        if key == "--checkpoint-action" and value.startswith("exec="):
            actions.append(RunText(value[5:]))
        elif key in _TAR_COMMANDS and value:
            actions.append(RunText(value))
    return actions


#: tar's options whose value is a command it runs
_TAR_COMMANDS = frozenset({"--to-command", "I", "F", "--rsh-command", "--rmt-command"})


def _tar_old_style(words: Sequence[str]) -> list[str]:
    """`tar cIf CMD a.tar` as `tar -c -I CMD -f a.tar ...`: GNU tar's traditional first word."""
    if not words or words[0].startswith("-"):
        return list(words)
    takes = SPECS["tar"].values
    out: list[str] = []
    rest = list(words[1:])
    for letter in words[0]:
        out.append("-" + letter)
        if letter in takes and rest:
            out.append(rest.pop(0))
    return out + rest


def _rsync_handler(words: Sequence[str]) -> list[Action]:
    """rsync to or from a host runs its `-e`/`--rsh` command (`-e 'sh -c "rm -rf x"'` deletes x here, tried), and its
    `--rsync-path` there, as ssh runs a remote command (its handler reads that too)."""
    parsed = normalise_args("rsync", tuple(words))
    if not any(_REMOTE.match(operand) for operand in parsed.operands):
        return []
    return [RunText(value) for key, value in sorted(parsed.values) if key in ("e", "--rsync-path") and value]


_REMOTE = re.compile(r"[^/]*:|rsync://")


def _xargs_handler(words: Sequence[str]) -> list[Action]:
    j, seen = getopt(words, 0, _XARGS_OPTS)
    while j < len(words) and ASSIGN_RE.match(words[j]):
        j += 1
    if j >= len(words):
        return []
    repl = seen.get("I") or seen.get("i") or ("{}" if "i" in seen else None)
    return [RunEachItem(j, len(words), repl)]


_XARGS_OPTS = option_table(
    values="adEILnPsJRS",
    optional="eil",
    longs={"arg-file": "a", "delimiter": "d", "eof": "e", "replace": "i", "max-lines": "l",
           "max-args": "n", "max-procs": "P", "max-chars": "s", "null": "0", "no-run-if-empty": "r",
           "verbose": "t", "interactive": "p", "exit": "x", "open-tty": "o", "show-limits": None},
    long_values=("process-slot-var",),
)
_PARALLEL_OPTS = option_table(
    values="jSaIdnNCXEL",
    longs={"jobs": "j", "sshlogin": "S", "arg-file": "a", "delimiter": "d", "max-args": "n", "colsep": "C",
           "keep-order": "k", "quote": "q", "verbose": "v", "null": "0", "halt": None, "joblog": None,
           "results": None, "tag": None, "eta": None, "progress": None, "bar": None, "dry-run": None,
           "pipe": None, "line-buffer": None, "ungroup": "u"},
    long_values=("halt", "joblog", "results", "timeout", "retries", "delay", "tmpdir", "workdir", "shuf"),
)
SPECS["script"] = option_table(
    values="cTIOBEmo", optional="t",
    longs={"command": "c", "append": "a", "quiet": "q", "flush": "f", "return": "e", "timing": "t",
           "log-io": "B", "log-in": "I", "log-out": "O", "echo": "E", "logging-format": "m", "output-limit": "o",
           "force": None},
)
SPECS["at"] = option_table(values="fqtb", longs={})

WRAPPERS.update({
    "flock": _flock_handler,
    "strace": _simple_wrapper(option_table(values="oepsuaEPIXbS", longs={"output": "o", "follow-forks": "f"})),
    "ltrace": _simple_wrapper(option_table(values="oepsuanXFbSA", longs={"output": "o"})),
    "script": _script_handler,
    "parallel": _parallel_handler,
    "tmux": _tmux_handler,
    "screen": _screen_handler,
    "at": _at_handler,
    "batch": _at_handler,
    "systemd-run": _simple_wrapper(option_table(
        values="puEMH",
        longs={"property": "p", "unit": "u", "setenv": "E", "machine": "M", "host": "H", "user": None,
               "scope": None, "pty": "t", "pipe": "P", "quiet": "q", "wait": None, "collect": "G",
               "same-dir": "d", "no-block": None, "no-ask-password": None, "remain-after-exit": "r",
               "send-sighup": None},
        long_values=("description", "slice", "uid", "gid", "nice", "working-directory", "on-active",
                     "on-boot", "on-startup", "on-unit-active", "on-unit-inactive", "on-calendar",
                     "timer-property", "path-property", "socket-property", "service-type"),
    ), stop_on="S"),
    "unshare": _simple_wrapper(option_table(values="SGRwl", longs={"map-root-user": "r", "fork": "f", "mount": "m",
                                                            "uts": "u", "ipc": "i", "net": "n", "pid": "p",
                                                            "user": "U", "cgroup": "C", "time": "T",
                                                            "root": "R", "wd": "w", "setuid": "S",
                                                            "setgid": "G"})),
    "taskset": _simple_wrapper(option_table(longs={"all-tasks": "a", "cpu-list": "c", "pid": "p"}), skip_operands=1,
                               stop_on="p"),
    "nsenter": _simple_wrapper(option_table(values="tSGrw", longs={"target": "t", "setuid": "S", "setgid": "G",
                                                            "mount": "m", "uts": "u", "ipc": "i", "net": "n",
                                                            "pid": "p", "user": "U", "cgroup": "C",
                                                            "time": "T", "all": "a", "root": "r", "wd": "w",
                                                            "preserve-credentials": None, "no-fork": "F"})),
    "chrt": _simple_wrapper(option_table(longs={"fifo": "f", "rr": "r", "other": "o", "batch": "b", "idle": "i",
                                         "deadline": "d", "all-tasks": "a", "reset-on-fork": "R"},
                                  long_values=("sched-runtime", "sched-deadline", "sched-period")),
                            skip_operands=1, stop_on="pm"),
    "fakeroot": _simple_wrapper(option_table(values="lsi", long_values=("lib", "faked"))),
    "setpriv": _simple_wrapper(option_table(long_values=("reuid", "regid", "groups", "inh-caps", "ambient-caps",
                                                  "bounding-set", "securebits", "selinux-label",
                                                  "apparmor-profile", "pdeathsig", "rlimit"))),
    "firejail": _simple_wrapper(GENERIC),
    "eatmydata": _simple_wrapper(GENERIC),
    "xvfb-run": _simple_wrapper(option_table(values="nsfe", longs={"auto-servernum": "a"})),
    "dbus-run-session": _simple_wrapper(option_table(long_values=("config-file", "dbus-daemon"))),
    "runcon": _simple_wrapper(option_table(values="utrl")),
    "prlimit": _simple_wrapper(option_table(values="p", longs={"pid": "p"})),
    "catchsegv": _simple_wrapper(GENERIC),
    "faketime": _simple_wrapper(GENERIC, skip_operands=1),
    "torsocks": _simple_wrapper(GENERIC),
    "proxychains": _simple_wrapper(option_table(values="f")),
    "proxychains4": _simple_wrapper(option_table(values="f")),
    "git": _git_handler,
    "tar": _tar_handler,
    "rsync": _rsync_handler,
    "xargs": _xargs_handler,
    "sg": _su_handler,
})


def handler_for(program: str) -> _Handler | None:
    """What a program hands over to: a wrapper's handler, or an interpreter's (`python3.12`, `gawk`)."""
    handler = WRAPPERS.get(program)
    if handler is not None:
        return handler
    lang = language_of(program)
    return interpreter_handler(lang) if lang is not None else None
