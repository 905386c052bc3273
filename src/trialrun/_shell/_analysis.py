"""Following a parsed command line to every program it would run (an "invocation") and which feeds which,
through wrappers, substitutions, functions, aliases and text printed into a shell."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from . import _files
from ._expand import Env, Field, Tail, expand_word, text_of
from ._handover import SH_SHELLS, Call, HandOver
from ._inv import Analysis, Inv, basename, quote_word, word_text
from ._nodes import Dynamic, Group, Literal, Pipeline, Script, Simple
from ._options import getopt, option_table
from ._printed import echo_output, printf_output
from ._syntax import ASSIGN_RE, Parser, assignment
from ._variables import (
    CWD,
    NAMEREF,
    POSITIONAL,
    bind_positional,
    cwd_of,
    drop,
    made_names,
    merge_maybe,
    names_only_known_at_run_time,
    note_made,
    reposition,
    set_array,
    set_variable,
)
from ._words import MAX_DEPTH, ParseError
from ._wrappers import handler_for, shell_handler

# --------------------------------------------------------------------------------------------------------------
# Analysis: every program a command line runs (an "invocation"), and which feeds which.
# --------------------------------------------------------------------------------------------------------------


_MAX_CALLS = 256  # calls of functions and aliases followed in one command line before giving up (fail closed)
_SILENT = frozenset({"true", "false", ":"})  # print nothing, so they do not change what a pipe carries
# Uses of positional parameters whose value is not followed (`${@:2}`, `${1:-x}`, `${10}`, `${#1}`, `${!1}`).
_HARD_POSITIONAL_RE = re.compile(r"\$\{[#!]?(?:[@*]|\d)")


def _hard_positional_use(script: Script) -> bool:
    """Whether shell code uses the positional parameters in a form whose value is not followed (`${@:2}`)."""
    for pipeline in script:
        for stage in pipeline:
            if isinstance(stage, Group):
                if _hard_positional_use(stage.body):
                    return True
                words = [stage.stdin_word] if stage.stdin_word is not None else []
            else:
                words = stage.words + ([stage.stdin_word] if stage.stdin_word is not None else [])
            for word in words:
                if any(isinstance(p, Dynamic) and _HARD_POSITIONAL_RE.search(p.source) for p in word.pieces):
                    return True
            if any(_hard_positional_use(sub) for sub in stage.subs):
                return True
    return False


_PROGRAM_GLOB_RE = re.compile(r"[*?]|\[[^\]]+\]")
_READ_OPTS = option_table(values="adinNptu")
_MAPFILE_OPTS = option_table(values="dnOsuCc")
# Programs that do not write the files named in their arguments (so that `chmod +x x.sh` leaves x.sh as it was).
@dataclass(frozen=True, slots=True)
class _Assignment:
    """An assignment in front of a command (`X=1 cmd`) or alone (`x=rm`, `a=(...)`, `a+=x`)."""

    name: str
    value: str
    run_time: bool  # its value is only known at run time
    array: list[Field] | None  # an array assignment's fields (None: not one, or only known at run time)
    append: bool  # `+=`
    is_array: bool  # `a=(...)`


#: A call of an alias, or of a function with these arguments, being followed (so that recursion ends).
_CallKey = tuple[str, str] | tuple[str, str, tuple[Field, ...]]


class Walker(HandOver):
    """Turns a syntax tree into invocations, unwrapping wrappers and recording what feeds what.

    `files` are what the trajectory wrote before this line (see `_files`); `own` the `own_scripts` rule."""

    def __init__(self, files: Mapping[str, _files.Entry] | None = None, own: _files.OwnScripts = "workspace") -> None:
        self.files: _files.Table = dict(files or {})
        self.own = own
        self.hashed: dict[str, _files.State] = {}  # `hash -p /bin/rm x`: names that run another program
        self.invs: list[Inv] = []
        self.edges: dict[int, set[int]] = {}
        self.errors: list[str] = []
        self.in_sh = 0  # > 0 while walking POSIX sh's reading of some code (see `_handover.code`)
        self.guessing = 0  # > 0 while following a guess (a program only known at run time taken for a shell)
        self.functions: dict[str, Group] = {}  # defined so far in the line
        self.aliases: dict[str, str | None] = {}  # defined so far; None: the value is only known at run time
        self.active: list[_CallKey] = []  # functions and aliases being followed (so that recursion ends)
        self.calls = 0  # functions and aliases followed so far
        self.codes = 0  # pieces of shell code followed so far

    env_cwd: str | None = ""  # the current folder of the command being walked (set by `builtin` through `env`)

    def link(self, sources: Iterable[int], targets: list[int]) -> None:
        if targets:
            for a in sources:
                self.edges.setdefault(a, set()).update(targets)

    def script(self, script: Script, env: Env, depth: int) -> list[int]:
        ids: list[int] = []
        for pipeline in script:
            ids += self.pipeline(pipeline, env, depth)
        return ids

    def pipeline(self, stages: Pipeline, env: Env, depth: int) -> list[int]:
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
                merge_maybe(env, local)
            groups.append(ids)
        for k in range(1, len(groups)):
            for earlier in groups[:k]:
                self.link(earlier, groups[k])
        return [x for g in groups for x in g]

    def output_of(self, stage: Simple | Group, ids: list[int], env: Env) -> tuple[list[str] | None, bool]:
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
                text, cooked = echo_output(inv.args)
            elif inv.program == "printf" and (printed := printf_output(inv.args)) is not None:
                text = cooked = printed
            elif (
                inv.program == "cat" and isinstance(stage, Simple) and stage.stdin_word is not None
                and not stage.stdin_file and not inv.normalised().operands
            ):
                text, sure = word_text(stage.stdin_word, env)
                cooked = text
                known = known and sure
            elif inv.program == "cat" and (read := self.cat_files(inv)) is not None:  # `cat x.sh | sh`
                text = cooked = read
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
        self, ids: list[int], texts: list[str] | None, known: bool, what: str, env: Env, depth: int
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
            sh = any(self.invs[x].program in SH_SHELLS for x in shells)
            for positional in dict.fromkeys(self.invs[x].script_args for x in shells):
                for text in texts:
                    ran += self.code(text, what, env, depth, positional=positional, sh=sh)
            return ran
        finally:
            self.guessing -= guessed

    def redirected(self, node: Simple | Group, ids: list[int], env: Env, depth: int) -> list[int]:
        """What a command's or group's redirections put on the standard input of the shells in it."""
        if node.stdin_file:  # `bash -s < script.sh`: read where what the file holds is known
            if node.stdin_path is not None:
                path, sure = word_text(node.stdin_path, env)
                self.env_cwd = cwd_of(env)
                texts = self.stdin_text(path, sure)
                if texts is not None:
                    return self.feed(ids, texts, True, f"`{path}` fed to a shell", env, depth)
            return self.feed(ids, None, False, "", env, depth)
        if node.stdin_word is not None:
            text, known = word_text(node.stdin_word, env)
            return self.feed(ids, [text], known, "here-document fed to a shell", env, depth)
        return []

    def stage(self, stage: Simple | Group, env: Env, depth: int) -> list[int]:
        pre: list[int] = []
        for sub in stage.subs:  # substitutions run first, and their output feeds the command
            pre += self.script(sub, env, depth + 1)
        if isinstance(stage, Group):
            if stage.name is not None:  # a function definition: remembered for its calls, and read as written
                self.functions[stage.name] = stage
                own = dict(env)
                bind_positional(own, None)
                ids = self.body(stage, own, depth)
            elif stage.scope or stage.assigns:
                inner = dict(env)
                for name in stage.assigns:  # a `for` loop's variable: set to each word in turn
                    set_variable(inner, name, None)
                ids = self.body(stage, inner, depth)
                if stage.scope != "sub":
                    merge_maybe(env, inner)
            else:
                ids = self.body(stage, env, depth)
        else:
            ids = self.simple(stage, env, depth)
            ids += self.redirected(stage, ids, env, depth)
        self.link(pre, ids)
        return pre + ids

    def body(self, group: Group, env: Env, depth: int) -> list[int]:
        ids = self.script(group.body, env, depth)
        return ids + self.redirected(group, ids, env, depth)

    def simple(self, cmd: Simple, env: Env, depth: int) -> list[int]:
        words: list[str] = []
        dyn: list[Tail] = []
        assigning = True
        assignments: list[_Assignment] = []
        for k, word in enumerate(cmd.words):
            if assigning and assignment(word) is not None:
                fields = expand_word(word, env, split=False)
                text, tail = fields[0] if fields else ("", None)
                name, _, value = text.partition("=")
                array = self.array_fields(cmd, k, env)
                assignments.append(_Assignment(name.rstrip("+"), value, tail is not None, array, name.endswith("+"),
                                               k in cmd.arrays))
                continue
            assigning = False
            for text, is_dyn in expand_word(word, env):
                words.append(text)
                dyn.append(is_dyn)
        if not words:  # `x=rm`: remembered, so that `$x -rf /` later is seen as rm
            for a in assignments:
                if a.is_array:
                    set_array(env, a.name, a.array, a.append)
                elif a.append:
                    before = text_of(env, a.name)
                    set_variable(env, a.name, None if a.run_time or before is None else before + a.value)
                else:
                    set_variable(env, a.name, None if a.run_time else a.value)
                note_made(env, a.name, a.value, a.run_time)
            return []
        self.builtin(cmd, words, dyn, env)
        inner_env = env
        if assignments:  # `X=rm bash -c '$X -rf /'`: the prefix is in the command's environment
            inner_env = dict(env)
            for a in assignments:
                set_variable(inner_env, a.name, None if a.run_time or a.append or a.is_array else a.value)
        return self.argv(words, dyn, inner_env, depth)

    def array_fields(self, cmd: Simple, k: int, env: Env) -> list[tuple[str, Tail]] | None:
        if k not in cmd.arrays:
            return None
        return [field for element in cmd.arrays[k] for field in expand_word(element, env)]

    def builtin(self, cmd: Simple, words: Sequence[str], dyn: Sequence[Tail], env: Env) -> None:
        """What builtins do to variables: `export`/`declare`/`local`, `read`, `mapfile`, `printf -v`, `unset`,
        `getopts`, `set --`/`shift`, `hash -p`. A value they set from input is only known at run time."""
        if dyn[0] is not None:
            return
        program, args, args_dyn = words[0], list(words[1:]), list(dyn[1:])
        if names_only_known_at_run_time(program, args, args_dyn):  # any variable may now hold anything
            for key in [k for k in env if k not in POSITIONAL and not k.startswith("\0")]:
                del env[key]
        if program in ("export", "declare", "typeset", "local", "readonly"):
            options = "".join(a[1:] for a in args if a.startswith("-") and not ASSIGN_RE.match(a))
            if "n" in options and program != "export":  # namerefs: any name may now stand for any other
                for key in [k for k in env if k not in POSITIONAL]:
                    del env[key]
                env[NAMEREF] = True
            for text, tail in zip(args, args_dyn):
                if ASSIGN_RE.match(text):
                    name, value = text.split("=", 1)
                    set_variable(env, name.rstrip("+"), None if tail is not None or name.endswith("+") else value)
                elif program == "local" and not text.startswith(("-", "+")):
                    set_variable(env, text, None)
            for k in cmd.arrays:
                first = cmd.words[k].pieces[0]
                head = first.text if isinstance(first, Literal) else ""
                name = head.split("=", 1)[0]
                set_array(env, name.rstrip("+"), self.array_fields(cmd, k, env), name.endswith("+"))
        elif program == "read":
            j, seen = getopt(args, 0, _READ_OPTS)
            array_name = seen.get("a")
            if array_name:
                set_array(env, array_name, None)
            for name in args[j:] or ([] if array_name else ["REPLY"]):
                set_variable(env, name, None)
        elif program in ("mapfile", "readarray"):
            j, _ = getopt(args, 0, _MAPFILE_OPTS)
            set_array(env, args[j] if j < len(args) else "MAPFILE", None)
        elif program == "getopts" and len(args) >= 2:
            set_variable(env, args[1], None)
        elif program == "printf" and args and args[0].startswith("-v"):
            name = args[0][2:] or (args[1] if len(args) > 1 else "")
            rest, rest_dyn = (args[1:], args_dyn[1:]) if args[0][2:] else (args[2:], args_dyn[2:])
            printed = printf_output(rest) if all(d is None for d in rest_dyn) else None
            if name:
                set_variable(env, name, printed)
        elif program == "unset":
            for name in args:
                if not name.startswith("-"):
                    drop(env, name)
        elif program in ("set", "shift"):
            reposition(words, dyn, env)
        elif program in ("cd", "pushd"):
            target = next((a for a in args if not a.startswith("-") or a == "-"), None)
            k = args.index(target) if target is not None else -1
            cwd = cwd_of(env)
            if target is None or target in ("-", "~") or args_dyn[k] is not None or cwd is None:
                env[CWD] = None  # somewhere only known at run time
            else:
                env[CWD] = target if target.startswith("/") else _files.normalise((cwd + "/" if cwd else "") + target)
        elif program == "hash" and "-p" in args:
            i = args.index("-p")
            if i + 1 < len(args):
                state = self.source_state(args[i + 1], args_dyn[i + 1])
                for name in args[i + 2:]:
                    self.hashed[name] = state

    def argv(self, words: Sequence[str], dyn: Sequence[Tail], env: Env, depth: int) -> list[int]:
        """What an expanded command line runs: its program, what that hands over to (`_handover`), the script
        file it is, and the body of a function or alias of its name defined earlier in the line."""
        if not words:
            return []
        inv, state = self.invocation(words, dyn, env)
        ids = [len(self.invs)]
        self.invs.append(inv)
        program, tail, rest, rest_dyn = words[0], dyn[0], words[1:], dyn[1:]
        if inv.dynamic:
            # The program could be anything, a shell among others: follow what it would run as one (`$SHELL -c
            # 'rm -rf /'`, `echo 'rm -rf /' | $SHELL`), as a guess whose parse errors do not count.
            actions, guess = shell_handler(rest), 1
        else:
            if inv.program == "alias":
                self.define_aliases(rest, rest_dyn)
            handler = handler_for(inv.program)
            actions, guess = (handler(rest) if handler else []), 0
        call = Call(inv, rest, rest_dyn, env, depth, guess)
        ids += self.hand_over(call, actions)
        if (
            tail is None and "/" in program and not actions and not self.guessing
            and not isinstance(state, _files.Program)
        ):
            ids += self.run_file(inv, program, "exec", rest, rest_dyn, env, depth)  # `./x.sh`
        if not inv.dynamic and not self.guessing:
            if inv.program == "git":
                ids += self.git_config(inv, env, depth)
            self.note_writes(inv, rest, rest_dyn, call.scripts)
        # A command whose program or code is only known at run time stays a command of its own (a leaf), so that
        # an allow list never passes it on the strength of what a guess found inside it.
        inv.leaf = len(ids) == 1 or inv.dynamic or inv.opaque
        if not inv.dynamic and (program in self.functions or program in self.aliases):
            # A call of a function or alias defined earlier in the line stays a command of its own too (the
            # definition may not have run, and then a program of that name runs), and runs its body.
            ids += self.expand(inv, program, rest, rest_dyn, env, depth)
        return ids

    def invocation(self, words: Sequence[str], dyn: Sequence[Tail], env: Env) -> tuple[Inv, _files.State | None]:
        """The program a command line runs, and what the trajectory left at its path (or `hash -p` named)."""
        program, tail = words[0], dyn[0]
        if tail is not None and "/" in tail:  # `$DIR/rm`: only the folder is unknown, the program is not
            inv = Inv(basename(tail), tuple(words[1:]), words, dyn, guessed=self.guessing > 0)
        else:
            inv = Inv(basename(program), tuple(words[1:]), words, dyn, unknown=tail, guessed=self.guessing > 0)
        inv.made = made_names(env)
        self.env_cwd = cwd_of(env)
        state = None
        if tail is None:
            if "/" in program:  # `./x`, `/tmp/r`: what the trajectory wrote there, if it did
                state = self.lookup(program)
            elif program in self.hashed:  # `hash -p /bin/rm x; x`
                state = self.hashed[program]
            if isinstance(state, _files.Program):
                inv.renamed, inv.program = program, state.name
            elif _PROGRAM_GLOB_RE.search(inv.program):
                inv.glob = True
        return inv, state

    def define_aliases(self, words: Sequence[str], dyn: Sequence[Tail]) -> None:
        """`alias r='rm -rf'`: remembered, so that a later `r build` is read as `rm -rf build`."""
        for word, tail in zip(words, dyn):
            name, eq, value = word.partition("=")
            if eq and name and not name.startswith("-") and "$" not in name and "`" not in name:
                self.aliases[name] = value if tail is None else None

    def expand(
        self, inv: Inv, name: str, rest: Sequence[str], rest_dyn: Sequence[Tail], env: Env, depth: int
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
        if self.calls > _MAX_CALLS or depth >= MAX_DEPTH:
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
                    text = " ".join([value, *(quote_word(w, d) for w, d in fields)])
                    ids += self.code(text, f"alias `{name}`", env, depth, shared=True)
                else:
                    group = self.functions[name]
                    if _hard_positional_use(group.body):  # `${@:2}`, `${1:-x}`: arguments not followed
                        inv.opaque = True
                    saved = {k: env[k] for k in POSITIONAL if k in env}
                    bind_positional(env, fields)
                    try:
                        ids += self.body(group, env, depth + 1)
                    finally:
                        bind_positional(env, None)
                        env.update(saved)
                inv.expanded = True
            finally:
                self.active.pop()
        return ids



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
def analyse(
    command: str | tuple[str, ...], files: _files.Files = _files.NO_FILES,
    own: _files.OwnScripts = "workspace",
) -> Analysis:
    """Cached: the same command is examined against every rule of a policy and every `never_ran` of a case.

    `files`: what the trajectory wrote before this command (see `_files`); `own`: the `own_scripts` rule."""
    start = files.as_dict()
    walker = Walker(start, own)
    try:
        if isinstance(command, str):
            script = Parser(command).parse_all()
            walker.script(script, {}, 0)
        elif len(command) == 1 and re.search(r"\s|[;&|<>$`]", command[0]):
            # an argv of one string with shell syntax in it (`["ls -la | wc"]`): tools run such strings in a shell
            walker.script(Parser(command[0]).parse_all(), {}, 0)
        else:
            walker.argv(list(command), [None] * len(command), {}, 0)
    except ParseError as exc:
        return Analysis((), {}, error=str(exc))
    except RecursionError:
        return Analysis((), {}, error="nested too deeply to follow")
    except (IndexError, KeyError, ValueError, TypeError, AttributeError) as exc:  # a guard never crashes: it fails closed
        return Analysis((), {}, error=f"could not be followed ({type(exc).__name__}: {exc})")
    return Analysis(
        tuple(walker.invs), _closure(walker.edges), nested_errors=tuple(walker.errors),
        uncertain=any(inv.uncertain for inv in walker.invs),
        files=files if walker.files == start else _files.table(walker.files),  # unchanged: the same table
    )
