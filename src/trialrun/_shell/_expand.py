"""Word expansion, the static part: what a word of the syntax tree becomes once braces, known variables,
`$IFS` splitting and quotes are dealt with, keeping track of what is only known at run time."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ._words import _ParseError, _Word

# --------------------------------------------------------------------------------------------------------------
# Word expansion (the static part of it): brace expansion, known variables, `$IFS` splitting, quote removal.
# --------------------------------------------------------------------------------------------------------------

_LB, _COMMA, _RB = "\ue000", "\ue001", "\ue002"
# What is known of a word: None when all of it is; else the text it is sure to end with (see `_expand_word`).
_Dyn = str | None
_IFS_DEFAULT = " \t\n"
_BRACE_LIMIT = 2000
# `$(which rm)`, `$(command -v rm)`, `` `type -P rm` ``: a path only known at run time, but one that ends in /rm
_WHICH_RE = re.compile(r"(?:\$\(|`)\s*(?:which|command\s+-v|type\s+-[Pp])\s+([\w.+-]+)\s*(?:\)|`)")


def _expand_word(word: _Word, env: Mapping[str, Any], split: bool = True) -> list[tuple[str, _Dyn]]:
    """The fields a word becomes, each as (text, tail). Unknown expansions stay as their source text.

    `tail` is None for a field known when the command is parsed; for a field only known at run time it is the
    literal text after its last unknown part (`r$()m` -> "m", `$DIR/rm` -> "/rm", `$X` -> ""): all that is
    sure about the value is that it ends with it.
    """
    pieces = word.pieces
    if len(pieces) == 1 and pieces[0][0] == "L":
        p = pieces[0]
        if p[2] or "{" not in p[1]:
            return [(p[1], None)]
    if all(p[0] == "L" for p in pieces):
        if split and any(not p[2] and "{" in p[1] for p in pieces):
            marked = "".join(
                p[1] if p[2] else p[1].replace("{", _LB).replace(",", _COMMA).replace("}", _RB) for p in pieces
            )
            return [(_unmark(t), None) for t in _brace(marked, [_BRACE_LIMIT])]
        return [("".join(p[1] for p in pieces), None)]
    fields: list[tuple[str, _Dyn]] = []
    cur: list[str] = []
    started = False
    tail: list[str] | None = None  # known text since the field's last unknown part (None: nothing unknown yet)
    ifs = env.get("IFS", _IFS_DEFAULT)
    for p in pieces:
        kind = p[0]
        if kind == "L":
            cur.append(p[1])
            if tail is not None:
                tail.append(p[1])
            started = True
            continue
        if kind == "P" and (p[1] == "@" or p[1].endswith("[@]")) and isinstance(env.get(p[1]), tuple):
            # "$@": one field per positional parameter (split further when unquoted); known ones by value
            args: tuple[tuple[str, _Dyn], ...] = env[p[1]]
            if not split:  # assignments, here-documents: the parameters joined by spaces
                if all(t is None for _, t in args):
                    cur.append(" ".join(text for text, _ in args))
                    if tail is not None:
                        tail.append(cur[-1])
                else:
                    cur.append(p[-1])
                    tail = []
                started = True
                continue
            for k, (text, arg_tail) in enumerate(args):
                if k and started:
                    fields.append(("".join(cur), None if tail is None else "".join(tail)))
                    cur, started, tail = [], False, None
                if arg_tail is not None:
                    cur.append(text)
                    tail, started = [arg_tail], True
                    continue
                for j, part in enumerate([text] if p[2] else _split_ifs(text, ifs)):
                    if j and started:
                        fields.append(("".join(cur), None if tail is None else "".join(tail)))
                        cur, started, tail = [], False, None
                    if part or p[2]:
                        cur.append(part)
                        if tail is not None:
                            tail.append(part)
                        started = True
            continue
        if kind == "P" and (p[1] in env or p[1] == "IFS"):
            value = env[p[1]] if p[1] in env else _IFS_DEFAULT
            if p[2] or not split:
                cur.append(value)
                if tail is not None:
                    tail.append(value)
                started = True
                continue
            parts = _split_ifs(value, ifs)
            for k, part in enumerate(parts):
                if k and started:
                    fields.append(("".join(cur), None if tail is None else "".join(tail)))
                    cur, started, tail = [], False, None
                if part:
                    cur.append(part)
                    if tail is not None:
                        tail.append(part)
                    started = True
            continue
        cur.append(p[-1] if kind == "P" else p[1])  # unknown at this point: keep the source text
        started = True
        which = _WHICH_RE.fullmatch(p[1]) if kind == "D" else None
        tail = ["/" + which.group(1)] if which else []
    if started:
        fields.append(("".join(cur), None if tail is None else "".join(tail)))
    return fields


def _split_ifs(value: str, ifs: str) -> list[str]:
    if not ifs:
        return [value]
    return re.split("[" + re.escape(ifs) + "]+", value)


def _brace(text: str, budget: list[int]) -> list[str]:
    """Bash brace expansion over marked braces/commas: `{rm,-rf}` -> rm -rf (as separate words).

    `budget` bounds the words made, so that `{a,b}{a,b}...` cannot blow up on the hot path.
    """
    budget[0] -= 1
    if budget[0] < 0:
        raise _ParseError("brace expansion too large to follow")
    start = text.find(_LB)
    while start >= 0:
        depth, commas, j = 0, [], start
        for j in range(start, len(text)):
            ch = text[j]
            if ch == _LB:
                depth += 1
            elif ch == _RB:
                depth -= 1
                if depth == 0:
                    break
            elif ch == _COMMA and depth == 1:
                commas.append(j)
        else:
            return [text]
        if commas:
            prefix, suffix = text[:start], text[j + 1:]
            bounds = [start, *commas, j]
            out: list[str] = []
            for a, b in zip(bounds, bounds[1:]):
                for alt in _brace(text[a + 1:b], budget):
                    out.extend(_brace(prefix + alt + suffix, budget))
            return out
        start = text.find(_LB, start + 1)
    return [text]


def _unmark(text: str) -> str:
    return text.replace(_LB, "{").replace(_COMMA, ",").replace(_RB, "}")
