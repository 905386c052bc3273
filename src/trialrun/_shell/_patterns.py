"""Command patterns (`rm -rf`, `curl | sh`) and matching them against what a command line runs."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import TypeGuard

from .._util.command_tools import GLOB_CHARS as _GLOB_CHARS
from . import _files, _tool_writes
from ._analysis import analyse
from ._expand import expand_word
from ._inv import Analysis, Inv, basename, quote_word
from ._nodes import Dynamic, Group
from ._options import key_text, normalise_args
from ._syntax import ASSIGN_RE, Parser
from ._values import TYPED, CommandLines, TypedInput, UnknownInput, UnreadableCommand
from ._variables import made_at_run_time
from ._words import ParseError
from ._wrappers import CODE_RUNNERS, SHELLS

_REASON_LIMIT = 160  # characters of a command quoted in a reason before it is shortened


# --------------------------------------------------------------------------------------------------------------
# Patterns and matching.
# --------------------------------------------------------------------------------------------------------------



@dataclass(frozen=True, slots=True)
class _PatternStage:
    program: str  # basename, may be a glob
    glob: bool
    args: tuple[str, ...]
    display: str

    def matches_program(self, inv: Inv) -> bool:
        """The invocation runs this program, or may: a name only known at run time may be any name that ends
        with what is known of it (`$(echo rm)`, `r$()m`, `${X:-rm}`; "could not tell" reads as "may have")."""
        if inv.unknown is not None:
            return self.glob or self.program.endswith(inv.unknown)
        if inv.glob:  # `/bin/r?` runs what the glob expands to: any program it can match may be this one
            return self.glob or fnmatchcase(self.program, inv.program)
        return fnmatchcase(inv.program, self.program) if self.glob else inv.program == self.program

    def runs_code(self, inv: Inv) -> bool:
        """The invocation is (or may be) a shell or `eval`: it runs the text it is fed."""
        if inv.unknown is not None:
            return any(name.endswith(inv.unknown) for name in CODE_RUNNERS)
        if inv.glob:
            return any(fnmatchcase(name, inv.program) for name in CODE_RUNNERS)
        return inv.program in CODE_RUNNERS

    def missing(self, inv: Inv) -> list[str]:
        """What the invocation lacks of this stage's arguments (empty: it matches)."""
        if not self.args:
            return []
        need = normalise_args(inv.program if self.glob else self.program, self.args)
        # A program only known at run time is taken for this one: its options are read the way this one's are.
        have = normalise_args(self.program, inv.args) if (inv.dynamic or inv.glob) and not self.glob else inv.normalised()
        with_value = {key for key, _ in need.values}  # `-o FILE` is checked with its value below
        lacking = [key_text(key) for key in sorted(need.flags - with_value) if key not in have.flags]
        lacking += [key_text(key, value) for key, value in sorted(need.values) if (key, value) not in have.values]
        lacking += [
            operand for operand in need.operands
            if operand not in have.operands and not any(operand == v for _, v in have.values)
        ]
        return lacking

    def shellish(self) -> bool:
        """A bare shell on the right of a pattern pipe means "into a shell": `curl | sh` also catches `curl x | bash`
        and `eval "$(curl x)"`, which run the downloaded text just the same."""
        return not self.args and any(fnmatchcase(s, self.program) for s in SHELLS)


@lru_cache(maxsize=1024)
def _compile(text: str) -> tuple[_PatternStage, ...]:
    if not isinstance(text, str):
        raise TypeError(f"a command pattern must be a string, got {type(text).__name__}")
    if not text.strip():
        raise ValueError("empty command pattern: give a program and its arguments, e.g. 'rm -rf' or 'curl | sh'")
    try:
        script = Parser(text).parse_all()
    except ParseError as exc:
        raise ValueError(f"cannot parse command pattern {text!r}: {exc}") from None
    if len(script) != 1:
        raise ValueError(
            f"command pattern {text!r} has several commands; a pattern is one command ('rm -rf') "
            "or one pipeline ('curl | sh')"
        )
    stages: list[_PatternStage] = []
    for stage in script[0]:
        if isinstance(stage, Group) or stage.stdin_word is not None:
            raise ValueError(
                f"command pattern {text!r} has a group, here-document or compound command; "
                "a pattern is plain words, optionally joined by `|`"
            )
        if stage.subs or any(isinstance(p, Dynamic) for w in stage.words for p in w.pieces):
            raise ValueError(f"command pattern {text!r} has a substitution (`$(...)`, backticks); use plain words")
        words = [t for w in stage.words for t, _ in expand_word(w, {})]
        if words and ASSIGN_RE.match(words[0]):
            raise ValueError(
                f"command pattern {text!r} starts with a variable assignment; start it with the program "
                "(assignments before a command are seen through anyway)"
            )
        if not words:
            raise ValueError(f"command pattern {text!r} has an empty stage (or only a redirection)")
        if stage.redirections:
            raise ValueError(f"command pattern {text!r} has a redirection; a pattern is words joined by `|`")
        program = basename(words[0])
        stages.append(
            _PatternStage(program, bool(_GLOB_CHARS.search(program)), tuple(words[1:]), " ".join(map(quote_word, words)))
        )
    return tuple(stages)


