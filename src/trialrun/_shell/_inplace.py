"""In-place editors run on known text: `sed -i` (GNU sed) and `perl -pi -e`, for the scripts an agent uses to
change a file (`sed -i 's/^echo //' clean.sh`). A script outside the part of the language followed here is
`Unknowable`, so the file it edits becomes unknown and a later run of it fails closed.

sed: addresses (a line number, `$`, `/regex/` with `I`, `first~step`, ranges `a,b`, `!`), and the commands `s`
(flags `g`, a number, `p`, `i`/`I`), `y`, `d`, `p`, `q`, `Q`, `=`, `a`/`i`/`c` text and `{ }` blocks, with `-n`,
`-E`/`-r`, several `-e`. Basic and extended regular expressions are translated to Python's (`_posix_regex`);
alternation and repeated groups (where POSIX's leftmost-longest match may differ from Python's) are not followed.

perl: `-p` with `-i[EXT]` (and `-0777` to read the file whole) and a program of `s/re/repl/flags` statements
(`g`, `i`, `m`, `s`, `x`); Perl's and Python's regular expressions agree on what such scripts use.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ._edits import Unknowable
from ._posix_regex import posix_regex

__all__ = ["Sed", "perl_program", "run_perl", "run_sed", "sed_script"]


def _replacement(text: str, delimiter: str) -> list[str | int]:
    """A sed replacement as literal strings and group numbers (`&` is group 0)."""
    parts: list[str | int] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "&":
            parts.append(0)
        elif c == "\\" and i + 1 < len(text):
            d = text[i + 1]
            i += 1
            if d.isdigit():
                parts.append(int(d))
            elif d == "n":
                parts.append("\n")
            elif d == "t":
                parts.append("\t")
            elif d in "LUluE":
                raise Unknowable(f"the case conversion \\{d} is not followed")
            else:
                parts.append(d)
        elif c == "\n":
            parts.append("\n")
        else:
            parts.append(c)
        i += 1
    return parts


def _expand(parts: Sequence[str | int]) -> Callable[[re.Match[str]], str]:
    def expand(match: re.Match[str]) -> str:
        return "".join(p if isinstance(p, str) else (match.group(p) or "") for p in parts)

    return expand


@dataclass(frozen=True, slots=True)
class _Line:
    """Address: line `number`."""

    number: int


@dataclass(frozen=True, slots=True)
class _Step:
    """Address `first~step` (GNU): every `step`th line from `first`."""

    first: int
    step: int


@dataclass(frozen=True, slots=True)
class _Last:
    """Address `$`: the last line."""


@dataclass(frozen=True, slots=True)
class _Matching:
    """Address `/regex/`: the lines it matches."""

    regex: re.Pattern[str]


_Address = _Line | _Step | _Last | _Matching


@dataclass
class _Command:
    name: str
    first: _Address | None = None
    last: _Address | None = None
    negate: bool = False
    regex: re.Pattern[str] | None = None
    expand: Callable[[re.Match[str]], str] | None = None
    count: int = 1  # s: which match (0: all)
    prints: bool = False
    text: str = ""
    table: dict[int, int] | None = None
    block: list[_Command] = field(default_factory=list)
    active: bool = False  # a range that has started
    end_line: int = 0


@dataclass
class Sed:
    """A parsed sed script."""

    commands: list[_Command]
    quiet: bool


def _delimited(script: str, i: int, delimiter: str) -> tuple[str, int]:
    """The text up to the next unescaped `delimiter` (with `\\delimiter` read as the delimiter itself)."""
    out: list[str] = []
    while i < len(script):
        c = script[i]
        if c == "\\" and i + 1 < len(script):
            out.append(script[i:i + 2])  # (`\\DELIM` is kept: the reader of the part takes it as the delimiter itself)
            i += 2
            continue
        if c == delimiter:
            return "".join(out), i + 1
        if c == "\n" and delimiter != "\n":
            raise Unknowable("a newline inside a sed command")
        out.append(c)
        i += 1
    raise Unknowable("an unterminated sed command")


def _address(script: str, i: int, extended: bool) -> tuple[_Address | None, int]:
    m = re.match(r"(\d+)~(\d+)", script[i:])
    if m:
        return _Step(int(m.group(1)), int(m.group(2))), i + m.end()
    m = re.match(r"\d+", script[i:])
    if m:
        return _Line(int(m.group(0))), i + m.end()
    if i < len(script) and script[i] == "$":
        return _Last(), i + 1
    if i < len(script) and script[i] in "/\\":
        delimiter = "/"
        if script[i] == "\\":
            delimiter = script[i + 1]
            i += 1
        body, i = _delimited(script, i + 1, delimiter)
        flags = 0
        while i < len(script) and script[i] in "IM":
            flags |= re.IGNORECASE if script[i] == "I" else 0
            if script[i] == "M":
                raise Unknowable("the M address flag is not followed")
            i += 1
        if not body:
            raise Unknowable("an empty regular expression (the last one used) is not followed")
        return _Matching(re.compile(posix_regex(body, extended, delimiter), flags)), i
    return None, i


def sed_script(scripts: Sequence[str], extended: bool = False, quiet: bool = False) -> Sed:
    """Parse sed scripts (each `-e`, joined by newlines as sed does); Unknowable for what is not followed."""
    script = "\n".join(scripts)
    if script.startswith("#n\n") or script == "#n":
        quiet = True
    commands, _ = _parse(script, 0, extended, top=True)
    return Sed(commands, quiet)


def _parse(script: str, i: int, extended: bool, top: bool) -> tuple[list[_Command], int]:
    """The commands of a script (of a `{ }` block unless `top`), from `i`; returns them and the index after."""
    commands: list[_Command] = []
    n = len(script)
    while i < n:
        c = script[i]
        if c in " \t\n;":
            i += 1
            continue
        if c == "#":
            end = script.find("\n", i)
            i = n if end < 0 else end
            continue
        if c == "}":
            if top:
                raise Unknowable("an unmatched `}`")
            return commands, i + 1
        first, last, negate, i = _addresses(script, i, extended)
        if i >= n:
            raise Unknowable("an address without a command")
        name = script[i]
        reader = _COMMAND_READERS.get(name)
        if reader is None:
            raise Unknowable(f"the sed command {name!r} is not followed")
        command = _Command(name, first, last, negate)
        i = reader(script, i + 1, extended, command)
        commands.append(command)
    if not top:
        raise Unknowable("an unclosed `{`")
    return commands, i


def _skip_blanks(script: str, i: int) -> int:
    while i < len(script) and script[i] in " \t":
        i += 1
    return i


def _addresses(script: str, i: int, extended: bool) -> tuple[_Address | None, _Address | None, bool, int]:
    """A command's address or range and its `!`: (first, last, negated, the index of the command's name)."""
    n = len(script)
    first, i = _address(script, i, extended)
    last = None
    i = _skip_blanks(script, i)
    if first is not None and i < n and script[i] == ",":
        i += 1
        if script[i:i + 1] in ("+", "~"):
            raise Unknowable("GNU's `addr,+N` and `addr,~N` are not followed")
        last, i = _address(script, i, extended)
        if last is None:
            raise Unknowable("a range without an end")
        if first == _Line(0):
            raise Unknowable("GNU's `0,/re/` is not followed")
    i = _skip_blanks(script, i)
    negate = False
    if i < n and script[i] == "!":
        negate = True
        i = _skip_blanks(script, i + 1)
    return first, last, negate, i


def _read_block(script: str, i: int, extended: bool, command: _Command) -> int:
    """`{ ... }`."""
    command.block, i = _parse(script, i, extended, top=False)
    return i


def _read_substitute(script: str, i: int, extended: bool, command: _Command) -> int:
    """`s/regex/replacement/flags`."""
    n = len(script)
    delimiter = script[i]
    body, i = _delimited(script, i + 1, delimiter)
    repl, i = _delimited(script, i, delimiter)
    flags = 0
    count = 1
    while i < n and script[i] not in ";\n}":
        f = script[i]
        if f == "g":
            count = 0
        elif f.isdigit():
            m = re.match(r"\d+", script[i:])
            assert m is not None
            count = int(m.group(0)) if count else 0
            i += m.end() - 1
        elif f == "p":
            command.prints = True
        elif f in "iI":
            flags |= re.IGNORECASE
        elif f not in " \t":
            raise Unknowable(f"the s flag {f!r} is not followed (`e` runs commands, `w` writes a file)")
        i += 1
    if not body:
        raise Unknowable("an empty regular expression (the last one used) is not followed")
    command.regex = re.compile(posix_regex(body, extended, delimiter), flags)
    command.expand = _expand(_replacement(repl, delimiter))
    command.count = count
    return i


def _read_transliterate(script: str, i: int, extended: bool, command: _Command) -> int:
    """`y/source/target/`."""
    delimiter = script[i]
    source, i = _delimited(script, i + 1, delimiter)
    target, i = _delimited(script, i, delimiter)
    source, target = (part.replace("\\" + delimiter, delimiter).replace("\\n", "\n") for part in (source, target))
    if len(source) != len(target) or "\\" in source + target:
        raise Unknowable("a y command whose strings differ in length or use escapes")
    command.table = str.maketrans(source, target)
    return i


def _read_text(script: str, i: int, extended: bool, command: _Command) -> int:
    """`a TEXT`, `i TEXT`, `c TEXT` (one line of text, GNU's one-line form or after `\\` and a newline)."""
    rest = script[i:]
    if rest.startswith("\\\n"):
        rest = rest[2:]
        i += 2
    elif rest.startswith("\\"):
        rest = rest[1:]
        i += 1
    end = rest.find("\n")
    text = rest if end < 0 else rest[:end]
    if text.endswith("\\"):
        raise Unknowable("multi-line a/i/c text is not followed")
    command.text = text.lstrip(" \t") if script[i - 1:i] != "\n" else text
    return i + (len(rest) if end < 0 else end)


def _read_plain(script: str, i: int, extended: bool, command: _Command) -> int:
    """`d`, `p`, `=`, and `q`/`Q` with an optional exit code."""
    if command.name in "qQ":
        m = re.match(r"\s*\d+", script[i:])
        if m:
            i += m.end()
    return i


# A sed command's name -> what reads the rest of it into the command, returning the index after it.
_COMMAND_READERS: dict[str, Callable[[str, int, bool, _Command], int]] = {
    "{": _read_block, "s": _read_substitute, "y": _read_transliterate,
    "a": _read_text, "i": _read_text, "c": _read_text,
    "d": _read_plain, "p": _read_plain, "q": _read_plain, "Q": _read_plain, "=": _read_plain,
}


def _matches(address: _Address, number: int, line: str, is_last: bool) -> bool:
    match address:
        case _Line(wanted):
            return number == wanted
        case _Last():
            return is_last
        case _Step(first, step):
            return number == first if step <= 0 else number >= first and (number - first) % step == 0
        case _Matching(regex):
            return regex.search(line) is not None


def _selects(command: _Command, number: int, line: str, is_last: bool) -> bool:
    if command.first is None:
        hit = True
    elif command.last is None:
        hit = _matches(command.first, number, line, is_last)
    elif command.active:
        last = command.last
        if isinstance(last, _Line):
            hit = True
            if number >= last.number:
                command.active = False
        else:
            hit = True
            if _matches(last, number, line, is_last):
                command.active = False
    elif _matches(command.first, number, line, is_last):
        hit = True
        last = command.last
        if isinstance(last, _Line):
            command.active = number < last.number
        else:
            command.active = not is_last
    else:
        hit = False
    return hit != command.negate


class _Quit(Exception):
    """`q` (print the line, then stop) or `Q` (stop)."""

    def __init__(self, print_line: bool, line: str) -> None:
        super().__init__()
        self.print_line = print_line
        self.line = line


def run_sed(sed: Sed, text: str) -> str:
    """What `sed -i` leaves in a file that held `text`."""
    lines = text.split("\n")
    final_newline = text.endswith("\n")
    if final_newline:
        lines.pop()
    out: list[str] = []

    def resets(commands: list[_Command]) -> None:
        for command in commands:
            command.active = False
            resets(command.block)

    resets(sed.commands)
    for number, line in enumerate(lines, start=1):
        is_last = number == len(lines)
        before: list[str] = []
        after: list[str] = []
        try:
            line, keep = _run(sed.commands, line, number, is_last, before, after, out)
        except _Quit as quit:
            out.extend(before)
            if quit.print_line and not sed.quiet:
                out.append(quit.line)
            out.extend(after)
            break
        out.extend(before)
        if keep and not sed.quiet:
            out.append(line)
        out.extend(after)
    result = "\n".join(out)
    return result + "\n" if out and (final_newline or len(out) > len(lines)) else result


def _run(commands: list[_Command], line: str, number: int, is_last: bool, before: list[str], after: list[str],
         out: list[str]) -> tuple[str, bool]:
    for command in commands:
        if not _selects(command, number, line, is_last):
            continue
        name = command.name
        if name == "{":
            line, keep = _run(command.block, line, number, is_last, before, after, out)
            if not keep:
                return line, False
        elif name == "s":
            assert command.regex is not None and command.expand is not None
            if command.count <= 1:
                new, made = command.regex.subn(command.expand, line, count=command.count)
            else:
                seen = [0]
                expand, count = command.expand, command.count

                def nth(match: re.Match[str]) -> str:
                    seen[0] += 1
                    return expand(match) if seen[0] == count else match.group(0)

                new = command.regex.sub(nth, line)
                made = int(seen[0] >= command.count)
            if made and command.prints:
                before.append(new)
            line = new
        elif name == "y":
            assert command.table is not None
            line = line.translate(command.table)
        elif name == "d":
            return line, False
        elif name == "p":
            before.append(line)
        elif name == "=":
            before.append(str(number))
        elif name == "a":
            after.append(command.text)
        elif name == "i":
            before.append(command.text)
        elif name == "c":
            if command.last is None or not command.active:
                before.append(command.text)
            return line, False
        elif name in "qQ":
            raise _Quit(name == "q", line)
    return line, True


# -- perl -pi -e ---------------------------------------------------------------------------------------------------

_PERL_DELIMS = "/|#!,:@%;"


def perl_program(code: str) -> list[tuple[re.Pattern[str], Callable[[re.Match[str]], str], int]]:
    """A `perl -p` program of `s///` statements as (regex, replacement, count: 0 for /g); Unknowable otherwise."""
    statements: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str], int]] = []
    i = 0
    n = len(code)
    while i < n:
        c = code[i]
        if c in " \t\n;":
            i += 1
            continue
        if c != "s" or i + 1 >= n or code[i + 1] not in _PERL_DELIMS:
            raise Unknowable("perl code other than s/// statements is not followed")
        delimiter = code[i + 1]
        body, i = _delimited(code, i + 2, delimiter)
        repl, i = _delimited(code, i, delimiter)
        flags = 0
        count = 1
        while i < n and code[i].isalpha():
            f = code[i]
            if f == "g":
                count = 0
            elif f in "imsx":
                flags |= {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}[f]
            else:
                raise Unknowable(f"the perl s flag {f!r} is not followed")
            i += 1
        if re.search(r"(?<!\\)[$@](?![)|]|$)", body) or "\\Q" in body or "\\E" in body or "[:" in body:
            raise Unknowable("a perl pattern with interpolation or constructs not followed")
        statements.append((re.compile(body.replace("\\z", r"\Z"), flags), _expand(_perl_replacement(repl)), count))
    if not statements:
        raise Unknowable("an empty perl program")
    return statements


