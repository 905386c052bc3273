"""The command lines of in-place editors and patch programs, read for what they write: GNU sed's (`-i[SUFFIX]`,
`-e`, `-E`, `-n`, ...), perl's (`-pi[EXT] -e`, `-0777`), `patch`'s and `git apply`'s. Each says what is not
followed, so the files the command edits become unknown rather than guessed."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ._edits import Unknowable
from ._inplace import Sed, perl_program, sed_script
from ._inv import Inv

__all__ = ["InPlace", "PerlEdit", "patch_options", "perl_arguments", "sed_arguments"]


@dataclass(frozen=True, slots=True)
class PerlEdit:
    """`perl -pi -e 's/.../.../'`'s program, and whether it reads the file whole (`-0777`)."""

    statements: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str], int]]
    slurp: bool


@dataclass(frozen=True, slots=True)
class InPlace:
    """What an editor's command line says of an in-place edit."""

    program: Sed | PerlEdit | None  # its program, read when nothing else is left unfollowed
    files: list[str] | None  # the files it edits; None: it does not edit in place
    suffix: str  # the backup suffix (`-i.bak`)
    problem: str | None  # what is not followed, or None


def sed_arguments(args: list[str]) -> InPlace:
    """GNU sed's command line, for `-i`: (the parsed script, the files edited or None when not in place, the
    backup suffix, what is not followed or None)."""
    line = _SedLine()
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            line.files += args[i + 1:]
            break
        if a.startswith("--"):
            i = line.long_option(a, args, i)
        elif a.startswith("-") and a != "-":
            i = line.short_options(a, args, i)
        elif not line.scripts and not line.script_file:
            line.scripts.append(a)
        else:
            line.files.append(a)
        i += 1
    if line.script_file:
        line.problem = line.problem or "a script read from a file (-f) is not followed"
    return _in_place(line.in_place, line.files, line.suffix, line.problem,
                     lambda: sed_script(line.scripts, line.extended, line.quiet))


@dataclass
class _SedLine:
    """What a sed command line says, read option by option."""

    scripts: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    in_place: bool = False
    suffix: str = ""
    extended: bool = False
    quiet: bool = False
    script_file: bool = False
    problem: str | None = None

    def long_option(self, a: str, args: list[str], i: int) -> int:
        """`--name[=value]` at args[i]; returns the index of its last word."""
        name, eq, value = a[2:].partition("=")
        if name == "in-place":
            self.in_place, self.suffix = True, value
        elif name == "expression":
            self.scripts.append(value if eq else (args[i + 1] if i + 1 < len(args) else ""))
            i += 0 if eq else 1
        elif name == "file":
            self.script_file = True
            i += 0 if eq else 1
        elif name == "regexp-extended":
            self.extended = True
        elif name in ("quiet", "silent"):
            self.quiet = True
        elif name not in ("separate", "posix", "debug", "sandbox", "follow-symlinks", "unbuffered"):
            self.problem = f"the option --{name} is not followed"
        return i

    def short_options(self, a: str, args: list[str], i: int) -> int:
        """A cluster of letters (`-nE`, `-i.bak`, `-es/a/b/`) at args[i]; returns the index of its last word."""
        j = 1
        while j < len(a):
            c = a[j]
            if c == "i":
                self.in_place, self.suffix = True, a[j + 1:]
                if not self.suffix and i + 1 < len(args) and args[i + 1] == "":
                    self.problem = "`-i ''` (BSD sed's spelling) is read differently by GNU and BSD sed"
                return i
            if c in "ef":
                value, i = _option_value(a, j, args, i)
                if c == "e":
                    self.scripts.append(value)
                else:
                    self.script_file = True
                return i
            if c == "l":
                return i + (0 if a[j + 1:] else 1)
            if c in "Er":
                self.extended = True
            elif c == "n":
                self.quiet = True
            elif c not in "su":
                self.problem = f"the option -{c} is not followed"
            j += 1
        return i


def _option_value(a: str, j: int, args: list[str], i: int) -> tuple[str, int]:
    """The value of the option letter a[j]: the rest of the word, or else the next word; and the index of the word
    it ends in."""
    value = a[j + 1:]
    if not value:
        i += 1
        value = args[i] if i < len(args) else ""
    return value, i