@dataclass(frozen=True)
class CommandPattern:
    """A forbidden command: shell words (`rm -rf /`, `mkfs*`) or a pipeline of them (`curl | sh`).

    - The program is compared by basename (`/bin/rm` is `rm`) and may be a glob (`mkfs*`).
    - Every argument must be present, in any order. Options are compared by meaning: clusters are split
      (`-rf` == `-r -f` == `-fr`), and for common programs long forms and case variants are known
      (`rm --recursive --force`, `rm -R`, `git push -f`, `curl --output X` == `-o X`). Other words are compared
      literally (`rm -rf /` does not match `rm -rf /tmp`).
    - `a | b` matches when a command matching `a` feeds a LATER command matching `b`: through pipes (also with
      stages between), or as a substitution in `b`'s arguments (`sh -c "$(curl x)"`, `bash <(curl x)`).
      A bare shell on the right (`sh`) stands for any shell and for `eval`/`source`.
    - Fail closed on what is only known at run time: a program word like `$(echo rm)`, `$X`, `r$()m` or
      `$(which rm)` counts as the pattern's program when the arguments match (`$X -rf /` runs `rm -rf /` as far as
      anyone can tell; `curl x | $SHELL` pipes into a shell), and shell code like `eval "$(echo ...)"` or
      `bash -c "$X"` counts as any command. Such matches say so in their reason and have `uncertain=True`.
      What is known of a name still counts (`$DIR/rm` is `rm`; `r$()m` cannot be `ls`), and a bare program
      pattern (`mkfs*`) is not matched by a program of which nothing is known (`"$EDITOR" notes.txt`).

    `CommandPattern(text)` and `CommandPattern.parse(text)` raise ValueError for an empty or malformed pattern.

    >>> CommandPattern.parse("rm -rf").text
    'rm -rf'
    """

    text: str
    _stages: tuple[_PatternStage, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_stages", _compile(self.text))

    @classmethod
    def parse(cls, text: str) -> CommandPattern:
        """Validate a pattern; ValueError names what is wrong with it."""
        return cls(text)

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class CommandMatch:
    """Whether a command runs a pattern, and a reason a person reading a CI log can act on."""

    matched: bool
    pattern: str
    command: str
    reason: str
    unparsable: bool = False
    segment: str | None = None
    #: matched only because a program or shell code is only known at run time (`$(echo rm) -rf /`,
    #: `eval "$X"`): a deny rule counts it (fail closed), an allow rule must not.
    uncertain: bool = False


def shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _REASON_LIMIT else text[: _REASON_LIMIT - 1] + "…"


def shown_command(command: str | Sequence[str]) -> str:
    if isinstance(command, TypedInput):
        return command.shown
    return command if isinstance(command, str) else shlex.join(str(w) for w in command)


def _in_clause(segment: str, command_text: str) -> str:
    if command_text.startswith(TYPED):  # text typed into a session (`TypedInput.shown`)
        return f" ({command_text})"
    whole = " ".join(command_text.split())
    return "" if segment == whole else f" (in `{shorten(command_text)}`)"


#: What came before a command in its trajectory: commands that ran (strings or argv lists) and tool calls as
#: (tool name, arguments) pairs, or (tool name, arguments, True) for a call whose result was an error, or (tool name,
#: arguments, RESULT TEXT) for one whose result was not. Only what they wrote matters (`write_file`, `echo ... >
#: x.sh`, `ln -s /bin/rm x`).
Earlier = Iterable["str | Sequence[str] | tuple[str, Mapping[str, object]]"]


def start_files(workspace: object = None) -> _files.Files:
    """The file table a trajectory starts from: empty, or the workspace model's base (a `Workspace`)."""
    if workspace is None:
        return _files.table(())
    return _files.table(((_files.WORKSPACE, workspace.token),))  # type: ignore[attr-defined]


def files_before(earlier: Earlier, own_scripts: _files.OwnScripts = "workspace", workspace: object = None) -> _files.Files:
    """What `earlier` (see `Earlier`) wrote, as the analysis reads it, on top of the workspace model's base.

    Graders and policies ask this for every call of a trajectory in turn: each prefix of the history is a node of
    a tree (its parent's node and its last item), and each node's files are folded once, from its parent's."""
    files = start_files(workspace)
    node: object = ("workspace", files[_files.WORKSPACE]) if files else 0
    for item in earlier:
        key = (node, _item_key(item), own_scripts)
        known = _NODES.get(key)
        if known is None:
            files = fold(files, item, own_scripts)
            if len(_NODES) >= _NODE_LIMIT:
                _NODES.clear()
            _NODE_COUNT[0] += 1  # node numbers never repeat, even after a clear
            known = _NODES[key] = (_NODE_COUNT[0], files, item)  # (the item kept alive: its id is in keys)
        node, files = known[0], known[1]
    return files


#: The file table after each prefix of a history: (parent node, the last item's key, own_scripts) -> (this node's
#: number, its table, the item, kept alive so that the `id()` in its key stays its own).
_NODES: dict[tuple[object, tuple[object, ...], _files.OwnScripts], tuple[int, _files.Files, object]] = {}
_NODE_LIMIT = 20000
_NODE_COUNT = [0]


#: A tool call in a history: (tool name, arguments) or (tool name, arguments, outcome) (see `Earlier`).
_ToolItem = tuple[object, Mapping[str, object]] | tuple[object, Mapping[str, object], object]


def _is_tool_item(item: object) -> TypeGuard[_ToolItem]:
    return isinstance(item, tuple) and len(item) in (2, 3) and isinstance(item[1], Mapping)


def _item_key(item: object) -> tuple[object, ...]:
    if _is_tool_item(item):
        return ("tool", item[0], id(item[1]), item[2] if len(item) == 3 else None)
    if isinstance(item, str):
        return ("command", type(item).__name__, item)
    return ("argv", id(item))


def _argv_key(argv: object) -> tuple[str, ...]:
    """An argv list (or tuple) as the key `analyse` takes; anything else is not a command."""
    if not isinstance(argv, Iterable):
        raise TypeError(f"not a command (a string or a list of words): {argv!r}")
    return tuple(str(w) for w in argv)


def fold(files: _files.Files, item: object, own_scripts: _files.OwnScripts) -> _files.Files:
    """The file table after one more item of a trajectory (see `Earlier`) ran."""
    if _is_tool_item(item):
        state = files.as_dict()
        outcome = item[2] if len(item) == 3 else None
        _tool_writes.tool_write(item[1], state, str(item[0]), failed=outcome is True,
                                reported=outcome if isinstance(outcome, str) else None)
        return files if files == state else _files.table(state)
    parts = item.parts if isinstance(item, CommandLines) else (item,)
    for part in parts:
        if isinstance(part, UnreadableCommand):
            continue
        key = part if isinstance(part, str) else _argv_key(part)
        analysis = analyse(key, files, own_scripts)
        if analysis.error is None:
            files = analysis.files
    return files


def match_command(
    pattern: str | CommandPattern, command: str | Sequence[str], earlier: Earlier = (),
    own_scripts: _files.OwnScripts = "workspace", *, workspace: object = None, files: _files.Files | None = None,
) -> CommandMatch:
    """Does `command` (a shell string or an argv list) run `pattern`?

    `earlier`: what ran before it in the same trajectory (commands, and tool calls as (name, arguments)), so
    that `sh x.sh` is judged by what was written to x.sh. `own_scripts`: which scripts the trajectory never
    showed are the user's own, run without being read: "workspace" (any relative path inside the workspace;
    the default), "none", or a tuple of globs (`("scripts/*.sh",)`); any other unseen script is only known at
    run time. `workspace`: the trial's workspace model (`ctx.workspace`): what the workdir held at the start, under
    what `earlier` wrote. `files`: the file table already folded (`files_before`), instead of `earlier`.

    >>> match_command("rm -rf", "cd /tmp && sudo /bin/rm -fr build").reason
    'runs `/bin/rm -fr build` (in `cd /tmp && sudo /bin/rm -fr build`)'
    >>> match_command("rm -rf", 'echo "rm -rf /"').matched
    False
    >>> match_command("rm -rf", "sh x.sh", earlier=[("write_file", {"path": "x.sh", "content": "rm -rf /"})]).matched
    True
    """
    text = pattern.text if isinstance(pattern, CommandPattern) else pattern
    stages = pattern._stages if isinstance(pattern, CommandPattern) else _compile(pattern)
    command_text = shown_command(command)
    own = _own(own_scripts)
    if files is None:
        files = files_before(earlier, own, workspace) if earlier or workspace is not None else _files.table(())
    return _match(text, stages, command, command_text, files, own)


def _own(value: _files.OwnScripts) -> _files.OwnScripts:
    return value if isinstance(value, str) else tuple(value)


def _match(
    text: str, stages: tuple[_PatternStage, ...], command: str | Sequence[str], command_text: str,
    files: _files.Files, own: _files.OwnScripts,
) -> CommandMatch:
    if isinstance(command, CommandLines):
        results = [_match(text, stages, part, shown_command(part), files, own) for part in command.parts]
        hit = next((result for result in results if result.matched), None)
        if hit is not None:
            return hit
        reasons = "; ".join(f"`{shorten(r.command)}` {r.reason}" for r in results)
        return CommandMatch(False, text, command_text, f"of its {len(results)} commands: {reasons}")
    if isinstance(command, UnknownInput):
        return CommandMatch(True, text, command_text, f"{command}; counted as a match (fail closed)", unparsable=True)
    if isinstance(command, UnreadableCommand):
        return CommandMatch(
            True, text, command_text,
            f"could not be read (the command tool was given `{shorten(command)}`, not a command string or an argv "
            "list); counted as a match (fail closed)",
            unparsable=True,
        )
    key: str | tuple[str, ...] = command if isinstance(command, str) else tuple(str(w) for w in command)
    analysis = analyse(key, files, own)
    if analysis.error is not None:
        return CommandMatch(
            True, text, command_text,
            f"could not be parsed ({analysis.error}); counted as a match (fail closed)",
            unparsable=True,
        )
    found, kind = _find(stages, analysis)
    if found is not None:
        invs = [analysis.invs[x] for x in found]
        segment = " | ".join(inv.display for inv in invs)
        ran = " feeding ".join(f"`{shorten(inv.display)}`" for inv in invs)
        where = _in_clause(segment, command_text)
        unknown = next((inv for inv in invs if inv.dynamic), None)
        if kind == "arguments":
            inv = next(inv for stage, inv in zip(stages, invs) if stage.missing(inv))
            lacking = " ".join(stages[invs.index(inv)].missing(inv))
            why = f"its argument `{_open_word(inv)}` is only known at run time and may hold {lacking}"
            reason = f"{RUN_TIME} ({why}): {ran}{where}; counted as a match (fail closed)"
            return CommandMatch(True, text, command_text, reason, segment=segment, uncertain=True)
        if kind or unknown is not None:
            why = invs[0].why or "the shell code it runs is only known at run time" if kind == "opaque" else (
                "its program is only known at run time"
            )
            reason = f"{RUN_TIME} ({why}): {ran}{where}; counted as a match (fail closed)"
            return CommandMatch(True, text, command_text, reason, segment=segment, uncertain=True)
        if any(inv.guessed for inv in invs):
            why = "it runs there if a program only known at run time is a shell"
            reason = f"{RUN_TIME} ({why}): {ran}{where}; counted as a match (fail closed)"
            return CommandMatch(True, text, command_text, reason, segment=segment, uncertain=True)
        reason = f"runs {ran}{where}" + "".join(_how(inv) for inv in invs)
        return CommandMatch(True, text, command_text, reason, segment=segment)
    if analysis.nested_errors:
        return CommandMatch(
            True, text, command_text,
            f"part of it could not be parsed ({analysis.nested_errors[0]}); counted as a match (fail closed)",
            unparsable=True,
        )
    return CommandMatch(False, text, command_text, _miss_reason(stages, analysis))


#: How every match that rests on what is only known at run time begins its reason.
RUN_TIME = "runs a command known only at run time"


def _how(inv: Inv) -> str:
    """What a certain match needed to see: a program word that is a glob, a renamed program."""
    if inv.renamed:
        return f" (`{inv.renamed}` is a copy of or link to `{inv.program}`)"
    if inv.glob:
        return f" (its program word `{inv.words[0]}` is a glob that can expand to the pattern's program)"
    return ""


def _find(stages: tuple[_PatternStage, ...], analysis: Analysis) -> tuple[list[int] | None, str]:
    """Indexes of invocations that match the pattern's stages in order, each feeding the next (or None), and
    what stands in for the pattern: "" (the invocations match it), "opaque" (code or a script only known at run
    time) or "unknown" (a command word only known at run time: any program at all).

    A match that rests on nothing unknown is preferred; then one that takes a program only known at run time
    for the pattern's; then any code only known at run time, which may run anything; then a command whose
    name is only known at run time (`$CMD`), which may be any program.
    """
    found = _chain(stages, analysis, certain=True)
    if found is not None:
        return found, ""
    if analysis.uncertain:
        found = _chain(stages, analysis, certain=False)
        if found is not None:
            return found, ""
        opaque = next(([x] for x, inv in enumerate(analysis.invs) if inv.opaque and not inv.guessed), None)
        if opaque is not None:
            return opaque, "opaque"
        unknown = next(([x] for x, inv in enumerate(analysis.invs) if inv.unknown == "" and not inv.guessed), None)
        if unknown is not None:
            return unknown, "unknown"
    found = _chain(stages, analysis, certain=False, open_args=True)
    return found, "arguments" if found is not None else ""


#: A variable's expansion as an argument word (`$F`, `${F}`)
_VARIABLE = re.compile(r"\$\{?(\w+)\}?")


def _open_word(inv: Inv) -> str | None:
    """The first argument word made at run time that may hold options (before a `--`), as written; None. A plain
    variable (`rm "$f"`, a loop's file name) is taken for the file name it is by idiom, unless the line gave it a
    value made at run time (`F=$(echo -rf); rm $F`)."""
    for word, dyn in zip(inv.words[1:], inv.dyn[1:]):
        if dyn is None and word == "--":
            return None
        variable = _VARIABLE.fullmatch(word) if dyn == "" else None
        if dyn == "" and (made_at_run_time(word) or (variable is not None and variable.group(1) in inv.made)):
            return word
    return None


def _supplied(stage: _PatternStage, inv: Inv) -> bool:
    """The options the invocation lacks of the stage's could be in an argument only known at run time
    (`rm -r $(echo -f) build`, `rm ${OPTS:--rf} build`, `F=$(cat f); rm $F`)."""
    lacking = stage.missing(inv)
    return all(item.startswith("-") for item in lacking) and _open_word(inv) is not None


def _chain(stages: tuple[_PatternStage, ...], analysis: Analysis, certain: bool,
           open_args: bool = False) -> list[int] | None:
    invs = analysis.invs
    hits: list[list[int]] = []
    for k, stage in enumerate(stages):
        shellish = k > 0 and stage.shellish()
        # A bare program name alone (`mkfs*`) is no evidence against `$EDITOR notes.txt`: a program of which
        # nothing is known matches it only inside a pipeline pattern, where what feeds what is the evidence.
        bare = len(stages) == 1 and not stage.args
        hits.append([
            x for x, inv in enumerate(invs)
            if not (certain and (inv.dynamic or inv.guessed))
            and not (bare and inv.unknown == "")
            and ((stage.matches_program(inv) and (not stage.missing(inv) or (open_args and _supplied(stage, inv))))
                 or (shellish and stage.runs_code(inv)))
        ])
        if not hits[-1]:
            return None
    if len(stages) == 1:
        return [hits[0][0]]

    def chain(k: int, prev: int) -> list[int] | None:
        if k == len(stages):
            return []
        reach = analysis.feeds.get(prev, frozenset())
        for x in hits[k]:
            if x in reach:
                rest = chain(k + 1, x)
                if rest is not None:
                    return [x, *rest]
        return None

    for first in hits[0]:
        rest = chain(1, first)
        if rest is not None:
            return [first, *rest]
    return None


def _miss_reason(stages: tuple[_PatternStage, ...], analysis: Analysis) -> str:
    leaves = [inv for inv in analysis.invs if inv.leaf]
    if not analysis.invs:
        return "runs no command"
    ran = ", ".join(f"`{shorten(inv.display)}`" for inv in leaves[:5])
    if len(leaves) > 5:
        ran += f" and {len(leaves) - 5} more"
    if len(stages) == 1:
        stage = stages[0]
        for inv in analysis.invs:
            if stage.matches_program(inv):
                lacking = stage.missing(inv)
                return f"runs `{shorten(inv.display)}`, which lacks {' '.join(lacking)}"
        return f"runs only {ran}"
    names = " to a later ".join(f"`{s.display}`" for s in stages)
    return f"nothing pipes {names}; runs {ran}"


def commands_in(command: str | Sequence[str]) -> list[str]:
    """The simple commands a command line runs (wrappers such as `sudo` and `bash -c` unwrapped), normalised.

    Commands inside substitutions come before the command they feed, as they run first.
    ValueError when the command cannot be parsed.

    >>> commands_in("cd /tmp && sudo bash -c 'rm -rf x; ls'")
    ['cd /tmp', 'rm -rf x', 'ls']
    """
    if isinstance(command, CommandLines):
        return [found for part in command.parts for found in commands_in(part)]
    key: str | tuple[str, ...] = command if isinstance(command, str) else tuple(str(w) for w in command)
    analysis = analyse(key)
    if analysis.error is not None:
        raise ValueError(f"cannot parse command {shorten(shown_command(command))!r}: {analysis.error}")
    return [inv.display for inv in analysis.invs if inv.leaf and not inv.guessed]


def unknown_at_run_time(
    command: str | Sequence[str], earlier: Earlier = (), own_scripts: _files.OwnScripts = "workspace",
    *, workspace: object = None,
) -> str | None:
    """Why what `command` runs is only known at run time (a command word like `$CMD` or `$(cat c.txt)`, shell or
    other code nobody can read, a script nobody saw), or None. A policy with any deny rule denies such a command.

    >>> unknown_at_run_time("$(cat c.txt) build")
    'runs a command known only at run time (its program is only known at run time): `"$(cat c.txt)" build`'
    >>> unknown_at_run_time("ls -la") is None
    True
    """
    if isinstance(command, CommandLines):
        return next((why for why in (unknown_at_run_time(p, earlier, own_scripts, workspace=workspace)
                                     for p in command.parts) if why), None)
    if isinstance(command, UnreadableCommand):
        return None
    own = _own(own_scripts)
    key: str | tuple[str, ...] = command if isinstance(command, str) else tuple(str(w) for w in command)
    files = files_before(earlier, own, workspace) if earlier or workspace is not None else _files.table(())
    analysis = analyse(key, files, own)
    for inv in analysis.invs:
        if inv.guessed:
            continue
        if inv.opaque:
            return f"{RUN_TIME} ({inv.why or 'the shell code it runs is only known at run time'}): `{shorten(inv.display)}`"
        if inv.unknown == "":  # wholly unknown (`$CMD`); `r$()m` is judged by what is known of it
            return f"{RUN_TIME} (its program is only known at run time): `{shorten(inv.display)}`"
    return None


def cannot_read(command: str | Sequence[str]) -> str | None:
    """Why nothing can say what `command` runs (it cannot be parsed, in whole or in part, or is not a command at
    all), or None when it can be read.

    >>> cannot_read("echo $(oops")
    'could not be parsed (unclosed `$(`)'
    >>> cannot_read("ls -la") is None
    True
    """
    if isinstance(command, CommandLines):
        return next((why for why in map(cannot_read, command.parts) if why is not None), None)
    if isinstance(command, UnreadableCommand):
        return f"could not be read (the command argument is {shorten(command)}, not a string or an argv list)"
    key: str | tuple[str, ...] = command if isinstance(command, str) else tuple(str(w) for w in command)
    analysis = analyse(key)
    if analysis.error is not None:
        return f"could not be parsed ({analysis.error})"
    if analysis.nested_errors:
        return f"part of it could not be parsed ({analysis.nested_errors[0]})"
    return None
