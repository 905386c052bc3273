"""What a program hands over to, as its wrapper's handler says (`_wrappers`): another argv, shell code, a script
on standard input or in a file, code in another language. A mixin of `_analysis._Walker`, which supplies `argv`,
`script` and `body` (and `_walk_files._FileSteps` the files).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ._code import analyse_code, language_of
from ._expand import Env, Field, Tail
from ._inv import _basename, _Inv
from ._nodes import Group, Script
from ._syntax import Parser
from ._variables import _bind_positional
from ._walk_files import _FileSteps
from ._words import MAX_DEPTH, ParseError
from ._wrappers import _CODE_RUNNERS, _GIT_CODE_KEYS

_MAX_CODE = 1024  # pieces of shell code (`bash -c`, text piped into a shell...) followed in one line, likewise
_Action = tuple  # a handler's action (see `_wrappers`)


@dataclass(slots=True)
class _Call:
    """One program being followed: its invocation, its arguments, where it runs, and what its steps found."""

    inv: _Inv
    rest: Sequence[str]  # the words after the program
    rest_dyn: Sequence[Tail]
    env: Env
    depth: int
    guess: int  # 1 when the program is only guessed to be a shell (its name is only known at run time)
    scripts: set[str] = field(default_factory=set)  # the script files it runs (which it does not write)


class _HandOver(_FileSteps):
    """Following the actions of a program's handler, and the shell or other code it runs."""

    guessing: int
    errors: list[str]
    codes: int
    files: dict
    invs: list[_Inv]

    if TYPE_CHECKING:
        def argv(self, words: Sequence[str], dyn: Sequence[Tail], env: Env, depth: int) -> list[int]: ...

        def script(self, script: list, env: Env, depth: int) -> list[int]: ...

        def body(self, group: Group, env: Env, depth: int) -> list[int]: ...

    def hand_over(self, call: _Call, actions: Sequence[_Action]) -> list[int]:
        """Follow each action in turn; while `call.guess`, what they find is a guess (its errors do not count)."""
        ids: list[int] = []
        self.guessing += call.guess
        try:
            for action in actions:
                step = _STEPS.get(action[0])
                if step is not None:
                    ids += step(self, call, action)
        finally:
            self.guessing -= call.guess
        return ids

    def step_argv(self, call: _Call, action: _Action) -> list[int]:
        """("argv", start, end): the words[start:end] are a command line it runs."""
        return self.argv(call.rest[action[1]:action[2]], call.rest_dyn[action[1]:action[2]], call.env, call.depth)

    def step_xargv(self, call: _Call, action: _Action) -> list[int]:
        """("xargv", start, end, repl): `xargs CMD`: CMD runs with input items as (more) arguments."""
        sub, sub_dyn = list(call.rest[action[1]:action[2]]), list(call.rest_dyn[action[1]:action[2]])
        repl = action[3]
        if repl:
            sub_dyn = [("" if d is None and repl in w else d) for w, d in zip(sub, sub_dyn)]
        elif sub and (_basename(sub[0]) in _CODE_RUNNERS or language_of(_basename(sub[0]))):
            sub, sub_dyn = [*sub, "{}"], [*sub_dyn, ""]
        return self.argv(sub, sub_dyn, call.env, call.depth)

    def step_text(self, call: _Call, action: _Action) -> list[int]:
        """("text", code[, k]): it runs shell code (in a new shell whose `$@` are words[k:], given k)."""
        inv, rest, rest_dyn = call.inv, call.rest, call.rest_dyn
        code = action[1]
        if not call.guess and any(d is not None and w in code for w, d in zip(rest, rest_dyn)):
            inv.opaque = True  # `eval "$(echo rm -rf /)"`: the code itself is only known at run time
        positional = None
        if len(action) > 2:  # a new shell: `bash -c 'rm "$@"' _ -rf /` has its own `$@`
            positional = tuple(zip(rest[action[2]:], rest_dyn[action[2]:]))
        # `eval` runs in this shell: what it assigns lasts
        return self.code(code, f"shell code given to `{inv.program}`", call.env, call.depth,
                         shared=inv.program == "eval", positional=positional)

    def step_stdin(self, call: _Call, action: _Action) -> list[int]:
        """("stdin", k): a shell reading its script from standard input, with words[k:] as `$@` (None: this shell's)."""
        call.inv.stdin_shell = True
        if action[1] is not None:
            call.inv.script_args = tuple(zip(call.rest[action[1]:], call.rest_dyn[action[1]:]))
        return []

    def step_code(self, call: _Call, action: _Action) -> list[int]:
        """("code", lang, k, text): `python3 -c CODE`, `perl -e CODE`, the code given as words[k] (k < 0: several)."""
        inv, rest_dyn = call.inv, call.rest_dyn
        lang, k, code = action[1], action[2], action[3]
        hidden = any(d is not None for d in rest_dyn) if k < 0 else (k < len(rest_dyn) and rest_dyn[k] is not None)
        if not call.guess and hidden:
            inv.opaque = True
            inv.why = inv.why or f"the {lang} code it runs is only known at run time"
        return self.lang_code(inv, lang, code, call.depth)

    def step_code_stdin(self, call: _Call, action: _Action) -> list[int]:
        """("code-stdin", lang): an interpreter reading its program from standard input."""
        call.inv.stdin_shell, call.inv.stdin_lang = True, action[1]
        return []

    def step_script(self, call: _Call, action: _Action) -> list[int]:
        """("script", k) or ("script-file", lang, k): it runs the script file words[k] (or the path k, a string)."""
        inv, rest, rest_dyn = call.inv, call.rest, call.rest_dyn
        lang, k = ("sh", action[1]) if action[0] == "script" else (action[1], action[2])
        if isinstance(k, str):  # a path given in an option (`php -fx.php`, `at -f x.sh`)
            if call.guess:
                return []
            call.scripts.add(k)
            return self.run_file(inv, k, lang, (), (), call.env, call.depth)
        if k < 0 or k >= len(rest):
            return []
        if not call.guess and rest_dyn[k] is not None:
            inv.opaque = True  # `bash <(base64 -d x)`, `sh "$F"`: a script only known at run time
            if not rest[k].startswith(("<(", ">(")):  # (process substitution: shell code)
                inv.why = inv.why or f"the script it runs (`{rest[k]}`) is only known at run time"
            return []
        if call.guess:
            return []
        call.scripts.add(rest[k])
        how = "source" if inv.program in ("source", ".") else lang
        return self.run_file(inv, rest[k], how, rest[k + 1:], rest_dyn[k + 1:], call.env, call.depth)

    def step_opaque(self, call: _Call, action: _Action) -> list[int]:
        """("opaque", why): it runs something only known at run time."""
        if not call.guess:
            call.inv.opaque = True
            call.inv.why = call.inv.why or action[1]
        return []

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

    def lang_code(self, inv: _Inv, lang: str, code: str, depth: int) -> list[int]:
        """What code handed to an interpreter runs (see `_code`); what it hides makes `inv` only known at run time."""
        if self.over_budget(f"{lang} code", depth, "code inside code"):
            return []
        ids: list[int] = []
        what = f"{lang} code given to `{inv.program}`"
        if not self.guessing:
            self.code_wrote(lang, code, f"{lang} code run by `{inv.program}`")
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

    def git_config(self, inv: _Inv, env: Env, depth: int) -> list[int]:
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

    def code(
        self, text: str, what: str, env: Env, depth: int,
        shared: bool = False, positional: Sequence[tuple[str, Tail]] | None = None,
    ) -> list[int]:
        """Shell code inside a command (`bash -c`, `eval`, a here-document fed to `sh`): parse and walk it.

        `shared`: it runs in this shell (an alias), so its assignments last; `positional`: it runs in a new
        shell with these arguments as `$@`."""
        if self.over_budget(what, depth, "shell code inside shell code"):
            return []
        try:
            script = Parser(text, depth + 1).parse_all()
            own = env if shared else dict(env)
            if positional is not None:
                _bind_positional(own, positional)
            return self.script(script, own, depth + 1)
        except (ParseError, RecursionError) as exc:
            if not self.guessing:  # a guess that is not shell code (`$PY -c 'print(1)'`) was a wrong guess
                message = "nested too deeply to follow" if isinstance(exc, RecursionError) else str(exc)
                self.errors.append(f"{what}: {message}")
            return []


_STEPS: dict[str, Callable[[_HandOver, _Call, _Action], list[int]]] = {
    "argv": _HandOver.step_argv,
    "xargv": _HandOver.step_xargv,
    "text": _HandOver.step_text,
    "stdin": _HandOver.step_stdin,
    "code": _HandOver.step_code,
    "code-stdin": _HandOver.step_code_stdin,
    "script": _HandOver.step_script,
    "script-file": _HandOver.step_script,
    "opaque": _HandOver.step_opaque,
}
