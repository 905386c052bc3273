"""What a program hands over to, as its wrapper's handler says (`_wrappers`): another argv, shell code, a script
on standard input or in a file, code in another language. A mixin of `_analysis._Walker`, which supplies `argv`,
`script` and `body` (and `_walk_files._FileSteps` the files).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import _files
from ._actions import (
    Action,
    FeedsShell,
    Opaque,
    ReadsCode,
    ReadsStdin,
    RunArgv,
    RunCode,
    RunEachItem,
    RunScript,
    RunText,
    RunWords,
)
from ._code import analyse_code, language_of
from ._expand import Env, Field, Tail
from ._inv import Inv, basename
from ._nodes import Group, Script
from ._syntax import Parser
from ._variables import bind_positional
from ._walk_files import FileSteps
from ._words import MAX_DEPTH, ParseError
from ._wrappers import CODE_RUNNERS, GIT_CODE_KEYS

#: Where bash and POSIX sh (dash) read shell code apart: `$'...'`, `$"..."`, `[[`, `((`.
_READ_APART = re.compile(r"\$['\"]|\[\[|\(\(")
#: The shells that may be a POSIX sh other than bash (Debian's and Ubuntu's `sh` is dash).
SH_SHELLS = frozenset({"sh", "dash", "ash", "posh"})
_MAX_CODE = 1024  # pieces of shell code (`bash -c`, text piped into a shell...) followed in one line, likewise


@dataclass(slots=True)
class Call:
    """One program being followed: its invocation, its arguments, where it runs, and what its steps found."""

    inv: Inv
    rest: Sequence[str]  # the words after the program
    rest_dyn: Sequence[Tail]
    env: Env
    depth: int
    guess: int  # 1 when the program is only guessed to be a shell (its name is only known at run time)
    scripts: set[str] = field(default_factory=set)  # the script files it runs (which it does not write)


class HandOver(FileSteps):
    """Following the actions of a program's handler, and the shell or other code it runs."""

    guessing: int
    in_sh: int  # > 0 while walking POSIX sh's reading of some code (an `eval` in it is read that way too)
    errors: list[str]
    codes: int
    files: _files.Table
    invs: list[Inv]

    if TYPE_CHECKING:
        def argv(self, words: Sequence[str], dyn: Sequence[Tail], env: Env, depth: int) -> list[int]: ...

        def script(self, script: Script, env: Env, depth: int) -> list[int]: ...

        def body(self, group: Group, env: Env, depth: int) -> list[int]: ...

    def hand_over(self, call: Call, actions: Sequence[Action]) -> list[int]:
        """Follow each action in turn; while `call.guess`, what they find is a guess (its errors do not count)."""
        ids: list[int] = []
        self.guessing += call.guess
        try:
            for action in actions:
                ids += self.step(call, action)
        finally:
            self.guessing -= call.guess
        return ids

    def step(self, call: Call, action: Action) -> list[int]:
        """What one action of a program's handler (see `_actions`) runs."""
        inv, rest, rest_dyn = call.inv, call.rest, call.rest_dyn
        match action:
            case RunArgv(start, end):
                return self.argv(rest[start:end], rest_dyn[start:end], call.env, call.depth)
            case RunEachItem(start, end, repl):
                return self.each_item(call, start, end, repl)
            case RunText(code, args_from):
                return self.run_text(call, code, args_from)
            case ReadsStdin(args_from):
                inv.stdin_shell = True
                if args_from is not None:
                    inv.script_args = tuple(zip(rest[args_from:], rest_dyn[args_from:]))
                return []
            case RunCode(lang, at, code):
                hidden = any(d is not None for d in rest_dyn) if at < 0 else (
                    at < len(rest_dyn) and rest_dyn[at] is not None)
                if not call.guess and hidden:
                    inv.opaque = True
                    inv.why = inv.why or f"the {lang} code it runs is only known at run time"
                return self.lang_code(inv, lang, code, call.depth)
            case ReadsCode(lang):
                inv.stdin_shell, inv.stdin_lang = True, lang
                return []
            case RunScript(at, lang):
                return self.run_script(call, at, lang)
            case Opaque(why):
                if not call.guess:
                    inv.opaque = True
                    inv.why = inv.why or why
                return []

    def each_item(self, call: Call, start: int, end: int, repl: str | None) -> list[int]:
        """`xargs CMD`: CMD runs with input items as (more) arguments, or in place of `repl`."""
        sub, sub_dyn = list(call.rest[start:end]), list(call.rest_dyn[start:end])
        if repl:
            sub_dyn = [("" if d is None and repl in w else d) for w, d in zip(sub, sub_dyn)]
        elif sub and (basename(sub[0]) in CODE_RUNNERS or language_of(basename(sub[0]))):
            sub, sub_dyn = [*sub, "{}"], [*sub_dyn, ""]
        return self.argv(sub, sub_dyn, call.env, call.depth)

    def run_text(self, call: Call, code: str, args_from: int | None) -> list[int]:
        """It runs shell code (in a new shell whose `$@` are words[args_from:], when given)."""
        inv, rest, rest_dyn = call.inv, call.rest, call.rest_dyn
        if not call.guess and any(d is not None and w in code for w, d in zip(rest, rest_dyn)):
            inv.opaque = True  # `eval "$(echo rm -rf /)"`: the code itself is only known at run time
        positional = None
        if args_from is not None:  # a new shell: `bash -c 'rm "$@"' _ -rf /` has its own `$@`
            positional = tuple(zip(rest[args_from:], rest_dyn[args_from:]))
        # `eval` runs in this shell: what it assigns lasts
        return self.code(code, f"shell code given to `{inv.program}`", call.env, call.depth,
                         shared=inv.program == "eval", positional=positional, sh=inv.program in SH_SHELLS)

    def run_script(self, call: Call, at: int | str, lang: str) -> list[int]:
        """It runs the script file words[at] (or the path `at`, a string) as `lang`."""
        inv, rest, rest_dyn = call.inv, call.rest, call.rest_dyn
        if isinstance(at, str):  # a path given in an option (`php -fx.php`, `at -f x.sh`)
            if call.guess:
                return []
            call.scripts.add(at)
            return self.run_file(inv, at, lang, (), (), call.env, call.depth)
        if at < 0 or at >= len(rest):
            return []
        if not call.guess and rest_dyn[at] is not None:
            inv.opaque = True  # `bash <(base64 -d x)`, `sh "$F"`: a script only known at run time
            if not rest[at].startswith(("<(", ">(")):  # (process substitution: shell code)
                inv.why = inv.why or f"the script it runs (`{rest[at]}`) is only known at run time"
            return []
        if call.guess:
            return []
        call.scripts.add(rest[at])
        how = "source" if inv.program in ("source", ".") else lang
        return self.run_file(inv, rest[at], how, rest[at + 1:], rest_dyn[at + 1:], call.env, call.depth)

    # -- code in other languages, shell code, git's configuration -------------------------------------------------

    def over_budget(self, what: str, depth: int, inside: str) -> bool:
        """Whether code is nested too deeply, or there is too much `inside` other code, to follow: the line then
        fails closed (an error), instead of taking unbounded time."""
        if depth >= MAX_DEPTH:
            if not self.guessing:
                self.errors.append(f"{what} is nested too deeply to follow")
            return True
        self.codes += 1
        if self.codes > _MAX_CODE:
            if self.codes == _MAX_CODE + 1:
                self.errors.append(f"{what}: too much {inside} to follow")
            return True
        return False

    def lang_code(self, inv: Inv, lang: str, code: str, depth: int) -> list[int]:
        """What code handed to an interpreter runs (see `_code`); what it hides makes `inv` only known at run time."""
        if self.over_budget(f"{lang} code", depth, "code inside code"):
            return []
        ids: list[int] = []
        what = f"{lang} code given to `{inv.program}`"
        if not self.guessing:
            self.code_wrote(lang, code, f"{lang} code run by `{inv.program}`")
        for action in analyse_code(lang, code):
            match action:
                case RunText(text):
                    ids += self.code(text, what, {}, depth, positional=())
                case RunWords(words):
                    ids += self.argv([w for w, _ in words], [d for _, d in words], {}, depth + 1)
                case FeedsShell(text):  # awk's `print ... | "sh"`: a command reading text only known at run time
                    fed = self.code(text, what, {}, depth, positional=())
                    self.feed(fed, None, False, "", {}, depth)
                    ids += fed
                case Opaque(why) if not self.guessing:
                    inv.opaque = True
                    inv.why = inv.why or why
        return ids

    def git_config(self, inv: Inv, env: Env, depth: int) -> list[int]:
        """`git config alias.x '!rm -rf b'` is remembered (as a file would be: it outlives the command), and a later
        `git x`, or any git command once a pager, editor or ssh command was set, runs it."""
        args = list(inv.args)
        if "config" in args:
            rest = [a for a in args[args.index("config") + 1:] if not a.startswith("-")]
            if len(rest) >= 2:
                key = rest[0].lower()
                if key.startswith("alias.") or GIT_CODE_KEYS.fullmatch(key):
                    self.files["\0git " + key] = _files.Text((" ".join(rest[1:]),))
            return []
        sub = next((a for a in args if not a.startswith("-")), "")
        ids: list[int] = []
        for key, state in list(self.files.items()):
            if not key.startswith("\0git ") or not isinstance(state, _files.Text):
                continue
            name = key[5:]
            if name.startswith("alias.") and name[6:] != sub.lower():
                continue
            value = state.texts[0]
            if name.startswith("alias.") and not value.startswith("!"):
                value = "git " + value
            ids += self.code(value.lstrip("!"), f"git configuration `{name}`", env, depth)
        return ids

    def code(
        self, text: str, what: str, env: Env, depth: int,
        shared: bool = False, positional: Sequence[Field] | None = None, sh: bool = False,
    ) -> list[int]:
        """Shell code inside a command (`bash -c`, `eval`, a here-document fed to `sh`): parse and walk it.

        `shared`: it runs in this shell (an alias), so its assignments last; `positional`: it runs in a new
        shell with these arguments as `$@`; `sh`: a POSIX sh runs it (`sh -c`, `| dash`), which may be bash or
        dash: where the two read it differently (`$'...'`, `[[ ]]`, `(( ))`), what dash's reading runs is followed
        too (`sh -c "[[ x || rm -rf y ]]"` runs rm in dash, nothing in bash). A reading dash cannot parse is no
        error: bash's reading decides that."""
        if self.over_budget(what, depth, "shell code inside shell code"):
            return []
        try:
            script = Parser(text, depth + 1).parse_all()
            own = env if shared else dict(env)
            if positional is not None:
                bind_positional(own, positional)
            ids = self.script(script, own, depth + 1)
        except (ParseError, RecursionError) as exc:
            if not self.guessing:  # a guess that is not shell code (`$PY -c 'print(1)'`) was a wrong guess
                message = "nested too deeply to follow" if isinstance(exc, RecursionError) else str(exc)
                self.errors.append(f"{what}: {message}")
            ids = []
        if (sh or self.in_sh) and _READ_APART.search(text):
            ids += self.sh_reading(text, env if shared else dict(env), depth, positional)
        return ids

    def sh_reading(self, text: str, env: Env, depth: int, positional: Sequence[Field] | None) -> list[int]:
        """What POSIX sh's (dash's) reading of shell code runs (see `code`)."""
        try:
            script = Parser(text, depth + 1, posix=True).parse_all()
        except (ParseError, RecursionError):
            return []
        if positional is not None:
            bind_positional(env, positional)
        self.in_sh += 1
        try:
            return self.script(script, env, depth + 1)
        finally:
            self.in_sh -= 1
