"""Reading a program's options the way the program itself would (short bundles, long forms, values), so
that `rm -fr`, `rm -r -f` and `rm --recursive --force` compare as the same command."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from ._option_tables import TABLES

# --------------------------------------------------------------------------------------------------------------
# Options: a small getopt that knows, per program, which options take values and what the long forms mean.
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Opts:
    values: frozenset[str] = frozenset()  # canonical keys whose option takes a value (next word or attached)
    optional: frozenset[str] = frozenset()  # keys whose value may only be attached (`-i{}`, `--replace=X`)
    aliases: Mapping[str, str] = field(default_factory=dict)  # short char or long name -> canonical key
    longs: tuple[str, ...] = ()  # known long names, for GNU-style unambiguous abbreviations (`--recur`)
    single_dash: bool = False  # `find -delete`: a single-dash word is one option, not a cluster of letters
    plus: bool = False  # shells: `+o` is an option too
    dash_is_option: bool = False  # `env -` means `env -i`
    abbreviate: bool = True  # the parser takes an unambiguous prefix of a long option (getopt_long; not popt)
    implies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # key -> the keys it sets as well
    same_as: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # key -> the keys it is (`-D`: -d -f)
    subcommands: Mapping[str, Opts] = field(default_factory=dict)  # git: each subcommand's table ("*": others)

    def canonical_long(self, name: str) -> str:
        if name in self.aliases:
            return self.aliases[name]
        if self.longs and self.abbreviate:
            hits = {self.aliases.get(ln, "--" + ln) for ln in self.longs if ln.startswith(name)}
            if len(hits) == 1:
                return hits.pop()
        return "--" + name

    def implied(self, keys: Iterable[str]) -> set[str]:
        """`keys` with every key they imply (`rsync --del` sets `--delete` too), a shorthand as what it stands for
        (`git branch -D` is -d -f)."""
        found = set(keys)
        for key in found & self.same_as.keys():
            found.discard(key)
            found.update(self.same_as[key])
        todo = [k for k in found if k in self.implies]
        while todo:
            for more in self.implies[todo.pop()]:
                if more not in found:
                    found.add(more)
                    todo += [more] if more in self.implies else []
        return found


def option_table(
    values: str = "",
    optional: str = "",
    longs: Mapping[str, str | None] | None = None,
    long_values: Iterable[str] = (),
    short: Mapping[str, str] | None = None,
    **flags: bool,
) -> Opts:
    """Build an option table. `longs` maps long names to the short letter they mean (None: no short form)."""
    longs = dict(longs or {})
    aliases: dict[str, str] = dict(short or {})
    for name, letter in longs.items():
        aliases[name] = letter if letter else "--" + name
    value_keys = set(values) | {"--" + name for name in long_values}
    for name in long_values:
        longs.setdefault(name, None)
        aliases.setdefault(name, "--" + name)
    return Opts(frozenset(value_keys), frozenset(optional), aliases, tuple(longs),
                 single_dash=flags.get("single_dash", False), plus=flags.get("plus", False),
                 dash_is_option=flags.get("dash_is_option", False))


def _table(spec: Mapping[str, str]) -> Opts:
    """An `Opts` from a table of `_option_tables` (its module docstring says how a table is written)."""
    values, optional = set(spec.get("values", "")), set(spec.get("optional", ""))
    aliases: dict[str, str] = {}
    for pair in spec.get("short", "").split():
        letter, _, same = pair.partition("=")
        aliases[letter] = same
    longs: list[str] = []
    dash = "-" if spec.get("single_dash") == "yes" else "--"
    for token in spec.get("longs", "").split():
        name, _, letter = token.partition("=")
        bare = name.rstrip(":")
        longs.append(bare)
        aliases[bare] = letter or dash + bare
        if name.endswith("::"):
            optional.add(dash + bare)
        elif name.endswith(":"):
            values.add(dash + bare)
    implies: dict[str, tuple[str, ...]] = {}
    same_as: dict[str, tuple[str, ...]] = {}
    for entry in spec.get("implies", "").split():
        if ">" in entry:
            key, _, more = entry.partition(">")
            implies[key] = tuple(more.split(","))
        else:
            key, _, more = entry.partition("=")
            same_as[key] = tuple(more.split(","))
    return Opts(frozenset(values), frozenset(optional), aliases, tuple(longs),
                 single_dash=spec.get("single_dash") == "yes", abbreviate=spec.get("abbreviate") != "no",
                 implies=implies, same_as=same_as)


GENERIC = Opts()


def _option_word(words: Sequence[str], i: int, opts: Opts) -> tuple[int, list[tuple[str, str | None]]] | None:
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
    if opts.single_dash:  # `find -name X`: the predicates that take a value take the next word
        if w in opts.values and i + 1 < len(words):
            return i + 2, [(w, words[i + 1])]
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


def getopt(words: Sequence[str], i: int, opts: Opts) -> tuple[int, dict[str, str | None]]:
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
class Args:
    """A command's (or a pattern's) arguments, normalised: option keys, option values, operands."""

    flags: frozenset[str]
    values: frozenset[tuple[str, str]]
    operands: tuple[str, ...]


@lru_cache(maxsize=8192)
def normalise_args(program: str, args: tuple[str, ...]) -> Args:
    """GNU-style: options may follow operands, until `--`. A program with subcommands (git) reads its own options
    up to the first operand, and the rest with that subcommand's table; what an option implies is set too."""
    opts = SPECS.get(program, GENERIC)
    flags: set[str] = set()
    values: set[tuple[str, str]] = set()
    operands: list[str] = []
    i, n = 0, len(args)
    if opts.subcommands:  # its own options are its own keys (`git -C DIR` is not `git branch -C`)
        i, seen = getopt(args, 0, opts)
        for key, value in seen.items():
            mine = f"{program} {key_text(key)}"
            flags.add(mine)
            if value is not None:
                values.add((mine, value))
        if i < n:
            operands.append(args[i])
            opts = opts.subcommands.get(args[i]) or opts.subcommands.get("*", GENERIC)
            i += 1
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
    if opts.implies or opts.same_as:
        flags = {key for key in flags if " " in key} | opts.implied(key for key in flags if " " not in key)
    return Args(frozenset(flags), frozenset(values), tuple(operands))


def key_text(key: str, value: str | None = None) -> str:
    text = key if key.startswith("-") or " " in key else "-" + key
    return text if value is None else f"{text} {value}"


def _tables() -> dict[str, Opts]:
    """Every program's table from `_option_tables`, a subcommand's beside its program's (`git clean`)."""
    built = {name: _table(spec) for name, spec in TABLES.items() if " " not in name}
    for name, spec in TABLES.items():
        program, _, sub = name.partition(" ")
        if sub:
            parent = built[program]
            built[program] = replace(parent, subcommands={**parent.subcommands, sub: _table(spec)})
    return built


# Per-program option tables: long forms and case variants that mean the same short option.
SPECS: dict[str, Opts] = _tables()
