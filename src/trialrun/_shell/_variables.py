"""The shell's variables as the analysis follows them: assignments, arrays, positional parameters, and where a
value stops being sure (a subshell, an `if`, `read`, a nameref)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._expand import Env, Field, Tail
from ._syntax import ASSIGN_RE

POSITIONAL = ("@", "*", "#", "1", "2", "3", "4", "5", "6", "7", "8", "9")


def bind_positional(env: Env, fields: Sequence[Field] | None) -> None:
    """Set `$1`..`$9`, `$#`, `$*` and `$@` to `fields` (None: they are only known at run time)."""
    for key in POSITIONAL:
        env.pop(key, None)
    if fields is None:
        return
    fields = tuple(fields)
    env["@"] = fields
    env["#"] = str(len(fields))
    if all(tail is None for _, tail in fields):
        env["*"] = " ".join(text for text, _ in fields)
    for k in range(9):
        if k >= len(fields):
            env[str(k + 1)] = ""  # unset: expands to nothing
        elif fields[k][1] is None:
            env[str(k + 1)] = fields[k][0]


_ASSIGNERS = frozenset({"export", "declare", "typeset", "local", "readonly", "read", "mapfile", "readarray", "printf"})
NAMEREF = "\0nameref"  # set in a variable table once `declare -n` made any name a reference to any other
CWD = "\0cwd"  # the folder the line is in, relative to where it started (None: unknown), kept with the variables
MADE = "\0made"  # the names whose value a command or an expansion made at run time (`F=$(echo -rf)`)
_MADE_AT_RUN_TIME = re.compile(r"\$\(|`|\$\{[^}]*?[:]?[-=+?]")
#: Substitutions whose output is a path, never an option: `$(mktemp)`, `$(pwd)`, `$(realpath x)`
_PATH_PRINTER = re.compile(r"\$\((?:mktemp|pwd|realpath)\b[^()`$;|&]*\)|`(?:mktemp|pwd|realpath)\b[^()`$;|&]*`")


def made_at_run_time(text: str) -> bool:
    """Text made at run time by a command (`$(...)`, backticks) or by an expansion with a value of its own
    (`${OPTS:--rf}`, `${X-...}`, `${X:=...}`): what can hand a command options it does not show. A substitution
    of a command that prints a path (`$(mktemp)`, `$(pwd)`) is not."""
    return bool(_MADE_AT_RUN_TIME.search(_PATH_PRINTER.sub("", text)))


def cwd_of(env: Env) -> str | None:
    """The folder the line is in, relative to where it started ("": there), or None when only known at run time."""
    cwd = env.get(CWD, "")
    return cwd if isinstance(cwd, str) else None


def made_names(env: Env) -> frozenset[str]:
    """The names whose value a command or an expansion made at run time (see `note_made`)."""
    made = env.get(MADE)
    return made if isinstance(made, frozenset) else frozenset()


def note_made(env: Env, name: str, value: str, run_time: bool) -> None:
    """Remember whether `name` now holds a value made at run time (`made_at_run_time`), for `rm $F` later."""
    made = set(made_names(env))
    if run_time and made_at_run_time(value):
        made.add(name)
    else:
        made.discard(name)
    if made:
        env[MADE] = frozenset(made)
    else:
        env.pop(MADE, None)




def drop(env: Env, base: str) -> None:
    for key in [k for k in env if k == base or k.startswith(base + "[")]:
        del env[key]


def set_variable(env: Env, name: str, value: str | None) -> None:
    """Assign a variable; None: to a value only known at run time. `a[1]=x` sets one element of an array."""
    if env.get(NAMEREF):  # after `declare -n`, an assignment may change any variable: nothing is known any more
        value = None
    base, bracket, index = name.partition("[")
    if bracket:
        index = index.rstrip("]")
        known = {k: v for k, v in env.items() if k.startswith(base + "[") and k[len(base) + 1:-1].isdigit()}
        drop(env, base)
        if index.isdigit():
            env.update(known)
            if value is not None:
                env[f"{base}[{index}]"] = value
                if index == "0":
                    env[base] = value
            else:
                env.pop(f"{base}[{index}]", None)
        return
    drop(env, base)  # `a=x` on an array sets `a[0]` only: the rest is not followed
    if value is not None:
        env[name] = value


def set_array(env: Env, name: str, fields: Sequence[Field] | None, append: bool = False) -> None:
    """`a=(rm -rf x)`: `${a[@]}` are the fields, `${a[0]}` (and `$a`) the first; None: only known at run time."""
    if env.get(NAMEREF):
        fields = None
    if append:
        before = env.get(name + "[@]")
        fields = [*before, *fields] if isinstance(before, tuple) and fields is not None else None
    drop(env, name)
    if fields is None:
        return
    env[name + "[@]"] = tuple(fields)
    if all(tail is None for _, tail in fields):
        env[name + "[*]"] = " ".join(text for text, _ in fields)
    for k, (text, tail) in enumerate(fields):
        if tail is None:
            env[f"{name}[{k}]"] = text
            if k == 0:
                env[name] = text


def merge_maybe(env: Env, inner: Env) -> None:
    """Variables changed where the change may or may not happen (an `if`, after `&&`) are unknown afterwards."""
    if inner.get(NAMEREF) and not env.get(NAMEREF):
        for key in [k for k in env if k not in POSITIONAL]:
            del env[key]
        env[NAMEREF] = True
        return
    made = made_names(env) | made_names(inner)  # made on either path: made
    for key in set(env) | set(inner):
        if key not in POSITIONAL and env.get(key) != inner.get(key):
            env.pop(key, None)
            if key == CWD:
                env[CWD] = None  # `if ...; then cd x; fi`: somewhere only known at run time
    if made:
        env[MADE] = made


def names_only_known_at_run_time(program: str, args: Sequence[str], dyn: Sequence[Tail]) -> bool:
    """`export $(cat .env)`, `read "$name"`, `printf -v "$n" ...`: a builtin assigning to names only known at run
    time (`export X="$Y"` is not: only the value is unknown)."""
    if program not in _ASSIGNERS:
        return False
    if program == "printf":
        if not args or not args[0].startswith("-v"):
            return False
        return dyn[0] is not None or (args[0] == "-v" and len(dyn) > 1 and dyn[1] is not None)
    return any(
        tail is not None and not (ASSIGN_RE.match(word) and "=" not in tail) for word, tail in zip(args, dyn)
    )


def reposition(words: Sequence[str], dyn: Sequence[Tail], env: Env) -> None:
    """`set -- a b` and `shift [n]` change the positional parameters that later `$1`, `$@` expand to."""
    if words[0] == "shift":
        current = env.get("@")
        if not isinstance(current, tuple):
            return  # not known before: not known after
        count = words[1] if len(words) > 1 else "1"
        if len(words) > 1 and (dyn[1] is not None or not count.isdigit()):
            bind_positional(env, None)  # `shift $n`: what is left is only known at run time
        elif int(count) <= len(current):
            bind_positional(env, current[int(count):])
        return
    i = 1
    while i < len(words):
        word = words[i]
        if word == "--" or (word == "-" and dyn[i] is None):
            i += 1
            break
        if dyn[i] is None and len(word) > 1 and word[0] in "-+":
            i += 2 if word[1:] == "o" else 1  # `set -o pipefail`, `set -eu`
            continue
        break
    else:
        return  # options only (`set -e`): the positional parameters stay
    bind_positional(env, tuple(zip(words[i:], dyn[i:])))
