"""What `echo` and `printf` print: the text a pipe or a redirection carries (`printf '\\x72m -rf /' | sh`)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from ._words import ANSI_ESCAPES, HEX_RES, OCTAL_RE

_ECHO_OPTIONS_RE = re.compile(r"-[neE]+")
_PRINTF_WIDTH_LIMIT = 4096
_OCTAL3_RE = re.compile("[0-7]{0,3}")
_PRINTF_ESCAPE_RE = re.compile(r"\\(?:[0-7]{1,3}|x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|.)", re.DOTALL)
_PRINTF_SPEC_RE = re.compile(r"%([-+ #0]*)(\d*|\*)(?:\.(\d*|\*))?([a-zA-Z%])")


def _escapes(text: str, echo: bool) -> tuple[str, bool]:
    r"""Backslash escapes as `echo -e`/`%b` (echo=True: octal as `\0NNN`) or a printf format (`\NNN`) read them.
    Returns the text and whether `\c` ended all output there."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        e = text[i + 1]
        i += 2
        if e in ANSI_ESCAPES:  # (the escapes of `$'...'`)
            out.append(ANSI_ESCAPES[e])
        elif e == "c":
            return "".join(out), True
        elif e in "01234567" and (e == "0" or not echo):
            digits = (_OCTAL3_RE if echo else OCTAL_RE).match(text, i)
            assert digits is not None  # the patterns also match the empty string
            value = (digits.group(0) or "0") if echo else e + digits.group(0)
            out.append(chr(int(value, 8) & 0xFF))
            i = digits.end()
        elif e in "xuU" and (m := HEX_RES[e].match(text, i)):
            out.append(chr(min(int(m.group(0), 16), 0x10FFFF)))
            i = m.end()
        else:
            out.append("\\" + e)
    return "".join(out), False


def echo_output(args: Sequence[str]) -> tuple[str, str]:
    """What `echo ARGS` prints: as bash's echo does (backslashes as written) and as an echo that reads escapes
    does (`echo -e`, dash's echo). A shell fed either may run something different, so both are read."""
    words = list(args)
    newline = True
    while words and _ECHO_OPTIONS_RE.fullmatch(words[0]):
        newline = newline and "n" not in words.pop(0)
    text = " ".join(words)
    end = "\n" if newline else ""
    cooked, stopped = _escapes(text, echo=True)
    return text + end, cooked + ("" if stopped else end)


def _printf_number(arg: str, conversion: str) -> int | float | None:
    text = arg.strip()
    if not text:
        return 0
    if text[0] in "'\"":
        return ord(text[1]) if len(text) > 1 else 0
    try:
        if conversion in "eEfFgG":
            return float(text)
        if re.fullmatch(r"[+-]?0[0-7]+", text):
            return int(text, 8)
        return int(text, 0)
    except ValueError:
        return None


def printf_output(args: Sequence[str]) -> str | None:
    """What `printf FORMAT ARGS` prints (the format is reused while arguments remain), or None when it uses
    a conversion not followed here (the text it prints is then unknown)."""
    words = list(args)
    if words and words[0].startswith("-v"):
        return ""  # `printf -v name ...` prints into a variable
    if words and words[0] == "--":
        words.pop(0)
    if not words:
        return ""
    fmt, rest = words[0], words[1:]
    out: list[str] = []
    while True:
        used = False
        i = 0
        while i < len(fmt):
            c = fmt[i]
            if c == "\\":
                m = _PRINTF_ESCAPE_RE.match(fmt, i)
                end = m.end() if m else i + 1
                text, stopped = _escapes(fmt[i:end], echo=False)
                out.append(text)
                if stopped:
                    return "".join(out)
                i = end
                continue
            if c != "%":
                out.append(c)
                i += 1
                continue
            m = _PRINTF_SPEC_RE.match(fmt, i)
            if m is None:
                return None
            flags, width, precision, conversion = m.groups()
            i = m.end()
            if conversion == "%":
                out.append("%")
                continue
            if "*" in (width, precision) or max(int(width or 0), int(precision or 0)) > _PRINTF_WIDTH_LIMIT:
                return None  # a width from the arguments, or one meant to flood: what it prints is not followed
            arg = rest.pop(0) if rest else ""
            used = True
            if conversion in "sbqc":
                if conversion == "b":
                    value, stopped = _escapes(arg, echo=True)
                    if stopped:
                        out.append(value)
                        return "".join(out)
                else:
                    value = {"s": arg, "q": shlex.quote(arg), "c": arg[:1]}[conversion]
                if precision is not None and conversion != "c":
                    value = value[: int(precision or 0)]
                if width:
                    value = value.ljust(int(width)) if "-" in flags else value.rjust(int(width))
                out.append(value)
            elif conversion in "diouxXeEfFgG":
                number = _printf_number(arg, conversion)
                if number is None:
                    return None
                spec = "%" + flags + width + ("." + precision if precision is not None else "")
                try:
                    out.append((spec + conversion) % number)
                except (TypeError, ValueError):
                    return None
            else:
                return None
        if not used or not rest:
            return "".join(out)
