"""POSIX (GNU) basic and extended regular expressions translated to Python's, for `sed -i` (see `_inplace`): what
the two would match differently (alternation, repeated groups, collating elements) is `Unknowable`."""

from __future__ import annotations

import re

from ._edits import Unknowable

__all__ = ["posix_regex"]

_CLASSES = {"alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z", "lower": "a-z",
            "space": r" \t\n\r\f\v", "blank": r" \t", "punct": r"!-/:-@\[-`{-~", "xdigit": "0-9A-Fa-f",
            "cntrl": r"\x00-\x1f\x7f", "print": r" -~", "graph": r"!-~"}


def _bracket(pattern: str, i: int) -> tuple[str, int]:
    """A POSIX bracket expression starting at pattern[i] == "[", as Python's; returns it and the index after."""
    j = i + 1
    out = "["
    if j < len(pattern) and pattern[j] == "^":
        out += "^"
        j += 1
    first = True
    while j < len(pattern):
        c = pattern[j]
        if c == "]" and not first:
            return out + "]", j + 1
        if c == "[" and pattern.startswith("[:", j):
            end = pattern.find(":]", j + 2)
            name = pattern[j + 2:end] if end > 0 else ""
            if name not in _CLASSES:
                raise Unknowable(f"the bracket expression class {name!r} is not followed")
            out += _CLASSES[name]
            j = end + 2
        elif c in "[=." and j + 1 < len(pattern) and pattern[j] == "[" and pattern[j + 1] in "=.":
            raise Unknowable("collating elements are not followed")
        elif c in "\\[":
            out += "\\" + c
            j += 1
        else:
            out += c
            j += 1
        first = False
    raise Unknowable("an unclosed bracket expression")


def posix_regex(pattern: str, extended: bool, delimiter: str = "/") -> str:
    """A POSIX (GNU) basic or extended regular expression as Python's (`\\DELIM` is the delimiter itself, a literal);
    Unknowable for what is not followed."""
    out: list[str] = []
    i = 0
    start = True  # where `*` is literal in a basic expression
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            text, start = _posix_escape(pattern, i + 2, extended, delimiter, start)
            i += 2
        elif c == "[":
            text, i = _bracket(pattern, i)
            start = False
        else:
            text, start = _posix_char(pattern, i, extended, start)
            i += 1
        out.append(text)
    return "".join(out)


_REPEATED_GROUP = "a repeated group (POSIX and Python may match it differently)"
_ALTERNATION = "alternation (POSIX matches the longest alternative, Python the first)"
_POSIX_ESCAPES = {"<": r"\b", ">": r"\b", "`": r"\A", "'": r"\Z", "n": r"\n", "t": r"\t"}


def _posix_escape(pattern: str, i: int, extended: bool, delimiter: str, start: bool) -> tuple[str, bool]:
    """`\\d` (just before `pattern[i]`) as Python's, and whether a `*` after it is literal."""
    d = pattern[i - 1]
    if d == delimiter and d != "\n":
        return re.escape(d), False
    if not extended and d in "(){}+?":  # a basic expression's `\\(`, `\\{`, `\\+` are operators
        if d == "(":
            return d, True
        if d == ")":
            if i < len(pattern) and pattern[i] in "*+?{" or pattern[i:i + 2] in ("\\+", "\\?", "\\{"):
                raise Unknowable(_REPEATED_GROUP)
            return d, False
        return d, start
    if d == "|" and not extended:
        raise Unknowable(_ALTERNATION)
    if d in "123456789wWsSbB":
        return "\\" + d, False
    if d in _POSIX_ESCAPES:
        return _POSIX_ESCAPES[d], False
    if d.isalnum():
        raise Unknowable(f"the escape \\{d} is not followed")
    return re.escape(d), False


def _posix_char(pattern: str, i: int, extended: bool, start: bool) -> tuple[str, bool]:
    """The character `pattern[i]` (not a backslash or a bracket) as Python's, and whether a `*` after it is literal."""
    c = pattern[i]
    if c == "*":
        return (r"\*" if start else "*"), start
    if c in "()|+?{}":
        if not extended:
            return "\\" + c, c == "("
        if c == "|":
            raise Unknowable(_ALTERNATION)
        if c == ")" and i + 1 < len(pattern) and pattern[i + 1] in "*+?{":
            raise Unknowable(_REPEATED_GROUP)
        return c, c == "("
    if c == "^":
        return ("^" if start or extended else r"\^"), start
    if c == "$":
        at_end = i + 1 == len(pattern) or pattern[i + 1:i + 3] == "\\)" or (extended and pattern[i + 1] in ")|")
        return (r"\Z" if at_end else r"\$"), False
    return ("." if c == "." else re.escape(c)), False
