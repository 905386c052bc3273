"""Word expansion, the static part: what a word of the syntax tree becomes once braces, known variables,
`$IFS` splitting and quotes are dealt with, keeping track of what is only known at run time."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping

from ._nodes import Dynamic, Literal, Param, Word, all_literal
from ._words import ParseError

# --------------------------------------------------------------------------------------------------------------
# Word expansion (the static part of it): brace expansion, known variables, `$IFS` splitting, quote removal.
# --------------------------------------------------------------------------------------------------------------

_LB, _COMMA, _RB = "\ue000", "\ue001", "\ue002"
#: What is known of a field: None when all of it is; else the text it is sure to end with (see `expand_word`).
Tail = str | None
#: A field a word expands to: its text (unknown parts as their source text) and its tail.
Field = tuple[str, Tail]
#: A value in a variable table: a variable's text; the fields of "$@" (key "@") or of an array (key "a[@]"); or,
#: under the keys `_variables` keeps beside the variables (they start with "\0"), the current folder (a path, or
#: None: unknown), the names holding values made at run time, and whether a nameref was declared.
Value = str | tuple[Field, ...] | frozenset[str] | bool | None
#: The variables known at a point of the walk, by name (see `Value`).
Env = dict[str, Value]
_IFS_DEFAULT = " \t\n"
_BRACE_LIMIT = 2000
# `$(which rm)`, `$(command -v rm)`, `` `type -P rm` ``: a path only known at run time, but one that ends in /rm
_WHICH_RE = re.compile(r"(?:\$\(|`)\s*(?:which|command\s+-v|type\s+-[Pp])\s+([\w.+-]+)\s*(?:\)|`)")


def text_of(env: Mapping[str, Value], name: str) -> str | None:
    """The text a variable holds, or None when it is not known (or is an array's fields)."""
    value = env.get(name)
    return value if isinstance(value, str) else None


def fields_of(env: Mapping[str, Value], name: str) -> tuple[Field, ...] | None:
    """The fields of "$@" or of an array (`name` "@" or "a[@]"), or None when they are not known."""
    value = env.get(name)
    return value if isinstance(value, tuple) else None


def expand_word(word: Word, env: Mapping[str, Value], split: bool = True) -> list[Field]:
    """The fields a word becomes, each as (text, tail). Unknown expansions stay as their source text.

    `tail` is None for a field known when the command is parsed; for a field only known at run time it is the
    literal text after its last unknown part (`r$()m` -> "m", `$DIR/rm` -> "/rm", `$X` -> ""): all that is
    sure about the value is that it ends with it.
    """
    pieces = word.pieces
    first = pieces[0] if len(pieces) == 1 else None
    if isinstance(first, Literal) and (first.quoted or "{" not in first.text):
        return [(first.text, None)]
    if all_literal(pieces):
        if split and any(not p.quoted and "{" in p.text for p in pieces):
            marked = "".join(
                p.text if p.quoted else p.text.replace("{", _LB).replace(",", _COMMA).replace("}", _RB)
                for p in pieces
            )
            return [(_unmark(t), None) for t in _brace(marked, [_BRACE_LIMIT])]
        return [("".join(p.text for p in pieces), None)]
    fields = _Fields()
    ifs = text_of(env, "IFS")
    ifs = _IFS_DEFAULT if ifs is None else ifs
    for piece in pieces:
        match piece:
            case Literal(text):
                fields.add(text)
            case Param(name, quoted, source):
                args = fields_of(env, name) if name == "@" or name.endswith("[@]") else None
                value = text_of(env, name)
                if args is not None:
                    _each_parameter(fields, quoted, source, args, split, ifs)
                elif value is not None or name == "IFS":
                    value = _IFS_DEFAULT if value is None else value
                    if quoted or not split:
                        fields.add(value)
                    else:
                        fields.spread(_split_ifs(value, ifs), keep_empty=False)
                else:  # unknown at this point: keep the source text
                    fields.unknown(source, [])
            case Dynamic(source):
                which = _WHICH_RE.fullmatch(source)
                fields.unknown(source, ["/" + which.group(1)] if which else [])
    return fields.finish()


class _Fields:
    """The fields a word expands to, built piece by piece: the current field's text and, once some part of it is
    only known at run time, the known text after that part (its tail)."""

    __slots__ = ("cur", "done", "started", "tail")

    def __init__(self) -> None:
        self.done: list[Field] = []
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

    def finish(self) -> list[Field]:
        self.next_field()
        return self.done


def _each_parameter(
    fields: _Fields, quoted: bool, source: str, args: tuple[Field, ...], split: bool, ifs: str
) -> None:
    """"$@" (or "${a[@]}"): one field per parameter (split further when unquoted), known ones by value; where
    words are not split (assignments, here-documents) the parameters joined by spaces."""
    if not split:
        if all(t is None for _, t in args):
            fields.add(" ".join(text for text, _ in args))
        else:
            fields.unknown(source, [])
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
        raise ParseError("brace expansion too large to follow")
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