def _perl_replacement(text: str) -> list[str | int]:
    parts: list[str | int] = []
    i = 0
    while i < len(text):
        c = text[i]
        m = re.match(r"\$(?:(\d)|\{(\d)\}|(&))", text[i:])
        if m:
            parts.append(int(m.group(1) or m.group(2)) if (m.group(1) or m.group(2)) else 0)
            i += m.end()
            continue
        if c in "$@":
            raise Unknowable("a perl replacement with variables is not followed")
        if c == "\\" and i + 1 < len(text):
            d = text[i + 1]
            if d.isdigit():
                parts.append(int(d))
            elif d in "nt":
                parts.append("\n" if d == "n" else "\t")
            elif d in "LUluEQ":
                raise Unknowable(f"the perl escape \\{d} is not followed")
            else:
                parts.append(d)
            i += 2
            continue
        parts.append(c)
        i += 1
    return parts


def run_perl(statements: Sequence[tuple[re.Pattern[str], Callable[[re.Match[str]], str], int]], text: str,
             slurp: bool) -> str:
    """What `perl -pi -e` leaves in a file that held `text` (each line with its newline, or the whole file)."""
    records = [text] if slurp else text.splitlines(keepends=True)
    out = []
    for record in records:
        for regex, expand, count in statements:
            record = regex.sub(expand, record, count=count)
        out.append(record)
    return "".join(out)
