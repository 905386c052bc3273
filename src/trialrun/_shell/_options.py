"""Reading a program's options the way the program itself would (short bundles, long forms, values), so
that `rm -fr`, `rm -r -f` and `rm --recursive --force` compare as the same command."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

# --------------------------------------------------------------------------------------------------------------
# Options: a small getopt that knows, per program, which options take values and what the long forms mean.
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Opts:
    values: frozenset[str] = frozenset()  # canonical keys whose option takes a value (next word or attached)
    optional: frozenset[str] = frozenset()  # keys whose value may only be attached (`-i{}`, `--replace=X`)
    aliases: Mapping[str, str] = field(default_factory=dict)  # short char or long name -> canonical key
    longs: tuple[str, ...] = ()  # known long names, for GNU-style unambiguous abbreviations (`--recur`)
    single_dash: bool = False  # `find -delete`: a single-dash word is one option, not a cluster of letters
    plus: bool = False  # shells: `+o` is an option too
    dash_is_option: bool = False  # `env -` means `env -i`

    def canonical_long(self, name: str) -> str:
        if name in self.aliases:
            return self.aliases[name]
        if self.longs:
            hits = {self.aliases.get(ln, "--" + ln) for ln in self.longs if ln.startswith(name)}
            if len(hits) == 1:
                return hits.pop()
        return "--" + name


def _opts(
    values: str = "",
    optional: str = "",
    longs: Mapping[str, str | None] | None = None,
    long_values: Iterable[str] = (),
    short: Mapping[str, str] | None = None,
    **flags: bool,
) -> _Opts:
    """Build an option table. `longs` maps long names to the short letter they mean (None: no short form)."""
    longs = dict(longs or {})
    aliases: dict[str, str] = dict(short or {})
    for name, letter in longs.items():
        aliases[name] = letter if letter else "--" + name
    value_keys = set(values) | {"--" + name for name in long_values}
    for name in long_values:
        longs.setdefault(name, None)
        aliases.setdefault(name, "--" + name)
    return _Opts(frozenset(value_keys), frozenset(optional), aliases, tuple(longs), **flags)


_GENERIC = _Opts()


def _option_word(words: Sequence[str], i: int, opts: _Opts) -> tuple[int, list[tuple[str, str | None]]] | None:
    """Read the option word at `i` -> (next index, [(key, value)]), or None when it is not an option."""
    w = words[i]
    if len(w) < 2 or w[0] not in ("-+" if opts.plus else "-"):
        if w == "-" and opts.dash_is_option:
            return i + 1, [("i", None)]
        return None
    if w.startswith("--"):
        name, eq, value = w[2:].partition("=")
        key = opts.canonical_long(name)
        if eq:
            return i + 1, [(key, value)]
        if key in opts.values and i + 1 < len(words):
            return i + 2, [(key, words[i + 1])]
        return i + 1, [(key, None)]
    if opts.single_dash:
        return i + 1, [(w, None)]
    found: list[tuple[str, str | None]] = []
    j = 1
    while j < len(w):
        key = opts.aliases.get(w[j], w[j])
        rest = w[j + 1:]
        if key in opts.values:
            if rest:
                found.append((key, rest))
                return i + 1, found
            if i + 1 < len(words):
                found.append((key, words[i + 1]))
                return i + 2, found
            found.append((key, None))
            return i + 1, found
        if key in opts.optional:
            found.append((key, rest or None))
            return i + 1, found
        found.append((key, None))
        j += 1
    return i + 1, found


def _getopt(words: Sequence[str], i: int, opts: _Opts) -> tuple[int, dict[str, str | None]]:
    """Options up to the first operand (POSIX order, as wrappers parse them) -> (operand index, options)."""
    seen: dict[str, str | None] = {}
    n = len(words)
    while i < n:
        if words[i] == "--":
            return i + 1, seen
        got = _option_word(words, i, opts)
        if got is None:
            return i, seen
        i, found = got
        seen.update(found)
    return i, seen


@dataclass(frozen=True, slots=True)
class _Args:
    """A command's (or a pattern's) arguments, normalised: option keys, option values, operands."""

    flags: frozenset[str]
    values: frozenset[tuple[str, str]]
    operands: tuple[str, ...]


@lru_cache(maxsize=8192)
def _normalise(program: str, args: tuple[str, ...]) -> _Args:
    """GNU-style: options may follow operands, until `--`."""
    opts = _SPECS.get(program, _GENERIC)
    flags: set[str] = set()
    values: set[tuple[str, str]] = set()
    operands: list[str] = []
    i, n = 0, len(args)
    while i < n:
        if args[i] == "--":
            operands.extend(args[i + 1:])
            break
        got = _option_word(args, i, opts)
        if got is None:
            operands.append(args[i])
            i += 1
            continue
        i, found = got
        for key, value in found:
            flags.add(key)
            if value is not None:
                values.add((key, value))
    return _Args(frozenset(flags), frozenset(values), tuple(operands))


def _key_text(key: str, value: str | None = None) -> str:
    text = key if key.startswith("-") else "-" + key
    return text if value is None else f"{text} {value}"


# Per-program option tables: long forms and case variants that mean the same short option.
_SPECS: dict[str, _Opts] = {
    "rm": _opts(
        short={"R": "r"},
        longs={"recursive": "r", "force": "f", "interactive": "i", "dir": "d", "verbose": "v",
               "one-file-system": None, "no-preserve-root": None, "preserve-root": None, "help": None,
               "version": None},
    ),
    "cp": _opts(
        values="tS",
        short={"R": "r"},
        longs={"recursive": "r", "force": "f", "archive": "a", "interactive": "i", "no-clobber": "n",
               "verbose": "v", "target-directory": "t", "no-target-directory": "T", "suffix": "S", "link": "l",
               "symbolic-link": "s", "update": "u", "dereference": "L", "no-dereference": "P",
               "one-file-system": "x", "parents": None, "preserve": None, "no-preserve": None,
               "remove-destination": None, "backup": None, "reflink": None, "sparse": None,
               "strip-trailing-slashes": None, "attributes-only": None, "copy-contents": None},
    ),
    "mv": _opts(
        values="tS",
        longs={"force": "f", "interactive": "i", "no-clobber": "n", "verbose": "v", "target-directory": "t",
               "no-target-directory": "T", "suffix": "S", "update": "u", "backup": None, "exchange": None,
               "strip-trailing-slashes": None, "no-copy": None},
    ),
    "chmod": _opts(
        longs={"recursive": "R", "changes": "c", "silent": "f", "quiet": "f", "verbose": "v",
               "no-preserve-root": None, "preserve-root": None, "help": None, "version": None},
        long_values=("reference",),
    ),
    "git": _opts(
        values="Cco",
        longs={"force": "f", "force-with-lease": None, "force-if-includes": None, "delete": "d",
               "dry-run": "n", "set-upstream": "u", "verbose": "v", "quiet": "q", "all": None, "tags": None,
               "mirror": None, "follow-tags": None, "no-verify": None, "atomic": None, "prune": None,
               "push-option": "o"},
        long_values=("git-dir", "work-tree", "namespace", "repo"),
    ),
    "curl": _opts(
        values="odHXuAeFTxmwbcKrCEDUQPYyz",
        longs={"output": "o", "remote-name": "O", "silent": "s", "show-error": "S", "location": "L", "fail": "f",
               "insecure": "k", "data": "d", "header": "H", "request": "X", "user": "u", "user-agent": "A",
               "referer": "e", "form": "F", "upload-file": "T", "proxy": "x", "max-time": "m",
               "write-out": "w", "cookie": "b", "cookie-jar": "c", "config": "K", "range": "r",
               "continue-at": "C", "cert": "E", "dump-header": "D", "verbose": "v", "include": "i",
               "head": "I", "compressed": None, "create-dirs": None, "fail-with-body": None},
        long_values=("data-binary", "data-raw", "data-urlencode", "url", "output-dir", "proto", "retry",
                     "connect-timeout", "json"),
    ),
    "wget": _opts(
        values="OoaPUtTeiBwQlARDIX",
        longs={"output-document": "O", "output-file": "o", "append-output": "a", "quiet": "q",
               "directory-prefix": "P", "user-agent": "U", "tries": "t", "timeout": "T", "continue": "c",
               "recursive": "r", "level": "l", "input-file": "i", "no-verbose": None,
               "no-check-certificate": None},
    ),
    "find": _Opts(single_dash=True),
}
for _name in ("chown", "chgrp"):
    _SPECS[_name] = _opts(
        longs={"recursive": "R", "changes": "c", "silent": "f", "quiet": "f", "verbose": "v",
               "no-dereference": "h", "dereference": None, "no-preserve-root": None, "preserve-root": None},
        long_values=("from", "reference"),
    )
