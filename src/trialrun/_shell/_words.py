"""The words of a shell command line: quotes, `$...` expansions, backticks and `$'...'` read into pieces that keep
what is only known at run time. The tokenizer under `_syntax`'s parser, which supplies the scripts of substitutions."""

from __future__ import annotations

import re

from ._nodes import Dynamic, Literal, Param, Piece, Script, Word

MAX_DEPTH = 40  # nested substitutions / `bash -c` / `eval` levels before we give up (and fail closed)


class ParseError(Exception):
    """The command is not valid shell (or too deeply nested to follow); the message says why."""


class NotArithmetic(Exception):
    """`$((` or `((` that bash reads as a subshell, not arithmetic (see `WordReader.skip_arithmetic`)."""


_PLAIN_RE = re.compile(r"[^ \t\r\n;&|()<>'\"\\$`{]+")
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ELEMENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[(?:@|\*|\d+)\]")  # `${a[@]}`, `${a[*]}`, `${a[0]}`
_SPECIAL_PARAMS = set("@*#?$!-0123456789")
_BLANKS = " \t\r"
#: What starts a piece `WordReader.skip_quoted` steps over: an escape, a quote, an expansion.
_QUOTED_STARTS = frozenset("\\'\"$`")
ANSI_ESCAPES = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
    "\\": "\\", "'": "'", '"': '"', "?": "?",
}


