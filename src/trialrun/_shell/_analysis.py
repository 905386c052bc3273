"""Following a parsed command line to every program it would run (an "invocation") and which feeds which,
through wrappers, substitutions, functions, aliases and text printed into a shell."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from . import _files
from ._code import LANGUAGES, analyse_code, language_of, language_of_script
from ._expand import _Dyn, _expand_word
from ._options import _Args, _getopt, _normalise, _opts
from ._printed import _echo_output, _printf_output
from ._syntax import _ASSIGN_RE, _MAX_DEPTH, _Group, _ParseError, _Parser, _Simple, _Word
from ._variables import (
    _CWD, _NAMEREF, _POSITIONAL, _bind_positional, _drop, _Env, _merge_maybe,
    _names_only_known_at_run_time, _reposition, _set, _set_array,
)
from ._wrappers import _CODE_RUNNERS, _GIT_CODE_KEYS, _SHELLS, _WRAPPERS, _shell_handler, handler_for

# --------------------------------------------------------------------------------------------------------------
# Analysis: every program a command line runs (an "invocation"), and which feeds which.
# --------------------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Inv:
    program: str  # basename of the program word (`/usr/bin/rm` -> `rm`)
    args: tuple[str, ...]
    words: Sequence[str]  # the command from its program on
    dyn: Sequence[_Dyn]  # per word: None when known, else what it is sure to end with (see `_expand_word`)
    leaf: bool = True  # not a wrapper that handed over to another command
    stdin_shell: bool = False  # a shell that reads its script from standard input
    # The program's name is only known at run time (`$CMD`, `$(which rm)`, `r$()m`): what it is sure to end
    # with ("" when nothing is known). None when the name is known (also `$DIR/rm`: only the folder is unknown).
    unknown: str | None = None
    opaque: bool = False  # it runs shell code only known at run time (`eval "$X"`, `bash -c "$(cat x)"`)
    guessed: bool = False  # seen only by guessing that a program only known at run time is a shell
    fed: bool = False  # a stdin shell whose input has been accounted for (a pipe, a here-document, `< file`)
    expanded: bool = False  # a call of a function or alias defined in the line, whose body was followed too
    script_args: tuple[tuple[str, _Dyn], ...] | None = None  # a stdin shell's `$@` (`sh -s -rf x`), when given
    glob: bool = False  # the program word is a glob (`/bin/r?`): it runs whatever program the glob expands to
    why: str | None = None  # why what it runs is only known at run time (for `opaque`), in words
    stdin_lang: str | None = None  # an interpreter reading its program from standard input (`python3 -`)
    renamed: str | None = None  # the path it was run by, a copy of or link to `program` (`./x` after `ln -s /bin/rm x`)

    @property
    def dynamic(self) -> bool:
        """The program word is only known at run time (`$CMD`, `$(which rm)`)."""
        return self.unknown is not None

    @property
    def uncertain(self) -> bool:
        """What it runs rests on something only known at run time: a match with it is a fail-closed one."""
        return self.unknown is not None or self.opaque or self.guessed

    @property
    def display(self) -> str:
        """The command from its program on, normalised, for messages (computed only when a message needs it)."""
        return " ".join(_quote(w, d) for w, d in zip(self.words, self.dyn))

    def normalised(self) -> _Args:
        return _normalise(self.program, self.args)


@dataclass(frozen=True, slots=True)
class _Analysis:
    invs: tuple[_Inv, ...]
    feeds: Mapping[int, frozenset[int]]  # invocation index -> indexes it feeds, directly or not
    error: str | None = None  # the command line itself could not be parsed
    nested_errors: tuple[str, ...] = ()  # shell code inside it (`bash -c '...'`) could not be parsed
    uncertain: bool = False  # some invocation is only known at run time (see `_Inv.uncertain`)
    files: tuple = ()  # the files the trajectory wrote, after this line ran (see `_files`)


_SAFE_WORD_RE = re.compile(r"[\w@%+=:,./{}-]+")


def _quote(text: str, dynamic: _Dyn = None) -> str:
    if _SAFE_WORD_RE.fullmatch(text):
        return text
    if dynamic is not None:
        return '"' + text.replace('"', '\\"') + '"'
    return shlex.quote(text)


def _basename(program: str) -> str:
    base = program.rstrip("/").rsplit("/", 1)[-1]
    return base or program


_MAX_CALLS = 256  # calls of functions and aliases followed in one command line before giving up (fail closed)
_MAX_CODE = 1024  # pieces of shell code (`bash -c`, text piped into a shell...) followed in one line, likewise
_SILENT = frozenset({"true", "false", ":"})  # print nothing, so they do not change what a pipe carries
# Uses of positional parameters whose value is not followed (`${@:2}`, `${1:-x}`, `${10}`, `${#1}`, `${!1}`).
_HARD_POSITIONAL_RE = re.compile(r"\$\{[#!]?(?:[@*]|\d)")


def _word_text(word: _Word, env: Mapping[str, Any]) -> tuple[str, bool]:
    """A word expanded as one string (a here-document's text), and whether all of it is known."""
    fields = _expand_word(word, env, split=False)
    text, tail = fields[0] if fields else ("", None)
    return text, tail is None


def _hard_positional_use(script: list) -> bool:
    """Whether shell code uses the positional parameters in a form whose value is not followed (`${@:2}`)."""
    for pipeline in script:
        for stage in pipeline:
            if isinstance(stage, _Group):
                if _hard_positional_use(stage.body):
                    return True
                words = [stage.stdin_word] if stage.stdin_word is not None else []
            else:
                words = stage.words + ([stage.stdin_word] if stage.stdin_word is not None else [])
            for word in words:
                if any(p[0] == "D" and _HARD_POSITIONAL_RE.search(p[1]) for p in word.pieces):
                    return True
            if any(_hard_positional_use(sub) for sub in stage.subs):
                return True
    return False


_PROGRAM_GLOB_RE = re.compile(r"[*?]|\[[^\]]+\]")
_READ_OPTS = _opts(values="adinNptu")
_MAPFILE_OPTS = _opts(values="dnOsuCc")
# Programs that do not write the files named in their arguments (so that `chmod +x x.sh` leaves x.sh as it was).
_READ_ONLY = frozenset({
    "cat", "ls", "echo", "printf", "grep", "egrep", "fgrep", "rg", "ag", "head", "tail", "wc", "less", "more", "stat",
    "file", "chmod", "chown", "chgrp", "test", "[", "diff", "cmp", "md5sum", "sha1sum", "sha256sum", "sha512sum",
    "shasum", "cksum", "b2sum", "readlink", "realpath", "basename", "dirname", "du", "df", "which", "type",
    "command", "cd", "pushd", "popd", "pwd", "true", "false", ":", "man", "help", "info", "nl", "od", "xxd",
    "hexdump", "strings", "cut", "tr", "jq", "yq", "touch", "mkdir", "rmdir", "rm", "tree", "find", "column",
    "fold", "fmt", "paste", "join", "comm", "date", "sleep", "whoami", "id", "uname", "hostname", "ps", "kill",
    "exit", "return", "export", "declare", "typeset", "local", "readonly", "read", "set", "shift", "unset",
    "alias", "hash", "trap", "wait", "jobs", "ulimit", "umask", "getopts", "let", "source", ".", "eval", "exec",
    "bat", "view", "shellcheck", "tee", "cp", "ln", "mv", "install",
})
_GIT_WRITES = frozenset({"checkout", "restore", "reset", "stash", "pull", "merge", "apply", "am", "cherry-pick",
                         "rebase", "clone", "switch", "revert", "mv", "worktree", "submodule", "fetch"})
# Programs that write files whose names their arguments do not give (archives, clones, copies of folders).
_UNPACKERS = frozenset({"unzip", "7z", "7za", "7zr", "cpio", "ar", "rsync", "scp", "gunzip", "bunzip2", "unxz",
                        "unzstd", "bsdtar", "jar", "unrar"})
class _Walker:
    """Turns a syntax tree into invocations, unwrapping wrappers and recording what feeds what.

    `files` are what the trajectory wrote before this line (see `_files`); `own` the `own_scripts` rule."""

    def __init__(self, files: dict | None = None, own: _files.OwnScripts = "workspace") -> None:
        self.files: dict = dict(files or {})
        self.own = own
        self.hashed: dict[str, tuple] = {}  # `hash -p /bin/rm x`: names that run another program
        self.invs: list[_Inv] = []
        self.edges: dict[int, set[int]] = {}
        self.errors: list[str] = []
        self.guessing = 0  # > 0 while following a guess (a program only known at run time taken for a shell)
        self.functions: dict[str, _Group] = {}  # defined so far in the line
        self.aliases: dict[str, str | None] = {}  # defined so far; None: the value is only known at run time
        self.active: list[tuple] = []  # functions and aliases being followed (so that recursion ends)
        self.calls = 0  # functions and aliases followed so far
        self.codes = 0  # pieces of shell code followed so far

    env_cwd: str | None = ""  # the current folder of the command being walked (set by `builtin` through `env`)

    def link(self, sources: Iterable[int], targets: list[int]) -> None:
        if targets:
            for a in sources:
                self.edges.setdefault(a, set()).update(targets)

    def script(self, script: list, env: _Env, depth: int) -> list[int]:
        ids: list[int] = []
        for pipeline in script:
            ids += self.pipeline(pipeline, env, depth)
        return ids

    def pipeline(self, stages: list, env: _Env, depth: int) -> list[int]:
        groups: list[list[int]] = []
        last = len(stages) - 1
        for k, stage in enumerate(stages):
            # Each stage of a real pipeline runs in a subshell: its assignments are lost (the last one's may stay).
            local = env if not last else dict(env)
            ids = self.stage(stage, local, depth)
            incoming: tuple[list[str] | None, bool] | None = None
            if k:  # `echo 'rm -rf /' | sh`: what the stage before prints is the script of a shell reading stdin
                texts, known = self.output_of(stages[k - 1], groups[-1], env)
                incoming = (texts, known)
                ids += self.feed(ids, texts, known, "text piped into a shell", local, depth)
            self.writes(stage, ids, local, incoming)
            if last and k == last:
                _merge_maybe(env, local)
            groups.append(ids)
        for k in range(1, len(groups)):
            for earlier in groups[:k]:
                self.link(earlier, groups[k])
        return [x for g in groups for x in g]

    def output_of(self, stage: _Simple | _Group, ids: list[int], env: _Env) -> tuple[list[str] | None, bool]:
        """What a pipeline stage prints when only `echo`, `printf` or `cat` of a here-document print in it: the
        text in each way it may be read (bash's `echo 'a\\tb'` prints the backslash, dash's a tab), and whether all
        of it is known before it runs. The texts are None when anything else prints (`base64 -d`, `curl`)."""
        plain: list[str] = []
        escaped: list[str] = []
        known = True
        for x in ids:
            inv = self.invs[x]
            if not inv.leaf or inv.expanded or (inv.program in _SILENT and not inv.uncertain):
                continue  # a wrapper, or a function call whose body is among `ids`
            if inv.uncertain:
                return None, False
            if inv.program == "echo":
                text, cooked = _echo_output(inv.args)
            elif inv.program == "printf" and (printed := _printf_output(inv.args)) is not None:
                text = cooked = printed
            elif (
                inv.program == "cat" and isinstance(stage, _Simple) and stage.stdin_word is not None
                and not stage.stdin_file and not inv.normalised().operands
            ):
                text, sure = _word_text(stage.stdin_word, env)
                cooked = text
                known = known and sure
            else:
                return None, False
            known = known and all(d is None for d in inv.dyn[1:])
            plain.append(text)
            escaped.append(cooked)
        texts = ["".join(plain)]
        if "".join(escaped) != texts[0]:
            texts.append("".join(escaped))
        return texts, known

    def feed(
        self, ids: list[int], texts: list[str] | None, known: bool, what: str, env: _Env, depth: int
    ) -> list[int]:
        """The shells among `ids` that read their script from standard input (and have not been given one yet)
        run `texts`. Unknown texts (None) make a shell's code only known at run time: it may run anything."""
        shells = [x for x in ids if self.invs[x].stdin_shell and not self.invs[x].fed]
        if not shells:
            return []
        for x in shells:
            inv = self.invs[x]
            inv.fed = True
            # A program only known at run time is only guessed to be a shell: `ls | "$PAGER"` is not feared.
            if (texts is None and not inv.dynamic) or (texts is not None and not known):
                inv.opaque = inv.leaf = True
        if texts is None:
            return []
        guessed = all(self.invs[x].dynamic for x in shells)
        self.guessing += guessed
        try:
            ran: list[int] = []
            for x in shells:  # `echo 'import os; ...' | python3`: code in another language
                if self.invs[x].stdin_lang:
                    for text in texts:
                        ran += self.lang_code(self.invs[x], self.invs[x].stdin_lang or "", text, depth)
            shells = [x for x in shells if not self.invs[x].stdin_lang]
            for positional in dict.fromkeys(self.invs[x].script_args for x in shells):
                for text in texts:
                    ran += self.code(text, what, env, depth, positional=positional)
            return ran
        finally:
            self.guessing -= guessed

    def redirected(self, node: _Simple | _Group, ids: list[int], env: _Env, depth: int) -> list[int]:
        """What a command's or group's redirections put on the standard input of the shells in it."""
        if node.stdin_file:  # `bash -s < script.sh`: a script nobody here can read, unless the trajectory wrote it
            if node.stdin_path is not None:
                path, sure = _word_text(node.stdin_path, env)
                self.env_cwd = env.get(_CWD, "")
                state = self.lookup(path) if sure else None
                if state is not None and state[0] == "text":
                    return self.feed(ids, list(state[1]), True, f"`{path}` fed to a shell", env, depth)
            return self.feed(ids, None, False, "", env, depth)
        if node.stdin_word is not None:
            text, known = _word_text(node.stdin_word, env)
            return self.feed(ids, [text], known, "here-document fed to a shell", env, depth)
        return []

    def stage(self, stage: _Simple | _Group, env: _Env, depth: int) -> list[int]:
        pre: list[int] = []
        for sub in stage.subs:  # substitutions run first, and their output feeds the command
            pre += self.script(sub, env, depth + 1)
        if isinstance(stage, _Group):
            if stage.name is not None:  # a function definition: remembered for its calls, and read as written
                self.functions[stage.name] = stage
                own = dict(env)
                _bind_positional(own, None)
                ids = self.body(stage, own, depth)
            elif stage.scope or stage.assigns:
                inner = dict(env)
                for name in stage.assigns:  # a `for` loop's variable: set to each word in turn
                    _set(inner, name, None)
                ids = self.body(stage, inner, depth)
                if stage.scope != "sub":
                    _merge_maybe(env, inner)
            else:
                ids = self.body(stage, env, depth)
        else:
            ids = self.simple(stage, env, depth)
            ids += self.redirected(stage, ids, env, depth)
        self.link(pre, ids)
        return pre + ids

    def body(self, group: _Group, env: _Env, depth: int) -> list[int]:
        ids = self.script(group.body, env, depth)
        return ids + self.redirected(group, ids, env, depth)

    def simple(self, cmd: _Simple, env: _Env, depth: int) -> list[int]:
        words: list[str] = []
        dyn: list[_Dyn] = []
        assigning = True
        # (name, value, only known at run time, array fields or None, `+=`, an array assignment)
        assignments: list[tuple[str, str, bool, list | None, bool, bool]] = []
        for k, word in enumerate(cmd.words):
            first = word.pieces[0]
            if assigning and first[0] == "L" and not first[2] and _ASSIGN_RE.match(first[1]):
                fields = _expand_word(word, env, split=False)
                text, tail = fields[0] if fields else ("", None)
                name, _, value = text.partition("=")
                array = self.array_fields(cmd, k, env)
                assignments.append((name.rstrip("+"), value, tail is not None, array, name.endswith("+"),
                                    k in cmd.arrays))
                continue
            assigning = False
            for text, is_dyn in _expand_word(word, env):
                words.append(text)
                dyn.append(is_dyn)
        if not words:  # `x=rm`: remembered, so that `$x -rf /` later is seen as rm
            for name, value, run_time, array, append, is_array in assignments:
                if is_array:
                    _set_array(env, name, array, append)
                elif append:
                    before = env.get(name)
                    _set(env, name, None if run_time or before is None else before + value)
                else:
                    _set(env, name, None if run_time else value)
            return []
        self.builtin(cmd, words, dyn, env)
        inner_env = env
        if assignments:  # `X=rm bash -c '$X -rf /'`: the prefix is in the command's environment
            inner_env = dict(env)
            for name, value, run_time, _, append, is_array in assignments:
                _set(inner_env, name, None if run_time or append or is_array else value)
        return self.argv(words, dyn, inner_env, depth)

    def array_fields(self, cmd: _Simple, k: int, env: _Env) -> list[tuple[str, _Dyn]] | None:
        if k not in cmd.arrays:
            return None
        return [field for element in cmd.arrays[k] for field in _expand_word(element, env)]

    def builtin(self, cmd: _Simple, words: Sequence[str], dyn: Sequence[_Dyn], env: _Env) -> None:
        """What builtins do to variables: `export`/`declare`/`local`, `read`, `mapfile`, `printf -v`, `unset`,
        `getopts`, `set --`/`shift`, `hash -p`. A value they set from input is only known at run time."""
        if dyn[0] is not None:
            return
        program, args, args_dyn = words[0], list(words[1:]), list(dyn[1:])
        if _names_only_known_at_run_time(program, args, args_dyn):  # any variable may now hold anything
            for key in [k for k in env if k not in _POSITIONAL and not k.startswith("\0")]:
                del env[key]
        if program in ("export", "declare", "typeset", "local", "readonly"):
            options = "".join(a[1:] for a in args if a.startswith("-") and not _ASSIGN_RE.match(a))
            if "n" in options and program != "export":  # namerefs: any name may now stand for any other
                for key in [k for k in env if k not in _POSITIONAL]:
                    del env[key]
                env[_NAMEREF] = True
            for text, tail in zip(args, args_dyn):
                if _ASSIGN_RE.match(text):
                    name, value = text.split("=", 1)
                    _set(env, name.rstrip("+"), None if tail is not None or name.endswith("+") else value)
                elif program == "local" and not text.startswith(("-", "+")):
                    _set(env, text, None)
            for k in cmd.arrays:
                head = cmd.words[k].pieces[0][1] if cmd.words[k].pieces[0][0] == "L" else ""
                name = head.split("=", 1)[0]
                _set_array(env, name.rstrip("+"), self.array_fields(cmd, k, env), name.endswith("+"))
        elif program == "read":
            j, seen = _getopt(args, 0, _READ_OPTS)
            array_name = seen.get("a")
            if array_name:
                _set_array(env, array_name, None)
            for name in args[j:] or ([] if array_name else ["REPLY"]):
                _set(env, name, None)
        elif program in ("mapfile", "readarray"):
            j, _ = _getopt(args, 0, _MAPFILE_OPTS)
            _set_array(env, args[j] if j < len(args) else "MAPFILE", None)
        elif program == "getopts" and len(args) >= 2:
            _set(env, args[1], None)
        elif program == "printf" and args and args[0].startswith("-v"):
            name = args[0][2:] or (args[1] if len(args) > 1 else "")
            rest, rest_dyn = (args[1:], args_dyn[1:]) if args[0][2:] else (args[2:], args_dyn[2:])
            printed = _printf_output(rest) if all(d is None for d in rest_dyn) else None
            if name:
                _set(env, name, printed)
        elif program == "unset":
            for name in args:
                if not name.startswith("-"):
                    _drop(env, name)
        elif program in ("set", "shift"):
            _reposition(words, dyn, env)
        elif program in ("cd", "pushd"):
            target = next((a for a in args if not a.startswith("-") or a == "-"), None)
            k = args.index(target) if target is not None else -1
            cwd = env.get(_CWD, "")
            if target is None or target in ("-", "~") or args_dyn[k] is not None or cwd is None:
                env[_CWD] = None  # somewhere only known at run time
            else:
                env[_CWD] = target if target.startswith("/") else _files.normalise((cwd + "/" if cwd else "") + target)
        elif program == "hash" and "-p" in args:
            i = args.index("-p")
            if i + 1 < len(args):
                state = self.source_state(args[i + 1], args_dyn[i + 1])
                for name in args[i + 2:]:
                    self.hashed[name] = state

    def argv(self, words: Sequence[str], dyn: Sequence[_Dyn], env: _Env, depth: int) -> list[int]:
        if not words:
            return []
        program, tail = words[0], dyn[0]
        if tail is not None and "/" in tail:  # `$DIR/rm`: only the folder is unknown, the program is not
            inv = _Inv(_basename(tail), tuple(words[1:]), words, dyn, guessed=self.guessing > 0)
        else:
            inv = _Inv(_basename(program), tuple(words[1:]), words, dyn, unknown=tail, guessed=self.guessing > 0)
        self.env_cwd = env.get(_CWD, "")
        state = None
        if tail is None:
            if "/" in program:  # `./x`, `/tmp/r`: what the trajectory wrote there, if it did
                state = self.lookup(program)
            elif program in self.hashed:  # `hash -p /bin/rm x; x`
                state = self.hashed[program]
            if state is not None and state[0] == "program":
                inv.renamed, inv.program = program, state[1]
            elif _PROGRAM_GLOB_RE.search(inv.program):
                inv.glob = True
        index = len(self.invs)
        self.invs.append(inv)
        ids = [index]
        rest, rest_dyn = words[1:], dyn[1:]
        if inv.dynamic:
            # The program could be anything, a shell among others: follow what it would run as one (`$SHELL -c
            # 'rm -rf /'`, `echo 'rm -rf /' | $SHELL`), as a guess whose parse errors do not count.
            actions, guess = _shell_handler(rest), 1
        else:
            if inv.program == "alias":
                self.define_aliases(rest, rest_dyn)
            handler = handler_for(inv.program)
            actions, guess = (handler(rest) if handler else []), 0
        self.guessing += guess
        scripts: set[str] = set()
        try:
            for action in actions:
                kind = action[0]
                if kind == "argv":
                    ids += self.argv(rest[action[1]:action[2]], rest_dyn[action[1]:action[2]], env, depth)
                elif kind == "xargv":  # `xargs CMD`: CMD runs with input items as (more) arguments
                    sub, sub_dyn = list(rest[action[1]:action[2]]), list(rest_dyn[action[1]:action[2]])
                    repl = action[3]
                    if repl:
                        sub_dyn = [("" if d is None and repl in w else d) for w, d in zip(sub, sub_dyn)]
                    elif sub and (_basename(sub[0]) in _CODE_RUNNERS or language_of(_basename(sub[0]))):
                        sub, sub_dyn = [*sub, "{}"], [*sub_dyn, ""]
                    ids += self.argv(sub, sub_dyn, env, depth)
                elif kind == "text":
                    code = action[1]
                    if not guess and any(d is not None and w in code for w, d in zip(rest, rest_dyn)):
                        inv.opaque = True  # `eval "$(echo rm -rf /)"`: the code itself is only known at run time
                    positional = None
                    if len(action) > 2:  # a new shell: `bash -c 'rm "$@"' _ -rf /` has its own `$@`
                        positional = tuple(zip(rest[action[2]:], rest_dyn[action[2]:]))
                    # `eval` runs in this shell: what it assigns lasts
                    ids += self.code(code, f"shell code given to `{inv.program}`", env, depth,
                                     shared=inv.program == "eval", positional=positional)
                elif kind == "stdin":
                    inv.stdin_shell = True
                    if action[1] is not None:
                        inv.script_args = tuple(zip(rest[action[1]:], rest_dyn[action[1]:]))
                elif kind == "code":  # `python3 -c CODE`, `perl -e CODE`
                    lang, k, code = action[1], action[2], action[3]
                    hidden = any(d is not None for d in rest_dyn) if k < 0 else (k < len(rest_dyn) and rest_dyn[k] is not None)
                    if not guess and hidden:
                        inv.opaque = True
                        inv.why = inv.why or f"the {lang} code it runs is only known at run time"
                    ids += self.lang_code(inv, lang, code, depth)
                elif kind == "code-stdin":
                    inv.stdin_shell, inv.stdin_lang = True, action[1]
                elif kind in ("script", "script-file"):
                    lang, k = ("sh", action[1]) if kind == "script" else (action[1], action[2])
                    if isinstance(k, str):  # a path given in an option (`php -fx.php`, `at -f x.sh`)
                        if not guess:
                            scripts.add(k)
                            ids += self.run_file(inv, k, lang, (), (), env, depth)
                        continue
                    if k < 0 or k >= len(rest):
                        continue
                    if not guess and rest_dyn[k] is not None:
                        inv.opaque = True  # `bash <(base64 -d x)`, `sh "$F"`: a script only known at run time
                        if not rest[k].startswith(("<(", ">(")):  # (process substitution: shell code)
                            inv.why = inv.why or f"the script it runs (`{rest[k]}`) is only known at run time"
                        continue
                    if guess:
                        continue
                    scripts.add(rest[k])
                    how = "source" if inv.program in ("source", ".") else lang
                    ids += self.run_file(inv, rest[k], how, rest[k + 1:], rest_dyn[k + 1:], env, depth)
                elif kind == "opaque" and not guess:
                    inv.opaque = True
                    inv.why = inv.why or action[1]
        finally:
            self.guessing -= guess
        if (
            tail is None and "/" in program and not actions and not self.guessing
            and (state is None or state[0] != "program")
        ):
            ids += self.run_file(inv, program, "exec", rest, rest_dyn, env, depth)  # `./x.sh`
        if not inv.dynamic and not self.guessing:
            if inv.program == "git":
                ids += self.git_config(inv, env, depth)
            self.note_writes(inv, rest, rest_dyn, scripts)
        # A command whose program or code is only known at run time stays a command of its own (a leaf), so that
        # an allow list never passes it on the strength of what a guess found inside it.
        inv.leaf = len(ids) == 1 or inv.dynamic or inv.opaque
        if not inv.dynamic and (program in self.functions or program in self.aliases):
            # A call of a function or alias defined earlier in the line stays a command of its own too (the
            # definition may not have run, and then a program of that name runs), and runs its body.
            ids += self.expand(inv, program, rest, rest_dyn, env, depth)
        return ids

    # -- code in other languages, scripts and the files a line writes ---------------------------------------------

    def lang_code(self, inv: _Inv, lang: str, code: str, depth: int) -> list[int]:
        """What code handed to an interpreter runs (see `_code`); what it hides makes `inv` only known at run time."""
        if depth >= _MAX_DEPTH:
            if not self.guessing:
                self.errors.append(f"{lang} code is nested too deeply to follow")
            return []
        self.codes += 1
        if self.codes > _MAX_CODE:
            if self.codes == _MAX_CODE + 1:
                self.errors.append(f"{lang} code: too much code inside code to follow")
            return []
        ids: list[int] = []
        what = f"{lang} code given to `{inv.program}`"
        for action in analyse_code(lang, code):
            kind = action[0]
            if kind == "text":
                ids += self.code(action[1], what, {}, depth, positional=())
            elif kind == "argv":
                ids += self.argv([w for w, _ in action[1]], [d for _, d in action[1]], {}, depth + 1)
            elif kind == "fed":  # awk's `print ... | "sh"`: a command reading text only known at run time
                fed = self.code(action[1], what, {}, depth, positional=())
                self.feed(fed, None, False, "", {}, depth)
                ids += fed
            elif kind == "opaque" and not self.guessing:
                inv.opaque = True
                inv.why = inv.why or action[1]
        return ids

    def git_config(self, inv: _Inv, env: _Env, depth: int) -> list[int]:
        """`git config alias.x '!rm -rf b'` is remembered (as a file would be: it outlives the command), and a later
        `git x`, or any git command once a pager, editor or ssh command was set, runs it."""
        args = list(inv.args)
        if "config" in args:
            rest = [a for a in args[args.index("config") + 1:] if not a.startswith("-")]
            if len(rest) >= 2:
                key = rest[0].lower()
                if key.startswith("alias.") or _GIT_CODE_KEYS.fullmatch(key):
                    self.files["\0git " + key] = ("text", (" ".join(rest[1:]),))
            return []
        sub = next((a for a in args if not a.startswith("-")), "")
        ids: list[int] = []
        for key, state in list(self.files.items()):
            if not key.startswith("\0git ") or state[0] != "text":
                continue
            name = key[5:]
            if name.startswith("alias.") and name[6:] != sub.lower():
                continue
            value = state[1][0]
            if name.startswith("alias.") and not value.startswith("!"):
                value = "git " + value
            ids += self.code(value.lstrip("!"), f"git configuration `{name}`", env, depth)
        return ids

    def lookup(self, path: str) -> tuple | None:
        return _files.lookup(self.files, self.here(path))

    def here(self, path: str) -> str:
        """A path as seen from where the line started (`cd repo && ./x` runs repo/x)."""
        cwd = self.env_cwd
        if cwd and not path.startswith(("/", "~")):
            return _files.normalise(cwd + "/" + path)
        return _files.normalise(path)

    def written_anywhere(self, why: str) -> None:
        self.files[_files.ANYWHERE] = ("unknown", why)

    def run_file(
        self, inv: _Inv, path: str, how: str, args: Sequence[str], args_dyn: Sequence[_Dyn], env: _Env, depth: int
    ) -> list[int]:
        """A script run by path (`sh x.sh`, `. x`, `./x.sh`, `python3 x.py`): read it when the trajectory wrote
        it where it could be seen; else it is the user's own (the `own_scripts` rule) or only known at run time."""
        state = self.lookup(path)
        if state is None:
            if how == "exec" and path.startswith("/"):
                return []  # a program installed somewhere, judged by its name
            anywhere = self.files.get(_files.ANYWHERE)
            if _files.own_script(path, self.own) and anywhere is None:
                return []
            inv.opaque = True
            inv.why = inv.why or (
                f"it runs `{path}`, which {anywhere[1]}" if anywhere is not None and _files.own_script(path, self.own)
                else f"it runs `{path}`, which this trajectory never showed being written and is not one of the "
                "user's own scripts (own_scripts)"
            )
            return []
        if state[0] == "unknown":
            inv.opaque = True
            inv.why = inv.why or f"it runs `{path}`, which {state[1]}"
            return []
        if state[0] != "text":
            return []
        ids: list[int] = []
        for text in state[1]:
            lang = language_of_script(text, path) if how == "exec" else ("sh" if how == "source" else how)
            if lang in LANGUAGES:
                ids += self.lang_code(inv, lang, text, depth)
            else:
                ids += self.code(text, f"`{path}`", env, depth, shared=how == "source",
                                 positional=None if how == "source" else tuple(zip(args, args_dyn)))
        return ids

    def source_state(self, path: str, tail: _Dyn) -> tuple:
        """What a copy of or link to `path` is (`cp /bin/rm x`, `ln -s "$(which rm)" x`, `cp tmpl.sh x.sh`)."""
        if tail is not None:
            if "/" in tail and tail.rstrip("/"):
                return ("program", _basename(tail))
            return ("unknown", f"is a copy of `{path}`, a path only known at run time")
        program = _files.system_program(path)
        if program is not None:
            return ("program", program)
        state = self.lookup(path)
        if state is not None:
            return state
        if _files.own_script(path, self.own):
            return ("own",)
        return ("unknown", f"is a copy of `{path}`, which this trajectory never showed")

    def note_writes(self, inv: _Inv, rest: Sequence[str], rest_dyn: Sequence[_Dyn], scripts: set[str]) -> None:
        """Copies and links (`cp`, `ln`, `install`, `mv`) make their target what their source is; any other
        program (but a few that only read) may have written the files it names: they become unknown."""
        program = inv.program
        if program in ("cp", "ln", "install", "mv"):
            parsed = _normalise(program, inv.args)
            tails = dict(zip(rest, rest_dyn))
            operands = list(parsed.operands)
            target_dir = next((v for k, v in parsed.values if k == "t"), None)
            if target_dir is None and program == "ln" and len(operands) == 1:
                target_dir = "."
            if target_dir is None and len(operands) < 2:
                return
            sources = operands if target_dir is not None else operands[:-1]
            for source in sources:
                if target_dir is not None or len(sources) > 1:
                    dest = f"{target_dir or operands[-1]}/{_basename(source)}"
                else:
                    dest = operands[-1]
                self.files[self.here(dest)] = self.source_state(source, tails.get(source))
            return
        unpacks = program in _UNPACKERS or (program == "tar" and _tar_extracts(inv.args)) or (
            program == "git" and any(a in ("clone", "pull", "checkout", "restore", "reset", "stash", "merge", "rebase",
                                           "apply", "am", "cherry-pick", "revert", "switch", "submodule", "worktree")
                                     for a in inv.args) and not (inv.args[:1] == ("checkout",) and "-b" in inv.args)
        ) or (program == "wget" and any(a in ("-r", "-m", "--recursive", "--mirror") for a in inv.args))
        if unpacks:
            self.written_anywhere(f"may have been written by `{inv.display}`")
        if (
            program in _READ_ONLY or program in _SHELLS or language_of(program) or inv.glob
            or (program in _WRAPPERS and program not in ("git", "tar"))
            or (program == "git" and not any(a in _GIT_WRITES for a in inv.args))
        ):
            return
        why = f"was written by `{inv.display}`"
        for text, tail in zip(rest, rest_dyn):
            if tail is not None or text in scripts or "://" in text:
                continue
            if text.startswith("-") or (program == "dd" and "=" in text):
                text = text.split("=", 1)[1] if "=" in text else ""
            if text and not text.startswith("-") and text not in _files._DEVICES:
                self.files[self.here(text)] = ("unknown", why)

    def writes(
        self, stage: _Simple | _Group, ids: list[int], env: _Env,
        incoming: tuple[list[str] | None, bool] | None,
    ) -> None:
        """Files a stage writes: its output redirections (`echo ... > x.sh`) and `tee FILE`, with what they hold
        when that is known (`echo`, `printf`, `cat` of a here-document), else as unknown."""
        targets: list[tuple[str, bool, tuple[list[str] | None, bool], str]] = []
        if stage.writes:
            output = self.output_of(stage, ids, env)
            shown = f"`{self.invs[ids[0]].display}`" if ids else "a command"
            for word, append in stage.writes:
                fields = _expand_word(word, env, split=False)
                path, tail = fields[0] if fields else ("", None)
                if tail is not None:
                    self.written_anywhere(f"was perhaps written by {shown} (to a path only known at run time)")
                    continue
                targets.append((path, append, output, shown))
        if isinstance(stage, _Simple) and ids and self.invs[ids[0]].program == "tee" and not self.invs[ids[0]].dynamic:
            tee = self.invs[ids[0]]
            if stage.stdin_word is not None:
                text, known = _word_text(stage.stdin_word, env)
                incoming = ([text], known)
            parsed = tee.normalised()
            for path in parsed.operands:
                targets.append((path, "a" in parsed.flags, incoming or (None, False), "the command before `tee`"))
        for path, append, (texts, known), shown in targets:
            if path in _files._DEVICES or not path:
                continue
            key = self.here(path)
            if texts is None or not known:
                self.files[key] = ("unknown", f"was written by {shown}")
                continue
            before = self.lookup(path) if append else None
            if before is not None and before[0] == "unknown":
                continue
            if before is not None and before[0] == "text":
                texts = [b + t for b in before[1] for t in texts]
            self.files[key] = ("text", tuple(dict.fromkeys(texts)))

    def define_aliases(self, words: Sequence[str], dyn: Sequence[_Dyn]) -> None:
        """`alias r='rm -rf'`: remembered, so that a later `r build` is read as `rm -rf build`."""
        for word, tail in zip(words, dyn):
            name, eq, value = word.partition("=")
            if eq and name and not name.startswith("-") and "$" not in name and "`" not in name:
                self.aliases[name] = value if tail is None else None

    def expand(
        self, inv: _Inv, name: str, rest: Sequence[str], rest_dyn: Sequence[_Dyn], env: _Env, depth: int
    ) -> list[int]:
        """Follow a call of a function (its body, with `$1`, `$@`... bound to the call's arguments) or an alias
        (its text, then the call's arguments) defined earlier in the line. Recursion with the same arguments
        is not followed again; past a budget of calls the line fails closed."""
        fields = tuple(zip(rest, rest_dyn))
        alias_key, function_key = ("alias", name), ("function", name, fields)
        todo = [
            key for key, table in ((alias_key, self.aliases), (function_key, self.functions))
            if name in table and key not in self.active
        ]
        if not todo:
            return []
        self.calls += 1
        if self.calls > _MAX_CALLS or depth >= _MAX_DEPTH:
            if not self.guessing:
                self.errors.append(f"`{name}`: too many calls of functions or aliases to follow")
            return []
        ids: list[int] = []
        for key in todo:
            self.active.append(key)
            try:
                if key is alias_key:
                    value = self.aliases[name]
                    if value is None:  # `alias r="$X"`: what `r` runs is only known at run time
                        inv.opaque = True
                        continue
                    text = " ".join([value, *(_quote(w, d) for w, d in fields)])
                    ids += self.code(text, f"alias `{name}`", env, depth, shared=True)
                else:
                    group = self.functions[name]
                    if _hard_positional_use(group.body):  # `${@:2}`, `${1:-x}`: arguments not followed
                        inv.opaque = True
                    saved = {k: env[k] for k in _POSITIONAL if k in env}
                    _bind_positional(env, fields)
                    try:
                        ids += self.body(group, env, depth + 1)
                    finally:
                        _bind_positional(env, None)
                        env.update(saved)
                inv.expanded = True
            finally:
                self.active.pop()
        return ids

    def code(
        self, text: str, what: str, env: _Env, depth: int,
        shared: bool = False, positional: Sequence[tuple[str, _Dyn]] | None = None,
    ) -> list[int]:
        """Shell code inside a command (`bash -c`, `eval`, a here-document fed to `sh`): parse and walk it.

        `shared`: it runs in this shell (an alias), so its assignments last; `positional`: it runs in a new
        shell with these arguments as `$@`."""
        if depth >= _MAX_DEPTH:
            if not self.guessing:
                self.errors.append(f"{what} is nested too deeply to follow")
            return []
        self.codes += 1
        if self.codes > _MAX_CODE:
            if self.codes == _MAX_CODE + 1:
                self.errors.append(f"{what}: too much shell code inside shell code to follow")
            return []
        try:
            script = _Parser(text, depth + 1).parse_all()
            own = env if shared else dict(env)
            if positional is not None:
                _bind_positional(own, positional)
            return self.script(script, own, depth + 1)
        except (_ParseError, RecursionError) as exc:
            if not self.guessing:  # a guess that is not shell code (`$PY -c 'print(1)'`) was a wrong guess
                message = "nested too deeply to follow" if isinstance(exc, RecursionError) else str(exc)
                self.errors.append(f"{what}: {message}")
            return []


def _tar_extracts(args: Sequence[str]) -> bool:
    """`tar xf a.tar`, `tar -xzf`, `tar --extract`: it writes the files in the archive."""
    first = args[0] if args else ""
    return any(a in ("--extract", "--get") for a in args) or (
        bool(first) and not first.startswith("--") and "x" in first.lstrip("-")
    ) or any(a.startswith("-") and not a.startswith("--") and "x" in a for a in args)


def _closure(edges: Mapping[int, set[int]]) -> dict[int, frozenset[int]]:
    out: dict[int, frozenset[int]] = {}
    for start in edges:
        seen: set[int] = set()
        stack = list(edges[start])
        while stack:
            x = stack.pop()
            if x not in seen:
                seen.add(x)
                stack.extend(edges.get(x, ()))
        out[start] = frozenset(seen)
    return out


@lru_cache(maxsize=4096)
def _analyse(command: str | tuple[str, ...], files: _files.Files = (), own: _files.OwnScripts = "workspace") -> _Analysis:
    """Cached: the same command is examined against every rule of a policy and every `never_ran` of a case.

    `files`: what the trajectory wrote before this command (see `_files`); `own`: the `own_scripts` rule."""
    walker = _Walker(dict(files), own)
    try:
        if isinstance(command, str):
            script = _Parser(command).parse_all()
            walker.script(script, {}, 0)
        elif len(command) == 1 and re.search(r"\s|[;&|<>$`]", command[0]):
            # an argv of one string with shell syntax in it (`["ls -la | wc"]`): tools run such strings in a shell
            walker.script(_Parser(command[0]).parse_all(), {}, 0)
        else:
            walker.argv(list(command), [None] * len(command), {}, 0)
    except _ParseError as exc:
        return _Analysis((), {}, error=str(exc))
    except RecursionError:
        return _Analysis((), {}, error="nested too deeply to follow")
    except (IndexError, KeyError, ValueError, TypeError, AttributeError) as exc:  # a guard never crashes: it fails closed
        return _Analysis((), {}, error=f"could not be followed ({type(exc).__name__}: {exc})")
    return _Analysis(
        tuple(walker.invs), _closure(walker.edges), nested_errors=tuple(walker.errors),
        uncertain=any(inv.uncertain for inv in walker.invs), files=tuple(walker.files.items()),
    )
