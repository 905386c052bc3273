"""Word expansion, the static part: what a word of the syntax tree becomes once braces, known variables,
`$IFS` splitting and quotes are dealt with, keeping track of what is only known at run time."""

from __future__ import annotations

import itertools
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
    fields = _Fields()
    ifs = env.get("IFS", _IFS_DEFAULT)
    for p in pieces:
        kind = p[0]
        if kind == "L":
            fields.add(p[1])
        elif kind == "P" and (p[1] == "@" or p[1].endswith("[@]")) and isinstance(env.get(p[1]), tuple):
            _each_parameter(fields, p, env[p[1]], split, ifs)
        elif kind == "P" and (p[1] in env or p[1] == "IFS"):
            value = env.get(p[1], _IFS_DEFAULT)
            if p[2] or not split:
                fields.add(value)
            else:
                fields.spread(_split_ifs(value, ifs), keep_empty=False)
        else:  # unknown at this point: keep the source text
            which = _WHICH_RE.fullmatch(p[1]) if kind == "D" else None
            fields.unknown(p[-1] if kind == "P" else p[1], ["/" + which.group(1)] if which else [])
    return fields.finish()


class _Fields:
    """The fields a word expands to, built piece by piece: the current field's text and, once some part of it is
    only known at run time, the known text after that part (its tail)."""

    __slots__ = ("cur", "done", "started", "tail")

    def __init__(self) -> None:
        self.done: list[tuple[str, _Dyn]] = []
        self.cur: list[str] = []
        self.started = False
        self.tail: list[str] | None = None  # known text since the field's last unknown part (None: nothing unknown yet)

    def add(self, text: str) -> None:
        """Known text, in the current field."""
        self.cur.append(text)
        if self.tail is not None:
            self.tail.append(text)
        self.started = True

    def unknown(self, source: str, tail: list[str]) -> None:
        """A part only known at run time (its source text stands for it), sure to end with `tail`."""
        self.cur.append(source)
        self.tail = tail
        self.started = True

    def next_field(self) -> None:
        """A field boundary (from splitting): the current field, if any, is complete."""
        if self.started:
            self.done.append(("".join(self.cur), None if self.tail is None else "".join(self.tail)))
            self.cur, self.started, self.tail = [], False, None

    def spread(self, parts: list[str], keep_empty: bool) -> None:
        """Split text: the first part joins the current field, each other one starts a field."""
        for k, part in enumerate(parts):
            if k:
                self.next_field()
            if part or keep_empty:
                self.add(part)

    def finish(self) -> list[tuple[str, _Dyn]]:
        self.next_field()
        return self.done


def _each_parameter(
    fields: _Fields, piece: tuple, args: tuple[tuple[str, _Dyn], ...], split: bool, ifs: str
) -> None:
    """"$@" (or "${a[@]}"): one field per parameter (split further when unquoted), known ones by value; where
    words are not split (assignments, here-documents) the parameters joined by spaces."""
    quoted = piece[2]
    if not split:
        if all(t is None for _, t in args):
            fields.add(" ".join(text for text, _ in args))
        else:
            fields.unknown(piece[-1], [])
        return
    for k, (text, arg_tail) in enumerate(args):
        if k:
            fields.next_field()
        if arg_tail is not None:
            fields.unknown(text, [arg_tail])
        else:
            fields.spread([text] if quoted else _split_ifs(text, ifs), keep_empty=quoted)


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
            for a, b in itertools.pairwise(bounds):
                for alt in _brace(text[a + 1:b], budget):
                    out.extend(_brace(prefix + alt + suffix, budget))
            return out
        start = text.find(_LB, start + 1)
    return [text]


def _unmark(text: str) -> str:
    return text.replace(_LB, "{").replace(_COMMA, ",").replace(_RB, "}")