class WordReader:
    """Reads words at a cursor over shell text; the parser (`_syntax._Parser`) subclasses it for the grammar and
    supplies the scripts of command substitutions, which are whole command lists."""

    __slots__ = ("depth", "i", "n", "posix", "s")

    def __init__(self, text: str, depth: int = 0, start: int = 0, posix: bool = False) -> None:
        if depth > MAX_DEPTH:
            raise ParseError("nested too deeply to follow")
        self.s = text
        self.n = len(text)
        self.i = start
        self.depth = depth
        # POSIX sh's reading (dash's), for code a `sh` runs: no `$'...'`, `$"..."`, `[[ ]]`, `(( ))` or `<<<`, so
        # `sh -c "[[ x || rm -rf y ]]"` runs rm there (see `_syntax.Parser` and `_handover.code`)
        self.posix = posix

    def sub_script(self, start: int) -> Script:
        """The script of `$(...)`, `<(...)` or `>(...)` from `start`, leaving the cursor after its `)` (the parser's)."""
        raise NotImplementedError

    def text_script(self, text: str) -> Script:
        """Shell code found inside a word (a backtick substitution's) as a script (the parser's)."""
        raise NotImplementedError

    def skip_blanks(self) -> None:
        s, n, i = self.s, self.n, self.i
        while i < n:
            c = s[i]
            if c in _BLANKS:
                i += 1
            elif c == "\\" and i + 1 < n and s[i + 1] == "\n":
                i += 2
            elif c == "\\" and i + 1 == n:  # a backslash ending the text continues a line that never comes
                i += 1
            elif c == "#":
                end = s.find("\n", i)
                i = n if end < 0 else end
            else:
                break
        self.i = i

    def read_word(self, subs: list[Script]) -> Word | None:
        """One word starting at the cursor, or None when the cursor is at an operator."""
        s, n = self.s, self.n
        i = start = self.i
        pieces: list[Piece] = []
        while i < n:
            c = s[i]
            m = _PLAIN_RE.match(s, i)
            if m:
                pieces.append(Literal(m.group(0), False))
                i = m.end()
                continue
            if c == "{":
                pieces.append(Literal("{", False))
                i += 1
            elif c == "'":
                end = s.find("'", i + 1)
                if end < 0:
                    raise ParseError("unbalanced single quote")
                pieces.append(Literal(s[i + 1:end], True))
                i = end + 1
            elif c == '"':
                i = self.read_dquote(i + 1, pieces, subs)
            elif c == "\\":
                if i + 1 >= n:  # (a line continuation at the very end: nothing)
                    i += 1
                elif s[i + 1] == "\n":
                    i += 2
                else:
                    pieces.append(Literal(s[i + 1], True))
                    i += 2
            elif c == "$":
                i = self.read_dollar(i, pieces, subs, quoted=False)
            elif c == "`":
                i = self.read_backtick(i, pieces, subs, quoted=False)
            elif c in "<>" and i == start and i + 1 < n and s[i + 1] == "(":
                self.i = i + 2
                subs.append(self.sub_script(i + 2))
                pieces.append(Dynamic(s[i:self.i], False))
                i = self.i
            else:  # blank, newline or operator: the word ends
                break
        self.i = i
        if not pieces:  # (only line continuations)
            return None
        if i == start:
            return None
        return Word(tuple(pieces))


    def read_subscripted(self, subs: list[Script]) -> Word | None:
        """A word that starts `NAME[` where an assignment may stand: bash reads its subscript to the matching `]`,
        blanks, newlines and operators included (`x[ ]=1 rm -rf b` assigns, badly, then runs `rm -rf b`). The
        subscript's substitutions are recorded (they run); the word's first piece is `NAME[...]` as written (inner
        `]` left out, so that it reads as an assignment), joined to the plain text after it (`=value`)."""
        s, n = self.s, self.n
        start = self.i
        i = s.index("[", start) + 1
        depth = 1
        while depth:
            if i >= n:
                raise ParseError("unclosed `[` in an array subscript")
            c = s[i]
            if c in _QUOTED_STARTS:
                i = self.skip_quoted(i, subs)
            else:
                depth += (c == "[") - (c == "]")
                i += 1
        name = s[start:i - 1].replace("]", "") + "]"
        self.i = i
        rest = self.read_word(subs)
        pieces = rest.pieces if rest is not None else ()
        if pieces and isinstance(pieces[0], Literal) and not pieces[0].quoted:
            return Word((Literal(name + pieces[0].text, False), *pieces[1:]))
        return Word((Literal(name, False), *pieces))

    def read_dquote(self, i: int, pieces: list[Piece], subs: list[Script], end_char: str | None = '"') -> int:
        """Inside "...": only `$`, backticks and backslash are special. Returns the index after the closing quote."""
        s, n = self.s, self.n
        buf: list[str] = []
        while True:
            if i >= n:
                if end_char is None:
                    break
                raise ParseError("unbalanced double quote")
            c = s[i]
            if c == end_char:
                i += 1
                break
            if c == "\\" and i + 1 < n:
                nxt = s[i + 1]
                if nxt in '$`"\\':
                    buf.append(nxt)
                    i += 2
                    continue
                if nxt == "\n":
                    i += 2
                    continue
                buf.append(c)
                i += 1
            elif c == "$" or c == "`":
                if buf:
                    pieces.append(Literal("".join(buf), True))
                    buf = []
                if c == "$":
                    i = self.read_dollar(i, pieces, subs, quoted=True)
                else:
                    i = self.read_backtick(i, pieces, subs, quoted=True)
            else:
                buf.append(c)
                i += 1
        if buf or not pieces or end_char is not None:
            pieces.append(Literal("".join(buf), True))
        return i

    def scan_expansions(self, subs: list[Script]) -> Word:
        """Here-document text (which behaves like a double-quoted string) as a word, recording substitutions."""
        pieces: list[Piece] = []
        self.read_dquote(0, pieces, subs, end_char=None)
        return Word(tuple(pieces))

    def read_dollar(self, i: int, pieces: list[Piece], subs: list[Script], quoted: bool) -> int:
        s, n = self.s, self.n
        nxt = s[i + 1] if i + 1 < n else ""
        if nxt == "(":
            if s.startswith("((", i + 1):
                try:
                    end = self.skip_arithmetic(i + 3, subs)
                except NotArithmetic:  # `$((cmd) )`: a command substitution of a subshell
                    pass
                else:
                    pieces.append(Dynamic(s[i:end], quoted))
                    return end
            subs.append(self.sub_script(i + 2))
            pieces.append(Dynamic(s[i:self.i], quoted))
            return self.i
        if nxt == "{":
            end = self.skip_braced(i + 2, subs)
            inner = s[i + 2:end - 1]
            if _NAME_RE.fullmatch(inner) or (len(inner) == 1 and inner in _SPECIAL_PARAMS) or _ELEMENT_RE.fullmatch(inner):
                pieces.append(Param(inner, quoted, s[i:end]))
            else:
                pieces.append(Dynamic(s[i:end], quoted))
            return end
        if nxt == "'" and not quoted and not self.posix:
            text, end = _ansi_c(s, i + 2)
            pieces.append(Literal(text, True))
            return end
        if nxt == '"' and not quoted and not self.posix:
            return self.read_dquote(i + 2, pieces, subs)
        m = _NAME_RE.match(s, i + 1)
        if m:
            pieces.append(Param(m.group(0), quoted, s[i:m.end()]))
            return m.end()
        if nxt and nxt in _SPECIAL_PARAMS:
            pieces.append(Param(nxt, quoted, s[i:i + 2]))
            return i + 2
        pieces.append(Literal("$", quoted))
        return i + 1

    def skip_braced(self, i: int, subs: list[Script]) -> int:
        """The end of `${...}` (index after `}`), recording substitutions inside (`${x:-$(cmd)}`). It ends at the
        first `}` not quoted or inside another expansion, as bash and dash end it: a `{` inside opens nothing
        (`echo ${x:-{}; rm -rf b; echo }` runs rm)."""
        s, n = self.s, self.n
        while i < n:
            c = s[i]
            if c == "}":
                return i + 1
            i = self.skip_quoted(i, subs) if c in _QUOTED_STARTS else i + 1
        raise ParseError("unclosed `${`")

    def skip_quoted(self, i: int, subs: list[Script]) -> int:
        """The index after the quoted or expanded piece at `i` (one of `_QUOTED_STARTS`: a backslash and the character
        it escapes, '...', "...", a `$` expansion, `...`), recording the substitutions inside it: how a subscript and
        `${...}` step over what cannot end them."""
        s = self.s
        c = s[i]
        if c == "\\":
            return i + 2
        if c == "'":
            end = s.find("'", i + 1)
            if end < 0:
                raise ParseError("unbalanced single quote")
            return end + 1
        if c == '"':
            return self.read_dquote(i + 1, [], subs)
        if c == "$":
            return self.read_dollar(i, [], subs, quoted=True)
        return self.read_backtick(i, [], subs, quoted=True)

    def skip_arithmetic(self, i: int, subs: list[Script]) -> int:
        """The index after the `))` that closes `$((` or `((`. The content is arithmetic, not commands, but the
        substitutions in it run first (`$(( $(rm -rf b) + 1 ))` runs rm): they are added to `subs`.
        `NotArithmetic` when the first `(` closes on its own (`$((cmd) )`, `((cmd) )`): bash reads a subshell."""
        s, n = self.s, self.n
        depth = 2
        found: list[Script] = []
        while i < n:
            c = s[i]
            if c == "(":
                depth += 1
                i += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    subs.extend(found)
                    return i + 1
                if depth == 1 and not s.startswith(")", i + 1):
                    raise NotArithmetic
                i += 1
            elif c == "$":
                i = self.read_dollar(i, [], found, quoted=True)
            elif c == "`":
                i = self.read_backtick(i, [], found, quoted=True)
            elif c == '"':
                i = self.read_dquote(i + 1, [], found)
            elif c == "\\":
                i += 2
            else:
                i += 1
        raise ParseError("unclosed `((`")

    def read_backtick(self, i: int, pieces: list[Piece], subs: list[Script], quoted: bool) -> int:
        s, n = self.s, self.n
        j = i + 1
        buf: list[str] = []
        while True:
            if j >= n:
                raise ParseError("unclosed backtick")
            c = s[j]
            if c == "`":
                break
            if c == "\\" and j + 1 < n and (s[j + 1] in "$`\\" or (quoted and s[j + 1] == '"')):
                buf.append(s[j + 1])
                j += 2
                continue
            buf.append(c)
            j += 1
        subs.append(self.text_script("".join(buf)))
        pieces.append(Dynamic(s[i:j + 1], quoted))
        return j + 1


