"""The syntax tree of a shell command line, as typed data: words made of pieces (`Literal`, `Param`, `Dynamic`) and
the commands made of words (`Simple`, `Group`), in pipelines and scripts. `_words` reads words and `_syntax` the
grammar into these; everything after reads them with `match` or `isinstance`."""

from __future__ import annotations

import typing
from dataclasses import dataclass, field

# A word is made of pieces: literal text, a parameter (`$name`, `${name}`) whose value a variable assigned earlier in
# the line may give, or an expansion whose value is only known at run time (`$(...)`, `${x:-y}`, `$((1+2))`).


@dataclass(frozen=True, slots=True)
class Literal:
    """Text as written, its quotes removed (`quoted`: it was inside quotes or escaped, so it is not split or globbed,
    and braces in it do not expand)."""

    text: str
    quoted: bool


@dataclass(frozen=True, slots=True)
class Param:
    """`$name`, `${name}`, `$1`, `$@`, `${a[@]}`: `name` is what a known variable may resolve; `source` the text."""

    name: str
    quoted: bool
    source: str


@dataclass(frozen=True, slots=True)
class Dynamic:
    """An expansion only known at run time (`$(...)`, backticks, `${x:-y}`, `$((...))`, `<(...)`), as written."""

    source: str
    quoted: bool


Piece = Literal | Param | Dynamic


@dataclass(frozen=True, slots=True)
class Word:
    """A word keeps its pieces so that variables can be resolved later (`x=rm; $x -rf /`)."""

    pieces: tuple[Piece, ...]


def all_literal(pieces: tuple[Piece, ...]) -> typing.TypeGuard[tuple[Literal, ...]]:
    """Whether every piece is literal text (a word with nothing to expand but braces)."""
    for piece in pieces:
        if not isinstance(piece, Literal):
            return False
    return True


def literal_text(word: Word) -> str:
    """A word as written, quotes removed, expansions left as their source text (`$x`, `$(cmd)`)."""
    return "".join(p.text if isinstance(p, Literal) else p.source for p in word.pieces)


# --------------------------------------------------------------------------------------------------------------
# Syntax tree: simple commands and groups (compound commands) made of words. A pipeline is a list of stages, a
# script a list of pipelines. The parser fills a node in as it reads (redirections after a compound command), so
# nodes are mutable; nothing after the parser changes them.
# --------------------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Redirected:
    """What a command's redirections feed it and where its output goes (shared by `Simple` and `Group`)."""

    stdin_word: Word | None = None  # a here-document or here-string: the text on its standard input
    stdin_file: bool = False  # standard input comes from a file or descriptor (`< script.sh`, `<&3`)
    stdin_path: Word | None = None  # the file, for `< FILE` (not for descriptors)
    # files its standard output goes to: (target word, appends) for `> f`, `>> f`, `&> f`, `>| f`
    writes: list[tuple[Word, bool]] = field(default_factory=list)


@dataclass(slots=True)
class Simple(Redirected):
    """A simple command: words, plus what its substitutions and redirections run or feed it."""

    words: list[Word] = field(default_factory=list)
    subs: list[Script] = field(default_factory=list)  # scripts of command/process substitutions, in order
    redirections: int = 0
    # array assignments (`a=(rm -rf x)`): index of the `a=` word -> the element words
    arrays: dict[int, list[Word]] = field(default_factory=dict)


#: How variables assigned inside a group last: "" as in the shell around it (`{ ...; }`), "sub" not at all (a
#: subshell, a background job), "maybe" perhaps (if/while/for/case bodies, after `&&`/`||`): unknown after.
Scope = typing.Literal["", "sub", "maybe"]


@dataclass(slots=True)
class Group(Redirected):
    """A compound command: `( ... )`, `{ ...; }`, if/while/for/case bodies, a function body."""

    body: Script = field(default_factory=list)
    subs: list[Script] = field(default_factory=list)
    name: str | None = None  # a function definition's name (`f() { ...; }`, `function f { ...; }`)
    scope: Scope = ""
    assigns: tuple[str, ...] = ()  # variables it sets itself (a `for` loop's name): only known at run time


Stage = Simple | Group
Pipeline = list[Stage]
Script = list[Pipeline]