def _in_place(
    in_place: bool, files: list[str], suffix: str, problem: str | None, parse: Callable[[], Sed | PerlEdit]
) -> InPlace:
    """An editor's answer (see `InPlace`): `parse` reads its program when nothing else is left unfollowed."""
    if not in_place:
        return InPlace(None, None, "", None)
    if "*" in suffix or "/" in suffix:
        problem = problem or "a backup name with `*` or `/` is not followed"
    parsed = None
    if problem is None:
        try:
            parsed = parse()
        except Unknowable as exc:
            problem = str(exc)
    return InPlace(parsed, files, suffix, problem)


def perl_arguments(args: list[str]) -> InPlace:
    """perl's command line, for `-i`: as `sed_arguments`."""
    code: list[str] = []
    files: list[str] = []
    in_place = prints = slurp = False
    suffix = ""
    problem: str | None = None
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--" or not a.startswith("-") or a == "-":
            rest = args[i + 1:] if a == "--" else args[i:]
            if not code:
                problem = "a perl script file is not followed"
                files += rest[1:]
            else:
                files += rest
            break
        j = 1
        while j < len(a):
            c = a[j]
            if c == "p":
                prints = True
            elif c == "i":
                in_place, suffix = True, a[j + 1:]
                break
            elif c in "eE":
                value, i = _option_value(a, j, args, i)
                code.append(value)
                break
            elif c == "0":
                digits = ""
                while j + 1 < len(a) and a[j + 1] in "01234567":
                    digits += a[j + 1]
                    j += 1
                if digits == "777":
                    slurp = True
                else:
                    problem = f"the record separator -0{digits} is not followed"
            elif c in "wWt":
                pass
            elif c == "n":
                problem = "-n with -i (the file keeps only what the code prints) is not followed"
            else:
                problem = f"the option -{c} is not followed"
            j += 1
        i += 1
    if not prints:
        problem = problem or "-i without -p is not followed"
    return _in_place(in_place, files, suffix, problem, lambda: PerlEdit(perl_program("\n".join(code)), slurp))


def patch_options(inv: Inv) -> tuple[int | None, str | None, str | None, bool] | None:
    """`patch` or `git apply`'s options: (strip, the file patched, the diff file, a dry run), or None when an option
    changes what it does in a way not followed (reversing, fuzz, another output)."""
    args = list(inv.args)
    if inv.program == "git":
        args = args[args.index("apply") + 1:]
        strip: int | None = None
        files = []
        for a in args:
            if a in ("--check", "--stat", "--numstat", "--summary"):
                return None, None, None, True
            if a.startswith("-p") and a[2:].isdigit():
                strip = int(a[2:])
            elif a in ("-R", "--reverse", "--reject", "-3", "--3way") or a.startswith("--directory"):
                return None
            elif not a.startswith("-"):
                files.append(a)
        if len(files) > 1:
            return None
        return (strip if strip is not None else None), None, (files[0] if files and files[0] != "-" else None), False
    strip = 0
    target = diff = None
    operands: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--dry-run", "-C", "--check"):
            return None, None, None, True
        if a.startswith(("-p", "--strip")):
            value = a[2:] if a.startswith("-p") else a.partition("=")[2]
            if not value:
                i += 1
                value = args[i] if i < len(args) else ""
            if not value.isdigit():
                return None
            strip = int(value)
        elif a.startswith(("-i", "--input")):
            value = a[2:] if a.startswith("-i") else a.partition("=")[2]
            if not value:
                i += 1
                value = args[i] if i < len(args) else ""
            diff = value
        elif a in ("-N", "--forward", "-s", "--silent", "--quiet", "-f", "--force", "-t", "--batch", "-u", "--unified",
                   "-b", "--backup", "-E", "--remove-empty-files", "--no-backup-if-mismatch"):
            pass
        elif a.startswith("-"):
            return None
        else:
            operands.append(a)
        i += 1
    if operands:
        target = operands[0]
        if len(operands) > 1:
            diff = operands[1]
    return strip, target, diff, False