HEX_RES = {e: re.compile(f"[0-9A-Fa-f]{{1,{w}}}") for e, w in (("x", 2), ("u", 4), ("U", 8))}
OCTAL_RE = re.compile("[0-7]{0,2}")


def _ansi_c(s: str, i: int) -> tuple[str, int]:
    """Decode `$'...'` from index `i` (after the quote); returns the text and the index after the closing quote."""
    out: list[str] = []
    n = len(s)
    while i < n:
        c = s[i]
        if c == "'":
            return "".join(out), i + 1
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        e = s[i + 1]
        i += 2
        if e in ANSI_ESCAPES:
            out.append(ANSI_ESCAPES[e])
        elif e in "xuU":
            m = HEX_RES[e].match(s, i)
            if m:
                out.append(chr(min(int(m.group(0), 16), 0x10FFFF)))
                i = m.end()
            else:
                out.append("\\" + e)
        elif e in "01234567":
            m = OCTAL_RE.match(s, i)
            assert m is not None  # the pattern also matches the empty string
            out.append(chr(int(e + m.group(0), 8) & 0xFF))
            i = m.end()
        elif e == "c" and i < n:
            out.append(chr(ord(s[i]) & 0x1F))
            i += 1
        else:
            out.append("\\" + e)
    raise ParseError("unbalanced `$'` quote")
