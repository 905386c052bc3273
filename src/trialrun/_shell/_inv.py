"""The analysis's data: one program a command line runs (`Inv`) and the result of analysing a line (`Analysis`),
with the small helpers that display them. Apart from the walker so that its file steps (`_walk_files`) use them too."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ._expand import Tail, Value, expand_word
from ._files import NO_FILES, Files
from ._nodes import Word
from ._options import Args, normalise_args


@dataclass(slots=True)
class Inv:
    program: str  # basename of the program word (`/usr/bin/rm` -> `rm`)
    args: tuple[str, ...]
    words: Sequence[str]  # the command from its program on
    dyn: Sequence[Tail]  # per word: None when known, else what it is sure to end with (see `expand_word`)
    leaf: bool = True  # not a wrapper that handed over to another command
    stdin_shell: bool = False  # a shell that reads its script from standard input
    # The program's name is only known at run time (`$CMD`, `$(which rm)`, `r$()m`): what it is sure to end
    # with ("" when nothing is known). None when the name is known (also `$DIR/rm`: only the folder is unknown).
    unknown: str | None = None
    opaque: bool = False  # it runs shell code only known at run time (`eval "$X"`, `bash -c "$(cat x)"`)
    guessed: bool = False  # seen only by guessing that a program only known at run time is a shell
    fed: bool = False  # a stdin shell whose input has been accounted for (a pipe, a here-document, `< file`)
    expanded: bool = False  # a call of a function or alias defined in the line, whose body was followed too
    script_args: tuple[tuple[str, Tail], ...] | None = None  # a stdin shell's `$@` (`sh -s -rf x`), when given
    glob: bool = False  # the program word is a glob (`/bin/r?`): it runs whatever program the glob expands to
    why: str | None = None  # why what it runs is only known at run time (for `opaque`), in words
    stdin_lang: str | None = None  # an interpreter reading its program from standard input (`python3 -`)
    renamed: str | None = None  # the path it was run by, a copy of or link to `program` (`./x` after `ln -s /bin/rm x`)
    made: frozenset[str] = frozenset()  # the variables holding a value made at run time here (`F=$(echo -rf)`)

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
        return " ".join(quote_word(w, d) for w, d in zip(self.words, self.dyn))

    def normalised(self) -> Args:
        return normalise_args(self.program, self.args)


@dataclass(frozen=True, slots=True)
class Analysis:
    invs: tuple[Inv, ...]
    feeds: Mapping[int, frozenset[int]]  # invocation index -> indexes it feeds, directly or not
    error: str | None = None  # the command line itself could not be parsed
    nested_errors: tuple[str, ...] = ()  # shell code inside it (`bash -c '...'`) could not be parsed
    uncertain: bool = False  # some invocation is only known at run time (see `Inv.uncertain`)
    files: Files = NO_FILES  # the files the trajectory wrote, after this line ran (see `_files`)


_SAFE_WORD_RE = re.compile(r"[\w@%+=:,./{}-]+")


def quote_word(text: str, dynamic: Tail = None) -> str:
    if _SAFE_WORD_RE.fullmatch(text):
        return text
    if dynamic is not None:
        return '"' + text.replace('"', '\\"') + '"'
    return shlex.quote(text)


def basename(program: str) -> str:
    base = program.rstrip("/").rsplit("/", 1)[-1]
    return base or program



def word_text(word: Word, env: Mapping[str, Value]) -> tuple[str, bool]:
    """A word expanded as one string (a here-document's text), and whether all of it is known."""
    fields = expand_word(word, env, split=False)
    text, tail = fields[0] if fields else ("", None)
    return text, tail is None
