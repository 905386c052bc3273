"""What a program hands over to, as typed data: the actions a wrapper's or an interpreter's handler finds in its
arguments (`_wrappers`, `_interpreters`: "the words after `sudo` are a command it runs") and those code in another
language shows (`_code`: "this Python runs `rm -rf x`"). The walker (`_handover`) follows each with `match`.

Word positions (`start`, `at`, `args_from`) index the words after the program's name."""

from __future__ import annotations

from dataclasses import dataclass

from ._expand import Field


@dataclass(frozen=True, slots=True)
class RunArgv:
    """The words[start:end] are a command line it runs (`sudo rm -rf x`, `env A=1 rm`)."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class RunEachItem:
    """`xargs CMD`: the words[start:end] run once per input item, an item as more arguments or, where `repl` (`{}`)
    is given, in place of `repl`."""

    start: int
    end: int
    repl: str | None


@dataclass(frozen=True, slots=True)
class RunText:
    """It runs `code` as shell code: in a new shell whose `$@` are words[args_from:] when `args_from` is given
    (`bash -c CODE NAME ARGS`), else with the shell's own (`eval CODE`, `flock -c CODE`)."""

    code: str
    args_from: int | None = None


@dataclass(frozen=True, slots=True)
class ReadsStdin:
    """It is a shell reading its script from standard input, whose `$@` are words[args_from:] (None: the shell's
    own, as for `source /dev/stdin`)."""

    args_from: int | None


@dataclass(frozen=True, slots=True)
class RunScript:
    """It runs the script file words[at] (`sh x.sh`), or the path `at` itself when a string (`php -fx.php`, `at -f
    x.sh`), as `lang` ("sh": shell)."""

    at: int | str
    lang: str = "sh"


@dataclass(frozen=True, slots=True)
class RunCode:
    """It runs `code` in `lang`, given as words[at] (`python3 -c CODE`; at < 0: spread over several words)."""

    lang: str
    at: int
    code: str


@dataclass(frozen=True, slots=True)
class ReadsCode:
    """An interpreter of `lang` reading its program from standard input (`python3 -`, `perl < x.pl`)."""

    lang: str


@dataclass(frozen=True, slots=True)
class Opaque:
    """It runs something only known at run time, for the reason `why` gives."""

    why: str


@dataclass(frozen=True, slots=True)
class RunWords:
    """Code in another language starts this argv (`subprocess.run(["rm", "-rf", d])`), each word with its tail."""

    words: tuple[Field, ...]


@dataclass(frozen=True, slots=True)
class FeedsShell:
    """Code in another language starts shell code `code` that reads text only known at run time on its standard
    input (awk's `print ... | "sh"`)."""

    code: str


#: What a wrapper's or an interpreter's handler finds in a program's arguments.
Action = RunArgv | RunEachItem | RunText | ReadsStdin | RunScript | RunCode | ReadsCode | Opaque
#: What code in another language starts (`_code.analyse_code`).
CodeAction = RunText | RunWords | Opaque | FeedsShell
